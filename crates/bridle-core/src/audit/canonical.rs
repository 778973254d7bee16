//! The RFC 8785 form of what an event's hash covers, written straight from the record.
//!
//! Every gate call hashes one event. Going through `serde_json::to_value` builds a map of some
//! twenty-five owned keys and values only to sort and print them again; this writer prints the
//! same bytes from the record's fields: the members of each object sorted by name (every name is
//! ASCII, so byte order is RFC 8785's UTF-16 order), strings escaped as `serde_json` escapes
//! them (RFC 8785 §3.2.2.2), integers as digits, `None` as `null` except the fields serde skips
//! when absent. A property test checks it byte for byte against the generic path.

use std::io::Write;

use super::{AuditRecord, Decision};

/// One member's value.
enum Field<'a> {
    Text(&'a str),
    OptText(Option<&'a str>),
    Timings(&'a super::Timings),
}

/// Appends the canonical JSON of `{"prev_hash", "record", "seq"}`; with a `digest`, the record's
/// `reason` is left out and `evidence_digest` put in (see [`super::event_hash`]).
pub(super) fn hashed(seq: u64, prev_hash: &str, record: &AuditRecord, digest: Option<&str>, out: &mut Vec<u8>) {
    head(prev_hash, out);
    body(record, digest, out);
    tail(seq, out);
}

/// What comes before the record's body in [`hashed`]'s bytes.
pub(super) fn head(prev_hash: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"prev_hash\":");
    text(prev_hash, out);
    out.extend_from_slice(b",\"record\":");
}

/// What comes after the record's body in [`hashed`]'s bytes.
pub(super) fn tail(seq: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(b",\"seq\":");
    int(seq, out);
    out.push(b'}');
}

/// Appends the canonical JSON of an event's evidence, `{"reason": …}`.
pub(super) fn evidence(reason: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"reason\":");
    text(reason, out);
    out.push(b'}');
}

/// Appends the canonical JSON of the record as the hash covers it.
pub(super) fn body(r: &AuditRecord, digest: Option<&str>, out: &mut Vec<u8>) {
    let at = r.at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
    let v = &r.versions;
    let (evidence_digest, reason) = match digest {
        Some(d) => (Some(Field::Text(d)), None),
        None => (None, Some(Field::OptText(r.reason.as_deref()))),
    };
    // Every member the body can have, written in canonical (byte) order, so nothing is sorted
    // per call; `None`: left out, as serde skips it when absent. The property test
    // `matches_the_generic_canonical_form` holds the order to the generic path's.
    let members: [(&str, Option<Field<'_>>); MEMBERS] = [
        ("agent_id", v.agent_id.as_deref().map(Field::Text)),
        ("agent_source", v.agent_source.map(|s| Field::Text(s.as_str()))),
        ("approval_id", Some(Field::OptText(r.approval_id.as_deref()))),
        ("approver", Some(Field::OptText(r.approver.as_deref()))),
        ("at", Some(Field::Text(&at))),
        ("auth", r.auth.map(|a| Field::Text(a.as_str()))),
        ("call_id", Some(Field::Text(&r.call_id))),
        ("code", Some(Field::OptText(r.code.as_deref()))),
        ("decision", Some(Field::OptText(r.decision.map(Decision::as_str)))),
        ("evidence_digest", evidence_digest),
        ("executor_identity", Some(Field::OptText(r.executor_identity.as_deref()))),
        ("incident", Some(Field::Text(&r.incident))),
        ("kind", Some(Field::Text(r.kind.as_str()))),
        ("model", v.model.as_deref().map(Field::Text)),
        ("plan_hash", Some(Field::OptText(r.plan_hash.as_deref()))),
        ("policy_version", Some(Field::Text(&r.policy_version))),
        ("prompt_hash", v.prompt_hash.as_deref().map(Field::Text)),
        ("reason", reason),
        ("run_id", Some(Field::Text(&r.run_id))),
        ("subject", Some(Field::Text(&r.subject))),
        ("tenant", Some(Field::Text(&r.tenant))),
        ("timings", Some(Field::Timings(&r.timings))),
        ("tool", Some(Field::Text(&r.tool))),
        ("tool_schema_hash", v.tool_schema_hash.as_deref().map(Field::Text)),
    ];
    out.push(b'{');
    let mut first = true;
    for (name, value) in &members {
        let Some(value) = value else { continue };
        if !first {
            out.push(b',');
        }
        first = false;
        text(name, out);
        out.push(b':');
        match value {
            Field::Text(s) | Field::OptText(Some(s)) => text(s, out),
            Field::OptText(None) => out.extend_from_slice(b"null"),
            Field::Timings(t) => {
                out.extend_from_slice(b"{\"adapter_us\":");
                int(t.adapter_us, out);
                out.extend_from_slice(b",\"policy_us\":");
                int(t.policy_us, out);
                out.extend_from_slice(b",\"total_us\":");
                int(t.total_us, out);
                out.push(b'}');
            }
        }
    }
    out.push(b'}');
}

/// How many members [`body`] knows.
const MEMBERS: usize = 24;

fn text(s: &str, out: &mut Vec<u8>) {
    // What serde_json escapes: `"`, `\` and the C0 controls. Most audit texts hold none of them
    // and are copied as they are.
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn int(n: u64, out: &mut Vec<u8>) {
    // Audit integers are counts and microseconds, far below 2^53: digits are their canonical form.
    let _ = write!(out, "{n}");
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use time::OffsetDateTime;

    use super::super::{AuditRecord, Decision, EventKind, OperatorAuth, Timings, Versions};
    use crate::agents::AgentSource;

    /// The generic path: serde's JSON value of the body, canonicalized.
    fn generic(seq: u64, prev_hash: &str, record: &AuditRecord, digest: Option<&str>) -> Vec<u8> {
        let mut body = serde_json::to_value(record).unwrap_or_default();
        if let (Some(d), serde_json::Value::Object(fields)) = (digest, &mut body) {
            fields.remove("reason");
            fields.insert("evidence_digest".to_owned(), serde_json::Value::String(d.to_owned()));
        }
        let whole = serde_json::json!({"seq": seq, "prev_hash": prev_hash, "record": body});
        crate::plan::canonical_value_bytes(&whole).unwrap_or_default()
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![any::<String>(), "[a-z_\\u{0}-\\u{1f}\"\\\\/\\u{7f}\\u{e9}\\u{2028}\\u{1f600}\\u{d55c}]{0,8}"]
    }

    fn opt() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(text())
    }

    prop_compose! {
        fn record()(
            texts in proptest::collection::vec(text(), 8),
            opts in proptest::collection::vec(opt(), 11),
            kind in proptest::sample::select(vec![EventKind::ToolCall, EventKind::ApprovalGranted, EventKind::JobSettled]),
            decision in proptest::option::of(proptest::sample::select(
                vec![Decision::Executed, Decision::Rejected, Decision::DryRun, Decision::Replayed])),
            auth in proptest::option::of(proptest::sample::select(vec![OperatorAuth::Token, OperatorAuth::As])),
            source in proptest::option::of(proptest::sample::select(
                vec![AgentSource::Claim, AgentSource::Principal, AgentSource::Request])),
            nanos in 0i64..4_000_000_000_000_000_000, offset in -43_200i32..43_200,
            timings in (any::<u32>(), any::<u32>(), any::<u32>()),
        ) -> AuditRecord {
            let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(nanos)).unwrap_or(OffsetDateTime::UNIX_EPOCH)
                .to_offset(time::UtcOffset::from_whole_seconds(offset / 60 * 60).unwrap_or(time::UtcOffset::UTC));
            let t = |i: usize| texts.get(i).cloned().unwrap_or_default();
            let o = |i: usize| opts.get(i).cloned().flatten();
            AuditRecord {
                kind, call_id: t(0), at, tenant: t(1), subject: t(2), run_id: t(3), incident: t(4),
                tool: t(5), policy_version: t(6), plan_hash: o(0), executor_identity: o(1), approval_id: o(2),
                approver: o(3), decision, code: o(4), reason: o(5),
                timings: Timings { total_us: timings.0.into(), policy_us: timings.1.into(), adapter_us: timings.2.into() },
                auth,
                versions: Versions { agent_id: o(6), model: o(7), prompt_hash: o(8), tool_schema_hash: o(9),
                    agent_source: source },
            }
        }
    }

    proptest! {
        #[test]
        fn evidence_matches_the_generic_canonical_form(reason in text()) {
            let mut fast = Vec::new();
            super::evidence(&reason, &mut fast);
            let slow = crate::plan::canonical_value_bytes(&serde_json::json!({"reason": reason})).unwrap_or_default();
            prop_assert_eq!(fast, slow);
        }

        #[test]
        fn matches_the_generic_canonical_form(r in record(), seq in 1u64..(1 << 53), prev in text(), digest in opt()) {
            let mut fast = Vec::new();
            super::hashed(seq, &prev, &r, digest.as_deref(), &mut fast);
            let slow = generic(seq, &prev, &r, digest.as_deref());
            prop_assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&slow));
        }
    }
}
