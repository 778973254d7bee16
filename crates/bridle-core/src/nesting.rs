//! Nesting bounds checked before a recursive parser (Cedar policies and schemas, CEL
//! expressions) sees the text: one linear scan of bracket depth outside string literals and
//! `//` comments, so deep input is a clear error naming the line instead of a stack overflow.
//!
//! Besides `()`, `[]` and `{}`, constructs that nest without brackets count as a level too:
//! Cedar's `if … then … else if …` chains (every `if` keyword within one bracket level), the
//! `<…>` of Cedar schema types (`Set<Set<…>>`) and CEL's `?:` chains (every `?`). The count is
//! conservative: it may overestimate depth (never underestimate it), which at worst refuses a
//! policy far deeper than any policy written by hand.
//!
//! Within the bound the parsers still recurse with large frames (CEL's ANTLR parser takes over
//! 150 KiB of stack per level in a debug build), so they run on a thread of their own with
//! [`PARSER_STACK_BYTES`] of stack ([`with_parser_stack`]), never on a small worker stack.

use std::fmt;

/// Deepest nesting a Cedar policy, Cedar schema or CEL expression may have.
pub const MAX_DEPTH: usize = 32;

/// Stack of the thread a recursive parser runs on (reserved, touched only as deep as used).
pub const PARSER_STACK_BYTES: usize = 64 * 1024 * 1024;

/// No thread could be started for a recursive parser.
#[derive(Debug, thiserror::Error)]
#[error("cannot start a parser thread: {0}")]
pub struct ParserThreadError(#[from] std::io::Error);

/// Runs `f` on a scoped thread with [`PARSER_STACK_BYTES`] of stack and returns its result;
/// `Err` when no thread can be started. A panic in `f` is resumed on the caller's thread.
pub fn with_parser_stack<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, ParserThreadError> {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("bridle-parser".to_owned())
            .stack_size(PARSER_STACK_BYTES)
            .spawn_scoped(s, f)?;
        handle.join().map_err(|e| std::panic::resume_unwind(e))
    })
}

/// What the scanner needs to know of a language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syntax {
    /// Bytes that open (and close) a string literal.
    quotes: &'static [u8],
    /// Whether `<` and `>` are brackets (Cedar schema types) rather than comparisons.
    angle: bool,
    /// A keyword that opens a level without a bracket (`if`), if any.
    keyword: Option<&'static str>,
    /// A character that opens a level without a bracket (`?`), if any.
    opener: Option<u8>,
    /// Most bytes one top-level statement (up to its `;`) may have, if bounded: chains of
    /// binary operators and member accesses nest in the syntax tree without brackets.
    statement_bytes: Option<usize>,
}

/// Cedar policy text.
pub const CEDAR_POLICY: Syntax =
    Syntax { quotes: b"\"", angle: false, keyword: Some("if"), opener: None, statement_bytes: Some(MAX_POLICY_BYTES) };
/// Cedar schema text (human-readable format).
pub const CEDAR_SCHEMA: Syntax =
    Syntax { quotes: b"\"", angle: true, keyword: None, opener: None, statement_bytes: None };
/// A CEL expression (its length is bounded by the caller).
pub const CEL: Syntax =
    Syntax { quotes: b"\"'", angle: false, keyword: None, opener: Some(b'?'), statement_bytes: None };

/// Longest single Cedar policy (bytes from the end of the previous one to its `;`, comments
/// included): a chain of 10,000 `+` overflows a 1 MiB stack when the policy is dropped.
pub const MAX_POLICY_BYTES: usize = 16 * 1024;

/// The text nests deeper than the limit, or one statement is too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
    /// 1-based line where the limit was passed.
    pub line: usize,
    /// 1-based column (in bytes) where the limit was passed.
    pub column: usize,
    /// The depth limit, or (when `statement` is set) the statement size limit.
    pub limit: usize,
    /// Whether a statement's size, not the depth, passed the limit.
    pub statement: bool,
}

impl fmt::Display for TooDeep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.statement {
            return write!(
                f,
                "one policy is longer than {} bytes at line {}, column {} (split it)",
                self.limit, self.line, self.column
            );
        }
        write!(
            f,
            "nesting deeper than {} levels at line {}, column {} (brackets, `if` and `?:` chains count; split the expression)",
            self.limit, self.line, self.column
        )
    }
}

enum State {
    Code,
    Str(u8),
    Comment,
}

/// Scans `text` once; `Err` at the first point where the nesting passes `limit`.
pub fn check(text: &str, syntax: Syntax, limit: usize) -> Result<(), TooDeep> {
    let bytes = text.as_bytes();
    // Openers without a bracket counted at each open bracket level (the top level first).
    let mut soft: Vec<usize> = vec![0];
    let mut depth = 0usize;
    let mut state = State::Code;
    let (mut line, mut line_start) = (1usize, 0usize);
    let mut i = 0usize;
    let mut statement_start = 0usize;
    while let Some(&b) = bytes.get(i) {
        let at = i;
        i += 1;
        if let Some(most) = syntax.statement_bytes
            && at - statement_start >= most
        {
            return Err(TooDeep { line, column: at - line_start + 1, limit: most, statement: true });
        }
        if b == b'\n' {
            line += 1;
            line_start = i;
        }
        match state {
            State::Comment => {
                if b == b'\n' {
                    state = State::Code;
                }
                continue;
            }
            State::Str(q) => {
                if b == b'\\' {
                    // An escaped byte never closes the string (a newline in it is still counted).
                    if bytes.get(i) == Some(&b'\n') {
                        line += 1;
                        line_start = i + 1;
                    }
                    i += 1;
                } else if b == q {
                    state = State::Code;
                }
                continue;
            }
            State::Code => {}
        }
        let opens = match b {
            b'(' | b'[' | b'{' => Some(true),
            b'<' if syntax.angle => Some(true),
            b')' | b']' | b'}' => Some(false),
            b'>' if syntax.angle => Some(false),
            _ => None,
        };
        match opens {
            Some(true) => {
                depth += 1;
                soft.push(0);
            }
            Some(false) => {
                if soft.len() > 1 {
                    let gone = soft.pop().unwrap_or(0);
                    depth = depth.saturating_sub(1 + gone);
                }
                continue;
            }
            None if b == b'/' && bytes.get(i) == Some(&b'/') => {
                state = State::Comment;
                continue;
            }
            None if syntax.quotes.contains(&b) => {
                state = State::Str(b);
                continue;
            }
            None if b == b';' => {
                // A statement (a Cedar policy) ends: its `if` chain ends with it.
                if let [only] = soft.as_mut_slice() {
                    depth = depth.saturating_sub(*only);
                    *only = 0;
                    statement_start = i;
                }
                continue;
            }
            None if syntax.opener == Some(b) => bump_soft(&mut soft, &mut depth),
            None if is_ident_start(b) && (at == 0 || !bytes.get(at - 1).copied().is_some_and(is_ident)) => {
                let end = bytes.get(at..).map_or(at, |rest| at + rest.iter().take_while(|c| is_ident(**c)).count());
                if syntax.keyword.is_some_and(|k| bytes.get(at..end) == Some(k.as_bytes())) {
                    bump_soft(&mut soft, &mut depth);
                }
                i = end.max(i);
            }
            None => continue,
        }
        if depth > limit {
            return Err(TooDeep { line, column: at - line_start + 1, limit, statement: false });
        }
    }
    Ok(())
}

fn bump_soft(soft: &mut [usize], depth: &mut usize) {
    if let Some(n) = soft.last_mut() {
        *n += 1;
        *depth += 1;
    }
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn brackets_count_and_strings_and_comments_do_not() {
        let deep = format!("{}x{}", "(".repeat(5), ")".repeat(5));
        assert!(check(&deep, CEDAR_POLICY, 5).is_ok());
        assert!(check(&deep, CEDAR_POLICY, 4).is_err());
        let quoted = format!("\"{}\\\"{}\" // {}\n(x)", "(".repeat(50), "[".repeat(50), "{".repeat(50));
        assert!(check(&quoted, CEDAR_POLICY, 1).is_ok());
        assert!(check("'(((' + \"(((\"", CEL, 0).is_ok());
    }

    #[test]
    fn the_error_names_the_line_and_column() {
        let e = check("permit(principal, action, resource)\nwhen { ((((true)))) };", CEDAR_POLICY, 3).unwrap_err();
        assert_eq!((e.line, e.column), (2, 10));
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn if_chains_and_ternaries_nest_without_brackets() {
        let chain = format!("when {{ {} true }};", "if true then 1 else ".repeat(10));
        assert!(check(&chain, CEDAR_POLICY, 11).is_ok());
        assert!(check(&chain, CEDAR_POLICY, 10).is_err());
        // `if` as part of a longer name, or in separate policies, is not a chain.
        let names = "when { context.ifx && gift };\n".repeat(100);
        assert!(check(&names, CEDAR_POLICY, 1).is_ok());
        let separate = "permit(principal, action, resource) when { if a then b else c };\n".repeat(100);
        assert!(check(&separate, CEDAR_POLICY, 2).is_ok());
        assert!(check(&"a ? b : ".repeat(10), CEL, 9).is_err());
    }

    #[test]
    fn schema_types_nest_with_angle_brackets() {
        let set = format!("type T = {}Long{};", "Set<".repeat(10), ">".repeat(10));
        assert!(check(&set, CEDAR_SCHEMA, 10).is_ok());
        assert!(check(&set, CEDAR_SCHEMA, 9).is_err());
        assert!(check("when { 1 < 2 && 3 > 2 };", CEDAR_POLICY, 1).is_ok());
    }

    #[test]
    fn one_long_policy_is_refused_and_many_short_ones_are_not() {
        let short = "permit (principal, action, resource) when { context.a == 1 };\n".repeat(1000);
        assert!(check(&short, CEDAR_POLICY, MAX_DEPTH).is_ok());
        let long = format!("permit (principal, action, resource) when {{ 1{} == 2 }};", " + 1".repeat(5000));
        let e = check(&long, CEDAR_POLICY, MAX_DEPTH).unwrap_err();
        assert!(e.statement && e.to_string().contains("longer than 16384 bytes"), "{e}");
        assert!(check(&long, CEDAR_SCHEMA, MAX_DEPTH).is_ok());
    }

    #[test]
    fn unbalanced_closers_never_underflow() {
        assert!(check(")))]]]}}}>>>;;;", CEDAR_SCHEMA, 0).is_ok());
        assert!(check(&format!("))){}", "(".repeat(4)), CEDAR_POLICY, 3).is_err());
    }
}
