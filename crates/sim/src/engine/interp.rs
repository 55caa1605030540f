// SPDX-License-Identifier: GPL-2.0-only
//! The interpreter of the tasks' programs (program.rs): `advance` runs a
//! task's steps on its CPU until it computes, blocks or exits, with the
//! state the steps drive: loop frames, pipes, futexes, barriers, marks and
//! measures.
//!
//! It is apart from the event loop because it is the workload's semantics,
//! not the scheduler's: a new step kind changes only this file. The task
//! state changes that steps cause and that other events share (blocking,
//! waking, exit and the wake-up of a waiting parent, fork's placement, the
//! context switch) are the engine's (engine/mod.rs); the rate at which computed
//! work runs is the hardware model's (hardware.rs).

use warmcore_trace::event::prev_state;
use warmcore_trace::ids;

use crate::engine::Engine;
use crate::kernel_time;
use crate::policy::{Enq, Wake, WakeKind};
use crate::program::{ProgId, Step};
use crate::sim::{Action, BlockedOn, Frame, Kind, Sim, TState, Tid, WaitFor};
use crate::SimError;

/// `Task::spinning` of a task busy-waiting on a pipe (PipeSpinRead), which
/// spins until a write releases it: no barrier has this id.
const PIPE_SPIN: u32 = u32::MAX;
/// A spin's cycles when only a release ends it (years at any frequency).
const FOREVER: f64 = 1e18;

impl Sim {
    pub(crate) fn frame(&self, prog: ProgId, left: u64, until: u64) -> Frame {
        let (start, end) = self.prog_span[prog as usize];
        Frame { start, pc: start, end, left, until }
    }
}

impl Engine {
    /// Run `t`'s program on `c` until it computes, blocks or exits.
    pub(crate) fn advance(&mut self, c: u32, t: Tid) -> Result<(), SimError> {
        if let Some(b) = self.sim.tasks[t as usize].spinning {
            if b == PIPE_SPIN {
                // A busy-wait on a pipe never gives up.
                self.spin(c, t, PIPE_SPIN, FOREVER);
                return Ok(());
            }
            // Its spin ran out before the barrier opened (a release clears
            // `spinning`): it sleeps there, still counted as arrived.
            self.sim.tasks[t as usize].spinning = None;
            self.block(c, t, BlockedOn::Barrier(b), ids::FUTEX_WAIT, b, prev_state::BLOCKED);
            return Ok(());
        }
        let steps = self.sim.steps.clone();
        loop {
            let step = {
                let task = &mut self.sim.tasks[t as usize];
                if task.frames.is_empty() && task.owed >= 1.0 {
                    self.pay_owed(c, t);
                    return Ok(());
                }
                let Some(fr) = task.frames.last_mut() else {
                    self.exit(c, t);
                    return Ok(());
                };
                if fr.pc >= fr.end {
                    // End of a loop body or of the program.
                    let now = self.sim.now;
                    if fr.until > 0 && now < fr.until {
                        fr.pc = fr.start;
                    } else if fr.until == 0 && fr.left > 0 {
                        fr.left -= 1;
                        fr.pc = fr.start;
                    } else {
                        task.frames.pop();
                    }
                    self.zero_time()?;
                    continue;
                }
                let s = &steps[fr.pc as usize];
                if task.owed >= 1.0 && !matches!(s, Step::Compute(_)) {
                    // The kernel's work for the last steps comes before this
                    // one (a computation adds it to its own).
                    self.pay_owed(c, t);
                    return Ok(());
                }
                fr.pc += 1;
                s
            };
            self.zero_time()?;
            let pid = self.sim.tasks[t as usize].pid;
            let now = self.sim.now;
            match *step {
                Step::Compute(a) => {
                    let u = if a.jitter > 0.0 { self.sim.uniform() } else { 0.0 };
                    let cycles = a.sample(u) + std::mem::take(&mut self.sim.tasks[t as usize].owed);
                    if cycles < 1.0 {
                        continue;
                    }
                    self.sim.tasks[t as usize].remaining = cycles;
                    self.sim.zero_time_steps = 0;
                    self.sim.start_segment(c);
                    return Ok(());
                }
                Step::Sleep(a) | Step::Io(a) => {
                    let u = if a.jitter > 0.0 { self.sim.uniform() } else { 0.0 };
                    let ns = a.sample(u).max(1.0) as u64;
                    let io = matches!(step, Step::Io(_));
                    let (id, st) =
                        if io { (ids::BLOCK_IO, prev_state::BLOCKED_IO) } else { (ids::BLOCK, prev_state::BLOCKED) };
                    self.block(c, t, BlockedOn::Timer, id, 0, st);
                    let gen = self.sim.tasks[t as usize].block_gen;
                    self.sim.push(now + ns, Kind::Wake, t, gen);
                    return Ok(());
                }
                Step::Fork(p) => {
                    let task = &mut self.sim.tasks[t as usize];
                    if !task.fork_copied {
                        // fork copies the parent before it wakes the child
                        // (wake_up_new_task ends copy_process): the copy
                        // first, then this step again.
                        task.fork_copied = true;
                        task.owed = kernel_time::FORK_CYCLES;
                        task.frames.last_mut().unwrap().pc -= 1;
                        self.pay_owed(c, t);
                        return Ok(());
                    }
                    task.fork_copied = false;
                    self.room_for_task()?;
                    let comm = self.sim.tasks[t as usize].comm.clone();
                    let child = self.new_task(p, &comm, Some(t));
                    self.sim.tasks[t as usize].children += 1;
                    let cpid = self.sim.tasks[child as usize].pid;
                    self.sim.emit(c, cpid, ids::FORK, pid, 0);
                    self.sim.sink.note_process(cpid, pid, &comm, now);
                    self.policy.init_task(&mut self.sim, child, Some(t));
                    let w = Wake { kind: WakeKind::Fork, waker: Some(t), waker_cpu: c, sync: false };
                    let target = self.checked_select(child, c, w);
                    self.sim.emit(c, cpid, ids::WAKEUP_NEW, target, pid);
                    self.sim.tasks[child as usize].cpu = target;
                    self.sim.nr_add(target, 1);
                    self.policy.enqueue(&mut self.sim, child, target, Enq::New);
                    self.sim.schedutil_update(target, Some(child));
                    self.sim.kick(target);
                }
                Step::Exec(ref comm) => {
                    self.sim.tasks[t as usize].owed += kernel_time::EXEC_CYCLES;
                    self.sim.emit_comm(c, pid, comm);
                    self.sim.sink.note_process(pid, 0, comm, now);
                    self.sim.tasks[t as usize].comm.clone_from(comm);
                    // sched_exec: exec placement, migrating if the target
                    // differs (docs/model.md, Wake-up, fork and exec).
                    let w = Wake { kind: WakeKind::Exec, waker: Some(t), waker_cpu: c, sync: false };
                    let target = self.checked_select(t, c, w);
                    if target != c {
                        self.move_running(t, c, target);
                        return Ok(());
                    }
                }
                Step::Wait | Step::WaitAll => {
                    let task = &mut self.sim.tasks[t as usize];
                    if matches!(step, Step::Wait) && task.zombies > 0 {
                        task.zombies -= 1;
                        continue;
                    }
                    if task.children == 0 {
                        task.zombies = 0;
                        continue;
                    }
                    task.wait = if matches!(step, Step::Wait) { WaitFor::One } else { WaitFor::All };
                    self.block(c, t, BlockedOn::Child, ids::WAIT_PID, 0, prev_state::BLOCKED);
                    return Ok(());
                }
                Step::Exit => {
                    self.exit(c, t);
                    return Ok(());
                }
                Step::PipeWrite(p) => {
                    let pipe = &mut self.sim.pipes[p as usize];
                    if pipe.msgs >= pipe.cap {
                        pipe.writers.push_back(t);
                        // Retry the write when woken.
                        self.sim.tasks[t as usize].frames.last_mut().unwrap().pc -= 1;
                        self.block(c, t, BlockedOn::PipeWrite(p), ids::BLOCK, 0, prev_state::BLOCKED);
                        return Ok(());
                    }
                    pipe.msgs += 1;
                    if let Some(r) = pipe.readers.pop_front() {
                        if self.sim.tasks[r as usize].spinning.is_some() {
                            // A busy-waiting reader sees the message and
                            // takes it: no wake-up.
                            self.sim.pipes[p as usize].msgs -= 1;
                            self.release_spinner(r);
                        } else {
                            // Pipe wake-ups are synchronous (WF_SYNC).
                            self.wake(r, Some(t), true);
                        }
                    }
                }
                Step::PipeSpinRead(p) => {
                    let pipe = &mut self.sim.pipes[p as usize];
                    if pipe.msgs == 0 {
                        pipe.readers.push_back(t);
                        self.spin(c, t, PIPE_SPIN, FOREVER);
                        return Ok(());
                    }
                    pipe.msgs -= 1;
                    if let Some(w) = pipe.writers.pop_front() {
                        self.wake(w, Some(t), true);
                    }
                }
                Step::PipeRead(p) => {
                    let pipe = &mut self.sim.pipes[p as usize];
                    if pipe.msgs == 0 {
                        pipe.readers.push_back(t);
                        self.sim.tasks[t as usize].frames.last_mut().unwrap().pc -= 1;
                        self.block(c, t, BlockedOn::PipeRead(p), ids::BLOCK, 0, prev_state::BLOCKED);
                        return Ok(());
                    }
                    pipe.msgs -= 1;
                    if let Some(w) = pipe.writers.pop_front() {
                        self.wake(w, Some(t), true);
                    }
                }
                Step::FutexWait(f) => {
                    self.sim.futexes[f as usize].push_back(t);
                    self.block(c, t, BlockedOn::Futex(f), ids::FUTEX_WAIT, f, prev_state::BLOCKED);
                    return Ok(());
                }
                Step::FutexWake(f, n) => {
                    let mut woken = 0;
                    while woken < n {
                        let Some(w) = self.sim.futexes[f as usize].pop_front() else { break };
                        self.wake(w, Some(t), false);
                        woken += 1;
                    }
                    self.sim.emit(c, pid, ids::FUTEX_WAKE, f, woken);
                }
                Step::Barrier(b) | Step::BarrierSpin(b, _) => {
                    let bar = &mut self.sim.barriers[b as usize];
                    if bar.arrived.len() as u32 + 1 >= bar.count {
                        let waiters = std::mem::take(&mut bar.arrived);
                        for &w in &waiters {
                            if self.sim.tasks[w as usize].spinning.is_some() {
                                // A spinning waiter sees the barrier open
                                // and goes on: no wake-up.
                                self.release_spinner(w);
                            } else {
                                self.wake(w, Some(t), false);
                            }
                        }
                        let bar = &mut self.sim.barriers[b as usize];
                        bar.arrived = waiters;
                        bar.arrived.clear();
                    } else {
                        bar.arrived.push(t);
                        let spin = match *step {
                            Step::BarrierSpin(_, a) => {
                                let u = if a.jitter > 0.0 { self.sim.uniform() } else { 0.0 };
                                a.sample(u)
                            }
                            _ => 0.0,
                        };
                        if spin >= 1.0 {
                            self.spin(c, t, b, spin);
                        } else {
                            self.block(c, t, BlockedOn::Barrier(b), ids::FUTEX_WAIT, b, prev_state::BLOCKED);
                        }
                        return Ok(());
                    }
                }
                Step::Repeat(p, n) => {
                    if n > 0 {
                        let fr = self.sim.frame(p, n - 1, 0);
                        self.sim.tasks[t as usize].frames.push(fr);
                    }
                }
                Step::RepeatFor(p, ns) => {
                    if ns > 0 {
                        let fr = self.sim.frame(p, 0, now + ns);
                        self.sim.tasks[t as usize].frames.push(fr);
                    }
                }
                Step::Mark(i) => self.sim.marks[i as usize] = now,
                Step::Nice(n) => {
                    self.sim.tasks[t as usize].nice = n;
                    self.policy.set_nice(&mut self.sim, t);
                }
                Step::SchedIdle(idle) => {
                    self.sim.tasks[t as usize].sched_idle = idle;
                    self.sim.any_sched_idle |= idle;
                    self.policy.set_nice(&mut self.sim, t);
                }
                Step::JoinCpuset(i) => {
                    if self.join_cpuset(t, i) {
                        return Ok(());
                    }
                }
                Step::CpusetCpus(i, ref cpus) => {
                    if self.set_cpuset_cpus(t, i, cpus) {
                        return Ok(());
                    }
                }
                Step::MigrateDisable => {
                    let task = &mut self.sim.tasks[t as usize];
                    task.migration_disabled += 1;
                    if task.migration_disabled == 1 {
                        self.policy.set_migration_disabled(&mut self.sim, t);
                    }
                }
                Step::MigrateEnable => {
                    // An unmatched migrate_enable does nothing (the kernel
                    // warns).
                    let task = &mut self.sim.tasks[t as usize];
                    if task.migration_disabled > 0 {
                        task.migration_disabled -= 1;
                        if task.migration_disabled == 0 {
                            self.policy.set_migration_disabled(&mut self.sim, t);
                            // migrate_enable: a move an affinity change
                            // asked for meanwhile happens now
                            // (affine_move_task's pending stop).
                            if self.move_off_disallowed(t) {
                                return Ok(());
                            }
                        }
                    }
                }
                Step::Affinity(ref cpus, children) => {
                    if children {
                        let kids: Vec<Tid> = (0..self.sim.tasks.len() as Tid)
                            .filter(|&k| {
                                let task = &self.sim.tasks[k as usize];
                                task.parent == Some(t) && task.state != TState::Dead
                            })
                            .collect();
                        for k in kids {
                            self.set_affinity(k, cpus, false);
                        }
                    } else if self.set_affinity(t, cpus, true) {
                        return Ok(());
                    }
                }
                Step::CpuOnline(cpu, online) => {
                    if self.set_online(t, cpu, online)? {
                        return Ok(());
                    }
                }
                Step::Measure(i) => {
                    let d = now - self.sim.marks[i as usize].min(now);
                    self.sim.measures += 1;
                    // Bounded memory: keep at most 4 M samples.
                    if self.sim.samples.len() < 4_000_000 {
                        self.sim.samples.push(d);
                    }
                }
            }
        }
    }

    /// sched_setaffinity of `t` (kernel/sched/core.c,
    /// __set_cpus_allowed_ptr_locked): the new mask is the CPUs asked for
    /// that the machine has (none, or none online: EINVAL, nothing
    /// changes); the policy is
    /// told (set_cpus_allowed, ops.set_cpumask); a task running on a CPU
    /// it may no longer use is preempted and moved to an allowed CPU
    /// (affine_move_task's stopper, as exec's migration), a queued one is
    /// moved by the policy, a sleeping one is placed at its wake-up. `own`:
    /// the task changes its own set. True if `t` was running and left its
    /// CPU.
    fn set_affinity(&mut self, t: Tid, cpus: &[u32], own: bool) -> bool {
        let Some(asked) = self.mask_of(cpus) else { return false };
        // __sched_setaffinity: within the task's cpuset's effective CPUs
        // (cpuset_cpus_allowed); nothing left is EINVAL.
        let cs = self.sim.tasks[t as usize].cpuset.and_then(|i| self.cpuset_cpus(i));
        let Some(new) = and(Some(&asked), cs.as_deref()) else { return false };
        if !(0..self.sim.machine.nr_cpus).any(|c| bit(&new, c) && self.sim.online(c)) {
            // __set_cpus_allowed_ptr_locked: no CPU of the new mask in
            // cpu_valid_mask (the active CPUs) is EINVAL; nothing changes.
            return false;
        }
        let task = &self.sim.tasks[t as usize];
        if own && task.migration_disabled > 0 && !bit(&new, task.cpu) {
            // __set_cpus_allowed_ptr_locked: a migration-disabled task may
            // not take its own CPU out of its set (EBUSY). Another task's
            // change waits for its migrate_enable (affine_move_task).
            return false;
        }
        self.sim.tasks[t as usize].user_cpus = self.unless_all(asked);
        let new = self.unless_all(new);
        self.apply_cpus(t, new)
    }

    /// The machine's CPUs of a list as mask words; None if it names none.
    fn mask_of(&self, cpus: &[u32]) -> Option<Box<[u64]>> {
        let n = self.sim.machine.nr_cpus;
        let mut mask = vec![0u64; n.div_ceil(64) as usize];
        for &c in cpus.iter().filter(|&&c| c < n) {
            mask[c as usize / 64] |= 1 << (c % 64);
        }
        mask.iter().any(|&w| w != 0).then(|| mask.into_boxed_slice())
    }

    /// None for a mask of every CPU, as `Task::cpus` keeps it.
    fn unless_all(&self, mask: Box<[u64]>) -> Option<Box<[u64]>> {
        let count: u32 = mask.iter().map(|w| w.count_ones()).sum();
        (count < self.sim.machine.nr_cpus).then_some(mask)
    }

    /// Set `t`'s allowed CPUs: the policy is told, and a running task its
    /// CPU left is moved. True if it left its CPU. A mask equal to the one
    /// the task has changes nothing (core.c, __set_cpus_allowed_ptr_locked:
    /// `cpumask_equal(&p->cpus_mask, new_mask)` returns before
    /// __do_set_cpus_allowed, so no set_cpus_allowed and no dequeue and
    /// enqueue); it compares p->cpus_mask, not a migration-disabled
    /// section's narrowed cpus_ptr.
    fn apply_cpus(&mut self, t: Tid, new: Option<Box<[u64]>>) -> bool {
        if self.sim.tasks[t as usize].cpus == new {
            return false;
        }
        self.sim.tasks[t as usize].cpus = new;
        self.policy.set_cpumask(&mut self.sim, t);
        self.move_off_disallowed(t)
    }

    /// Cpuset `i`'s effective_cpus, the CPUs its members may use
    /// (kernel/cgroup/cpuset.c, compute_effective_cpumask: its CPUs within
    /// its parent's, the root's being the active CPUs, which hotplug keeps,
    /// cpuset_handle_hotplug); when none of its CPUs is online, its
    /// parent's (hotplug_update_tasks, cgroup v2): every online CPU. None
    /// for every CPU.
    fn cpuset_cpus(&self, i: u32) -> Option<Box<[u64]>> {
        let online: Vec<u32> = (0..self.sim.machine.nr_cpus).filter(|&c| self.sim.online(c)).collect();
        let online = self.mask_of(&online)?;
        let eff = and(self.sim.cpusets[i as usize].as_deref(), Some(&online)).unwrap_or(online);
        self.unless_all(eff)
    }

    /// The CPUs a task of cpuset `cs` that asked for `user` may use
    /// (cpuset.c, update_tasks_cpumask and cpuset_attach, through
    /// __set_cpus_allowed_ptr's user_cpus_ptr test): their intersection,
    /// or the cpuset's effective CPUs when that is empty.
    fn cpuset_effective(&self, t: Tid) -> Option<Box<[u64]>> {
        let task = &self.sim.tasks[t as usize];
        let cs = task.cpuset.and_then(|i| self.cpuset_cpus(i));
        match and(task.user_cpus.as_deref(), cs.as_deref()) {
            Some(m) => Some(m),
            None => cs,
        }
    }

    /// cpuset_attach: `t` joins cpuset `i`. True if it left its CPU.
    fn join_cpuset(&mut self, t: Tid, i: u32) -> bool {
        self.sim.tasks[t as usize].cpuset = Some(i);
        let new = self.cpuset_effective(t).and_then(|m| self.unless_all(m));
        self.apply_cpus(t, new)
    }

    /// A write of cpuset `i`'s CPUs (none of the machine's: every CPU, the
    /// root's): every live member's allowed CPUs follow
    /// (update_tasks_cpumask). True if `me` left its CPU.
    fn set_cpuset_cpus(&mut self, me: Tid, i: u32, cpus: &[u32]) -> bool {
        let mask = self.mask_of(cpus).and_then(|m| self.unless_all(m));
        self.sim.cpusets[i as usize] = mask;
        self.update_members(me, i)
    }

    /// Hotplug changed the online CPUs: every cpuset's effective CPUs
    /// follow, and its live members' allowed CPUs with them
    /// (cpuset.c, cpuset_handle_hotplug, cpuset_hotplug_update_tasks,
    /// cpuset_update_tasks_cpumask; synchronous in the hotplug since 6.10).
    /// True if `me` left its CPU.
    pub(crate) fn cpusets_follow_hotplug(&mut self, me: Tid) -> bool {
        let mut left = false;
        for i in 0..self.sim.cpusets.len() as u32 {
            left |= self.update_members(me, i);
        }
        left
    }

    /// Every live member of cpuset `i` gets the CPUs it may now use
    /// (update_tasks_cpumask). True if `me` left its CPU.
    fn update_members(&mut self, me: Tid, i: u32) -> bool {
        let members: Vec<Tid> = (0..self.sim.tasks.len() as Tid)
            .filter(|&k| {
                let task = &self.sim.tasks[k as usize];
                task.cpuset == Some(i) && task.state != TState::Dead
            })
            .collect();
        let mut left = false;
        for k in members {
            let new = self.cpuset_effective(k).and_then(|m| self.unless_all(m));
            left |= self.apply_cpus(k, new) && k == me;
        }
        left
    }

    /// The running task `t` leaves CPU `from` for `to`, where the policy
    /// queues it as it queues an exec's migration (sched_exec's and
    /// affine_move_task's stopper: the task is preempted, moved, enqueued
    /// there); `from` schedules again.
    fn move_running(&mut self, t: Tid, from: u32, to: u32) {
        self.stop(from, t, prev_state::RUNNABLE);
        self.sim.tasks[t as usize].state = TState::Runnable;
        self.policy.stopping(&mut self.sim, t, from, true);
        self.sim.migrate(t, from, to, from);
        self.policy.enqueue(&mut self.sim, t, to, Enq::Exec);
        self.sim.kick(to);
        self.sim.actions.push_back(Action::Schedule(from));
    }

    /// A running task whose CPU it may no longer use is preempted and moved
    /// to the fallback CPU (affine_move_task's stopper, as exec's
    /// migration). True if it left its CPU.
    pub(crate) fn move_off_disallowed(&mut self, t: Tid) -> bool {
        let r = self.sim.tasks[t as usize].cpu;
        if self.sim.tasks[t as usize].state != TState::Running || self.sim.may_run(t, r) {
            return false;
        }
        let dest = self.fallback(t, r);
        self.sim.sync_progress(r);
        self.move_running(t, r, dest);
        true
    }

    /// Spin: the task keeps running, with the spin's cycles as its work.
    fn spin(&mut self, c: u32, t: Tid, on: u32, cycles: f64) {
        let task = &mut self.sim.tasks[t as usize];
        task.spinning = Some(on);
        task.remaining = cycles;
        self.sim.zero_time_steps = 0;
        self.sim.start_segment(c);
    }

    /// The barrier a task spins at opened, or the pipe it polls got a
    /// message: it stops spinning and goes on
    /// past the barrier, where it is (running: at once; preempted: when it
    /// runs again). No wake-up, as it never slept.
    fn release_spinner(&mut self, w: Tid) {
        self.sim.tasks[w as usize].spinning = None;
        let c = self.sim.tasks[w as usize].cpu;
        if self.sim.tasks[w as usize].state == TState::Running {
            // The spin's progress is of no account: it ends here.
            self.sim.tasks[w as usize].remaining = 0.0;
            // A segment end now: its CPU's next event carries it on.
            self.sim.start_segment(c);
        } else {
            self.sim.tasks[w as usize].remaining = 0.0;
        }
    }

    /// Run the kernel's work owed by `t` as a computation; its program
    /// goes on where it was when that ends.
    fn pay_owed(&mut self, c: u32, t: Tid) {
        let task = &mut self.sim.tasks[t as usize];
        task.remaining = std::mem::take(&mut task.owed);
        self.sim.zero_time_steps = 0;
        self.sim.start_segment(c);
    }

    fn zero_time(&mut self) -> Result<(), SimError> {
        self.sim.zero_time_steps += 1;
        if self.sim.zero_time_steps > 10_000_000 {
            return Err(SimError::Input(format!(
                "workload {} loops without computing or blocking (at {} ns)",
                self.sim.workload.name, self.sim.now
            )));
        }
        Ok(())
    }
}

/// Whether CPU `c` is in `mask`.
fn bit(mask: &[u64], c: u32) -> bool {
    mask.get(c as usize / 64).is_some_and(|w| w >> (c % 64) & 1 == 1)
}

/// The intersection of two masks (None: every CPU); None also when it is
/// empty and both are given, Some(every CPU) never.
fn and(a: Option<&[u64]>, b: Option<&[u64]>) -> Option<Box<[u64]>> {
    match (a, b) {
        (Some(a), Some(b)) => {
            let m: Box<[u64]> = a.iter().zip(b).map(|(x, y)| x & y).collect();
            m.iter().any(|&w| w != 0).then_some(m)
        }
        (Some(m), None) | (None, Some(m)) => Some(m.into()),
        (None, None) => None,
    }
}
