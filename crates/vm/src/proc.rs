// SPDX-License-Identifier: GPL-2.0-only
//! The process primitives the workloads are made of: fork a child that runs
//! a closure, wait for it, pipes read and written whole, exec, the CPU one
//! runs on, memory shared with children. The VM's workloads and the
//! recorder's known workload (warmcore-testload) are built on them.
//!
//! The workloads are single-threaded processes, so a forked child may run
//! any code, not only async-signal-safe calls.

use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::AtomicU64;

use anyhow::{bail, Result};

/// CLOCK_MONOTONIC in ns.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The CPU this process runs on now.
pub fn getcpu() -> i32 {
    // SAFETY: sched_getcpu takes nothing and only returns a number.
    unsafe { libc::sched_getcpu() }
}

/// Keep the CPU busy for `us` microseconds.
pub fn spin_us(us: u64) {
    let end = mono_ns() + us * 1000;
    while mono_ns() < end {
        std::hint::spin_loop();
    }
}

/// fork(); the child runs @f and exits with its status.
pub fn fork_run(f: impl FnOnce() -> i32) -> Result<i32> {
    // SAFETY: the workloads fork from one thread only, so the child is a
    // whole copy of the process and may run any code before it exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        let c = f();
        // SAFETY: _exit ends the child at once, without running the
        // parent's atexit handlers or flushing its copied stdio buffers.
        unsafe { libc::_exit(c) };
    }
    Ok(pid)
}

/// Wait for the child `pid`; its exit status, or 128 + the signal that
/// ended it.
pub fn wait_pid(pid: i32) -> Result<i32> {
    wait_pid_cpu(pid).map(|(code, _)| code)
}

/// Waits for a child: its exit code (128 + the signal if one ended it)
/// and the CPU time it used, user and system, in seconds.
pub fn wait_pid_cpu(pid: i32) -> Result<(i32, f64)> {
    let mut st = 0;
    // SAFETY: rusage is plain integers, for which all zeroes is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `st` and `ru` are valid for wait4 to fill.
        let r = unsafe { libc::wait4(pid, &mut st, 0, &mut ru) };
        if r == pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            bail!("wait4: {}", std::io::Error::last_os_error());
        }
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let code = if libc::WIFEXITED(st) { libc::WEXITSTATUS(st) } else { 128 + libc::WTERMSIG(st) };
    Ok((code, secs(ru.ru_utime) + secs(ru.ru_stime)))
}

/// A pipe: (read end, write end).
pub fn pipe() -> Result<(RawFd, RawFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        bail!("pipe: {}", std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// Fill `buf` from `fd`; false at the end of the input or on an error.
pub fn rd(fd: RawFd, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the pointer and length are those of the unfilled rest of `buf`.
        let r = unsafe { libc::read(fd, buf[got..].as_mut_ptr() as *mut _, buf.len() - got) };
        if r <= 0 {
            return false;
        }
        got += r as usize;
    }
    true
}

/// Write all of `buf` to `fd` at once; false if less was written.
pub fn wr(fd: RawFd, buf: &[u8]) -> bool {
    // SAFETY: the pointer and length are those of `buf`.
    unsafe { libc::write(fd, buf.as_ptr() as *const _, buf.len()) == buf.len() as isize }
}

/// Close a descriptor from [`pipe`].
pub fn close(fd: RawFd) {
    // SAFETY: the descriptors passed here are raw pipe ends no Rust object owns.
    unsafe { libc::close(fd) };
}

/// Replace this process with `path`, no arguments; returns 127 if that failed.
pub fn exec(path: &CStr) -> i32 {
    let argv = [path.as_ptr(), std::ptr::null()];
    // SAFETY: `path` and `argv` are NUL-terminated and live across the call.
    unsafe { libc::execv(path.as_ptr(), argv.as_ptr()) };
    127
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is the empty set; sched_getaffinity
    // fills one of the size it is told, and CPU_ISSET reads within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
}

/// Run the calling thread, and the processes it forks from now on, on CPU
/// `cpu` only.
pub fn pin_to_cpu(cpu: usize) -> std::io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is the empty set, and CPU_SET and
    // sched_setaffinity get a valid set of the size they are told.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Shared anonymous memory of @n u64 for children to report through.
/// Atomics, because the children write it behind the parent's back.
pub fn shared(n: usize) -> &'static [AtomicU64] {
    // SAFETY: a new anonymous mapping touches no existing memory.
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
    // SAFETY: the mapping is n * 8 zeroed bytes, page-aligned, never
    // unmapped, and AtomicU64 has u64's size and an alignment the page meets;
    // every access through the slice is atomic.
    unsafe { std::slice::from_raw_parts(p as *const AtomicU64, n) }
}
