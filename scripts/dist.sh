#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make dist: into out/dist/, the two wheels (maturin: the `warmcore` command
# with its man pages and completions, and the Python package
# warmcore-python it depends on) and the Debian package (dpkg-deb: the
# command, the service warmcore-sched.service with /etc/default/warmcore,
# the man pages and completions). The man pages and completions come from
# the built binary's command line (`warmcore manpages`, `warmcore
# completions`). Run after make build, whose builds maturin reuses.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/warmcore
OUT=out/dist
# The package's maintainer, given by whoever publishes it.
DEB_MAINTAINER=${DEB_MAINTAINER:-warmcore developers <warmcore@example.org>}
PY=$PWD/.venv/bin
[ -x "$BIN" ] || { echo "dist: no $BIN: run make build" >&2; exit 1; }
VERSION=$("$BIN" --version | cut -d' ' -f2)
rm -rf "$OUT" target/dist
mkdir -p "$OUT"

# What both packages install under share/: the wheel's from its data
# directory (python/bin/pyproject.toml), the .deb's under /usr/share.
share() {
    local s=$1 zsh=$2
    mkdir -p "$s/man/man1" "$s/bash-completion/completions" "$s/$zsh" "$s/fish/vendor_completions.d"
    "$BIN" manpages "$s/man/man1" 2>/dev/null
    "$BIN" completions bash > "$s/bash-completion/completions/warmcore"
    "$BIN" completions zsh > "$s/$zsh/_warmcore"
    "$BIN" completions fish > "$s/fish/vendor_completions.d/warmcore.fish"
}
share target/dist/warmcore.data/data/share zsh/site-functions

# The wheels. The Python package's build is the one make build made
# (the same pyo3 configuration file, so nothing is compiled again).
cfg=$(ls -t "$PWD"/target/maturin/pyo3-config-*.txt 2>/dev/null | head -n 1)
(cd python && env ${cfg:+PYO3_CONFIG_FILE=$cfg} "$PY/maturin" build --release --quiet -i "$PY/python" --out "../$OUT")
(cd python/bin && "$PY/maturin" build --release --quiet --strip --out "../../$OUT")

# The Debian package.
ARCH=$(dpkg --print-architecture)
ROOT=target/dist/deb
install -D -m 0755 "$BIN" "$ROOT/usr/bin/warmcore"
strip --strip-unneeded "$ROOT/usr/bin/warmcore"
share "$ROOT/usr/share" zsh/vendor-completions
gzip -9n "$ROOT"/usr/share/man/man1/*.1
install -D -m 0644 packaging/warmcore-sched.service "$ROOT/lib/systemd/system/warmcore-sched.service"
install -D -m 0644 packaging/warmcore.default "$ROOT/etc/default/warmcore"
install -D -m 0644 packaging/copyright "$ROOT/usr/share/doc/warmcore/copyright"
install -D -m 0644 packaging/lintian-overrides "$ROOT/usr/share/lintian/overrides/warmcore"
mkdir -p "$ROOT/DEBIAN"
# A native package's changelog: this version, from the commit it was built from.
cat > "$ROOT/usr/share/doc/warmcore/changelog" <<CHANGELOG
warmcore ($VERSION) unstable; urgency=medium

  * Built from commit $("$BIN" --version | sed 's/.*(\(.*\))/\1/').

 -- $DEB_MAINTAINER  $(date -R -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")
CHANGELOG
gzip -9n "$ROOT/usr/share/doc/warmcore/changelog"
# What the binary links against, as Debian packages (dpkg-shlibdeps reads
# a debian/control, which it only needs to exist).
deps=$(d=$(mktemp -d) && mkdir "$d/debian" && touch "$d/debian/control" &&
       (cd "$d" && dpkg-shlibdeps -O -e "$OLDPWD/$ROOT/usr/bin/warmcore" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'; rm -rf "$d")
[ -n "$deps" ] || { echo "dist: dpkg-shlibdeps found no dependencies of $ROOT/usr/bin/warmcore" >&2; exit 1; }
cat > "$ROOT/DEBIAN/control" <<CONTROL
Package: warmcore
Version: $VERSION
Architecture: $ARCH
Maintainer: $DEB_MAINTAINER
Installed-Size: $(du -ks --exclude=DEBIAN "$ROOT" | cut -f1)
Depends: $deps
Recommends: qemu-system-x86, busybox-static, cpio
Suggests: clang-19
Section: admin
Priority: optional
Description: frequency-aware task placement on Linux
 warmcore keeps tasks on warm cores: a sched_ext scheduler (warmcore sched,
 run as the service warmcore-sched with the options of /etc/default/warmcore),
 an eBPF tracer (warmcore record), the .wct trace tools (warmcore trace), a
 simulator of multicore machines with per-core DVFS (warmcore sim) and a VM
 runner for kernels with sched_ext (warmcore vm, with QEMU).
 .
 This is the server side: the viewer and the pictures (warmcore view,
 warmcore plot) need Python packages Debian 12 does not carry, and come
 with the wheel: pip install 'warmcore[viewer]'.
CONTROL
echo /etc/default/warmcore > "$ROOT/DEBIAN/conffiles"
deb="$OUT/warmcore_${VERSION}_$ARCH.deb"
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$deb" >/dev/null
ls -1 "$OUT"
