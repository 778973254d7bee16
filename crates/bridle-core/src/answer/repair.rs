//! Repairs of almost-JSON: curly quotes used as string delimiters and trailing commas.
//!
//! One linear pass. Curly quotes inside a straight-quoted string are content and stay; a
//! string opened by a curly quote becomes a straight-quoted string (a straight `"` inside it is
//! escaped). A comma followed only by white space and a closing bracket is dropped.

/// The repaired text, or `None` when there was nothing to repair.
pub(super) fn repair(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    // The closer of the string we are in: `"`, or a curly closer.
    let mut in_string: Option<Closer> = None;
    let mut escaped = false;
    let mut pending_comma: Option<String> = None;
    for c in text.chars() {
        if let Some(closer) = in_string {
            if escaped {
                escaped = false;
                out.push(c);
            } else if c == '\\' {
                escaped = true;
                out.push(c);
            } else if closer.closes(c) {
                in_string = None;
                out.push('"');
                changed |= c != '"';
            } else if c == '"' {
                // Only reachable inside a curly-quoted string.
                out.push_str("\\\"");
            } else {
                out.push(c);
            }
            continue;
        }
        if let Some(held) = pending_comma.as_mut() {
            if c.is_whitespace() {
                held.push(c);
                continue;
            }
            let held = pending_comma.take().unwrap_or_default();
            if c == '}' || c == ']' {
                changed = true;
                out.push_str(held.get(1..).unwrap_or_default());
            } else {
                out.push_str(&held);
            }
        }
        match c {
            ',' => pending_comma = Some(",".to_owned()),
            '"' => {
                in_string = Some(Closer::Straight);
                out.push('"');
            }
            '\u{201C}' | '\u{201D}' => {
                in_string = Some(Closer::CurlyDouble);
                out.push('"');
                changed = true;
            }
            '\u{2018}' | '\u{2019}' => {
                in_string = Some(Closer::CurlySingle);
                out.push('"');
                changed = true;
            }
            _ => out.push(c),
        }
    }
    if let Some(held) = pending_comma {
        out.push_str(&held);
    }
    changed.then_some(out)
}

#[derive(Clone, Copy)]
enum Closer {
    Straight,
    CurlyDouble,
    CurlySingle,
}

impl Closer {
    fn closes(self, c: char) -> bool {
        match self {
            Self::Straight => c == '"',
            Self::CurlyDouble => c == '\u{201D}' || c == '\u{201C}',
            Self::CurlySingle => c == '\u{2019}',
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curly_quotes_become_straight() {
        let t = "{\u{201C}tool\u{201D}: \u{201C}calculate\u{201D}, \u{2018}x\u{2019}: \u{201C}say \"hi\"\u{201D}}";
        assert_eq!(repair(t).as_deref(), Some(r#"{"tool": "calculate", "x": "say \"hi\""}"#));
    }

    #[test]
    fn curly_quotes_inside_straight_strings_are_content() {
        assert_eq!(repair("{\"a\": \"it\u{2019}s\"}"), None);
    }

    #[test]
    fn trailing_commas_are_dropped() {
        assert_eq!(repair("{\"a\": [1, 2,\n ],\n}").as_deref(), Some("{\"a\": [1, 2\n ]\n}"));
        assert_eq!(repair("{\"a\": \",}\"}"), None);
        assert_eq!(repair("[1, 2]"), None);
    }
}
