// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore vm`: boot a kernel with sched_ext under QEMU (single-threaded
//! TCG, `-cpu max`) with a busybox initramfs that holds this warmcore binary,
//! any other binaries asked for (the peers' loaders among them) and the
//! libraries each loads, run a command inside, and return its output and
//! exit status.
//! [`workload`]: the test and benchmark workloads run inside; [`peers`]:
//! the scx project's loaders, built once into the cache.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

pub mod peers;
pub mod proc;
pub mod workload;

/// What to boot and run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Kernel image with sched_ext, or `auto` to fetch and cache a Debian one.
    pub kernel: String,
    /// Virtual CPUs.
    pub cpus: u32,
    /// Sockets, each a NUMA node with its own last-level cache; `cpus`
    /// divides among them.
    pub sockets: u32,
    /// More kernel command-line parameters (e.g. `maxcpus=3`).
    pub append: Option<String>,
    /// Memory in MiB.
    pub mem: u32,
    /// Give up (and fail) after this long.
    pub timeout: Duration,
    /// The warmcore binary to put in the VM (default: the running one).
    pub warmcore: Option<PathBuf>,
    /// More executables to put in the VM's /bin, under their own names,
    /// each with the libraries it loads.
    pub bins: Vec<PathBuf>,
    /// Put the peers' loaders in too ([`peers::install`] builds them once).
    pub peers: bool,
    /// Print the kernel's console log after the command's output.
    pub kmsg: bool,
    /// Cache directory (default: $XDG_CACHE_HOME/warmcore or ~/.cache/warmcore).
    pub cache: Option<PathBuf>,
    /// The command to run inside (`warmcore` is that binary).
    pub command: Vec<String>,
}

/// The cache of fetched kernels and built peers: `opt`, else $XDG_CACHE_HOME/warmcore or
/// ~/.cache/warmcore.
pub fn cache_dir(opt: Option<&Path>) -> Result<PathBuf> {
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

const KERNEL_SCRIPT: &str = include_str!("vm-kernel.sh");

/// Fetch (once) a Debian kernel with sched_ext into `cache`; its image.
pub fn kernel_auto(cache: &Path) -> Result<PathBuf> {
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

/// The warmcore binary to put in the VM: `opt`, else the running one.
fn vm_binary(opt: Option<&Path>) -> Result<PathBuf> {
    let Some(p) = opt else {
        return std::env::current_exe().context("locating this executable");
    };
    check_executable("--warmcore", p, "build warmcore with `make build`")?;
    Ok(p.to_path_buf())
}

/// `p` is an ELF file, or an error in one line naming `option` and `what to do`.
fn check_executable(option: &str, p: &Path, todo: &str) -> Result<()> {
    if !p.is_file() {
        bail!("{option} {}: no such file", p.display());
    }
    let mut magic = [0u8; 4];
    let elf = std::fs::File::open(p).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic)).is_ok() && &magic == b"\x7fELF";
    if !elf {
        bail!("{option} {}: not an executable ({todo})", p.display());
    }
    Ok(())
}

/// Each `--bin` is an executable (checked before anything slow runs).
fn check_bins(r: &Options) -> Result<()> {
    r.bins.iter().try_for_each(|b| check_executable("--bin", b, "give the path of a compiled program"))
}

/// The extra binaries to put in the VM: `--bin`s, then the peers' loaders
/// when asked for; each name once, none named `warmcore`.
fn extra_binaries(r: &Options, cache: &Path) -> Result<Vec<PathBuf>> {
    check_bins(r)?;
    let mut bins = r.bins.clone();
    if r.peers {
        bins.extend(peers::install(cache)?.into_iter().map(|(_, b)| b));
    }
    let mut names = std::collections::BTreeSet::from(["warmcore".to_string()]);
    for b in &bins {
        let name = b.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if !names.insert(name.clone()) {
            bail!("--bin {}: the VM's /bin already has a {name}: give each binary a name of its own", b.display());
        }
    }
    Ok(bins)
}

/// What a dynamic executable loads: its shared libraries and the dynamic
/// loader, as `ldd` lists them (none for a static one). The initramfs gets
/// them at the same paths, as initramfs builders (dracut, initramfs-tools)
/// do, so that the host's build runs in the VM without a second, static one.
fn shared_libraries(bin: &Path) -> Result<Vec<PathBuf>> {
    if is_static(bin) {
        return Ok(vec![]);
    }
    let out = Command::new("ldd")
        .arg(bin)
        .output()
        .context("running ldd to list the libraries warmcore needs in the VM (it comes with libc-bin)")?;
    if !out.status.success() {
        bail!("ldd {}: {}", bin.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    let mut libs = vec![];
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // "libc.so.6 => /lib/.../libc.so.6 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)",
        // or the vDSO, which has no file.
        let line = line.trim();
        if line.contains("=> not found") {
            bail!("{} needs {}, which is not installed", bin.display(), line.split_whitespace().next().unwrap_or(line));
        }
        let path = line.rsplit("=> ").next().unwrap_or(line).split(" (").next().unwrap_or("").trim();
        if path.starts_with('/') {
            libs.push(PathBuf::from(path));
        }
    }
    Ok(libs)
}

/// The static busybox the initramfs is built on.
fn static_busybox() -> Result<PathBuf> {
    ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file() && is_static(p))
        .context("no static busybox: install busybox-static (scripts/setup.sh does)")
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
echo WCVM-START >&3
/bin/sh /cmd >&3 2>&3
echo "WCVM-EXIT $?" >&3
poweroff -f
"#;

/// Build the initramfs (newc cpio, gzip) in @dir.
fn initramfs(dir: &Path, kernel: &Path, warmcore: &Path, bins: &[PathBuf], command: &[String]) -> Result<PathBuf> {
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
    let busybox = static_busybox()?;
    std::fs::copy(&busybox, root.join("bin/busybox"))?;
    let mut placed = vec![(warmcore.to_path_buf(), root.join("bin/warmcore"))];
    for b in bins {
        placed.push((b.clone(), root.join("bin").join(b.file_name().unwrap_or_default())));
    }
    for (bin, dest) in &placed {
        std::fs::copy(bin, dest).with_context(|| format!("copying {} into the initramfs", bin.display()))?;
        for lib in shared_libraries(bin)? {
            let dest = root.join(lib.strip_prefix("/").unwrap_or(&lib));
            if dest.exists() {
                continue;
            }
            std::fs::create_dir_all(dest.parent().unwrap_or(&root))?;
            std::fs::copy(&lib, &dest).with_context(|| format!("copying {} into the initramfs", lib.display()))?;
        }
    }
    let out = Command::new(root.join("bin/busybox")).arg("--list").output()?;
    for applet in String::from_utf8_lossy(&out.stdout).lines() {
        if applet != "busybox" && !placed.iter().any(|(_, d)| d.file_name().is_some_and(|n| n == applet)) {
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

/// Boot the VM, run the command, stream its output; its exit status.
pub fn boot(r: &Options) -> Result<i32> {
    if r.command.is_empty() {
        bail!("no command: `warmcore vm [OPTIONS] -- COMMAND...`, e.g. `warmcore vm -- warmcore sched --run-for 5`");
    }
    check_bins(r)?;
    let qemu = which("qemu-system-x86_64").context("qemu-system-x86_64 not found: install qemu-system-x86 (scripts/setup.sh)")?;
    let cache = cache_dir(r.cache.as_deref())?;
    let kernel = if r.kernel == "auto" {
        kernel_auto(&cache)?
    } else {
        let p = PathBuf::from(&r.kernel);
        if !p.is_file() {
            bail!(warmcore_args::UsageError::new(format!("--kernel {}: no such file: give a kernel image, or auto", r.kernel)));
        }
        p
    };
    let warmcore = vm_binary(r.warmcore.as_deref())?;
    let bins = extra_binaries(r, &cache)?;
    let dir = std::env::temp_dir().join(format!("warmcore-vm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut res = boot_in(r, &qemu, &kernel, &warmcore, &bins, &dir);
    if let Some(e) = res.as_ref().err().and_then(|e| e.downcast_ref::<NotStarted>()) {
        eprintln!("warmcore vm: {e}: booting once more");
        res = boot_in(r, &qemu, &kernel, &warmcore, &bins, &dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    res
}

/// How long the guest's kernel may take to reach its init. An emulated
/// boot of 72 vCPUs reaches it in well under a minute, and under a
/// minute or two on a loaded host; now and then one never does (the
/// kernel's console silent, the emulator busy), and the command would
/// otherwise wait out its whole --timeout for nothing.
const BOOT_DEADLINE: Duration = Duration::from_secs(300);

/// The guest's kernel did not reach its init within the boot deadline.
#[derive(Debug)]
struct NotStarted(Duration);

impl std::fmt::Display for NotStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "the guest's kernel did not reach its init within {} s (an emulated boot hangs now and then)", self.0.as_secs())
    }
}

impl std::error::Error for NotStarted {}

fn boot_in(r: &Options, qemu: &Path, kernel: &Path, warmcore: &Path, bins: &[PathBuf], dir: &Path) -> Result<i32> {
    let initrd = initramfs(dir, kernel, warmcore, bins, &r.command)?;
    let console = dir.join("console.log");
    let output = dir.join("output.log");
    if r.sockets == 0 || r.cpus % r.sockets != 0 || r.mem % r.sockets != 0 {
        bail!("--sockets {}: it must divide --cpus ({}) and --mem ({})", r.sockets, r.cpus, r.mem);
    }
    let smp = format!("{},sockets={},cores={},threads=1", r.cpus, r.sockets, r.cpus / r.sockets);
    let mut numa: Vec<String> = vec![];
    if r.sockets > 1 {
        let per = r.mem / r.sockets;
        for s in 0..r.sockets {
            numa.extend(["-object".into(), format!("memory-backend-ram,id=m{s},size={per}M")]);
            numa.extend(["-numa".into(), format!("node,nodeid={s},memdev=m{s}")]);
            numa.extend(["-numa".into(), format!("cpu,node-id={s},socket-id={s}")]);
        }
    }
    let append = match &r.append {
        Some(a) => format!("console=ttyS0 quiet panic=-1 oops=panic {a}"),
        None => "console=ttyS0 quiet panic=-1 oops=panic".to_string(),
    };
    let mut qemu_cmd = Command::new(qemu);
    qemu_cmd
        .args(["-m", &r.mem.to_string(), "-smp", &smp])
        .args(&numa)
        .args(["-cpu", "max", "-accel", "tcg,thread=single"])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(&initrd)
        .args(["-append", &append])
        .args(["-display", "none", "-no-reboot", "-monitor", "none", "-nodefaults"])
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .arg("-serial")
        .arg(format!("file:{}", output.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // The emulator ends with this process, however it ends (a signal, the
    // test runner's timeout): an orphaned QEMU would run on for its guest's
    // whole script, a CPU taken from whatever runs next.
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl, getppid and raise are async-signal-safe and touch no
    // memory of this process.
    let mut child = unsafe {
        qemu_cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || libc::getppid() != parent {
                libc::raise(libc::SIGKILL);
            }
            Ok(())
        })
    }
    .spawn()
    .context("starting qemu-system-x86_64")?;
    let t0 = Instant::now();
    let deadline = t0 + r.timeout;
    let boot_limit = BOOT_DEADLINE.min(r.timeout);
    let boot_deadline = t0 + boot_limit;
    let mut started = false;
    let mut shown = 0usize;
    let mut stdout = std::io::stdout();
    let mut timed_out = false;
    let status = loop {
        // Stream the command's output as it comes, whole lines only (the
        // emulated serial port writes a line a few bytes at a time).
        if let Ok(b) = std::fs::read(&output) {
            started |= b.starts_with(b"WCVM-START");
            if let Some(end) = b[shown.min(b.len())..].iter().rposition(|&c| c == b'\n').map(|i| shown + i + 1) {
                let text = String::from_utf8_lossy(&b[shown..end]);
                for line in text.split_inclusive('\n') {
                    if !line.starts_with("WCVM-") {
                        let _ = stdout.write_all(line.replace('\r', "").as_bytes());
                    }
                }
                let _ = stdout.flush();
                shown = end;
            }
        }
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if !started && Instant::now() >= boot_deadline && Instant::now() < deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(NotStarted(boot_limit).into());
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
            if !line.starts_with("WCVM-") {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_binary_goes_in_with_its_loader_and_libc() {
        let me = std::env::current_exe().unwrap();
        assert!(!is_static(&me), "test binaries are linked dynamically here");
        let libs = shared_libraries(&me).unwrap();
        let names: Vec<String> = libs.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
        assert!(names.iter().any(|n| n.starts_with("libc.so")), "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("ld-linux")), "{names:?}");
        assert!(libs.iter().all(|p| p.is_absolute() && p.is_file()), "{libs:?}");
    }

    #[test]
    fn a_static_binary_goes_in_alone() {
        // The static busybox the initramfs is built on (scripts/setup.sh installs it).
        let busybox = static_busybox().unwrap();
        assert!(shared_libraries(&busybox).unwrap().is_empty());
    }

    fn options(bins: Vec<PathBuf>) -> Options {
        Options {
            kernel: "auto".into(),
            cpus: 1,
            sockets: 1,
            append: None,
            mem: 256,
            timeout: Duration::from_secs(1),
            warmcore: None,
            bins,
            peers: false,
            kmsg: false,
            cache: None,
            command: vec![],
        }
    }

    #[test]
    fn extra_binaries_are_checked_and_named_once() {
        let busybox = static_busybox().unwrap();
        let me = std::env::current_exe().unwrap();
        let cache = Path::new("/nonexistent");
        assert_eq!(extra_binaries(&options(vec![busybox.clone(), me.clone()]), cache).unwrap(), vec![busybox.clone(), me]);
        let e = extra_binaries(&options(vec![busybox.clone(), busybox.clone()]), cache).unwrap_err().to_string();
        assert!(e.contains("the VM's /bin already has a busybox"), "{e}");
        let e = extra_binaries(&options(vec![PathBuf::from("/nonexistent/scx_x")]), cache).unwrap_err().to_string();
        assert!(e.contains("--bin /nonexistent/scx_x: no such file"), "{e}");
    }

    #[test]
    fn an_extra_binary_goes_in_under_its_name_with_its_libraries() {
        let dir = std::env::temp_dir().join(format!("warmcore-vm-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let me = std::env::current_exe().unwrap();
        let busybox = static_busybox().unwrap();
        initramfs(&dir, Path::new("/nonexistent/vmlinuz"), &busybox, &[me.clone()], &["true".into()]).unwrap();
        let root = dir.join("root");
        assert!(root.join("bin").join(me.file_name().unwrap()).is_file());
        for lib in shared_libraries(&me).unwrap() {
            assert!(root.join(lib.strip_prefix("/").unwrap()).is_file(), "{} missing", lib.display());
        }
        // Busybox's applets link to it; the extra binary is not replaced by one.
        assert!(std::fs::symlink_metadata(root.join("bin/sh")).unwrap().file_type().is_symlink());
        assert!(!std::fs::symlink_metadata(root.join("bin").join(me.file_name().unwrap())).unwrap().file_type().is_symlink());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_binary_is_named() {
        let e = vm_binary(Some(Path::new("/nonexistent/warmcore"))).unwrap_err().to_string();
        assert!(e.contains("--warmcore /nonexistent/warmcore: no such file"), "{e}");
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let e = vm_binary(Some(&manifest)).unwrap_err().to_string();
        assert!(e.contains("Cargo.toml: not an executable"), "{e}");
    }
}
