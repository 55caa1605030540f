// SPDX-License-Identifier: GPL-2.0-only
//! `eevdf`: the fair class of the kernel the project's VM boots (Debian's
//! 7.3), where it differs from the 5.9 model of `cfs`: EEVDF's run queue
//! (the pick by virtual deadline among eligible tasks, lag kept across
//! sleeps and migrations, the base slice, wake-up preemption by deadline
//! with RUN_TO_PARITY, lazy preemption), SIS_UTIL's scan budget and the
//! other changes to placement and balancing since 5.9. Everything else is
//! the `cfs` model's code, which branches here on `Kernel::Eevdf`.
//! docs/model.md, "The fair class of today", cites each rule.
//!
//! Weights follow the nice value and policy (prio.rs): V is the
//! weighted mean vruntime, a slice is calc_delta_fair of the base slice,
//! lags scale with the weight (reweight_entity).
//!
//! Simplifications (stated): DELAY_DEQUEUE is not
//! modelled (a task that sleeps leaves the queue at once, keeping its lag
//! as 6.6 to 6.11 did); no custom slices (sched_attr's runtime).

use crate::machine::Machine;
use crate::prio::delta_fair;
use crate::sim::{Sim, Tid, TICK_NS};
use crate::SimError;

use super::Cfs;

/// sysctl_sched_base_slice before scaling: 0.75 ms (kernel/sched/fair.c,
/// `normalized_sysctl_sched_base_slice`).
const BASE_SLICE_NS: u64 = 750_000;
/// The vruntime an empty queue starts at: far enough from 0 that a lag
/// (at most a few slices) never takes a vruntime below it.
pub(super) const V_START: u64 = 1 << 40;
/// imbalance_pct of the LLC domain, which SIS_UTIL's curve uses (117).
const LLC_IMBALANCE_PCT: u64 = 117;
/// SCHED_CAPACITY_SCALE.
const CAP: u64 = 1024;
/// NUMA_IMBALANCE_MIN: an imbalance of up to 2 tasks is allowed between
/// lightly loaded nodes.
pub(super) const NUMA_IMBALANCE_MIN: u64 = 2;

/// The base slice on a machine of `nr_cpus` CPUs: 0.75 ms x (1 +
/// log2(min(CPUs, 8))), the scaling `update_sysctl` applies
/// (`SCHED_TUNABLESCALING_LOG`, the default): 3 ms from 8 CPUs up.
pub fn base_slice(nr_cpus: u32) -> u64 {
    let n = nr_cpus.clamp(1, 8);
    BASE_SLICE_NS * (1 + n.ilog2() as u64)
}

/// SIS_UTIL's scan budget for an LLC of `llc_weight` CPUs whose summed
/// utilisation is `sum_util` (1024 per fully busy CPU):
/// `update_idle_cpu_scan`'s curve, llc_weight x (1 - (x x pct / 100)^2)
/// with x the LLC's mean utilisation, 0 from x = 100 / 117 (85 %) up.
pub fn sis_util_budget(llc_weight: u32, sum_util: u64) -> u32 {
    let w = llc_weight.max(1) as u64;
    let x = sum_util / w;
    let tmp = (x * x * LLC_IMBALANCE_PCT * LLC_IMBALANCE_PCT / (10_000 * CAP)).min(CAP);
    ((CAP - tmp) * w / CAP) as u32
}

/// update_entity_lag: the lag a task of weight `w` leaves a queue with,
/// V - vruntime, clamped either way to max(2 slices, one tick) in the
/// task's virtual time (calc_delta_fair of the limit).
pub fn lag_at_dequeue(v: u64, vruntime: u64, slice: u64, w: u64) -> i64 {
    let lim = delta_fair((2 * slice).max(TICK_NS), w) as i64;
    (v as i64 - vruntime as i64).clamp(-lim, lim)
}

/// place_entity with PLACE_LAG: the vruntime of a task of weight `w`
/// joining a queue whose tasks (the running one included) weigh `load` in
/// all and whose weighted mean vruntime is `v`, so that its lag after
/// joining is `vlag`: the lag is inflated by (W + w) / W.
pub fn place_vruntime(v: u64, vlag: i64, load: u64, w: u64) -> u64 {
    let lag = if load > 0 { (vlag as i128 * (load + w) as i128 / load as i128) as i64 } else { 0 };
    (v as i64 - lag) as u64
}

/// imb_numa_nr of the NUMA domain above the LLCs (`build_sched_domains`):
/// with one LLC per node, an eighth of the domain's CPUs; with several,
/// the number of LLCs; at least 1.
pub fn imb_numa_nr(m: &Machine) -> u64 {
    let span = m.nr_cpus as u64;
    let llc = m.die_cpus[0].len().max(1) as u64;
    let nr_llcs = span / llc;
    let imb = if nr_llcs == 1 { span >> 3 } else { nr_llcs };
    imb.max(1)
}

/// The kernel features and settings `eevdf` takes as parameters; each
/// defaults to the release's.
#[derive(Clone, Debug)]
pub(super) struct Feat {
    pub place_lag: bool,
    pub run_to_parity: bool,
    pub sis_util: bool,
    /// Preemption model: lazy (Debian's 7.x configuration) or full.
    pub lazy: bool,
}

/// What `eevdf` keeps beside the `cfs` model's state.
pub(super) struct State {
    pub feat: Feat,
    pub slice: u64,
    /// Per LLC: sd_llc_shared->nr_idle_scan.
    pub nr_idle_scan: Vec<u32>,
    pub imb_numa_nr: u64,
    /// Per CPU: a lazy reschedule is pending (TIF_NEED_RESCHED_LAZY).
    pub lazy_pending: Vec<bool>,
    pub n: Counters,
}

#[derive(Default, Debug)]
pub(super) struct Counters {
    pub lazy_preemptions: u64,
    pub slice_expiries: u64,
    pub sis_util_updates: u64,
    pub sis_util_skips: u64,
}

impl State {
    pub fn new(m: &Machine, params: &[(String, String)]) -> Result<(State, Vec<(String, String)>), SimError> {
        let mut feat = Feat { place_lag: true, run_to_parity: true, sis_util: true, lazy: true };
        let mut rest = Vec::new();
        for (k, v) in params {
            let flag = |v: &str| match v {
                "on" => Ok(true),
                "off" => Ok(false),
                _ => Err(SimError::Input(format!("eevdf: {k} must be on or off, not '{v}'"))),
            };
            match k.as_str() {
                "place_lag" => feat.place_lag = flag(v)?,
                "run_to_parity" => feat.run_to_parity = flag(v)?,
                "sis_util" => feat.sis_util = flag(v)?,
                "preempt" => {
                    feat.lazy = match v.as_str() {
                        "lazy" => true,
                        "full" => false,
                        _ => return Err(SimError::Input(format!("eevdf: preempt must be lazy or full, not '{v}'"))),
                    }
                }
                "balance" => rest.push((k.clone(), v.clone())),
                _ => {
                    return Err(SimError::Input(format!(
                        "unknown eevdf parameter '{k}'; valid: balance, place_lag, run_to_parity, sis_util, preempt"
                    )))
                }
            }
        }
        let st = State {
            feat,
            slice: base_slice(m.nr_cpus),
            // The machine was idle before the run: an idle LLC's budget is
            // all its CPUs (the value the first periodic balance would set).
            nr_idle_scan: m.die_cpus.iter().map(|c| c.len() as u32).collect(),
            imb_numa_nr: imb_numa_nr(m),
            lazy_pending: vec![false; m.nr_cpus as usize],
            n: Counters::default(),
        };
        Ok((st, rest))
    }
}

impl Cfs {
    fn ev(&self) -> &State {
        self.ev.as_ref().expect("eevdf state")
    }
    fn ev_mut(&mut self) -> &mut State {
        self.ev.as_mut().expect("eevdf state")
    }

    /// avg_vruntime's numerator and denominator on `c`: the queued tasks'
    /// and the running task's vruntimes weighted, as of now, and their
    /// summed weight.
    fn v_sum(&self, now: u64, c: u32) -> (u128, u128) {
        let rq = &self.rq[c as usize];
        let mut sum = rq.sum_vr;
        let mut n = rq.q_weight as u128;
        if let (Some(v), Some(t)) = (self.curr_vr(now, c), rq.curr) {
            let w = self.td[t as usize].weight as u128;
            sum += v as u128 * w;
            n += w;
        }
        (sum, n)
    }

    /// V, the weighted mean vruntime of the queue with the running task
    /// (avg_vruntime); an empty queue keeps its last V.
    fn avg_vruntime(&mut self, now: u64, c: u32) -> u64 {
        let (sum, n) = self.v_sum(now, c);
        if n == 0 {
            return self.rq[c as usize].v0;
        }
        let v = (sum / n) as u64;
        self.rq[c as usize].v0 = v;
        v
    }

    /// entity_eligible: a task is owed service when its vruntime is at or
    /// below V (compared without the division, as vruntime_eligible does).
    fn eligible(&self, now: u64, c: u32, vr: u64) -> bool {
        eligible_in(self.v_sum(now, c), vr)
    }

    /// update_entity_lag: V - vruntime, clamped, with `t` still counted in
    /// V (it is the running task, or still queued).
    pub(super) fn save_lag(&mut self, now: u64, c: u32, t: Tid) {
        let v = self.avg_vruntime(now, c);
        let slice = self.ev().slice;
        let d = &mut self.td[t as usize];
        d.vlag = lag_at_dequeue(v, d.vr, slice, d.weight);
    }

    /// place_entity: vruntime = V - lag, the lag inflated by (W + w) / W so
    /// that it survives the task's own effect on V (PLACE_LAG); deadline one
    /// slice later, half a slice for a new task (PLACE_DEADLINE_INITIAL).
    fn place(&mut self, now: u64, c: u32, t: Tid, initial: bool) {
        let v = self.avg_vruntime(now, c);
        let (_, load) = self.v_sum(now, c);
        let slice = self.ev().slice;
        let place_lag = self.ev().feat.place_lag;
        let d = &mut self.td[t as usize];
        if initial {
            d.vlag = 0;
        }
        d.vr = place_vruntime(v, if place_lag { d.vlag } else { 0 }, load as u64, d.weight);
        let vslice = delta_fair(slice, d.weight);
        d.deadline = d.vr + if initial { vslice / 2 } else { vslice };
        d.vr_cpu = c;
    }

    /// update_deadline for the running task of `c`: once its vruntime
    /// reaches its deadline it gets a new slice, and, with other tasks
    /// queued, a reschedule. Returns whether it rescheduled.
    fn update_deadline(&mut self, sim: &mut Sim, c: u32, t: Tid) -> bool {
        let now = sim.now();
        let Some(vr) = self.curr_vr(now, c) else { return false };
        let slice = self.ev().slice;
        let d = &mut self.td[t as usize];
        if vr < d.deadline {
            return false;
        }
        d.deadline = vr + delta_fair(slice, d.weight);
        if self.rq[c as usize].queue.is_empty() {
            return false;
        }
        self.ev_mut().n.slice_expiries += 1;
        self.n.tick_preemptions += 1;
        // The tick's own reschedule is honoured at the interrupt's return
        // to user space, lazy or not.
        sim.resched(c);
        true
    }

    /// pick_eevdf over the queue of `c` (the running task, if any, is not
    /// in it): the eligible task with the earliest deadline. The queue is
    /// ordered by deadline, so the first eligible one in order.
    pub(super) fn pick_eevdf(&self, now: u64, c: u32) -> Option<Tid> {
        let rq = &self.rq[c as usize];
        // V's terms, the same for every task looked at.
        let v = self.v_sum(now, c);
        rq.queue
            .iter()
            .find(|&&(_, t)| eligible_in(v, self.td[t as usize].vr))
            .or_else(|| rq.queue.first())
            .map(|&(_, t)| t)
    }

    /// enqueue_task_fair for `eevdf`: place (except a preempted task, which
    /// never left the queue, and an exec that stays), queue by deadline,
    /// then wakeup_preempt_fair.
    pub(super) fn enqueue_eevdf(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: crate::Enq) {
        use crate::Enq;
        let now = sim.now();
        match flags {
            Enq::New | Enq::Initial => self.place(now, cpu, t, true),
            Enq::Wakeup => self.place(now, cpu, t, false),
            Enq::Exec => {
                if self.td[t as usize].vr_cpu != cpu {
                    self.place(now, cpu, t, false)
                }
            }
            Enq::Preempted => {}
        }
        if flags != Enq::Preempted {
            let l = self.td[t as usize].weight as f64 / crate::prio::NICE_0_LOAD as f64;
            self.td[t as usize].load.set(now, l, &self.decay);
        }
        self.td[t as usize].queued_on = Some(cpu);
        self.q_insert(cpu, t);
        self.set_waiting(cpu);
        self.update_load(now, cpu);
        if matches!(flags, Enq::Wakeup | Enq::New) {
            self.wakeup_preempt(sim, t, cpu);
        }
    }

    /// wakeup_preempt_fair: bring the running task's deadline up to date,
    /// then preempt it if pick_eevdf would now choose the woken task. A
    /// running task that is still eligible and inside the slice it was
    /// picked with is protected (RUN_TO_PARITY). The reschedule is lazy
    /// under the lazy preemption model: a task running in user space on
    /// another CPU sees it at its next tick; on the waker's own CPU at
    /// once (the waker returns to user space).
    fn wakeup_preempt(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        let now = sim.now();
        let Some(curr) = self.rq[cpu as usize].curr else { return };
        // check_preempt_wakeup_fair: an idle-policy task is preempted by a
        // waking normal one at once; an idle-policy task waking never
        // preempts (its preemption is the tick's).
        let (curr_idle, t_idle) = (sim.task(curr).sched_idle, sim.task(t).sched_idle);
        if curr_idle && !t_idle {
            self.n.wakeup_preemptions += 1;
            return self.resched_wakeup(sim, t, cpu);
        }
        if t_idle {
            return;
        }
        if self.update_deadline(sim, cpu, curr) {
            return;
        }
        let cvr = self.curr_vr(now, cpu).unwrap_or(0);
        let cd = &self.td[curr as usize];
        let curr_ok = self.eligible(now, cpu, cvr);
        if curr_ok && self.ev().feat.run_to_parity && cvr < cd.vprot {
            return;
        }
        let Some(best) = self.pick_eevdf(now, cpu) else { return };
        if best != t || (curr_ok && cd.deadline < self.td[t as usize].deadline) {
            return;
        }
        self.n.wakeup_preemptions += 1;
        self.resched_wakeup(sim, t, cpu);
    }

    /// The reschedule of a wake-up preemption (resched_curr_lazy).
    fn resched_wakeup(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        let remote = self.td[t as usize].wake_cpu != cpu;
        if self.ev().feat.lazy && remote {
            self.ev_mut().lazy_pending[cpu as usize] = true;
        } else {
            sim.resched(cpu);
        }
    }

    /// reweight_entity for `eevdf`, `t`'s weight becoming `w`: its lag and
    /// its deadline relative to its vruntime scale by old / new weight
    /// (se->vlag and rel_deadline), and a queued or running task is placed
    /// again with them, so that the change neither gains nor loses it
    /// service.
    pub(super) fn reweight_eevdf(&mut self, now: u64, t: Tid, w: u64) {
        let d = &self.td[t as usize];
        let (old, queued) = (d.weight, d.queued_on);
        let running = (0..self.rq.len() as u32).find(|&c| self.rq[c as usize].curr == Some(t));
        let on = queued.or(running);
        if let Some(c) = on {
            if running.is_some() {
                // update_curr: the run so far counts at the old weight.
                let vr = self.curr_vr(now, c).unwrap_or(0);
                let d = &mut self.td[t as usize];
                d.vr = vr;
                d.exec_start = now;
            }
            self.save_lag(now, c, t);
            if queued.is_some() {
                self.q_remove(c, t);
            }
        }
        let d = &mut self.td[t as usize];
        let rel = d.deadline.saturating_sub(d.vr);
        d.vlag = (d.vlag as i128 * old as i128 / w as i128) as i64;
        let rel = (rel as u128 * old as u128 / w as u128) as u64;
        if let Some(c) = on {
            if running.is_some() {
                // The running task is not in the queue's sums: take it out
                // of V while it is placed.
                self.rq[c as usize].curr = None;
            }
            self.td[t as usize].weight = w;
            let v = self.avg_vruntime(now, c);
            let (_, load) = self.v_sum(now, c);
            let place_lag = self.ev().feat.place_lag;
            let d = &mut self.td[t as usize];
            d.vr = place_vruntime(v, if place_lag { d.vlag } else { 0 }, load as u64, w);
            d.deadline = d.vr + rel;
            if running.is_some() {
                self.rq[c as usize].curr = Some(t);
            } else {
                self.q_insert(c, t);
            }
        } else {
            self.td[t as usize].weight = w;
        }
    }

    /// task_tick_fair for `eevdf`: a pending lazy reschedule becomes a
    /// real one (sched_tick), then update_curr's deadline check.
    pub(super) fn tick_eevdf(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        if std::mem::take(&mut self.ev_mut().lazy_pending[cpu as usize]) {
            self.ev_mut().n.lazy_preemptions += 1;
            sim.resched(cpu);
        }
        self.update_deadline(sim, cpu, t);
    }

    /// set_next_entity: the slice the task is picked with is protected
    /// until its vruntime reaches this point (the deadline, as every slice
    /// is the same), and no lazy reschedule is left pending.
    pub(super) fn running_eevdf(&mut self, cpu: u32, t: Tid) {
        let d = &mut self.td[t as usize];
        d.vprot = d.deadline;
        self.ev_mut().lazy_pending[cpu as usize] = false;
    }

    /// A waiting task moved by load balancing keeps its lag: saved on the
    /// queue it leaves, placed with it on the one it joins.
    pub(super) fn migrate_eevdf(&mut self, now: u64, from: u32, to: u32, t: Tid) {
        self.save_lag(now, from, t);
        self.q_remove(from, t);
        self.place(now, to, t, false);
    }

    /// update_idle_cpu_scan, at a periodic balance of the LLC domain: the
    /// LLC's utilisation (each CPU's decayed runnable count, at most one
    /// CPU's worth: the model's utilisation) sets SIS_UTIL's budget.
    pub(super) fn update_idle_cpu_scan(&mut self, sim: &Sim, cpu: u32) {
        let m = &sim.machine;
        let die = m.cpu_die[cpu as usize] as usize;
        let now = sim.now();
        let sum: f64 = m.die_cpus[die].iter().map(|&c| self.load(now, c).min(1.0)).sum();
        let nr = sis_util_budget(m.die_cpus[die].len() as u32, (sum * CAP as f64) as u64);
        let st = self.ev_mut();
        st.nr_idle_scan[die] = nr;
        st.n.sis_util_updates += 1;
    }

    /// The end of select_idle_sibling today, after the target, the
    /// previous and the recently used CPU (cfs.rs): with SMT, when the
    /// cache has no idle core hinted and the previous CPU shares the
    /// target's cache, an idle SMT sibling of the previous CPU
    /// (select_idle_smt); then select_idle_cpu; else the target.
    pub(super) fn select_idle_smt_cpu_eevdf(&mut self, sim: &Sim, prev: u32, target: u32, die: usize) -> u32 {
        let m = &sim.machine;
        let share = m.cpu_die[prev as usize] as usize == die;
        let mut has_idle_core = false;
        if m.spec.threads_per_core > 1 {
            has_idle_core = self.has_idle_cores[die];
            if !has_idle_core && share {
                if let Some(&s) = m.siblings(prev).iter().find(|&&s| s != prev && self.idle_for_wakeup(sim, s)) {
                    return s;
                }
            }
        }
        self.select_idle_cpu_eevdf(sim, die, has_idle_core, target).unwrap_or(target)
    }

    /// select_idle_cpu of today, from the CPU after the target around the
    /// LLC: with an idle core hinted, the first core whose threads are all
    /// idle (else the first idle CPU seen, and the hint is cleared), with no
    /// budget; otherwise the first idle CPU within SIS_UTIL's budget of
    /// nr_idle_scan CPUs (none when it is 0).
    fn select_idle_cpu_eevdf(&mut self, sim: &Sim, die: usize, has_idle_core: bool, target: u32) -> Option<u32> {
        let m = &sim.machine;
        let cpus = &m.die_cpus[die];
        let n = cpus.len();
        // From the CPU after the target round to the target.
        let order = self.llc_scan(m, cpus[(self.llc_pos[target as usize] as usize + 1) % n]);
        if has_idle_core {
            // The cores looked at, one bit each (no allocation for up to
            // 256 cores).
            let mut seen: smallvec::SmallVec<[u64; 4]> = smallvec::smallvec![0; m.core_cpus.len().div_ceil(64)];
            let mut idle_cpu = None;
            for c in order {
                let core = m.cpu_core[c as usize] as usize;
                let (word, bit) = (core / 64, 1u64 << (core % 64));
                if seen[word] & bit != 0 {
                    continue;
                }
                seen[word] |= bit;
                // select_idle_core: a CPU running only SCHED_IDLE tasks
                // is no idle core's but may be the idle CPU found.
                let mut all = true;
                for &s in m.siblings(c) {
                    if self.idle(sim, s) {
                        idle_cpu = idle_cpu.or(Some(s));
                    } else {
                        all = false;
                        if idle_cpu.is_none() && self.sched_idle_cpu(sim, s) {
                            idle_cpu = Some(s);
                        }
                    }
                }
                if all {
                    self.n.idle_core_found += 1;
                    return Some(c);
                }
            }
            self.has_idle_cores[die] = false;
            return idle_cpu;
        }
        let budget = if self.ev().feat.sis_util { self.ev().nr_idle_scan[die] as usize } else { n };
        if budget == 0 {
            self.ev_mut().n.sis_util_skips += 1;
            return None;
        }
        order.take(budget).find(|&c| self.idle_for_wakeup(sim, c))
    }

    pub(super) fn stats_eevdf(&self, v: &mut serde_json::Value) {
        let n = &self.ev().n;
        v["lazy_preemptions"] = n.lazy_preemptions.into();
        v["slice_expiries"] = n.slice_expiries.into();
        v["sis_util_updates"] = n.sis_util_updates.into();
        v["sis_util_skips"] = n.sis_util_skips.into();
    }
}

/// vruntime_eligible: `vr` at or below V = sum / n (V's terms from
/// `v_sum`), compared without the division; every task is eligible on an
/// empty queue.
fn eligible_in((sum, n): (u128, u128), vr: u64) -> bool {
    n == 0 || vr as u128 * n <= sum
}
