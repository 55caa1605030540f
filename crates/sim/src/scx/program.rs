// SPDX-License-Identifier: GPL-2.0-only
//! The sched_ext program of crates/sched, built for the host by build.rs
//! (scx/host.c), loaded once per run.
//!
//! Each run loads its own copy: the shared object is written to an anonymous
//! memory file and opened from there, and the dynamic loader counts each
//! such file as a distinct object, so every run has its own globals, maps
//! and masks. Runs in parallel threads (`compare`, `reproduce`, Python) never
//! share the program's state.

use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// The host build of crates/sched/src/bpf/main.bpf.c and its parts.
static SHARED_OBJECT: &[u8] = include_bytes!(env!("WARMCORE_SCX_SO"));

/// An opaque `struct task_struct` of the program's copy.
pub type TaskPtr = *mut c_void;

/// host.h's `struct wc_host_ops`: the kernel services, implemented by the
/// simulator (mod.rs). The field order is the C struct's.
#[repr(C)]
pub struct HostOps {
    pub ctx: *mut c_void,
    pub hz: u64,
    pub now: extern "C" fn(*mut c_void) -> u64,
    pub cpu: extern "C" fn(*mut c_void) -> c_int,
    pub task_cpu: extern "C" fn(*mut c_void, u32) -> c_int,
    pub task_from_pid: extern "C" fn(*mut c_void, c_int) -> TaskPtr,
    pub current_task: extern "C" fn(*mut c_void) -> TaskPtr,
    pub create_dsq: extern "C" fn(*mut c_void, u64) -> c_int,
    pub dsq_insert: extern "C" fn(*mut c_void, u32, u32, u64, u32, u64, u32),
    pub dsq_move_to_local: extern "C" fn(*mut c_void, u32, u64) -> c_int,
    pub dsq_nr_queued: extern "C" fn(*mut c_void, u32, u64) -> c_int,
    pub dsq_iter_new: extern "C" fn(*mut c_void, *mut u64, u32, u64) -> c_int,
    pub dsq_iter_next: extern "C" fn(*mut c_void, *mut u64) -> TaskPtr,
    pub dsq_iter_destroy: extern "C" fn(*mut c_void, *mut u64),
    pub dsq_move: extern "C" fn(*mut c_void, *mut u64, u32, u32, u64, u32) -> c_int,
    pub kick_cpu: extern "C" fn(*mut c_void, c_int, u32),
    pub test_and_clear_cpu_idle: extern "C" fn(*mut c_void, c_int) -> c_int,
    pub pick_idle_cpu: extern "C" fn(*mut c_void, *const u64, u32) -> c_int,
    pub any_and_distribute: extern "C" fn(*mut c_void, *const u64, *const u64) -> c_int,
    pub select_cpu_dfl: extern "C" fn(*mut c_void, u32, c_int, u32, *mut u32) -> c_int,
    pub idle_mask: extern "C" fn(*mut c_void, u32) -> *const u64,
    pub cpuperf_cur: extern "C" fn(*mut c_void, c_int) -> u32,
    pub cpuperf_set: extern "C" fn(*mut c_void, c_int, u32),
    pub timer_start: extern "C" fn(*mut c_void, u32, u64),
    pub timer_cancel: extern "C" fn(*mut c_void, u32) -> c_int,
    pub error: extern "C" fn(*mut c_void, *const c_char),
}

/// host.h's numbering of dispatch queues, flags and operations.
pub mod abi {
    pub const DSQ_USER: u32 = 0;
    pub const DSQ_GLOBAL: u32 = 1;
    pub const DSQ_LOCAL: u32 = 2;
    pub const DSQ_LOCAL_ON: u32 = 3;
    pub const ENQ_WAKEUP: u32 = 1;
    pub const ENQ_HEAD: u32 = 2;
    pub const ENQ_LAST: u32 = 8;
    pub const KICK_PREEMPT: u32 = 2;
    pub const WAKE_TTWU: u32 = 0;
    pub const WAKE_FORK: u32 = 1;
    pub const OP_ENQUEUE: u32 = 1 << 1;
    pub const OP_DISPATCH: u32 = 1 << 2;
    pub const OP_UPDATE_IDLE: u32 = 1 << 6;
    pub const MASK_WORDS: usize = 128;
}

macro_rules! entry_points {
    ($($name:ident: $ty:ty,)*) => {
        /// The program's entry points (host.c's `wc_sim_*`).
        #[allow(non_snake_case)]
        pub struct Fns { $(pub $name: $ty,)* }
        impl Fns {
            /// # Safety
            /// `handle` is a live dlopen handle of the host build.
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
    attach: unsafe extern "C" fn(*const HostOps, u32) -> c_int,
    detach: unsafe extern "C" fn(),
    knob_set: unsafe extern "C" fn(*const c_char, u32, u64) -> c_int,
    knob_get: unsafe extern "C" fn(*const c_char, u32, *mut u64) -> c_int,
    map: unsafe extern "C" fn(*const c_char, *mut u32, *mut u32, *mut u32, *mut u32) -> *mut u8,
    map_update: unsafe extern "C" fn(*const c_char, *const c_void, *const c_void) -> i64,
    task_new: unsafe extern "C" fn(u32, c_int, c_int) -> TaskPtr,
    task_free: unsafe extern "C" fn(TaskPtr),
    task_set_nice: unsafe extern "C" fn(TaskPtr, c_int),
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
    dispatch: unsafe extern "C" fn(c_int, TaskPtr),
    running: unsafe extern "C" fn(TaskPtr),
    stopping: unsafe extern "C" fn(TaskPtr, u32),
    tick: unsafe extern "C" fn(TaskPtr),
    update_idle: unsafe extern "C" fn(c_int, u32),
    enable: unsafe extern "C" fn(TaskPtr),
    init_task: unsafe extern "C" fn(TaskPtr, u32) -> c_int,
    exit_task: unsafe extern "C" fn(TaskPtr),
    init: unsafe extern "C" fn() -> c_int,
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
    /// The program as built with the simulator.
    pub fn load() -> Result<Program, String> {
        Program::load_from(SHARED_OBJECT)
    }

    /// A host build of the program (`build_variant`).
    pub fn load_from(shared_object: &[u8]) -> Result<Program, String> {
        // SAFETY: plain libc calls on a file descriptor this function owns;
        // the buffer is the embedded shared object, valid for its length.
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
    pub fn attach(&mut self, ops: *const HostOps, nr_cpus: u32) -> Result<(), String> {
        // SAFETY: the caller keeps `ops` alive and in place for our lifetime.
        let r = unsafe { (self.f.attach)(ops, nr_cpus) };
        if r != 0 {
            return Err(format!("setting up the sched_ext program's maps: error {r}"));
        }
        self.attached = true;
        Ok(())
    }

    /// Set a load-time knob (a `const volatile` global of main.bpf.c).
    pub fn set(&mut self, name: &str, index: u32, value: u64) -> Result<(), String> {
        let c = CString::new(name).unwrap();
        // SAFETY: a NUL-terminated name; host.c checks the index.
        match unsafe { (self.f.knob_set)(c.as_ptr(), index, value) } {
            0 => Ok(()),
            e => Err(format!("the sched_ext program has no knob {name}[{index}] (error {e})")),
        }
    }

    /// A load-time knob's value, element `index`; None if there is none.
    pub fn get(&self, name: &str, index: u32) -> Option<u64> {
        let c = CString::new(name).ok()?;
        let mut v = 0u64;
        // SAFETY: a NUL-terminated name and an out-pointer to a local; host.c
        // checks the index.
        (unsafe { (self.f.knob_get)(c.as_ptr(), index, &mut v) } == 0).then_some(v)
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

    /// Insert or replace a map entry, as user space does through a map's fd.
    pub fn map_update<K: Copy, V: Copy>(&mut self, name: &str, key: K, value: V) -> Result<(), String> {
        let c = CString::new(name).unwrap();
        // SAFETY: key and value are plain values read for the map's sizes,
        // which the program declares as these types.
        let r = unsafe {
            (self.f.map_update)(c.as_ptr(), &key as *const K as *const c_void, &value as *const V as *const c_void)
        };
        if r == 0 {
            Ok(())
        } else {
            Err(format!("updating map {name}: error {r}"))
        }
    }
}

/// The program's source: main.bpf.c and the parts it includes, each a file
/// beside it, as (name, text). `builtin()` is the source the built-in
/// program was built from; a test edits it and builds the variant with
/// `build_variant`.
#[derive(Clone, Debug)]
pub struct Source {
    files: Vec<(String, String)>,
}

impl Source {
    pub fn builtin() -> Source {
        const FILES: &[(&str, &str)] = &include!(concat!(env!("OUT_DIR"), "/wc_scx_source.rs"));
        Source { files: FILES.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect() }
    }

    /// The files' names, main.bpf.c first.
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
        Source { files }
    }
}

/// Build `source`, a variant of the program, for the host exactly as
/// build.rs builds it (same compiler, flags and headers): so that a test can
/// show that the simulator runs the program's source, and nothing else.
/// Every file of the variant is written beside its main.bpf.c: the compiler
/// looks for a quoted include beside the including file first, so each part
/// the variant includes is the variant's.
pub fn build_variant(source: &Source) -> Result<Vec<u8>, String> {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let build = include_str!(concat!(env!("OUT_DIR"), "/wc_scx_build.txt"));
    let mut lines = build.lines();
    let (clang, host_c, program_dir) = (lines.next().unwrap(), lines.next().unwrap(), lines.next().unwrap());
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
    let so = dir.join("variant.so");
    let out = std::process::Command::new(clang)
        .args(lines)
        .arg(format!("-I{}", dir.display()))
        .arg(format!("-I{program_dir}"))
        .arg("-o")
        .arg(&so)
        .arg(host_c)
        .output()
        .map_err(|e| format!("running {clang}: {e}"))?;
    let r = if out.status.success() {
        std::fs::read(&so).map_err(|e| e.to_string())
    } else {
        Err(format!("{clang} failed: {}", String::from_utf8_lossy(&out.stderr)))
    };
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
