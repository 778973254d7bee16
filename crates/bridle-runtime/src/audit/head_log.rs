//! The head log file: signed audit heads, one JSON line each, appended by every writer and read
//! back by `bridle audit verify` and `GET /v1/audit/verify`.
//!
//! Appends open the file with `O_APPEND` (created if missing, never truncated), write every line
//! of one flush with a single `write` call and `fsync` it (`sync_data`) before the flush counts
//! as done, so several processes (the replicas of one PostgreSQL store, one-shot commands beside
//! a server) can share one file: the kernel places each write at the end of the file, and lines
//! of one flush stay together. A write torn by a crash leaves a last line without its newline;
//! the next append starts on a fresh line, and a reader reports such a fragment as incomplete
//! rather than trusting it. The file is opened for each flush, so it can be moved aside (rotated)
//! between flushes.
//!
//! Reading streams the file in constant memory per line (a line is at most
//! `bridle_core::audit::head::MAX_LINE` bytes; a longer one is skipped and reported), checks each
//! line's signature and collects the trusted heads into [`Anchors`]. A line that is not a head,
//! or whose signature does not verify, is reported and never trusted.

use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use bridle_core::audit::head::{Anchors, HeadPublicKey, MAX_LINE, SignedHead, parse_line};
use serde::Serialize;

/// Appends `heads` to the log at `path` (created when missing) in one write, then syncs it.
pub fn append(path: &Path, heads: &[SignedHead]) -> io::Result<()> {
    if heads.is_empty() {
        return Ok(());
    }
    // Looked at before it is opened: a FIFO or a device would block or never end.
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => return Err(not_regular()),
        _ => {}
    }
    let mut file = OpenOptions::new().read(true).append(true).create(true).open(path)?;
    let mut buf = String::with_capacity(heads.len() * 320);
    // A fragment left by a torn write keeps its own line (a reader reports it); ours starts fresh.
    if ends_mid_line(&mut file)? {
        buf.push('\n');
    }
    for h in heads {
        buf.push_str(&h.to_line());
        buf.push('\n');
    }
    file.write_all(buf.as_bytes())?;
    file.sync_data()
}

fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")
}

/// Whether the file is non-empty and its last byte is not a newline.
fn ends_mid_line(file: &mut std::fs::File) -> io::Result<bool> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0_u8; 1];
    file.read_exact(&mut last)?;
    Ok(last != *b"\n")
}

/// A line of the head log that is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineProblem {
    /// 1-based line number.
    pub line: u64,
    /// What is wrong.
    pub problem: String,
}

/// What reading the head log found.
#[derive(Debug, Default)]
pub struct HeadLogRead {
    /// The trusted heads.
    pub anchors: Anchors,
    /// Lines read (blank lines included).
    pub lines: u64,
    /// Heads whose signature verified.
    pub trusted: u64,
    /// Lines that are not trusted: not a head, another key, a bad signature, too long.
    pub problems: Vec<LineProblem>,
    /// The last line had no newline (a write torn by a crash): reported apart, not trusted.
    pub incomplete_last_line: Option<u64>,
}

/// Reads the head log at `path` with `key`, keeping only the heads of tenant `only` when given
/// (a line naming another tenant is skipped unread; a line that names none is still reported);
/// `Ok(None)` when the file does not exist. Any other failure to read it is an error (the caller
/// fails: an unread log anchors nothing).
pub fn read(path: &Path, key: &HeadPublicKey, only: Option<&str>) -> io::Result<Option<HeadLogRead>> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => return Err(not_regular()),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    let mut reader = BufReader::new(file);
    let mut out = HeadLogRead::default();
    let mut buf = Vec::with_capacity(512);
    while let Some(line) = next_line(&mut reader, &mut buf)? {
        out.lines += 1;
        let n = out.lines;
        let problem = match line {
            Line::TooLong => format!("longer than {MAX_LINE} bytes"),
            Line::Complete(false) | Line::Partial(false) => continue,
            Line::Partial(true) => {
                out.incomplete_last_line = Some(n);
                continue;
            }
            Line::Complete(true) => match std::str::from_utf8(&buf) {
                Err(_) => "not UTF-8".to_owned(),
                Ok(text) => match parse_line(text.trim()) {
                    Ok(head) if only.is_some_and(|t| t != head.tenant) => continue,
                    Ok(head) => match key.verify(&head) {
                        Ok(()) => {
                            out.trusted += 1;
                            out.anchors.add(head);
                            continue;
                        }
                        Err(e) => e.to_string(),
                    },
                    Err(e) => e.to_string(),
                },
            },
        };
        out.problems.push(LineProblem { line: n, problem });
    }
    Ok(Some(out))
}

/// One line as read: `Complete(has_text)` ended by a newline, `Partial(has_text)` ended by the
/// end of the file, or too long (skipped to its end).
enum Line {
    Complete(bool),
    Partial(bool),
    TooLong,
}

/// Reads the next line into `buf` (without its newline), holding at most [`MAX_LINE`] + 1 bytes.
fn next_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<Option<Line>> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(match (any, too_long) {
                (false, _) => None,
                (true, true) => Some(Line::TooLong),
                (true, false) => Some(Line::Partial(!buf.iter().all(u8::is_ascii_whitespace))),
            });
        }
        any = true;
        let (chunk, used, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (available.get(..i).unwrap_or_default(), i + 1, true),
            None => (available, available.len(), false),
        };
        if !too_long {
            if buf.len() + chunk.len() > MAX_LINE {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        reader.consume(used);
        if done {
            return Ok(Some(if too_long {
                Line::TooLong
            } else {
                Line::Complete(!buf.iter().all(u8::is_ascii_whitespace))
            }));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use bridle_core::audit::head::{ChainHead, HeadKey};

    fn signed(key: &HeadKey, tenant: &str, seq: u64) -> SignedHead {
        key.sign(&ChainHead { tenant: tenant.into(), seq, hash: format!("h{seq}") }, "2026-01-01T00:00:00Z")
    }

    #[test]
    fn appends_from_several_writers_read_back_and_bad_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.heads");
        let key = HeadKey::from_seed(&[1; 32]);
        assert!(read(&path, &key.public(), None).unwrap().is_none(), "no file yet");
        append(&path, &[signed(&key, "a", 1), signed(&key, "b", 2)]).unwrap();
        // A torn write: a fragment without its newline; the next append starts a fresh line.
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"tenant\":\"a\",\"se").unwrap();
        append(&path, &[signed(&key, "a", 3)]).unwrap();
        let mut forged = signed(&key, "a", 9);
        forged.seq = 10;
        let other = HeadKey::from_seed(&[2; 32]);
        append(&path, &[forged, signed(&other, "a", 11)]).unwrap();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&vec![b'x'; MAX_LINE + 10]).unwrap();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"\n\n").unwrap();

        let r = read(&path, &key.public(), None).unwrap().unwrap();
        assert_eq!(r.trusted, 3);
        let problems: Vec<(u64, &str)> = r.problems.iter().map(|p| (p.line, p.problem.as_str())).collect();
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].1.starts_with("not a signed head"), "the torn fragment: {problems:?}");
        assert!(problems[1].1.contains("signature does not verify"), "{problems:?}");
        assert!(problems[2].1.contains("another key"), "{problems:?}");
        assert!(problems[3].1.contains("longer than"), "{problems:?}");
        assert_eq!(r.incomplete_last_line, None);
        let tenants: Vec<&str> = r.anchors.tenants().collect();
        assert_eq!(tenants, ["a", "b"]);
    }

    #[test]
    fn an_incomplete_last_line_is_reported_apart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.heads");
        let key = HeadKey::from_seed(&[1; 32]);
        append(&path, &[signed(&key, "a", 1)]).unwrap();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"ten").unwrap();
        let r = read(&path, &key.public(), None).unwrap().unwrap();
        assert_eq!((r.trusted, r.problems.len(), r.incomplete_last_line), (1, 0, Some(2)));
    }

    #[test]
    fn a_directory_is_an_error_not_an_empty_log() {
        let dir = tempfile::tempdir().unwrap();
        let key = HeadKey::from_seed(&[1; 32]);
        assert!(read(dir.path(), &key.public(), None).is_err());
    }
}
