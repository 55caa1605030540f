#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make pgo: the warmcore command built with profile-guided optimisation
# (the rustc book, "Profile-guided Optimization"), for studies of many runs.
# Three steps, each in a target directory of its own so that the ordinary
# build (target/release) is never compiled again; the flags reach
# warmcore's own crates alone (scripts/pgo-rustc.sh):
#   1. an instrumented build (-Cprofile-generate) in target/pgo-generate;
#   2. the training runs below, with that build: every kind of policy the
#      simulator hosts (the fair-class models, the Rust references, the
#      sched_ext programs ours and the peers'), on the built-in workloads'
#      main shapes, a trace written and read back; then the counts merged
#      by llvm-profdata;
#   3. the build that uses them (-Cprofile-use), target/pgo/release/warmcore.
# The results are the ordinary build's, byte for byte (PGO only reorders and
# inlines code; scripts/sim-reference.sh checks it); the speed is in
# BENCHMARKS.md. The training runs are shorter and smaller than
# the benchmarks' runs, so that the benchmarks do not measure their own
# training.
#
#   make pgo    (scripts/build-pgo.sh under the compiler cache; prints the
#               binary's path)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD/target
profiles=$root/pgo-profiles

# The counts are merged by the llvm-profdata of rustc's own LLVM when the
# toolchain has it (rustup's llvm-tools), else by LLVM 19's, which
# scripts/setup.sh installs (llvm-19): it reads the raw counts of rustc
# 1.95's LLVM 22, and rustc reads its merged file (an older indexed format).
profdata_tool="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata"
[ -x "$profdata_tool" ] || profdata_tool=llvm-profdata-19
if ! command -v "$profdata_tool" >/dev/null; then
    echo "pgo: llvm-profdata not found: run scripts/setup.sh (it installs llvm-19), or 'rustup component add llvm-tools'" >&2
    exit 1
fi

build() {  # TARGET_DIR PGO_RUSTFLAGS: those for warmcore's crates (scripts/pgo-rustc.sh)
    PGO_INNER_WRAPPER=${RUSTC_WRAPPER:-} RUSTC_WRAPPER=$PWD/scripts/pgo-rustc.sh PGO_RUSTFLAGS="$2" \
        CARGO_TARGET_DIR="$1" cargo build -q --release -p warmcore
}

echo "pgo: 1/3 the instrumented build (target/pgo-generate)" >&2
mkdir -p "$profiles"
build "$root/pgo-generate" "-Cprofile-generate=$profiles/raw"
gen=$root/pgo-generate/release/warmcore

# A new profile makes step 3 compile warmcore's crates again (rustc tracks
# the file), and no two trainings count quite alike (how long a thread
# waits, for one): so train again only when the instrumented build changed.
stamp=$(sha256sum "$gen" | cut -d' ' -f1)
if [ -f "$profiles/warmcore.profdata" ] && [ "$(cat "$profiles/trained-on" 2>/dev/null)" = "$stamp" ]; then
    echo "pgo: 2/3 the training runs: the profile of this build is there already" >&2
else
    echo "pgo: 2/3 the training runs" >&2
    # Build scripts are instrumented too; only the command's own runs count.
    rm -rf "$profiles/raw" "$profiles/trained-on"
    storm=periodic:tasks=1000,run_us=100,sleep_us=100,duration_ms=150
    runs=()
    for p in cfs eevdf nest scx:default scx:nest scx:warm scx:bpfland scx:flash scx:cosmos; do
        runs+=("--machine xeon-e7-8870v4 --workload $storm --policy $p --governor schedutil")
    done
    for p in cfs eevdf slocal smove nest haiku-low-latency scx:default scx:nest scx:haiku-power-saving scx:bpfland; do
        runs+=("--machine xeon-gold-5218-2s --workload configure:checks=1000 --policy $p --governor powersave"
               "--machine xeon-gold-5218-2s --workload hackbench:groups=20,loops=20 --policy $p --governor schedutil")
    done
    for p in cfs nest scx:nest scx:flash; do
        runs+=("--machine xeon-e7-8870v4 --workload kbuild:jobs=160,files=1000 --policy $p --governor schedutil"
               "--machine xeon-gold-5218-2s --workload nas-lu --policy $p --governor powersave"
               "--machine xeon-gold-5218-2s --workload schbench:runtime_ms=200 --policy $p --governor powersave")
    done
    printf '%s\n' "${runs[@]}" | xargs -P "$(nproc)" -L 1 sh -c '"$0" sim "$@" --json >/dev/null' "$gen"
    "$gen" sim --machine default --workload configure --policy cfs --trace "$profiles/train.wct" >/dev/null
    "$gen" trace stats "$profiles/train.wct" --json >/dev/null
    "$profdata_tool" merge -o "$profiles/warmcore.profdata" "$profiles/raw"
    rm -rf "$profiles/raw" "$profiles/train.wct"
    echo "$stamp" >"$profiles/trained-on"
fi

echo "pgo: 3/3 the optimised build (target/pgo)" >&2
build "$root/pgo" "-Cprofile-use=$profiles/warmcore.profdata"
echo "$root/pgo/release/warmcore"
