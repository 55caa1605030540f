// SPDX-License-Identifier: GPL-2.0-only
//! Parquet export: one row per event, in global time order, for pandas,
//! Polars, DuckDB.
//!
//! | column | type                      | what                                         |
//! |--------|---------------------------|----------------------------------------------|
//! | ts_ns  | uint64                    | the event's timestamp, as in the .wct file   |
//! | cpu    | uint32                    | the CPU whose stream holds the event         |
//! | pid    | uint32                    | the event's pid                              |
//! | event  | dictionary<int32, string> | its name, from the file's own name table     |
//! | arg_a  | uint32                    | low half of the argument                     |
//! | arg_b  | uint32                    | high half of the argument                    |
//! | arg    | uint64                    | the whole 8-byte argument, little-endian     |
//! | comm   | string, nullable          | the pid's name in the process table          |
//!
//! Rows are gathered in batches of [`BATCH_ROWS`] and written in row groups
//! of at most [`ROW_GROUP_ROWS`], so memory stays bounded whatever the
//! trace's length. Pages are zstd-compressed.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::file::properties::WriterProperties;

use crate::error::{Result, TraceError};
use crate::event::{Event, EventTable};
use crate::reader::{Trace, Window};

/// Rows per record batch handed to the parquet writer.
pub const BATCH_ROWS: usize = 64 * 1024;
/// Rows per row group at most.
pub const ROW_GROUP_ROWS: usize = 512 * 1024;

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParquetSummary {
    pub rows: u64,
    pub row_groups: u64,
}

/// The schema of the exported table.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts_ns", DataType::UInt64, false),
        Field::new("cpu", DataType::UInt32, false),
        Field::new("pid", DataType::UInt32, false),
        Field::new("event", DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)), false),
        Field::new("arg_a", DataType::UInt32, false),
        Field::new("arg_b", DataType::UInt32, false),
        Field::new("arg", DataType::UInt64, false),
        Field::new("comm", DataType::Utf8, true),
    ]))
}

/// Export the events of `t` in `w` to a new parquet file at `out`. On
/// failure the partial output is removed.
pub fn export(t: &Trace, w: Window, out: &Path) -> Result<ParquetSummary> {
    super::with_output(t.path(), out, |f: File, name| write(t, w, f, name))
}

/// Write the events of `t` in `w` as parquet to `out`, called `name` in
/// errors.
pub fn write<W: Write + Send>(t: &Trace, w: Window, out: W, name: &str) -> Result<ParquetSummary> {
    let perr = |e: ::parquet::errors::ParquetError| TraceError::new(name, format!("writing parquet: {e}")).writing();
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("warmcore {}", env!("CARGO_PKG_VERSION")))
        .build();
    let schema = schema();
    let mut writer = ArrowWriter::try_new(out, schema.clone(), Some(props)).map_err(perr)?;
    let mut rows = Rows::new(&t.header.events);
    let mut total = 0u64;
    for e in t.events(None, w) {
        let e = e?;
        rows.push(t, e.cpu, &e.ev);
        total += 1;
        if rows.len == BATCH_ROWS {
            writer.write(&rows.batch(&schema)).map_err(perr)?;
        }
    }
    if rows.len > 0 {
        writer.write(&rows.batch(&schema)).map_err(perr)?;
    }
    let meta = writer.close().map_err(perr)?;
    Ok(ParquetSummary { rows: total, row_groups: meta.num_row_groups() as u64 })
}

/// Column builders for one batch, and the event-name dictionary.
struct Rows {
    len: usize,
    ts: UInt64Builder,
    cpu: UInt32Builder,
    pid: UInt32Builder,
    event: Vec<i32>,
    arg_a: UInt32Builder,
    arg_b: UInt32Builder,
    arg: UInt64Builder,
    comm: StringBuilder,
    /// Dictionary values: the file's names in table order, then
    /// `EVENT_<id>` for ids the table lacks, as they turn up.
    names: Vec<String>,
    key_of: HashMap<u32, i32>,
}

impl Rows {
    fn new(table: &EventTable) -> Rows {
        let mut key_of = HashMap::new();
        let mut names = Vec::new();
        for (id, name) in &table.names {
            key_of.entry(*id).or_insert_with(|| {
                names.push(name.clone());
                names.len() as i32 - 1
            });
        }
        Rows {
            len: 0,
            ts: UInt64Builder::with_capacity(BATCH_ROWS),
            cpu: UInt32Builder::with_capacity(BATCH_ROWS),
            pid: UInt32Builder::with_capacity(BATCH_ROWS),
            event: Vec::with_capacity(BATCH_ROWS),
            arg_a: UInt32Builder::with_capacity(BATCH_ROWS),
            arg_b: UInt32Builder::with_capacity(BATCH_ROWS),
            arg: UInt64Builder::with_capacity(BATCH_ROWS),
            comm: StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 8),
            names,
            key_of,
        }
    }

    fn push(&mut self, t: &Trace, cpu: u32, ev: &Event) {
        self.ts.append_value(ev.ts);
        self.cpu.append_value(cpu);
        self.pid.append_value(ev.pid);
        let key = match self.key_of.get(&ev.id) {
            Some(&k) => k,
            None => {
                self.names.push(format!("EVENT_{}", ev.id));
                let k = self.names.len() as i32 - 1;
                self.key_of.insert(ev.id, k);
                k
            }
        };
        self.event.push(key);
        self.arg_a.append_value(ev.a());
        self.arg_b.append_value(ev.b());
        self.arg.append_value(u64::from_le_bytes(ev.arg));
        self.comm.append_option(t.comm(ev.pid));
        self.len += 1;
    }

    /// The rows so far as a batch; the builders start again empty.
    fn batch(&mut self, schema: &SchemaRef) -> RecordBatch {
        let keys = Int32Array::from(std::mem::take(&mut self.event));
        self.event.reserve(BATCH_ROWS);
        let values = Arc::new(StringArray::from_iter_values(self.names.iter()));
        let event = DictionaryArray::<Int32Type>::try_new(keys, values).expect("every key indexes the names");
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.ts.finish()),
            Arc::new(self.cpu.finish()),
            Arc::new(self.pid.finish()),
            Arc::new(event),
            Arc::new(self.arg_a.finish()),
            Arc::new(self.arg_b.finish()),
            Arc::new(self.arg.finish()),
            Arc::new(self.comm.finish()),
        ];
        self.len = 0;
        RecordBatch::try_new(schema.clone(), cols).expect("columns match the schema")
    }
}
