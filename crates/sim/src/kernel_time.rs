// SPDX-License-Identifier: GPL-2.0-only
//! The kernel's own time: what fork, exec, a wake-up, a placement and a
//! context switch cost the CPU that does them, and the cache refill a task
//! pays on its first run after a migration (docs/model.md, The kernel's own
//! time).
//!
//! Costs are work in cycles, added to the work of the task on whose behalf
//! the kernel runs (the parent for fork, the waker for a wake-up, the task
//! itself for exec, the incoming task for a context switch): the kernel's
//! code runs at the core's frequency like the task's own, and the CPU is
//! busy meanwhile. The microsecond figures they come from were measured at
//! about 3 GHz, the cycles below are those figures times 3.

use crate::machine::Machine;

/// A context switch (__schedule and switch_mm): about 1 us.
pub const CTX_SWITCH_CYCLES: f64 = 3_000.0;
/// try_to_wake_up on the waker's side, with a local enqueue: about 0.5 us.
pub const WAKEUP_CYCLES: f64 = 1_500.0;
/// A wake-up whose target is another CPU: the remote enqueue and its IPI,
/// about 1 us more.
pub const REMOTE_WAKEUP_CYCLES: f64 = 3_000.0;
/// fork of a small process (copying its page tables and task state): 25 us.
pub const FORK_CYCLES: f64 = 75_000.0;
/// exec of a small program (tearing down and mapping the address space,
/// loading the binary): 150 us.
pub const EXEC_CYCLES: f64 = 450_000.0;
/// Looking at one CPU during a placement: a line of its run queue, last
/// written by its own core, about 40 ns.
pub const SCAN_CPU_CYCLES: f64 = 120.0;
/// The working set refilled after a migration: 32 KiB, 512 lines.
pub const REFILL_LINES: f64 = 512.0;
/// One line from the shared last-level cache.
pub const LLC_LINE_CYCLES: f64 = 70.0;
/// One line from another socket's cache or memory.
pub const REMOTE_LINE_CYCLES: f64 = 300.0;
/// A task that last stopped less than this long ago is cache hot
/// (sysctl_sched_migration_cost); a colder one has nothing left to lose.
pub const CACHE_HOT_NS: u64 = 500_000;

/// The refill a task pays on `to` after last running on `from`: none on the
/// same core (its SMT siblings share L1 and L2), the private caches from the
/// LLC within a die, everything from the other socket across dies.
pub fn refill_cycles(m: &Machine, from: u32, to: u32) -> f64 {
    if m.cpu_core[from as usize] == m.cpu_core[to as usize] {
        0.0
    } else if m.cpu_die[from as usize] == m.cpu_die[to as usize] {
        REFILL_LINES * LLC_LINE_CYCLES
    } else {
        REFILL_LINES * REMOTE_LINE_CYCLES
    }
}

/// The cost of a placement that looked at `cpus` CPUs.
pub fn placement_cycles(cpus: u32) -> f64 {
    cpus as f64 * SCAN_CPU_CYCLES
}
