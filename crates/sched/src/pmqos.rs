// SPDX-License-Identifier: GPL-2.0-only
//! Warm cores without spinner threads (`--nest-warm pmqos`, `--warm-poll-cpus`).
//!
//! Nest keeps the cores of its primary nest warm by spinning in the idle
//! loop (Nest, section 3.2), where a wake-up costs nothing. The kernel offers
//! the same through a CPU's PM QoS resume latency
//! (`/sys/devices/system/cpu/cpuN/power/pm_qos_resume_latency_us`,
//! drivers/base/power/sysfs.c): writing `n/a` allows no exit latency, which
//! leaves cpuidle only its polling state; `0` removes the constraint. A core
//! that enters the primary nest is held in polling; one that has been out of
//! it for `HYSTERESIS` gets its original value back.
//!
//! Every value changed is restored when the run ends, however it ends. The
//! originals are written to a file first, so that after a crash (kill -9)
//! the next start restores them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// How long a core stays held after it left the primary nest: a few ticks,
/// so that a core compacted and taken back at once is not released and
/// held again at each step.
pub const HYSTERESIS: Duration = Duration::from_millis(20);
/// The value that allows no exit latency.
const POLL_ONLY: &str = "n/a";

/// Where the kernel's files and the originals file are (the tests use a
/// directory of their own).
#[derive(Clone, Debug)]
pub struct Paths {
    pub sysfs_cpu: PathBuf,
    pub originals: PathBuf,
}

impl Default for Paths {
    fn default() -> Self {
        Paths {
            sysfs_cpu: PathBuf::from("/sys/devices/system/cpu"),
            originals: PathBuf::from("/run/warmcore/pmqos-originals"),
        }
    }
}

impl Paths {
    fn file(&self, cpu: usize) -> PathBuf {
        self.sysfs_cpu.join(format!("cpu{cpu}/power/pm_qos_resume_latency_us"))
    }
    /// Whether this machine has the files (every CPU of `cpus`).
    pub fn available(&self, cpus: &[usize]) -> bool {
        !cpus.is_empty() && cpus.iter().all(|&c| self.file(c).exists())
    }
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).with_context(|| format!("writing {value} to {}", path.display()))
}

/// Restore what a run that did not end cleanly left held; the number of
/// CPUs restored.
pub fn restore_leftovers(paths: &Paths) -> Result<usize> {
    let Ok(text) = std::fs::read_to_string(&paths.originals) else { return Ok(0) };
    let mut n = 0;
    for line in text.lines() {
        let Some((cpu, value)) = line.split_once(' ') else { continue };
        let Ok(cpu) = cpu.parse::<usize>() else { continue };
        // A CPU gone offline since keeps its file; one gone for good has none.
        if paths.file(cpu).exists() {
            write(&paths.file(cpu), value)?;
            n += 1;
        }
    }
    std::fs::remove_file(&paths.originals)
        .with_context(|| format!("removing {}", paths.originals.display()))?;
    Ok(n)
}

/// The cores held in polling, and what to restore.
pub struct PmQos {
    paths: Paths,
    originals: BTreeMap<usize, String>,
    /// Held CPUs, with when each was last seen in the primary nest.
    held: BTreeMap<usize, Instant>,
}

impl PmQos {
    /// Take charge of `cpus`' values: record the originals (in the file
    /// first), change nothing yet.
    pub fn new(paths: Paths, cpus: &[usize]) -> Result<PmQos> {
        let mut originals = BTreeMap::new();
        for &c in cpus {
            let f = paths.file(c);
            let v = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            originals.insert(c, v.trim().to_string());
        }
        if let Some(dir) = paths.originals.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let text: String = originals.iter().map(|(c, v)| format!("{c} {v}\n")).collect();
        std::fs::write(&paths.originals, text).with_context(|| format!("writing {}", paths.originals.display()))?;
        Ok(PmQos { paths, originals, held: BTreeMap::new() })
    }

    /// Follow the primary nest (or warm's small warm set) at `now`: hold
    /// the CPUs `held` names, release those out of it for HYSTERESIS.
    pub fn update(&mut self, held: impl Fn(usize) -> bool, now: Instant) -> Result<()> {
        let cpus: Vec<usize> = self.originals.keys().copied().collect();
        for c in cpus {
            if held(c) {
                if self.held.insert(c, now).is_none() {
                    write(&self.paths.file(c), POLL_ONLY)?;
                }
            } else if let Some(&seen) = self.held.get(&c) {
                if now.duration_since(seen) >= HYSTERESIS {
                    self.held.remove(&c);
                    write(&self.paths.file(c), &self.originals[&c])?;
                }
            }
        }
        Ok(())
    }

    /// How many CPUs are held in polling now.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

impl Drop for PmQos {
    /// Every value back, then the originals file away.
    fn drop(&mut self) {
        let mut ok = true;
        for (c, v) in &self.originals {
            if let Err(e) = write(&self.paths.file(*c), v) {
                eprintln!("warmcore sched: {e:#}");
                ok = false;
            }
        }
        // Kept on a failure, for the next start to try again.
        if ok {
            let _ = std::fs::remove_file(&self.paths.originals);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(cpus: &[(usize, &str)]) -> (tempfile::TempDir, Paths) {
        let d = tempfile::tempdir().unwrap();
        for (c, v) in cpus {
            let p = d.path().join(format!("cpu{c}/power"));
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("pm_qos_resume_latency_us"), format!("{v}\n")).unwrap();
        }
        let paths = Paths { sysfs_cpu: d.path().to_path_buf(), originals: d.path().join("run/pmqos-originals") };
        (d, paths)
    }

    fn value(p: &Paths, c: usize) -> String {
        std::fs::read_to_string(p.file(c)).unwrap().trim().to_string()
    }

    #[test]
    fn holds_the_primary_nest_releases_after_the_hysteresis_and_restores_at_the_end() {
        let (_d, p) = fake(&[(0, "0"), (1, "0"), (2, "100")]);
        assert!(p.available(&[0, 1, 2]) && !p.available(&[3]));
        let mut q = PmQos::new(p.clone(), &[0, 1, 2]).unwrap();
        let t0 = Instant::now();
        q.update(|c| c == 0 || c == 2, t0).unwrap();
        assert_eq!((value(&p, 0), value(&p, 1), value(&p, 2), q.held()), ("n/a".into(), "0".into(), "n/a".into(), 2));
        // CPU 2 leaves the nest: still held within the hysteresis.
        q.update(|c| c == 0, t0 + HYSTERESIS / 2).unwrap();
        assert_eq!(value(&p, 2), "n/a");
        q.update(|c| c == 0, t0 + HYSTERESIS).unwrap();
        assert_eq!((value(&p, 2), q.held()), ("100".into(), 1));
        assert!(p.originals.exists());
        drop(q);
        assert_eq!((value(&p, 0), value(&p, 1), value(&p, 2)), ("0".into(), "0".into(), "100".into()));
        assert!(!p.originals.exists());
    }

    #[test]
    fn the_next_start_restores_what_a_crash_left() {
        let (_d, p) = fake(&[(0, "0"), (1, "50")]);
        let mut q = PmQos::new(p.clone(), &[0, 1]).unwrap();
        q.update(|_| true, Instant::now()).unwrap();
        std::mem::forget(q); // as kill -9
        assert_eq!((value(&p, 0), value(&p, 1)), ("n/a".into(), "n/a".into()));
        assert_eq!(restore_leftovers(&p).unwrap(), 2);
        assert_eq!((value(&p, 0), value(&p, 1)), ("0".into(), "50".into()));
        assert!(!p.originals.exists());
        assert_eq!(restore_leftovers(&p).unwrap(), 0, "nothing left the second time");
    }
}
