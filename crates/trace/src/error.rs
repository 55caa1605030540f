// SPDX-License-Identifier: GPL-2.0-only
use std::fmt;

/// What went wrong with a trace or an input file: the file, where in it, and
/// what was expected there. Displays as one line.
#[derive(Debug)]
pub struct TraceError {
    pub path: String,
    /// Byte offset (binary files) or line number (text files), if known.
    pub at: Option<Location>,
    pub msg: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Offset(u64),
    Line(u64),
}

impl TraceError {
    pub fn at_offset(path: &str, offset: u64, msg: impl Into<String>) -> Self {
        TraceError { path: path.to_string(), at: Some(Location::Offset(offset)), msg: msg.into() }
    }
    pub fn at_line(path: &str, line: u64, msg: impl Into<String>) -> Self {
        TraceError { path: path.to_string(), at: Some(Location::Line(line)), msg: msg.into() }
    }
    pub fn new(path: &str, msg: impl Into<String>) -> Self {
        TraceError { path: path.to_string(), at: None, msg: msg.into() }
    }
    pub fn io(path: &str, e: std::io::Error) -> Self {
        let hint = match e.kind() {
            std::io::ErrorKind::NotFound => " (check the path)",
            std::io::ErrorKind::PermissionDenied => " (check the file's permissions)",
            _ if e.raw_os_error() == Some(28) => " (the disk is full: free space and retry)",
            _ => "",
        };
        TraceError::new(path, format!("{e}{hint}"))
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.at {
            Some(Location::Offset(o)) => write!(f, "{}: at offset {}: {}", self.path, o, self.msg),
            Some(Location::Line(l)) => write!(f, "{}:{}: {}", self.path, l, self.msg),
            None => write!(f, "{}: {}", self.path, self.msg),
        }
    }
}

impl std::error::Error for TraceError {}

pub type Result<T> = std::result::Result<T, TraceError>;
