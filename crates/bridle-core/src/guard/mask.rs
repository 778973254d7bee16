//! Output masking (gate step 11): secrets, PII (email, phone numbers incl. Korean formats,
//! 주민등록번호 with its checksum), a per-session canary (a leak blocks the answer with
//! `output_blocked`) and configured sensitive terms. Extra secret rules load from a
//! gitleaks-format TOML file (`gitleaks.rs`); the built-in rules (`secrets.rs`) are our own.

mod gitleaks;
mod secrets;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::{Regex, RegexSet};
use serde::Serialize;

pub use gitleaks::{ExtraRules, load_gitleaks};

use super::GuardError;
use crate::code::Code;
use crate::verdict::Rejection;

/// One thing found in an output, by byte offsets into it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    /// `secret:<rule>`, `pii:email`, `pii:phone`, `pii:rrn`, `canary` or `sensitive_term`.
    pub kind: String,
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// A masked output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Masked {
    /// The text with every finding replaced by `[kind]`.
    pub masked: String,
    /// What was found, by offsets into the original text, sorted.
    pub findings: Vec<Finding>,
    /// `output_blocked` when the canary leaked: the answer must not be shown at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Rejection>,
}

/// The masker: built-in rules plus optional extra rules, canary and sensitive terms.
#[derive(Debug)]
pub struct Masker {
    /// Every built-in shape at once (the secret rules, then email, phone and 주민등록번호): one
    /// search tells which rules can match a text, and only those run. Most texts a result holds
    /// (keys, names, numbers) match none, and one search costs a third of seventeen.
    shapes: RegexSet,
    secrets: secrets::Secrets,
    extra: Option<ExtraRules>,
    email: Regex,
    phone: Regex,
    rrn: Regex,
    canary: Option<String>,
    terms: Option<AhoCorasick>,
}

impl Masker {
    /// The built-in rules only.
    pub fn new() -> Result<Self, GuardError> {
        let compile = |name: &str, p: &str| {
            Regex::new(p).map_err(|e| GuardError::Pattern { name: name.to_owned(), reason: e.to_string() })
        };
        let shapes = RegexSet::new(secrets::Secrets::filter_patterns().chain(PII))
            .map_err(|e| GuardError::Pattern { name: "shapes".to_owned(), reason: e.to_string() })?;
        Ok(Self {
            shapes,
            secrets: secrets::Secrets::new()?,
            extra: None,
            email: compile("pii:email", EMAIL)?,
            phone: compile("pii:phone", PHONE)?,
            rrn: compile("pii:rrn", RRN)?,
            canary: None,
            terms: None,
        })
    }

    /// Adds extra secret rules (a loaded gitleaks file).
    #[must_use]
    pub fn with_extra(mut self, extra: ExtraRules) -> Self {
        self.extra = Some(extra);
        self
    }

    /// Sets the session canary; an output containing it is blocked.
    #[must_use]
    pub fn with_canary(mut self, canary: &str) -> Self {
        self.canary = (!canary.is_empty()).then(|| canary.to_owned());
        self
    }

    /// Sets the sensitive terms (internal tool names, table names), matched case-insensitively.
    /// At most [`MAX_SENSITIVE_TERMS`](crate::config::MAX_SENSITIVE_TERMS) terms of at most
    /// [`MAX_SENSITIVE_TERM_CHARS`](crate::config::MAX_SENSITIVE_TERM_CHARS) characters each.
    pub fn with_terms(mut self, terms: &[String]) -> Result<Self, GuardError> {
        // INVARIANT: building the automaton is quadratic in a term's length (a 16,000-character
        // term takes seconds, a 100 KB one minutes), so terms are bounded before it is built.
        let (most, count) = (crate::config::MAX_SENSITIVE_TERM_CHARS, crate::config::MAX_SENSITIVE_TERMS);
        if terms.len() > count || terms.iter().any(|t| t.chars().count() > most) {
            return Err(GuardError::Pattern {
                name: "sensitive terms".to_owned(),
                reason: format!("at most {count} terms of at most {most} characters each"),
            });
        }
        let terms: Vec<&String> = terms.iter().filter(|t| !t.trim().is_empty()).collect();
        if !terms.is_empty() {
            let ac = AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::LeftmostLongest)
                .build(terms)
                .map_err(|e| GuardError::Pattern { name: "sensitive terms".to_owned(), reason: e.to_string() })?;
            self.terms = Some(ac);
        }
        Ok(self)
    }

    /// Only the `secret:*` findings (built-in and extra rules).
    pub fn secrets(&self, text: &str) -> Vec<Finding> {
        let shapes = self.shapes.matches(text);
        self.secrets_where(text, |i| shapes.matched(i))
    }

    fn secrets_where(&self, text: &str, may_match: impl Fn(usize) -> bool) -> Vec<Finding> {
        let mut out = self.secrets.find(text, may_match);
        if let Some(extra) = &self.extra {
            out.extend(extra.find(text));
        }
        out
    }

    /// Finds and masks everything in `text`.
    pub fn mask(&self, text: &str) -> Masked {
        let shapes = self.shapes.matches(text);
        self.mask_where(text, |i| shapes.matched(i))
    }

    /// [`Self::mask`], running the built-in shape rules `may_match` allows (by index in the set).
    fn mask_where(&self, text: &str, may_match: impl Fn(usize) -> bool) -> Masked {
        let mut found = self.secrets_where(text, &may_match);
        let push = |found: &mut Vec<Finding>, kind: &str, start: usize, end: usize| {
            found.push(Finding { kind: kind.to_owned(), start, end });
        };
        let pii = self.shapes.len() - PII.len();
        if may_match(pii) {
            for m in self.email.find_iter(text) {
                push(&mut found, "pii:email", m.start(), m.end());
            }
        }
        if may_match(pii + 1) {
            for c in self.phone.captures_iter(text) {
                if let Some(m) = c.get(1) {
                    push(&mut found, "pii:phone", m.start(), m.end());
                }
            }
        }
        if may_match(pii + 2) {
            for c in self.rrn.captures_iter(text) {
                if let Some(m) = c.get(1).filter(|m| rrn_checksum_ok(m.as_str())) {
                    push(&mut found, "pii:rrn", m.start(), m.end());
                }
            }
        }
        let mut blocked = None;
        if let Some(canary) = &self.canary {
            for (at, _) in text.match_indices(canary.as_str()) {
                push(&mut found, "canary", at, at + canary.len());
            }
            if found.iter().any(|f| f.kind == "canary") {
                blocked =
                    Some(Rejection::new(Code::OutputBlocked, "the answer contains the session canary and is withheld"));
            }
        }
        if let Some(terms) = &self.terms {
            for m in terms.find_iter(text) {
                push(&mut found, "sensitive_term", m.start(), m.end());
            }
        }
        let findings = resolve(found);
        Masked { masked: apply(text, &findings), findings, blocked }
    }
}

const EMAIL: &str = r"[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.)+[A-Za-z]{2,24}";
const PHONE: &str = r"(?:^|[^0-9A-Za-z+])((?:\+82[ -]?(?:0?1[016789]|0?[2-6][0-9]?)[ -]?[0-9]{3,4}[ -]?[0-9]{4})|(?:01[016789][ -.]?[0-9]{3,4}[ -.]?[0-9]{4})|(?:0(?:2|[3-6][1-5]|70)[ -.)]?[0-9]{3,4}[ -.]?[0-9]{4})|(?:\+1[ -.]?)?(?:\([0-9]{3}\)\s?|[0-9]{3}[-.])[0-9]{3}[-.][0-9]{4}|\+[0-9]{1,3}(?:[ -][0-9]{2,4}){2,4})(?:$|[^0-9A-Za-z])";
const RRN: &str = r"(?:^|[^0-9])([0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])-?[1-8][0-9]{6})(?:$|[^0-9])";
/// The PII patterns, last in the masker's set, in this order.
const PII: [&str; 3] = [EMAIL, PHONE, RRN];

/// Sorted, and overlapping findings merged into the earliest-starting, longest one.
fn resolve(mut found: Vec<Finding>) -> Vec<Finding> {
    found.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut out: Vec<Finding> = Vec::with_capacity(found.len());
    for f in found {
        match out.last_mut() {
            Some(last) if f.start < last.end => last.end = last.end.max(f.end),
            _ => out.push(f),
        }
    }
    out
}

fn apply(text: &str, findings: &[Finding]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in findings {
        out.push_str(text.get(at..f.start).unwrap_or_default());
        out.push('[');
        out.push_str(&f.kind);
        out.push(']');
        at = f.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    out
}

/// The 주민등록번호 check digit: weights 2..9,2..5 over the first twelve digits.
pub fn rrn_checksum_ok(rrn: &str) -> bool {
    let digits: Vec<u32> = rrn.chars().filter_map(|c| c.to_digit(10)).collect();
    if digits.len() != 13 {
        return false;
    }
    const WEIGHTS: [u32; 12] = [2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5];
    let sum: u32 = digits.iter().zip(WEIGHTS).map(|(d, w)| d * w).sum();
    digits.last().is_some_and(|last| (11 - sum % 11) % 10 == *last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masker() -> Masker {
        Masker::new().unwrap_or_else(|e| unreachable!("{e}"))
    }

    #[test]
    fn pii_is_masked_with_byte_offsets() {
        let text = "연락처: kim@example.co.kr, 010-1234-5678, 02-345-6789";
        let m = masker().mask(text);
        let kinds: Vec<_> = m.findings.iter().map(|f| f.kind.as_str()).collect();
        assert_eq!(kinds, ["pii:email", "pii:phone", "pii:phone"]);
        for f in &m.findings {
            assert!(text.get(f.start..f.end).is_some());
        }
        assert!(m.masked.contains("[pii:email]") && !m.masked.contains("kim@"));
    }

    #[test]
    fn rrn_needs_a_valid_checksum() {
        // 900101-1234568: weights give a check digit of 8 (computed by hand for this test).
        assert!(rrn_checksum_ok("900101-1234568"));
        assert!(!rrn_checksum_ok("900101-1234567"));
        let m = masker().mask("주민번호 900101-1234568 / 900101-1234567");
        assert_eq!(m.findings.iter().filter(|f| f.kind == "pii:rrn").count(), 1);
    }

    #[test]
    fn a_100kb_sensitive_term_is_refused_by_the_masker_quickly() {
        let started = std::time::Instant::now();
        let Err(err) = masker().with_terms(&["x".repeat(100 * 1024)]) else {
            unreachable!("a 100 KB term was accepted")
        };
        assert!(err.to_string().contains("at most 256 characters"), "{err}");
        // Refused before any pattern is built: far under this ceiling even on a busy machine.
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        assert!(masker().with_terms(&["y".repeat(256)]).is_ok());
    }

    static SHARED: std::sync::LazyLock<Masker> = std::sync::LazyLock::new(masker);

    /// Texts where every rule finds something, and look-alikes where it nearly does.
    const SHAPED: &[&str] = &[
        "key AKIAABCDEFGHIJKLMNOP here and ASIA1234567890ABCDEF",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789 github_pat_11ABCDEFG0123456789_abcdefghij",
        "glpat-abcdefghij0123456789 xoxb-043241237136-DPPwdT5xF8SSEKLdAuWYW",
        "sk_live_abcdef012345 AIzaSyA-abcdefghijklmnopqrstuvwxyz012 sk-proj-abcdefghij0123456789xyz",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY----- and -----BEGIN PRIVATE KEY-----",
        "postgres://app:hunter2pass@db.internal:5432/app AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
        "acme_live_Zx81kQp0Lm3vTr7aYb2cWd9e Authorization: Bearer abcDEF0123456789ghiJKL",
        "api_token = Zx81kQp0Lm3vTr7a; blob Qm9vT3J4dWx2ZXJ5cmFuZG9tc3RyaW5nMTIz",
        "연락처: kim@example.co.kr, 010-1234-5678, 02-345-6789, +82 10 1234 5678, (415) 555-0100",
        "주민번호 900101-1234568 / 900101-1234567 / 9001011234568",
        "see docs.example.com/getting-started and the release_notes file",
        "deployment checkout-7f9c updated to version 2024.11.30",
        "replicas",
        "",
        "sk-short AKIA123 ghp_short eyJ.eyJ. -----BEGIN PUBLIC KEY----- a@b 010-12",
    ];

    #[test]
    fn the_shape_set_only_skips_rules_that_find_nothing() {
        let mut found = 0;
        for text in SHAPED {
            let filtered = SHARED.mask(text);
            let every_rule = SHARED.mask_where(text, |_| true);
            assert_eq!(filtered, every_rule, "{text}");
            found += filtered.findings.len();
        }
        // The texts exercise the rules: most lines have several findings.
        assert!(found >= 25, "{found}");
    }

    proptest::proptest! {
        /// Pieces of the shaped texts cut and joined at random, with random glue between them:
        /// texts near every rule's edges.
        #[test]
        fn the_shape_set_agrees_with_every_rule_on_spliced_texts(
            pieces in proptest::collection::vec((0..SHAPED.len(), 0usize..200, 0usize..120, "[ -~]{0,6}"), 1..6)
        ) {
            let mut text = String::new();
            for (i, from, len, glue) in pieces {
                let source = SHAPED.get(i).copied().unwrap_or_default();
                let from = (from.min(source.len())..=source.len()).find(|&k| source.is_char_boundary(k)).unwrap_or(0);
                let to = ((from + len).min(source.len())..=source.len()).find(|&k| source.is_char_boundary(k)).unwrap_or(from);
                text.push_str(source.get(from..to).unwrap_or_default());
                text.push_str(&glue);
            }
            proptest::prop_assert_eq!(SHARED.mask(&text), SHARED.mask_where(&text, |_| true), "{}", text);
        }
    }

    #[test]
    fn canary_blocks_and_terms_mask() {
        let terms = vec!["orders_db".to_owned()];
        let m = masker().with_canary("CNRY-7Q2X").with_terms(&terms).unwrap_or_else(|e| unreachable!("{e}"));
        let out = m.mask("see ORDERS_DB and CNRY-7Q2X");
        assert_eq!(out.blocked.map(|r| r.code), Some(Code::OutputBlocked));
        assert!(out.findings.iter().any(|f| f.kind == "sensitive_term"));
        assert!(m.mask("nothing here").blocked.is_none());
    }
}
