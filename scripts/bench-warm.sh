#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# warm's goals on the full suite (docs/warm.md, Goals): every workload of
# the field, the tuning suite and the held-out ones, kbuild's phases apart,
# the replayed real recordings, on the four modelled servers, under
# schedutil and the hardware-controlled driver, three seeds, beside every
# other hosted scheduler (workloads/sweeps/warm-full.toml, 3,456 runs,
# 851 to 905 s with 2 jobs, BENCHMARKS.md). Started again, only the missing
# runs run; a build of another commit runs them all again (the run keys
# hash the commit).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/warmcore}
OUT=${OUT:-out/bench/warm-full}
echo "== warm's goals on the full suite (warmcore field --spec workloads/sweeps/warm-full.toml --goals scx:warm)"
# The recordings the spec replays, imported as make demo imports them.
mkdir -p out/bench/recordings
for f in perf-make-j2 perf-configure; do
    "$BIN" trace import --from perf-script "fixtures/$f.txt.zst" -o "out/bench/recordings/$f.wct" >/dev/null
done
"$BIN" trace import --from trace-cmd fixtures/trace-cmd-forks.txt.zst -o out/bench/recordings/trace-cmd-forks.wct >/dev/null
"$BIN" field --spec workloads/sweeps/warm-full.toml --out "$OUT" --goals scx:warm
sed -n '/^## Summary/,/^## Each/p' "$OUT/goals.md" | sed '$d'
