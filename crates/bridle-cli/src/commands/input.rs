//! Command input in bounded pieces: a whole input read up to a byte cap, or lines read one at a
//! time, each up to its own cap. No input, however long, makes a command hold more than its cap.
//! What the bytes mean (an answer, a text to scan, a JSON line) is the caller's business.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::Path;

use anyhow::Context;

/// Bytes the line reader asks the operating system for at a time.
const READ_BUFFER: usize = 64 * 1024;

/// A whole input read up to a cap.
#[derive(Debug, PartialEq, Eq)]
pub enum Whole {
    /// All of it: fewer bytes than the cap.
    Complete(Vec<u8>),
    /// The cap was reached: the input is at least that long, and nothing past it was read.
    Capped(Vec<u8>),
}

/// Stdin or `path` (`-` or none is stdin), read unbuffered so nothing past `cap` bytes leaves
/// the pipe or the file.
pub fn read_whole(path: Option<&Path>, cap: usize) -> anyhow::Result<Whole> {
    match path {
        Some(p) if p != Path::new("-") => {
            let file = File::open(p).with_context(|| format!("cannot read `{}`", p.display()))?;
            capped(file, cap).with_context(|| format!("cannot read `{}`", p.display()))
        }
        _ => capped(raw_stdin()?, cap).context("cannot read stdin"),
    }
}

/// Stdin without the standard library's buffer, which would read ahead of the cap.
#[cfg(unix)]
fn raw_stdin() -> anyhow::Result<File> {
    use std::os::fd::AsFd;
    let fd = std::io::stdin().as_fd().try_clone_to_owned().context("cannot open stdin")?;
    Ok(File::from(fd))
}

#[cfg(not(unix))]
fn raw_stdin() -> anyhow::Result<std::io::Stdin> {
    Ok(std::io::stdin())
}

/// Reads `reader` to its end or to `cap` bytes, whichever comes first.
pub fn capped(reader: impl Read, cap: usize) -> std::io::Result<Whole> {
    let mut bytes = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX);
    reader.take(limit).read_to_end(&mut bytes)?;
    Ok(if bytes.len() >= cap { Whole::Capped(bytes) } else { Whole::Complete(bytes) })
}

/// One line as read.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// UTF-8 text without its line end (`\n` or `\r\n`).
    Text(&'a str),
    /// Not UTF-8: the first bad byte's offset in the line.
    NotUtf8(usize),
    /// Longer than the cap: the line's length in bytes (read and dropped, never kept).
    TooLong(u64),
}

/// Reads lines one at a time, each up to a cap, reusing one buffer: memory stays at the cap
/// whatever the input's length.
pub struct Lines {
    reader: Box<dyn BufRead>,
    buf: Vec<u8>,
    number: u64,
}

impl Lines {
    /// Lines of stdin or of `path` (`-` or none is stdin).
    pub fn open(path: Option<&Path>) -> anyhow::Result<Self> {
        let reader: Box<dyn BufRead> = match path {
            Some(p) if p != Path::new("-") => {
                let file = File::open(p).with_context(|| format!("cannot read `{}`", p.display()))?;
                Box::new(BufReader::with_capacity(READ_BUFFER, file))
            }
            _ => Box::new(BufReader::with_capacity(READ_BUFFER, std::io::stdin())),
        };
        Ok(Self::new(reader))
    }

    /// Lines of `reader`.
    pub fn new(reader: Box<dyn BufRead>) -> Self {
        Self { reader, buf: Vec::new(), number: 0 }
    }

    /// The next line and its 1-based number, or `None` at the end. A line longer than `cap`
    /// bytes is read to its end and dropped.
    pub fn next_line(&mut self, cap: usize) -> std::io::Result<Option<(u64, Line<'_>)>> {
        self.buf.clear();
        let mut length: u64 = 0;
        let mut read_any = false;
        let mut too_long = false;
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            read_any = true;
            let newline = chunk.iter().position(|&b| b == b'\n');
            let (part, used) = match newline {
                Some(at) => (chunk.get(..at).unwrap_or_default(), at.saturating_add(1)),
                None => (chunk, chunk.len()),
            };
            length = length.saturating_add(u64::try_from(part.len()).unwrap_or(u64::MAX));
            // INVARIANT: the buffer never holds more than `cap` bytes of a line.
            if !too_long && self.buf.len().saturating_add(part.len()) <= cap {
                self.buf.extend_from_slice(part);
            } else {
                too_long = true;
                self.buf.clear();
            }
            self.reader.consume(used);
            if newline.is_some() {
                break;
            }
        }
        if !read_any {
            return Ok(None);
        }
        self.number = self.number.saturating_add(1);
        if too_long {
            return Ok(Some((self.number, Line::TooLong(length))));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        let line = match std::str::from_utf8(&self.buf) {
            Ok(text) => Line::Text(text),
            Err(e) => Line::NotUtf8(e.valid_up_to()),
        };
        Ok(Some((self.number, line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &'static [u8], cap: usize) -> Vec<(u64, String)> {
        let mut lines = Lines::new(Box::new(BufReader::with_capacity(4, input)));
        let mut out = Vec::new();
        while let Ok(Some((n, line))) = lines.next_line(cap) {
            out.push((n, format!("{line:?}")));
        }
        out
    }

    #[test]
    fn lines_are_numbered_and_bad_ones_named_without_stopping() {
        let got = all(b"one\r\n\ntoo long line\n\xff\xfe ok\nlast", 8);
        let want =
            [(1, "Text(\"one\")"), (2, "Text(\"\")"), (3, "TooLong(13)"), (4, "NotUtf8(0)"), (5, "Text(\"last\")")];
        assert_eq!(got, want.map(|(n, s)| (n, s.to_owned())));
        assert!(all(b"", 8).is_empty());
        assert_eq!(all(b"a\n", 8).len(), 1, "a final line end opens no empty line");
    }

    #[test]
    fn a_whole_input_is_read_up_to_its_cap_and_no_further() {
        assert_eq!(capped(&b"abc"[..], 4).ok(), Some(Whole::Complete(b"abc".to_vec())));
        assert_eq!(capped(&b"abcd"[..], 4).ok(), Some(Whole::Capped(b"abcd".to_vec())));
        let mut source = &b"abcdefgh"[..];
        assert_eq!(capped(&mut source, 4).ok(), Some(Whole::Capped(b"abcd".to_vec())));
        assert_eq!(source, b"efgh", "nothing past the cap was taken");
    }
}
