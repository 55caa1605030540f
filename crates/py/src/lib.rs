// SPDX-License-Identifier: GPL-2.0-only
//! Python bindings to crates/trace: open a `.wct`, read its header, machine
//! and process table, and read a time range of chosen CPUs and events as an
//! Arrow record batch. The columns are built once in Rust and handed to
//! pyarrow through the Arrow C data interface without a copy; pandas and
//! Polars views are made from that batch on the Python side.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_pyarrow::ToPyArrow;
use arrow_schema::{DataType, Field, Schema};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use warmcore_trace::meta::{CpuTopo, Header, Machine, Provenance};
use warmcore_trace::output::Output;
use warmcore_trace::{Event, Trace, Window, Writer, WriterOptions};

create_exception!(_native, TraceError, PyException, "A trace that cannot be read or written: the reader's one-line message.");
create_exception!(_native, SimError, PyException, "A simulation that cannot run: bad input (named) or a deadlock.");

fn trace_err(e: warmcore_trace::TraceError) -> PyErr {
    TraceError::new_err(e.to_string())
}

fn json_to_py<'py>(py: Python<'py>, v: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    let s = serde_json::to_string(v).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (s,))
}

/// An open trace. Opening maps the file and checks its structure; events are
/// decoded only when read.
#[pyclass(name = "Trace", module = "warmcore._native", frozen)]
struct PyTrace {
    inner: Trace,
}

/// The columns of a read, grown in place then moved into Arrow buffers.
#[derive(Default)]
struct Columns {
    ts: Vec<u64>,
    cpu: Vec<u32>,
    pid: Vec<u32>,
    id: Vec<u32>,
    a: Vec<u32>,
    b: Vec<u32>,
}

impl Columns {
    fn with_capacity(n: usize) -> Self {
        Columns {
            ts: Vec::with_capacity(n),
            cpu: Vec::with_capacity(n),
            pid: Vec::with_capacity(n),
            id: Vec::with_capacity(n),
            a: Vec::with_capacity(n),
            b: Vec::with_capacity(n),
        }
    }

    #[inline]
    fn push(&mut self, cpu: u32, e: &Event) {
        self.ts.push(e.ts);
        self.cpu.push(cpu);
        self.pid.push(e.pid);
        self.id.push(e.id);
        self.a.push(e.a());
        self.b.push(e.b());
    }

    fn into_batch(self) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("ts", DataType::UInt64, false),
            Field::new("cpu", DataType::UInt32, false),
            Field::new("pid", DataType::UInt32, false),
            Field::new("id", DataType::UInt32, false),
            Field::new("a", DataType::UInt32, false),
            Field::new("b", DataType::UInt32, false),
        ]));
        // From<Vec<T>> moves each vector into its buffer: no copy.
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(self.ts)),
            Arc::new(UInt32Array::from(self.cpu)),
            Arc::new(UInt32Array::from(self.pid)),
            Arc::new(UInt32Array::from(self.id)),
            Arc::new(UInt32Array::from(self.a)),
            Arc::new(UInt32Array::from(self.b)),
        ];
        RecordBatch::try_new(schema, cols).expect("columns of equal length")
    }
}

impl PyTrace {
    /// Event names or ids to this file's ids; an unknown name is an error that
    /// lists the names the file has.
    fn event_ids(&self, events: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let table = &self.inner.header.events;
        let mut out = Vec::new();
        for item in events.try_iter()? {
            let item = item?;
            if let Ok(id) = item.extract::<u32>() {
                out.push(id);
                continue;
            }
            let name: String = item.extract().map_err(|_| PyValueError::new_err("events: expected event names or ids"))?;
            match table.id(&name) {
                Some(id) => out.push(id),
                None => {
                    let known: Vec<&str> = table.names.iter().map(|(_, n)| n.as_str()).collect();
                    return Err(PyValueError::new_err(format!(
                        "{}: no event named {name:?}: the trace has {}",
                        self.inner.path(),
                        known.join(", ")
                    )));
                }
            }
        }
        Ok(out)
    }
}

#[pymethods]
impl PyTrace {
    #[new]
    fn new(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let inner = py.detach(|| Trace::open(&path)).map_err(trace_err)?;
        Ok(PyTrace { inner })
    }

    #[getter]
    fn path(&self) -> &str {
        self.inner.path()
    }

    #[getter]
    fn nr_cpus(&self) -> u32 {
        self.inner.nr_cpus()
    }

    /// The header (machine, event table, provenance) as plain Python data.
    #[getter]
    fn header<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &self.inner.header)
    }

    #[getter]
    fn machine<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &self.inner.header.machine)
    }

    /// This file's event table: id -> name.
    fn event_names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (id, name) in &self.inner.header.events.names {
            d.set_item(id, name)?;
        }
        Ok(d)
    }

    /// The process table: pid -> {pid, ppid, comm, first_ns, last_ns}.
    fn processes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (pid, p) in self.inner.processes() {
            let e = PyDict::new(py);
            e.set_item("pid", p.pid)?;
            e.set_item("ppid", p.ppid)?;
            e.set_item("comm", &p.comm)?;
            e.set_item("first_ns", p.first_ns)?;
            e.set_item("last_ns", p.last_ns)?;
            d.set_item(pid, e)?;
        }
        Ok(d)
    }

    /// The process table as a pyarrow.RecordBatch (pid, ppid, comm,
    /// first_ns, last_ns), in pid order: cheaper than `processes()` for
    /// traces with hundreds of thousands of tasks.
    fn process_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let procs = self.inner.processes();
        let schema = Arc::new(Schema::new(vec![
            Field::new("pid", DataType::UInt32, false),
            Field::new("ppid", DataType::UInt32, false),
            Field::new("comm", DataType::Utf8, false),
            Field::new("first_ns", DataType::UInt64, false),
            Field::new("last_ns", DataType::UInt64, false),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::from_iter_values(procs.values().map(|p| p.pid))),
            Arc::new(UInt32Array::from_iter_values(procs.values().map(|p| p.ppid))),
            Arc::new(StringArray::from_iter_values(procs.values().map(|p| p.comm.as_str()))),
            Arc::new(UInt64Array::from_iter_values(procs.values().map(|p| p.first_ns))),
            Arc::new(UInt64Array::from_iter_values(procs.values().map(|p| p.last_ns))),
        ];
        RecordBatch::try_new(schema, cols).expect("columns of equal length").to_pyarrow(py)
    }

    /// Each CPU's run-queue size over time derived from switches, wake-ups
    /// and migrations (warmcore_trace::stats::runqueue_series), as an Arrow
    /// record batch (cpu, ts, nr_running): one row per change, CPU after
    /// CPU, each CPU's rows in time order (the order of `read`).
    fn runqueue<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let rows = py
            .detach(|| -> warmcore_trace::Result<Vec<(u32, u64, u32)>> {
                let mut rows = warmcore_trace::stats::runqueue_series(&self.inner)?;
                // A stable sort keeps each CPU's rows in the series' time order.
                rows.sort_by_key(|r| r.0);
                Ok(rows)
            })
            .map_err(trace_err)?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("cpu", DataType::UInt32, false),
            Field::new("ts", DataType::UInt64, false),
            Field::new("nr_running", DataType::UInt32, false),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.1))),
            Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.2))),
        ];
        RecordBatch::try_new(schema, cols).expect("columns of equal length").to_pyarrow(py)
    }

    /// The underload of each 4 ms interval from the first event
    /// (warmcore_trace::stats::underload_series): the analysis behind
    /// `warmcore trace stats` and a simulated run's report, interval by
    /// interval.
    fn underload(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        py.detach(|| warmcore_trace::stats::underload_series(&self.inner)).map_err(trace_err)
    }

    /// The wake-up and fork links (warmcore_trace::chains) as an Arrow record
    /// batch, one row per link in time order: id, ts, fork, waker,
    /// waker_cpu, waker_khz, wakee, target_cpu, cpu, start, khz, end,
    /// run_ns, below_ns, parent (nullable where the trace does not say).
    /// A trace without wake-up or fork events raises TraceError.
    fn links<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let l = py.detach(|| warmcore_trace::chains::links(&self.inner)).map_err(trace_err)?.links;
        let u32s = |f: fn(&warmcore_trace::chains::Link) -> u32| -> ArrayRef {
            Arc::new(UInt32Array::from_iter_values(l.iter().map(f)))
        };
        let opt32 = |f: fn(&warmcore_trace::chains::Link) -> Option<u32>| -> ArrayRef {
            Arc::new(l.iter().map(f).collect::<UInt32Array>())
        };
        let opt64 = |f: fn(&warmcore_trace::chains::Link) -> Option<u64>| -> ArrayRef {
            Arc::new(l.iter().map(f).collect::<UInt64Array>())
        };
        let u64s = |f: fn(&warmcore_trace::chains::Link) -> u64| -> ArrayRef {
            Arc::new(UInt64Array::from_iter_values(l.iter().map(f)))
        };
        let fields = [
            ("id", DataType::UInt32, false),
            ("ts", DataType::UInt64, false),
            ("fork", DataType::Boolean, false),
            ("waker", DataType::UInt32, false),
            ("waker_cpu", DataType::UInt32, false),
            ("waker_khz", DataType::UInt32, true),
            ("wakee", DataType::UInt32, false),
            ("target_cpu", DataType::UInt32, false),
            ("cpu", DataType::UInt32, true),
            ("start", DataType::UInt64, true),
            ("khz", DataType::UInt32, true),
            ("end", DataType::UInt64, false),
            ("run_ns", DataType::UInt64, false),
            ("below_ns", DataType::UInt64, true),
            ("parent", DataType::UInt32, true),
        ];
        let schema = Arc::new(Schema::new(fields.iter().map(|(n, t, null)| Field::new(*n, t.clone(), *null)).collect::<Vec<_>>()));
        let cols: Vec<ArrayRef> = vec![
            u32s(|k| k.id),
            u64s(|k| k.ts),
            Arc::new(l.iter().map(|k| Some(k.fork)).collect::<BooleanArray>()),
            u32s(|k| k.waker),
            u32s(|k| k.waker_cpu),
            opt32(|k| k.waker_khz),
            u32s(|k| k.wakee),
            u32s(|k| k.target_cpu),
            opt32(|k| k.cpu),
            opt64(|k| k.start),
            opt32(|k| k.khz),
            u64s(|k| k.end),
            u64s(|k| k.run_ns),
            opt64(|k| k.below_ns),
            opt32(|k| k.parent),
        ];
        RecordBatch::try_new(schema, cols).expect("columns of equal length").to_pyarrow(py)
    }

    /// (first, last) timestamps in ns, or None for a trace without events.
    fn span(&self) -> Option<(u64, u64)> {
        self.inner.span()
    }

    fn event_count(&self) -> u64 {
        self.inner.event_count()
    }

    fn cpu_event_counts(&self) -> Vec<u64> {
        self.inner.cpu_event_counts()
    }

    /// Events lost per CPU, as the recorder counted them.
    #[getter]
    fn lost(&self) -> Vec<u64> {
        self.inner.lost.clone()
    }

    /// Why the trace is incomplete (a recorder that stopped early), if it is.
    #[getter]
    fn incomplete(&self) -> Option<String> {
        self.inner.incomplete.clone()
    }

    /// Events of `cpus` (all if None) and `events` (names or ids, all if None)
    /// with `start <= ts < end` (absolute ns), as a pyarrow.RecordBatch with
    /// columns ts, cpu, pid, id, a, b. `order="cpu"` gives each CPU's events
    /// in time order, CPU after CPU (the fastest); `order="time"` merges them
    /// into global time order, ties in the order they happened where the
    /// trace keeps it (simulated traces), by CPU otherwise.
    #[pyo3(signature = (cpus=None, events=None, start=None, end=None, order="cpu"))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        cpus: Option<Vec<u32>>,
        events: Option<&Bound<'py, PyAny>>,
        start: Option<u64>,
        end: Option<u64>,
        order: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = &self.inner;
        if let Some(cs) = &cpus {
            if let Some(bad) = cs.iter().find(|&&c| c >= t.nr_cpus()) {
                return Err(PyValueError::new_err(format!(
                    "{}: no CPU {bad}: the trace has CPUs 0-{}",
                    t.path(),
                    t.nr_cpus().saturating_sub(1)
                )));
            }
        }
        let ids = events.map(|e| self.event_ids(e)).transpose()?;
        let w = Window { from: start.unwrap_or(0), to: end.unwrap_or(u64::MAX) };
        if order != "cpu" && order != "time" {
            return Err(PyValueError::new_err(format!("order: expected \"cpu\" or \"time\", found {order:?}")));
        }
        let by_time = order == "time";
        let cols = py
            .detach(|| -> warmcore_trace::Result<Columns> {
                let list: Vec<u32> = cpus.clone().unwrap_or_else(|| (0..t.nr_cpus()).collect());
                let keep = |id: u32| ids.as_ref().is_none_or(|v| v.contains(&id));
                let counts = t.cpu_event_counts();
                let whole = w.from == 0 && w.to == u64::MAX && ids.is_none();
                let cap = if whole { list.iter().map(|&c| counts[c as usize] as usize).sum() } else { 0 };
                let mut cols = Columns::with_capacity(cap);
                if by_time {
                    for e in t.events(Some(&list), w) {
                        let e = e?;
                        if keep(e.ev.id) {
                            cols.push(e.cpu, &e.ev);
                        }
                    }
                } else {
                    for &cpu in &list {
                        for e in t.cpu_events(cpu, w) {
                            let e = e?;
                            if keep(e.id) {
                                cols.push(cpu, &e);
                            }
                        }
                    }
                }
                Ok(cols)
            })
            .map_err(trace_err)?;
        cols.into_batch().to_pyarrow(py)
    }

    /// The level-of-detail summary (warmcore_trace::lod): read from FILE.lod
    /// beside the trace when current, built (in parallel, releasing the GIL)
    /// and saved otherwise. A dict: `meta` (the side file's JSON), `origin`
    /// ("read", or why it was built), `levels` (finest first: width, bins,
    /// `time` u64 and `counts` u32 as flat pyarrow arrays in (cpu, bin,
    /// column) order), the finest level's `state` (u64, likewise) and
    /// `execs` (u64 triples: pid, ns, the EXEC's comm words as `a | b << 32`).
    /// With `progress`, building says on stderr how many CPUs are done.
    #[pyo3(signature = (progress=false))]
    fn lod<'py>(&self, py: Python<'py>, progress: bool) -> PyResult<Bound<'py, PyDict>> {
        use warmcore_trace::lod::{self, Origin};
        let say = |done: usize, of: usize| {
            if progress && (done % 8 == 0 || done == of) {
                eprint!("\rwarmcore: building the level-of-detail summary: {done}/{of} CPUs{}", if done == of { "\n" } else { "" });
            }
        };
        let (l, origin) = py.detach(|| lod::open_or_build_with(&self.inner, &say)).map_err(trace_err)?;
        let out = PyDict::new(py);
        out.set_item("meta", json_to_py(py, &l.meta)?)?;
        out.set_item("origin", match origin {
            Origin::Read => "read".to_string(),
            Origin::Built(why) => format!("built ({why})"),
            Origin::BuiltNotSaved(why, e) => format!("built ({why}), not saved: {e}"),
        })?;
        let levels = PyList::empty(py);
        for lv in l.levels {
            let d = PyDict::new(py);
            d.set_item("width", lv.width)?;
            d.set_item("bins", lv.bins)?;
            d.set_item("time", UInt64Array::from(lv.time).to_data().to_pyarrow(py)?)?;
            d.set_item("counts", UInt32Array::from(lv.counts).to_data().to_pyarrow(py)?)?;
            levels.append(d)?;
        }
        out.set_item("levels", levels)?;
        out.set_item("state", UInt64Array::from(l.state).to_data().to_pyarrow(py)?)?;
        out.set_item("execs", UInt64Array::from(l.execs).to_data().to_pyarrow(py)?)?;
        out.set_item("time_columns", lod::TIME_COLUMNS.to_vec())?;
        out.set_item("kinds", lod::KINDS)?;
        Ok(out)
    }

    fn __repr__(&self) -> String {
        format!("<warmcore.Trace {} ({} CPUs, {} events)>", self.inner.path(), self.inner.nr_cpus(), self.inner.event_count())
    }
}

/// A writer of `.wct` files, for tests and small tools: a flat machine of
/// `cpus` CPUs with the given frequency range in kHz. The file is written
/// under the rules of every output (warmcore_trace::output): aside, and
/// renamed over `path` by `finish`; a writer dropped unfinished leaves an
/// older file whole.
#[pyclass(name = "Writer", module = "warmcore._native", unsendable)]
struct PyWriter {
    inner: Option<Writer<std::fs::File>>,
    out: Option<Output>,
    path: String,
}

impl PyWriter {
    fn w(&mut self) -> PyResult<&mut Writer<std::fs::File>> {
        let path = &self.path;
        self.inner.as_mut().ok_or_else(|| TraceError::new_err(format!("{path}: the writer is already finished")))
    }
}

#[pymethods]
impl PyWriter {
    #[new]
    #[pyo3(signature = (path, cpus, freq_min_khz=0, freq_base_khz=0, freq_max_khz=0, name="python", zstd_level=None, events=None, cores=None, chunk_events=None, description="written from Python"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        path: std::path::PathBuf,
        cpus: u32,
        freq_min_khz: u32,
        freq_base_khz: u32,
        freq_max_khz: u32,
        name: &str,
        zstd_level: Option<i32>,
        events: Option<Vec<(u32, String)>>,
        cores: Option<Vec<u32>>,
        chunk_events: Option<usize>,
        description: &str,
    ) -> PyResult<Self> {
        if let Some(c) = &cores {
            if c.len() != cpus as usize {
                return Err(PyValueError::new_err(format!("cores: expected one core number per CPU ({cpus}), got {}", c.len())));
            }
        }
        if chunk_events == Some(0) {
            return Err(PyValueError::new_err("chunk_events must be at least 1"));
        }
        let machine = Machine {
            name: name.to_string(),
            cpus: (0..cpus)
                .map(|cpu| CpuTopo { cpu, core: cores.as_ref().map_or(cpu, |c| c[cpu as usize]), die: 0, socket: 0 })
                .collect(),
            freq_min_khz,
            freq_base_khz,
            freq_max_khz,
        };
        // A file's own name table (ids of its choosing) or the built-in one.
        let events = events.map(|names| warmcore_trace::EventTable { names }).unwrap_or_default();
        let header = Header {
            machine,
            events,
            provenance: Provenance::Other { description: description.into() },
            wall_clock_start: None,
        };
        let defaults = WriterOptions::default();
        let opts = WriterOptions { zstd_level, chunk_events: chunk_events.unwrap_or(defaults.chunk_events) };
        let out = Output::create(&path, &[]).map_err(trace_err)?;
        let w = Writer::new(out.file().map_err(trace_err)?, out.name(), &header, opts).map_err(trace_err)?;
        Ok(PyWriter { inner: Some(w), out: Some(out), path: path.display().to_string() })
    }

    /// Append one event to `cpu`'s stream (each CPU's events in time order).
    #[pyo3(signature = (cpu, ts, pid, id, a=0, b=0))]
    fn push(&mut self, cpu: u32, ts: u64, pid: u32, id: u32, a: u32, b: u32) -> PyResult<()> {
        self.w()?.push(cpu, Event::new(ts, pid, id, a, b)).map_err(trace_err)
    }

    /// Append an event whose argument is a task name (EXEC's).
    fn push_comm(&mut self, cpu: u32, ts: u64, pid: u32, id: u32, comm: &str) -> PyResult<()> {
        self.w()?.push(cpu, Event::with_comm(ts, pid, id, comm)).map_err(trace_err)
    }

    fn note_process(&mut self, pid: u32, ppid: u32, comm: &str, ts: u64) -> PyResult<()> {
        self.w()?.note_process(pid, ppid, comm, ts);
        Ok(())
    }

    /// Write the index and put the file in place; returns the number of events.
    fn finish(&mut self) -> PyResult<u64> {
        self.w()?;
        let n = self.inner.take().unwrap().finish().map_err(trace_err)?;
        self.out.take().expect("an output while unfinished").commit().map_err(trace_err)?;
        Ok(n)
    }
}

/// The built-in event ids, by name.
/// One simulator run, as `warmcore sim --json`: the same names, defaults and
/// report (a dict). The run releases the GIL, so threads can run several.
#[pyfunction]
#[pyo3(signature = (workload, machine="default", policy="cfs", governor="powersave", seed=1, trace=None, max_time=None, max_events=None))]
#[allow(clippy::too_many_arguments)]
fn sim<'py>(
    py: Python<'py>,
    workload: &str,
    machine: &str,
    policy: &str,
    governor: &str,
    seed: u64,
    trace: Option<std::path::PathBuf>,
    max_time: Option<f64>,
    max_events: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut cfg = warmcore_sim::RunConfig::new(machine, workload, policy, governor, seed);
    cfg.trace = trace;
    if let Some(t) = max_time {
        if !(t > 0.0 && t.is_finite()) {
            return Err(PyValueError::new_err(format!("max_time must be a positive number of seconds, not {t}")));
        }
        cfg.limits.max_sim_ns = (t * 1e9) as u64;
    }
    if let Some(e) = max_events {
        cfg.limits.max_events = e;
    }
    let report = py.detach(|| warmcore_sim::run(&cfg)).map_err(|e| SimError::new_err(e.to_string()))?;
    json_to_py(py, &report)
}

/// The chain through the links `seeds` given each link's parent (the
/// `parent` column of `Trace.links()`; None or a negative number for none):
/// the seeds, their ancestors and descendants, as sorted link ids
/// (warmcore_trace::chains::chain).
#[pyfunction]
fn chain(parents: Vec<Option<i64>>, seeds: Vec<u32>) -> Vec<u32> {
    let parents: Vec<Option<u32>> = parents.iter().map(|p| p.and_then(|p| u32::try_from(p).ok())).collect();
    warmcore_trace::chains::chain(&parents, &seeds)
}

fn builtin_ids<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (id, name) in warmcore_trace::event::BUILTIN {
        d.set_item(*name, *id)?;
    }
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyTrace>()?;
    m.add_class::<PyWriter>()?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("SimError", py.get_type::<SimError>())?;
    m.add_function(wrap_pyfunction!(sim, m)?)?;
    m.add_function(wrap_pyfunction!(chain, m)?)?;
    m.add("EVENT_IDS", builtin_ids(py)?)?;
    // The length of the intervals of Trace.underload().
    m.add("UNDERLOAD_INTERVAL_NS", warmcore_trace::stats::INTERVAL_NS)?;
    let _ = PyList::empty(py);
    Ok(())
}
