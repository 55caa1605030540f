// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore ftl`: the frequency-transition measurement behind Figure 3 of
//! "Fewer Cores, More Hertz" (section 2): a 0.2 s busy
//! loop on an idle CPU while that CPU's frequency is sampled every 100 us;
//! how long the CPU takes to reach its highest frequency, and to fall back
//! once the loop ends (the paper's Xeon E7-8870 v4 took 29 ms to ramp up).
//!
//! The analysis works on samples, so that it can be checked with injected
//! ones; the measurement feeds it samples from a reader of the CPU's
//! frequency (cpufreq or hardware counters).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use warmcore_args::UsageError;
use warmcore_trace::output::Output;

/// Fewer Cores, More Hertz, section 2: the busy loop and the sampling period.
pub const BUSY: Duration = Duration::from_millis(200);
pub const PERIOD: Duration = Duration::from_micros(100);
/// Idle time sampled before the loop (the baseline) and after it (the fall).
pub const BEFORE: Duration = Duration::from_millis(100);
pub const AFTER: Duration = Duration::from_millis(300);
/// A sample within this fraction of a level counts as at that level.
pub const TOLERANCE: f64 = 0.02;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Time since the start of the measurement.
    pub t_ns: u64,
    pub khz: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Ramp {
    /// The idle CPU's frequency: the median before the loop.
    pub idle_khz: u32,
    /// The highest frequency seen during the loop.
    pub max_khz: u32,
    /// From the loop's start to the first sample within TOLERANCE of max.
    pub up_ns: Option<u64>,
    /// From the loop's end to the first sample back within TOLERANCE of idle.
    pub down_ns: Option<u64>,
}

fn median(mut v: Vec<u32>) -> Option<u32> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    Some(v[v.len() / 2])
}

/// Analyse samples of a busy loop that ran over [busy_from, busy_to) ns.
pub fn analyse(samples: &[Sample], busy_from: u64, busy_to: u64) -> Result<Ramp> {
    let valid: Vec<Sample> = samples.iter().copied().filter(|s| s.khz > 0).collect();
    if valid.is_empty() {
        bail!("no frequency readings: every sample was absent or 0");
    }
    let Some(idle) = median(valid.iter().filter(|s| s.t_ns < busy_from).map(|s| s.khz).collect()) else {
        bail!("no sample before the busy loop to tell the idle frequency");
    };
    let Some(max) = valid.iter().filter(|s| s.t_ns >= busy_from && s.t_ns < busy_to).map(|s| s.khz).max() else {
        bail!("no sample during the busy loop");
    };
    let near = |k: u32, level: u32| (k as f64 - level as f64).abs() <= level as f64 * TOLERANCE;
    let up_ns = valid
        .iter()
        .find(|s| s.t_ns >= busy_from && s.t_ns < busy_to && near(s.khz, max))
        .map(|s| s.t_ns - busy_from);
    let down_ns = if near(max, idle) {
        Some(0)
    } else {
        valid.iter().find(|s| s.t_ns >= busy_to && near(s.khz, idle)).map(|s| s.t_ns - busy_to)
    };
    Ok(Ramp { idle_khz: idle, max_khz: max, up_ns, down_ns })
}

fn pin_to(cpu: u32) -> Result<()> {
    warmcore_vm::proc::pin_to_cpu(cpu as usize).map_err(|e| anyhow::anyhow!("cannot run on CPU {cpu}: {e}"))
}

/// Run the busy loop on `cpu` and sample `read` (the CPU's frequency in kHz,
/// None when unreadable) every PERIOD from this thread, which should be on
/// another CPU. Returns the samples and the loop's [start, end) in ns.
pub fn measure(cpu: u32, read: &mut dyn FnMut() -> Option<u32>) -> Result<(Vec<Sample>, u64, u64)> {
    let t0 = Instant::now();
    let total = BEFORE + BUSY + AFTER;
    let mut samples = Vec::with_capacity((total.as_nanos() / PERIOD.as_nanos()) as usize + 16);
    let mut busy: Option<std::thread::JoinHandle<Result<(u64, u64)>>> = None;
    let mut next = Duration::ZERO;
    while t0.elapsed() < total {
        if busy.is_none() && t0.elapsed() >= BEFORE {
            busy = Some(std::thread::spawn(move || {
                pin_to(cpu)?;
                let from = t0.elapsed();
                let mut x = 0u64;
                while t0.elapsed() - from < BUSY {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                Ok((from.as_nanos() as u64, t0.elapsed().as_nanos() as u64))
            }));
        }
        while t0.elapsed() < next {
            std::hint::spin_loop();
        }
        let t = t0.elapsed().as_nanos() as u64;
        samples.push(Sample { t_ns: t, khz: read().unwrap_or(0) });
        next += PERIOD;
    }
    let (from, to) = match busy {
        Some(h) => h.join().map_err(|_| anyhow::anyhow!("the busy loop panicked"))??,
        None => bail!("the busy loop did not start"),
    };
    Ok((samples, from, to))
}

/// Draw the samples as a PNG into `out`: time on x, frequency on y, the
/// busy loop shaded, the idle and max levels as grey lines.
pub fn plot(out: Output, samples: &[Sample], busy_from: u64, busy_to: u64, ramp: &Ramp) -> Result<()> {
    const W: usize = 800;
    const H: usize = 400;
    const M: usize = 30;
    let mut px = vec![255u8; W * H * 3];
    let mut put = |x: usize, y: usize, c: [u8; 3]| {
        if x < W && y < H {
            px[(y * W + x) * 3..(y * W + x) * 3 + 3].copy_from_slice(&c);
        }
    };
    let t_max = samples.last().map(|s| s.t_ns).unwrap_or(1).max(1);
    let f_hi = (ramp.max_khz as f64 * 1.1).max(1.0);
    let xs = |t: u64| M + ((t as f64 / t_max as f64) * (W - 2 * M) as f64) as usize;
    let ys = |k: f64| H - M - ((k / f_hi) * (H - 2 * M) as f64).min((H - 2 * M) as f64) as usize;
    for x in xs(busy_from)..=xs(busy_to) {
        for y in M..H - M {
            put(x, y, [225, 235, 250]);
        }
    }
    for level in [ramp.idle_khz, ramp.max_khz] {
        for x in M..W - M {
            put(x, ys(level as f64), [170, 170, 170]);
        }
    }
    for x in M..W - M {
        put(x, H - M, [0, 0, 0]);
    }
    for y in M..=H - M {
        put(M, y, [0, 0, 0]);
    }
    let mut prev: Option<(usize, usize)> = None;
    for s in samples.iter().filter(|s| s.khz > 0) {
        let p = (xs(s.t_ns), ys(s.khz as f64));
        if let Some(q) = prev {
            let (lo, hi) = (q.1.min(p.1), q.1.max(p.1));
            for y in lo..=hi {
                put(p.0, y, [200, 30, 30]);
            }
            for x in q.0..=p.0 {
                put(x, q.1, [200, 30, 30]);
            }
        }
        prev = Some(p);
    }
    let mut enc = png::Encoder::new(std::io::BufWriter::new(out.file()?), W as u32, H as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()?.write_image_data(&px)?;
    out.commit()?;
    Ok(())
}

/// A reader of `cpu`'s frequency in kHz, or why there is none.
pub fn reader(cpu: u32) -> Result<Box<dyn FnMut() -> Option<u32>>> {
    if let Some(f) = crate::freq::Cpufreq::open(&[cpu]) {
        return Ok(Box::new(move || f.read(cpu)));
    }
    match crate::freq::open_counters(&[cpu]) {
        Ok(c) => {
            let (_, cy, rc) = c.fds.into_iter().next().expect("one CPU's counters");
            let ref_khz = c.ref_khz;
            let read = |fd: &std::os::fd::OwnedFd| -> Option<u64> {
                let mut v = 0u64;
                // SAFETY: reading a counting perf event's u64 value into v.
                let n = unsafe { libc::read(std::os::fd::AsRawFd::as_raw_fd(fd), (&mut v as *mut u64).cast(), 8) };
                (n == 8).then_some(v)
            };
            let mut last: Option<(u64, u64)> = None;
            Ok(Box::new(move || {
                let now = (read(&cy)?, read(&rc)?);
                let prev = last.replace(now)?;
                let (dc, dr) = (now.0.wrapping_sub(prev.0), now.1.wrapping_sub(prev.1));
                // Both halt with the CPU: no reference cycles, no reading.
                (dr > 0).then(|| (ref_khz * dc / dr) as u32)
            }))
        }
        Err(why) => bail!(
            "no frequency readings on this machine (no cpufreq driver for CPU {cpu}; {why}): cannot measure the frequency ramp"
        ),
    }
}

/// Measure on `cpu` (sampling from another CPU), draw the curve at `png`.
pub fn run(cpu: u32, png: &Path) -> Result<Ramp> {
    // The picture is written aside and renamed (warmcore_trace::output); a
    // path it may not write is refused before the measurement.
    let out = Output::create(png, &[])?;
    let online = crate::sys::online_cpus();
    if !online.contains(&cpu) {
        bail!(UsageError::new(format!("no CPU {cpu}: this machine's online CPUs are {}", crate::record::fmt_cpus(&online))));
    }
    let mut read = reader(cpu)?;
    if read().is_none() && read().is_none() {
        bail!("no frequency readings on this machine: CPU {cpu}'s frequency source gave no value");
    }
    if let Some(&other) = online.iter().find(|&&c| c != cpu) {
        pin_to(other)?;
    }
    let (samples, from, to) = measure(cpu, &mut *read)?;
    let ramp = analyse(&samples, from, to)?;
    plot(out, &samples, from, to, &ramp)?;
    Ok(ramp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Idle at 1.2 GHz, a loop over [100, 300) ms that ramps to 3 GHz
    /// linearly over `up` ms, back to idle `down` ms after the loop.
    fn synthetic(up: u64, down: u64) -> Vec<Sample> {
        (0..6000u64)
            .map(|i| {
                let t = i * 100_000;
                let ms = t as f64 / 1e6;
                let khz = if ms < 100.0 {
                    1_200_000.0
                } else if ms < 300.0 {
                    1_200_000.0 + 1_800_000.0 * ((ms - 100.0) / up as f64).min(1.0)
                } else if ms < 300.0 + down as f64 {
                    3_000_000.0
                } else {
                    1_200_000.0
                };
                Sample { t_ns: t, khz: khz as u32 }
            })
            .collect()
    }

    #[test]
    fn ramp_times_from_injected_samples() {
        let r = analyse(&synthetic(29, 12), 100_000_000, 300_000_000).unwrap();
        assert_eq!((r.idle_khz, r.max_khz), (1_200_000, 3_000_000));
        // Within 2 % of 3 GHz: 1.8 GHz * (1 - 0.02 * 3 / 1.8) of the way, at 28.0 ms.
        let up = r.up_ns.unwrap();
        assert!((27_900_000..=28_100_000).contains(&up), "{up}");
        assert_eq!(r.down_ns, Some(12_000_000));
    }

    #[test]
    fn flat_and_missing_readings() {
        let flat: Vec<Sample> = (0..100).map(|i| Sample { t_ns: i * 100_000, khz: 2_000_000 }).collect();
        let r = analyse(&flat, 1_000_000, 5_000_000).unwrap();
        assert_eq!((r.up_ns, r.down_ns), (Some(0), Some(0)));
        let none: Vec<Sample> = (0..100).map(|i| Sample { t_ns: i, khz: 0 }).collect();
        assert!(analyse(&none, 10, 50).unwrap_err().to_string().contains("no frequency readings"));
        // Never reaches idle again within the samples.
        let r = analyse(&synthetic(10, 10_000), 100_000_000, 300_000_000).unwrap();
        assert_eq!(r.down_ns, None);
    }

    #[test]
    fn plot_writes_a_png() {
        let s = synthetic(29, 12);
        let r = analyse(&s, 100_000_000, 300_000_000).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ftl.png");
        plot(Output::create(&p, &[]).unwrap(), &s, 100_000_000, 300_000_000, &r).unwrap();
        let dec = png::Decoder::new(std::fs::File::open(&p).unwrap());
        let reader = dec.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (800, 400));
    }

    #[test]
    fn measure_samples_what_it_reads() {
        // Injected reader: the measurement's own sample count as "kHz".
        let mut n = 0u32;
        let (s, from, to) = measure(0, &mut || {
            n += 1;
            Some(n)
        })
        .unwrap();
        assert!(from >= BEFORE.as_nanos() as u64 && to - from >= BUSY.as_nanos() as u64);
        assert!(s.windows(2).all(|w| w[0].t_ns < w[1].t_ns && w[1].khz == w[0].khz + 1));
        assert_eq!(s.first().unwrap().khz, 1);
    }
}
