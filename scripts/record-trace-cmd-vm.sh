#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Record a real trace-cmd trace of the scheduler inside a QEMU guest (the host
# cannot enable ftrace) and bring back `trace-cmd report` text, with
# trace-cmd's plugin formats and in raw `field=value` form (-R).
#
# Needs (as root): apt-get install qemu-system-x86 busybox-static cpio trace-cmd
# Usage: scripts/record-trace-cmd-vm.sh OUTDIR
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
for t in qemu-system-x86_64 busybox cpio trace-cmd apt-get dpkg-deb zstd; do
    command -v "$t" >/dev/null || { echo "$t is missing: apt-get install qemu-system-x86 busybox-static cpio trace-cmd zstd" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Debian's own kernel (it has ftrace and tracefs built in); the newest 6.1
# image the package lists know.
pkg=$(apt-cache search '^linux-image-6\.1\.0-[0-9]+-amd64$' | awk '{print $1}' | sort -V | tail -1)
[ -n "$pkg" ] || { echo "no linux-image-6.1.0-*-amd64 in the package lists: apt-get update" >&2; exit 1; }
(cd "$tmp" && apt-get download "$pkg" >/dev/null)
dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/kernel"
vmlinuz=$(ls "$tmp"/kernel/boot/vmlinuz-*)

# A busybox initramfs holding trace-cmd and the shared libraries it needs.
root=$tmp/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc}
cp /bin/busybox "$root/bin/busybox"
for a in sh mount seq true ls cat echo sleep poweroff mkdir sync; do ln -s busybox "$root/bin/$a"; done
cp "$(command -v trace-cmd)" "$root/bin/trace-cmd"
for lib in $(ldd "$(command -v trace-cmd)" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done
# libtraceevent's plugins give the report its plugin formats (sched_switch's
# `comm:pid [prio] S ==> comm:pid [prio]`, the wake-ups' `CPU:NNN`).
plugins=$(ls -d /usr/lib/*/traceevent/plugins 2>/dev/null | head -1)
[ -d "$plugins" ] || { echo "libtraceevent's plugins are missing: apt-get install libtraceevent1-plugin" >&2; exit 1; }
mkdir -p "$root$plugins"
cp "$plugins"/*.so "$root$plugins/"
cat > "$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tracefs tracefs /sys/kernel/tracing
cd /tmp
# The workload: a fork/exec loop of short processes.
trace-cmd record -q -e sched -e power:cpu_idle -e power:cpu_frequency -o /tmp/trace.dat \
    sh -c 'for i in $(seq 1 12); do /bin/true; ls / > /dev/null; done' > /dev/null 2>&1
echo "record exit $?"
{
    echo '=====REPORT====='
    trace-cmd report -i /tmp/trace.dat 2>&1
    echo '=====RAW====='
    trace-cmd report -R -i /tmp/trace.dat 2>&1
    echo '=====END====='
} > /dev/ttyS1
sync
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$tmp/initrd.gz"

# no_timer_check: on a busy host the emulated guest may miss its boot-time
# timer check and panic ("IO-APIC + timer doesn't work"). Up to 3 boots.
for attempt in 1 2 3; do
    rm -f "$tmp/ttyS1.txt"
    timeout 600 qemu-system-x86_64 -m 1024 -smp 2 -cpu max -accel tcg,thread=single \
        -kernel "$vmlinuz" -initrd "$tmp/initrd.gz" \
        -append "console=ttyS0 quiet panic=-1 no_timer_check" -display none -monitor none \
        -serial stdio -serial "file:$tmp/ttyS1.txt" -no-reboot || true
    tr -d '\r' < "$tmp/ttyS1.txt" > "$tmp/console.txt" 2>/dev/null || : > "$tmp/console.txt"
    grep -q '=====END=====' "$tmp/console.txt" && break
    echo "boot $attempt: the guest did not finish its report" >&2
done
grep -q '=====END=====' "$tmp/console.txt" || { echo "the guest did not finish its report in 3 boots" >&2; exit 1; }
sed -n '/=====REPORT=====/,/=====RAW=====/p' "$tmp/console.txt" | sed '1d;$d' \
    | zstd -19 -q -f -o "$out/trace-cmd-forks.txt.zst"
sed -n '/=====RAW=====/,/=====END=====/p' "$tmp/console.txt" | sed '1d;$d' \
    | zstd -19 -q -f -o "$out/trace-cmd-forks-raw.txt.zst"
echo "kernel: $pkg" > "$out/trace-cmd-forks.kernel"
ls -l "$out"/trace-cmd-forks*
