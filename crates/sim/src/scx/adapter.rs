// SPDX-License-Identifier: GPL-2.0-only
//! `scx:NAME` as a simulator policy: the simulator's hooks turned into the
//! program's operations, in the order the sched_ext core calls them, with
//! the watchdog and Nest's PM QoS poll; and the program's loader (warmcore's
//! settings, or a peer's recipe) run on it.

use super::*;
use super::recipe::Plan;

/// `scx:NAME`: a sched_ext program as a policy (warmcore's own, or a peer's).
pub struct ScxPolicy {
    name: String,
    /// What its loader does: the ops flags it set, and the steps after load
    /// it takes at enable (before ops.init).
    plan: Plan,
    /// A peer's counters (its recipe's `stats` globals); None for warmcore's
    /// program, whose counters are its `stats` map.
    peer_stats: Option<Vec<String>>,
    /// The first guarantee the program broke (the starvation bound).
    broken: Option<String>,
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
    /// Per CPU: a migration-disabled task preempted there, whose
    /// migrate_disable_switch waits for the CPU to run another task.
    switched_out: Vec<Option<Tid>>,
    warmers: bool,
    pmqos: Option<PmQos>,
    /// What loading the program again takes, and how many times the
    /// kernel's exit for CPU hotplug made the host do it.
    reload: Reload,
    restarts: u64,
}

/// The inputs of `ScxPolicy::build`, kept for a restart after CPU hotplug.
struct Reload {
    machine: Machine,
    plan: Plan,
    so: std::borrow::Cow<'static, [u8]>,
    settings: Option<Settings>,
    /// A peer's (or bpf:DIR's) recipe, to make its loader's plan again.
    recipe: Option<Recipe>,
}

/// A recipe as `recipe::plan` reads it: its path as errors name it, its
/// text, the policy's name and its parameters.
#[derive(Clone)]
struct Recipe {
    path: String,
    text: String,
    name: String,
    params: Vec<(String, String)>,
}

/// `--nest-warm pmqos` (and warm's `--warm-poll-cpus`) as `warmcore sched`
/// does it (crates/sched/src/pmqos.rs): every POLL it reads the program's
/// `pmqos_hold` (and `nr_warm`) and holds the CPUs `Settings::holds` names,
/// and for HYSTERESIS those that left, in the polling idle state, where an
/// idle CPU stays in C0 at its frequency and wakes at once.
struct PmQos {
    /// Per CPU: when it was last seen held, if held.
    seen: Vec<Option<u64>>,
    timer: Option<TimerId>,
    settings: Settings,
}

impl PmQos {
    const POLL: u64 = 10_000_000;
    const HYSTERESIS: u64 = 20_000_000;

    fn held(&self, c: u32) -> bool {
        self.seen[c as usize].is_some()
    }
}

/// The starvation bound: 1 simulated second (docs/hunt.md).
const STARVATION_NS: u64 = 1_000_000_000;

/// The watchdog's timer token (program timers use their slot numbers).
const WATCHDOG_TOKEN: u64 = u64::MAX;
/// The PM QoS poll's timer token.
const PMQOS_TOKEN: u64 = u64::MAX - 1;

impl ScxPolicy {
    pub fn new(machine: &Machine, name: &str, params: &[(String, String)]) -> Result<ScxPolicy, SimError> {
        ScxPolicy::with_program(machine, name, params, None)
    }

    /// Every `scx:NAME` there is: warmcore's policies, then the peers (a
    /// peer whose sources were not fetched is named too: it says so).
    pub fn names() -> Vec<String> {
        ScxName::ALL
            .iter()
            .map(|p| format!("scx:{}", p.name()))
            .chain(super::peers::PEERS.iter().map(|p| format!("scx:{}", p.name)))
            .collect()
    }

    /// As `new`, with another host build of the program (`build_variant`).
    pub fn with_program(
        machine: &Machine,
        name: &str,
        params: &[(String, String)],
        shared_object: Option<&[u8]>,
    ) -> Result<ScxPolicy, SimError> {
        ScxPolicy::with_recipe(machine, name, params, shared_object, None)
    }

    /// `bpf:DIR`: the sched_ext program in a directory, with its recipe
    /// (DIR/recipe.toml), built on first use into a cache keyed by its
    /// sources (docs/peers.md, Your own scheduler).
    pub fn from_dir(machine: &Machine, dir: &str, params: &[(String, String)]) -> Result<ScxPolicy, SimError> {
        let label = format!("bpf:{dir}");
        let (so, recipe_path, recipe) = super::dir::build(std::path::Path::new(dir)).map_err(|e| SimError::Input(format!("{label}: {e}")))?;
        let plan = super::recipe::plan(&recipe_path, &recipe, &label, params, &peer_machine(machine, |_| true)).map_err(SimError::Input)?;
        let stats = super::recipe::stats(&recipe);
        let recipe = Recipe { path: recipe_path, text: recipe, name: label.clone(), params: params.to_vec() };
        ScxPolicy::build(machine, label, plan, so.into(), None, Some(stats), Some(recipe))
    }

    /// As `with_program`, and for a peer with another recipe: (its path as
    /// errors name it, its text).
    pub fn with_recipe(
        machine: &Machine,
        name: &str,
        params: &[(String, String)],
        shared_object: Option<&[u8]>,
        recipe: Option<(&str, &str)>,
    ) -> Result<ScxPolicy, SimError> {
        let topo = topology(machine);
        // The loader: a peer's recipe, or warmcore's settings.
        let (plan, so, settings, peer_stats, recipe) = match super::peers::find(name) {
            Some(peer) => {
                let so: std::borrow::Cow<'static, [u8]> = match (shared_object, peer.so) {
                    (Some(so), _) => so.to_vec().into(),
                    (None, Some(so)) => so.into(),
                    (None, None) => {
                        return Err(SimError::Input(format!(
                            "scx:{name}: the sources of {} {} were not fetched when warmcore was built: run `cargo fetch --manifest-path peers/Cargo.toml` and build again",
                            peer.krate, peer.version
                        )))
                    }
                };
                let default_path = super::peers::recipe_name(peer);
                let (path, text) = recipe.unwrap_or((&default_path, peer.recipe));
                let plan = super::recipe::plan(path, text, name, params, &peer_machine(machine, |_| true)).map_err(SimError::Input)?;
                let recipe = Recipe { path: path.to_string(), text: text.to_string(), name: name.to_string(), params: params.to_vec() };
                (plan, so, None, Some(super::recipe::stats(text)), Some(recipe))
            }
            None => {
                if ScxName::from_name(name).is_none() {
                    return Err(SimError::Input(format!(
                        "unknown sched_ext policy 'scx:{name}'; valid: {}",
                        ScxPolicy::names().join(", ")
                    )));
                }
                let settings = Settings::from_params(name, params).map_err(SimError::Input)?;
                let plan = super::loader::warmcore_plan(&settings, &topo);
                let so = shared_object.map_or(program::SHARED_OBJECT.into(), |so| so.to_vec().into());
                (plan, so, Some(settings), None, None)
            }
        };
        ScxPolicy::build(machine, format!("scx:{name}"), plan, so, settings, peer_stats, recipe)
    }

    /// A program with its loader's plan, as `label` (scx:NAME, bpf:DIR);
    /// `settings` (warmcore's program) or `recipe` (a peer's, bpf:DIR's)
    /// make the plan again at a restart.
    fn build(
        machine: &Machine,
        label: String,
        plan: Plan,
        so: std::borrow::Cow<'static, [u8]>,
        settings: Option<Settings>,
        peer_stats: Option<Vec<String>>,
        recipe: Option<Recipe>,
    ) -> Result<ScxPolicy, SimError> {
        let name = label.as_str();
        if machine.nr_cpus > 1024 {
            return Err(SimError::Input(format!("{name}: {} CPUs; the programs handle at most 1024", machine.nr_cpus)));
        }
        let topo = topology(machine);
        // Boxed: the kernel keeps a pointer to its entry points.
        let mut prog = Box::new(Program::load_from(&so).map_err(|e| SimError::Input(format!("{name}: {e}")))?);
        let n = machine.nr_cpus as usize;
        let fns: *const program::Fns = &prog.f;
        let llc_masks: Vec<Mask> = machine.die_cpus.iter().map(|cpus| mask_of(cpus.iter().copied())).collect();
        let node_masks: Vec<Mask> = machine.socket_cpus.iter().map(|cpus| mask_of(cpus.iter().copied())).collect();
        // ext_idle.c, scx_idle_update_selcpu_topology: the NUMA step when
        // nodes hold more than one LLC, unless the idle masks are per node.
        let numa_step = node_masks.len() > 1 && node_masks.len() != llc_masks.len() && !plan.flags.builtin_idle_per_node;
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
            llc_masks,
            cpu_node: machine.cpu_socket.clone(),
            per_node: plan.flags.builtin_idle_per_node,
            node_views: node_masks.iter().map(|_| [Box::new([0; abi::MASK_WORDS]), Box::new([0; abi::MASK_WORDS])]).collect(),
            node_masks,
            numa_step,
            max_khz: machine.max_khz(),
            tasks: Vec::new(),
            pid_tid: BTreeMap::new(),
            local: vec![VecDeque::new(); n],
            global: Dsq::default(),
            user: UserDsqs::default(),
            dispatched: 0,
            idle_cpu: Box::new([0; abi::MASK_WORDS]),
            none_mask: Box::new([0; abi::MASK_WORDS]),
            idle_smt: Box::new([0; abi::MASK_WORDS]),
            told_idle: vec![true; n],
            cursor: vec![0; n],
            // SAFETY: a constant of the program's build.
            cpuperf_one: unsafe { (prog.f.cpuperf_one)() },
            iters: Vec::new(),
            timers: Vec::new(),
            error: None,
            locked: None,
            reenq: Vec::new(),
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
            cpu_curr: k_cpu_curr,
            task_running: k_task_running,
            create_dsq: k_create_dsq,
            dsq_insert: k_dsq_insert,
            dsq_move_to_local: k_dsq_move_to_local,
            dsq_nr_queued: k_dsq_nr_queued,
            dsq_peek: k_dsq_peek,
            dsq_iter_new: k_dsq_iter_new,
            dsq_iter_next: k_dsq_iter_next,
            dsq_iter_destroy: k_dsq_iter_destroy,
            dsq_move: k_dsq_move,
            kick_cpu: k_kick_cpu,
            test_and_clear_cpu_idle: k_test_and_clear_cpu_idle,
            pick_idle_cpu: k_pick_idle_cpu,
            any_and_distribute: k_any_and_distribute,
            select_cpu_and: k_select_cpu_and,
            idle_mask: k_idle_mask,
            cpuperf_cur: k_cpuperf_cur,
            cpuperf_set: k_cpuperf_set,
            timer_start: k_timer_start,
            timer_cancel: k_timer_cancel,
            error: k_error,
        });
        let (node, llc_id, llc_size) = host_topology(machine);
        let topo_c = TopologyC {
            nr_cpus: machine.nr_cpus,
            nr_nodes: machine.nr_sockets(),
            cpu_node: node.as_ptr(),
            llc_id: llc_id.as_ptr(),
            llc_size: llc_size.as_ptr(),
        };
        prog.attach(&*ops, &topo_c).map_err(|e| SimError::Input(format!("{name}: {e}")))?;

        // What the loader writes before load; every name it uses after.
        super::loader::check(&prog, &plan).map_err(|e| SimError::Input(format!("{name}: {e}")))?;
        for w in &plan.rodata {
            super::loader::write(&mut prog, w).map_err(|e| SimError::Input(format!("{name}: {e}")))?;
        }
        let reload = Reload { machine: machine.clone(), plan: plan.clone(), so, settings: settings.clone(), recipe };
        let nest = settings.as_ref().is_some_and(|s| s.policy == ScxName::Nest);
        let warm = settings.as_ref().map_or(NestWarm::Off, |s| s.warm(&topo));
        // SAFETY: constants of the program's build.
        let (mut ops_mask, timeout_ms) = unsafe { ((prog.f.ops_mask)(), (prog.f.timeout_ms)()) };
        // warmcore's loader registers update_idle for Nest only.
        if settings.is_some() && !nest {
            ops_mask &= !abi::OP_UPDATE_IDLE;
        }
        Ok(ScxPolicy {
            name: label.clone(),
            broken: None,
            plan,
            peer_stats,
            _ops: ops,
            k,
            prog,
            ops_mask,
            update_idle: ops_mask & abi::OP_UPDATE_IDLE != 0,
            timeout_ns: timeout_ms as u64 * 1_000_000,
            watchdog: None,
            prev: vec![None; n],
            balanced: vec![None; n],
            switched_out: vec![None; n],
            warmers: warm == NestWarm::Threads,
            pmqos: match settings {
                Some(s) if warm == NestWarm::Pmqos => Some(PmQos { seen: vec![None; n], timer: None, settings: s }),
                _ => None,
            },
            reload,
            restarts: 0,
        })
    }

    /// Report these globals of the program too, with a peer's counters
    /// (for tests of variants).
    #[doc(hidden)]
    pub fn report(&mut self, globals: &[&str]) {
        self.peer_stats.get_or_insert_with(Vec::new).extend(globals.iter().map(|g| g.to_string()));
    }

    /// Run a SEC("syscall") program of the program with these members of
    /// its argument, as its loader would: its return value (for tests; the
    /// program must not call into the running simulation).
    #[doc(hidden)]
    pub fn run_syscall(&mut self, name: &str, args: &[(&str, i64)]) -> Result<i32, String> {
        let s = self.prog.syscall(name).ok_or_else(|| format!("no syscall program {name}"))?;
        let mut buf = vec![0u8; s.arg_size.max(8)];
        for (k, v) in args {
            let (_, off, size) = s.fields.iter().find(|(f, _, _)| f == k).cloned().ok_or_else(|| format!("no member {k}"))?;
            buf[off..off + size].copy_from_slice(&v.to_le_bytes()[..size]);
        }
        Ok(self.prog.run_syscall(&s, &mut buf))
    }

    /// A load-time global of the program as its loader set it (element
    /// `index`), for the tests that compare it with `warmcore sched`'s.
    #[doc(hidden)]
    pub fn global(&self, name: &str, index: u32) -> Option<u64> {
        self.prog.get(name, index)
    }

    /// Run one of the program's operations on `cpu`, in `context`, with
    /// run queue `rq` locked (None: unlocked).
    fn call<R>(
        &mut self,
        sim: &mut Sim,
        cpu: u32,
        rq: Option<u32>,
        context: Context,
        f: impl FnOnce(&program::Fns) -> R,
    ) -> R {
        self.k.cpu = cpu;
        self.k.context = context;
        self.k.locked = rq;
        let fns = &self.prog.f;
        let r = Self::with_sim(&mut self.k, sim, |_| f(fns));
        self.k.context = Context::Other;
        self.k.locked = None;
        if let Some(e) = self.k.error.take() {
            self.eject(sim, e);
        }
        self.flush_reenq(sim);
        r
    }

    /// ext.c, SCX_ENQ_IMMED: the tasks an insert could not run at once go
    /// back to ops.enqueue with SCX_ENQ_REENQ, on the CPU they were meant
    /// for, after the operation that inserted them.
    fn flush_reenq(&mut self, sim: &mut Sim) {
        let mut rounds = 0;
        while !self.k.reenq.is_empty() && sim.abort.is_none() {
            rounds += 1;
            if rounds > 1000 {
                self.eject(sim, "a task was handed back to ops.enqueue (SCX_ENQ_IMMED) 1000 times in a row".into());
                return;
            }
            let (t, cpu) = self.k.reenq.remove(0);
            if self.k.tasks[t as usize].is_none() || sim.task(t).state != TState::Runnable {
                continue;
            }
            self.enqueue_op(sim, t, cpu, abi::ENQ_REENQ);
        }
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
        if self.ops_mask & abi::OP_EXIT == 0 {
            self.k.error = None;
            sim.abort(format!("{} ejected at {} ns: {why}", self.name, sim.now()));
            return;
        }
        // SAFETY: a NUL-terminated message; the program is attached.
        Self::with_sim(&mut self.k, sim, |_| unsafe { exit(abi::EXIT_ERROR, msg.as_ptr()) });
        self.k.error = None;
        sim.abort(format!("{} ejected at {} ns: {why}", self.name, sim.now()));
    }

    fn p(&self, t: Tid) -> TaskPtr {
        self.k.ts(t).p
    }

    /// The task's nice value, policy and sched_ext weight into its
    /// task_struct: `p->scx.weight` is the load weight on the cgroup scale,
    /// WEIGHT_IDLEPRIO's 1 for SCHED_IDLE (kernel/sched/ext.c,
    /// scx_enable_task and reweight_task_scx, since 6.11).
    fn set_prio(&mut self, sim: &Sim, t: Tid) {
        use crate::prio::{cgroup_weight, load_weight, SCHED_IDLE, SCHED_NORMAL};
        let task = sim.task(t);
        let policy = if task.sched_idle { SCHED_IDLE } else { SCHED_NORMAL };
        let w = cgroup_weight(load_weight(task.nice, task.sched_idle));
        // SAFETY: p is live.
        unsafe { (self.prog.f.task_set_prio)(self.p(t), task.nice as c_int, policy, w) };
    }

    /// The task's allowed CPUs as the simulator has them, into the kernel
    /// side and the program's task_struct (cpus_mask, nr_cpus_allowed).
    fn copy_cpus(&mut self, sim: &Sim, t: Tid) {
        let m: Mask = match &sim.task(t).cpus {
            Some(words) => {
                let mut m = [0u64; 16];
                for (d, w) in m.iter_mut().zip(words.iter()) {
                    *d = *w;
                }
                m
            }
            None => self.k.all,
        };
        let p = self.p(t);
        // SAFETY: p is live; the mask holds 16 words.
        unsafe { (self.prog.f.task_set_cpus)(p, m.as_ptr(), m.len() as u32) };
        self.k.ts_mut(t).cpus = sim.task(t).cpus.is_some().then(|| Box::new(m));
    }

    /// The starvation bound every scheduler must meet (docs/hunt.md): a
    /// task runnable for more than STARVATION_NS while a CPU it may use
    /// was idle all that time ends the run. Checked when it starts running
    /// and at the watchdog's rounds, so no event of the run changes.
    fn check_starvation(&mut self, sim: &mut Sim, t: Tid, at: u64) {
        let now = sim.now();
        if now.saturating_sub(at) <= STARVATION_NS {
            return;
        }
        let idle = (0..self.k.nr_cpus).find(|&c| {
            let cpu = sim.cpu(c);
            // Idle, whatever tasks the program left queued for it.
            sim.may_run(t, c)
                && cpu.mode == Mode::Idle
                && now.saturating_sub(cpu.idle_since.max(at)) > STARVATION_NS
        });
        if let Some(c) = idle {
            let why = format!(
                "broken guarantee: starvation: {} waited runnable for {:.3}s while CPU {c}, which it may use, was idle",
                sim.task(t).who(),
                (now - at) as f64 * 1e-9
            );
            // Kept, and the run goes on: the kernel would not eject the
            // scheduler for it, and its watchdog may still (Policy::broken).
            if self.broken.is_none() {
                self.broken = Some(format!("{} at {} ns: {why}", self.name, now));
            }
        }
    }

    /// balance_one: is there a next task for `cpu` in its local queue, after
    /// the global queue and up to 32 rounds of ops.dispatch?
    fn balance(&mut self, sim: &mut Sim, cpu: u32, prev: Option<Tid>) -> bool {
        let c = cpu as usize;
        if !self.k.local[c].is_empty() {
            return true;
        }
        if !sim.online(cpu) {
            // balance_one: an offline run queue neither consumes the global
            // queue (task_can_run_on_remote_rq) nor asks ops.dispatch.
            return false;
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
            self.call(sim, cpu, Some(cpu), Context::Dispatch(cpu), |f| unsafe { (f.dispatch)(cpu as c_int, prev_p) });
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

    /// The watchdog's runnable_at (set when the task becomes runnable).
    fn note_runnable(&mut self, sim: &mut Sim, t: Tid) {
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
        let marked: Vec<bool> = match self.prog.global_bytes("pmqos_hold", n) {
            Some(bytes) => bytes.iter().map(|&b| b != 0).collect(),
            None => vec![false; n],
        };
        let nr_warm = self.prog.global_u64("nr_warm").unwrap_or(0);
        let Some(q) = self.pmqos.as_mut() else { return };
        for c in 0..self.k.nr_cpus {
            let hold = q.settings.holds(marked[c as usize], nr_warm);
            let seen = &mut q.seen[c as usize];
            if hold {
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
        let waiting: Vec<(Tid, u64)> =
            self.k.tasks.iter().enumerate().filter_map(|(t, s)| Some((t as Tid, s.as_ref()?.runnable_at?))).collect();
        for &(t, at) in &waiting {
            if now - at > self.timeout_ns {
                let why = format!("runnable task stall: {} failed to run for {:.3}s", sim.task(t).who(), (now - at) as f64 * 1e-9);
                self.eject(sim, why);
                return;
            }
        }
        for &(t, at) in &waiting {
            if sim.task(t).state == TState::Runnable {
                self.check_starvation(sim, t, at);
            }
        }
        let waiting = !waiting.is_empty();
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
        // The loader's PM QoS writes, read by the cpuidle governor.
        for (c, l) in self.plan.resume_latency_us.iter().enumerate() {
            sim.set_resume_latency(c as u32, *l);
        }
        // What the loader does after load and before it attaches the
        // scheduler, on the CPU it runs on (CPU 0).
        let actions = std::mem::take(&mut self.plan.after_load);
        for a in &actions {
            let prog = &mut self.prog;
            let r = Self::with_sim(&mut self.k, sim, |_| super::loader::act(prog, a));
            let err = self.k.error.take().or(r.err());
            if let Some(e) = err {
                sim.abort(format!("{}: its loader failed: {e}", self.name));
                return;
            }
        }
        // SAFETY: the program is attached.
        let r = if self.ops_mask & abi::OP_INIT != 0 { self.call(sim, 0, None, Context::Other, |f| unsafe { (f.init)() }) } else { 0 };
        if r != 0 {
            self.eject(sim, format!("ops.init failed ({r})"));
            return;
        }
        // ext.c, scx_cgroup_init: ops.cgroup_init of every cgroup (here the
        // root), after ops.init and before any task's ops.init_task.
        if self.ops_mask & abi::OP_CGROUP_INIT != 0 {
            // SAFETY: the program is attached.
            let r = self.call(sim, 0, None, Context::Other, |f| unsafe { (f.cgroup_init)() });
            if r != 0 {
                self.eject(sim, format!("ops.cgroup_init failed ({r})"));
                return;
            }
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
        let (pinned, narrowed) = (task.pinned, task.cpus.is_some());
        let prio_set = task.nice != 0 || task.sched_idle;
        // SAFETY: a new task of this program's copy.
        let p = unsafe { (self.prog.f.task_new)(t, pid, pinned.map_or(-1, |c| c as c_int)) };
        if self.k.tasks.len() <= t as usize {
            self.k.tasks.resize_with(t as usize + 1, || None);
        }
        self.k.tasks[t as usize] =
            Some(TaskState { p, runtime: 0, charged_at: 0, pinned, cpus: None, held_on: None, direct: None, selected: false, runnable_at: None, custody: false, one_cpu: false });
        self.k.pid_tid.insert(pid, t);
        if prio_set {
            self.set_prio(sim, t);
        }
        if narrowed {
            // A child inherits its parent's allowed CPUs (dup_task_struct),
            // before the program sees it.
            self.copy_cpus(sim, t);
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
        let r = if self.ops_mask & abi::OP_INIT_TASK != 0 {
            self.call(sim, cpu, None, Context::Other, |f| unsafe { (f.init_task)(p, parent.is_some() as u32) })
        } else {
            0
        };
        if r != 0 {
            self.eject(sim, format!("ops.init_task failed ({r})"));
            return;
        }
        if self.ops_mask & abi::OP_ENABLE != 0 {
            // SAFETY: p is live.
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.enable)(p) });
        }
    }

    // The program defines no ops.set_weight: the kernel only updates the
    // task's weight, which the program reads when it charges a run
    // (set_user_nice).
    fn set_nice(&mut self, sim: &mut Sim, t: Tid) {
        self.change(sim, t, |s, sim| s.set_prio(sim, t));
    }

    /// migrate_disable and migrate_enable: p->migration_disabled, and the
    /// kernel's side holds the task to its CPU meanwhile. migrate_enable
    /// gives back a mask narrowed at a switch-out (core.c: when
    /// `p->cpus_ptr != &p->cpus_mask`, __set_cpus_allowed_ptr with
    /// SCA_MIGRATE_ENABLE, so ops.set_cpumask with the task's own mask)
    /// before it clears p->migration_disabled.
    fn set_migration_disabled(&mut self, sim: &mut Sim, t: Tid) {
        let task = sim.task(t);
        let (depth, cpu) = (task.migration_disabled, task.cpu);
        if depth == 0 && self.k.ts(t).one_cpu {
            self.change(sim, t, |s, sim| s.set_cpus_ptr(sim, t, None));
        }
        self.k.ts_mut(t).held_on = (depth > 0).then_some(cpu);
        // SAFETY: p is live.
        unsafe { (self.prog.f.task_set_migration_disabled)(self.p(t), depth) };
    }

    /// core.c, __do_set_cpus_allowed: the mask changes (set_cpus_allowed_scx
    /// calls ops.set_cpumask) inside a property change (`change`), which
    /// puts a queued task on an allowed CPU if its own left the set
    /// (affine_move_task, move_queued_task). A running task is moved by the
    /// engine; a sleeping one is placed at its wake-up.
    fn set_cpumask(&mut self, sim: &mut Sim, t: Tid) {
        self.change(sim, t, |s, sim| {
            // A daemon pinned to a CPU going offline loses its pin
            // (select_fallback_rq, engine/hotplug.rs).
            s.k.ts_mut(t).pinned = sim.task(t).pinned;
            s.copy_cpus(sim, t);
            s.tell_cpumask(sim, t);
        });
    }

    fn exit_task(&mut self, sim: &mut Sim, t: Tid) {
        let p = self.p(t);
        let cpu = sim.task(t).cpu;
        if self.ops_mask & abi::OP_EXIT_TASK != 0 {
            // SAFETY: p is live until freed below.
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.exit_task)(p) });
        }
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
        self.k.ts_mut(t).selected = false;
        if w.kind == WakeKind::Exec {
            return prev;
        }
        if let Some(c) = self.k.only_cpu(t) {
            return c;
        }
        // core.c: a wake-up whose CPU select_task_rq chose is enqueued with
        // ENQUEUE_RQ_SELECTED (SCX_ENQ_CPU_SELECTED); a fork's is not.
        self.k.ts_mut(t).selected = w.kind == WakeKind::Wakeup;
        self.k.ts_mut(t).direct = None;
        let p = self.p(t);
        let wake = if w.kind == WakeKind::Fork { abi::WAKE_FORK } else { abi::WAKE_TTWU };
        // The program runs natively, so its instructions are not counted:
        // the placement pays for the CPUs the kernel's helpers looked at.
        self.k.scans = 0;
        let cpu = if self.ops_mask & abi::OP_SELECT_CPU != 0 {
            // SAFETY: p is live.
            self.call(sim, w.waker_cpu, None, Context::SelectCpu(t), |f| unsafe {
                (f.select_cpu)(p, prev as c_int, wake, w.sync as u32)
            })
        } else {
            // ext.c, select_task_rq_scx without ops.select_cpu: the built-in
            // selection, and a direct dispatch to the CPU it found idle.
            self.k.cpu = w.waker_cpu;
            let found = Self::with_sim(&mut self.k, sim, |k| k.select_cpu(t, prev, w.sync, None, false));
            if let Some(c) = found {
                // SAFETY: p is live; SCX_SLICE_DFL is 20 ms.
                unsafe { (self.prog.f.task_set_slice)(p, 20_000_000) };
                self.k.ts_mut(t).direct = Some((abi::DSQ_LOCAL, 0, 0, None));
                c as c_int
            } else {
                prev as c_int
            }
        };
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
        self.note_runnable(sim, t);
        let p = self.p(t);
        // SAFETY: p is live.
        unsafe { (self.prog.f.task_set_state)(p, 1, 0) };
        if flags == Enq::Exec {
            if let Some(r) = (0..self.prev.len()).find(|&r| self.prev[r] == Some(t) && r != cpu as usize) {
                // Moved off CPU r while it ran (affine_move_task's stopper):
                // r balances again without it, its prev being the stopper,
                // and the task is enqueued on its new CPU (move_queued_task:
                // ops.enqueue, no ops.runnable).
                self.balanced[r] = None;
                self.prev[r] = None;
                self.enqueue_op(sim, t, cpu, 0);
                return;
            }
        }
        if matches!(flags, Enq::Preempted | Enq::Exec) {
            // put_prev_task_scx: the balance ran at stopping (ext.c: balance
            // before put_prev). No ops.runnable: the task stayed runnable.
            let found = self.balanced[cpu as usize].unwrap_or(true);
            // SAFETY: p is live.
            let slice = unsafe { (self.prog.f.task_slice)(p) };
            if slice > 0 {
                // Preempted with slice left: it stays first in line.
                self.k.local[cpu as usize].push_front(t);
                return;
            }
            if !found && !self.plan.flags.enq_last {
                // balance_one without SCX_OPS_ENQ_LAST: nothing else to run,
                // so the task keeps the CPU with a default slice.
                // SAFETY: p is live; SCX_SLICE_DFL is 20 ms.
                unsafe { (self.prog.f.task_set_slice)(p, 20_000_000) };
                self.k.local[cpu as usize].push_front(t);
                return;
            }
            let last = if found { 0 } else { abi::ENQ_LAST };
            self.enqueue_op(sim, t, cpu, last);
            return;
        }
        let mut enq = if flags == Enq::Wakeup { abi::ENQ_WAKEUP } else { 0 };
        if std::mem::take(&mut self.k.ts_mut(t).selected) {
            enq |= abi::ENQ_CPU_SELECTED;
        }
        let here = if matches!(flags, Enq::Wakeup | Enq::New) { self.k.cpu } else { cpu };
        // enqueue_task_scx: ops.runnable, then the direct dispatch or
        // ops.enqueue (do_enqueue_task).
        if self.ops_mask & abi::OP_RUNNABLE != 0 {
            // SAFETY: p is live.
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.runnable)(p, enq) });
        }
        if let Some((kind, id, denq, vtime)) = self.k.ts_mut(t).direct.take() {
            // A direct dispatch from select_cpu: LOCAL is the selected CPU.
            Self::with_sim(&mut self.k, sim, |k| k.insert(t, kind, id, vtime, denq));
            if let Some(e) = self.k.error.take() {
                self.eject(sim, e);
            }
            self.flush_reenq(sim);
            return;
        }
        self.enqueue_op(sim, t, here, enq);
    }

    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid> {
        let c = cpu as usize;
        // balance_one passes prev only when it ran on this CPU in the same
        // __schedule (`prev_on_scx`); a CPU that idles has the idle task as
        // prev when it next schedules, so ops.dispatch then gets none.
        let prev = self.prev[c].take();
        let found = match self.balanced[c].take() {
            Some(f) => f || !self.k.local[c].is_empty(),
            None => self.balance(sim, cpu, prev),
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
        if let Some(at) = self.k.ts(t).runnable_at {
            self.check_starvation(sim, t, at);
        }
        let s = self.k.ts_mut(t);
        s.runnable_at = None;
        s.charged_at = now;
        let p = s.p;
        self.prev[cpu as usize] = None;
        if let Some(u) = self.switched_out[cpu as usize].take().filter(|&u| u != t) {
            self.migrate_disable_switch(sim, u);
        }
        // SAFETY: p is live.
        unsafe { (self.prog.f.task_set_state)(p, 1, 0) };
        if self.ops_mask & abi::OP_RUNNING != 0 {
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.running)(p) });
        }
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
        if self.ops_mask & abi::OP_STOPPING != 0 {
            // SAFETY: p is live.
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.stopping)(p, runnable as u32) });
        }
        // dequeue_task_scx: a task that sleeps or exits stops running first
        // (ops.stopping, above), then is no longer runnable: ops.quiescent
        // with SCX_DEQ_SLEEP.
        if !runnable && self.ops_mask & abi::OP_QUIESCENT != 0 {
            // SAFETY: p is live.
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.quiescent)(p, abi::DEQ_SLEEP) });
        }
        if sim.task(t).migration_disabled > 0 && !exiting {
            // migrate_disable_switch runs once the CPU switches to another
            // task: now for a task that blocks, at the next task's start (or
            // the CPU's idling) for a preempted one, which may run again
            // at once (prev == next: no switch).
            if runnable {
                self.switched_out[cpu as usize] = Some(t);
            } else {
                self.migrate_disable_switch(sim, t);
            }
        }
    }

    fn tick(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        Self::with_sim(&mut self.k, sim, |k| k.charge(t));
        let p = self.p(t);
        if self.ops_mask & abi::OP_TICK != 0 {
            // SAFETY: p is live.
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.tick)(p) });
        }
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
        // An offline CPU is in no idle mask the program sees.
        self.k.set_idle(cpu, idle && sim.online(cpu));
        let c = cpu as usize;
        if let Some(u) = self.switched_out[c].take().filter(|_| idle) {
            self.migrate_disable_switch(sim, u);
        }
        if self.k.told_idle[c] == idle {
            return;
        }
        self.k.told_idle[c] = idle;
        if self.update_idle {
            // SAFETY: the program is attached; the CPU is valid.
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.update_idle)(cpu as c_int, idle as u32) });
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
        self.call(sim, cpu, None, Context::Other, |f| unsafe { (f.timer_fire)(slot as u32) });
    }

    fn broken(&self) -> Option<String> {
        self.broken.clone()
    }

    /// ext.c, scx_rq_deactivate (handle_hotplug): ops.cpu_offline if the
    /// program has it, then balance_push moves the CPU's queued tasks
    /// (move_queued_task: out of their queue, ops.dequeue if the program
    /// holds them, and ops.enqueue on select_fallback_rq's CPU). Without
    /// it the kernel exits the scheduler to be loaded again.
    fn cpu_offline(&mut self, sim: &mut Sim, cpu: u32) {
        self.k.set_idle(cpu, false);
        if self.ops_mask & abi::OP_CPU_OFFLINE == 0 {
            self.restart(sim, cpu, false);
            return;
        }
        // SAFETY: the program is attached; the CPU is valid.
        self.call(sim, cpu, None, Context::Other, |f| unsafe { (f.cpu_offline)(cpu as c_int) });
        // The CPU leaves cpu_online_mask after ops.cpu_offline: the kernel
        // calls it at CPUHP_AP_ACTIVE (sched_cpu_deactivate), before
        // takedown_cpu's __cpu_disable clears the CPU (set_cpu_online).
        // SAFETY: the program is attached.
        unsafe { (self.prog.f.set_online)(cpu as c_int, false) };
        for t in 0..sim.nr_tasks() {
            let task = sim.task(t);
            if task.cpu != cpu || task.state != TState::Runnable || task.migration_disabled > 0 || sim.abort.is_some() {
                continue;
            }
            if self.dequeue_save(sim, t) {
                let to = sim.fallback_cpu(t, cpu);
                sim.set_task_cpu(t, to);
                self.enqueue_op(sim, t, to, 0);
            }
        }
    }

    /// ext.c, scx_rq_activate (handle_hotplug): ops.cpu_online, or the
    /// scheduler's exit to be loaded again.
    fn cpu_online(&mut self, sim: &mut Sim, cpu: u32) {
        let idle = sim.cpu(cpu).mode == Mode::Idle;
        self.k.set_idle(cpu, idle);
        if self.ops_mask & abi::OP_CPU_ONLINE == 0 {
            self.restart(sim, cpu, true);
            return;
        }
        // The CPU is in cpu_online_mask before ops.cpu_online: the kernel
        // sets it (set_cpu_online, in the CPU's bring-up) before
        // CPUHP_AP_ACTIVE's sched_cpu_activate calls the operation.
        // SAFETY: the program is attached.
        unsafe { (self.prog.f.set_online)(cpu as c_int, true) };
        // SAFETY: the program is attached; the CPU is valid.
        self.call(sim, cpu, None, Context::Other, |f| unsafe { (f.cpu_online)(cpu as c_int) });
    }

    fn stats(&self) -> serde_json::Value {
        let mut m = match &self.peer_stats {
            Some(names) => {
                let mut m = serde_json::Map::new();
                for g in names {
                    if let Some(v) = self.prog.get(g, 0) {
                        m.insert(g.clone(), v.into());
                    }
                }
                m
            }
            None => self.counters(),
        };
        // Also when the watchdog ejected the scheduler afterwards.
        if let Some(b) = &self.broken {
            m.insert("broken_guarantee".into(), b.clone().into());
        }
        if self.peer_stats.is_some() {
            return serde_json::Value::Object(m);
        }
        if self.restarts > 0 {
            m.insert("hotplug_restarts".into(), self.restarts.into());
        }
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
    /// The kernel exits the scheduler for CPU `cpu` going online or offline
    /// (ext.c, handle_hotplug: SCX_EXIT_UNREG_KERN with SCX_ECODE_ACT_RESTART
    /// | SCX_ECODE_RSN_HOTPLUG) and its loader loads it again, as `warmcore
    /// sched` and the scx schedulers do on that code (crates/sched/src/lib.rs,
    /// Ended::Restart). ASSUMPTION (docs/sched-ext-in-the-simulator.md, CPU
    /// hotplug): the reload takes no simulated time, so no task runs in the
    /// fair class meanwhile; the old program sees ops.exit_task of every task
    /// and ops.exit (scx_disable), the new one ops.init, ops.init_task and
    /// ops.enable of every task, and ops.runnable and ops.enqueue of every
    /// queued one (scx_enable's switch of each task into the class); a
    /// running task goes on running, with ops.running.
    fn restart(&mut self, sim: &mut Sim, cpu: u32, online: bool) {
        let why = format!("cpu {cpu} going {}, exiting scheduler", if online { "online" } else { "offline" });
        let live: Vec<Tid> = (0..sim.nr_tasks()).filter(|&t| sim.task(t).state != TState::Dead).collect();
        for &t in &live {
            if self.k.tasks.get(t as usize).is_some_and(Option::is_some) {
                self.exit_task(sim, t);
            }
        }
        if self.ops_mask & abi::OP_EXIT != 0 {
            let msg = CString::new(why.clone()).unwrap();
            let exit = self.prog.f.exit;
            // SAFETY: a NUL-terminated message; the program is attached.
            Self::with_sim(&mut self.k, sim, |_| unsafe { exit(abi::EXIT_HOTPLUG, msg.as_ptr()) });
        }
        // The old program's timers die with it.
        let armed = self.k.timers.iter().flatten().map(|&(id, _)| id);
        let ours = [self.watchdog, self.pmqos.as_ref().and_then(|q| q.timer)];
        for id in armed.chain(ours.into_iter().flatten()).collect::<Vec<_>>() {
            sim.cancel_timer(id);
        }
        let r = &self.reload;
        let mut plan = r.plan.clone();
        if let Some(settings) = &r.settings {
            // warmcore sched starts again on the CPUs now online: scx_utils'
            // topology lists only those (a core is named by its first
            // online CPU), and an offline CPU keeps the core MAX_CPUS and
            // LLC 0 (crates/sched/src/lib.rs, topology).
            let m = &r.machine;
            let mut topo = topology(m);
            for c in 0..m.nr_cpus {
                let first = m.core_cpus[m.cpu_core[c as usize] as usize].iter().copied().filter(|&s| sim.online(s)).min();
                topo.core[c as usize] = if sim.online(c) { first.unwrap_or(c) } else { warmcore_sched_settings::MAX_CPUS };
                if !sim.online(c) {
                    topo.llc[c as usize] = 0;
                }
            }
            plan = super::loader::warmcore_plan(settings, &topo);
        } else if let Some(rc) = &r.recipe {
            // A peer's loader starts again on the CPUs now online: its
            // recipe reads scx_utils' topology (sysfs), which lists only
            // those.
            let m = super::peer_machine(&r.machine, |c| sim.online(c));
            match super::recipe::plan(&rc.path, &rc.text, &rc.name, &rc.params, &m) {
                Ok(p) => plan = p,
                Err(e) => {
                    sim.abort(format!("{}: its loader's plan after CPU hotplug ({why}): {e}", self.name));
                    return;
                }
            }
        }
        let new = ScxPolicy::build(&r.machine, self.name.clone(), plan, r.so.clone(), r.settings.clone(), self.peer_stats.clone(), r.recipe.clone());
        let mut new = match new {
            Ok(p) => p,
            Err(e) => {
                sim.abort(format!("{}: loading it again after CPU hotplug ({why}) failed: {e}", self.name));
                return;
            }
        };
        new.restarts = self.restarts + 1;
        new.broken = self.broken.take();
        *self = new;
        // The new copy sees cpu_online_mask as the machine has it now,
        // from ops.init on (bpfland's and flash's init read it).
        for c in (0..self.k.nr_cpus).filter(|&c| !sim.online(c)) {
            // SAFETY: the program is attached; the CPU is valid.
            unsafe { (self.prog.f.set_online)(c as c_int, false) };
        }
        self.init(sim);
        for c in 0..self.k.nr_cpus {
            let idle = sim.cpu(c).mode == Mode::Idle;
            self.k.set_idle(c, idle && sim.online(c));
            self.k.told_idle[c as usize] = idle;
        }
        for &t in &live {
            if sim.abort.is_some() {
                return;
            }
            self.init_task(sim, t, None);
            if sim.task(t).migration_disabled > 0 {
                self.set_migration_disabled(sim, t);
            }
            let task = sim.task(t);
            let (state, at) = (task.state, task.cpu);
            let p = self.p(t);
            match state {
                TState::Running => {
                    // SAFETY: p is live.
                    unsafe { (self.prog.f.task_set_state)(p, 1, 0) };
                    if self.ops_mask & abi::OP_RUNNABLE != 0 {
                        // SAFETY: p is live.
                        self.call(sim, at, Some(at), Context::Other, |f| unsafe { (f.runnable)(p, 0) });
                    }
                    self.running(sim, t, at);
                }
                TState::Runnable => {
                    if !sim.may_run(t, at) {
                        let to = sim.fallback_cpu(t, at);
                        sim.set_task_cpu(t, to);
                    }
                    let at = sim.task(t).cpu;
                    self.note_runnable(sim, t);
                    // SAFETY: p is live.
                    unsafe { (self.prog.f.task_set_state)(p, 1, 0) };
                    if self.ops_mask & abi::OP_RUNNABLE != 0 {
                        // SAFETY: p is live.
                        self.call(sim, at, Some(at), Context::Other, |f| unsafe { (f.runnable)(p, 0) });
                    }
                    self.enqueue_op(sim, t, at, 0);
                    sim.kick(at);
                }
                TState::Blocked | TState::Dead => {}
            }
        }
    }

    /// A change of a task's properties as core.c makes one (set_user_nice,
    /// __do_set_cpus_allowed): a runnable task is dequeued with
    /// DEQUEUE_SAVE, changed by `apply`, and enqueued again with
    /// ENQUEUE_RESTORE; an ejection on the way leaves it out. ext.c,
    /// dequeue_task_scx: ops.dequeue if the program holds it, ops.stopping
    /// (runnable false) if it is running, then ops.quiescent with the
    /// flags; enqueue_task_scx: ops.runnable with the flags, then a queued
    /// task goes to do_enqueue_task (ops.enqueue with the flags) and a
    /// running one straight back to its CPU's local queue (sticky_cpu),
    /// which set_next_task_scx takes it from with ops.running.
    /// Simplified: a queued task whose CPU left its set is enqueued on its
    /// new CPU at once, where the kernel enqueues it on the old one and
    /// moves it (move_queued_task: no ops.runnable or ops.quiescent).
    fn change(&mut self, sim: &mut Sim, t: Tid, apply: impl FnOnce(&mut Self, &mut Sim)) {
        let running = sim.task(t).state == TState::Running && sim.abort.is_none();
        let queued = self.dequeue_save(sim, t);
        let cpu = sim.task(t).cpu;
        let p = self.p(t);
        if running {
            Self::with_sim(&mut self.k, sim, |k| k.charge(t));
            if self.ops_mask & abi::OP_STOPPING != 0 {
                // SAFETY: p is live.
                self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.stopping)(p, 0) });
            }
        }
        if (running || queued) && self.ops_mask & abi::OP_QUIESCENT != 0 && sim.abort.is_none() {
            // SAFETY: p is live.
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.quiescent)(p, abi::DEQ_SAVE | abi::DEQ_NOCLOCK) });
        }
        apply(self, sim);
        if !(running || queued) || sim.abort.is_some() {
            return;
        }
        if queued && !sim.may_run(t, cpu) {
            let to = sim.fallback_cpu(t, cpu);
            sim.set_task_cpu(t, to);
            sim.kick(to);
        }
        let cpu = sim.task(t).cpu;
        if self.ops_mask & abi::OP_RUNNABLE != 0 {
            // SAFETY: p is live.
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.runnable)(p, abi::ENQ_RESTORE) });
        }
        if queued {
            self.enqueue_op(sim, t, cpu, abi::ENQ_RESTORE);
        } else if self.ops_mask & abi::OP_RUNNING != 0 && sim.abort.is_none() {
            // SAFETY: p is live.
            self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.running)(p) });
        }
    }

    /// ext.c, set_cpus_allowed_scx: ops.set_cpumask with p->cpus_ptr. Its
    /// SCX_CALL_OP_TASK names no locked run queue (NULL), though the
    /// caller holds the task's: kfuncs that need one act as unlocked.
    fn tell_cpumask(&mut self, sim: &mut Sim, t: Tid) {
        if self.ops_mask & abi::OP_SET_CPUMASK != 0 {
            let p = self.p(t);
            let cpu = sim.task(t).cpu;
            // SAFETY: p is live.
            self.call(sim, cpu, None, Context::Other, |f| unsafe { (f.set_cpumask)(p) });
        }
    }

    /// p->cpus_ptr of a migration-disabled task: cpumask_of(`one`), or its
    /// own mask again (None), and the program told.
    fn set_cpus_ptr(&mut self, sim: &mut Sim, t: Tid, one: Option<u32>) {
        // SAFETY: p is live; the CPU is the machine's.
        unsafe { (self.prog.f.task_set_cpus_ptr)(self.p(t), one.map_or(-1, |c| c as c_int)) };
        self.k.ts_mut(t).one_cpu = one.is_some();
        self.tell_cpumask(sim, t);
    }

    /// core.c, migrate_disable_switch: a task switched out of its CPU in a
    /// migration-disabled section has its p->cpus_ptr narrowed to that CPU
    /// (__do_set_cpus_allowed with SCA_MIGRATE_DISABLE), once per section
    /// (not while `p->cpus_ptr != &p->cpus_mask`).
    fn migrate_disable_switch(&mut self, sim: &mut Sim, t: Tid) {
        let task = sim.task(t);
        let known = self.k.tasks[t as usize].as_ref().is_some_and(|s| !s.one_cpu);
        if task.migration_disabled == 0 || task.state == TState::Dead || !known {
            return;
        }
        let cpu = task.cpu;
        self.change(sim, t, |s, sim| s.set_cpus_ptr(sim, t, Some(cpu)));
    }

    /// The dequeue of a property change (core.c: dequeue_task with
    /// DEQUEUE_SAVE, to be enqueued again with ENQUEUE_RESTORE): a queued
    /// task leaves the queue the host holds it in, or, if the program
    /// holds it, ops.dequeue is called (ext.c, dequeue_task_scx and
    /// ops_dequeue: only in SCX_OPSS_QUEUED). Whether it was queued.
    fn dequeue_save(&mut self, sim: &mut Sim, t: Tid) -> bool {
        if sim.task(t).state != TState::Runnable || sim.abort.is_some() {
            return false;
        }
        let k = &mut *self.k;
        let mut held = false;
        for q in k.local.iter_mut() {
            if let Some(i) = q.iter().position(|&u| u == t) {
                q.remove(i);
                held = true;
            }
        }
        held |= k.global.remove(t);
        for q in k.user.values_mut() {
            held |= q.remove(t);
        }
        if std::mem::take(&mut k.ts_mut(t).custody) {
            held = true;
            if self.ops_mask & abi::OP_DEQUEUE != 0 {
                let p = self.p(t);
                let cpu = sim.task(t).cpu;
                // dequeue_task_scx runs under the task's run queue lock.
                // SAFETY: p is live.
                self.call(sim, cpu, Some(cpu), Context::Other, |f| unsafe { (f.dequeue)(p, abi::DEQ_SAVE | abi::DEQ_NOCLOCK) });
            }
        }
        held
    }

    fn enqueue_op(&mut self, sim: &mut Sim, t: Tid, cpu: u32, enq: u32) {
        let p = self.p(t);
        if let (Some(held), false) = (self.k.ts(t).held_on, self.plan.flags.enq_migration_disabled) {
            // ext.c, do_enqueue_task: without SCX_OPS_ENQ_MIGRATION_DISABLED
            // (6.15 and later) a migration-disabled task goes to its CPU's
            // local queue with a default slice, not to ops.enqueue.
            // SAFETY: p is live; SCX_SLICE_DFL is 20 ms.
            unsafe { (self.prog.f.task_set_slice)(p, 20_000_000) };
            self.k.local[held as usize].push_back(t);
            sim.kick(held);
            return;
        }
        if self.ops_mask & abi::OP_ENQUEUE == 0 {
            self.k.global.fifo.push_back(t);
            return;
        }
        // do_enqueue_task holds the task's run queue, not the waker's.
        let rq = sim.task(t).cpu;
        // do_enqueue_task: held by the program unless it inserts the task.
        self.k.ts_mut(t).custody = true;
        // SAFETY: p is live.
        self.call(sim, cpu, Some(rq), Context::Other, |f| unsafe { (f.enqueue)(p, enq) });
    }
}

