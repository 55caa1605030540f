// SPDX-License-Identifier: GPL-2.0-only
//! `scx:NAME` as a simulator policy: the simulator's hooks turned into the
//! program's operations, in the order the sched_ext core calls them, with
//! the watchdog and Nest's PM QoS poll.

use super::*;

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

