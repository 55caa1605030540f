// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore trace export FILE --perfetto OUT --parquet OUT`

use std::path::Path;

use anyhow::{bail, Result};
use warmcore_trace::export::{parquet, perfetto};
use warmcore_trace::Trace;

pub fn run(t: &Trace, perfetto_out: Option<&Path>, parquet_out: Option<&Path>, from: Option<u64>, to: Option<u64>) -> Result<()> {
    if let (Some(a), Some(b)) = (perfetto_out, parquet_out) {
        if a == b || (warmcore_trace::output::is_stdout(a) && warmcore_trace::output::is_stdout(b)) {
            bail!(warmcore_args::UsageError::new(format!("{}: --perfetto and --parquet name the same file: give each its own", a.display())));
        }
    }
    let w = super::window(t, from, to)?;
    if let Some(out) = perfetto_out {
        let s = perfetto::export(t, w, out)?;
        let mut line = format!(
            "{}: {} events -> {} ftrace events ({} cpu_frequency, {} cpu_idle{}) in {} packets, {} processes named",
            out.display(),
            s.events_read,
            s.ftrace_events,
            s.freq_samples,
            s.idle_events,
            if s.idle_derived { " derived from idle-task switches" } else { "" },
            s.packets,
            s.processes
        );
        if !s.left_out.is_empty() {
            let parts: Vec<String> = s.left_out.iter().map(|(n, c)| format!("{n} {c}")).collect();
            line.push_str(&format!("; no Perfetto equivalent, left out: {}", parts.join(", ")));
        }
        super::say(out, line);
    }
    if let Some(out) = parquet_out {
        let s = parquet::export(t, w, out)?;
        super::say(out, format!("{}: {} rows in {} row groups", out.display(), s.rows, s.row_groups));
    }
    Ok(())
}
