//! Bracket matching over prose: the balanced `{…}` and `[…]` regions of a text, found in one
//! linear pass that respects JSON strings (straight and curly quotes) and backslash escapes.
//!
//! Prose outside brackets is never read as a string, so a stray quote in a sentence cannot
//! swallow the call after it. A closer that does not match, or nesting past [`MAX_DEPTH`],
//! abandons every open bracket at that point; nothing is ever rescanned.

/// Deepest nesting tracked; deeper text cannot be read as JSON anyway (serde_json stops at 128).
pub(super) const MAX_DEPTH: usize = 256;

/// One balanced region: `start` is the opening bracket's byte offset, `end` is one past the
/// closing bracket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pair {
    pub start: usize,
    pub end: usize,
}

/// Balanced regions as a forest: top-level regions in order, each with its nested regions.
#[derive(Debug, Default)]
pub(super) struct Forest {
    pairs: Vec<Pair>,
    first_child: Vec<Option<usize>>,
    next_sibling: Vec<Option<usize>>,
    roots: Vec<usize>,
}

impl Forest {
    /// The region with index `i`.
    pub fn pair(&self, i: usize) -> Option<Pair> {
        self.pairs.get(i).copied()
    }

    /// Top-level regions, in text order.
    pub fn roots(&self) -> &[usize] {
        &self.roots
    }

    /// Regions directly inside region `i`, in text order.
    pub fn children(&self, i: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut next = self.first_child.get(i).copied().flatten();
        while let Some(c) = next {
            out.push(c);
            next = self.next_sibling.get(c).copied().flatten();
        }
        out
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    Straight,
    CurlyDouble,
    CurlySingle,
}

impl Quote {
    fn opened_by(c: char) -> Option<Self> {
        match c {
            '"' => Some(Self::Straight),
            '\u{201C}' => Some(Self::CurlyDouble),
            '\u{2018}' => Some(Self::CurlySingle),
            _ => None,
        }
    }

    fn closed_by(self, c: char) -> bool {
        match self {
            Self::Straight => c == '"',
            Self::CurlyDouble => c == '\u{201D}' || c == '\u{201C}',
            Self::CurlySingle => c == '\u{2019}',
        }
    }
}

/// Whether the scan is inside a JSON string (straight or curly quotes, backslash escapes).
#[derive(Default)]
struct Strings {
    quote: Option<Quote>,
    escaped: bool,
}

impl Strings {
    /// Feeds `c`; true when it belongs to a string (including its closing quote).
    fn consumes(&mut self, c: char) -> bool {
        let Some(q) = self.quote else { return false };
        if self.escaped {
            self.escaped = false;
        } else if c == '\\' {
            self.escaped = true;
        } else if q.closed_by(c) {
            self.quote = None;
        }
        true
    }

    /// Opens a string if `c` is an opening quote.
    fn open(&mut self, c: char) {
        self.quote = Quote::opened_by(c);
    }
}

struct Opener {
    start: usize,
    close: char,
    parent: Option<usize>,
    end: Option<usize>,
}

/// Finds every balanced region of `text` in one pass.
pub(super) fn scan(text: &str) -> Forest {
    let mut openers: Vec<Opener> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut strings = Strings::default();
    for (at, c) in text.char_indices() {
        if strings.consumes(c) {
            continue;
        }
        match c {
            '{' | '[' => {
                if stack.len() >= MAX_DEPTH {
                    stack.clear();
                    continue;
                }
                let close = if c == '{' { '}' } else { ']' };
                openers.push(Opener { start: at, close, parent: stack.last().copied(), end: None });
                stack.push(openers.len() - 1);
            }
            '}' | ']' => match stack.last().copied() {
                Some(top) if openers.get(top).is_some_and(|o| o.close == c) => {
                    stack.pop();
                    if let Some(o) = openers.get_mut(top) {
                        o.end = Some(at + c.len_utf8());
                    }
                }
                // A closer that matches nothing abandons every open bracket.
                _ => stack.clear(),
            },
            _ if !stack.is_empty() => strings.open(c),
            _ => {}
        }
    }
    build(&openers)
}

/// Links matched openers into a forest. An opener whose parent never closed is a root: when a
/// parent is abandoned, so is everything around it.
fn build(openers: &[Opener]) -> Forest {
    let mut index = vec![None; openers.len()];
    let mut forest = Forest::default();
    for (i, o) in openers.iter().enumerate() {
        if let Some(end) = o.end {
            if let Some(slot) = index.get_mut(i) {
                *slot = Some(forest.pairs.len());
            }
            forest.pairs.push(Pair { start: o.start, end });
        }
    }
    forest.first_child = vec![None; forest.pairs.len()];
    forest.next_sibling = vec![None; forest.pairs.len()];
    // Walk backwards so each child list ends up in text order.
    for (i, o) in openers.iter().enumerate().rev() {
        let Some(me) = index.get(i).copied().flatten() else { continue };
        let parent = o.parent.and_then(|p| index.get(p).copied().flatten());
        match parent {
            Some(p) => {
                let head = forest.first_child.get(p).copied().flatten();
                if let Some(slot) = forest.next_sibling.get_mut(me) {
                    *slot = head;
                }
                if let Some(slot) = forest.first_child.get_mut(p) {
                    *slot = Some(me);
                }
            }
            None => forest.roots.push(me),
        }
    }
    forest.roots.reverse();
    forest
}

/// Byte spans (relative to `array`) of the elements of a JSON array text, trimmed of white
/// space; `None` if `array` is not one bracketed array. Works on unrepaired text (curly quotes,
/// a trailing comma), so spans point into the original answer.
pub(super) fn element_spans(array: &str) -> Option<Vec<Pair>> {
    let mut spans = Vec::new();
    let mut depth = 0usize;
    let mut strings = Strings::default();
    let mut current: Option<Pair> = None;
    for (at, c) in array.char_indices() {
        let end = at + c.len_utf8();
        if strings.consumes(c) {
            if let Some(cur) = current.as_mut() {
                cur.end = end;
            }
            continue;
        }
        if depth == 0 {
            if at == 0 && c == '[' {
                depth = 1;
                continue;
            }
            return None;
        }
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' if depth == 1 => {
                spans.extend(current.take());
                depth = 0;
                if end != array.len() {
                    return None;
                }
                continue;
            }
            ']' | '}' => depth -= 1,
            ',' if depth == 1 => {
                spans.extend(current.take());
                continue;
            }
            _ if c.is_whitespace() => continue,
            _ => strings.open(c),
        }
        match current.as_mut() {
            Some(cur) => cur.end = end,
            None => current = Some(Pair { start: at, end }),
        }
    }
    (depth == 0).then_some(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions(text: &str) -> Vec<&str> {
        let f = scan(text);
        f.roots().iter().filter_map(|&i| f.pair(i)).filter_map(|p| text.get(p.start..p.end)).collect()
    }

    #[test]
    fn finds_top_level_regions_in_prose() {
        let t = r#"Sure, "quoted" prose {"a": "}"} and [1, [2]] then {"b": "\"{"}"#;
        assert_eq!(regions(t), [r#"{"a": "}"}"#, "[1, [2]]", r#"{"b": "\"{"}"#]);
    }

    #[test]
    fn an_unclosed_bracket_leaves_inner_regions_as_roots() {
        let t = r#"see {note {"tool": "x"} and more"#;
        assert_eq!(regions(t), [r#"{"tool": "x"}"#]);
    }

    #[test]
    fn a_mismatched_closer_abandons_open_brackets() {
        assert_eq!(regions("{ ] {}"), ["{}"]);
    }

    #[test]
    fn curly_strings_are_strings() {
        let t = "{\u{201C}a}\u{201D}: 1}";
        assert_eq!(regions(t), [t]);
    }

    #[test]
    fn children_are_in_order() {
        let t = "{[1] {2} [3]}";
        let f = scan(t);
        let root = f.roots().first().copied().unwrap_or_default();
        let kids: Vec<_> = f.children(root).iter().filter_map(|&c| f.pair(c)).map(|p| p.start).collect();
        assert_eq!(kids, [1, 5, 9]);
    }

    #[test]
    fn deep_nesting_is_abandoned_not_recursed() {
        let t = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let f = scan(&t);
        assert!(f.roots().len() <= 1);
    }

    #[test]
    fn element_spans_follow_the_array() {
        let a = r#"[ {"x": ",]"}, [1,2] ,3, ]"#;
        let spans = element_spans(a).unwrap_or_default();
        let parts: Vec<_> = spans.iter().filter_map(|p| a.get(p.start..p.end)).collect();
        assert_eq!(parts, [r#"{"x": ",]"}"#, "[1,2]", "3"]);
        assert!(element_spans("[1] x").is_none());
    }
}
