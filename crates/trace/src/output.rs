// SPDX-License-Identifier: GPL-2.0-only
//! The files a command writes: one policy for every writer of the project.
//!
//! - An output is never one of the command's inputs: they are compared by
//!   file identity (device and inode), so another name for the input, a
//!   symbolic or a hard link, is refused too.
//! - A regular file (or a name not yet taken) is written to a temporary file
//!   beside it, renamed over it only when the writing succeeded; a failure
//!   removes that temporary file and nothing else, so the previous file (if
//!   any) is kept whole.
//! - A symbolic link is followed: the file it names is replaced, the link is
//!   kept. A link to nothing is refused.
//! - A stream (`-` for standard output, `/dev/stdout`, `/dev/null`, a pipe,
//!   a character device) is written in place, and never removed: every
//!   format of the project streams.
//! - A directory, a block device or a socket is refused, as is a name in a
//!   directory that does not exist.
//!
//! Every refusal is one line naming the path and what to do instead.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Result, TraceError};

/// An output being written. Dropped without [`Output::commit`], it removes
/// its temporary file (and only that).
pub struct Output {
    name: String,
    target: PathBuf,
    /// None once committed.
    kind: Option<Kind>,
}

/// The temporary files being written, with the outputs they stand for:
/// what [`abandon_all`] removes when the process is interrupted.
struct Pending {
    files: Vec<(PathBuf, String)>,
    /// Set by [`abandon_all`]: no temporary file is made after it, so none
    /// is left behind by a writer that starts while the process exits.
    abandoned: bool,
}

static PENDING: std::sync::Mutex<Pending> = std::sync::Mutex::new(Pending { files: Vec::new(), abandoned: false });

fn pending() -> std::sync::MutexGuard<'static, Pending> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Remove every temporary file being written (on SIGINT or SIGTERM, before
/// the process exits) and return the outputs they stood for, which keep
/// their previous content (or stay absent).
pub fn abandon_all() -> Vec<String> {
    let mut p = pending();
    p.abandoned = true;
    p.files
        .drain(..)
        .map(|(tmp, name)| {
            let _ = std::fs::remove_file(tmp);
            name
        })
        .collect()
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some(Kind::Temp(t)) = &self.kind {
            pending().files.retain(|(p, _)| p != t.path());
        }
    }
}

enum Kind {
    /// A temporary file beside `target`, renamed over it on commit.
    Temp(tempfile::NamedTempFile),
    /// Written in place: standard output, a pipe, a character device.
    Stream(File),
}

/// Whether `path` names standard output: `-`, `/dev/stdout` or fd 1.
pub fn is_stdout(path: &Path) -> bool {
    matches!(path.to_str(), Some("-" | "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1"))
}

/// The identity of an existing file, links followed.
fn identity(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// Refuse `path` as an output if it is one of `inputs` (by identity).
pub fn check_not_input(path: &Path, inputs: &[&Path]) -> Result<()> {
    let name = path.display().to_string();
    if let Some(id) = identity(path) {
        if let Some(i) = inputs.iter().find(|i| identity(i) == Some(id)) {
            let how = if Path::new(i) == path { String::new() } else { format!(" ({} by another name)", i.display()) };
            return Err(TraceError::new(&name, format!("is an input of this command{how}: choose another output file")));
        }
    }
    Ok(())
}

impl Output {
    /// Start writing `path`, refusing it if it is one of `inputs` or not
    /// something a command may write (see the module's documentation).
    pub fn create(path: &Path, inputs: &[&Path]) -> Result<Output> {
        let name = path.display().to_string();
        check_not_input(path, inputs)?;
        let err = |msg: &str| Err(TraceError::new(&name, msg.to_string()));
        if is_stdout(path) {
            use std::os::fd::AsFd;
            let fd = std::io::stdout().as_fd().try_clone_to_owned().map_err(|e| TraceError::io(&name, e))?;
            let f = File::from(fd);
            return Ok(Output { name, target: path.to_path_buf(), kind: Some(Kind::Stream(f)) });
        }
        let target = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
                Ok(t) => t,
                Err(_) => return err("is a symbolic link to nothing: give the file to write itself"),
            },
            _ => path.to_path_buf(),
        };
        match std::fs::metadata(&target) {
            Ok(m) if m.is_dir() => return err("is a directory: give a file name for the output"),
            Ok(m) if m.file_type().is_char_device() || m.file_type().is_fifo() => {
                let f = OpenOptions::new().write(true).open(&target).map_err(|e| TraceError::io(&name, e))?;
                return Ok(Output { name, target, kind: Some(Kind::Stream(f)) });
            }
            Ok(m) if !m.is_file() => return err("is not a regular file (a block device or a socket): give a file name"),
            _ => {}
        }
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(TraceError::new(&name, format!("no directory {}: create it first", dir.display())));
        }
        let base = target.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        // Made and registered under the lock, so that an interrupt either
        // sees the file and removes it or comes before and no file is made.
        let mut p = pending();
        if p.abandoned {
            return err("not written: the command was interrupted");
        }
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{base}."))
            .suffix(".part")
            // The mode a new file gets (the umask applies), not 0600.
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(&dir)
            .map_err(|e| TraceError::new(&name, format!("cannot write in {}: {e}", dir.display())))?;
        p.files.push((tmp.path().to_path_buf(), name.clone()));
        drop(p);
        Ok(Output { name, target, kind: Some(Kind::Temp(tmp)) })
    }

    /// The file to write into (a handle on the temporary file or the stream).
    pub fn file(&self) -> Result<File> {
        let f = match self.kind.as_ref().expect("not committed") {
            Kind::Temp(t) => t.as_file().try_clone(),
            Kind::Stream(f) => f.try_clone(),
        };
        f.map_err(|e| TraceError::io(&self.name, e))
    }

    /// The output as named on the command line, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The temporary file being written, renamed over the output on commit;
    /// None for a stream, written in place.
    pub fn temp(&self) -> Option<&Path> {
        match self.kind.as_ref()? {
            Kind::Temp(t) => Some(t.path()),
            Kind::Stream(_) => None,
        }
    }

    /// The writing succeeded: put the file in place.
    pub fn commit(mut self) -> Result<()> {
        match self.kind.take().expect("committed once") {
            Kind::Temp(t) => {
                let tmp = t.path().to_path_buf();
                // On an error the temporary file is removed as `t` drops.
                let r = t
                    .as_file()
                    .sync_data()
                    .map_err(|e| TraceError::io(&self.name, e).writing())
                    .and_then(|_| t.persist(&self.target).map_err(|e| TraceError::io(&self.name, e.error).writing()));
                // Only now: an interrupt before the rename still removes it.
                pending().files.retain(|(p, _)| *p != tmp);
                r?;
            }
            Kind::Stream(mut f) => f.flush().map_err(|e| TraceError::io(&self.name, e).writing())?,
        }
        Ok(())
    }
}

/// Write `bytes` to `path` under the same rules (small outputs: reports, JSON).
pub fn write(path: &Path, inputs: &[&Path], bytes: &[u8]) -> Result<()> {
    let out = Output::create(path, inputs)?;
    out.file()?.write_all(bytes).map_err(|e| TraceError::io(out.name(), e).writing())?;
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::write as write_with;

    /// A temporary directory holding the file `name` with `bytes`.
    fn dir_with(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        (d, p)
    }

    #[test]
    fn a_regular_file_is_replaced_only_on_commit() {
        let (d, p) = dir_with("out", b"old");
        let o = Output::create(&p, &[]).unwrap();
        assert!(o.temp().is_some_and(|t| t.parent() == Some(d.path())), "written beside the output");
        o.file().unwrap().write_all(b"half").unwrap();
        drop(o);
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1, "the temporary file is gone");
        write_with(&p, &[], b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn an_input_by_any_name_is_refused() {
        let (d, input) = dir_with("in", b"data");
        let hard = d.path().join("hard");
        std::fs::hard_link(&input, &hard).unwrap();
        let soft = d.path().join("soft");
        std::os::unix::fs::symlink(&input, &soft).unwrap();
        for p in [&input, &hard, &soft] {
            let e = write_with(p, &[&input], b"x").unwrap_err().to_string();
            assert!(e.contains("is an input of this command"), "{e}");
        }
        assert_eq!(std::fs::read(&input).unwrap(), b"data");
    }

    #[test]
    fn links_are_followed_and_kept_directories_refused() {
        let (d, real) = dir_with("real", b"old");
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_with(&link, &[], b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        let dangling = d.path().join("dangling");
        std::os::unix::fs::symlink(d.path().join("nothing"), &dangling).unwrap();
        assert!(write_with(&dangling, &[], b"x").unwrap_err().to_string().contains("symbolic link to nothing"));
        assert!(write_with(d.path(), &[], b"x").unwrap_err().to_string().contains("is a directory"));
        let e = write_with(&d.path().join("no/such"), &[], b"x").unwrap_err().to_string();
        assert!(e.contains("create it first"), "{e}");
    }

    #[test]
    fn a_failed_stream_is_not_removed() {
        let full = Path::new("/dev/full");
        if full.exists() {
            assert!(write_with(full, &[], &[0; 1 << 16]).is_err());
            assert!(full.exists());
        }
        write_with(Path::new("/dev/null"), &[], b"x").unwrap();
        assert!(Output::create(Path::new("/dev/null"), &[]).unwrap().temp().is_none(), "a stream is written in place");
    }
}
