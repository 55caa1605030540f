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
pub(super) extern "C" fn k_cpu_curr(ctx: *mut c_void, cpu: c_int) -> TaskPtr {
    let k = kernel(ctx);
    if !k.cpu_valid(cpu, "in scx_bpf_cpu_curr") {
        return std::ptr::null_mut();
    }
    match k.sim().cpu(cpu as u32).curr {
        Some(t) => k.tasks.get(t as usize).and_then(Option::as_ref).map_or(std::ptr::null_mut(), |s| s.p),
        None => std::ptr::null_mut(),
    }
}
/// ext.c, scx_bpf_task_running: task_rq(p)->curr == p.
pub(super) extern "C" fn k_task_running(ctx: *mut c_void, t: u32) -> c_int {
    let k = kernel(ctx);
    let cpu = k.sim().task(t).cpu;
    (k.sim().cpu(cpu).curr == Some(t)) as c_int
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
    // ext.c, mark_direct_dispatch: an insert from select_cpu (or from
    // enqueue for the task being enqueued) is the task's direct dispatch,
    // done when the kernel enqueues it.
    if k.context == Context::SelectCpu(t) {
        k.ts_mut(t).direct = Some((kind, id, enq, vtime));
        return;
    }
    // ext.c, finish_dispatch: an insert from ops.dispatch takes effect only
    // while the program still holds the task (SCX_OPSS_QUEUED with the
    // sequence number the insert saw, SCX_OPSS_QSEQ); a task dequeued,
    // running, already inserted or asleep is ignored. The simulator's CPUs
    // act one at a time, so no dequeue and re-enqueue can fall between an
    // insert and its flush: the number always matches, and the state
    // decides.
    if matches!(k.context, Context::Dispatch(_)) && !k.ts(t).custody {
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
/// ext.c, scx_bpf_dsq_peek: the task a consumer would take first.
pub(super) extern "C" fn k_dsq_peek(ctx: *mut c_void, kind: u32, id: u64) -> TaskPtr {
    let k = kernel(ctx);
    let first = match kind {
        abi::DSQ_LOCAL => {
            let c = k.local_cpu(None);
            k.local[c as usize].front().copied()
        }
        abi::DSQ_LOCAL_ON if (id as u32) < k.nr_cpus => k.local[id as usize].front().copied(),
        _ => match k.dsq_ref(kind, id) {
            Some(q) => q.first(),
            None => {
                k.fail(format!("scx_bpf_dsq_peek: non-existent DSQ 0x{id:x}"));
                None
            }
        },
    };
    first.and_then(|t| k.tasks.get(t as usize).and_then(Option::as_ref)).map_or(std::ptr::null_mut(), |s| s.p)
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
    // ext.c, move_task_between_dsqs: a task that may not run on the target
    // CPU is an error (task_can_run_on_remote_rq, enforced), as in insert.
    k.insert(t, kind, id, None, enq);
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
/// ext_idle.c, scx_bpf_pick_idle_cpu (node -1) and
/// scx_bpf_pick_idle_cpu_node: each refused when the idle masks are not
/// kept as it needs (per node or global).
pub(super) extern "C" fn k_pick_idle_cpu(ctx: *mut c_void, allowed: *const u64, flags: u32, node: c_int) -> c_int {
    let k = kernel(ctx);
    if !k.node_mode_ok(node) {
        return -libc::EBUSY;
    }
    // SAFETY: `allowed` is a cpumask of the program's (1024 bytes or more);
    // the first 1024 CPUs are read.
    let mask: &Mask = unsafe { &*(allowed as *const Mask) };
    let node = (node >= 0).then_some(node as u32);
    k.pick_idle_from(mask, flags & abi::PICK_CORE != 0, node, flags & abi::PICK_IN_NODE != 0)
        .map_or(-libc::EBUSY, |c| c as c_int)
}
pub(super) extern "C" fn k_any_and_distribute(ctx: *mut c_void, a: *const u64, b: *const u64) -> c_int {
    let k = kernel(ctx);
    // SAFETY: `a` and `b` are cpumasks of the program's, longer than a Mask;
    // the first 1024 CPUs are read.
    let (a, b): (&Mask, &Mask) = unsafe { (&*(a as *const Mask), &*(b as *const Mask)) };
    k.any_and_distribute(a, b).map_or(abi::MASK_WORDS as c_int * 64, |c| c as c_int)
}
/// ext_idle.c, select_cpu_from_kfunc: the built-in selection for
/// scx_bpf_select_cpu_dfl (allowed NULL) and __scx_bpf_select_cpu_and.
pub(super) extern "C" fn k_select_cpu_and(ctx: *mut c_void, t: u32, prev: c_int, sync: u32, allowed: *const u64, flags: u32) -> c_int {
    let k = kernel(ctx);
    if prev >= 0 && !k.cpu_valid(prev, "as prev_cpu of the built-in idle selection") {
        return -libc::EINVAL;
    }
    // SAFETY: `allowed`, if given, is a cpumask of the program's.
    let within: Option<Mask> = (!allowed.is_null()).then(|| unsafe { *(allowed as *const Mask) });
    k.select_cpu(t, prev.max(0) as u32, sync != 0, within.as_ref(), flags & abi::PICK_CORE != 0)
        .map_or(-libc::EBUSY, |c| c as c_int)
}
/// The idle masks, global (node -1) or one node's (a view kept per node).
pub(super) extern "C" fn k_idle_mask(ctx: *mut c_void, smt: u32, node: c_int) -> *const u64 {
    let k = kernel(ctx);
    let smt = (smt != 0 && k.smt) as usize;
    if !k.node_mode_ok(node) {
        return k.none_mask.as_ptr();
    }
    if node < 0 {
        return if smt == 1 { k.idle_smt.as_ptr() } else { k.idle_cpu.as_ptr() };
    }
    let n = node as usize;
    let src = if smt == 1 { &k.idle_smt } else { &k.idle_cpu };
    let mut view = [0u64; abi::MASK_WORDS];
    for (i, w) in k.node_masks[n].iter().enumerate() {
        view[i] = src[i] & w;
    }
    *k.node_views[n][smt] = view;
    k.node_views[n][smt].as_ptr()
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
/// ext.c, scx_bpf_cpuperf_set: a target above SCX_CPUPERF_ONE is an error;
/// with a run queue locked only that CPU's target may be set (the lock of
/// another would risk an ABBA deadlock), without one any CPU's.
pub(super) extern "C" fn k_cpuperf_set(ctx: *mut c_void, cpu: c_int, perf: u32) {
    let k = kernel(ctx);
    let one = k.cpuperf_one;
    if perf > one {
        k.fail(format!("Invalid cpuperf target {perf} for CPU {cpu}"));
        return;
    }
    if !k.cpu_valid(cpu, "in scx_bpf_cpuperf_set") {
        return;
    }
    if k.locked.is_some_and(|rq| rq != cpu as u32) {
        k.fail(format!("Invalid target CPU {cpu}"));
        return;
    }
    k.sim().set_perf_target(cpu as u32, perf as f64 / one as f64);
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
