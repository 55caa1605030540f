// SPDX-License-Identifier: GPL-2.0-only
//! The hardware model, as methods on `Sim`: how fast a running task's work
//! goes (its core's frequency, shared with an SMT sibling), the sockets'
//! turbo ceilings, the frequency governors (the hardware's samples, or
//! schedutil over PELT utilisation), the idle state a CPU enters, and the
//! energy of a run. The governors' own arithmetic and the per-core energy
//! accounting are in dvfs.rs; the machine descriptions in machine.rs.
//!
//! The event loop (engine/mod.rs) and the program interpreter (engine/interp.rs) call
//! in here when a CPU starts or stops running, spinning or idling; what a
//! policy can see of the result (`cur_freq`, `tick_freq`, `idle_state`) is
//! in sim.rs.

use warmcore_trace::ids;

use crate::dvfs::Governor;
use crate::program::REF_CYCLES_PER_US;
use crate::sim::{Kind, Mode, Sim, TState, Tid};

const REF_CYCLES_PER_NS: f64 = REF_CYCLES_PER_US / 1000.0;

// ---- execution: work done at the core's rate ----
impl Sim {
    /// Work (cycles at the reference frequency) per ns of task `t` on `c`
    /// now.
    fn rate(&self, c: u32, t: Tid) -> f64 {
        let core = self.machine.cpu_core[c as usize];
        let f = self.cores[core as usize].freq as f64 * 1e-6;
        let sibling_busy = self.machine.core_cpus[core as usize]
            .iter()
            .any(|&s| s != c && self.cpus[s as usize].mode == Mode::Running);
        let f = if sibling_busy { f * self.machine.spec.dvfs.smt_share } else { f };
        // The workload's memory-stall share of a computation's time at the
        // reference frequency lasts as long at any frequency: time =
        // cycles / f + stall time (docs/model.md, Workloads). A spin counts
        // cycles only.
        let s = self.workload.stall;
        if s > 0.0 && self.tasks[t as usize].spinning.is_none() {
            1.0 / ((1.0 - s) / f + s / REF_CYCLES_PER_NS)
        } else {
            f
        }
    }

    /// Account the work done by the running task on `c` since its segment
    /// started.
    pub(crate) fn sync_progress(&mut self, c: u32) {
        let cpu = &mut self.cpus[c as usize];
        if cpu.mode != Mode::Running {
            return;
        }
        let Some(t) = cpu.curr else { return };
        let done = (self.now - cpu.seg_start) as f64 * cpu.rate;
        cpu.seg_start = self.now;
        let task = &mut self.tasks[t as usize];
        task.remaining = (task.remaining - done).max(0.0);
    }

    /// (Re)start the running task's segment at the current rate.
    pub(crate) fn start_segment(&mut self, c: u32) {
        if let Some((t, seq)) = self.restart_segment(c) {
            self.cpus[c as usize].seg_deferred = 0;
            self.arm_segment(c, t, seq);
        }
    }

    /// What every restart of `c`'s segment takes, armed at once or deferred:
    /// its start, a generation (which makes the end queued before stale)
    /// and an insertion sequence. None if no task runs there.
    fn restart_segment(&mut self, c: u32) -> Option<(Tid, u64)> {
        let cpu = &mut self.cpus[c as usize];
        let t = cpu.curr?;
        cpu.seg_start = self.now;
        cpu.seg_gen = cpu.seg_gen.wrapping_add(1);
        self.seq += 1;
        Some((t, self.seq))
    }

    /// Queue the end of `t`'s segment on `c` at the current rate, as
    /// insertion `seq`.
    fn arm_segment(&mut self, c: u32, t: Tid, seq: u64) {
        let gen = self.cpus[c as usize].seg_gen;
        // Always arm an end, even for no work left: a rate change at the very
        // end of a segment must not lose it.
        let rem = self.tasks[t as usize].remaining.max(0.0);
        if rem == 0.0 {
            // It ends at once (a spinner released goes on): no time passes
            // at its rate, which the next segment sets (`sync_progress`
            // reads it over no time until then).
            return self.hold_as(seq, Kind::SegEnd, c, gen);
        }
        let rate = self.rate(c, t);
        self.cpus[c as usize].rate = rate;
        let dt = ceil_ns(rem / rate);
        self.push_as(self.now + dt, seq, Kind::SegEnd, c, gen);
    }

    /// `start_segment` for a rate change within an event, whose end is armed
    /// once the event has been handled (`arm_deferred_segments`), or before
    /// the CPU's task stops. A switch changes a core's running threads twice
    /// at one instant (one stops, the next starts), and each change restarted
    /// the sibling's segment; the first end was replaced by the second before
    /// any event could read it. The end is armed with the sequence number
    /// and generation the last restart took, and with the rate and work left
    /// that it would have read: everything that changes them in between (the
    /// core's frequency, a sibling's running, a spin, a new computation)
    /// restarts the segment itself, and that clears the deferral.
    fn defer_segment(&mut self, c: u32) {
        let Some((_, seq)) = self.restart_segment(c) else { return };
        let cpu = &mut self.cpus[c as usize];
        if cpu.seg_deferred == 0 {
            self.deferred_segments.push(c);
        }
        cpu.seg_deferred = seq;
    }

    /// Arm `c`'s deferred segment end, if it has one.
    pub(crate) fn arm_deferred_segment(&mut self, c: u32) {
        let seq = std::mem::take(&mut self.cpus[c as usize].seg_deferred);
        if seq != 0 {
            let t = self.cpus[c as usize].curr.expect("a deferred segment has a task");
            self.arm_segment(c, t, seq);
        }
    }

    /// Arm every deferred segment end: the event is handled.
    pub(crate) fn arm_deferred_segments(&mut self) {
        while let Some(c) = self.deferred_segments.pop() {
            self.arm_deferred_segment(c);
        }
    }

    /// A thread of `core` started or stopped running or spinning: rates,
    /// energy, DVFS and the socket's active-core count follow.
    pub(crate) fn core_changed(&mut self, core: u32) {
        let now = self.now;
        let mut threads = [0u32; 8];
        let n = self.machine.core_cpus[core as usize].len();
        threads[..n].copy_from_slice(&self.machine.core_cpus[core as usize]);
        let mut running = 0u8;
        let mut busy = false;
        let mut shallowest = u8::MAX;
        for &c in &threads[..n] {
            let cpu = &self.cpus[c as usize];
            let c0 = if cpu.mode == Mode::Running {
                running += 1;
                true
            } else {
                cpu.mode == Mode::Idle && cpu.spin_until > now
            };
            busy |= c0;
            let st = if cpu.mode == Mode::Idle { cpu.idle_state } else { 0 };
            shallowest = shallowest.min(st);
            if c0 != cpu.c0 {
                self.count_perf(c);
                self.cpus[c as usize].c0 = c0;
            }
        }
        // Rates of running threads change when a sibling starts or stops.
        let socket = self.machine.core_socket[core as usize];
        self.account_socket(socket, self.now);
        let st = &mut self.cores[core as usize];
        let rates_change = st.running != running;
        // The socket's power reads its cores' busy flags and frequencies and
        // an idle core's state: when none of them moves, it stays as it is.
        let power_changes = st.busy != busy || (!busy && st.idle_state != shallowest);
        st.running = running;
        st.idle_state = shallowest;
        if rates_change {
            for &c in &threads[..n] {
                if self.cpus[c as usize].mode == Mode::Running {
                    self.sync_progress(c);
                    self.defer_segment(c);
                }
            }
        }
        let st = &mut self.cores[core as usize];
        if st.busy != busy {
            st.set_busy(now, busy, &self.machine, self.governor);
            let socket = self.machine.core_socket[core as usize] as usize;
            let before = self.machine.turbo_by_active[self.socket_active[socket].max(1) as usize];
            if busy {
                self.socket_active[socket] += 1;
            } else {
                self.socket_active[socket] -= 1;
            }
            let after = self.machine.turbo_by_active[self.socket_active[socket].max(1) as usize];
            if before != after {
                self.ceiling_changed(socket as u32, after);
            }
            self.dvfs_kick(core);
        }
        if power_changes {
            self.socket_power_changed(socket);
        }
    }
}

// ---- what a CPU's tick sees: APERF/MPERF ----
impl Sim {
    /// Bring the CPU's APERF/MPERF to now: both count only in C0, APERF at
    /// the core's frequency, MPERF at a fixed rate (here: ns).
    fn count_perf(&mut self, c: u32) {
        let f = self.cores[self.machine.cpu_core[c as usize] as usize].freq;
        let cpu = &mut self.cpus[c as usize];
        if cpu.c0 {
            let dt = self.now - cpu.c0_t;
            cpu.aperf += f as f64 * dt as f64;
            cpu.mperf += dt;
        }
        cpu.c0_t = self.now;
    }

    /// The tick's frequency sample: the average frequency over the C0 time
    /// since the CPU's last tick, as the S_move patch reads APERF/MPERF
    /// (docs/model.md, S_move as patched). A CPU whose tick stopped while
    /// it idled averages over the C0 time on both sides of the idle period.
    pub(crate) fn tick_sample(&mut self, c: u32) {
        self.count_perf(c);
        let cpu = &mut self.cpus[c as usize];
        let dm = cpu.mperf - cpu.tick_mperf;
        if dm > 0 {
            cpu.tick_freq = ((cpu.aperf - cpu.tick_aperf) / dm as f64).round() as u32;
        }
        cpu.tick_aperf = cpu.aperf;
        cpu.tick_mperf = cpu.mperf;
        cpu.ticked = true;
    }
}

// ---- turbo ceilings and frequency changes ----
impl Sim {
    fn ceiling(&self, core: u32) -> u32 {
        let socket = self.machine.core_socket[core as usize] as usize;
        self.machine.turbo_by_active[self.socket_active[socket].max(1) as usize]
    }

    fn ceiling_changed(&mut self, socket: u32, ceiling: u32) {
        let cpc = self.machine.spec.cores_per_socket;
        for core in socket * cpc..(socket + 1) * cpc {
            if self.cores[core as usize].freq > ceiling {
                self.set_freq(core, ceiling);
            }
            self.dvfs_kick(core);
        }
    }

    /// Make sure a core whose hardware picks its frequency (a hardware
    /// governor, or HWP under schedutil) has a sample pending.
    pub(crate) fn dvfs_kick(&mut self, core: u32) {
        if self.governor == Governor::Schedutil && !self.machine.spec.dvfs.hwp {
            return;
        }
        let st = &mut self.cores[core as usize];
        if st.pending {
            return;
        }
        st.pending = true;
        st.gen = st.gen.wrapping_add(1);
        let gen = st.gen;
        // Samples fall on a global grid of hw_sample_us.
        let p = self.machine.spec.dvfs.hw_sample_us * 1000;
        let at = (self.now / p + 1) * p;
        self.push(at, Kind::Dvfs, core, gen);
    }

    /// A hardware governor's sample of `core` (its pending Dvfs event):
    /// the core moves to the frequency asked for, and samples go on until
    /// that frequency settles.
    pub(crate) fn dvfs_sample(&mut self, core: u32) {
        let ceiling = self.ceiling(core);
        let now = self.now;
        let (hw, again) = self.cores[core as usize].hw_sample(now, &self.machine, self.governor, ceiling);
        let st = &mut self.cores[core as usize];
        st.hw_req = hw;
        // Under schedutil with HWP, schedutil's request is the floor the
        // hardware chooses above (intel_cpufreq_adjust_hwp, Linux 5.9).
        let f = if self.governor == Governor::Schedutil { hw.max(st.su_req.min(ceiling)) } else { hw };
        self.set_freq(core, f);
        let st = &mut self.cores[core as usize];
        st.pending = false;
        if again {
            self.dvfs_kick(core);
        }
    }

    fn set_freq(&mut self, core: u32, f: u32) {
        if self.cores[core as usize].freq == f {
            return;
        }
        let socket = self.machine.core_socket[core as usize];
        self.account_socket(socket, self.now);
        let n = self.machine.core_cpus[core as usize].len();
        for i in 0..n {
            let c = self.machine.core_cpus[core as usize][i];
            self.sync_progress(c);
            self.count_perf(c);
        }
        self.cores[core as usize].freq = f;
        for i in 0..n {
            let c = self.machine.core_cpus[core as usize][i];
            if self.cpus[c as usize].mode == Mode::Running {
                self.start_segment(c);
            }
            self.emit(c, 0, ids::FREQ_CHANGE, f, 0);
        }
        self.socket_power_changed(socket);
    }
}

// ---- PELT and schedutil ----
impl Sim {
    pub(crate) fn pelt_update(&mut self, c: u32) {
        // PELT: 32 ms half-life (docs/model.md, PELT and schedutil), continuous form.
        // Only schedutil reads utilisations: the hardware governors skip it.
        if self.governor != Governor::Schedutil {
            return;
        }
        let cpu = &mut self.cpus[c as usize];
        let dt = self.now - cpu.util_t;
        if dt > 0 {
            let target = if cpu.mode == Mode::Running { 1.0 } else { 0.0 };
            cpu.util = self.decay.toward(target, cpu.util, dt);
            cpu.util_t = self.now;
        }
    }

    /// Bring a task's utilisation to now: it grew while it ran, decayed
    /// otherwise (PELT, 32 ms half-life).
    pub(crate) fn task_util(&mut self, t: Tid) -> f64 {
        let task = &mut self.tasks[t as usize];
        if self.governor != Governor::Schedutil {
            return task.util;
        }
        let dt = self.now.saturating_sub(task.util_t);
        if dt > 0 {
            let target = if task.state == TState::Running { 1.0 } else { 0.0 };
            task.util = self.decay.toward(target, task.util, dt);
            task.util_t = self.now;
        }
        task.util
    }

    /// schedutil: next_f = 1.25 x f_max x util, rate limited
    /// (docs/model.md, PELT and schedutil). `enqueued`, a task just placed on `c`:
    /// its utilisation joins the CPU's at enqueue, before it runs, as a
    /// cfs_rq's util_avg includes its queued tasks' (a new task brings 512,
    /// docs/model.md, PELT and schedutil), so the frequency asked for at a fork or a
    /// wake-up already counts the task.
    pub(crate) fn schedutil_update(&mut self, c: u32, enqueued: Option<Tid>) {
        if self.governor != Governor::Schedutil {
            return;
        }
        let core = self.machine.cpu_core[c as usize];
        let limit = self.machine.spec.dvfs.schedutil_rate_limit_us * 1000;
        let last = self.cores[core as usize].su_last;
        if last != u64::MAX && self.now < last + limit {
            return;
        }
        let n = self.machine.core_cpus[core as usize].len();
        let mut util: f64 = 0.0;
        if let Some(targets) = &self.perf_target {
            // sugov_get_util with every task on sched_ext: the CPU's
            // performance target stands for its utilisation.
            for i in 0..n {
                util = util.max(targets[self.machine.core_cpus[core as usize][i] as usize]);
            }
        } else {
            let extra = enqueued.map_or(0.0, |t| self.task_util(t));
            for i in 0..n {
                let s = self.machine.core_cpus[core as usize][i];
                self.pelt_update(s);
                let mine = if s == c { extra } else { 0.0 };
                util = util.max((self.cpus[s as usize].util + mine).min(1.0));
                // The CPU's utilisation includes its current task's, which a
                // task migrating or newly created brings along.
                if let Some(t) = self.cpus[s as usize].curr {
                    util = util.max(self.task_util(t));
                }
            }
        }
        let f = crate::dvfs::request(&self.machine, util, self.machine.min_khz(), self.ceiling(core));
        let st = &mut self.cores[core as usize];
        st.su_last = self.now;
        st.su_req = f;
        let f = if self.machine.spec.dvfs.hwp { f.max(st.hw_req.min(self.ceiling(core))) } else { f };
        self.set_freq(core, f);
    }
}

// ---- idle states and energy ----
impl Sim {
    /// The idle state `c` enters now. Menu-like choice: the deepest state
    /// whose target residency fits the expected idle time (rq->avg_idle).
    pub(crate) fn choose_idle_state(&self, c: u32) -> u8 {
        if self.offline[c as usize] {
            // An offline CPU draws what its deepest idle state does
            // (docs/model.md, CPU hotplug).
            return (self.machine.spec.idle.len() - 1) as u8;
        }
        let avg = self.cpus[c as usize].avg_idle;
        // The PM QoS resume latency limit (menu/teo: cpuidle_governor_latency_req).
        let limit = self.cpus[c as usize].resume_latency_us.unwrap_or(u64::MAX);
        self.machine
            .spec
            .idle
            .iter()
            .rposition(|s| (s.target_residency_us * 1000) as f64 <= avg && s.exit_latency_us <= limit)
            .unwrap_or(0) as u8
    }

    /// Add the socket's energy from when it was last counted up to `until`,
    /// at the power it has drawn since.
    fn account_socket(&mut self, socket: u32, until: u64) {
        if until <= self.socket_energy[socket as usize].since {
            return;
        }
        if self.socket_energy[socket as usize].power_stale {
            self.refresh_socket_power(socket);
        }
        let s = &mut self.socket_energy[socket as usize];
        s.energy += s.power * (until - s.since) as f64 * 1e-9;
        s.since = until;
    }

    /// A core of `socket` changed its frequency or state: its power is
    /// worked out before energy is next counted (`SocketEnergy::power_stale`).
    /// Every such change counts the energy up to now first, so the power
    /// then worked out is that of the socket as the last change left it.
    fn socket_power_changed(&mut self, socket: u32) {
        self.socket_energy[socket as usize].power_stale = true;
    }

    /// The power the socket's cores draw now, W, after a change of a core's
    /// frequency or state: the socket's voltage is the one its fastest busy
    /// core needs (Nest, section 5.2: the CPU's energy is set by the
    /// highest-frequency core on the socket), each busy core draws
    /// C x V^2 x f at that voltage, each idle core its idle state's power.
    pub(crate) fn refresh_socket_power(&mut self, socket: u32) {
        let cpc = self.machine.spec.cores_per_socket;
        let cores = &self.cores[(socket * cpc) as usize..((socket + 1) * cpc) as usize];
        let v_khz = cores.iter().filter(|c| c.busy).map(|c| c.freq).max().unwrap_or(0);
        let m = &self.machine;
        // One voltage for the socket, worked out once.
        let v = crate::dvfs::voltage(m, v_khz);
        let power = cores
            .iter()
            .map(|c| if c.busy { crate::dvfs::dynamic_power_at(m, c.freq, v) } else { m.spec.idle[c.idle_state as usize].power_w })
            .sum();
        let s = &mut self.socket_energy[socket as usize];
        s.power = power;
        s.power_stale = false;
    }

    /// The energy of each socket from the start of the run to `end`: its
    /// cores' (counted up to `end`) and its static power.
    pub(crate) fn energy_per_socket(&mut self, end: u64) -> Vec<f64> {
        for socket in 0..self.machine.nr_sockets() {
            self.account_socket(socket, end);
        }
        let static_w = self.machine.spec.power.static_w_per_socket;
        self.socket_energy.iter().map(|s| s.energy + static_w * end as f64 * 1e-9).collect()
    }
}

/// `x.ceil() as u64` for the non-negative durations of segments, without a
/// call into libm (a baseline x86-64 build has no rounding instruction).
#[inline]
fn ceil_ns(x: f64) -> u64 {
    // `as` truncates toward zero and saturates, as after ceil().
    let i = x as u64;
    if (i as f64) < x && i < u64::MAX {
        i + 1
    } else {
        i
    }
}

#[cfg(test)]
mod tests {
    use super::ceil_ns;

    #[test]
    fn a_socket_runs_at_the_voltage_of_its_fastest_busy_core() {
        use crate::dvfs::dynamic_power;
        use crate::engine::{CountSink, Engine};
        let m = crate::Machine::load("xeon-gold-5218-2s").unwrap();
        let p = crate::policies::make_policy("cfs", &m).unwrap();
        use crate::program::{Amount, Step, Workload};
        let mut w = Workload::new("one");
        let prog = w.add("t", vec![Step::Compute(Amount::fixed(1e6)), Step::Exit]);
        w.initial.push((prog, "t".into(), Some(0)));
        let mut e = Engine::new(m.clone(), crate::Governor::Schedutil, p, w, 1, Box::new(CountSink::default())).unwrap();
        let (fast, slow) = (m.max_khz(), m.min_khz());
        let idle = m.spec.idle[m.spec.idle.len() - 1].power_w;
        let cpc = m.spec.cores_per_socket as f64;
        e.sim.refresh_socket_power(0);
        assert!((e.sim.socket_energy[0].power - cpc * idle).abs() < 1e-9);
        // One slow busy core: its own voltage.
        e.sim.cores[1].busy = true;
        e.sim.cores[1].freq = slow;
        e.sim.refresh_socket_power(0);
        let alone = dynamic_power(&m, slow, slow) + (cpc - 1.0) * idle;
        assert!((e.sim.socket_energy[0].power - alone).abs() < 1e-9);
        // A fast core beside it raises the slow one's voltage too.
        e.sim.cores[0].busy = true;
        e.sim.cores[0].freq = fast;
        e.sim.refresh_socket_power(0);
        let both = dynamic_power(&m, fast, fast) + dynamic_power(&m, slow, fast) + (cpc - 2.0) * idle;
        assert!((e.sim.socket_energy[0].power - both).abs() < 1e-9);
        assert!(dynamic_power(&m, slow, fast) > 2.0 * dynamic_power(&m, slow, slow));
        // The other socket is not affected.
        e.sim.refresh_socket_power(1);
        assert!((e.sim.socket_energy[1].power - cpc * idle).abs() < 1e-9);
    }

    #[test]
    fn ceil_ns_is_ceil() {
        let mut x = 0.0f64;
        for v in [0.0, 0.3, 1.0, 1.0000001, 2.5, 1e15 + 0.5, 4503599627370495.5, 9007199254740993.0, 1e19, 1e30, f64::INFINITY] {
            assert_eq!(ceil_ns(v), v.ceil() as u64, "{v}");
        }
        for _ in 0..100_000 {
            x = x * 1.37 + 0.123;
            if x > 1e12 {
                x /= 1e9;
            }
            assert_eq!(ceil_ns(x), x.ceil() as u64, "{x}");
        }
    }
}
