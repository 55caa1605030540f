#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fetch (once) the newest Debian trixie-backports 7.x kernel, which has
# sched_ext, into a cache directory, without touching the system's apt
# configuration. Prints the path of the kernel image on stdout.
# Usage: vm-kernel.sh CACHE_DIR
set -euo pipefail
cache=${1:?usage: vm-kernel.sh CACHE_DIR}
dir="$cache/kernel"
if [ -s "$dir/vmlinuz" ] && [ -s "$dir/version" ]; then
    echo "$dir/vmlinuz"
    exit 0
fi
mkdir -p "$dir"
apt="$cache/apt"
mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/cache"

# The Debian mirror the system's own apt sources name (deb822 or one-line).
uri=$( { grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{for(i=2;i<=NF;i++) print $i}';
         grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | sed 's/\[[^]]*\]//' | awk '{print $2}'; } \
       | grep -v -- '-security' | grep '/debian/\?$' | head -1 || true)
if [ -z "$uri" ]; then
    echo "vm-kernel: no Debian mirror found in /etc/apt/sources.list*: pass --kernel PATH to a kernel with sched_ext" >&2
    exit 1
fi
echo "deb $uri trixie-backports main" > "$apt/sources.list"
O=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=/dev/null
   -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives" -o "Dir::Cache=$apt/cache")
echo "vm-kernel: looking up the newest trixie-backports kernel" >&2
apt-get -qq "${O[@]}" update 2>&1 | grep -v unsandboxed >&2 || true
pkg=$(apt-cache "${O[@]}" pkgnames linux-binary- | grep -E '^linux-binary-7\.[0-9.]+\+deb[0-9]+-amd64$' \
      | sed 's/^linux-binary-//; s/-amd64$//' | sort -V | tail -1)
if [ -z "$pkg" ]; then
    echo "vm-kernel: no 7.x amd64 kernel in trixie-backports: pass --kernel PATH" >&2
    exit 1
fi
ver="$pkg-amd64"
echo "vm-kernel: fetching linux-binary-$ver" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The image is in linux-binary-VER, its config in linux-base-VER.
(cd "$tmp" && apt-get -qq "${O[@]}" download "linux-binary-$ver" "linux-base-$ver" 2>&1 | grep -v unsandboxed >&2 || true)
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/x"; done
cfg="$tmp/x/usr/lib/modules/$ver/config"
img="$tmp/x/usr/lib/modules/$ver/vmlinuz"
if [ ! -s "$img" ] || [ ! -s "$cfg" ]; then
    echo "vm-kernel: could not fetch the image and config of $ver: pass --kernel PATH" >&2
    exit 1
fi
if ! grep -q '^CONFIG_SCHED_CLASS_EXT=y' "$cfg"; then
    echo "vm-kernel: $ver lacks CONFIG_SCHED_CLASS_EXT=y: pass --kernel PATH to a kernel with sched_ext" >&2
    exit 1
fi
cp "$img" "$dir/vmlinuz.part" && mv "$dir/vmlinuz.part" "$dir/vmlinuz"
cp "$cfg" "$dir/config"
echo "$ver" > "$dir/version"
rm -rf "$apt/archives"
echo "$dir/vmlinuz"
