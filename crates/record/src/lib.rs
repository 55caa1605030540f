// SPDX-License-Identifier: GPL-2.0-only
pub mod bpf_intf {
    #![allow(non_upper_case_globals, non_camel_case_types, non_snake_case, dead_code)]
    include!(concat!(env!("OUT_DIR"), "/bpf_intf.rs"));
}
pub mod bpf_skel {
    #![allow(clippy::all, dead_code, non_camel_case_types, non_snake_case, non_upper_case_globals)]
    include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
}
