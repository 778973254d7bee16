//! Writing to stdout without panicking when the reader goes away (`bridle … | head`).

use std::io::Write;

/// Prints one line; a closed pipe ends output quietly, other errors are reported.
pub fn line(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
