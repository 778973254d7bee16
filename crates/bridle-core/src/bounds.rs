//! Bounds on caller-supplied strings: ids, keys, reasons, token claims and argument text. The
//! rules live here once; every door (HTTP, MCP, CLI, the gate's own entry, the desk) calls them.
//!
//! A value that breaks a bound is refused with `bad_request` naming the field and the bound,
//! never quoting the value: what the caller sent may be a megabyte, or hold a NUL that no store
//! can keep. [`bound_record`] is the last line: an audit record's fields are made bounded (an
//! offending id becomes [`marker`]) before any store writes it, so a refusal is still audited and
//! no index key ever depends on unbounded input.

use std::borrow::Cow;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::audit::AuditRecord;
use crate::code::Code;
use crate::principal::Principal;
use crate::verdict::Rejection;

/// Longest id (`run_id`, `incident`, a client's idempotency key, approval and interrupt ids …),
/// in characters.
pub const ID_MAX: usize = 128;
/// Longest tenant (token claim): short enough that a server-minted run id `{tenant}/{uuid}` is
/// still an id.
pub const TENANT_MAX: usize = 64;
/// Longest agent id (`[[agents]]`, a call's `agent`, a kill switch's agent).
pub const AGENT_MAX: usize = 64;
/// Longest idempotency key the gate takes: a client's key (an id) or one derived from ids (a
/// graph node's `{thread}/{step}:{task}/call`, chat's `{run_id}/chat-{n}/call-{k}`, an answer's
/// `KEY/n`).
pub const KEY_MAX: usize = 512;
/// Longest idempotency key stored as given; a longer one is stored as [`hashed_key`].
pub const STORED_KEY_MAX: usize = 128;
/// Longest reason (reject, kill, lift, outcome notes), in characters.
pub const REASON_MAX: usize = 2000;
/// Longest token `sub`, in characters.
pub const SUBJECT_MAX: usize = 256;
/// Longest entry of a token's `services` or `scopes`, in characters.
pub const CLAIM_ITEM_MAX: usize = 128;
/// Most entries of a token's `services` or `scopes`.
pub const CLAIM_ITEMS_MAX: usize = 256;
/// Longest reason an audit record keeps (gate messages, adapter errors); longer text is cut.
pub const RECORD_REASON_MAX: usize = 8000;

/// What an id may hold besides ASCII letters and digits.
pub const ID_PUNCTUATION: &str = "-_.:/@";

/// A caller-supplied string outside its bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundError {
    /// Longer than allowed.
    #[error("`{field}` is {len} characters long; at most {max} are allowed")]
    TooLong {
        /// Field name.
        field: String,
        /// Its length in characters.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// A character outside the field's set (for an id: letters, digits and `-_.:/@`).
    #[error("`{field}` holds a character outside {allowed} (character {at})")]
    BadCharacter {
        /// Field name.
        field: String,
        /// 1-based position of the first offending character.
        at: usize,
        /// What the field allows.
        allowed: &'static str,
    },
    /// Empty (or blank) where a value is required.
    #[error("`{field}` must not be empty")]
    Empty {
        /// Field name.
        field: String,
    },
    /// More entries than allowed.
    #[error("`{field}` has {len} entries; at most {max} are allowed")]
    TooMany {
        /// Field name.
        field: String,
        /// Its entry count.
        len: usize,
        /// The bound.
        max: usize,
    },
}

impl BoundError {
    /// The field refused.
    pub fn field(&self) -> &str {
        match self {
            BoundError::TooLong { field, .. }
            | BoundError::BadCharacter { field, .. }
            | BoundError::Empty { field }
            | BoundError::TooMany { field, .. } => field,
        }
    }

    /// The refusal: `bad_request` with `detail.field` (and `detail.max` for a length).
    pub fn rejection(&self) -> Rejection {
        let detail = match self {
            BoundError::TooLong { field, max, .. } | BoundError::TooMany { field, max, .. } => {
                json!({"field": field, "max": max})
            }
            _ => json!({"field": self.field()}),
        };
        Rejection::new(Code::BadRequest, self.to_string()).with_detail(detail)
    }
}

impl From<BoundError> for Rejection {
    fn from(e: BoundError) -> Self {
        e.rejection()
    }
}

const ID_CHARS: &str = "letters, digits and `-_.:/@`";
const CLEAN_TEXT: &str = "printable text (no NUL or other control character)";
const CLEAN_REASON: &str = "printable text, tabs and line breaks (no NUL or other control character)";

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || ID_PUNCTUATION.contains(c)
}

fn is_reason_char(c: char) -> bool {
    !c.is_control() || matches!(c, '\t' | '\n' | '\r')
}

fn check_chars(
    field: &str,
    value: &str,
    max: usize,
    ok: fn(char) -> bool,
    allowed: &'static str,
) -> Result<(), BoundError> {
    let mut len = 0usize;
    let mut bad = None;
    for c in value.chars() {
        len += 1;
        if bad.is_none() && !ok(c) {
            bad = Some(len);
        }
    }
    if len > max {
        return Err(BoundError::TooLong { field: field.to_owned(), len, max });
    }
    match bad {
        Some(at) => Err(BoundError::BadCharacter { field: field.to_owned(), at, allowed }),
        None => Ok(()),
    }
}

/// An id: at most [`ID_MAX`] characters of ASCII letters, digits and `-_.:/@`. Empty is allowed
/// (an absent run id or incident); say so with [`require`] where it is not.
pub fn check_id(field: &str, value: &str) -> Result<(), BoundError> {
    check_chars(field, value, ID_MAX, is_id_char, ID_CHARS)
}

/// An agent id: at most [`AGENT_MAX`] characters of the id set.
pub fn check_agent(field: &str, value: &str) -> Result<(), BoundError> {
    check_chars(field, value, AGENT_MAX, is_id_char, ID_CHARS)
}

/// An idempotency key as the gate takes it: at most [`KEY_MAX`] characters, no control
/// character (derived keys carry node and task names).
pub fn check_key(field: &str, value: &str) -> Result<(), BoundError> {
    check_chars(field, value, KEY_MAX, |c| !c.is_control(), CLEAN_TEXT)
}

/// A reason: at most [`REASON_MAX`] characters, no NUL or other control character except tab,
/// line feed and carriage return.
pub fn check_reason(field: &str, value: &str) -> Result<(), BoundError> {
    check_chars(field, value, REASON_MAX, is_reason_char, CLEAN_REASON)
}

/// The reason a kill switch keeps when none is given: an emergency stop needs none.
pub const NO_REASON: &str = "no reason given";

/// A reason made storable instead of refused, for what must never fail on its reason (setting
/// a kill switch): control characters but tab and line breaks become U+FFFD, the text is cut at
/// [`REASON_MAX`] characters, and a blank one is [`NO_REASON`].
pub fn storable_reason(text: &str) -> String {
    if text.trim().is_empty() {
        return NO_REASON.to_owned();
    }
    let clean: String = text.chars().map(|c| if is_reason_char(c) { c } else { '\u{fffd}' }).collect();
    crate::verdict::clip(&clean, REASON_MAX)
}

/// Free text of at most `max` characters with no control character (names, titles).
pub fn check_text(field: &str, value: &str, max: usize) -> Result<(), BoundError> {
    check_chars(field, value, max, |c| !c.is_control(), CLEAN_TEXT)
}

/// Refuses an empty or blank value.
pub fn require(field: &str, value: &str) -> Result<(), BoundError> {
    if value.trim().is_empty() { Err(BoundError::Empty { field: field.to_owned() }) } else { Ok(()) }
}

/// JSON a store keeps (tool arguments, run inputs): no string and no key holds a NUL, which
/// PostgreSQL can keep neither in text nor in `jsonb`. The field named is `field.path.to[0]`.
pub fn check_json(field: &str, value: &Value) -> Result<(), BoundError> {
    // Almost every value holds no NUL: one walk without paths says so. Only a value that holds
    // one is walked again, with the paths that name where.
    if !holds_nul(value) {
        return Ok(());
    }
    // An explicit stack: depth is bounded by the parser, but no recursion is needed here.
    let mut stack: Vec<(Cow<'_, str>, &Value)> = vec![(Cow::Borrowed(field), value)];
    while let Some((path, v)) = stack.pop() {
        match v {
            Value::String(s) => no_nul(&path, s)?,
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    stack.push((Cow::Owned(format!("{path}[{i}]")), item));
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    let key = crate::verdict::clip(&k.replace('\0', "\u{fffd}"), 64);
                    let at = format!("{path}.{key}");
                    no_nul(&at, k)?;
                    stack.push((Cow::Owned(at), item));
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    Ok(())
}

/// Whether any string or key in `value` holds a NUL.
fn holds_nul(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s.contains('\0') => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (k, item) in map {
                    if k.contains('\0') {
                        return true;
                    }
                    stack.push(item);
                }
            }
            Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    false
}

/// [`check_json`] over the members of an object (a request's `arguments` before they become a
/// value).
pub fn check_object(field: &str, map: &serde_json::Map<String, Value>) -> Result<(), BoundError> {
    for (k, item) in map {
        let at = format!("{field}.{}", crate::verdict::clip(&k.replace('\0', "\u{fffd}"), 64));
        no_nul(&at, k)?;
        check_json(&at, item)?;
    }
    Ok(())
}

fn no_nul(field: &str, s: &str) -> Result<(), BoundError> {
    match s.chars().position(|c| c == '\0') {
        Some(i) => Err(BoundError::BadCharacter { field: field.to_owned(), at: i + 1, allowed: "text without NUL" }),
        None => Ok(()),
    }
}

/// A subject (`sub`): non-empty, at most [`SUBJECT_MAX`] characters, no control character.
pub fn check_subject(field: &str, value: &str) -> Result<(), BoundError> {
    require(field, value)?;
    check_text(field, value, SUBJECT_MAX)
}

/// A principal as a verified token gives it: `sub` non-empty, at most [`SUBJECT_MAX`]
/// characters, no control character; `tenant` an id of at most [`TENANT_MAX`] characters; at
/// most [`CLAIM_ITEMS_MAX`] `services` and `scopes` of at most [`CLAIM_ITEM_MAX`] characters
/// with no control character; an `agent`, when present, a non-empty agent id. A token breaking
/// any of these is refused (`unauthenticated`).
pub fn check_principal(p: &Principal) -> Result<(), BoundError> {
    check_subject("sub", &p.subject)?;
    if let Some(agent) = &p.agent {
        require("agent", agent)?;
        check_agent("agent", agent)?;
    }
    require("tenant", &p.tenant)?;
    check_chars("tenant", &p.tenant, TENANT_MAX, is_id_char, ID_CHARS)?;
    for (field, set) in [("services", &p.services), ("scopes", &p.scopes)] {
        if set.len() > CLAIM_ITEMS_MAX {
            return Err(BoundError::TooMany { field: field.to_owned(), len: set.len(), max: CLAIM_ITEMS_MAX });
        }
        for item in set {
            check_text(field, item, CLAIM_ITEM_MAX)?;
        }
    }
    Ok(())
}

/// SHA-256 of `value`, hex.
fn digest(value: &str) -> String {
    hex::encode(Sha256::digest(value.as_bytes()))
}

/// What a record keeps in place of a value that broke its bound: `refused:sha256:` and the first
/// 16 hex digits of the value's SHA-256 (bounded, in the id set, and the same for the same value).
pub fn marker(value: &str) -> String {
    let hash = digest(value);
    format!("refused:sha256:{}", hash.get(..16).unwrap_or(&hash))
}

/// The idempotency key a store indexes: the key itself up to [`STORED_KEY_MAX`] bytes, else
/// `sha256:` and its full hex digest (71 bytes), so an index key never depends on unbounded input.
pub fn hashed_key(key: &str) -> Cow<'_, str> {
    if key.len() <= STORED_KEY_MAX { Cow::Borrowed(key) } else { Cow::Owned(format!("sha256:{}", digest(key))) }
}

fn bound_field(value: &mut String, check: impl Fn(&str) -> Result<(), BoundError>) {
    if check(value).is_err() {
        *value = marker(value);
    }
}

/// Makes every field of an audit record bounded before a store keeps it: an id, tenant, subject
/// or name that breaks its bound becomes its [`marker`]; a reason loses its NULs (as U+FFFD) and
/// is cut at [`RECORD_REASON_MAX`] characters. A record the doors already checked is unchanged.
pub fn bound_record(record: &mut AuditRecord) {
    // INVARIANT: no audit insert fails, and no audit index key grows, on caller input.
    // Lenient on purpose: the doors hold ids to their character set; here only what a store
    // cannot keep (control characters, NUL) or must not index (length) is replaced.
    let key_like = |s: &str| check_key("", s);
    let id_like = |s: &str| check_text("", s, ID_MAX);
    bound_field(&mut record.tenant, id_like);
    bound_field(&mut record.subject, |s| check_text("", s, SUBJECT_MAX));
    bound_field(&mut record.run_id, id_like);
    bound_field(&mut record.incident, id_like);
    bound_field(&mut record.call_id, key_like);
    bound_field(&mut record.tool, id_like);
    bound_field(&mut record.policy_version, key_like);
    for field in [
        &mut record.plan_hash,
        &mut record.executor_identity,
        &mut record.approval_id,
        &mut record.approver,
        &mut record.code,
        &mut record.versions.agent_id,
        &mut record.versions.model,
        &mut record.versions.prompt_hash,
        &mut record.versions.tool_schema_hash,
    ]
    .into_iter()
    .flatten()
    {
        bound_field(field, key_like);
    }
    if let Some(reason) = &mut record.reason
        && (reason.contains('\0') || reason.len() > RECORD_REASON_MAX)
    {
        *reason = crate::verdict::clip(&reason.replace('\0', "\u{fffd}"), RECORD_REASON_MAX);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn todays_ids_are_ids() {
        for id in ["run-101", "acme/0193e8b2-7c1d-7a9e-9f00-1a2b3c4d5e6f", "INC-4711", "alice@example.com", "a.b:c_d"] {
            assert_eq!(check_id("run_id", id), Ok(()), "{id}");
        }
        assert_eq!(check_id("run_id", ""), Ok(()));
    }

    #[test]
    fn a_3kb_run_id_is_too_long_and_the_message_does_not_quote_it() {
        let id = "r".repeat(3000);
        let e = check_id("run_id", &id).unwrap_err();
        assert!(matches!(e, BoundError::TooLong { len: 3000, max: ID_MAX, .. }));
        let r = e.rejection();
        assert_eq!(r.code, Code::BadRequest);
        assert!(!r.message.contains("rrrr"));
        assert_eq!(r.detail["field"], "run_id");
    }

    #[test]
    fn nul_and_other_characters_outside_the_set_are_refused() {
        assert!(matches!(check_id("incident", "a\0b"), Err(BoundError::BadCharacter { at: 2, .. })));
        assert!(check_id("incident", "with space").is_err());
        assert!(check_id("incident", "é").is_err());
        assert!(check_reason("reason", "line one\nline two\ttab").is_ok());
        assert!(check_reason("reason", "nul\0").is_err());
        assert!(check_reason("reason", "bell\u{7}").is_err());
        assert!(check_reason("reason", &"x".repeat(REASON_MAX + 1)).is_err());
        assert!(check_reason("reason", &"한".repeat(REASON_MAX)).is_ok());
    }

    #[test]
    fn nul_in_an_argument_string_or_key_is_refused_with_its_path() {
        let ok = json!({"service": "checkout", "tags": ["a", "b"], "n": 3});
        assert_eq!(check_json("arguments", &ok), Ok(()));
        let e = check_json("arguments", &json!({"notes": ["fine", "bad\u{0}"]})).unwrap_err();
        assert_eq!(e.field(), "arguments.notes[1]");
        let e = check_json("arguments", &json!({"k\u{0}": 1})).unwrap_err();
        assert!(e.field().starts_with("arguments.k"));
    }

    #[test]
    fn token_claims_are_bounded_and_clean() {
        let ok = Principal::new("auth0|abc 123", "acme", &["checkout"], &["service:read"]);
        assert_eq!(check_principal(&ok), Ok(()));
        for bad in [
            Principal::new("nul\0", "acme", &[], &[]),
            Principal::new(&"s".repeat(SUBJECT_MAX + 1), "acme", &[], &[]),
            Principal::new("alice", &"t".repeat(TENANT_MAX + 1), &[], &[]),
            Principal::new("alice", "acme corp", &[], &[]),
            Principal::new("alice", "acme", &["ok", "bad\0"], &[]),
            Principal::new("alice", "acme", &[], &[&"x".repeat(CLAIM_ITEM_MAX + 1)]),
            Principal::new(" ", "acme", &[], &[]),
        ] {
            assert!(check_principal(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_kill_reason_is_always_storable() {
        assert_eq!(storable_reason(""), NO_REASON);
        assert_eq!(storable_reason("bad\0deploy"), "bad\u{fffd}deploy");
        assert!(
            check_reason("reason", &storable_reason(&"x".repeat(5000)))
                .is_err_and(|e| matches!(e, BoundError::TooLong { .. }))
        );
        assert_eq!(storable_reason(&"x".repeat(5000)).chars().count(), REASON_MAX + 1);
    }

    #[test]
    fn a_record_with_unbounded_fields_is_made_bounded() {
        let mut r = AuditRecord {
            kind: crate::audit::EventKind::ToolCall,
            call_id: "c-1".into(),
            at: time::OffsetDateTime::UNIX_EPOCH,
            tenant: "acme".into(),
            subject: "alice\0".into(),
            run_id: "r".repeat(1 << 20),
            incident: "inc-1".into(),
            tool: "get_status".into(),
            policy_version: "p1".into(),
            plan_hash: None,
            executor_identity: None,
            approval_id: Some("a\0".into()),
            approver: None,
            decision: None,
            code: Some("bad_request".into()),
            reason: Some("nul \0 here".into()),
            timings: crate::audit::Timings::default(),
            auth: None,
            versions: crate::audit::Versions::default(),
        };
        bound_record(&mut r);
        assert!(r.run_id.starts_with("refused:sha256:") && r.run_id.len() < 40);
        assert!(r.subject.starts_with("refused:sha256:"));
        assert_eq!(r.approval_id.as_deref().map(|a| a.starts_with("refused:")), Some(true));
        assert_eq!((r.tenant.as_str(), r.incident.as_str(), r.tool.as_str()), ("acme", "inc-1", "get_status"));
        assert_eq!(r.reason.as_deref(), Some("nul \u{fffd} here"));
    }

    #[test]
    fn long_keys_are_hashed_for_the_index() {
        assert_eq!(hashed_key("run-1/3:plan/call"), "run-1/3:plan/call");
        let long = "k".repeat(STORED_KEY_MAX + 1);
        let h = hashed_key(&long);
        assert_eq!(h.len(), 71);
        assert_ne!(hashed_key(&format!("{long}x")), h);
    }

    #[test]
    fn markers_are_bounded_ids() {
        let m = marker(&"x".repeat(1 << 20));
        assert_eq!(check_id("run_id", &m), Ok(()));
        assert_eq!(m, marker(&"x".repeat(1 << 20)));
    }
}
