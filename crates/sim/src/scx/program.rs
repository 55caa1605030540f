// SPDX-License-Identifier: GPL-2.0-only
//! A sched_ext program built for the host by build.rs (warmcore's own, a
//! peer's; src/scx/build_program.rs), loaded once per run.
//!
//! Each run loads its own copy: the shared object is written to an anonymous
//! memory file and opened from there, and the dynamic loader counts each
//! such file as a distinct object, so every run has its own globals, maps
//! and masks. Runs in parallel threads (`compare`, `reproduce`, Python) never
//! share the program's state.

use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// The host build of warmcore's program (crates/sched/src/bpf/main.bpf.c and its parts).
pub(super) static SHARED_OBJECT: &[u8] = include_bytes!(env!("WARMCORE_SCX_SO"));

/// An opaque `struct task_struct` of the program's copy.
pub type TaskPtr = *mut c_void;

/// host.h's `struct wc_host_ops`: the kernel services, implemented by the
/// simulator (kfuncs.rs). The field order is the C struct's.
#[repr(C)]
pub struct HostOps {
    pub ctx: *mut c_void,
    pub hz: u64,
    pub now: extern "C" fn(*mut c_void) -> u64,
    pub cpu: extern "C" fn(*mut c_void) -> c_int,
    pub task_cpu: extern "C" fn(*mut c_void, u32) -> c_int,
    pub task_from_pid: extern "C" fn(*mut c_void, c_int) -> TaskPtr,
    pub current_task: extern "C" fn(*mut c_void) -> TaskPtr,
    pub cpu_curr: extern "C" fn(*mut c_void, c_int) -> TaskPtr,
    pub task_running: extern "C" fn(*mut c_void, u32) -> c_int,
    pub create_dsq: extern "C" fn(*mut c_void, u64) -> c_int,
    pub dsq_insert: extern "C" fn(*mut c_void, u32, u32, u64, u32, u64, u32),
    pub dsq_move_to_local: extern "C" fn(*mut c_void, u32, u64) -> c_int,
    pub dsq_nr_queued: extern "C" fn(*mut c_void, u32, u64) -> c_int,
    pub dsq_peek: extern "C" fn(*mut c_void, u32, u64) -> TaskPtr,
    pub dsq_iter_new: extern "C" fn(*mut c_void, *mut u64, u32, u64) -> c_int,
    pub dsq_iter_next: extern "C" fn(*mut c_void, *mut u64) -> TaskPtr,
    pub dsq_iter_destroy: extern "C" fn(*mut c_void, *mut u64),
    pub dsq_move: extern "C" fn(*mut c_void, *mut u64, u32, u32, u64, u32) -> c_int,
    pub kick_cpu: extern "C" fn(*mut c_void, c_int, u32),
    pub test_and_clear_cpu_idle: extern "C" fn(*mut c_void, c_int) -> c_int,
    pub pick_idle_cpu: extern "C" fn(*mut c_void, *const u64, u32, c_int) -> c_int,
    pub any_and_distribute: extern "C" fn(*mut c_void, *const u64, *const u64) -> c_int,
    pub select_cpu_and: extern "C" fn(*mut c_void, u32, c_int, u32, *const u64, u32) -> c_int,
    pub idle_mask: extern "C" fn(*mut c_void, u32, c_int) -> *const u64,
    pub cpuperf_cur: extern "C" fn(*mut c_void, c_int) -> u32,
    pub cpuperf_set: extern "C" fn(*mut c_void, c_int, u32),
    pub timer_start: extern "C" fn(*mut c_void, u32, u64),
    pub timer_cancel: extern "C" fn(*mut c_void, u32) -> c_int,
    pub error: extern "C" fn(*mut c_void, *const c_char),
}

/// host.h's `struct wc_sim_topology`; the arrays are the caller's.
#[repr(C)]
pub struct TopologyC {
    pub nr_cpus: u32,
    pub nr_nodes: u32,
    pub cpu_node: *const c_int,
    pub llc_id: *const c_int,
    pub llc_size: *const c_int,
}

/// tables.h's `struct wc_field` and `struct wc_syscall`.
#[repr(C)]
struct FieldC {
    name: *const c_char,
    offset: std::ffi::c_ulong,
    size: std::ffi::c_ulong,
}

#[repr(C)]
struct SyscallC {
    name: *const c_char,
    f: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
    arg_size: std::ffi::c_ulong,
    fields: *const FieldC,
}

/// A `SEC("syscall")` program and the layout of the struct its argument
/// points to.
#[derive(Clone, Debug)]
pub struct Syscall {
    f: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub arg_size: usize,
    /// (member, offset, size).
    pub fields: Vec<(String, usize, usize)>,
}

/// host.h's numbering of dispatch queues, flags and operations.
pub mod abi {
    pub const DSQ_USER: u32 = 0;
    pub const DSQ_GLOBAL: u32 = 1;
    pub const DSQ_LOCAL: u32 = 2;
    pub const DSQ_LOCAL_ON: u32 = 3;
    pub const ENQ_WAKEUP: u32 = 1;
    pub const ENQ_HEAD: u32 = 2;
    pub const ENQ_PREEMPT: u32 = 4;
    pub const ENQ_LAST: u32 = 8;
    pub const ENQ_CPU_SELECTED: u32 = 16;
    pub const ENQ_IMMED: u32 = 32;
    pub const ENQ_REENQ: u32 = 64;
    pub const ENQ_RESTORE: u32 = 128;
    pub const KICK_PREEMPT: u32 = 2;
    pub const PICK_CORE: u32 = 1;
    pub const PICK_IN_NODE: u32 = 2;
    pub const WAKE_TTWU: u32 = 0;
    pub const WAKE_FORK: u32 = 1;
    pub const OP_SELECT_CPU: u32 = 1 << 0;
    pub const OP_ENQUEUE: u32 = 1 << 1;
    pub const OP_DISPATCH: u32 = 1 << 2;
    pub const OP_RUNNING: u32 = 1 << 3;
    pub const OP_STOPPING: u32 = 1 << 4;
    pub const OP_TICK: u32 = 1 << 5;
    pub const OP_UPDATE_IDLE: u32 = 1 << 6;
    pub const OP_ENABLE: u32 = 1 << 7;
    pub const OP_INIT_TASK: u32 = 1 << 8;
    pub const OP_EXIT_TASK: u32 = 1 << 9;
    pub const OP_INIT: u32 = 1 << 10;
    pub const OP_EXIT: u32 = 1 << 11;
    pub const OP_RUNNABLE: u32 = 1 << 12;
    pub const OP_QUIESCENT: u32 = 1 << 13;
    pub const OP_CGROUP_INIT: u32 = 1 << 14;
    pub const OP_SET_CPUMASK: u32 = 1 << 15;
    pub const OP_DEQUEUE: u32 = 1 << 16;
    pub const OP_CPU_ONLINE: u32 = 1 << 17;
    pub const OP_CPU_OFFLINE: u32 = 1 << 18;
    /// wc_sim_exit's reasons (host.h, enum wc_sim_exit_why).
    pub const EXIT_ERROR: u32 = 1;
    pub const EXIT_HOTPLUG: u32 = 2;
    /// kernel/sched/sched.h: the dequeue flags of a sleep (SCX_DEQ_SLEEP)
    /// and of a property change (sched_setaffinity, nice),
    /// DEQUEUE_SAVE | DEQUEUE_NOCLOCK.
    pub const DEQ_SLEEP: u64 = 0x01;
    pub const DEQ_SAVE: u64 = 0x02;
    pub const DEQ_NOCLOCK: u64 = 0x08;
    pub const MASK_WORDS: usize = 128;
}

macro_rules! entry_points {
    ($($name:ident: $ty:ty,)*) => {
        /// The program's entry points (host.c's `wc_sim_*`).
        #[allow(non_snake_case)]
        pub struct Fns { $(pub $name: $ty,)* }
        impl Fns {
            /// # Safety
            /// `handle` is a live dlopen handle of a host build.
            unsafe fn resolve(handle: *mut c_void) -> Result<Fns, String> {
                Ok(Fns { $($name: {
                    let sym = concat!("wc_sim_", stringify!($name), "\0");
                    // SAFETY: the symbol name is NUL-terminated; the handle is live.
                    let p = unsafe { libc::dlsym(handle, sym.as_ptr() as *const c_char) };
                    if p.is_null() {
                        return Err(format!("the sched_ext program's host build lacks {}", &sym[..sym.len() - 1]));
                    }
                    // SAFETY: host.c defines the symbol with this signature.
                    unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
                },)* })
            }
        }
    };
}

entry_points! {
    attach: unsafe extern "C" fn(*const HostOps, *const TopologyC, *mut *const c_char) -> c_int,
    detach: unsafe extern "C" fn(),
    global_set: unsafe extern "C" fn(*const c_char, u32, u64) -> c_int,
    global_get: unsafe extern "C" fn(*const c_char, u32, *mut u64) -> c_int,
    global_info: unsafe extern "C" fn(*const c_char, *mut u32, *mut u32) -> c_int,
    syscall: unsafe extern "C" fn(*const c_char) -> *const c_void,
    map: unsafe extern "C" fn(*const c_char, *mut u32, *mut u32, *mut u32, *mut u32) -> *mut u8,
    map_info: unsafe extern "C" fn(*const c_char, *mut u32, *mut u32) -> c_int,
    map_update: unsafe extern "C" fn(*const c_char, *const c_void, *const c_void) -> i64,
    task_new: unsafe extern "C" fn(u32, c_int, c_int) -> TaskPtr,
    task_free: unsafe extern "C" fn(TaskPtr),
    task_set_cpus: unsafe extern "C" fn(TaskPtr, *const u64, u32),
    set_cpumask: unsafe extern "C" fn(TaskPtr),
    task_set_prio: unsafe extern "C" fn(TaskPtr, c_int, c_int, u32),
    task_set_migration_disabled: unsafe extern "C" fn(TaskPtr, u32),
    task_set_cpus_ptr: unsafe extern "C" fn(TaskPtr, c_int),
    task_slice: unsafe extern "C" fn(TaskPtr) -> u64,
    task_set_slice: unsafe extern "C" fn(TaskPtr, u64),
    task_set_runtime: unsafe extern "C" fn(TaskPtr, u64),
    task_set_state: unsafe extern "C" fn(TaskPtr, u32, u32),
    slice_inf_is: unsafe extern "C" fn(u64) -> u32,
    cpuperf_one: unsafe extern "C" fn() -> u32,
    ops_mask: unsafe extern "C" fn() -> u32,
    timeout_ms: unsafe extern "C" fn() -> u32,
    select_cpu: unsafe extern "C" fn(TaskPtr, c_int, u32, u32) -> c_int,
    enqueue: unsafe extern "C" fn(TaskPtr, u32),
    runnable: unsafe extern "C" fn(TaskPtr, u32),
    quiescent: unsafe extern "C" fn(TaskPtr, u64),
    dequeue: unsafe extern "C" fn(TaskPtr, u64),
    dispatch: unsafe extern "C" fn(c_int, TaskPtr),
    running: unsafe extern "C" fn(TaskPtr),
    stopping: unsafe extern "C" fn(TaskPtr, u32),
    tick: unsafe extern "C" fn(TaskPtr),
    cpu_online: unsafe extern "C" fn(c_int),
    cpu_offline: unsafe extern "C" fn(c_int),
    set_online: unsafe extern "C" fn(c_int, bool),
    update_idle: unsafe extern "C" fn(c_int, u32),
    enable: unsafe extern "C" fn(TaskPtr),
    init_task: unsafe extern "C" fn(TaskPtr, u32) -> c_int,
    exit_task: unsafe extern "C" fn(TaskPtr),
    init: unsafe extern "C" fn() -> c_int,
    cgroup_init: unsafe extern "C" fn() -> c_int,
    exit: unsafe extern "C" fn(u32, *const c_char),
    timer_fire: unsafe extern "C" fn(u32),
}

/// One loaded copy of the program.
pub struct Program {
    handle: *mut c_void,
    fd: c_int,
    attached: bool,
    pub f: Fns,
}

impl Program {
    /// A host build of a program: refused, naming it, if it needs a symbol
    /// the host does not provide (`missing_symbols`).
    pub fn load_from(shared_object: &[u8]) -> Result<Program, String> {
        if let Some(what) = missing_symbols(shared_object)?.into_iter().next() {
            return Err(what);
        }
        // SAFETY: plain libc calls on a file descriptor this function owns;
        // the buffer is the shared object, valid for its length.
        unsafe {
            let fd = libc::memfd_create(c"warmcore-scx".as_ptr(), libc::MFD_CLOEXEC);
            if fd < 0 {
                return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
            }
            let mut done = 0;
            while done < shared_object.len() {
                let n = libc::write(fd, shared_object[done..].as_ptr() as *const c_void, shared_object.len() - done);
                if n <= 0 {
                    let e = std::io::Error::last_os_error();
                    libc::close(fd);
                    return Err(format!("writing the sched_ext program to memory: {e}"));
                }
                done += n as usize;
            }
            let path = CString::new(format!("/proc/self/fd/{fd}")).unwrap();
            let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            if handle.is_null() {
                let why = CStr::from_ptr(libc::dlerror()).to_string_lossy().into_owned();
                libc::close(fd);
                return Err(format!("loading the sched_ext program: {why}"));
            }
            match Fns::resolve(handle) {
                Ok(f) => Ok(Program { handle, fd, attached: false, f }),
                Err(e) => {
                    libc::dlclose(handle);
                    libc::close(fd);
                    Err(e)
                }
            }
        }
    }

    /// Hand the program its kernel; `ops` must stay at its address until
    /// the program is dropped.
    pub fn attach(&mut self, ops: *const HostOps, topo: &TopologyC) -> Result<(), String> {
        let mut what: *const c_char = std::ptr::null();
        // SAFETY: the caller keeps `ops` alive and in place for our
        // lifetime; host.c copies the topology's arrays.
        let r = unsafe { (self.f.attach)(ops, topo, &mut what) };
        if r != 0 {
            let name = if what.is_null() {
                String::new()
            } else {
                // SAFETY: host.c sets it to a map's NUL-terminated name or "".
                unsafe { CStr::from_ptr(what) }.to_string_lossy().into_owned()
            };
            return Err(match -r {
                libc::EOPNOTSUPP => format!("the program's map {name} is of a type the simulator's host does not model"),
                libc::E2BIG => format!("the program's map {name}: too many local storage maps"),
                _ => format!("setting up the sched_ext program's maps: error {r}"),
            });
        }
        self.attached = true;
        Ok(())
    }

    /// Set element `index` of a global of the program (a `const volatile`
    /// one before it runs, as a loader writes .rodata; or .data, .bss).
    pub fn set(&mut self, name: &str, index: u32, value: u64) -> Result<(), String> {
        let c = CString::new(name).map_err(|e| e.to_string())?;
        // SAFETY: a NUL-terminated name; host.c checks the index.
        match unsafe { (self.f.global_set)(c.as_ptr(), index, value) } {
            0 => Ok(()),
            e if e == -libc::E2BIG => Err(format!("the program's global {name} has no element {index}")),
            _ => Err(format!("the program has no global {name}")),
        }
    }

    /// A global's value, element `index`; None if there is none.
    pub fn get(&self, name: &str, index: u32) -> Option<u64> {
        let c = CString::new(name).ok()?;
        let mut v = 0u64;
        // SAFETY: a NUL-terminated name and an out-pointer to a local; host.c
        // checks the index.
        (unsafe { (self.f.global_get)(c.as_ptr(), index, &mut v) } == 0).then_some(v)
    }

    /// A global's element size and number of elements (1 for a scalar).
    pub fn global_info(&self, name: &str) -> Option<(u32, u32)> {
        let c = CString::new(name).ok()?;
        let (mut size, mut count) = (0u32, 0u32);
        // SAFETY: a NUL-terminated name and out-pointers to locals.
        (unsafe { (self.f.global_info)(c.as_ptr(), &mut size, &mut count) } == 0).then_some((size, count))
    }

    /// A global of the program (the loader-read `u64`s such as nr_primary).
    pub fn global_u64(&self, name: &str) -> Option<u64> {
        let c = CString::new(name).ok()?;
        // SAFETY: the handle is live; the symbol, if any, is a u64 global.
        unsafe {
            let p = libc::dlsym(self.handle, c.as_ptr()) as *const u64;
            (!p.is_null()).then(|| std::ptr::read_volatile(p))
        }
    }

    /// A byte array global of the program (such as nest's in_primary), its
    /// first `len` bytes.
    pub fn global_bytes(&self, name: &str, len: usize) -> Option<Vec<u8>> {
        let c = CString::new(name).ok()?;
        // SAFETY: the handle is live; the symbol, if any, is an array of at
        // least `len` bytes (the caller's CPU count, within WC_MAX_CPUS).
        unsafe {
            let p = libc::dlsym(self.handle, c.as_ptr()) as *const u8;
            (!p.is_null()).then(|| (0..len).map(|i| std::ptr::read_volatile(p.add(i))).collect())
        }
    }

    /// A `SEC("syscall")` program of the program, if there is one.
    pub fn syscall(&self, name: &str) -> Option<Syscall> {
        let c = CString::new(name).ok()?;
        // SAFETY: host.c returns NULL or an entry of its tables (tables.h),
        // which live as long as the copy; each field list ends with a NULL
        // name.
        unsafe {
            let e = (self.f.syscall)(c.as_ptr()) as *const SyscallC;
            if e.is_null() {
                return None;
            }
            let e = &*e;
            let mut fields = Vec::new();
            let mut f = e.fields;
            while !f.is_null() && !(*f).name.is_null() {
                fields.push((CStr::from_ptr((*f).name).to_string_lossy().into_owned(), (*f).offset as usize, (*f).size as usize));
                f = f.add(1);
            }
            Some(Syscall { f: e.f?, arg_size: e.arg_size as usize, fields })
        }
    }

    /// Run a syscall program with its argument (`arg_size` bytes), as
    /// user space does with BPF_PROG_TEST_RUN: its return value.
    pub fn run_syscall(&mut self, prog: &Syscall, arg: &mut [u8]) -> i32 {
        assert!(arg.len() >= prog.arg_size);
        // SAFETY: the program reads at most arg_size bytes of its argument.
        unsafe { (prog.f)(arg.as_mut_ptr() as *mut c_void) }
    }

    /// The values of a map: (bytes, stride of one value, entries, copies),
    /// copies being one per CPU for a per-CPU map.
    pub fn map(&self, name: &str) -> Option<(&[u8], usize, usize, usize)> {
        let c = CString::new(name).ok()?;
        let (mut ty, mut stride, mut max, mut copies) = (0u32, 0u32, 0u32, 0u32);
        // SAFETY: out-pointers to locals; the storage lives until detach,
        // which only Drop calls, so the borrow of self bounds it.
        unsafe {
            let p = (self.f.map)(c.as_ptr(), &mut ty, &mut stride, &mut max, &mut copies);
            if p.is_null() {
                return None;
            }
            let len = stride as usize * max as usize * copies as usize;
            Some((std::slice::from_raw_parts(p, len), stride as usize, max as usize, copies as usize))
        }
    }

    /// A map's key and value sizes.
    pub fn map_info(&self, name: &str) -> Option<(usize, usize)> {
        let c = CString::new(name).ok()?;
        let (mut k, mut v) = (0u32, 0u32);
        // SAFETY: a NUL-terminated name and out-pointers to locals.
        (unsafe { (self.f.map_info)(c.as_ptr(), &mut k, &mut v) } == 0).then_some((k as usize, v as usize))
    }

    /// Insert or replace a map entry, as user space does through a map's
    /// fd; `key` and `value` are the map's sizes.
    pub fn map_update_bytes(&mut self, name: &str, key: &[u8], value: &[u8]) -> Result<(), String> {
        let (ks, vs) = self.map_info(name).ok_or_else(|| format!("the program has no map {name}"))?;
        if key.len() != ks || value.len() != vs {
            return Err(format!("map {name}: keys are {ks} bytes and values {vs}, not {} and {}", key.len(), value.len()));
        }
        let c = CString::new(name).unwrap();
        // SAFETY: key and value hold the map's sizes.
        let r = unsafe { (self.f.map_update)(c.as_ptr(), key.as_ptr() as *const c_void, value.as_ptr() as *const c_void) };
        if r == 0 {
            Ok(())
        } else {
            Err(format!("updating map {name}: error {r}"))
        }
    }

    /// As `map_update_bytes`, for plain values.
    pub fn map_update<K: Copy, V: Copy>(&mut self, name: &str, key: K, value: V) -> Result<(), String> {
        // SAFETY: plain values viewed as their bytes.
        let (k, v) = unsafe {
            (
                std::slice::from_raw_parts(&key as *const K as *const u8, std::mem::size_of::<K>()),
                std::slice::from_raw_parts(&value as *const V as *const u8, std::mem::size_of::<V>()),
            )
        };
        self.map_update_bytes(name, k, v)
    }
}

/// What the loader would refuse in a host build: every symbol the object
/// leaves undefined that the host does not provide, each as one line. A
/// strong reference (a kfunc declared without __weak, a kernel variable, a
/// BPF helper as `wc_helper_NAME`) is refused, as the kernel's loader
/// refuses a program whose kfunc it cannot resolve; so is a call of a weak
/// kfunc the host lacks that the program would make (`wc_absent_NAME`:
/// build_program.rs has already dropped the calls behind a
/// bpf_ksym_exists() of it, as the verifier prunes them), and, to be sure,
/// any other call of an undefined weak symbol (a PLT slot). A weak variable
/// (an absent per-CPU ksym, whose address the program tests) is left at
/// NULL, as libbpf leaves it.
pub fn missing_symbols(so: &[u8]) -> Result<Vec<String>, String> {
    const RUNTIME: &[&str] = &[
        "calloc", "free", "memcpy", "memmove", "memset", "memcmp", "bcmp", "__cxa_finalize", "__gmon_start__",
        "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable", "__stack_chk_fail",
    ];
    let elf = elf::Elf::parse(so)?;
    let mut out = Vec::new();
    for sym in elf.undefined()? {
        let base = sym.name.split('@').next().unwrap_or(&sym.name);
        if base.is_empty() || RUNTIME.contains(&base) {
            continue;
        }
        if sym.weak && !sym.called {
            continue;
        }
        out.push(match (base.strip_prefix("wc_helper_"), base.strip_prefix("wc_absent_")) {
            (Some(helper), _) => format!("the program calls the BPF helper {helper}, which the simulator's host does not provide"),
            (_, Some(kfunc)) => format!("the program calls the kfunc {kfunc}, which the simulator's host does not provide"),
            _ if sym.weak => format!("the program calls the kfunc {base}, which the simulator's host does not provide"),
            _ => format!("the program needs the kernel symbol {base} (a kfunc or kernel variable), which the simulator's host does not provide"),
        });
    }
    Ok(out)
}

/// Just enough ELF64 to list a shared object's undefined dynamic symbols
/// and whether the object calls them (a PLT slot, R_X86_64_JUMP_SLOT).
mod elf {
    pub struct Elf<'a> {
        b: &'a [u8],
        sections: Vec<(u32, u32, u64, u64, u64)>, // type, link, offset, size, entsize
    }

    pub struct Undefined {
        pub name: String,
        pub weak: bool,
        pub called: bool,
    }

    const SHT_RELA: u32 = 4;
    const SHT_DYNSYM: u32 = 11;
    const R_X86_64_JUMP_SLOT: u32 = 7;

    impl<'a> Elf<'a> {
        fn u16(&self, at: usize) -> Result<u16, String> {
            self.b.get(at..at + 2).map(|s| u16::from_le_bytes(s.try_into().unwrap())).ok_or_else(bad)
        }
        fn u32(&self, at: usize) -> Result<u32, String> {
            self.b.get(at..at + 4).map(|s| u32::from_le_bytes(s.try_into().unwrap())).ok_or_else(bad)
        }
        fn u64(&self, at: usize) -> Result<u64, String> {
            self.b.get(at..at + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap())).ok_or_else(bad)
        }

        pub fn parse(b: &'a [u8]) -> Result<Elf<'a>, String> {
            if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
                return Err("the sched_ext program is no 64-bit little-endian ELF object".into());
            }
            let mut e = Elf { b, sections: Vec::new() };
            let shoff = e.u64(0x28)? as usize;
            let shentsize = e.u16(0x3a)? as usize;
            let shnum = e.u16(0x3c)? as usize;
            for i in 0..shnum {
                let h = shoff + i * shentsize;
                e.sections.push((e.u32(h + 4)?, e.u32(h + 40)?, e.u64(h + 24)?, e.u64(h + 32)?, e.u64(h + 56)?));
            }
            Ok(e)
        }

        fn cstr(&self, at: usize) -> Result<String, String> {
            let s = self.b.get(at..).ok_or_else(bad)?;
            let end = s.iter().position(|&c| c == 0).ok_or_else(bad)?;
            Ok(String::from_utf8_lossy(&s[..end]).into_owned())
        }

        pub fn undefined(&self) -> Result<Vec<Undefined>, String> {
            let Some(&(_, link, off, size, ent)) = self.sections.iter().find(|s| s.0 == SHT_DYNSYM) else {
                return Ok(Vec::new());
            };
            let strtab = self.sections.get(link as usize).ok_or_else(bad)?.2 as usize;
            let ent = ent.max(24) as usize;
            let mut called = std::collections::BTreeSet::new();
            for &(ty, _, roff, rsize, rent) in &self.sections {
                if ty != SHT_RELA {
                    continue;
                }
                let rent = rent.max(24) as usize;
                for i in 0..(rsize as usize / rent) {
                    let info = self.u64(roff as usize + i * rent + 8)?;
                    if (info & 0xffff_ffff) as u32 == R_X86_64_JUMP_SLOT {
                        called.insert((info >> 32) as usize);
                    }
                }
            }
            let mut out = Vec::new();
            for i in 1..(size as usize / ent) {
                let at = off as usize + i * ent;
                let name = self.u32(at)? as usize;
                let info = self.b.get(at + 4).copied().ok_or_else(bad)?;
                let shndx = self.u16(at + 6)?;
                if shndx != 0 {
                    continue;
                }
                out.push(Undefined { name: self.cstr(strtab + name)?, weak: info >> 4 == 2, called: called.contains(&i) });
            }
            Ok(out)
        }
    }

    fn bad() -> String {
        "the sched_ext program's ELF object is truncated".into()
    }
}

/// A program's source: its files (the translation units its build compiles
/// and the parts they include from beside them), as (name, text), and the
/// units among them. `builtin()` is warmcore's program as built, `peer()`
/// a peer's; a test edits one and builds the variant with `build_variant`.
#[derive(Clone, Debug)]
pub struct Source {
    files: Vec<(String, String)>,
    units: Vec<String>,
}

impl Source {
    pub fn builtin() -> Source {
        const FILES: &[(&str, &str)] = &include!(concat!(env!("OUT_DIR"), "/wc_scx_source.rs"));
        Source {
            files: FILES.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect(),
            units: vec![FILES[0].0.to_string()],
        }
    }

    /// The source of the peer `name` (bpfland, ...) as built, if built.
    pub fn peer(name: &str) -> Option<Source> {
        let p = super::peers::PEERS.iter().find(|p| p.name == name && p.so.is_some())?;
        Some(Source {
            files: p.files.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect(),
            units: p.units.iter().map(|u| u.to_string()).collect(),
        })
    }

    /// The files' names, the first unit first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(n, _)| n.as_str())
    }

    /// The text of the file `name` (main.bpf.c, nest.bpf.c, ...).
    pub fn file(&self, name: &str) -> Option<&str> {
        self.files.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str())
    }

    /// How many times `pat` occurs in the program, over all its files.
    pub fn matches(&self, pat: &str) -> usize {
        self.files.iter().map(|(_, t)| t.matches(pat).count()).sum()
    }

    /// The program with `from`, which must occur exactly once in it (in
    /// whichever file), replaced by `to`: a test names the line it changes,
    /// not the file that holds it.
    pub fn replace(&self, from: &str, to: &str) -> Source {
        let n = self.matches(from);
        assert!(n == 1, "the program holds {from:?} {n} times, not once");
        let files = self.files.iter().map(|(name, t)| (name.clone(), t.replace(from, to))).collect();
        Source { files, units: self.units.clone() }
    }
}

/// Build `source`, a variant of a program, for the host exactly as build.rs
/// builds the built-in ones (same compiler, flags, headers and steps): so
/// that a test can show that the simulator runs the program's source, and
/// nothing else. Every file of the variant is written in a directory of its
/// own with the layout it has, and its units built from there: a quoted
/// include finds the variant's files first.
pub fn build_variant(source: &Source) -> Result<Vec<u8>, String> {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let tc = super::build_program::Toolchain::from_text(include_str!(concat!(env!("OUT_DIR"), "/wc_scx_toolchain.txt")));
    let dir = std::env::temp_dir().join(format!(
        "warmcore-scx-variant-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    for (name, text) in &source.files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let units: Vec<std::path::PathBuf> = source.units.iter().map(|u| dir.join(u)).collect();
    let r = super::build_program::build(&tc, &units, &dir.join("build"))
        .and_then(|so| std::fs::read(&so).map_err(|e| e.to_string()));
    let _ = std::fs::remove_dir_all(&dir);
    r
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: detach frees what attach allocated, once; then the copy
        // is closed and no pointer into it is used again (tasks were freed
        // by the policy before).
        unsafe {
            if self.attached {
                (self.f.detach)();
            }
            libc::dlclose(self.handle);
            libc::close(self.fd);
        }
    }
}
