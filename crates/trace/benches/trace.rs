// SPDX-License-Identifier: GPL-2.0-only
//! The trace format's speed figures (issue targets in brackets), each beside a
//! baseline measured in the same run, so that the ratio means something on a
//! shared, noisy machine:
//! - writing events/s [>= 20 M/s], beside plain sequential writes of the same bytes;
//! - opening a 10 M-event trace and reading a 1 % time window [<= 50 ms], beside
//!   reading the whole trace;
//! - `trace stats` itself is measured by scripts/bench.sh on the CLI, with its memory.
//!
//! Run: `cargo bench -p warmcore-trace --bench trace` (or `make bench`).

use std::io::Write;
use std::time::Instant;

use warmcore_trace::synth::{generate, SynthOptions};
use warmcore_trace::*;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let dir = std::env::var("WARMCORE_BENCH_DIR").map(std::path::PathBuf::from).unwrap_or_else(|_| std::env::temp_dir());
    let dir = tempfile::tempdir_in(dir).expect("temporary directory");
    let events_total: u64 = 20_000_000;
    let cpus = 160u32;

    // Events to write, prepared beforehand so that only the writer is timed.
    let base: Vec<(u32, Event)> = (0..2_000_000u64)
        .map(|i| {
            let cpu = (i % cpus as u64) as u32;
            (cpu, Event::new(i * 50, (i % 5000) as u32, ids::CTX_SWITCH, ((i + 1) % 5000) as u32, 1))
        })
        .collect();
    let header = Header::other(synth::synth_machine(cpus), "bench");
    let rounds = events_total / base.len() as u64;

    for (label, zstd) in [("raw", None), ("zstd-1", Some(1))] {
        let mut writer_s = Vec::new();
        let mut plain_s = Vec::new();
        for _ in 0..3 {
            let p = dir.path().join("w.wct");
            let t0 = Instant::now();
            let mut w = Writer::create(&p, &header, WriterOptions { zstd_level: zstd, ..Default::default() }).unwrap();
            for r in 0..rounds {
                let shift = r * 100_000_000;
                for &(cpu, ev) in &base {
                    w.push(cpu, Event { ts: ev.ts + shift, ..ev }).unwrap();
                }
            }
            w.finish().unwrap();
            writer_s.push(t0.elapsed().as_secs_f64());
            let bytes = std::fs::metadata(&p).unwrap().len();
            // Baseline: the same number of bytes written sequentially.
            let q = dir.path().join("plain");
            let block = vec![0x5au8; 1 << 20];
            let t0 = Instant::now();
            let mut f = std::io::BufWriter::new(std::fs::File::create(&q).unwrap());
            let mut left = bytes as usize;
            while left > 0 {
                let n = left.min(block.len());
                f.write_all(&block[..n]).unwrap();
                left -= n;
            }
            f.flush().unwrap();
            drop(f);
            plain_s.push(t0.elapsed().as_secs_f64());
            if label == "raw" {
                println!("  ({label}: {:.1} bytes/event on disk)", bytes as f64 / events_total as f64);
            }
        }
        let (ws, ps) = (median(writer_s), median(plain_s));
        println!(
            "write {label}: {:.1} M events/s [target >= 20 M/s: {}]; plain write of the same bytes {:.3} s, writer {:.3} s, ratio {:.2}",
            events_total as f64 / ws / 1e6,
            if events_total as f64 / ws >= 20e6 { "met" } else { "NOT met" },
            ps,
            ws,
            ws / ps
        );
    }

    // Open and read a 1 % window of a 10 M-event trace.
    let p = dir.path().join("big.wct");
    generate(&p, &SynthOptions { events: 10_000_000, cpus, seed: 7, zstd_level: None }).unwrap();
    let t = Trace::open(&p).unwrap();
    let (a, b) = t.span().unwrap();
    let t0 = Instant::now();
    let all = t.events(None, Window::ALL).count();
    let full_s = t0.elapsed().as_secs_f64();
    drop(t);
    let mut window_ms = Vec::new();
    let mut got = 0;
    for k in 0..10u64 {
        let from = a + (b - a) / 100 * (k * 9 + 3);
        let t0 = Instant::now();
        let t = Trace::open(&p).unwrap();
        got = t.events(None, Window { from, to: from + (b - a) / 100 }).count();
        window_ms.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let wm = median(window_ms);
    println!(
        "open + read a 1 % window ({got} of {all} events, 160 CPUs): {wm:.1} ms [target <= 50 ms: {}]; reading all: {:.0} ms, ratio {:.3}",
        if wm <= 50.0 { "met" } else { "NOT met" },
        full_s * 1e3,
        wm / (full_s * 1e3)
    );
}
