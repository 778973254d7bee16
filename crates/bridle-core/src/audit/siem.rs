//! Audit events as a SIEM takes them: ArcSight CEF (`CEF:0|…`) and RFC 5424 syslog lines, plus
//! the time window an export asks for. Every form keeps the event's `seq`, `hash` and
//! `prev_hash`, so the receiver can check the chain link by link; JSON lines stay the lossless
//! form (`bridle audit verify --file` reads them).

use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{AuditEvent, Decision, EventKind};

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// One JSON event per line, exactly as stored (verifiable offline).
    #[default]
    Jsonl,
    /// ArcSight Common Event Format, one event per line.
    Cef,
    /// RFC 5424 syslog, one message per line (the event's JSON is the message).
    Syslog,
}

impl Format {
    /// `jsonl`, `cef` or `syslog`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "jsonl" => Some(Self::Jsonl),
            "cef" => Some(Self::Cef),
            "syslog" => Some(Self::Syslog),
            _ => None,
        }
    }
}

/// The private enterprise number of the structured-data id (`bridle@32473`; 32473 is the
/// number RFC 5612 reserves for documentation and examples).
const SD_ID: &str = "bridle@32473";

/// Severity of an event for a SIEM: 3 (notice) when something was refused or blocked, or an
/// operator act that changes what may run; 1 (informational) otherwise. CEF scale 0–10.
fn cef_severity(event: &AuditEvent) -> u8 {
    let r = &event.record;
    match r.kind {
        EventKind::KillSwitchSet | EventKind::GatewayPinned | EventKind::ChatBlocked => 7,
        EventKind::ToolCall | EventKind::JobSettled if r.decision == Some(Decision::Rejected) => 5,
        EventKind::ApprovalGranted | EventKind::ApprovalRejected | EventKind::KillSwitchLifted => 3,
        _ => 1,
    }
}

/// The same as an RFC 5424 severity (4 warning, 5 notice, 6 informational).
pub fn syslog_severity(event: &AuditEvent) -> u8 {
    match cef_severity(event) {
        7.. => 4,
        3..=6 => 5,
        _ => 6,
    }
}

/// The decision's stable name (`executed`, `rejected`, `dry_run`, `replayed`), empty for none.
pub fn decision(decision: Option<Decision>) -> String {
    match decision {
        Some(Decision::Executed) => "executed",
        Some(Decision::Rejected) => "rejected",
        Some(Decision::DryRun) => "dry_run",
        Some(Decision::Replayed) => "replayed",
        None => "",
    }
    .to_owned()
}

/// The event's time in RFC 3339 (UTC), as syslog and CEF `rt` want it.
fn timestamp(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).unwrap_or_else(|_| "-".to_owned())
}

/// A CEF header field: `\` and `|` escaped, line breaks as spaces.
fn cef_header(text: &str) -> String {
    text.replace('\\', "\\\\").replace('|', "\\|").replace(['\r', '\n'], " ")
}

/// A CEF extension value: `\` and `=` escaped, line breaks as `\n` / `\r`.
fn cef_value(text: &str) -> String {
    text.replace('\\', "\\\\").replace('=', "\\=").replace('\n', "\\n").replace('\r', "\\r")
}

/// One CEF line for `event`.
pub fn cef(event: &AuditEvent) -> String {
    let r = &event.record;
    let signature = r.code.as_deref().unwrap_or(r.kind.as_str());
    let mut ext = vec![
        ("rt", (r.at.unix_timestamp_nanos() / 1_000_000).to_string()),
        ("suser", r.subject.clone()),
        ("act", decision(r.decision)),
        ("externalId", event.seq.to_string()),
        ("cs1Label", "tenant".to_owned()),
        ("cs1", r.tenant.clone()),
        ("cs2Label", "run".to_owned()),
        ("cs2", r.run_id.clone()),
        ("cs3Label", "tool".to_owned()),
        ("cs3", r.tool.clone()),
        ("cs4Label", "hash".to_owned()),
        ("cs4", event.hash.clone()),
        ("cs5Label", "prev_hash".to_owned()),
        ("cs5", event.prev_hash.clone()),
        ("cs6Label", "call".to_owned()),
        ("cs6", r.call_id.clone()),
    ];
    if let Some(approval) = &r.approval_id {
        ext.push(("flexString1Label", "approval".to_owned()));
        ext.push(("flexString1", approval.clone()));
    }
    if let Some(reason) = &r.reason {
        ext.push(("reason", reason.clone()));
    }
    let ext: Vec<String> =
        ext.into_iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| format!("{k}={}", cef_value(&v))).collect();
    format!(
        "CEF:0|Bridle|bridle|{}|{}|{}|{}|{}",
        env!("CARGO_PKG_VERSION"),
        cef_header(signature),
        cef_header(&r.display()),
        cef_severity(event),
        ext.join(" ")
    )
}

/// An RFC 5424 header field: printable US-ASCII without spaces, at most `max`; `-` when empty.
fn syslog_field(text: &str, max: usize) -> String {
    let kept: String = text.chars().filter(|c| c.is_ascii_graphic()).take(max).collect();
    if kept.is_empty() { "-".to_owned() } else { kept }
}

/// An RFC 5424 structured-data parameter value: `"`, `\` and `]` escaped.
fn sd_value(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace(']', "\\]")
}

/// One RFC 5424 message for `event` from `hostname` (facility 13, log audit): the kind as MSGID,
/// seq, hash, prev_hash, tenant and decision as structured data, and the event's JSON as the
/// message.
pub fn syslog(event: &AuditEvent, hostname: &str) -> String {
    let r = &event.record;
    let pri = 13 * 8 + u16::from(syslog_severity(event));
    let params = [
        ("seq", event.seq.to_string()),
        ("hash", event.hash.clone()),
        ("prev_hash", event.prev_hash.clone()),
        ("tenant", r.tenant.clone()),
        ("subject", r.subject.clone()),
        ("decision", decision(r.decision)),
    ];
    let sd: Vec<String> = params.iter().map(|(k, v)| format!("{k}=\"{}\"", sd_value(v))).collect();
    let message = serde_json::to_string(event).unwrap_or_else(|_| Value::Null.to_string());
    format!(
        "<{pri}>1 {} {} bridle {} {} [{SD_ID} {}] {message}",
        timestamp(r.at),
        syslog_field(hostname, 255),
        std::process::id(),
        syslog_field(r.kind.as_str(), 32),
        sd.join(" ")
    )
}

/// `event` in `format`, one line without its line break.
pub fn line(event: &AuditEvent, format: Format, hostname: &str) -> String {
    match format {
        Format::Jsonl => serde_json::to_string(event).unwrap_or_default(),
        Format::Cef => cef(event),
        Format::Syslog => syslog(event, hostname),
    }
}

/// The window `[since, until)` an export keeps; `None` leaves that side open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    /// Events at or after this time.
    pub since: Option<OffsetDateTime>,
    /// Events before this time.
    pub until: Option<OffsetDateTime>,
}

impl Window {
    /// Whether `event` falls in the window.
    pub fn holds(&self, event: &AuditEvent) -> bool {
        let at = event.record.at;
        self.since.is_none_or(|s| at >= s) && self.until.is_none_or(|u| at < u)
    }

    /// An RFC 3339 time or a `YYYY-MM-DD` date (UTC midnight).
    pub fn parse_time(text: &str) -> Option<OffsetDateTime> {
        if let Ok(at) = OffsetDateTime::parse(text, &Rfc3339) {
            return Some(at);
        }
        let format = time::macros::format_description!("[year]-[month]-[day]");
        time::Date::parse(text, &format).ok().map(|d| d.midnight().assume_utc())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AuditRecord, Versions};

    fn event(reason: &str) -> AuditEvent {
        let record = AuditRecord {
            at: OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH),
            subject: "requester=1|x".into(),
            run_id: "run-1".into(),
            incident: String::new(),
            reason: Some(reason.into()),
            versions: Versions::tools_only("h"),
            ..crate::audit::tests::record(1)
        };
        AuditEvent { seq: 7, record, evidence_digest: None, prev_hash: "p".repeat(64), hash: "a".repeat(64) }
    }

    #[test]
    fn cef_keeps_the_chain_and_escapes_what_would_split_a_field() {
        let line = cef(&event("denied = by \"policy\"\nsecond line"));
        assert!(line.starts_with("CEF:0|Bridle|bridle|"), "{line}");
        assert!(line.contains("|policy_denied|refused: policy_denied|5|"), "{line}");
        assert!(line.contains(&format!("cs4={}", "a".repeat(64))) && line.contains("externalId=7"), "{line}");
        assert!(line.contains("suser=requester\\=1|x"), "{line}");
        assert!(line.contains("reason=denied \\= by \"policy\"\\nsecond line"), "{line}");
        assert!(!line.contains('\n'));
        assert!(line.contains("rt=1800000000000"), "{line}");
    }

    #[test]
    fn syslog_is_one_rfc5424_line_with_the_chain_in_structured_data() {
        let line = syslog(&event("a ] \"quoted\""), "host name");
        assert!(line.starts_with("<109>1 2027-01-15T08:00:00Z hostname bridle "), "{line}");
        assert!(line.contains(" tool_call [bridle@32473 seq=\"7\" "), "{line}");
        assert!(line.contains(&format!("prev_hash=\"{}\"", "p".repeat(64))), "{line}");
        let message = line.split_once("] ").map(|(_, m)| m).unwrap_or_default();
        let parsed: Value = serde_json::from_str(message).unwrap_or_default();
        assert_eq!(parsed.get("seq"), Some(&serde_json::json!(7)), "{message}");
        assert!(!line.contains('\n'));
    }

    #[test]
    fn a_window_keeps_since_inclusive_and_until_exclusive() {
        let e = event("r");
        let at = e.record.at;
        let w = |since: Option<OffsetDateTime>, until: Option<OffsetDateTime>| Window { since, until }.holds(&e);
        assert!(w(None, None) && w(Some(at), None) && w(None, Some(at + time::Duration::SECOND)));
        assert!(!w(None, Some(at)) && !w(Some(at + time::Duration::SECOND), None));
        assert_eq!(
            Window::parse_time("2027-01-15"),
            OffsetDateTime::from_unix_timestamp(1_800_000_000 - 8 * 3600).ok()
        );
        assert!(Window::parse_time("2027-01-15T08:00:00Z").is_some() && Window::parse_time("yesterday").is_none());
    }
}
