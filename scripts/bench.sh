#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bench: every benchmark, figures printed beside a baseline of the same
# run. BENCHMARKS.md records the figures with these commands.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/warmcore
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== trace format: writing, opening, time windows"
cargo bench -q -p warmcore-trace --bench trace 2>&1 | grep -v -E "^(running|test result|$)"
