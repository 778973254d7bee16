//! Built-in secret rules (our own): well-known credential prefixes and shapes, and
//! high-entropy tokens, stricter when no key word stands near them.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use regex::Regex;

use super::Finding;
use crate::guard::GuardError;

/// A private key block: its head, then up to 8 KiB of body to its end line when there is one.
const PRIVATE_KEY: &str = r"-----BEGIN[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----(?s:.{0,8192}?-----END[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----)?";
/// What every private key match starts with: its form in the masker's set (the 8 KiB body would
/// make the set's automaton thousands of states larger and tells the set nothing more).
const PRIVATE_KEY_HEAD: &str = r"-----BEGIN[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----";
/// A run of token characters, the candidates for the entropy rules.
const TOKEN: &str = r"[A-Za-z0-9_\-+/.~:]{12,}={0,3}";

const RULES: &[(&str, &str)] = &[
    ("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    ("gitlab_token", r"\bgl(?:pat|ptt|dt|rt|cbt|soat|ffct|imt|agent)-[A-Za-z0-9_-]{16,}"),
    ("slack_token", r"\bxox[abposre]-[A-Za-z0-9-]{8,}"),
    ("stripe_key", r"\b(?:sk|rk|pk)_(?:live|test|prod)_[A-Za-z0-9]{10,}"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{30,40}"),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}"),
    ("private_key", PRIVATE_KEY),
    ("connection_string", r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@]{1,64}:[^\s@/]{1,128}@[^\s/]{2,}"),
    ("age_secret_key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    ("prefixed_token", r"\b[a-z][a-z0-9]{1,14}_(?:[a-z0-9]{1,8}_)?[A-Za-z0-9]{20,}\b"),
    ("bearer_token", r"(?i)\bbearer\s+[A-Za-z0-9_\-.=+/]{16,}"),
];

/// Key words that make a nearby random-looking token a secret.
const KEYWORDS: &[&str] = &[
    "key",
    "token",
    "secret",
    "passw",
    "pwd",
    "auth",
    "credential",
    "bearer",
    "access",
    "private",
    "client",
    "api",
    "session",
    "signing",
    "webhook",
    "license",
    "dsn",
    "conn",
    "키",
    "토큰",
    "비밀",
    "암호",
    "인증",
];

/// Built-in rules, compiled.
#[derive(Debug)]
pub(super) struct Secrets {
    rules: Vec<(&'static str, Regex)>,
    token: Regex,
    keywords: AhoCorasick,
}

impl Secrets {
    pub fn new() -> Result<Self, GuardError> {
        let err = |name: &str, e: String| GuardError::Pattern { name: name.to_owned(), reason: e };
        let rules = RULES
            .iter()
            .map(|(name, p)| Regex::new(p).map(|r| (*name, r)).map_err(|e| err(name, e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            rules,
            token: Regex::new(TOKEN).map_err(|e| err("token", e.to_string()))?,
            keywords: AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .build(KEYWORDS)
                .map_err(|e| err("keywords", e.to_string()))?,
        })
    }

    /// The patterns a text must match somewhere for [`Self::find`] to find anything, in the
    /// order `find`'s `may_match` numbers them: each rule (in a form every match of it matches),
    /// then the token candidates.
    pub fn filter_patterns() -> impl Iterator<Item = &'static str> {
        RULES.iter().map(|(_, p)| if *p == PRIVATE_KEY { PRIVATE_KEY_HEAD } else { p }).chain([TOKEN])
    }

    /// Every secret in `text`, running only the patterns `may_match` (by their index in
    /// [`Self::filter_patterns`]) says can match it: a pattern it rules out finds nothing.
    pub fn find(&self, text: &str, may_match: impl Fn(usize) -> bool) -> Vec<Finding> {
        let mut out = Vec::new();
        for (i, (name, re)) in self.rules.iter().enumerate() {
            if !may_match(i) {
                continue;
            }
            for m in re.find_iter(text) {
                if *name == "prefixed_token" && m.as_str().rsplit('_').next().is_none_or(|tail| entropy(tail) < 3.0) {
                    continue;
                }
                out.push(Finding { kind: format!("secret:{name}"), start: m.start(), end: m.end() });
            }
        }
        if !may_match(self.rules.len()) {
            return out;
        }
        for m in self.token.find_iter(text) {
            let token = m.as_str();
            if token.contains("://")
                || token.starts_with('/')
                || out.iter().any(|f| f.start <= m.start() && m.end() <= f.end)
            {
                continue;
            }
            let mut from = m.start().saturating_sub(48);
            while !text.is_char_boundary(from) {
                from += 1;
            }
            let near = text.get(from..m.end()).is_some_and(|w| self.keywords.find(w).is_some());
            if high_entropy(token, near) {
                let kind = if near { "secret:keyed_high_entropy" } else { "secret:high_entropy" };
                out.push(Finding { kind: kind.to_owned(), start: m.start(), end: m.end() });
            }
        }
        out
    }
}

/// Shannon entropy in bits per character.
pub(super) fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    let mut n = 0u32;
    for b in s.bytes() {
        if let Some(c) = counts.get_mut(usize::from(b)) {
            *c += 1;
        }
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    let total = f64::from(n);
    counts.iter().filter(|c| **c > 0).map(|c| f64::from(*c) / total).map(|p| -p * p.log2()).sum()
}

/// A random-looking token: several character classes and high entropy; a token with a key word
/// nearby needs less.
fn high_entropy(token: &str, keyed: bool) -> bool {
    let t = token.trim_end_matches('=').trim_matches(|c| c == '.' || c == ':' || c == '-');
    let lower = t.bytes().any(|b| b.is_ascii_lowercase());
    let upper = t.bytes().any(|b| b.is_ascii_uppercase());
    let digit = t.bytes().filter(u8::is_ascii_digit).count();
    let classes = usize::from(lower) + usize::from(upper) + usize::from(digit > 0);
    // Words, numbers, dates, file and host names are built from plain parts; a secret has at
    // least one part that mixes letters with digits or cases at random.
    let parts: Vec<&str> = t.split(['.', '_', '-', '/', ':', '+', '~']).filter(|p| !p.is_empty()).collect();
    let plain = |p: &str| {
        let b = p.as_bytes();
        b.iter().all(u8::is_ascii_lowercase)
            || b.iter().all(u8::is_ascii_uppercase)
            || b.iter().all(u8::is_ascii_digit)
            || (b.first().is_some_and(u8::is_ascii_uppercase)
                && b.iter().skip(1).all(|c| !c.is_ascii_digit())
                && b.len() < 30)
    };
    let letters = |p: &str| p.bytes().filter(u8::is_ascii_alphabetic).count();
    let mixed: Vec<&&str> = parts.iter().filter(|p| p.len() >= 8 && letters(p) >= 2 && !plain(p)).collect();
    if mixed.is_empty() || digit * 10 > t.len() * 9 {
        return false;
    }
    // Bare lowercase hex (hashes, commit ids) is not a secret; hex behind a prefix, or in mixed
    // case, is.
    let hex_only = mixed.iter().all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
        && !(parts.first().is_some_and(|f| f.len() < 8) && mixed.iter().any(|p| p.len() >= 24))
        && !mixed
            .iter()
            .any(|p| p.bytes().any(|b| b.is_ascii_uppercase()) && p.bytes().any(|b| b.is_ascii_lowercase()));
    let e = entropy(t);
    if keyed {
        t.len() >= 12 && classes >= 2 && digit >= 1 && e >= 3.0
    } else {
        !hex_only && t.len() >= 20 && classes >= 2 && digit >= 2 && e >= 3.6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_known_shapes_and_keyed_tokens() {
        let s = Secrets::new().unwrap_or_else(|e| unreachable!("{e}"));
        let kinds = |t: &str| s.find(t, |_| true).into_iter().map(|f| f.kind).collect::<Vec<_>>();
        assert!(kinds("key AKIAABCDEFGHIJKLMNOP here").contains(&"secret:aws_access_key".to_owned()));
        assert!(
            kinds("postgres://app:hunter2pass@db.internal:5432/app").contains(&"secret:connection_string".to_owned())
        );
        assert!(kinds("api_token = Zx81kQp0Lm3vTr7a").iter().any(|k| k.starts_with("secret:")));
        assert!(kinds("see docs.example.com/getting-started and the release_notes file").is_empty());
        assert!(kinds("deployment checkout-7f9c updated to version 2024.11.30").is_empty());
    }
}
