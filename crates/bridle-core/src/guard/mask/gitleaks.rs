//! Extra secret rules from a gitleaks-format TOML file (`[[rules]]` with `id`, `regex`,
//! `keywords`, `secretGroup`, `entropy`). Rules whose pattern this regex engine cannot compile are
//! skipped and listed, never silently.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use regex::Regex;
use serde::Deserialize;

use super::Finding;
use super::secrets::entropy;
use crate::guard::GuardError;

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    rules: Vec<RawRule>,
}

#[derive(Debug, Deserialize)]
struct RawRule {
    id: String,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default, rename = "secretGroup")]
    secret_group: Option<usize>,
    #[serde(default)]
    entropy: Option<f64>,
}

struct Rule {
    id: String,
    regex: Regex,
    group: Option<usize>,
    entropy: Option<f64>,
    keyed: bool,
}

/// Loaded extra rules.
pub struct ExtraRules {
    rules: Vec<Rule>,
    keywords: AhoCorasick,
    /// `(keyword index → rule index)`.
    owners: Vec<usize>,
    /// Rules skipped, with why.
    pub skipped: Vec<(String, String)>,
}

impl std::fmt::Debug for ExtraRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtraRules").field("rules", &self.rules.len()).field("skipped", &self.skipped.len()).finish()
    }
}

impl ExtraRules {
    /// Number of usable rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rule is usable.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `secret:<id>` findings; a rule with key words runs only when one of them occurs.
    pub fn find(&self, text: &str) -> Vec<Finding> {
        let mut active = vec![false; self.rules.len()];
        for m in self.keywords.find_overlapping_iter(text) {
            if let Some(slot) = self.owners.get(m.pattern().as_usize()).and_then(|r| active.get_mut(*r)) {
                *slot = true;
            }
        }
        let mut out = Vec::new();
        for (rule, on) in self.rules.iter().zip(active) {
            if rule.keyed && !on {
                continue;
            }
            for c in rule.regex.captures_iter(text) {
                let m = rule.group.and_then(|g| c.get(g)).or_else(|| c.get(0));
                let Some(m) = m else { continue };
                if rule.entropy.is_some_and(|min| entropy(m.as_str()) < min) {
                    continue;
                }
                out.push(Finding { kind: format!("secret:{}", rule.id), start: m.start(), end: m.end() });
            }
        }
        out
    }
}

/// Parses a gitleaks-format TOML text.
pub fn load_gitleaks(toml_text: &str) -> Result<ExtraRules, GuardError> {
    let file: File = toml::from_str(toml_text).map_err(|e| GuardError::RuleFile(e.message().to_owned()))?;
    let mut rules = Vec::new();
    let mut skipped = Vec::new();
    let mut keywords = Vec::new();
    let mut owners = Vec::new();
    for raw in file.rules {
        let Some(pattern) = raw.regex else {
            skipped.push((raw.id, "no `regex` (path-only rule)".to_owned()));
            continue;
        };
        match regex::RegexBuilder::new(&pattern).size_limit(1 << 23).build() {
            Ok(regex) => {
                let index = rules.len();
                for k in &raw.keywords {
                    keywords.push(k.to_lowercase());
                    owners.push(index);
                }
                rules.push(Rule {
                    id: raw.id,
                    regex,
                    group: raw.secret_group.filter(|g| *g > 0),
                    entropy: raw.entropy,
                    keyed: !raw.keywords.is_empty(),
                });
            }
            Err(e) => skipped.push((raw.id, e.to_string())),
        }
    }
    let keywords = AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .build(&keywords)
        .map_err(|e| GuardError::RuleFile(e.to_string()))?;
    Ok(ExtraRules { rules, keywords, owners, skipped })
}
