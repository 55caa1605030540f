// SPDX-License-Identifier: GPL-2.0-only
//! The on-disk layout of a `.wct` file, shared by the writer and the reader.
//!
//! ```text
//! prelude   24 bytes   magic "WCTRACE\0", version u32, flags u32,
//!                      header length u32, reserved u32
//! header    JSON       meta::Header, padded to 8 bytes
//! blocks    ...        each: a 40-byte block header, then its payload padded
//!                      to 8 bytes. EVENTS blocks hold one CPU's records in
//!                      time order, then, if the block's RANKS flag is set,
//!                      one u32 per record: its rank among the trace's
//!                      records of the same timestamp, on any CPU, in the
//!                      order they happened; PROCESSES blocks hold 40-byte process
//!                      records (later ones for a pid refine earlier ones);
//!                      one SUMMARY block (lost counts) is written at the end.
//! index     block      INDEX: one IndexEntry per block above
//! trailer   16 bytes   offset of the INDEX block u64, magic "WCTINDEX"
//! ```
//!
//! Every block carries a CRC32 of its stored payload, so a reader can tell a
//! torn write from data. A file without a valid trailer (its writer was killed)
//! is read by walking the blocks from the start up to the last complete one.
//! All integers are little-endian.
//!
//! Ranks exist because a record does not say which CPU's event came first
//! within one nanosecond, and the simulator makes many events at one
//! instant: a task woken on one CPU and switched in on another at the same
//! time must be read in that order. A writer fed in global time order (the
//! simulator) stores them; one fed per CPU (the recorder) cannot know them,
//! and its readers get ties by CPU number. Version 1 files have no ranks.

use bytemuck::{Pod, Zeroable};

pub const MAGIC: [u8; 8] = *b"WCTRACE\0";
pub const TRAILER_MAGIC: [u8; 8] = *b"WCTINDEX";
pub const VERSION: u32 = 2;
/// The oldest version this reader accepts: version 1 is version 2 without
/// the RANKS flag.
pub const MIN_VERSION: u32 = 1;
pub const PRELUDE_SIZE: usize = 24;
pub const TRAILER_SIZE: usize = 16;
pub const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"WBLK");

pub mod kind {
    pub const EVENTS: u8 = 1;
    pub const PROCESSES: u8 = 2;
    pub const SUMMARY: u8 = 3;
    pub const INDEX: u8 = 4;
}

/// Bits of `BlockHeader::flags`.
pub mod block_flags {
    /// An EVENTS block's records are followed by their ranks (u32 each).
    pub const RANKS: u16 = 1;
}

pub mod codec {
    pub const RAW: u8 = 0;
    pub const ZSTD: u8 = 1;
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, Default, PartialEq, Eq)]
pub struct BlockHeader {
    pub magic: u32,
    pub kind: u8,
    pub codec: u8,
    /// `block_flags`; 0 in version 1.
    pub flags: u16,
    pub cpu: u32,
    /// Records in the payload (events, processes); 0 for JSON payloads.
    pub count: u32,
    pub t_first: u64,
    pub t_last: u64,
    /// Payload length on disk, before padding (of the compressed bytes for
    /// zstd: records and ranks are compressed together).
    pub len: u32,
    pub crc: u32,
}
pub const BLOCK_HEADER_SIZE: usize = std::mem::size_of::<BlockHeader>();
const _: () = assert!(BLOCK_HEADER_SIZE == 40);

/// One entry of the INDEX block: where a block is, and a copy of its header,
/// so that opening a file reads the index alone and no block's page.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, Default, PartialEq, Eq)]
pub struct IndexEntry {
    pub offset: u64,
    pub header: BlockHeader,
}
const _: () = assert!(std::mem::size_of::<IndexEntry>() == 48);

/// One process-table entry as stored in a PROCESSES block. 16 bytes of comm
/// is Linux's TASK_COMM_LEN.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable, Default, PartialEq, Eq)]
pub struct ProcRecord {
    pub pid: u32,
    pub ppid: u32,
    pub first_ns: u64,
    pub last_ns: u64,
    pub comm: [u8; 16],
}
pub const PROC_RECORD_SIZE: usize = std::mem::size_of::<ProcRecord>();
const _: () = assert!(PROC_RECORD_SIZE == 40);

/// The SUMMARY block's JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Events each CPU could not record.
    pub lost: Vec<u64>,
    pub events: u64,
}

/// Bytes per record in an EVENTS block with these flags.
pub fn record_size(flags: u16) -> usize {
    crate::event::EVENT_SIZE + if flags & block_flags::RANKS != 0 { 4 } else { 0 }
}

pub fn pad8(n: usize) -> usize {
    (n + 7) & !7
}
