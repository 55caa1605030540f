// SPDX-License-Identifier: GPL-2.0-only
//! The schedlog importer on any input: see `warmcore_fuzz::check_import`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warmcore_trace::import::Format;

fuzz_target!(|data: &[u8]| warmcore_fuzz::check_import(Format::SchedLog, data));
