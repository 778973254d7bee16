//! `calculate`: a recursive-descent evaluator for arithmetic (no `eval`, no names beyond the
//! listed functions and constants).
//!
//! ```text
//! expr    = term (("+" | "-") term)*
//! term    = unary (("*" | "/" | "%") unary)*
//! unary   = ("-" | "+") unary | power
//! power   = primary ("^" unary)?            right-associative, tighter than unary minus
//! primary = number | constant | function "(" expr ("," expr)* ")" | "(" expr ")"
//! number  = digits ["." digits] [("e" | "E") ["+" | "-"] digits]   (or "." digits …)
//! ```
//!
//! So `-2^2` is −4 and `2^3^2` is 512. `%` is the remainder with the sign of the dividend.
//! Functions: sqrt, abs, floor, ceil, round (half away from zero), min, max (one or more
//! arguments), sin, cos, tan (radians); constants: pi, e. Positions in messages are 0-based
//! byte offsets into the expression. Recursion is bounded by [`MAX_DEPTH`] and the length by
//! [`MAX_EXPRESSION_CHARS`].

use bridle_core::Code;
use bridle_core::verdict::{Rejection, clip};
use serde_json::json;

/// Longest expression, in characters.
pub const MAX_EXPRESSION_CHARS: usize = 200;
/// Deepest nesting of parentheses, unary signs and powers.
const MAX_DEPTH: usize = 64;

/// Evaluates an expression.
pub fn evaluate(expression: &str) -> Result<f64, Rejection> {
    let chars = expression.chars().count();
    if chars > MAX_EXPRESSION_CHARS {
        return Err(Rejection::new(
            Code::CalcSyntaxError,
            format!("the expression has `{chars}` characters; at most {MAX_EXPRESSION_CHARS} are allowed"),
        )
        .with_detail(json!({"position": 0})));
    }
    let mut p = Parser { src: expression, pos: 0, depth: 0 };
    p.skip_ws();
    if p.peek().is_none() {
        return Err(syntax(0, "empty expression".to_owned()));
    }
    let value = p.expr()?;
    p.skip_ws();
    if let Some(c) = p.peek() {
        return Err(syntax(p.pos, format!("unexpected `{c}` at position {}", p.pos)));
    }
    Ok(crate::tidy(value))
}

fn syntax(at: usize, message: String) -> Rejection {
    Rejection::new(Code::CalcSyntaxError, message).with_detail(json!({"position": at}))
}

fn failure(code: Code, at: usize, what: &str) -> Rejection {
    Rejection::new(code, format!("{what} at position {at}")).with_detail(json!({"position": at}))
}

/// A finite result, or the error its kind of failure gets.
fn finite(v: f64, at: usize) -> Result<f64, Rejection> {
    if v.is_nan() {
        Err(failure(Code::CalcDomainError, at, "the result is not a real number"))
    } else if v.is_infinite() {
        Err(failure(Code::CalcOverflow, at, "the result is too large"))
    } else {
        Ok(v)
    }
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.src.get(self.pos..).and_then(|s| s.chars().next())
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn enter(&mut self) -> Result<(), Rejection> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(syntax(self.pos, format!("the expression is nested too deeply at position {}", self.pos)));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<f64, Rejection> {
        self.enter()?;
        let mut v = self.term()?;
        loop {
            self.skip_ws();
            let at = self.pos;
            match self.peek() {
                Some('+') => {
                    self.bump();
                    v = finite(v + self.term()?, at)?;
                }
                Some('-') => {
                    self.bump();
                    v = finite(v - self.term()?, at)?;
                }
                _ => break,
            }
        }
        self.depth -= 1;
        Ok(v)
    }

    fn term(&mut self) -> Result<f64, Rejection> {
        let mut v = self.unary()?;
        loop {
            self.skip_ws();
            let at = self.pos;
            let op = match self.peek() {
                Some(c @ ('*' | '/' | '%')) => c,
                _ => break,
            };
            self.bump();
            let r = self.unary()?;
            v = match op {
                '*' => finite(v * r, at)?,
                _ if r == 0.0 => return Err(failure(Code::CalcDivisionByZero, at, "division by zero")),
                '/' => finite(v / r, at)?,
                _ => finite(v % r, at)?,
            };
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<f64, Rejection> {
        self.skip_ws();
        match self.peek() {
            Some(c @ ('-' | '+')) => {
                self.bump();
                self.enter()?;
                let v = self.unary()?;
                self.depth -= 1;
                Ok(if c == '-' { -v } else { v })
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<f64, Rejection> {
        let base = self.primary()?;
        self.skip_ws();
        if self.peek() != Some('^') {
            return Ok(base);
        }
        let at = self.pos;
        self.bump();
        self.enter()?;
        let exponent = self.unary()?;
        self.depth -= 1;
        if base == 0.0 && exponent < 0.0 {
            return Err(failure(Code::CalcDivisionByZero, at, "division by zero (zero to a negative power)"));
        }
        finite(base.powf(exponent), at)
    }

    fn primary(&mut self) -> Result<f64, Rejection> {
        self.skip_ws();
        let at = self.pos;
        match self.peek() {
            None => Err(syntax(at, format!("unexpected end of expression at position {at}"))),
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => self.name(),
            Some('(') => {
                self.bump();
                let v = self.expr()?;
                self.expect_close(at)?;
                Ok(v)
            }
            Some(c) => Err(syntax(at, format!("unexpected `{c}` at position {at}"))),
        }
    }

    fn expect_close(&mut self, open: usize) -> Result<(), Rejection> {
        self.skip_ws();
        match self.peek() {
            Some(')') => {
                self.bump();
                Ok(())
            }
            Some(c) => Err(syntax(self.pos, format!("expected `)` but found `{c}` at position {}", self.pos))),
            None => Err(syntax(self.pos, format!("the `(` at position {open} is never closed"))),
        }
    }

    fn digits(&mut self) -> usize {
        let from = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
        self.pos - from
    }

    fn number(&mut self) -> Result<f64, Rejection> {
        let start = self.pos;
        let mut count = self.digits();
        if self.peek() == Some('.') {
            self.bump();
            count += self.digits();
        }
        if count == 0 {
            return Err(syntax(start, format!("unexpected `.` at position {start}")));
        }
        // An exponent only if digits follow; otherwise `e` is left for the next token.
        let rest = self.src.get(self.pos..).unwrap_or_default();
        let mut it = rest.chars();
        if matches!(it.next(), Some('e' | 'E')) {
            let sign = usize::from(matches!(rest.chars().nth(1), Some('+' | '-')));
            if rest.chars().nth(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1 + sign;
                self.digits();
            }
        }
        let text = self.src.get(start..self.pos).unwrap_or_default();
        let v: f64 = text.parse().map_err(|_| syntax(start, format!("bad number `{text}` at position {start}")))?;
        if v.is_infinite() {
            return Err(Rejection::new(
                Code::CalcOverflow,
                format!("the number `{}` is too large at position {start}", clip(text, 40)),
            )
            .with_detail(json!({"position": start})));
        }
        Ok(v)
    }

    fn name(&mut self) -> Result<f64, Rejection> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            self.bump();
        }
        let name = self.src.get(start..self.pos).unwrap_or_default();
        self.skip_ws();
        let called = self.peek() == Some('(');
        match (name, called) {
            ("pi", false) => Ok(std::f64::consts::PI),
            ("e", false) => Ok(std::f64::consts::E),
            ("pi" | "e", true) => {
                Err(syntax(start, format!("`{name}` is a constant, not a function, at position {start}")))
            }
            _ if !FUNCTIONS.contains(&name) => {
                Err(syntax(start, format!("unknown name `{}` at position {start}", clip(name, 40))))
            }
            (_, false) => {
                Err(syntax(start, format!("`{name}` needs its arguments in parentheses at position {start}")))
            }
            (_, true) => {
                let open = self.pos;
                self.bump();
                let mut args = vec![self.expr()?];
                loop {
                    self.skip_ws();
                    if self.peek() != Some(',') {
                        break;
                    }
                    self.bump();
                    args.push(self.expr()?);
                }
                self.expect_close(open)?;
                apply(name, &args, start)
            }
        }
    }
}

const FUNCTIONS: [&str; 10] = ["sqrt", "abs", "floor", "ceil", "round", "min", "max", "sin", "cos", "tan"];

fn apply(name: &str, args: &[f64], at: usize) -> Result<f64, Rejection> {
    if let ("min" | "max", [first, rest @ ..]) = (name, args) {
        let pick = |a: f64, b: f64| if name == "min" { a.min(b) } else { a.max(b) };
        return Ok(rest.iter().fold(*first, |a, b| pick(a, *b)));
    }
    let [x] = args else {
        return Err(syntax(at, format!("`{name}` takes 1 argument, not {}, at position {at}", args.len())));
    };
    let x = *x;
    let v = match name {
        "sqrt" if x < 0.0 => {
            return Err(failure(Code::CalcDomainError, at, "`sqrt` of a negative number"));
        }
        "sqrt" => x.sqrt(),
        "abs" => x.abs(),
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "round" => x.round(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        _ => x.tan(),
    };
    finite(v, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(e: &str) -> f64 {
        evaluate(e).unwrap_or(f64::NAN)
    }

    fn code(e: &str) -> Option<Code> {
        evaluate(e).err().map(|r| r.code)
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(ok("-2^2"), -4.0);
        assert_eq!(ok("2^3^2"), 512.0);
        assert_eq!(ok("2^-1"), 0.5);
        assert_eq!(ok("1 + 2 * 3"), 7.0);
        assert_eq!(ok("(1 + 2) * 3"), 9.0);
        assert_eq!(ok("10 - 4 - 3"), 3.0);
        assert_eq!(ok("-7 % 3"), -1.0);
        assert_eq!(ok("2e3 + .5"), 2000.5);
        assert_eq!(ok("2*e"), 2.0 * std::f64::consts::E);
    }

    #[test]
    fn errors_name_their_position() {
        let r = evaluate("1 + __import__('os')").err();
        assert_eq!(r.as_ref().map(|r| r.message.as_str()), Some("unknown name `__import__` at position 4"));
        assert_eq!(code("1/0"), Some(Code::CalcDivisionByZero));
        assert_eq!(code("5 % 0"), Some(Code::CalcDivisionByZero));
        assert_eq!(code("sqrt(-1)"), Some(Code::CalcDomainError));
        assert_eq!(code("1e400"), Some(Code::CalcOverflow));
        assert_eq!(code("10^400"), Some(Code::CalcOverflow));
        assert_eq!(code("2e"), Some(Code::CalcSyntaxError));
        assert_eq!(code("(1"), Some(Code::CalcSyntaxError));
        assert_eq!(code(""), Some(Code::CalcSyntaxError));
        assert_eq!(code(&"(".repeat(150)), Some(Code::CalcSyntaxError));
        assert_eq!(code(&"-".repeat(199)), Some(Code::CalcSyntaxError));
    }
}
