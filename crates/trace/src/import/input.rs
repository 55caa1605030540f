// SPDX-License-Identifier: GPL-2.0-only
//! Reading an importer's input: plain or zstd-compressed, from memory or a
//! file, whole (binary dumps) or one bounded line at a time (text).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::MAX_LINE;
use crate::error::{Result, TraceError};

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

pub(super) fn open_slice<'a>(name: &str, data: &'a [u8]) -> Result<Box<dyn BufRead + 'a>> {
    if data.starts_with(&ZSTD_MAGIC) {
        let d = zstd_decoder(name, data)?;
        Ok(Box::new(BufReader::new(d)))
    } else {
        Ok(Box::new(data))
    }
}

fn zstd_decoder<'a, R: BufRead + 'a>(name: &str, r: R) -> Result<zstd::stream::read::Decoder<'a, R>> {
    let mut d = zstd::stream::read::Decoder::with_buffer(r).map_err(|e| TraceError::new(name, format!("zstd: {e}")))?;
    // Bound the decoder's window (128 MiB): a hostile frame cannot demand more.
    d.window_log_max(27).map_err(|e| TraceError::new(name, format!("zstd: {e}")))?;
    Ok(d)
}

pub(crate) fn open_file(name: &str, path: &Path) -> Result<Box<dyn BufRead>> {
    let f = File::open(path).map_err(|e| TraceError::io(name, e))?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    let head = r.fill_buf().map_err(|e| TraceError::io(name, e))?;
    if head.starts_with(&ZSTD_MAGIC) {
        Ok(Box::new(BufReader::new(zstd_decoder(name, r)?)))
    } else {
        Ok(Box::new(r))
    }
}

/// Read the whole of a (possibly zstd-compressed) binary file, at most `limit`
/// bytes after decompression.
pub(crate) fn read_all(name: &str, r: &mut dyn BufRead, limit: u64) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    r.take(limit + 1).read_to_end(&mut v).map_err(|e| TraceError::new(name, format!("read: {e}")))?;
    if v.len() as u64 > limit {
        return Err(TraceError::new(name, format!("larger than {limit} bytes; expected a smaller file")));
    }
    Ok(v)
}

/// Reads lines of at most [`MAX_LINE`] bytes, counting them from 1.
pub(crate) struct Lines<'a> {
    name: &'a str,
    r: Box<dyn BufRead + 'a>,
    buf: Vec<u8>,
    pub line: u64,
}

impl<'a> Lines<'a> {
    pub fn new(name: &'a str, r: Box<dyn BufRead + 'a>) -> Self {
        Lines { name, r, buf: Vec::new(), line: 0 }
    }

    /// The next line (its number, its text without the end of line); None
    /// at the end of the input.
    pub fn next_line(&mut self) -> Result<Option<(u64, &str)>> {
        self.buf.clear();
        loop {
            let avail = match self.r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(TraceError::at_line(self.name, self.line + 1, format!("read failed: {e}")));
                }
            };
            if avail.is_empty() {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                break;
            }
            let (take, done) = match avail.iter().position(|&c| c == b'\n') {
                Some(i) => (i + 1, true),
                None => (avail.len(), false),
            };
            if self.buf.len() + take > MAX_LINE + 1 {
                return Err(TraceError::at_line(
                    self.name,
                    self.line + 1,
                    format!("line longer than {MAX_LINE} bytes; expected a text line (is this a binary file?)"),
                ));
            }
            self.buf.extend_from_slice(&avail[..take]);
            self.r.consume(take);
            if done {
                break;
            }
        }
        self.line += 1;
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        match std::str::from_utf8(&self.buf) {
            Ok(s) => Ok(Some((self.line, s))),
            Err(e) => Err(TraceError::at_line(
                self.name,
                self.line,
                format!("byte {} is not UTF-8 text; expected a text line (is this a binary file?)", e.valid_up_to() + 1),
            )),
        }
    }
}
