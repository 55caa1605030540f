// SPDX-License-Identifier: GPL-2.0-only
//! A task's weight as the kernel derives it from its nice value and
//! scheduling policy: the fair class's load weight (kernel/sched/core.c,
//! `sched_prio_to_weight`, `set_load_weight`) and the weight sched_ext gives
//! the program in `p->scx.weight` (kernel/sched/ext.c, `scx_enable_task`,
//! `reweight_task_scx`; `sched_weight_to_cgroup` in kernel/sched/sched.h).

/// The load weight of a nice-0 task (NICE_0_LOAD, scale_load_down'd).
pub const NICE_0_LOAD: u64 = 1024;

/// The load weight of a SCHED_IDLE task, whatever its nice value
/// (WEIGHT_IDLEPRIO, kernel/sched/sched.h).
pub const WEIGHT_IDLEPRIO: u64 = 3;

/// `sched_prio_to_weight`: nice -20 to 19; each step is about 10 % of CPU
/// time between two competing tasks (the ratio 1.25).
const PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904, 3906, 3121, 2501,
    1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
];

/// The Linux value of SCHED_NORMAL and SCHED_IDLE (include/uapi/linux/sched.h),
/// as `p->policy` shows them to a sched_ext program.
pub const SCHED_NORMAL: i32 = 0;
pub const SCHED_IDLE: i32 = 5;

/// The fair class's load weight of a task of nice `nice` (clamped to
/// -20..19), or of SCHED_IDLE (`set_load_weight`: `task_has_idle_policy`).
pub fn load_weight(nice: i8, idle: bool) -> u64 {
    if idle {
        WEIGHT_IDLEPRIO
    } else {
        PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
    }
}

/// `sched_weight_to_cgroup`: a load weight on the cgroup scale (100 for
/// nice 0), rounded to nearest, within CGROUP_WEIGHT_MIN..=MAX (1..=10000).
/// A SCHED_IDLE task's 3 becomes 1.
pub fn cgroup_weight(load_weight: u64) -> u32 {
    ((load_weight * 100 + NICE_0_LOAD / 2) / NICE_0_LOAD).clamp(1, 10_000) as u32
}

/// `calc_delta_fair`: `delta` ns of run time as virtual time for a task of
/// weight `w`, delta x NICE_0_LOAD / w. A nice-0 task's is `delta` itself,
/// as in the kernel; for others the division is exact where the kernel
/// multiplies by a 32-bit inverse (`__calc_delta`), a difference of at
/// most a few ns per second.
pub fn delta_fair(delta: u64, w: u64) -> u64 {
    if w == NICE_0_LOAD {
        delta
    } else {
        (delta as u128 * NICE_0_LOAD as u128 / w.max(1) as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_the_kernel() {
        assert_eq!(load_weight(0, false), 1024);
        assert_eq!(load_weight(-20, false), 88761);
        assert_eq!(load_weight(19, false), 15);
        assert_eq!(load_weight(19, true), 3);
        assert_eq!(cgroup_weight(1024), 100);
        assert_eq!(cgroup_weight(88761), 8668);
        assert_eq!(cgroup_weight(15), 1);
        assert_eq!(cgroup_weight(3), 1);
        assert_eq!(cgroup_weight(1277), 125);
        assert_eq!(delta_fair(1000, 1024), 1000);
        assert_eq!(delta_fair(1000, 2048), 500);
    }
}
