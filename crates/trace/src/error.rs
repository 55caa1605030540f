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
    /// Writing an output failed (a full disk, an I/O error): a failure of
    /// the work. Every other error of a file (unreadable, malformed, an
    /// output that may not be written) is one of what the command was given.
    pub writing: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Offset(u64),
    Line(u64),
}

impl TraceError {
    pub fn at_offset(path: &str, offset: u64, msg: impl Into<String>) -> Self {
        TraceError { path: path.to_string(), at: Some(Location::Offset(offset)), msg: msg.into(), writing: false }
    }
    pub fn at_line(path: &str, line: u64, msg: impl Into<String>) -> Self {
        TraceError { path: path.to_string(), at: Some(Location::Line(line)), msg: msg.into(), writing: false }
    }
    pub fn new(path: &str, msg: impl Into<String>) -> Self {
        TraceError { path: path.to_string(), at: None, msg: msg.into(), writing: false }
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
    /// The same error, met while writing an output.
    pub fn writing(self) -> Self {
        TraceError { writing: true, ..self }
    }
}

/// Text from a file (quoted by a parser's message, or a path) shown on one
/// line: line breaks are written as \n and \r.
struct OneLine<'a>(&'a str);

impl fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in self.0.split_inclusive(['\n', '\r']) {
            match part.strip_suffix('\n').map(|p| (p, "\\n")).or_else(|| part.strip_suffix('\r').map(|p| (p, "\\r"))) {
                Some((text, esc)) => write!(f, "{text}{esc}")?,
                None => f.write_str(part)?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (path, msg) = (OneLine(&self.path), OneLine(&self.msg));
        match self.at {
            Some(Location::Offset(o)) => write!(f, "{path}: at offset {o}: {msg}"),
            Some(Location::Line(l)) => write!(f, "{path}:{l}: {msg}"),
            None => write!(f, "{path}: {msg}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TraceError;

    #[test]
    fn displays_on_one_line_whatever_the_message_quotes() {
        let e = TraceError::at_offset("a.wct", 24, "unknown variant `x)\n\r!`, expected one of `other`");
        assert_eq!(e.to_string(), "a.wct: at offset 24: unknown variant `x)\\n\\r!`, expected one of `other`");
    }
}

impl std::error::Error for TraceError {}

pub type Result<T> = std::result::Result<T, TraceError>;
