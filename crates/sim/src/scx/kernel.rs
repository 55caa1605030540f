// SPDX-License-Identifier: GPL-2.0-only
//! The kernel side of the program: what the sched_ext core keeps per task
//! and per CPU, the built-in idle tracking and default CPU selection
//! (ext_idle.c), local queues and inserts, and slice charging.

use super::*;

/// What the kernel keeps of a task for sched_ext.
pub(super) struct TaskState {
    pub(super) p: TaskPtr,
    /// sum_exec_runtime, and when the current stint's charging started.
    pub(super) runtime: u64,
    pub(super) charged_at: u64,
    /// The task's only CPU, for a pinned task.
    pub(super) pinned: Option<u32>,
    /// Its allowed CPUs when sched_setaffinity narrowed them (None: every
    /// CPU), as p->cpus_ptr holds them.
    pub(super) cpus: Option<Box<Mask>>,
    /// The CPU a migration-disabled task is held on (is_migration_disabled;
    /// None when it may move).
    pub(super) held_on: Option<u32>,
    /// A direct dispatch from select_cpu: (queue kind, id, flags, vtime
    /// for a vtime insert), applied at enqueue.
    pub(super) direct: Option<(u32, u64, u32, Option<u64>)>,
    /// ops.select_cpu ran for the wake-up being enqueued (SCX_ENQ_CPU_SELECTED).
    pub(super) selected: bool,
    /// Runnable and not running since (the watchdog's runnable_at).
    pub(super) runnable_at: Option<u64>,
    /// Held by the program: ops.enqueue kept it without inserting it into
    /// a queue, and no insert has taken it since (ext.c, SCX_OPSS_QUEUED).
    pub(super) custody: bool,
    /// p->cpus_ptr is the one CPU it was switched out of in a
    /// migration-disabled section (migrate_disable_switch), until its
    /// migrate_enable.
    pub(super) one_cpu: bool,
}

/// Whether task `t` may run on `cpu` (a task the program no longer knows
/// may not).
pub(super) fn may_run(tasks: &[Option<TaskState>], t: Tid, cpu: u32) -> bool {
    tasks[t as usize]
        .as_ref()
        .is_some_and(|s| match s.held_on {
            Some(h) => h == cpu,
            None => s.pinned.is_none_or(|p| p == cpu) && s.cpus.as_ref().is_none_or(|m| Kernel::bit(&m[..], cpu)),
        })
}

/// Where inserts go and what LOCAL means, by the operation being run.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Context {
    Other,
    SelectCpu(Tid),
    Dispatch(u32),
}

/// A CPU mask as the program's (bit n of word n / 64 for CPU n), for the
/// 1024 CPUs the program handles (WC_MAX_CPUS); the kernel's masks are
/// longer, and CPUs beyond never set.
pub(super) type Mask = [u64; 16];

/// A task's allowed CPUs (Kernel::cpus_allowed): one CPU, its own mask, or every
/// CPU.
enum Allowed<'a> {
    One(u32),
    Of(&'a Mask),
    All,
}

/// `a & b`.
pub(super) fn and(a: &Mask, b: &Mask) -> Mask {
    let mut m = *a;
    for (w, x) in m.iter_mut().zip(b.iter()) {
        *w &= x;
    }
    m
}

pub(super) fn mask_of(cpus: impl Iterator<Item = u32>) -> Mask {
    let mut m = [0u64; 16];
    for c in cpus {
        m[c as usize / 64] |= 1 << (c % 64);
    }
    m
}

/// The kernel side: everything the program's kfuncs act on.
pub(super) struct Kernel {
    pub(super) sim: *mut Sim,
    pub(super) cpu: u32,
    /// CPUs the kernel's helpers looked at for the program in the current
    /// select_cpu: one per CPU tested or read, one per 64-CPU word of a
    /// cpumask search (docs/model.md, The kernel's own time).
    pub(super) scans: u32,
    pub(super) context: Context,
    pub(super) nr_cpus: u32,
    pub(super) smt: bool,
    pub(super) cpu_core: Vec<u32>,
    pub(super) core_cpus: Vec<Vec<u32>>,
    pub(super) cpu_die: Vec<u32>,
    /// Every CPU, and each LLC's (die's) CPUs.
    pub(super) all: Mask,
    pub(super) llc_masks: Vec<Mask>,
    /// Each CPU's NUMA node (socket), and each node's CPUs.
    pub(super) cpu_node: Vec<u32>,
    pub(super) node_masks: Vec<Mask>,
    /// The idle masks per node (SCX_OPS_BUILTIN_IDLE_PER_NODE).
    pub(super) per_node: bool,
    /// A node's view of the idle masks (cpu, smt), filled when read.
    pub(super) node_views: Vec<[Box<[u64; abi::MASK_WORDS]>; 2]>,
    /// The built-in selection's NUMA step (ext_idle.c, scx_selcpu_topo_numa):
    /// nodes that are not one LLC each, without per-node idle masks.
    pub(super) numa_step: bool,
    pub(super) max_khz: u32,
    pub(super) tasks: Vec<Option<TaskState>>,
    pub(super) pid_tid: BTreeMap<i32, Tid>,
    pub(super) local: Vec<VecDeque<Tid>>,
    pub(super) global: Dsq,
    pub(super) user: UserDsqs,
    /// Moves made by the current ops.dispatch call.
    pub(super) dispatched: u32,
    pub(super) idle_cpu: Box<[u64; abi::MASK_WORDS]>,
    /// cpu_none_mask, for the idle masks a program may not read.
    pub(super) none_mask: Box<[u64; abi::MASK_WORDS]>,
    pub(super) idle_smt: Box<[u64; abi::MASK_WORDS]>,
    /// The idle state ops.update_idle was last told, per CPU.
    pub(super) told_idle: Vec<bool>,
    /// cpumask_any_and_distribute's per-CPU cursor.
    pub(super) cursor: Vec<u32>,
    pub(super) cpuperf_one: u32,
    /// The program's live DSQ iterators, by slot.
    pub(super) iters: Vec<Option<DsqIter>>,
    /// Program timers: the simulator's timer and the arming CPU, by slot.
    pub(super) timers: Vec<Option<(TimerId, u32)>>,
    pub(super) error: Option<String>,
    /// The run queue the operation in progress holds locked (ext.c,
    /// scx_locked_rq: SCX_CALL_OP's rq); None in one the kernel calls
    /// unlocked (ops.select_cpu, ops.init_task, ops.set_cpumask, ops.init, a
    /// BPF timer).
    pub(super) locked: Option<u32>,
    /// Tasks an IMMED insert could not run at once, to hand back to
    /// ops.enqueue with SCX_ENQ_REENQ after the operation: (task, CPU).
    pub(super) reenq: Vec<(Tid, u32)>,
    /// The program's entry points (for the kfuncs that act on a task).
    pub(super) fns: *const program::Fns,
}

impl Kernel {
    pub(super) fn sim(&mut self) -> &mut Sim {
        // SAFETY: set by ScxPolicy::call to the `&mut Sim` of the policy hook
        // that is running; the hook does not touch it while the program runs,
        // and the program calls back only from within that call.
        unsafe { &mut *self.sim }
    }
    pub(super) fn ts(&self, t: Tid) -> &TaskState {
        self.tasks[t as usize].as_ref().expect("a task the program knows")
    }
    pub(super) fn ts_mut(&mut self, t: Tid) -> &mut TaskState {
        self.tasks[t as usize].as_mut().expect("a task the program knows")
    }
    pub(super) fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            self.error = Some(msg);
        }
    }
    /// ext_idle.c: the global idle kfuncs (node -1) refuse to run with
    /// per-node idle masks (SCX_OPS_BUILTIN_IDLE_PER_NODE), the per-node
    /// ones without them (validate_node).
    pub(super) fn node_mode_ok(&mut self, node: i32) -> bool {
        if node < 0 {
            if self.per_node {
                self.fail("SCX_OPS_BUILTIN_IDLE_PER_NODE enabled".into());
                return false;
            }
            return true;
        }
        if !self.per_node {
            self.fail("per-node idle tracking is disabled".into());
            return false;
        }
        if node as usize >= self.node_masks.len() {
            self.fail(format!("invalid node {node}"));
            return false;
        }
        true
    }
    pub(super) fn cpu_valid(&mut self, cpu: i32, what: &str) -> bool {
        if cpu >= 0 && (cpu as u32) < self.nr_cpus {
            true
        } else {
            self.fail(format!("invalid CPU {cpu} {what}"));
            false
        }
    }
    /// ext.c, task_can_run_on_remote_rq (enforced): an insert into the
    /// local queue of a CPU outside the task's allowed set is an error.
    /// A migration-disabled task's is refused first, with its own message.
    pub(super) fn fail_not_allowed(&mut self, t: Tid, cpu: u32) {
        let who = self.sim().task(t).who();
        if let Some(from) = self.ts(t).held_on {
            self.fail(format!("SCX_DSQ_LOCAL[_ON] cannot move migration disabled {who} from CPU {from} to {cpu}"));
            return;
        }
        self.fail(format!("SCX_DSQ_LOCAL[_ON] target CPU {cpu} not allowed for {who}"));
    }
    pub(super) fn allowed(&self, t: Tid, cpu: u32) -> bool {
        may_run(&self.tasks, t, cpu)
    }
    pub(super) fn bit(mask: &[u64], cpu: u32) -> bool {
        mask[cpu as usize / 64] >> (cpu % 64) & 1 == 1
    }
    pub(super) fn set_bit(mask: &mut [u64], cpu: u32, on: bool) {
        if on {
            mask[cpu as usize / 64] |= 1 << (cpu % 64);
        } else {
            mask[cpu as usize / 64] &= !(1 << (cpu % 64));
        }
    }

    /// ext_idle.c, update_builtin_idle: the CPU bit, and the core's SMT bits
    /// when all its threads are idle.
    pub(super) fn set_idle(&mut self, cpu: u32, idle: bool) {
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
    pub(super) fn test_and_clear_idle(&mut self, cpu: u32) -> bool {
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
    pub(super) fn idle_and_distribute(&mut self, smt: bool, allowed: &Mask) -> Option<u32> {
        let idle: &Mask = if smt { &self.idle_smt } else { &self.idle_cpu }[..16].try_into().unwrap();
        let here = self.cpu as usize;
        and_distribute(idle, allowed, self.nr_cpus, &mut self.cursor[here], &mut self.scans)
    }

    /// cpumask_any_and_distribute: the first CPU after the calling CPU's
    /// cursor set in both `a` and `b`, wrapping; the cursor moves to it. One
    /// cursor per CPU serves every caller, the kernel's idle search and the
    /// program's bpf_cpumask_any_and_distribute alike, as in lib/cpumask.c.
    pub(super) fn any_and_distribute(&mut self, a: &Mask, b: &Mask) -> Option<u32> {
        let here = self.cpu as usize;
        and_distribute(a, b, self.nr_cpus, &mut self.cursor[here], &mut self.scans)
    }

    /// ext_idle.c, pick_idle_cpu_in_node: a fully idle core first (with
    /// SMT), else any idle CPU, of `allowed`, claimed.
    pub(super) fn pick_idle(&mut self, allowed: &Mask, core_only: bool) -> Option<u32> {
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

    /// ext_idle.c, scx_pick_idle_cpu: with per-node idle masks, `node`'s
    /// CPUs first, then (unless `in_node`) the other nodes' in turn.
    pub(super) fn pick_idle_from(&mut self, allowed: &Mask, core_only: bool, node: Option<u32>, in_node: bool) -> Option<u32> {
        let Some(node) = node else { return self.pick_idle(allowed, core_only) };
        let nodes = self.node_masks.len() as u32;
        for i in 0..nodes {
            if i > 0 && in_node {
                break;
            }
            let n = (node + i) % nodes;
            let m = and(allowed, &self.node_masks[n as usize]);
            if let Some(c) = self.pick_idle(&m, core_only) {
                return Some(c);
            }
        }
        None
    }

    /// The CPUs a task may run on: p->cpus_ptr, which for a
    /// migration-disabled task is its CPU alone (migrate_disable_switch), so
    /// that the built-in idle selection keeps it there
    /// (select_cpu_from_kfunc's is_migration_disabled test). Borrowed, not
    /// copied: a wake-up asks for it each time.
    fn cpus_allowed(&self, t: Tid) -> Allowed<'_> {
        let s = self.ts(t);
        match (s.held_on.or(s.pinned), &s.cpus) {
            (Some(c), _) => Allowed::One(c),
            (None, Some(m)) => Allowed::Of(m),
            (None, None) => Allowed::All,
        }
    }

    /// `cpus_allowed` as a mask.
    pub(super) fn task_mask(&self, t: Tid) -> Mask {
        match self.cpus_allowed(t) {
            Allowed::One(c) => mask_of(std::iter::once(c)),
            Allowed::Of(m) => *m,
            Allowed::All => self.all,
        }
    }

    /// The one CPU a task may run on, if it may run on one only
    /// (p->nr_cpus_allowed == 1).
    pub(super) fn only_cpu(&self, t: Tid) -> Option<u32> {
        let m = match self.cpus_allowed(t) {
            Allowed::One(c) => return Some(c),
            Allowed::Of(m) => m,
            Allowed::All => return (self.nr_cpus == 1).then_some(0),
        };
        (m.iter().map(|w| w.count_ones()).sum::<u32>() == 1)
            .then(|| m.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| i as u32 * 64 + w.trailing_zeros()))
            .flatten()
    }

    /// ext_idle.c, scx_select_cpu_dfl (the topology-aware version of 6.15
    /// and later) among `allowed` and the task's CPUs: with WAKE_SYNC, prev
    /// if it shares the waker's LLC and is idle, else the waker's CPU if its
    /// local queue is empty and some CPU (of its node, with per-node idle
    /// masks) is idle; then a fully idle core (prev's, then prev's LLC, then
    /// prev's node, then any, from prev's node first with per-node masks);
    /// then prev; then an idle CPU in the same order. The CPU found idle
    /// (and claimed), or None.
    pub(super) fn select_cpu(&mut self, t: Tid, prev: u32, sync: bool, within: Option<&Mask>, core_only: bool) -> Option<u32> {
        let task = self.task_mask(t);
        let allowed = match within {
            Some(m) => and(m, &task),
            None => task,
        };
        let prev = if prev < self.nr_cpus { prev } else { 0 };
        let node = self.per_node.then(|| self.cpu_node[prev as usize]);
        let llc = self.cpu_die[prev as usize] as usize;
        let in_llc = (self.llc_masks.len() > 1).then(|| and(&allowed, &self.llc_masks[llc]));
        let in_numa = self.numa_step.then(|| and(&allowed, &self.node_masks[self.cpu_node[prev as usize] as usize]));
        let ok = |c: u32| Self::bit(&allowed, c);
        if sync {
            let waker = self.cpu;
            if self.cpu_die[waker as usize] as usize == llc && self.test_and_clear_idle(prev) {
                return Some(prev);
            }
            let curr = self.sim().cpu(waker).curr;
            let exiting = curr.is_some_and(|w| self.sim().task(w).state == TState::Dead);
            let idle_here = match self.per_node {
                true => and(&self.idle_cpu[..16].try_into().unwrap(), &self.node_masks[self.cpu_node[waker as usize] as usize]).iter().any(|&w| w != 0),
                false => self.idle_cpu.iter().any(|&w| w != 0),
            };
            if !exiting && self.local[waker as usize].is_empty() && idle_here && ok(waker) {
                return Some(waker);
            }
        }
        if self.smt {
            if ok(prev) && Self::bit(&self.idle_smt[..], prev) && self.test_and_clear_idle(prev) {
                return Some(prev);
            }
            if let Some(m) = &in_llc {
                if let Some(c) = self.pick_idle(m, true) {
                    return Some(c);
                }
            }
            if let Some(m) = &in_numa {
                if let Some(c) = self.pick_idle(m, true) {
                    return Some(c);
                }
            }
            if let Some(c) = self.pick_idle_from(&allowed, true, node, false) {
                return Some(c);
            }
            if core_only {
                return None;
            }
        }
        if ok(prev) && self.test_and_clear_idle(prev) {
            return Some(prev);
        }
        if let Some(m) = &in_llc {
            if let Some(c) = self.pick_idle(m, false) {
                return Some(c);
            }
        }
        if let Some(m) = &in_numa {
            if let Some(c) = self.pick_idle(m, false) {
                return Some(c);
            }
        }
        self.pick_idle_from(&allowed, false, node, false)
    }

    /// The CPU whose local queue LOCAL names in the current context.
    pub(super) fn local_cpu(&mut self, t: Option<Tid>) -> u32 {
        match self.context {
            Context::Dispatch(c) => c,
            _ => match t {
                Some(t) => self.sim().task(t).cpu,
                None => self.cpu,
            },
        }
    }

    pub(super) fn push_local(&mut self, cpu: u32, t: Tid, head: bool) {
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
    pub(super) fn insert(&mut self, t: Tid, kind: u32, id: u64, vtime: Option<u64>, enq: u32) {
        self.ts_mut(t).custody = false;
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
                    self.fail_not_allowed(t, cpu);
                    return;
                }
                if !self.sim().online(cpu) && self.ts(t).held_on != Some(cpu) {
                    // ext.c, dispatch_to_local_dsq: a local queue of an
                    // offline CPU is no error; the task goes to the global
                    // queue (task_can_run_on_remote_rq).
                    self.global.fifo.push_back(t);
                    return;
                }
                // ext.c, SCX_ENQ_IMMED: the task goes to the local queue only
                // if the CPU can run it at once (nothing queued there, and
                // the CPU idle or balancing, rq_is_open); otherwise the
                // kernel hands it back to ops.enqueue with SCX_ENQ_REENQ.
                if enq & abi::ENQ_IMMED != 0 && !self.rq_open(cpu, enq) {
                    self.reenq.push((t, cpu));
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

    /// ext.c, rq_is_open, with the IMMED test of dispatch_enqueue: an empty
    /// local queue on a CPU that idles, or balances, or that the insert
    /// preempts.
    fn rq_open(&mut self, cpu: u32, enq: u32) -> bool {
        if !self.local[cpu as usize].is_empty() {
            return false;
        }
        if self.context == Context::Dispatch(cpu) || enq & abi::ENQ_PREEMPT != 0 {
            return true;
        }
        let c = self.sim().cpu(cpu);
        c.curr.is_none() && matches!(c.mode, Mode::Idle | Mode::Waking)
    }

    pub(super) fn dsq(&mut self, kind: u32, id: u64) -> Option<&mut Dsq> {
        match kind {
            abi::DSQ_GLOBAL => Some(&mut self.global),
            abi::DSQ_USER => self.user.get_mut(&id),
            _ => None,
        }
    }
    pub(super) fn dsq_ref(&self, kind: u32, id: u64) -> Option<&Dsq> {
        match kind {
            abi::DSQ_GLOBAL => Some(&self.global),
            abi::DSQ_USER => self.user.get(&id),
            _ => None,
        }
    }
}

impl Kernel {
    /// update_curr_scx: charge the running task's time since it was last
    /// charged, to its runtime and its slice.
    pub(super) fn charge(&mut self, t: Tid) {
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

/// `any_and_distribute` over the first `n` CPUs with the calling CPU's
/// `cursor`, counting the mask words looked at in `scans`.
fn and_distribute(a: &Mask, b: &Mask, n: u32, cursor: &mut u32, scans: &mut u32) -> Option<u32> {
    let words = n.div_ceil(64) as usize;
    // On a busy machine most searches find nothing (two thirds of them in
    // the storm under scx:default): the walk below would look at every word
    // and the first again, so count that and skip it.
    if (0..words).all(|w| a[w] & b[w] == 0) {
        *scans += words as u32 + 1;
        return None;
    }
    // The cursor is a CPU: wrapping needs no division (a quarter of
    // this search's time with `%` in the storm under scx:default).
    let start = if *cursor + 1 < n { *cursor + 1 } else { 0 };
    // From `start` to the end, then from 0 to `start`.
    let (w0, b0) = (start as usize / 64, start % 64);
    for i in 0..=words {
        let w = if w0 + i < words { w0 + i } else { w0 + i - words };
        *scans += 1;
        let mut bits = a[w] & b[w];
        if i == 0 {
            bits &= u64::MAX << b0;
        } else if i == words {
            bits &= !(u64::MAX << b0);
        }
        if bits != 0 {
            let c = (w * 64) as u32 + bits.trailing_zeros();
            if c < n {
                *cursor = c;
                return Some(c);
            }
        }
    }
    None
}
