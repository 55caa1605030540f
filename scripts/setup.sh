#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Install what warmcore needs and is missing: Debian packages, the Rust
# toolchain's parts, the project's Python virtual environment. Idempotent:
# a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(pkg-config linux-perf zstd python3-venv)
# The BPF parts (warmcore record, warmcore sched): clang-19 compiles the BPF
# side (scx_cargo needs clang 18+); libbpf links statically against libelf,
# zlib and zstd. The VM that runs the scheduler: QEMU, a static busybox.
APT_PACKAGES+=(clang-19 llvm-19 libelf-dev zlib1g-dev libzstd-dev qemu-system-x86 busybox-static cpio)
# Debian's Chromium and its WebDriver drive the viewer's browser tests.
APT_PACKAGES+=(chromium chromium-driver)
# make dist and its tests: the Debian package checked by lintian, its unit by
# systemd-analyze, its man pages read with man.
APT_PACKAGES+=(lintian systemd man-db groff-base)
# The compiler cache (scripts/with-sccache.sh): a fresh clone at the path of
# an earlier one takes most compiles from it (at another path, almost none).
# Optional: without root, make builds without it.
[ "$(id -u)" != 0 ] || APT_PACKAGES+=(sccache)

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    if [ "$(id -u)" != 0 ]; then
        echo "setup: need root to install ${missing[*]}: run as root or install them yourself" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
    echo "setup: cargo not found: install Rust 1.91 or newer (rustup) and retry" >&2
    exit 1
fi

# cargo fuzz drives the fuzz targets under fuzz/ (a short pass runs in make test).
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "setup: installing cargo-fuzz"
    cargo install -q cargo-fuzz --locked
fi

# The scx project's schedulers the simulator hosts (peers/Cargo.toml): their
# sources into cargo's registry, where crates/sim/build.rs compiles their BPF
# files for the host (docs/peers.md). Offline when they are already there.
cargo fetch -q --manifest-path peers/Cargo.toml --offline 2>/dev/null ||
    cargo fetch -q --manifest-path peers/Cargo.toml

# The Python side (tests that decode exports, the viewer) lives in .venv.
if [ ! -x .venv/bin/python ] || ! cmp -s python/requirements.txt .venv/.requirements 2>/dev/null; then
    echo "setup: creating .venv"
    python3 -m venv .venv
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -r python/requirements.txt
    cp python/requirements.txt .venv/.requirements
fi
# The Python package was the distribution `warmcore` before the command's
# wheel took that name (docs/packaging.md): an older editable install of it
# would put its checkout's package first on sys.path.
if compgen -G ".venv/lib/python3*/site-packages/warmcore.pth" >/dev/null; then
    .venv/bin/python -m pip uninstall -q -y warmcore
fi
