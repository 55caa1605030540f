// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore record`: a low-overhead scheduler tracer on eBPF that writes
//! .wct traces (SchedLog rebuilt on stock kernels, Fork/wait, section 3.1),
//! and `warmcore ftl`, the frequency ramp measurement.

pub mod bpf_intf {
    #![allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code)]
    include!(concat!(env!("OUT_DIR"), "/bpf_intf.rs"));
}
pub mod bpf_skel {
    #![allow(clippy::all, dead_code, non_camel_case_types, non_snake_case, non_upper_case_globals)]
    include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
}

pub mod freq;
pub mod ftl;
pub mod record;
pub mod sink;
pub mod sys;

pub use record::{buffer_slots, record, Options, Report, StopReason};
