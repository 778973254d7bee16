//! Gate step 11, output: what an adapter's result looks like before it leaves the gate (to the
//! caller, the idempotency store and the audit record), and the run taint an untrusted result
//! leaves behind.
//!
//! Every string leaf and object key is masked in place (secrets, PII, the `[guard]
//! sensitive_terms`); a result containing the run's canary is withheld with `output_blocked`; the
//! result of a tool marked `untrusted_output` is also returned spotlighted, beside the JSON, after
//! the guard read it on the document channel: an instruction addressed to the model inside it is
//! a hit, recorded on the call ([`OutputReport::injection`]) and as the run's taint. The audit
//! record learns finding kinds, counts and families, never the text. This step decides nothing
//! else: masking and detection never reject a call (the model gets the result delimited and the
//! run stays tainted).

use std::collections::BTreeMap;

use bridle_core::config::GuardSettings;
use bridle_core::contract::ToolContract;
use bridle_core::guard::mask::Masker;
use bridle_core::guard::spotlight::{closing, run_seed, spotlight};
use bridle_core::ports::TaintMark;
use bridle_core::{Code, Principal, Rejection, RunContext};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::identity::Who;
use super::trace::Trace;
use super::{Gate, Stop};
use crate::guard::Guard;

/// What step 11 did to an executed call's result (see [`super::CallOutcome::output`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputReport {
    /// Finding kinds masked in the result (`secret:<rule>`, `pii:email`, `pii:phone`, `pii:rrn`,
    /// `sensitive_term`) with how many of each; never the text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub masked: BTreeMap<String, u64>,
    /// The masked result wrapped for a model, present when the tool's output is untrusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spotlight: Option<Spotlight>,
    /// The guard found an instruction addressed to the model in the untrusted result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection: Option<InjectionHit>,
}

/// What the guard found in an untrusted result: its score and families, never the text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InjectionHit {
    /// The detector's score (`0.0..=1.0`; a hit is at or above the block score).
    pub score: f64,
    /// The families found (`instruction_override`, `prompt_extraction` …).
    pub categories: Vec<String>,
}

/// A result spotlighted for a model: text between `<<UNTRUSTED D>>` and `<</UNTRUSTED D>>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spotlight {
    /// The wrapped text: a string result as it is, any other result as compact JSON (masked).
    pub text: String,
    /// The delimiter `D`, the same for every result of the run (`spotlight::run_seed`).
    pub delimiter: String,
    /// The result itself contains the delimiter or the closing marker: an attempt to break out.
    pub closing_delimiter_in_result: bool,
}

impl OutputReport {
    /// The audit reason of an executed call: what was masked (kinds and counts) and spotlighted.
    pub(crate) fn audit_note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.masked.is_empty() {
            let kinds: Vec<String> = self.masked.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
            parts.push(format!("output masked: {}", kinds.join(", ")));
        }
        if let Some(s) = &self.spotlight {
            parts.push("untrusted output returned spotlighted".to_owned());
            if s.closing_delimiter_in_result {
                parts.push("the result contains the spotlight delimiter (flagged)".to_owned());
            }
        }
        if let Some(hit) = &self.injection {
            parts.push(format!(
                "the guard found an instruction to the model in it (score {:.2}: {}); the run is tainted",
                hit.score,
                hit.categories.join(", ")
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// The masker and the guard of one gate, built from the configuration's `[guard]` section.
pub(crate) struct OutputGuard {
    /// `Err` when it could not be built: then every result is withheld (fail closed).
    masker: Result<Masker, String>,
    /// `Err` when the detector could not be built: then every untrusted result is withheld.
    guard: Result<Guard, String>,
}

/// A result after step 11.
pub(crate) enum Guarded {
    /// Masked (and, for untrusted output, spotlighted): the result may leave the gate.
    Pass(Value, Option<OutputReport>),
    /// Withheld (`output_blocked`).
    Withheld(Rejection),
}

impl OutputGuard {
    pub(crate) fn new(settings: &GuardSettings) -> Self {
        let masker = Masker::new().and_then(|m| m.with_terms(&settings.sensitive_terms)).map_err(|e| e.to_string());
        if let Err(e) = &masker {
            tracing::error!(error = %e, "the output guard could not be built; every tool result will be withheld");
        }
        let guard = Guard::from_settings(settings).map_err(|e| e.to_string());
        if let Err(e) = &guard {
            tracing::error!(error = %e, "the guard could not be built; every untrusted tool result will be withheld");
        }
        Self { masker, guard }
    }

    /// Masks `result`, withholds it if it leaks `canary`, and when `untrusted` reads it for
    /// instructions to the model and spotlights it with the run's delimiter.
    pub(crate) fn guard(
        &self,
        tool: &str,
        untrusted: bool,
        (tenant, run_id): (&str, &str),
        canary: Option<&str>,
        mut result: Value,
    ) -> Guarded {
        let masker = match &self.masker {
            Ok(m) => m,
            Err(e) => {
                return Guarded::Withheld(Rejection::new(
                    Code::OutputBlocked,
                    format!("the result of `{tool}` is withheld: the output guard is unavailable ({e})"),
                ));
            }
        };
        let canary = canary.filter(|c| !c.is_empty());
        let mut masked = BTreeMap::new();
        if mask_value(masker, &mut result, canary, &mut masked) {
            return Guarded::Withheld(Rejection::new(
                Code::OutputBlocked,
                format!("the result of `{tool}` contains the session canary and is withheld"),
            ));
        }
        if !untrusted {
            let report = (!masked.is_empty()).then(|| OutputReport { masked, ..OutputReport::default() });
            return Guarded::Pass(result, report);
        }
        let guard = match &self.guard {
            Ok(g) => g,
            Err(e) => {
                return Guarded::Withheld(Rejection::new(
                    Code::OutputBlocked,
                    format!("the untrusted result of `{tool}` is withheld: the guard is unavailable ({e})"),
                ));
            }
        };
        let text = match &result {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        // Read whole whatever its size: the channel's limit refuses inputs, and a result has
        // already been produced; a hit is recorded, never a reason to drop the result.
        let found = guard.document(&text);
        let injection = found.blocked().then(|| InjectionHit {
            score: found.score,
            categories: found.categories.iter().map(|c| c.as_str().to_owned()).collect(),
        });
        let lit = spotlight(&text, run_seed(tenant, run_id), None);
        let spotlight = Some(Spotlight {
            text: lit.text,
            delimiter: lit.delimiter,
            closing_delimiter_in_result: lit.closing_delimiter_in_document,
        });
        Guarded::Pass(result, Some(OutputReport { masked, spotlight, injection }))
    }
}

/// Masks every string leaf and object key of `root` in place, counting finding kinds into
/// `counts`; true if any text contains `canary` (checked before masking). Iterative, so a deeply
/// nested result cannot exhaust the stack.
fn mask_value(masker: &Masker, root: &mut Value, canary: Option<&str>, counts: &mut BTreeMap<String, u64>) -> bool {
    let mut leaked = false;
    let mut stack = vec![root];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                leaked |= canary.is_some_and(|c| s.contains(c));
                if let Some(m) = mask_text(masker, s, counts) {
                    *s = m;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => {
                leaked |= canary.is_some_and(|c| map.keys().any(|k| k.contains(c)));
                let mut findings = BTreeMap::new();
                let renamed: Vec<(String, String)> =
                    map.keys().filter_map(|k| mask_text(masker, k, &mut findings).map(|m| (k.clone(), m))).collect();
                if !renamed.is_empty() {
                    for (kind, n) in findings {
                        *counts.entry(kind).or_default() += n;
                    }
                    rename_keys(map, &renamed);
                }
                stack.extend(map.values_mut());
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    leaked
}

/// The masked text, or `None` when nothing was found.
fn mask_text(masker: &Masker, text: &str, counts: &mut BTreeMap<String, u64>) -> Option<String> {
    let m = masker.mask(text);
    if m.findings.is_empty() {
        return None;
    }
    for f in &m.findings {
        *counts.entry(f.kind.clone()).or_default() += 1;
    }
    Some(m.masked)
}

/// Replaces keys by their masked forms, keeping order; two keys that mask alike stay apart
/// (`[pii:email]`, `[pii:email] #2`), so no value is lost.
fn rename_keys(map: &mut Map<String, Value>, renamed: &[(String, String)]) {
    let old = std::mem::take(map);
    for (key, value) in old {
        let base = renamed.iter().find(|(from, _)| *from == key).map_or(key, |(_, to)| to.clone());
        let mut name = base.clone();
        let mut n = 1_u32;
        while map.contains_key(&name) {
            n = n.saturating_add(1);
            name = format!("{base} #{n}");
        }
        map.insert(name, value);
    }
}

/// Step 11 for a call the gate executed: guards the adapter's result and records what it did
/// on the trace. A withheld result becomes the call's rejection (the call did execute).
pub(super) fn finish(
    gate: &Gate,
    tool: &ToolContract,
    principal: &Principal,
    run: &RunContext,
    result: Value,
    t: &mut Trace,
) -> Result<Value, Rejection> {
    let scope = (principal.tenant.as_str(), run.run_id.as_str());
    match gate.output.guard(&tool.name, tool.untrusted_output, scope, run.canary.as_deref(), result) {
        Guarded::Pass(result, report) => {
            if let Some(s) = report.as_ref().and_then(|r| r.spotlight.as_ref())
                && s.closing_delimiter_in_result
            {
                tracing::warn!(call_id = %t.call_id, tool = %tool.name, closing = %closing(&s.delimiter), "untrusted result contains the spotlight delimiter");
            }
            t.output = report;
            Ok(result)
        }
        Guarded::Withheld(r) => Err(r),
    }
}

/// Records that the run, and with a `[taint] window` the call's actor (its credential's agent, or
/// its subject), took in `tool`'s untrusted output (a store failure stops the call: untrusted
/// content never leaves the gate without its taint recorded).
pub(super) async fn taint(
    gate: &Gate,
    tool: &ToolContract,
    principal: &Principal,
    run: &RunContext,
    who: &Who,
    t: &Trace,
) -> Result<(), Stop> {
    if !tool.untrusted_output {
        return Ok(());
    }
    let reason = format!("output of `{}` in call `{}` of run `{}`", tool.name, t.call_id, run.run_id);
    mark(gate, principal, run, who, &reason, t).await?;
    tracing::info!(call_id = %t.call_id, tool = %tool.name, run_id = %run.run_id, "run tainted by untrusted output");
    Ok(())
}

/// Records a hit of step 11 (an instruction to the model in `tool`'s untrusted result) as a taint
/// of the run and of the call's actor, beside the taint the output itself left (a store failure
/// stops the call, as for that taint).
pub(super) async fn taint_hit(
    gate: &Gate,
    tool: &ToolContract,
    principal: &Principal,
    run: &RunContext,
    who: &Who,
    t: &Trace,
) -> Result<(), Stop> {
    let Some(hit) = t.output.as_ref().and_then(|o| o.injection.as_ref()) else { return Ok(()) };
    let families = hit.categories.join(", ");
    let reason = format!(
        "instruction to the model ({families}) in the output of `{}` in call `{}` of run `{}`",
        tool.name, t.call_id, run.run_id
    );
    mark(gate, principal, run, who, &reason, t).await?;
    tracing::warn!(call_id = %t.call_id, tool = %tool.name, run_id = %run.run_id, %families, "instruction to the model in an untrusted result");
    Ok(())
}

/// Taints the run and, with a `[taint] window`, the call's actor (its credential's agent, or its
/// subject) for `reason`.
async fn mark(
    gate: &Gate,
    principal: &Principal,
    run: &RunContext,
    who: &Who,
    reason: &str,
    t: &Trace,
) -> Result<(), Stop> {
    let actor = (!gate.config.taint.window.is_zero()).then(|| who.actor(principal));
    let mark = TaintMark { tenant: &principal.tenant, run_id: &run.run_id, actor: actor.as_deref(), reason, at: t.now };
    gate.stores.run_flags.taint(&mark).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn guard() -> OutputGuard {
        OutputGuard::new(&GuardSettings { sensitive_terms: vec!["orders_db".to_owned()], ..GuardSettings::default() })
    }

    fn pass(g: Guarded) -> (Value, Option<OutputReport>) {
        match g {
            Guarded::Pass(v, r) => (v, r),
            Guarded::Withheld(r) => unreachable!("withheld: {r:?}"),
        }
    }

    #[test]
    fn masks_leaves_and_keys_in_place_and_counts_kinds() {
        let result = json!({
            "note": "mail ops@example.com, table orders_db",
            "rows": [{"key": "AKIAIOSFODNN7EXAMPLE"}, 3, null],
            "a@example.com": 1, "b@example.com": 2,
        });
        let (v, report) = pass(guard().guard("t", false, ("tn", "r"), None, result));
        assert_eq!(v.pointer("/note"), Some(&json!("mail [pii:email], table [sensitive_term]")));
        assert_eq!(v.pointer("/rows/0/key"), Some(&json!("[secret:aws_access_key]")));
        assert_eq!(v.pointer("/rows/1"), Some(&json!(3)));
        assert_eq!(v.pointer("/[pii:email]"), Some(&json!(1)));
        assert_eq!(v.pointer("/[pii:email] #2"), Some(&json!(2)));
        let report = report.unwrap_or_default();
        assert_eq!(report.masked.get("pii:email"), Some(&3));
        assert_eq!(report.masked.get("secret:aws_access_key"), Some(&1));
        assert_eq!(report.masked.get("sensitive_term"), Some(&1));
        assert!(report.spotlight.is_none());
        let note = report.audit_note().unwrap_or_default();
        assert!(note.contains("pii:email ×3") && !note.contains("example.com"), "{note}");
    }

    #[test]
    fn a_clean_trusted_result_passes_untouched() {
        let result = json!({"replicas": 2, "resource_version": 7, "service": "checkout"});
        let (v, report) = pass(guard().guard("t", false, ("tn", "r"), None, result.clone()));
        assert_eq!(v, result);
        assert!(report.is_none());
    }

    #[test]
    fn the_canary_withholds_and_untrusted_output_is_spotlighted() {
        let leak = json!({"body": ["x", "prompt says CANARY-7f3a"]});
        assert!(matches!(
            guard().guard("t", false, ("tn", "r"), Some("CANARY-7f3a"), leak),
            Guarded::Withheld(r) if r.code == Code::OutputBlocked
        ));
        let (_, report) = pass(guard().guard("t", true, ("tn", "r"), Some(""), json!("ticket text")));
        let s = report.and_then(|r| r.spotlight).unwrap_or_else(|| unreachable!("spotlighted"));
        assert_eq!(s.text, format!("<<UNTRUSTED {d}>>\nticket text\n<</UNTRUSTED {d}>>", d = s.delimiter));
        assert!(!s.closing_delimiter_in_result);
    }

    #[test]
    fn deep_results_do_not_exhaust_the_stack() {
        let mut v = json!("a@example.com");
        for _ in 0..1_000 {
            v = json!([v]);
        }
        let (_, report) = pass(guard().guard("t", false, ("tn", "r"), None, v));
        assert_eq!(report.map(|r| r.masked.get("pii:email").copied()), Some(Some(1)));
    }
}
