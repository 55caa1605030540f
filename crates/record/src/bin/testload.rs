// SPDX-License-Identifier: GPL-2.0-only
//! A known workload for the recorder's tests and benchmark.
//!
//! `warmcore-testload forks N`: fork N children that each exec /bin/true,
//! waiting for each. `warmcore-testload pingpong M`: a child and its parent,
//! both pinned to CPU 0, pass a byte back and forth M times through two
//! pipes. Both print the pids involved, one `key value` a line.
//!
//! Built on the process primitives of the VM's workloads (warmcore-vm).

use std::ffi::CString;

use warmcore_vm::proc::{close, exec, fork_run, pin_to_cpu, pipe, rd, wait_pid, wr};

fn die(what: impl std::fmt::Display) -> ! {
    eprintln!("warmcore-testload: {what}");
    std::process::exit(1)
}

fn forks(n: u32) {
    println!("parent {}", std::process::id());
    let path = CString::new("/bin/true").unwrap();
    let mut children = Vec::new();
    for _ in 0..n {
        let pid = fork_run(|| exec(&path)).unwrap_or_else(|e| die(e));
        children.push(pid);
        wait_pid(pid).unwrap_or_else(|e| die(e));
    }
    println!("children {}", children.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(","));
}

fn pingpong(m: u32) {
    let (a_r, a_w) = pipe().unwrap_or_else(|e| die(e));
    let (b_r, b_w) = pipe().unwrap_or_else(|e| die(e));
    pin_to_cpu(0).unwrap_or_else(|e| die(format!("sched_setaffinity: {e}")));
    let mut byte = [0u8; 1];
    let pid = fork_run(|| {
        // Only our ends stay open, so that either side's death ends the other.
        close(a_w);
        close(b_r);
        for _ in 0..m {
            if !rd(a_r, &mut byte) || !wr(b_w, &byte) {
                return 1;
            }
        }
        0
    })
    .unwrap_or_else(|e| die(e));
    close(a_r);
    close(b_w);
    println!("ping {}", std::process::id());
    println!("pong {pid}");
    for _ in 0..m {
        if !wr(a_w, &byte) || !rd(b_r, &mut byte) {
            die(format!("pipe round trip: {}", std::io::Error::last_os_error()));
        }
    }
    if wait_pid(pid).unwrap_or_else(|e| die(e)) != 0 {
        die("pong failed");
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
