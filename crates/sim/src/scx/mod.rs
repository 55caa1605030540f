// SPDX-License-Identifier: GPL-2.0-only
//! `scx:NAME`: the sched_ext program of crates/sched (src/bpf/main.bpf.c and
//! its parts, the program the kernel loads) as a simulator policy. program.rs
//! loads a private copy of its host build; the other files are the kernel
//! side it runs on, over the simulator's engine: dsq.rs the dispatch queues,
//! kernel.rs what the sched_ext core keeps per task and CPU with its built-in
//! idle tracking, kfuncs.rs the program's calls into the kernel, adapter.rs
//! the simulator's hooks as the program's operations with the watchdog. This
//! file holds the machine as the program's settings see it (`topology`).
//!
//! Each behaviour follows the kernel's sched_ext core (kernel/sched/ext.c and
//! ext_idle.c, Linux 6.12 to 7.x; Documentation/scheduler/sched-ext.rst);
//! docs/sched-ext-in-the-simulator.md says which parts are modelled and
//! which are not. The notable choices:
//! - A CPU's next task comes from its local queue, then the global queue,
//!   then `ops.dispatch` (up to 32 rounds while it moves tasks), as in
//!   `balance_one`. When a running task is preempted, that balance runs
//!   before `ops.stopping` and `ops.enqueue` of the task, as in the kernel
//!   (balance, pick, then put_prev); with nothing else to run the task is
//!   enqueued with `SCX_ENQ_LAST` (the loader sets `SCX_OPS_ENQ_LAST`).
//! - `select_cpu` is not called for exec or for a task pinned to one CPU; an
//!   insert from `select_cpu` is a direct dispatch, applied at enqueue.
//! - Slices are charged at ticks and at stops (`update_curr_scx`); a task
//!   whose slice reaches 0 at a tick is preempted.
//! - The idle masks are set when a CPU enters idle (again, on an idle to
//!   idle pass), cleared when it leaves idle or is claimed; `ops.update_idle`
//!   is told only real transitions.
//! - The watchdog: a task runnable and not run for the program's
//!   `timeout_ms` ends the run ("runnable task stall"), as the kernel ejects
//!   the scheduler; so does `scx_bpf_error`, and an invalid CPU returned by
//!   `select_cpu`.
//! - Enabling a sched_ext scheduler sets every CPU's performance target to
//!   the maximum (`SCX_CPUPERF_ONE`); schedutil then reads those targets.
//!
//! The program's time is the simulator's plus one second: main.bpf.c takes a
//! time of 0 for "never".

mod adapter;
pub mod build_program;
mod dir;
mod dsq;
mod kernel;
mod kfuncs;
mod loader;
pub mod peers;
mod program;
pub mod recipe;

pub use adapter::ScxPolicy;
pub use program::{build_variant, missing_symbols, Source};

use dsq::*;
use kernel::*;
use kfuncs::*;

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{c_char, c_int, c_void, CStr, CString};

use crate::sim::{Mode, Sim, TState, Tid, TimerId};
use crate::machine::Machine;
use crate::policy::{Daemon, Enq, Policy, Wake, WakeKind};
use crate::SimError;
use warmcore_sched_settings::{NestWarm, Policy as ScxName, Settings, Topology};
use program::{abi, HostOps, Program, TaskPtr, TopologyC};

/// Time offset of the program's clock (see the module doc).
const CLOCK_OFFSET_NS: u64 = 1_000_000_000;
/// The kernel's bound on ops.dispatch rounds in one balance (SCX_DSP_MAX_LOOPS).
const DISPATCH_MAX_LOOPS: u32 = 32;

/// The machine as the program's settings need it: what `warmcore sched`
/// reads from sysfs, from the machine file.
pub fn topology(machine: &Machine) -> Topology {
    let n = machine.nr_cpus as usize;
    Topology {
        nr_cpus: machine.nr_cpus,
        llc: machine.cpu_die.clone(),
        // A core is named by its lowest-numbered CPU.
        core: (0..n)
            .map(|c| machine.core_cpus[machine.cpu_core[c] as usize].iter().copied().min().unwrap_or(c as u32))
            .collect(),
        min_khz: vec![machine.min_khz(); n],
        reference_khz: vec![machine.base_khz(); n],
        // `--freq-steer auto` steers; the simulator's other governors ignore
        // performance targets.
        schedutil: true,
        // The PM QoS files exist, as on the servers the machines model.
        pmqos: true,
        loader_cpu: 0,
    }
}

/// The machine as the peers' loaders read it (scx_utils's `Topology`),
/// with the CPUs `online` says are: sysfs lists only those (a loader
/// started again after CPU hotplug sees the others gone).
pub fn peer_machine(machine: &Machine, online: impl Fn(u32) -> bool) -> recipe::Machine {
    let n = machine.nr_cpus as usize;
    // scx_utils Topology::sibling_cpus: the first two online CPUs of each
    // core name each other; a core of one has none.
    let mut sibling = vec![-1i64; n];
    for cpus in &machine.core_cpus {
        let mut c: Vec<u32> = cpus.iter().copied().filter(|&c| online(c)).collect();
        c.sort();
        if c.len() > 1 {
            sibling[c[0] as usize] = c[1] as i64;
            sibling[c[1] as usize] = c[0] as i64;
        }
    }
    recipe::Machine {
        nr_cpus: machine.nr_cpus,
        online: (0..machine.nr_cpus).filter(|&c| online(c)).collect(),
        node: machine.cpu_socket.clone(),
        nr_nodes: machine.nr_sockets(),
        smt: machine.spec.threads_per_core > 1,
        sibling,
        // Every CPU of a modelled machine has the same highest frequency
        // (cpufreq/cpuinfo_max_freq, scx_utils's last source of capacity).
        capacity: vec![1024; n],
    }
}

/// The kernel's per-CPU topology variables and NUMA nodes of the machine:
/// sd_llc_id is the first CPU of the CPU's LLC (here its die), sd_llc_size
/// the LLC's CPUs (kernel/sched/topology.c, update_top_cache_domain).
pub(crate) fn host_topology(machine: &Machine) -> (Vec<c_int>, Vec<c_int>, Vec<c_int>) {
    let n = machine.nr_cpus as usize;
    let node: Vec<c_int> = machine.cpu_socket.iter().map(|&s| s as c_int).collect();
    let mut llc_id = vec![0; n];
    let mut llc_size = vec![1; n];
    for cpus in &machine.die_cpus {
        let first = cpus.iter().copied().min().unwrap_or(0) as c_int;
        for &c in cpus {
            llc_id[c as usize] = first;
            llc_size[c as usize] = cpus.len() as c_int;
        }
    }
    (node, llc_id, llc_size)
}
