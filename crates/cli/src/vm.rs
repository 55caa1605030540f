// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore vm`: boot a kernel with sched_ext under QEMU (single-threaded
//! TCG, `-cpu max`) with a busybox initramfs that holds this static binary,
//! run a command inside, and return its output and exit status.
//! `warmcore vm workload`: the test and benchmark workloads run inside.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct VmArgs {
    #[command(subcommand)]
    sub: Option<VmSub>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
enum VmSub {
    /// Boot the VM and run COMMAND inside (the default).
    Run(RunArgs),
    /// Fetch (once) and print the cached kernel image.
    Kernel {
        #[arg(long)]
        cache: Option<PathBuf>,
    },
    /// A workload (meant to run inside the VM); prints one JSON line.
    Workload(Workload),
}

#[derive(Args, Clone)]
struct RunArgs {
    /// Kernel image with sched_ext, or `auto` to fetch and cache a Debian one.
    #[arg(long, default_value = "auto")]
    kernel: String,
    /// Virtual CPUs.
    #[arg(long, default_value_t = 4, value_parser = warmcore_args::count::<u32>(1, 256))]
    cpus: u32,
    /// Memory in MiB.
    #[arg(long, default_value_t = 1024, value_parser = warmcore_args::count::<u32>(128, 65536))]
    mem: u32,
    /// Give up (and fail) after this many seconds.
    #[arg(long, value_name = "SECS", default_value = "900", value_parser = warmcore_args::positive_secs)]
    timeout: Duration,
    /// The static warmcore binary to put in the VM (default: this one if
    /// static, else target/x86_64-unknown-linux-gnu/release/warmcore).
    #[arg(long)]
    warmcore: Option<PathBuf>,
    /// Print the kernel's console log after the command's output.
    #[arg(long)]
    kmsg: bool,
    /// Cache directory (default: $XDG_CACHE_HOME/warmcore or ~/.cache/warmcore).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// The command to run inside (`warmcore` is this binary).
    #[arg(last = true)]
    command: Vec<String>,
}

pub fn run(a: VmArgs) -> Result<i32> {
    match a.sub {
        Some(VmSub::Run(r)) => boot(&r),
        Some(VmSub::Kernel { cache }) => {
            println!("{}", kernel_auto(&cache_dir(cache.as_deref())?)?.display());
            Ok(0)
        }
        Some(VmSub::Workload(w)) => workload(&w),
        None => boot(&a.run),
    }
}

fn cache_dir(opt: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = opt {
        return Ok(p.to_path_buf());
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(x).join("warmcore"));
    }
    match std::env::var_os("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".cache/warmcore")),
        None => bail!("no cache directory: set HOME or XDG_CACHE_HOME, or pass --cache DIR"),
    }
}

const KERNEL_SCRIPT: &str = include_str!("../../../scripts/vm-kernel.sh");

fn kernel_auto(cache: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
    let out = Command::new("bash")
        .arg("-c")
        .arg(KERNEL_SCRIPT)
        .arg("vm-kernel.sh")
        .arg(cache)
        .stderr(Stdio::inherit())
        .output()
        .context("running bash to fetch the kernel")?;
    if !out.status.success() {
        bail!("could not fetch a kernel with sched_ext (see above); pass --kernel PATH");
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// An ELF64 executable without a PT_INTERP program header (no dynamic loader).
fn is_static(p: &Path) -> bool {
    let Ok(b) = std::fs::read(p) else { return false };
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 {
        return false;
    }
    let u16at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(b[0x20..0x28].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16at(0x36), u16at(0x38));
    (0..phnum).all(|i| {
        let o = phoff + i * phentsize;
        o + 4 <= b.len() && u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) != 3
    })
}

fn static_binary(opt: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = opt {
        if !is_static(p) {
            bail!("{} is not a static executable: build it with RUSTFLAGS=\"-C target-feature=+crt-static\" cargo build --release --target x86_64-unknown-linux-gnu", p.display());
        }
        return Ok(p.to_path_buf());
    }
    let me = std::env::current_exe().context("locating this executable")?;
    if is_static(&me) {
        return Ok(me);
    }
    // target/release/warmcore -> target/x86_64-unknown-linux-gnu/release/warmcore
    if let Some(target) = me.parent().and_then(|d| d.parent()) {
        let p = target.join("x86_64-unknown-linux-gnu/release/warmcore");
        if is_static(&p) {
            return Ok(p);
        }
    }
    bail!("no static warmcore binary for the VM: run `make vm-binary` (RUSTFLAGS=\"-C target-feature=+crt-static\" cargo build --release --target x86_64-unknown-linux-gnu -p warmcore) or pass --warmcore PATH")
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| p.is_file())
    })
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_=./,:+@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

const INIT: &str = r#"#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ulimit -l unlimited
export PATH=/bin:/sbin
cd /tmp
exec 3>/dev/ttyS1
/bin/sh /cmd >&3 2>&3
echo "WCVM-EXIT $?" >&3
poweroff -f
"#;

/// Build the initramfs (newc cpio, gzip) in @dir.
fn initramfs(dir: &Path, kernel: &Path, warmcore: &Path, command: &[String]) -> Result<PathBuf> {
    let root = dir.join("root");
    for d in ["bin", "sbin", "proc", "sys", "dev", "tmp", "etc", "boot"] {
        std::fs::create_dir_all(root.join(d))?;
    }
    // The kernel's configuration where Debian installs it, when it sits
    // beside the kernel (as the fetched one does): libbpf reads CONFIG_HZ
    // there for `warmcore sched`.
    if let Some(kdir) = kernel.parent() {
        if let (Ok(version), true) = (std::fs::read_to_string(kdir.join("version")), kdir.join("config").is_file()) {
            std::fs::copy(kdir.join("config"), root.join(format!("boot/config-{}", version.trim())))?;
        }
    }
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file() && is_static(p))
        .context("no static busybox: install busybox-static (scripts/setup.sh does)")?;
    std::fs::copy(&busybox, root.join("bin/busybox"))?;
    std::fs::copy(warmcore, root.join("bin/warmcore"))?;
    let out = Command::new(root.join("bin/busybox")).arg("--list").output()?;
    for applet in String::from_utf8_lossy(&out.stdout).lines() {
        if applet != "busybox" && applet != "warmcore" {
            let _ = std::os::unix::fs::symlink("busybox", root.join("bin").join(applet));
        }
    }
    std::fs::write(root.join("init"), INIT)?;
    std::fs::set_permissions(root.join("init"), std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let cmd: Vec<String> = command.iter().map(|s| shell_quote(s)).collect();
    std::fs::write(root.join("cmd"), format!("{}\n", cmd.join(" ")))?;
    let img = dir.join("initrd.gz");
    let st = Command::new("sh")
        .arg("-c")
        .arg("cd \"$1\" && find . | cpio -o -H newc --quiet | gzip -1 > \"$2\"")
        .arg("sh")
        .arg(&root)
        .arg(&img)
        .status()
        .context("running cpio and gzip")?;
    if !st.success() {
        bail!("building the initramfs failed: is cpio installed (scripts/setup.sh)?");
    }
    Ok(img)
}

fn boot(r: &RunArgs) -> Result<i32> {
    if r.command.is_empty() {
        bail!("no command: `warmcore vm [OPTIONS] -- COMMAND...`, e.g. `warmcore vm -- warmcore sched --run-for 5`");
    }
    let qemu = which("qemu-system-x86_64").context("qemu-system-x86_64 not found: install qemu-system-x86 (scripts/setup.sh)")?;
    let cache = cache_dir(r.cache.as_deref())?;
    let kernel = if r.kernel == "auto" {
        kernel_auto(&cache)?
    } else {
        let p = PathBuf::from(&r.kernel);
        if !p.is_file() {
            bail!("--kernel {}: no such file", r.kernel);
        }
        p
    };
    let warmcore = static_binary(r.warmcore.as_deref())?;
    let dir = std::env::temp_dir().join(format!("warmcore-vm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let res = boot_in(r, &qemu, &kernel, &warmcore, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    res
}

fn boot_in(r: &RunArgs, qemu: &Path, kernel: &Path, warmcore: &Path, dir: &Path) -> Result<i32> {
    let initrd = initramfs(dir, kernel, warmcore, &r.command)?;
    let console = dir.join("console.log");
    let output = dir.join("output.log");
    let mut child = Command::new(qemu)
        .args(["-m", &r.mem.to_string(), "-smp", &r.cpus.to_string()])
        .args(["-cpu", "max", "-accel", "tcg,thread=single"])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(&initrd)
        .args(["-append", "console=ttyS0 quiet panic=-1 oops=panic"])
        .args(["-display", "none", "-no-reboot", "-monitor", "none", "-nodefaults"])
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .arg("-serial")
        .arg(format!("file:{}", output.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting qemu-system-x86_64")?;
    let deadline = Instant::now() + r.timeout;
    let mut shown = 0usize;
    let mut stdout = std::io::stdout();
    let mut timed_out = false;
    let status = loop {
        // Stream the command's output as it comes.
        if let Ok(b) = std::fs::read(&output) {
            if b.len() > shown {
                let chunk = &b[shown..];
                let text = String::from_utf8_lossy(chunk);
                for line in text.split_inclusive('\n') {
                    if !line.starts_with("WCVM-EXIT ") {
                        let _ = stdout.write_all(line.replace('\r', "").as_bytes());
                    }
                }
                let _ = stdout.flush();
                shown = b.len();
            }
        }
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            timed_out = true;
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = std::fs::read(&output).unwrap_or_default();
    let out = String::from_utf8_lossy(&out);
    if shown < out.len() {
        for line in out[shown.min(out.len())..].split_inclusive('\n') {
            if !line.starts_with("WCVM-EXIT ") {
                print!("{}", line.replace('\r', ""));
            }
        }
    }
    let kmsg = String::from_utf8_lossy(&std::fs::read(&console).unwrap_or_default()).replace('\r', "");
    if r.kmsg {
        println!("--- kernel console ---\n{kmsg}");
    }
    let code = out
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("WCVM-EXIT ").and_then(|c| c.trim().parse::<i32>().ok()));
    match code {
        Some(c) => Ok(c),
        None => {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            let tail: Vec<&str> = kmsg.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect();
            eprintln!("{}", tail.join("\n"));
            if timed_out {
                bail!("the VM did not finish within {} s (--timeout); kernel console tail above", r.timeout.as_secs_f64());
            }
            bail!(
                "the VM stopped without the command's exit status (qemu {:?}{}); kernel console tail above",
                status,
                if err.trim().is_empty() { String::new() } else { format!(": {}", err.trim()) }
            )
        }
    }
}

// ------------------------------------------------------------ workloads

#[derive(Args, Clone)]
struct Workload {
    #[command(subcommand)]
    kind: WorkloadKind,
}

#[derive(Subcommand, Clone)]
enum WorkloadKind {
    /// Fork/wait loop, pipe ping-pong pairs, more CPU hogs than CPUs, short sleepers.
    Mixed {
        #[arg(long, default_value = "30", value_parser = warmcore_args::secs)]
        secs: Duration,
    },
    /// Pipe ping-pong between two processes: round trips per second.
    Pipe {
        #[arg(long, default_value_t = 20000, value_parser = warmcore_args::count::<u64>(1, 1_000_000_000))]
        msgs: u64,
    },
    /// hackbench-like: groups of senders and receivers over pipes: seconds.
    Hackbench {
        #[arg(long, default_value_t = 4, value_parser = warmcore_args::count::<u32>(1, 1000))]
        groups: u32,
        #[arg(long, default_value_t = 100, value_parser = warmcore_args::count::<u32>(1, 1_000_000))]
        loops: u32,
    },
    /// fork, exec /bin/true, wait: processes per second.
    Forkexec {
        #[arg(long, default_value_t = 300, value_parser = warmcore_args::count::<u32>(1, 10_000_000))]
        n: u32,
    },
    /// A parent forks a child; the child records the CPU it starts on. With
    /// --busy-us the parent keeps running that long, else it waits at once.
    Forkcpu {
        #[arg(long, default_value_t = 200, value_parser = warmcore_args::count::<u32>(1, 10_000_000))]
        n: u32,
        #[arg(long, default_value_t = 0, value_parser = warmcore_args::count::<u64>(0, 60_000_000))]
        busy_us: u64,
    },
    /// A fork/wait chain: each process works a little, forks the next, waits.
    Chain {
        #[arg(long, default_value_t = 300, value_parser = warmcore_args::count::<u32>(1, 10_000_000))]
        n: u32,
        #[arg(long, default_value_t = 200, value_parser = warmcore_args::count::<u64>(0, 60_000_000))]
        work_us: u64,
    },
    /// N CPU hogs for SECS: CPU time over wall time.
    Hogs {
        #[arg(long, default_value_t = 4, value_parser = warmcore_args::count::<u32>(1, 4096))]
        n: u32,
        #[arg(long, default_value = "5", value_parser = warmcore_args::secs)]
        secs: Duration,
    },
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn getcpu() -> i32 {
    unsafe { libc::sched_getcpu() }
}

fn spin_us(us: u64) {
    let end = mono_ns() + us * 1000;
    while mono_ns() < end {
        std::hint::spin_loop();
    }
}

/// fork(); the child runs @f and exits with its status.
fn fork_run(f: impl FnOnce() -> i32) -> Result<i32> {
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        let c = f();
        unsafe { libc::_exit(c) };
    }
    Ok(pid)
}

fn wait_pid(pid: i32) -> Result<i32> {
    let mut st = 0;
    loop {
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r == pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            bail!("waitpid: {}", std::io::Error::last_os_error());
        }
    }
    Ok(if libc::WIFEXITED(st) { libc::WEXITSTATUS(st) } else { 128 + libc::WTERMSIG(st) })
}

fn pipe() -> Result<(i32, i32)> {
    let mut fds = [0i32; 2];
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        bail!("pipe: {}", std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

fn rd(fd: i32, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        let r = unsafe { libc::read(fd, buf[got..].as_mut_ptr() as *mut _, buf.len() - got) };
        if r <= 0 {
            return false;
        }
        got += r as usize;
    }
    true
}

fn wr(fd: i32, buf: &[u8]) -> bool {
    unsafe { libc::write(fd, buf.as_ptr() as *const _, buf.len()) == buf.len() as isize }
}

/// Shared anonymous memory of @n u64 for children to report through.
fn shared(n: usize) -> &'static mut [u64] {
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n * 8,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert!(p != libc::MAP_FAILED, "mmap of a few bytes failed");
    unsafe { std::slice::from_raw_parts_mut(p as *mut u64, n) }
}

/// @msgs round trips of 4 bytes between two processes; returns the round
/// trips made, the seconds taken and how many of them had both ends on one
/// CPU (the child replies with the CPU it runs on).
fn pipe_pingpong(msgs: u64, deadline: Option<u64>) -> Result<(u64, f64, u64)> {
    let (a_r, a_w) = pipe()?;
    let (b_r, b_w) = pipe()?;
    let t0 = mono_ns();
    let child = fork_run(|| {
        let mut b = [0u8; 4];
        while rd(a_r, &mut b) {
            let cpu = unsafe { libc::sched_getcpu() } as u32;
            if b == [0; 4] || !wr(b_w, &cpu.to_le_bytes()) {
                break;
            }
        }
        0
    })?;
    let (mut n, mut same) = (0, 0);
    let mut b = [0u8; 4];
    while n < msgs && deadline.is_none_or(|d| mono_ns() < d) {
        if !wr(a_w, &[1, 0, 0, 0]) || !rd(b_r, &mut b) {
            bail!("pipe ping-pong broke after {n} round trips");
        }
        same += (u32::from_le_bytes(b) == unsafe { libc::sched_getcpu() } as u32) as u64;
        n += 1;
    }
    wr(a_w, &[0; 4]);
    wait_pid(child)?;
    for fd in [a_r, a_w, b_r, b_w] {
        unsafe { libc::close(fd) };
    }
    Ok((n, (mono_ns() - t0) as f64 / 1e9, same))
}

fn hackbench(groups: u32, loops: u32) -> Result<f64> {
    const SENDERS: u32 = 5;
    const RECEIVERS: u32 = 5;
    let t0 = mono_ns();
    let mut pids = vec![];
    for _ in 0..groups {
        let mut rx = vec![];
        for _ in 0..RECEIVERS {
            let (r, w) = pipe()?;
            rx.push((r, w));
        }
        for &(r, w) in &rx {
            pids.push(fork_run(move || {
                unsafe { libc::close(w) };
                let mut buf = [0u8; 100];
                for _ in 0..SENDERS * loops {
                    if !rd(r, &mut buf) {
                        return 1;
                    }
                }
                0
            })?);
        }
        let wfds: Vec<i32> = rx.iter().map(|&(_, w)| w).collect();
        for _ in 0..SENDERS {
            let wfds = wfds.clone();
            pids.push(fork_run(move || {
                let buf = [7u8; 100];
                for _ in 0..loops {
                    for &w in &wfds {
                        if !wr(w, &buf) {
                            return 1;
                        }
                    }
                }
                0
            })?);
        }
        for (r, w) in rx {
            unsafe {
                libc::close(r);
                libc::close(w);
            }
        }
    }
    let mut bad = 0;
    for p in pids {
        if wait_pid(p)? != 0 {
            bad += 1;
        }
    }
    if bad > 0 {
        bail!("hackbench: {bad} processes failed");
    }
    Ok((mono_ns() - t0) as f64 / 1e9)
}

fn forkexec(n: u32, deadline: Option<u64>) -> Result<(u32, f64)> {
    let t0 = mono_ns();
    let path = std::ffi::CString::new("/bin/true").unwrap();
    let mut done = 0;
    while done < n && deadline.is_none_or(|d| mono_ns() < d) {
        let pid = fork_run(|| {
            let argv = [path.as_ptr(), std::ptr::null()];
            unsafe { libc::execv(path.as_ptr(), argv.as_ptr()) };
            127
        })?;
        if wait_pid(pid)? != 0 {
            bail!("/bin/true failed in the fork/exec loop");
        }
        done += 1;
    }
    Ok((done, (mono_ns() - t0) as f64 / 1e9))
}

fn workload(w: &Workload) -> Result<i32> {
    let j = match w.kind.clone() {
        WorkloadKind::Mixed { secs } => {
            let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4);
            let end = mono_ns() + secs.as_nanos() as u64;
            let mut pids = vec![];
            // fork/wait loop
            pids.push(fork_run(move || {
                while mono_ns() < end {
                    match fork_run(|| 0).and_then(wait_pid) {
                        Ok(0) => {}
                        _ => return 1,
                    }
                }
                0
            })?);
            // two pipe ping-pong pairs
            for _ in 0..2 {
                pids.push(fork_run(move || if pipe_pingpong(u64::MAX, Some(end)).is_ok() { 0 } else { 1 })?);
            }
            // more hogs than CPUs
            for _ in 0..ncpu + 2 {
                pids.push(fork_run(move || {
                    let mut x = 0u64;
                    while mono_ns() < end {
                        for i in 0..10000u64 {
                            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
                        }
                        std::hint::black_box(x);
                    }
                    0
                })?);
            }
            // short sleepers
            for _ in 0..2 {
                pids.push(fork_run(move || {
                    while mono_ns() < end {
                        spin_us(50);
                        std::thread::sleep(Duration::from_micros(500));
                    }
                    0
                })?);
            }
            let n = pids.len();
            let mut failed = 0;
            for p in pids {
                if wait_pid(p)? != 0 {
                    failed += 1;
                }
            }
            serde_json::json!({"workload": "mixed", "processes": n, "failed": failed, "secs": secs.as_secs_f64()})
        }
        WorkloadKind::Pipe { msgs } => {
            let (n, s, same) = pipe_pingpong(msgs, None)?;
            serde_json::json!({"workload": "pipe", "msgs": n, "secs": s, "msgs_per_s": n as f64 / s,
                "same_cpu": same as f64 / n.max(1) as f64})
        }
        WorkloadKind::Hackbench { groups, loops } => {
            let s = hackbench(groups, loops)?;
            serde_json::json!({"workload": "hackbench", "groups": groups, "loops": loops, "secs": s})
        }
        WorkloadKind::Forkexec { n } => {
            let (n, s) = forkexec(n, None)?;
            serde_json::json!({"workload": "forkexec", "n": n, "secs": s, "procs_per_s": n as f64 / s})
        }
        WorkloadKind::Forkcpu { n, busy_us } => {
            // sh[0]: child's first CPU, sh[1]: ns from fork to the child's start
            let sh = shared(2);
            let (mut same, mut delays, mut other, mut other_fast) = (0u32, vec![], 0u32, 0u32);
            for _ in 0..n {
                let pcpu = getcpu();
                let t = mono_ns();
                sh[0] = u64::MAX;
                let shp = sh.as_mut_ptr();
                let pid = fork_run(move || {
                    unsafe {
                        *shp = getcpu() as u64;
                        *shp.add(1) = mono_ns() - t;
                    }
                    0
                })?;
                if busy_us > 0 {
                    spin_us(busy_us);
                }
                wait_pid(pid)?;
                let ccpu = sh[0] as i32;
                if ccpu == pcpu && getcpu() == pcpu {
                    same += 1;
                } else if ccpu != pcpu {
                    other += 1;
                    if sh[1] < 1_000_000 {
                        other_fast += 1;
                    }
                }
                delays.push(sh[1]);
                std::thread::sleep(Duration::from_millis(2));
            }
            delays.sort();
            serde_json::json!({"workload": "forkcpu", "n": n, "busy_us": busy_us,
                "same_cpu": same, "child_on_parent_cpu": n - other, "other_cpu": other, "other_cpu_within_1ms": other_fast,
                "median_start_ns": delays[delays.len() / 2]})
        }
        WorkloadKind::Chain { n, work_us } => {
            // sh[c]: how many times a link of the chain was seen on CPU c
            let sh = shared(64);
            let shp = sh.as_mut_ptr() as usize;
            fn link(left: u32, work_us: u64, shp: usize) -> i32 {
                let mark = |shp: usize| {
                    let c = getcpu();
                    if (0..64).contains(&c) {
                        unsafe { &*((shp as *const std::sync::atomic::AtomicU64).add(c as usize)) }
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                };
                mark(shp);
                spin_us(work_us);
                mark(shp);
                if left == 0 {
                    return 0;
                }
                fork_run(move || link(left - 1, work_us, shp)).and_then(wait_pid).unwrap_or(1)
            }
            // a chain of depth n would need n live processes: run it in rounds of 10
            let mut rc = 0;
            for _ in 0..n.div_ceil(10) {
                rc |= link(10, work_us, shp);
            }
            let total: u64 = sh.iter().sum();
            let hist: Vec<u64> = sh.iter().copied().take_while(|_| true).collect();
            let touched = hist.iter().filter(|&&c| c > 0).count();
            // "Uses" a CPU: at least 5% of the chain's samples ran there
            // (a stray placement behind a daemon's wake-up does not count).
            let used = hist.iter().filter(|&&c| c * 20 >= total.max(1)).count();
            let last = hist.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
            serde_json::json!({"workload": "chain", "n": n, "status": rc,
                "cpus_used": used, "cpus_touched": touched, "per_cpu": &hist[..last]})
        }
        WorkloadKind::Hogs { n, secs } => {
            let end = mono_ns() + secs.as_nanos() as u64;
            let t0 = mono_ns();
            let mut pids = vec![];
            for _ in 0..n {
                pids.push(fork_run(move || {
                    let mut x = 1u64;
                    while mono_ns() < end {
                        x = x.wrapping_mul(3).wrapping_add(1);
                        std::hint::black_box(x);
                    }
                    0
                })?);
            }
            for p in pids {
                wait_pid(p)?;
            }
            let wall = (mono_ns() - t0) as f64 / 1e9;
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
            let cpu = ru.ru_utime.tv_sec as f64 + ru.ru_utime.tv_usec as f64 / 1e6
                + ru.ru_stime.tv_sec as f64 + ru.ru_stime.tv_usec as f64 / 1e6;
            serde_json::json!({"workload": "hogs", "n": n, "wall_s": wall, "cpu_s": cpu})
        }
    };
    println!("{j}");
    Ok(0)
}
