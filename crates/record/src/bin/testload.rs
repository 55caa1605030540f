// SPDX-License-Identifier: GPL-2.0-only
//! A known workload for the recorder's tests and benchmark.
//!
//! `warmcore-testload forks N`: fork N children that each exec /bin/true,
//! waiting for each. `warmcore-testload pingpong M`: a child and its parent,
//! both pinned to CPU 0, pass a byte back and forth M times through two
//! pipes. Both print the pids involved, one `key value` a line.

use std::ffi::CString;

fn die(what: &str) -> ! {
    eprintln!("warmcore-testload: {what}: {}", std::io::Error::last_os_error());
    std::process::exit(1)
}

fn forks(n: u32) {
    println!("parent {}", std::process::id());
    let path = CString::new("/bin/true").unwrap();
    let argv = [path.as_ptr(), std::ptr::null()];
    let mut children = Vec::new();
    for _ in 0..n {
        // SAFETY: the child only calls async-signal-safe execv and _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            die("fork");
        }
        if pid == 0 {
            unsafe {
                libc::execv(path.as_ptr(), argv.as_ptr());
                libc::_exit(127);
            }
        }
        children.push(pid);
        let mut st = 0;
        // SAFETY: waiting for our own child.
        if unsafe { libc::waitpid(pid, &mut st, 0) } != pid {
            die("waitpid");
        }
    }
    println!("children {}", children.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(","));
}

fn pin_cpu0() {
    // SAFETY: a zeroed cpu_set_t with CPU 0 set, for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            die("sched_setaffinity");
        }
    }
}

fn pingpong(m: u32) {
    let mut a = [0i32; 2];
    let mut b = [0i32; 2];
    // SAFETY: pipe fills the arrays we pass.
    if unsafe { libc::pipe(a.as_mut_ptr()) } != 0 || unsafe { libc::pipe(b.as_mut_ptr()) } != 0 {
        die("pipe");
    }
    pin_cpu0();
    let mut byte = [0u8; 1];
    // SAFETY: fork; the child uses only read, write and _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        die("fork");
    }
    unsafe {
        if pid == 0 {
            // Only our ends stay open, so that either side's death ends the other.
            libc::close(a[1]);
            libc::close(b[0]);
            for _ in 0..m {
                if libc::read(a[0], byte.as_mut_ptr().cast(), 1) != 1 || libc::write(b[1], byte.as_ptr().cast(), 1) != 1 {
                    libc::_exit(1);
                }
            }
            libc::_exit(0);
        }
        libc::close(a[0]);
        libc::close(b[1]);
        println!("ping {}", std::process::id());
        println!("pong {pid}");
        for _ in 0..m {
            if libc::write(a[1], byte.as_ptr().cast(), 1) != 1 || libc::read(b[0], byte.as_mut_ptr().cast(), 1) != 1 {
                die("pipe round trip");
            }
        }
        let mut st = 0;
        libc::waitpid(pid, &mut st, 0);
        if !libc::WIFEXITED(st) || libc::WEXITSTATUS(st) != 0 {
            die("pong failed");
        }
    }
    println!("rounds {m}");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = |i: usize| args.get(i).and_then(|s| s.parse::<u32>().ok());
    match (args.first().map(String::as_str), n(1)) {
        (Some("forks"), Some(k)) => forks(k),
        (Some("pingpong"), Some(k)) => pingpong(k),
        _ => {
            eprintln!("usage: warmcore-testload forks N | pingpong M");
            std::process::exit(2);
        }
    }
}
