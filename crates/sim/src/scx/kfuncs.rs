// SPDX-License-Identifier: GPL-2.0-only
//! The program's calls into the kernel (host.h's wc_host_ops): the kfuncs
//! and helpers, each on the kernel side of kernel.rs.

use super::*;

// The program's calls into the kernel (host.h's wc_host_ops).

pub(super) fn kernel<'a>(ctx: *mut c_void) -> &'a mut Kernel {
    // SAFETY: ctx is the Box<Kernel> of the ScxPolicy that handed the
    // program this table; it outlives the program (field order in ScxPolicy).
    unsafe { &mut *(ctx as *mut Kernel) }
}

pub(super) extern "C" fn k_now(ctx: *mut c_void) -> u64 {
    kernel(ctx).sim().now() + CLOCK_OFFSET_NS
}
pub(super) extern "C" fn k_cpu(ctx: *mut c_void) -> c_int {
    kernel(ctx).cpu as c_int
}
pub(super) extern "C" fn k_task_cpu(ctx: *mut c_void, t: u32) -> c_int {
    kernel(ctx).sim().task(t).cpu as c_int
}
pub(super) extern "C" fn k_task_from_pid(ctx: *mut c_void, pid: c_int) -> TaskPtr {
    let k = kernel(ctx);
    match k.pid_tid.get(&pid) {
        Some(&t) => k.tasks[t as usize].as_ref().map_or(std::ptr::null_mut(), |s| s.p),
        None => std::ptr::null_mut(),
    }
}
pub(super) extern "C" fn k_current_task(ctx: *mut c_void) -> TaskPtr {
    let k = kernel(ctx);
    let cpu = k.cpu;
    match k.sim().cpu(cpu).curr {
        Some(t) => k.tasks.get(t as usize).and_then(Option::as_ref).map_or(std::ptr::null_mut(), |s| s.p),
        None => std::ptr::null_mut(),
    }
}
pub(super) extern "C" fn k_create_dsq(ctx: *mut c_void, id: u64) -> c_int {
    let k = kernel(ctx);
    if k.user.contains_key(&id) {
        return -libc::EEXIST;
    }
    k.user.insert(id, Dsq::default());
    0
}
pub(super) extern "C" fn k_dsq_insert(ctx: *mut c_void, t: u32, kind: u32, id: u64, by_vtime: u32, vtime: u64, enq: u32) {
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
pub(super) extern "C" fn k_dsq_move_to_local(ctx: *mut c_void, kind: u32, id: u64) -> c_int {
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
pub(super) extern "C" fn k_dsq_nr_queued(ctx: *mut c_void, kind: u32, id: u64) -> c_int {
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
pub(super) struct DsqIter {
    pub(super) kind: u32,
    pub(super) id: u64,
    pub(super) tasks: Vec<Tid>,
    pub(super) next: usize,
}

/// The iterator slot kept in word 0 of `it` (slot + 1; 0 is none).
pub(super) fn iter_slot(it: *mut u64) -> usize {
    // SAFETY: `it` points to the 6 words of the program's bpf_iter_scx_dsq.
    unsafe { *it as usize }
}
pub(super) extern "C" fn k_dsq_iter_new(ctx: *mut c_void, it: *mut u64, kind: u32, id: u64) -> c_int {
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
pub(super) extern "C" fn k_dsq_iter_next(ctx: *mut c_void, it: *mut u64) -> TaskPtr {
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
pub(super) extern "C" fn k_dsq_iter_destroy(ctx: *mut c_void, it: *mut u64) {
    let k = kernel(ctx);
    if let Some(s) = iter_slot(it).checked_sub(1) {
        if let Some(e) = k.iters.get_mut(s) {
            *e = None;
        }
    }
    // SAFETY: as in iter_slot.
    unsafe { *it = 0 };
}
pub(super) extern "C" fn k_dsq_move(ctx: *mut c_void, it: *mut u64, t: u32, kind: u32, id: u64, enq: u32) -> c_int {
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
pub(super) extern "C" fn k_kick_cpu(ctx: *mut c_void, cpu: c_int, kick: u32) {
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
pub(super) extern "C" fn k_test_and_clear_cpu_idle(ctx: *mut c_void, cpu: c_int) -> c_int {
    (cpu >= 0 && kernel(ctx).test_and_clear_idle(cpu as u32)) as c_int
}
pub(super) extern "C" fn k_pick_idle_cpu(ctx: *mut c_void, allowed: *const u64, core_only: u32) -> c_int {
    let k = kernel(ctx);
    // SAFETY: `allowed` is a cpumask of the program's (1024 bytes).
    let mask: &Mask = unsafe { &*(allowed as *const Mask) };
    // (The first 1024 CPUs of the kernel's longer mask.)
    k.pick_idle(mask, core_only != 0).map_or(-libc::EBUSY, |c| c as c_int)
}
pub(super) extern "C" fn k_any_and_distribute(ctx: *mut c_void, a: *const u64, b: *const u64) -> c_int {
    let k = kernel(ctx);
    // SAFETY: `a` and `b` are cpumasks of the program's, longer than a Mask;
    // the first 1024 CPUs are read.
    let (a, b): (&Mask, &Mask) = unsafe { (&*(a as *const Mask), &*(b as *const Mask)) };
    k.any_and_distribute(a, b).map_or(abi::MASK_WORDS as c_int * 64, |c| c as c_int)
}
pub(super) extern "C" fn k_select_cpu_dfl(ctx: *mut c_void, t: u32, prev: c_int, sync: u32, found: *mut u32) -> c_int {
    let k = kernel(ctx);
    let (cpu, idle) = k.select_cpu_dfl(t, prev.max(0) as u32, sync != 0);
    // SAFETY: `found` points to a local of the caller in host.c.
    unsafe { *found = idle as u32 };
    cpu as c_int
}
pub(super) extern "C" fn k_idle_mask(ctx: *mut c_void, smt: u32) -> *const u64 {
    let k = kernel(ctx);
    if smt != 0 && k.smt {
        k.idle_smt.as_ptr()
    } else {
        k.idle_cpu.as_ptr()
    }
}
pub(super) extern "C" fn k_cpuperf_cur(ctx: *mut c_void, cpu: c_int) -> u32 {
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
pub(super) extern "C" fn k_cpuperf_set(ctx: *mut c_void, cpu: c_int, perf: u32) {
    let k = kernel(ctx);
    if k.cpu_valid(cpu, "in scx_bpf_cpuperf_set") {
        let one = k.cpuperf_one;
        k.sim().set_perf_target(cpu as u32, perf.min(one) as f64 / one as f64);
    }
}
pub(super) extern "C" fn k_timer_start(ctx: *mut c_void, slot: u32, after: u64) {
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
pub(super) extern "C" fn k_timer_cancel(ctx: *mut c_void, slot: u32) -> c_int {
    let k = kernel(ctx);
    match k.timers.get_mut(slot as usize).and_then(Option::take) {
        Some((id, _)) => k.sim().cancel_timer(id) as c_int,
        None => 0,
    }
}
pub(super) extern "C" fn k_error(ctx: *mut c_void, msg: *const c_char) {
    // SAFETY: host.c passes a NUL-terminated buffer.
    let m = unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned();
    kernel(ctx).fail(m);
}

/// The program's entry points, for the few kfuncs that act on a task.
pub(super) fn k_fns<'a>(k: &Kernel) -> &'a program::Fns {
    // SAFETY: set at construction to the boxed Fns of the ScxPolicy's
    // program, which outlives every use the kernel makes of it.
    unsafe { &*k.fns }
}
