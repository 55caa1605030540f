// SPDX-License-Identifier: GPL-2.0-only
//! warmcore's trace: the event model, the `.wct` file format with its
//! streaming writer and mapped reader, importers, exporters and analysis.

pub mod chains;
pub mod error;
pub mod event;
pub mod export;
pub mod format;
pub mod import;
pub mod lod;
pub mod meta;
pub mod output;
pub mod placement;
pub mod reader;
pub mod synth;
pub mod stats;
pub mod writer;

pub use error::{Result, TraceError};
pub use event::{ids, CpuEvent, Event, EventTable};
pub use meta::{CpuTopo, Header, Machine, Process, Provenance};
pub use reader::{Trace, Window};
pub use writer::{Writer, WriterOptions};
