// SPDX-License-Identifier: GPL-2.0-only
//! `scx:NAME`: the sched_ext program of crates/sched (src/bpf/main.bpf.c and
//! its parts, the program the kernel loads) as a simulator policy. program.rs loads a private
//! copy of its host build; this file is the kernel side it runs on: the
//! sched_ext core's dispatch queues, built-in idle tracking, kicks, slices,
//! timers, performance targets and watchdog, over the simulator's engine.
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

mod program;
pub use program::{build_variant, Source};

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{c_char, c_int, c_void, CStr, CString};

use crate::sim::{Mode, Sim, TState, Tid, TimerId};
use crate::machine::Machine;
use crate::policy::{Daemon, Enq, Policy, Wake, WakeKind};
use crate::SimError;
use warmcore_sched_settings::{NestWarm, Policy as ScxName, Settings, Topology};
use program::{abi, HostOps, Program, TaskPtr};

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

/// A dispatch queue: FIFO, or ordered by vtime (then by arrival).
#[derive(Default)]
struct Dsq {
    fifo: VecDeque<Tid>,
    by_vtime: BTreeMap<(u64, u64), Tid>,
}

impl Dsq {
    fn len(&self) -> usize {
        self.fifo.len() + self.by_vtime.len()
    }
    fn contains(&self, t: Tid) -> bool {
        self.fifo.contains(&t) || self.by_vtime.values().any(|&u| u == t)
    }
    /// Take `t` out; false if it is not queued here.
    fn remove(&mut self, t: Tid) -> bool {
        if let Some(i) = self.fifo.iter().position(|&u| u == t) {
            self.fifo.remove(i);
            return true;
        }
        match self.by_vtime.iter().find(|(_, &u)| u == t).map(|(k, _)| *k) {
            Some(key) => self.by_vtime.remove(&key).is_some(),
            None => false,
        }
    }
    /// The first task in queue order that may run on `cpu`, taken out.
    fn take_for(&mut self, cpu: u32, allowed: impl Fn(Tid, u32) -> bool) -> Option<Tid> {
        if let Some(i) = self.fifo.iter().position(|&t| allowed(t, cpu)) {
            return self.fifo.remove(i);
        }
        let key = *self.by_vtime.iter().find(|(_, &t)| allowed(t, cpu))?.0;
        self.by_vtime.remove(&key)
    }
}

/// What the kernel keeps of a task for sched_ext.
struct TaskState {
    p: TaskPtr,
    /// sum_exec_runtime, and when the current stint's charging started.
    runtime: u64,
    charged_at: u64,
    /// The task's only CPU, for a pinned task.
    pinned: Option<u32>,
    /// A direct dispatch from select_cpu: (queue kind, id, flags), applied at enqueue.
    direct: Option<(u32, u64, u32)>,
    /// Runnable and not running since (the watchdog's runnable_at).
    runnable_at: Option<u64>,
}

/// Whether task `t` may run on `cpu` (a task the program no longer knows
/// may not).
fn may_run(tasks: &[Option<TaskState>], t: Tid, cpu: u32) -> bool {
    tasks[t as usize].as_ref().is_some_and(|s| s.pinned.is_none_or(|p| p == cpu))
}

/// Where inserts go and what LOCAL means, by the operation being run.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    Other,
    SelectCpu(Tid),
    Dispatch(u32),
}

/// A CPU mask as the program's (bit n of word n / 64 for CPU n), for the
/// 1024 CPUs the program handles (WC_MAX_CPUS); the kernel's masks are
/// longer, and CPUs beyond never set.
type Mask = [u64; 16];

fn mask_of(cpus: impl Iterator<Item = u32>) -> Mask {
    let mut m = [0u64; 16];
    for c in cpus {
        m[c as usize / 64] |= 1 << (c % 64);
    }
    m
}

/// The kernel side: everything the program's kfuncs act on.
struct Kernel {
    sim: *mut Sim,
    cpu: u32,
    /// CPUs the kernel's helpers looked at for the program in the current
    /// select_cpu: one per CPU tested or read, one per 64-CPU word of a
    /// cpumask search (docs/model.md, The kernel's own time).
    scans: u32,
    context: Context,
    nr_cpus: u32,
    smt: bool,
    cpu_core: Vec<u32>,
    core_cpus: Vec<Vec<u32>>,
    cpu_die: Vec<u32>,
    /// Every CPU, and each LLC's (die's) CPUs.
    all: Mask,
    llc_masks: Vec<Mask>,
    max_khz: u32,
    tasks: Vec<Option<TaskState>>,
    pid_tid: BTreeMap<i32, Tid>,
    local: Vec<VecDeque<Tid>>,
    global: Dsq,
    user: BTreeMap<u64, Dsq>,
    /// Moves made by the current ops.dispatch call.
    dispatched: u32,
    idle_cpu: Box<[u64; abi::MASK_WORDS]>,
    idle_smt: Box<[u64; abi::MASK_WORDS]>,
    /// The idle state ops.update_idle was last told, per CPU.
    told_idle: Vec<bool>,
    /// cpumask_any_and_distribute's per-CPU cursor.
    cursor: Vec<u32>,
    cpuperf_one: u32,
    /// The program's live DSQ iterators, by slot.
    iters: Vec<Option<DsqIter>>,
    /// Program timers: the simulator's timer and the arming CPU, by slot.
    timers: Vec<Option<(TimerId, u32)>>,
    error: Option<String>,
    /// The program's entry points (for the kfuncs that act on a task).
    fns: *const program::Fns,
}

impl Kernel {
    fn sim(&mut self) -> &mut Sim {
        // SAFETY: set by ScxPolicy::call to the `&mut Sim` of the policy hook
        // that is running; the hook does not touch it while the program runs,
        // and the program calls back only from within that call.
        unsafe { &mut *self.sim }
    }
    fn ts(&self, t: Tid) -> &TaskState {
        self.tasks[t as usize].as_ref().expect("a task the program knows")
    }
    fn ts_mut(&mut self, t: Tid) -> &mut TaskState {
        self.tasks[t as usize].as_mut().expect("a task the program knows")
    }
    fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
    }
    fn cpu_valid(&mut self, cpu: i32, what: &str) -> bool {
        if cpu >= 0 && (cpu as u32) < self.nr_cpus {
            true
        } else {
            self.fail(format!("invalid CPU {cpu} {what}"));
            false
        }
    }
    fn allowed(&self, t: Tid, cpu: u32) -> bool {
        may_run(&self.tasks, t, cpu)
    }
    fn bit(mask: &[u64], cpu: u32) -> bool {
        mask[cpu as usize / 64] >> (cpu % 64) & 1 == 1
    }
    fn set_bit(mask: &mut [u64], cpu: u32, on: bool) {
        if on {
            mask[cpu as usize / 64] |= 1 << (cpu % 64);
        } else {
            mask[cpu as usize / 64] &= !(1 << (cpu % 64));
        }
    }

    /// ext_idle.c, update_builtin_idle: the CPU bit, and the core's SMT bits
    /// when all its threads are idle.
    fn set_idle(&mut self, cpu: u32, idle: bool) {
        Self::set_bit(&mut self.idle_cpu[..], cpu, idle);
        if self.smt {
            let core = self.cpu_core[cpu as usize] as usize;
            let all = self.core_cpus[core].iter().all(|&s| Self::bit(&self.idle_cpu[..], s));
            for i in 0..self.core_cpus[core].len() {
                let s = self.core_cpus[core][i];
                Self::set_bit(&mut self.idle_smt[..], s, idle && all);
            }
        }
    }

    /// ext_idle.c, scx_idle_test_and_clear_cpu: claim an idle CPU (and take
    /// its core out of the fully idle cores).
    fn test_and_clear_idle(&mut self, cpu: u32) -> bool {
        self.scans += 1;
        if cpu >= self.nr_cpus {
            return false;
        }
        if self.smt {
            let core = self.cpu_core[cpu as usize] as usize;
            for i in 0..self.core_cpus[core].len() {
                let s = self.core_cpus[core][i];
                Self::set_bit(&mut self.idle_smt[..], s, false);
            }
        }
        let was = Self::bit(&self.idle_cpu[..], cpu);
        Self::set_bit(&mut self.idle_cpu[..], cpu, false);
        was
    }

    /// The built-in idle search's use of `any_and_distribute`.
    fn idle_and_distribute(&mut self, smt: bool, allowed: &Mask) -> Option<u32> {
        let idle: Mask = if smt { &self.idle_smt } else { &self.idle_cpu }[..16].try_into().unwrap();
        self.any_and_distribute(&idle, allowed)
    }

    /// cpumask_any_and_distribute: the first CPU after the calling CPU's
    /// cursor set in both `a` and `b`, wrapping; the cursor moves to it. One
    /// cursor per CPU serves every caller, the kernel's idle search and the
    /// program's bpf_cpumask_any_and_distribute alike, as in lib/cpumask.c.
    fn any_and_distribute(&mut self, a: &Mask, b: &Mask) -> Option<u32> {
        let n = self.nr_cpus;
        let words = n.div_ceil(64) as usize;
        let here = self.cpu as usize;
        let start = (self.cursor[here] + 1) % n;
        // From `start` to the end, then from 0 to `start`.
        let (w0, b0) = (start as usize / 64, start % 64);
        for i in 0..=words {
            let w = (w0 + i) % words;
            self.scans += 1;
            let mut bits = a[w] & b[w];
            if i == 0 {
                bits &= u64::MAX << b0;
            } else if i == words {
                bits &= !(u64::MAX << b0);
            }
            if bits != 0 {
                let c = (w * 64) as u32 + bits.trailing_zeros();
                if c < n {
                    self.cursor[here] = c;
                    return Some(c);
                }
            }
        }
        None
    }

    /// ext_idle.c, scx_pick_idle_cpu: a fully idle core first (with SMT),
    /// else any idle CPU, claimed.
    fn pick_idle(&mut self, allowed: &Mask, core_only: bool) -> Option<u32> {
        loop {
            let mut found = None;
            if self.smt {
                found = self.idle_and_distribute(true, allowed);
                if found.is_none() && core_only {
                    return None;
                }
            }
            let cpu = match found {
                Some(c) => c,
                None => self.idle_and_distribute(false, allowed)?,
            };
            if self.test_and_clear_idle(cpu) {
                return Some(cpu);
            }
        }
    }

    /// The CPUs a task may run on.
    fn task_mask(&self, t: Tid) -> Mask {
        match self.ts(t).pinned {
            None => self.all,
            Some(c) => mask_of(std::iter::once(c)),
        }
    }

    /// ext_idle.c, scx_select_cpu_dfl (the topology-aware version of 6.14
    /// and later): with WAKE_SYNC, prev if it shares the waker's LLC and is
    /// idle, else the waker's CPU if its local queue is empty and some CPU is
    /// idle; then a fully idle core (prev's, then prev's LLC, then any);
    /// then prev; then an idle CPU in prev's LLC, then any. Returns the CPU
    /// and whether it was found idle (and claimed).
    fn select_cpu_dfl(&mut self, t: Tid, prev: u32, sync: bool) -> (u32, bool) {
        let allowed = self.task_mask(t);
        let prev = if prev < self.nr_cpus { prev } else { 0 };
        let llc = self.cpu_die[prev as usize] as usize;
        let split_llc = self.llc_masks.len() > 1;
        let mut in_llc = allowed;
        for (w, l) in in_llc.iter_mut().zip(self.llc_masks[llc].iter()) {
            *w &= l;
        }
        let ok = |c: u32| Self::bit(&allowed, c);
        if sync {
            let waker = self.cpu;
            if self.cpu_die[waker as usize] as usize == llc && self.test_and_clear_idle(prev) {
                return (prev, true);
            }
            let curr = self.sim().cpu(waker).curr;
            let exiting = curr.is_some_and(|w| self.sim().task(w).state == TState::Dead);
            if !exiting && self.local[waker as usize].is_empty() && self.idle_cpu.iter().any(|&w| w != 0) && ok(waker)
            {
                return (waker, true);
            }
        }
        if self.smt {
            if Self::bit(&self.idle_smt[..], prev) && self.test_and_clear_idle(prev) {
                return (prev, true);
            }
            if split_llc {
                if let Some(c) = self.pick_idle(&in_llc, true) {
                    return (c, true);
                }
            }
            if let Some(c) = self.pick_idle(&allowed, true) {
                return (c, true);
            }
        }
        if ok(prev) && self.test_and_clear_idle(prev) {
            return (prev, true);
        }
        if split_llc {
            if let Some(c) = self.pick_idle(&in_llc, false) {
                return (c, true);
            }
        }
        if let Some(c) = self.pick_idle(&allowed, false) {
            return (c, true);
        }
        (prev, false)
    }

    /// The CPU whose local queue LOCAL names in the current context.
    fn local_cpu(&mut self, t: Option<Tid>) -> u32 {
        match self.context {
            Context::Dispatch(c) => c,
            _ => match t {
                Some(t) => self.sim().task(t).cpu,
                None => self.cpu,
            },
        }
    }

    fn push_local(&mut self, cpu: u32, t: Tid, head: bool) {
        if head {
            self.local[cpu as usize].push_front(t);
        } else {
            self.local[cpu as usize].push_back(t);
        }
        // A task in the local queue of an idle CPU wakes it (the kernel's
        // resched of the idle task when a task lands in its local queue).
        self.sim().kick(cpu);
    }

    /// Put `t` in a queue (ext.c, dispatch_enqueue).
    fn insert(&mut self, t: Tid, kind: u32, id: u64, vtime: Option<u64>, enq: u32) {
        let head = enq & abi::ENQ_HEAD != 0;
        match kind {
            abi::DSQ_LOCAL | abi::DSQ_LOCAL_ON => {
                let cpu = if kind == abi::DSQ_LOCAL { self.local_cpu(Some(t)) } else { id as u32 };
                if kind == abi::DSQ_LOCAL_ON && !self.cpu_valid(cpu as i32, "in SCX_DSQ_LOCAL_ON") {
                    return;
                }
                if vtime.is_some() {
                    self.fail("cannot use vtime ordering for the built-in local queues".into());
                    return;
                }
                if !self.allowed(t, cpu) {
                    self.fail(format!("task {t} cannot run on CPU {cpu}"));
                    return;
                }
                // The task moves with its queue (ext.c, move_remote_task_to_local_dsq).
                if self.sim().task(t).state == TState::Runnable {
                    self.sim().set_task_cpu(t, cpu);
                }
                self.push_local(cpu, t, head);
            }
            abi::DSQ_GLOBAL | abi::DSQ_USER => {
                let q = if kind == abi::DSQ_GLOBAL {
                    &mut self.global
                } else {
                    match self.user.get_mut(&id) {
                        Some(q) => q,
                        None => {
                            self.fail(format!("non-existent DSQ 0x{id:x}"));
                            return;
                        }
                    }
                };
                match vtime {
                    Some(v) => {
                        if !q.fifo.is_empty() {
                            self.fail(format!("DSQ 0x{id:x} already had FIFO-enqueued tasks"));
                            return;
                        }
                        let seq = self.dispatched as u64 ^ (t as u64) << 32;
                        let mut key = (v, seq);
                        while q.by_vtime.contains_key(&key) {
                            key.1 += 1;
                        }
                        q.by_vtime.insert(key, t);
                    }
                    None => {
                        if !q.by_vtime.is_empty() {
                            self.fail(format!("DSQ 0x{id:x} already had PRIQ-enqueued tasks"));
                            return;
                        }
                        if head {
                            q.fifo.push_front(t);
                        } else {
                            q.fifo.push_back(t);
                        }
                    }
                }
            }
            _ => self.fail(format!("invalid DSQ ID 0x{id:x}")),
        }
    }

    fn dsq(&mut self, kind: u32, id: u64) -> Option<&mut Dsq> {
        match kind {
            abi::DSQ_GLOBAL => Some(&mut self.global),
            abi::DSQ_USER => self.user.get_mut(&id),
            _ => None,
        }
    }
    fn dsq_ref(&self, kind: u32, id: u64) -> Option<&Dsq> {
        match kind {
            abi::DSQ_GLOBAL => Some(&self.global),
            abi::DSQ_USER => self.user.get(&id),
            _ => None,
        }
    }
}

// The program's calls into the kernel (host.h's wc_host_ops).

fn kernel<'a>(ctx: *mut c_void) -> &'a mut Kernel {
    // SAFETY: ctx is the Box<Kernel> of the ScxPolicy that handed the
    // program this table; it outlives the program (field order in ScxPolicy).
    unsafe { &mut *(ctx as *mut Kernel) }
}

extern "C" fn k_now(ctx: *mut c_void) -> u64 {
    kernel(ctx).sim().now() + CLOCK_OFFSET_NS
}
extern "C" fn k_cpu(ctx: *mut c_void) -> c_int {
    kernel(ctx).cpu as c_int
}
extern "C" fn k_task_cpu(ctx: *mut c_void, t: u32) -> c_int {
    kernel(ctx).sim().task(t).cpu as c_int
}
extern "C" fn k_task_from_pid(ctx: *mut c_void, pid: c_int) -> TaskPtr {
    let k = kernel(ctx);
    match k.pid_tid.get(&pid) {
        Some(&t) => k.tasks[t as usize].as_ref().map_or(std::ptr::null_mut(), |s| s.p),
        None => std::ptr::null_mut(),
    }
}
extern "C" fn k_current_task(ctx: *mut c_void) -> TaskPtr {
    let k = kernel(ctx);
    let cpu = k.cpu;
    match k.sim().cpu(cpu).curr {
        Some(t) => k.tasks.get(t as usize).and_then(Option::as_ref).map_or(std::ptr::null_mut(), |s| s.p),
        None => std::ptr::null_mut(),
    }
}
extern "C" fn k_create_dsq(ctx: *mut c_void, id: u64) -> c_int {
    let k = kernel(ctx);
    if k.user.contains_key(&id) {
        return -libc::EEXIST;
    }
    k.user.insert(id, Dsq::default());
    0
}
extern "C" fn k_dsq_insert(ctx: *mut c_void, t: u32, kind: u32, id: u64, by_vtime: u32, vtime: u64, enq: u32) {
    let k = kernel(ctx);
    let vtime = (by_vtime != 0).then_some(vtime);
    if k.context == Context::SelectCpu(t) {
        if vtime.is_some() {
            k.fail("direct dispatch from select_cpu with vtime is not modelled".into());
        }
        k.ts_mut(t).direct = Some((kind, id, enq));
        return;
    }
    k.insert(t, kind, id, vtime, enq);
}
extern "C" fn k_dsq_move_to_local(ctx: *mut c_void, kind: u32, id: u64) -> c_int {
    let k = kernel(ctx);
    let Context::Dispatch(cpu) = k.context else {
        k.fail("scx_bpf_dsq_move_to_local called outside ops.dispatch".into());
        return 0;
    };
    let tasks = &k.tasks;
    let allowed = |t: Tid, c: u32| may_run(tasks, t, c);
    let got = match kind {
        abi::DSQ_GLOBAL => k.global.take_for(cpu, allowed),
        abi::DSQ_USER => match k.user.get_mut(&id) {
            Some(q) => q.take_for(cpu, allowed),
            None => {
                k.fail(format!("non-existent DSQ 0x{id:x}"));
                return 0;
            }
        },
        _ => {
            k.fail(format!("invalid DSQ ID 0x{id:x} for scx_bpf_dsq_move_to_local"));
            return 0;
        }
    };
    match got {
        Some(t) => {
            k.dispatched += 1;
            k.sim().set_task_cpu(t, cpu);
            k.local[cpu as usize].push_back(t);
            1
        }
        None => 0,
    }
}
extern "C" fn k_dsq_nr_queued(ctx: *mut c_void, kind: u32, id: u64) -> c_int {
    let k = kernel(ctx);
    match kind {
        abi::DSQ_LOCAL => {
            let c = k.local_cpu(None);
            k.local[c as usize].len() as c_int
        }
        abi::DSQ_LOCAL_ON if (id as u32) < k.nr_cpus => {
            k.scans += 1;
            k.local[id as usize].len() as c_int
        }
        _ => match k.dsq(kind, id) {
            Some(q) => q.len() as c_int,
            None => -libc::ENOENT,
        },
    }
}
/// A DSQ iterator's state in the program's `bpf_iter_scx_dsq`: the queue
/// (kind, id), a snapshot of its tasks in queue order taken at creation (the
/// kernel's iterator also skips tasks queued later), and the position.
struct DsqIter {
    kind: u32,
    id: u64,
    tasks: Vec<Tid>,
    next: usize,
}

/// The iterator slot kept in word 0 of `it` (slot + 1; 0 is none).
fn iter_slot(it: *mut u64) -> usize {
    // SAFETY: `it` points to the 6 words of the program's bpf_iter_scx_dsq.
    unsafe { *it as usize }
}
extern "C" fn k_dsq_iter_new(ctx: *mut c_void, it: *mut u64, kind: u32, id: u64) -> c_int {
    let k = kernel(ctx);
    let Some(q) = k.dsq(kind, id) else {
        // SAFETY: as in iter_slot.
        unsafe { *it = 0 };
        return -libc::ENOENT;
    };
    let tasks: Vec<Tid> = q.fifo.iter().copied().chain(q.by_vtime.values().copied()).collect();
    let slot = match k.iters.iter().position(Option::is_none) {
        Some(s) => s,
        None => {
            k.iters.push(None);
            k.iters.len() - 1
        }
    };
    k.iters[slot] = Some(DsqIter { kind, id, tasks, next: 0 });
    // SAFETY: as in iter_slot.
    unsafe { *it = slot as u64 + 1 };
    0
}
extern "C" fn k_dsq_iter_next(ctx: *mut c_void, it: *mut u64) -> TaskPtr {
    let k = kernel(ctx);
    let Some(slot) = iter_slot(it).checked_sub(1) else {
        return std::ptr::null_mut();
    };
    loop {
        let Some(Some(i)) = k.iters.get_mut(slot) else {
            return std::ptr::null_mut();
        };
        let Some(&t) = i.tasks.get(i.next) else {
            return std::ptr::null_mut();
        };
        i.next += 1;
        let (kind, id) = (i.kind, i.id);
        // Only tasks still in the queue.
        if k.dsq_ref(kind, id).is_some_and(|q| q.contains(t)) {
            return k.tasks[t as usize].as_ref().map_or(std::ptr::null_mut(), |s| s.p);
        }
    }
}
extern "C" fn k_dsq_iter_destroy(ctx: *mut c_void, it: *mut u64) {
    let k = kernel(ctx);
    if let Some(s) = iter_slot(it).checked_sub(1) {
        if let Some(e) = k.iters.get_mut(s) {
            *e = None;
        }
    }
    // SAFETY: as in iter_slot.
    unsafe { *it = 0 };
}
extern "C" fn k_dsq_move(ctx: *mut c_void, it: *mut u64, t: u32, kind: u32, id: u64, enq: u32) -> c_int {
    let k = kernel(ctx);
    if matches!(k.context, Context::SelectCpu(_)) {
        k.fail("scx_bpf_dsq_move called from ops.select_cpu".into());
        return 0;
    }
    let Some(Some(i)) = iter_slot(it).checked_sub(1).and_then(|s| k.iters.get(s)) else {
        k.fail("scx_bpf_dsq_move without an iterator".into());
        return 0;
    };
    let (from_kind, from_id) = (i.kind, i.id);
    // The task may have left the queue since the iterator gave it.
    let Some(q) = k.dsq(from_kind, from_id) else { return 0 };
    if !q.remove(t) {
        return 0;
    }
    // ext.c, dispatch_to_local_dsq: a task that may not run on the target
    // CPU goes to the global queue.
    if kind == abi::DSQ_LOCAL_ON && !k.allowed(t, id as u32) {
        k.insert(t, abi::DSQ_GLOBAL, 0, None, enq);
    } else {
        k.insert(t, kind, id, None, enq);
    }
    1
}
extern "C" fn k_kick_cpu(ctx: *mut c_void, cpu: c_int, kick: u32) {
    let k = kernel(ctx);
    if !k.cpu_valid(cpu, "in scx_bpf_kick_cpu") {
        return;
    }
    let c = cpu as u32;
    let running = k.sim().cpu(c).curr;
    match running {
        // ext.c, kick_one_cpu: PREEMPT ends the current slice; a plain kick
        // of a busy CPU only reschedules, and the running task with slice
        // left goes on.
        Some(t) if kick & abi::KICK_PREEMPT != 0 => {
            let p = k.ts(t).p;
            k.charge(t);
            // SAFETY: p is a live task of this program.
            unsafe { (k_fns(k).task_set_slice)(p, 0) };
            k.sim().resched(c);
        }
        Some(_) => {}
        None => k.sim().kick(c),
    }
}
extern "C" fn k_test_and_clear_cpu_idle(ctx: *mut c_void, cpu: c_int) -> c_int {
    (cpu >= 0 && kernel(ctx).test_and_clear_idle(cpu as u32)) as c_int
}
extern "C" fn k_pick_idle_cpu(ctx: *mut c_void, allowed: *const u64, core_only: u32) -> c_int {
    let k = kernel(ctx);
    // SAFETY: `allowed` is a cpumask of the program's (1024 bytes).
    let mask: &Mask = unsafe { &*(allowed as *const Mask) };
    // (The first 1024 CPUs of the kernel's longer mask.)
    k.pick_idle(mask, core_only != 0).map_or(-libc::EBUSY, |c| c as c_int)
}
extern "C" fn k_any_and_distribute(ctx: *mut c_void, a: *const u64, b: *const u64) -> c_int {
    let k = kernel(ctx);
    // SAFETY: `a` and `b` are cpumasks of the program's, longer than a Mask;
    // the first 1024 CPUs are read.
    let (a, b): (&Mask, &Mask) = unsafe { (&*(a as *const Mask), &*(b as *const Mask)) };
    k.any_and_distribute(a, b).map_or(abi::MASK_WORDS as c_int * 64, |c| c as c_int)
}
extern "C" fn k_select_cpu_dfl(ctx: *mut c_void, t: u32, prev: c_int, sync: u32, found: *mut u32) -> c_int {
    let k = kernel(ctx);
    let (cpu, idle) = k.select_cpu_dfl(t, prev.max(0) as u32, sync != 0);
    // SAFETY: `found` points to a local of the caller in host.c.
    unsafe { *found = idle as u32 };
    cpu as c_int
}
extern "C" fn k_idle_mask(ctx: *mut c_void, smt: u32) -> *const u64 {
    let k = kernel(ctx);
    if smt != 0 && k.smt {
        k.idle_smt.as_ptr()
    } else {
        k.idle_cpu.as_ptr()
    }
}
extern "C" fn k_cpuperf_cur(ctx: *mut c_void, cpu: c_int) -> u32 {
    let k = kernel(ctx);
    if !k.cpu_valid(cpu, "in scx_bpf_cpuperf_cur") {
        return 0;
    }
    k.scans += 1;
    // The frequency of the CPU's last tick on the scale of its highest
    // frequency (arch_scale_freq_capacity: averaged over the last tick).
    let f = k.sim().tick_freq(cpu as u32) as u64;
    ((f * k.cpuperf_one as u64 / k.max_khz.max(1) as u64) as u32).min(k.cpuperf_one)
}
extern "C" fn k_cpuperf_set(ctx: *mut c_void, cpu: c_int, perf: u32) {
    let k = kernel(ctx);
    if k.cpu_valid(cpu, "in scx_bpf_cpuperf_set") {
        let one = k.cpuperf_one;
        k.sim().set_perf_target(cpu as u32, perf.min(one) as f64 / one as f64);
    }
}
extern "C" fn k_timer_start(ctx: *mut c_void, slot: u32, after: u64) {
    let k = kernel(ctx);
    if k.timers.len() <= slot as usize {
        k.timers.resize(slot as usize + 1, None);
    }
    if let Some((id, _)) = k.timers[slot as usize].take() {
        k.sim().cancel_timer(id);
    }
    let now = k.sim().now();
    let id = k.sim().set_timer(now.saturating_add(after), slot as u64);
    k.timers[slot as usize] = Some((id, k.cpu));
}
extern "C" fn k_timer_cancel(ctx: *mut c_void, slot: u32) -> c_int {
    let k = kernel(ctx);
    match k.timers.get_mut(slot as usize).and_then(Option::take) {
        Some((id, _)) => k.sim().cancel_timer(id) as c_int,
        None => 0,
    }
}
extern "C" fn k_error(ctx: *mut c_void, msg: *const c_char) {
    // SAFETY: host.c passes a NUL-terminated buffer.
    let m = unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned();
    kernel(ctx).fail(m);
}

/// The program's entry points, for the few kfuncs that act on a task.
fn k_fns<'a>(k: &Kernel) -> &'a program::Fns {
    // SAFETY: set at construction to the boxed Fns of the ScxPolicy's
    // program, which outlives every use the kernel makes of it.
    unsafe { &*k.fns }
}

impl Kernel {
    /// update_curr_scx: charge the running task's time since it was last
    /// charged, to its runtime and its slice.
    fn charge(&mut self, t: Tid) {
        let now = self.sim().now();
        let f = k_fns(self);
        let s = self.tasks[t as usize].as_mut().unwrap();
        let d = now.saturating_sub(s.charged_at);
        s.charged_at = now;
        s.runtime += d;
        // SAFETY: p is a live task of this program.
        unsafe {
            (f.task_set_runtime)(s.p, s.runtime);
            let slice = (f.task_slice)(s.p);
            if (f.slice_inf_is)(slice) == 0 {
                (f.task_set_slice)(s.p, slice.saturating_sub(d));
            }
        }
    }
}

/// `scx:NAME`: the sched_ext program as a policy.
pub struct ScxPolicy {
    name: String,
    /// The program holds a pointer to this table, and the table to `k`.
    _ops: Box<HostOps>,
    k: Box<Kernel>,
    prog: Box<Program>,
    ops_mask: u32,
    update_idle: bool,
    timeout_ns: u64,
    watchdog: Option<TimerId>,
    /// Per CPU: the task that stopped last, for ops.dispatch's `prev`, and
    /// whether a balance already ran for the switch in progress.
    prev: Vec<Option<Tid>>,
    balanced: Vec<Option<bool>>,
    warmers: bool,
    pmqos: Option<PmQos>,
}

/// `--nest-warm pmqos` as `warmcore sched` does it (crates/sched/src/pmqos.rs):
/// every POLL it reads the program's `in_primary` and holds those CPUs,
/// and for HYSTERESIS those that left, in the polling idle state, where an
/// idle CPU stays in C0 at its frequency and wakes at once.
struct PmQos {
    /// Per CPU: when it was last seen in the primary nest, if held.
    seen: Vec<Option<u64>>,
    timer: Option<TimerId>,
}

impl PmQos {
    const POLL: u64 = 10_000_000;
    const HYSTERESIS: u64 = 20_000_000;

    fn held(&self, c: u32) -> bool {
        self.seen[c as usize].is_some()
    }
}

/// The watchdog's timer token (program timers use their slot numbers).
const WATCHDOG_TOKEN: u64 = u64::MAX;
/// The PM QoS poll's timer token.
const PMQOS_TOKEN: u64 = u64::MAX - 1;

impl ScxPolicy {
    pub fn new(machine: &Machine, name: &str, params: &[(String, String)]) -> Result<ScxPolicy, SimError> {
        ScxPolicy::with_program(machine, name, params, None)
    }

    /// As `new`, with another host build of the program (`build_variant`).
    pub fn with_program(
        machine: &Machine,
        name: &str,
        params: &[(String, String)],
        shared_object: Option<&[u8]>,
    ) -> Result<ScxPolicy, SimError> {
        let settings = Settings::from_params(name, params).map_err(SimError::Input)?;
        if machine.nr_cpus > 1024 {
            return Err(SimError::Input(format!(
                "scx:{name}: {} CPUs; the program handles at most 1024",
                machine.nr_cpus
            )));
        }
        // Boxed: the kernel keeps a pointer to its entry points.
        let prog = match shared_object {
            Some(so) => Program::load_from(so),
            None => Program::load(),
        };
        let mut prog = Box::new(prog.map_err(SimError::Input)?);
        let n = machine.nr_cpus as usize;
        let fns: *const program::Fns = &prog.f;
        let mut k = Box::new(Kernel {
            sim: std::ptr::null_mut(),
            cpu: 0,
            scans: 0,
            context: Context::Other,
            nr_cpus: machine.nr_cpus,
            smt: machine.spec.threads_per_core > 1,
            cpu_core: machine.cpu_core.clone(),
            core_cpus: machine.core_cpus.clone(),
            cpu_die: machine.cpu_die.clone(),
            all: mask_of(0..machine.nr_cpus),
            llc_masks: machine.die_cpus.iter().map(|cpus| mask_of(cpus.iter().copied())).collect(),
            max_khz: machine.max_khz(),
            tasks: Vec::new(),
            pid_tid: BTreeMap::new(),
            local: vec![VecDeque::new(); n],
            global: Dsq::default(),
            user: BTreeMap::new(),
            dispatched: 0,
            idle_cpu: Box::new([0; abi::MASK_WORDS]),
            idle_smt: Box::new([0; abi::MASK_WORDS]),
            told_idle: vec![true; n],
            cursor: vec![0; n],
            // SAFETY: a constant of the program's build.
            cpuperf_one: unsafe { (prog.f.cpuperf_one)() },
            iters: Vec::new(),
            timers: Vec::new(),
            error: None,
            fns,
        });
        let ctx = &mut *k as *mut Kernel as *mut c_void;
        let ops = Box::new(HostOps {
            ctx,
            hz: 1_000_000_000 / crate::sim::TICK_NS,
            now: k_now,
            cpu: k_cpu,
            task_cpu: k_task_cpu,
            task_from_pid: k_task_from_pid,
            current_task: k_current_task,
            create_dsq: k_create_dsq,
            dsq_insert: k_dsq_insert,
            dsq_move_to_local: k_dsq_move_to_local,
            dsq_nr_queued: k_dsq_nr_queued,
            dsq_iter_new: k_dsq_iter_new,
            dsq_iter_next: k_dsq_iter_next,
            dsq_iter_destroy: k_dsq_iter_destroy,
            dsq_move: k_dsq_move,
            kick_cpu: k_kick_cpu,
            test_and_clear_cpu_idle: k_test_and_clear_cpu_idle,
            pick_idle_cpu: k_pick_idle_cpu,
            any_and_distribute: k_any_and_distribute,
            select_cpu_dfl: k_select_cpu_dfl,
            idle_mask: k_idle_mask,
            cpuperf_cur: k_cpuperf_cur,
            cpuperf_set: k_cpuperf_set,
            timer_start: k_timer_start,
            timer_cancel: k_timer_cancel,
            error: k_error,
        });
        prog.attach(&*ops, machine.nr_cpus).map_err(SimError::Input)?;

        // What the loader sets before load, as `warmcore sched` sets them.
        let topo = topology(machine);
        for g in settings.globals(&topo) {
            prog.set(g.name, g.index, g.value).map_err(SimError::Input)?;
        }
        let nest = settings.policy == ScxName::Nest;
        let warm = settings.warm(&topo);
        // SAFETY: constants of the program's build.
        let (ops_mask, timeout_ms) = unsafe { ((prog.f.ops_mask)(), (prog.f.timeout_ms)()) };
        Ok(ScxPolicy {
            name: format!("scx:{name}"),
            _ops: ops,
            k,
            prog,
            ops_mask,
            // The loader registers update_idle for Nest only.
            update_idle: nest && ops_mask & abi::OP_UPDATE_IDLE != 0,
            timeout_ns: timeout_ms as u64 * 1_000_000,
            watchdog: None,
            prev: vec![None; n],
            balanced: vec![None; n],
            warmers: warm == NestWarm::Threads,
            pmqos: (warm == NestWarm::Pmqos).then(|| PmQos { seen: vec![None; n], timer: None }),
        })
    }

    /// A load-time global of the program as its loader set it (element
    /// `index`), for the tests that compare it with `warmcore sched`'s.
    #[doc(hidden)]
    pub fn global(&self, name: &str, index: u32) -> Option<u64> {
        self.prog.get(name, index)
    }

    /// Run one of the program's operations on `cpu`, in `context`.
    fn call<R>(&mut self, sim: &mut Sim, cpu: u32, context: Context, f: impl FnOnce(&program::Fns) -> R) -> R {
        self.k.cpu = cpu;
        self.k.context = context;
        let fns = &self.prog.f;
        let r = Self::with_sim(&mut self.k, sim, |_| f(fns));
        self.k.context = Context::Other;
        if let Some(e) = self.k.error.take() {
            self.eject(sim, e);
        }
        r
    }

    /// Let the kernel side reach `sim` for the length of `f` (an operation
    /// of the program, or kernel work outside one).
    fn with_sim<R>(k: &mut Kernel, sim: &mut Sim, f: impl FnOnce(&mut Kernel) -> R) -> R {
        k.sim = sim;
        let r = f(k);
        k.sim = std::ptr::null_mut();
        r
    }

    /// The scheduler is ejected: ops.exit, and the run ends with the reason.
    fn eject(&mut self, sim: &mut Sim, why: String) {
        let msg = CString::new(why.replace('\0', " ")).unwrap();
        let exit = self.prog.f.exit;
        // SAFETY: a NUL-terminated message; the program is attached.
        Self::with_sim(&mut self.k, sim, |_| unsafe { exit(1, msg.as_ptr()) });
        self.k.error = None;
        sim.abort(format!("{} ejected at {} ns: {why}", self.name, sim.now()));
    }

    fn p(&self, t: Tid) -> TaskPtr {
        self.k.ts(t).p
    }

    /// balance_one: is there a next task for `cpu` in its local queue, after
    /// the global queue and up to 32 rounds of ops.dispatch?
    fn balance(&mut self, sim: &mut Sim, cpu: u32, prev: Option<Tid>) -> bool {
        let c = cpu as usize;
        if !self.k.local[c].is_empty() {
            return true;
        }
        if self.take_global(sim, cpu) {
            return true;
        }
        if self.ops_mask & abi::OP_DISPATCH == 0 {
            return false;
        }
        let prev_p = prev.filter(|&t| self.k.tasks[t as usize].is_some()).map_or(std::ptr::null_mut(), |t| self.p(t));
        for _ in 0..DISPATCH_MAX_LOOPS {
            self.k.dispatched = 0;
            // SAFETY: prev_p is null or a live task of this program.
            self.call(sim, cpu, Context::Dispatch(cpu), |f| unsafe { (f.dispatch)(cpu as c_int, prev_p) });
            if !self.k.local[c].is_empty() {
                return true;
            }
            if self.take_global(sim, cpu) {
                return true;
            }
            if self.k.dispatched == 0 {
                break;
            }
        }
        false
    }

    /// consume_global_dsq: the global queue's first task that may run here.
    fn take_global(&mut self, sim: &mut Sim, cpu: u32) -> bool {
        let k = &mut *self.k;
        let tasks = &k.tasks;
        match k.global.take_for(cpu, |t, c| may_run(tasks, t, c)) {
            Some(t) => {
                sim.set_task_cpu(t, cpu);
                k.local[cpu as usize].push_back(t);
                true
            }
            None => false,
        }
    }

    fn runnable(&mut self, sim: &mut Sim, t: Tid) {
        let s = self.k.ts_mut(t);
        if s.runnable_at.is_none() {
            s.runnable_at = Some(sim.now());
        }
        if self.watchdog.is_none() && self.timeout_ns > 0 {
            self.watchdog = Some(sim.set_timer(sim.now() + self.timeout_ns / 2, WATCHDOG_TOKEN));
        }
    }

    /// The loader's PM QoS poll: hold the primary nest's CPUs, release those
    /// out of it for the hysteresis; a held idle CPU polls.
    fn pmqos_poll(&mut self, sim: &mut Sim) {
        let now = sim.now();
        let n = self.k.nr_cpus as usize;
        let in_primary: Vec<bool> = match self.prog.global_bytes("in_primary", n) {
            Some(bytes) => bytes.iter().map(|&b| b != 0).collect(),
            None => vec![false; n],
        };
        let Some(q) = self.pmqos.as_mut() else { return };
        for c in 0..self.k.nr_cpus {
            let seen = &mut q.seen[c as usize];
            if in_primary[c as usize] {
                *seen = Some(now);
            } else if seen.is_some_and(|s| now - s >= PmQos::HYSTERESIS) {
                *seen = None;
                sim.stop_spin(c);
            }
            if q.held(c) && sim.cpu(c).mode == Mode::Idle {
                sim.spin(c, now + 2 * PmQos::POLL);
            }
        }
        q.timer = Some(sim.set_timer(now + PmQos::POLL, PMQOS_TOKEN));
    }

    /// scx_watchdog_workfn: a task runnable for longer than the timeout
    /// ejects the scheduler. Runs every half timeout while tasks wait.
    fn watchdog(&mut self, sim: &mut Sim) {
        self.watchdog = None;
        let now = sim.now();
        let mut waiting = false;
        for (t, s) in self.k.tasks.iter().enumerate() {
            let Some(at) = s.as_ref().and_then(|s| s.runnable_at) else { continue };
            waiting = true;
            if now - at > self.timeout_ns {
                let task = sim.task(t as Tid);
                let why = format!(
                    "runnable task stall: {}[{}] failed to run for {:.3}s",
                    task.comm,
                    task.pid,
                    (now - at) as f64 * 1e-9
                );
                self.eject(sim, why);
                return;
            }
        }
        if waiting {
            self.watchdog = Some(sim.set_timer(now + self.timeout_ns / 2, WATCHDOG_TOKEN));
        }
    }

    /// The decision counters, summed over CPUs, by name.
    fn counters(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut out = serde_json::Map::new();
        let Some((bytes, stride, max, copies)) = self.prog.map("stats") else { return out };
        for (i, name) in stat_names().iter().enumerate() {
            let mut sum = 0u64;
            for c in 0..copies * max {
                let at = c * stride + i * 8;
                if at + 8 <= bytes.len() {
                    sum += u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap());
                }
            }
            out.insert(name.to_string(), sum.into());
        }
        out
    }
}

/// The counter names of `enum wc_stat` (crates/sched/src/bpf/intf.h), in
/// order: as `warmcore sched --stats` names them.
fn stat_names() -> &'static [&'static str] {
    &include!(concat!(env!("OUT_DIR"), "/wc_stat_names.rs"))
}

impl Drop for ScxPolicy {
    fn drop(&mut self) {
        for s in self.k.tasks.iter_mut().filter_map(Option::take) {
            // SAFETY: each task is freed once, before the program is closed.
            unsafe { (self.prog.f.task_free)(s.p) };
        }
    }
}

impl Policy for ScxPolicy {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn init(&mut self, sim: &mut Sim) {
        // Every CPU starts idle (reset_idle_masks at enable).
        for c in 0..self.k.nr_cpus {
            self.k.set_idle(c, true);
        }
        // Enabling a sched_ext scheduler sets every CPU's performance
        // target to the maximum (ext.c, scx_enable).
        for c in 0..self.k.nr_cpus {
            sim.set_perf_target(c, 1.0);
        }
        // SAFETY: the program is attached.
        let r = self.call(sim, 0, Context::Other, |f| unsafe { (f.init)() });
        if r != 0 {
            self.eject(sim, format!("ops.init failed ({r})"));
        }
        if let Some(q) = self.pmqos.as_mut() {
            q.timer = Some(sim.set_timer(sim.now() + PmQos::POLL, PMQOS_TOKEN));
        }
    }

    fn daemons(&self) -> Vec<Daemon> {
        // Nest's warmer threads (section 3.2): one per CPU, pinned, spinning
        // in user space whenever the program runs them (crates/sched spawns
        // them as threads before it loads the program).
        if !self.warmers {
            return Vec::new();
        }
        (0..self.k.nr_cpus).map(|c| Daemon { comm: format!("wc-warm/{c}"), cpu: c }).collect()
    }

    fn init_task(&mut self, sim: &mut Sim, t: Tid, parent: Option<Tid>) {
        let task = sim.task(t);
        let pid = task.pid as i32;
        let (pinned, nice) = (task.pinned, task.nice);
        // SAFETY: a new task of this program's copy.
        let p = unsafe { (self.prog.f.task_new)(t, pid, pinned.map_or(-1, |c| c as c_int)) };
        if self.k.tasks.len() <= t as usize {
            self.k.tasks.resize_with(t as usize + 1, || None);
        }
        self.k.tasks[t as usize] =
            Some(TaskState { p, runtime: 0, charged_at: 0, pinned, direct: None, runnable_at: None });
        self.k.pid_tid.insert(pid, t);
        if nice != 0 {
            // SAFETY: p is live.
            unsafe { (self.prog.f.task_set_nice)(p, nice as c_int) };
        }
        if let (true, Some(c)) = (self.warmers, pinned) {
            // The loader registers each warmer thread before the program
            // sees it (the `warmers` map).
            if let Err(e) = self.prog.map_update("warmers", pid, c as i32) {
                self.eject(sim, e);
                return;
            }
        }
        let cpu = parent.map_or(0, |p| sim.task(p).cpu);
        // SAFETY: p is live.
        let r = self.call(sim, cpu, Context::Other, |f| unsafe { (f.init_task)(p, parent.is_some() as u32) });
        if r != 0 {
            self.eject(sim, format!("ops.init_task failed ({r})"));
            return;
        }
        // SAFETY: p is live.
        self.call(sim, cpu, Context::Other, |f| unsafe { (f.enable)(p) });
    }

    // The program defines no ops.set_weight: the kernel only updates the
    // task's weight, which the program reads when it charges a run.
    fn set_nice(&mut self, sim: &mut Sim, t: Tid) {
        // SAFETY: p is live.
        unsafe { (self.prog.f.task_set_nice)(self.p(t), sim.task(t).nice as c_int) };
    }

    fn exit_task(&mut self, sim: &mut Sim, t: Tid) {
        let p = self.p(t);
        let cpu = sim.task(t).cpu;
        // SAFETY: p is live until freed below.
        self.call(sim, cpu, Context::Other, |f| unsafe { (f.exit_task)(p) });
        if let Some(s) = self.k.tasks[t as usize].take() {
            self.k.pid_tid.remove(&(sim.task(t).pid as i32));
            // SAFETY: freed once; the program holds no reference after
            // exit_task (bpf_task_from_pid no longer finds it).
            unsafe { (self.prog.f.task_free)(s.p) };
        }
    }

    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev: u32, w: Wake) -> u32 {
        // select_task_rq: never for exec (ext.c keeps an exec'ing task where
        // it is) nor for a task that may run on one CPU only.
        if w.kind == WakeKind::Exec {
            return prev;
        }
        if let Some(c) = self.k.ts(t).pinned {
            return c;
        }
        self.k.ts_mut(t).direct = None;
        let p = self.p(t);
        let wake = if w.kind == WakeKind::Fork { abi::WAKE_FORK } else { abi::WAKE_TTWU };
        // The program runs natively, so its instructions are not counted:
        // the placement pays for the CPUs the kernel's helpers looked at.
        self.k.scans = 0;
        // SAFETY: p is live.
        let cpu = self.call(sim, w.waker_cpu, Context::SelectCpu(t), |f| unsafe {
            (f.select_cpu)(p, prev as c_int, wake, w.sync as u32)
        });
        sim.note_scan(self.k.scans);
        if cpu < 0 || cpu as u32 >= self.k.nr_cpus {
            self.eject(sim, format!("invalid CPU {cpu} from ops.select_cpu()"));
            return prev;
        }
        // The CPU the enqueue then runs on: the waker's.
        self.k.cpu = w.waker_cpu;
        cpu as u32
    }

    fn enqueue(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: Enq) {
        self.runnable(sim, t);
        let p = self.p(t);
        // SAFETY: p is live.
        unsafe { (self.prog.f.task_set_state)(p, 1, 0) };
        if flags == Enq::Preempted {
            // The balance ran at stopping (ext.c: balance before put_prev).
            let found = self.balanced[cpu as usize].unwrap_or(true);
            // SAFETY: p is live.
            let slice = unsafe { (self.prog.f.task_slice)(p) };
            if slice > 0 {
                // Preempted with slice left: it stays first in line.
                self.k.local[cpu as usize].push_front(t);
                return;
            }
            let last = if found { 0 } else { abi::ENQ_LAST };
            self.enqueue_op(sim, t, cpu, last);
            return;
        }
        if let Some((kind, id, enq)) = self.k.ts_mut(t).direct.take() {
            // A direct dispatch from select_cpu: LOCAL is the selected CPU.
            Self::with_sim(&mut self.k, sim, |k| k.insert(t, kind, id, None, enq));
            if let Some(e) = self.k.error.take() {
                self.eject(sim, e);
            }
            return;
        }
        let enq = if flags == Enq::Wakeup { abi::ENQ_WAKEUP } else { 0 };
        let here = if matches!(flags, Enq::Wakeup | Enq::New) { self.k.cpu } else { cpu };
        self.enqueue_op(sim, t, here, enq);
    }

    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid> {
        let c = cpu as usize;
        let found = match self.balanced[c].take() {
            Some(f) => f || !self.k.local[c].is_empty(),
            None => {
                let prev = self.prev[c];
                self.balance(sim, cpu, prev)
            }
        };
        if !found {
            return None;
        }
        let t = self.k.local[c].pop_front()?;
        Some(t)
    }

    fn has_work(&self, _sim: &Sim, cpu: u32) -> bool {
        !self.k.local[cpu as usize].is_empty()
    }

    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        let now = sim.now();
        let s = self.k.ts_mut(t);
        s.runnable_at = None;
        s.charged_at = now;
        let p = s.p;
        self.prev[cpu as usize] = None;
        // SAFETY: p is live.
        unsafe { (self.prog.f.task_set_state)(p, 1, 0) };
        self.call(sim, cpu, Context::Other, |f| unsafe { (f.running)(p) });
    }

    fn stopping(&mut self, sim: &mut Sim, t: Tid, cpu: u32, runnable: bool) {
        Self::with_sim(&mut self.k, sim, |k| k.charge(t));
        let p = self.p(t);
        let exiting = sim.task(t).state == TState::Dead;
        // SAFETY: p is live.
        unsafe { (self.prog.f.task_set_state)(p, runnable as u32, exiting as u32) };
        if runnable {
            // A preempted task: the CPU looks for its next task first.
            let found = self.balance(sim, cpu, Some(t));
            self.balanced[cpu as usize] = Some(found);
        } else {
            self.balanced[cpu as usize] = None;
        }
        self.prev[cpu as usize] = Some(t);
        // SAFETY: p is live.
        self.call(sim, cpu, Context::Other, |f| unsafe { (f.stopping)(p, runnable as u32) });
    }

    fn tick(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        Self::with_sim(&mut self.k, sim, |k| k.charge(t));
        let p = self.p(t);
        // SAFETY: p is live.
        self.call(sim, cpu, Context::Other, |f| unsafe { (f.tick)(p) });
        // task_tick_scx: a slice run out ends the stint.
        // SAFETY: p is live.
        if unsafe { (self.prog.f.task_slice)(p) } == 0 {
            sim.resched(cpu);
        }
    }

    fn update_idle(&mut self, sim: &mut Sim, cpu: u32, idle: bool) {
        // A CPU held by PM QoS polls from the moment it goes idle.
        if idle && self.pmqos.as_ref().is_some_and(|q| q.held(cpu)) {
            sim.spin(cpu, sim.now() + 2 * PmQos::POLL);
        }
        self.k.set_idle(cpu, idle);
        let c = cpu as usize;
        if self.k.told_idle[c] == idle {
            return;
        }
        self.k.told_idle[c] = idle;
        if self.update_idle {
            // SAFETY: the program is attached; the CPU is valid.
            self.call(sim, cpu, Context::Other, |f| unsafe { (f.update_idle)(cpu as c_int, idle as u32) });
        }
    }

    fn timer(&mut self, sim: &mut Sim, token: u64) {
        if token == WATCHDOG_TOKEN {
            self.watchdog(sim);
            return;
        }
        if token == PMQOS_TOKEN {
            self.pmqos_poll(sim);
            return;
        }
        let slot = token as usize;
        let Some((_, cpu)) = self.k.timers.get_mut(slot).and_then(Option::take) else { return };
        // SAFETY: the slot is one the program armed.
        self.call(sim, cpu, Context::Other, |f| unsafe { (f.timer_fire)(slot as u32) });
    }

    fn stats(&self) -> serde_json::Value {
        let mut m = self.counters();
        if self.name == "scx:nest" {
            for g in ["nr_primary", "nr_reserve", "max_primary"] {
                if let Some(v) = self.prog.global_u64(g) {
                    m.insert(g.into(), v.into());
                }
            }
        }
        serde_json::Value::Object(m)
    }
}

impl ScxPolicy {
    fn enqueue_op(&mut self, sim: &mut Sim, t: Tid, cpu: u32, enq: u32) {
        let p = self.p(t);
        if self.ops_mask & abi::OP_ENQUEUE == 0 {
            self.k.global.fifo.push_back(t);
            return;
        }
        // SAFETY: p is live.
        self.call(sim, cpu, Context::Other, |f| unsafe { (f.enqueue)(p, enq) });
    }
}
