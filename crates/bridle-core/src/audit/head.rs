//! Signed audit heads: what anchors each tenant's chain length outside the audited table.
//!
//! A hash chain shows an edited, inserted or reordered event, but not a deleted tail: the chain
//! minus its last events is still a valid chain. So writers periodically sign the head of each
//! chain they saw change, `{tenant, seq, hash, at}`, with an Ed25519 key kept outside the
//! database, and append it to a head log outside the audited table (the runtime's
//! `audit/head_log.rs`). A verifier holding the same key's public half checks every chain
//! against every signed head ([`TailCheck`]): a head naming a seq past the chain's last event
//! means the tail was deleted; a head whose hash differs from the stored event at its seq means
//! the chain was rewritten there.
//!
//! The signature covers a domain-separated, length-prefixed encoding of tenant, seq, hash and the
//! `at` text exactly as written ([`signing_message`]), so a head signature can never be
//! mistaken for a signature over anything else, and no field can bleed into another. Keys are
//! one line of text ([`HeadKey::to_text`]): a fixed prefix and the 32-byte Ed25519 seed in hex.
//!
//! Pure: no I/O and no randomness here. Generating a key (system randomness), reading and
//! appending the head log, and the background writer live in the runtime.

use std::collections::{BTreeMap, BTreeSet};

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

/// The prefix of a private key's text form.
pub const KEY_PREFIX: &str = "bridle-audit-ed25519:";
/// What every signed message starts with: nothing else Bridle signs starts this way.
const DOMAIN: &[u8] = b"bridle/audit-head/v1\0";
/// The longest head line a reader accepts, in bytes (a head is about 300).
pub const MAX_LINE: usize = 4096;

/// The last event of a tenant's chain, as the store reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainHead {
    /// Tenant (chain key).
    pub tenant: String,
    /// Sequence number of the chain's last event.
    pub seq: u64,
    /// That event's hash.
    pub hash: String,
}

/// One line of the head log: a chain head, when it was seen, and its signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedHead {
    /// Tenant.
    pub tenant: String,
    /// Sequence number of the chain's last event when it was signed.
    pub seq: u64,
    /// That event's hash.
    pub hash: String,
    /// When it was read from the store (RFC 3339, UTC), signed as this exact text.
    pub at: String,
    /// The signer's Ed25519 public key, hex.
    pub key: String,
    /// Ed25519 signature over [`signing_message`], hex.
    pub sig: String,
}

impl SignedHead {
    /// The head as one JSON line (no newline).
    pub fn to_line(&self) -> String {
        // A struct of strings and an integer always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The bytes a head signature covers: a domain tag, then tenant, seq, hash and `at`, each
/// length-prefixed (u32 big-endian) or fixed-width (seq: u64 big-endian).
pub fn signing_message(tenant: &str, seq: u64, hash: &str, at: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(DOMAIN.len() + tenant.len() + hash.len() + at.len() + 20);
    out.extend_from_slice(DOMAIN);
    for (i, field) in [tenant, hash, at].into_iter().enumerate() {
        if i == 1 {
            out.extend_from_slice(&seq.to_be_bytes());
        }
        // Fields longer than 4 GiB cannot reach here (a line is at most MAX_LINE bytes); the
        // saturated length would still be unambiguous for everything shorter.
        let len = u32::try_from(field.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(field.as_bytes());
    }
    out
}

/// Why a key could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not `bridle-audit-ed25519:` followed by 64 hex digits (the message names no key material).
    #[error("an audit signing key is one line `{KEY_PREFIX}` followed by 64 hex digits (see `bridle audit keygen`)")]
    Malformed,
}

/// The Ed25519 key heads are signed with (the private half; never written to the database).
#[derive(Clone)]
pub struct HeadKey(SigningKey);

impl std::fmt::Debug for HeadKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HeadKey(public {})", self.public().to_hex())
    }
}

impl HeadKey {
    /// The key of a 32-byte seed (from the system's randomness: the runtime's `generate_key`).
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        Self(SigningKey::from_bytes(seed))
    }

    /// Reads the text form (surrounding whitespace ignored).
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let hex_seed = text.trim().strip_prefix(KEY_PREFIX).ok_or(KeyError::Malformed)?;
        let mut seed = [0_u8; 32];
        hex::decode_to_slice(hex_seed, &mut seed).map_err(|_| KeyError::Malformed)?;
        Ok(Self::from_seed(&seed))
    }

    /// The text form: [`KEY_PREFIX`] and the seed in lowercase hex, one line.
    pub fn to_text(&self) -> String {
        format!("{KEY_PREFIX}{}", hex::encode(self.0.to_bytes()))
    }

    /// The public half, which verifies.
    pub fn public(&self) -> HeadPublicKey {
        HeadPublicKey(self.0.verifying_key())
    }

    /// Signs `head` as seen at `at` (RFC 3339 text).
    pub fn sign(&self, head: &ChainHead, at: &str) -> SignedHead {
        let message = signing_message(&head.tenant, head.seq, &head.hash, at);
        let sig = self.0.sign(&message);
        SignedHead {
            tenant: head.tenant.clone(),
            seq: head.seq,
            hash: head.hash.clone(),
            at: at.to_owned(),
            key: self.public().to_hex(),
            sig: hex::encode(sig.to_bytes()),
        }
    }
}

/// Why a head line is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadLineError {
    /// Longer than [`MAX_LINE`].
    #[error("longer than {MAX_LINE} bytes")]
    TooLong,
    /// Not a head (bad JSON, a field missing or of the wrong type, an unknown field).
    #[error("not a signed head: {0}")]
    Malformed(String),
    /// Signed by another key than the one configured.
    #[error("signed by another key ({0}…), not the configured one")]
    OtherKey(String),
    /// The signature does not verify: the line was edited or forged.
    #[error("signature does not verify (edited or forged)")]
    BadSignature,
}

/// Reads one head log line without checking its signature (see [`HeadPublicKey::verify`]).
pub fn parse_line(line: &str) -> Result<SignedHead, HeadLineError> {
    if line.len() > MAX_LINE {
        return Err(HeadLineError::TooLong);
    }
    serde_json::from_str(line).map_err(|e| HeadLineError::Malformed(e.to_string()))
}

/// The public half of a [`HeadKey`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadPublicKey(VerifyingKey);

impl HeadPublicKey {
    /// Lowercase hex of the 32 key bytes.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0.to_bytes())
    }

    /// Reads one head log line and checks it was signed by this key over its own fields.
    pub fn verify_line(&self, line: &str) -> Result<SignedHead, HeadLineError> {
        let head = parse_line(line)?;
        self.verify(&head)?;
        Ok(head)
    }

    /// Checks `head`'s signature with this key (strict verification: no malleable signatures).
    pub fn verify(&self, head: &SignedHead) -> Result<(), HeadLineError> {
        if !head.key.eq_ignore_ascii_case(&self.to_hex()) {
            let shown: String = head.key.chars().take(16).collect();
            return Err(HeadLineError::OtherKey(shown));
        }
        let mut bytes = [0_u8; 64];
        hex::decode_to_slice(&head.sig, &mut bytes).map_err(|_| HeadLineError::BadSignature)?;
        let sig = Signature::from_bytes(&bytes);
        let message = signing_message(&head.tenant, head.seq, &head.hash, &head.at);
        self.0.verify_strict(&message, &sig).map_err(|_| HeadLineError::BadSignature)
    }
}

/// A signed head's claim about one seq of a chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anchor {
    /// The seq it names.
    pub seq: u64,
    /// The hash it names.
    pub hash: String,
    /// When it was signed.
    pub at: String,
}

/// Every trusted (signature-checked) head, per tenant and seq.
#[derive(Debug, Clone, Default)]
pub struct Anchors {
    by_tenant: BTreeMap<String, BTreeMap<u64, Vec<Anchor>>>,
}

impl Anchors {
    /// No heads.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a head whose signature was checked ([`HeadPublicKey::verify`]); repeats of the same
    /// (seq, hash) keep the earliest.
    pub fn add(&mut self, head: SignedHead) {
        let at_seq = self.by_tenant.entry(head.tenant).or_default().entry(head.seq).or_default();
        if !at_seq.iter().any(|a| a.hash == head.hash) {
            at_seq.push(Anchor { seq: head.seq, hash: head.hash, at: head.at });
        }
    }

    /// Tenants with at least one head.
    pub fn tenants(&self) -> impl Iterator<Item = &str> {
        self.by_tenant.keys().map(String::as_str)
    }

    /// A check of `tenant`'s stored chain against its heads (none: an unanchored chain).
    pub fn check(&self, tenant: &str) -> TailCheck<'_> {
        TailCheck {
            tenant: tenant.to_owned(),
            anchors: self.by_tenant.get(tenant),
            last: 0,
            seen: BTreeSet::new(),
            rewritten: None,
        }
    }
}

/// Checks one tenant's stored events, pushed in seq order, against its signed heads.
#[derive(Debug)]
pub struct TailCheck<'a> {
    tenant: String,
    anchors: Option<&'a BTreeMap<u64, Vec<Anchor>>>,
    last: u64,
    seen: BTreeSet<u64>,
    rewritten: Option<Rewritten>,
}

impl TailCheck<'_> {
    /// The next stored event of the chain.
    pub fn push(&mut self, seq: u64, hash: &str) {
        self.last = self.last.max(seq);
        let Some(at_seq) = self.anchors.and_then(|a| a.get(&seq)) else { return };
        self.seen.insert(seq);
        if self.rewritten.is_none()
            && let Some(a) = at_seq.iter().find(|a| a.hash != hash)
        {
            self.rewritten = Some(Rewritten {
                seq,
                signed_at: a.at.clone(),
                problem: "the stored event's hash differs from the signed head's: the chain was rewritten at or \
                          before this seq"
                    .to_owned(),
            });
        }
    }

    /// The verdict once every stored event was pushed.
    pub fn finish(mut self) -> TailReport {
        let anchors = self.anchors;
        let newest = anchors.and_then(|a| a.iter().next_back()).and_then(|(_, list)| list.first().cloned());
        // A signed seq within the stored range that never came by: an event missing in the middle.
        if self.rewritten.is_none()
            && let Some((seq, list)) =
                anchors.and_then(|a| a.range(..=self.last).find(|(seq, _)| !self.seen.contains(seq)))
        {
            self.rewritten = Some(Rewritten {
                seq: *seq,
                signed_at: list.first().map(|a| a.at.clone()).unwrap_or_default(),
                problem: "a signed head names this seq, but no event with it is stored".to_owned(),
            });
        }
        let missing = newest.as_ref().filter(|a| a.seq > self.last).map(|a| Missing {
            from: self.last + 1,
            to: a.seq,
            signed_at: a.at.clone(),
        });
        let unanchored = match &newest {
            Some(a) => self.last.saturating_sub(a.seq),
            None => self.last,
        };
        TailReport {
            tenant: self.tenant,
            events: self.last,
            anchor: newest,
            unanchored,
            missing,
            rewritten: self.rewritten,
        }
    }
}

/// Events a signed head proves existed but the store no longer holds (the deleted tail).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// First missing seq.
    pub from: u64,
    /// Last missing seq (the newest signed head's).
    pub to: u64,
    /// When that head was signed.
    pub signed_at: String,
}

/// The first signed seq whose stored event does not match its head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rewritten {
    /// The seq.
    pub seq: u64,
    /// When the head naming it was signed.
    pub signed_at: String,
    /// What is wrong.
    pub problem: String,
}

/// One tenant's chain against its signed heads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TailReport {
    /// Tenant.
    pub tenant: String,
    /// The last stored seq (0: no events).
    pub events: u64,
    /// The newest signed head (highest seq), if any.
    pub anchor: Option<Anchor>,
    /// Stored events after the newest signed head (not yet anchored; all of them without one).
    pub unanchored: u64,
    /// The deleted tail, when the newest head names a seq past the last stored event.
    pub missing: Option<Missing>,
    /// The first signed seq that does not match the store.
    pub rewritten: Option<Rewritten>,
}

impl TailReport {
    /// Whether every signed head matches the stored chain.
    pub fn ok(&self) -> bool {
        self.missing.is_none() && self.rewritten.is_none()
    }

    /// One line for people: `anchored at seq S (signed AT)[; N later events unanchored]`, or the
    /// missing tail, or the rewritten seq.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = &self.rewritten {
            parts.push(format!("REWRITTEN at seq {} (head signed {}): {}", r.seq, r.signed_at, r.problem));
        }
        if let Some(m) = &self.missing {
            let range =
                if m.from == m.to { format!("event {}", m.from) } else { format!("events {}–{}", m.from, m.to) };
            parts.push(format!(
                "TAIL MISSING: {range} deleted (the head signed {} names seq {}, the store ends at {})",
                m.signed_at, m.to, self.events
            ));
        }
        if parts.is_empty() {
            match &self.anchor {
                Some(a) if self.unanchored > 0 => parts.push(format!(
                    "anchored at seq {} (signed {}); {} later event(s) not yet anchored",
                    a.seq, a.at, self.unanchored
                )),
                Some(a) => parts.push(format!("anchored at seq {} (signed {})", a.seq, a.at)),
                None => parts.push("no signed head: the tail is unanchored".to_owned()),
            }
        }
        parts.join("; ")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn key() -> HeadKey {
        HeadKey::from_seed(&[7; 32])
    }

    fn head(seq: u64, hash: &str) -> ChainHead {
        ChainHead { tenant: "tenant-a".into(), seq, hash: hash.into() }
    }

    #[test]
    fn keys_round_trip_through_their_text_and_bad_text_names_no_material() {
        let k = key();
        let text = k.to_text();
        assert!(text.starts_with(KEY_PREFIX) && text.len() == KEY_PREFIX.len() + 64);
        assert_eq!(HeadKey::parse(&format!("  {text}\n")).unwrap().public(), k.public());
        for bad in ["", "bridle-audit-ed25519:abc", &text.replace(KEY_PREFIX, "ed25519:"), &format!("{text}00")] {
            let e = HeadKey::parse(bad).unwrap_err();
            assert!(!e.to_string().contains(&text[KEY_PREFIX.len()..]), "{e}");
        }
        assert!(!format!("{k:?}").contains(&text[KEY_PREFIX.len()..]));
    }

    #[test]
    fn a_signed_line_verifies_and_any_edit_is_refused() {
        let k = key();
        let signed = k.sign(&head(12, "ab"), "2026-01-01T00:00:00Z");
        let line = signed.to_line();
        assert_eq!(k.public().verify_line(&line).unwrap(), signed);
        for (from, to) in
            [("\"seq\":12", "\"seq\":13"), ("tenant-a", "tenant-b"), ("\"ab\"", "\"ac\""), ("2026", "2027")]
        {
            let forged = line.replace(from, to);
            assert_ne!(forged, line);
            assert_eq!(k.public().verify_line(&forged), Err(HeadLineError::BadSignature), "{from}");
        }
        let other = HeadKey::from_seed(&[8; 32]);
        let theirs = other.sign(&head(12, "ab"), "2026-01-01T00:00:00Z").to_line();
        assert!(matches!(k.public().verify_line(&theirs), Err(HeadLineError::OtherKey(_))));
        // Their key named as ours: the signature still decides.
        let relabelled = theirs.replace(&other.public().to_hex(), &k.public().to_hex());
        assert_eq!(k.public().verify_line(&relabelled), Err(HeadLineError::BadSignature));
        assert!(matches!(k.public().verify_line("{\"seq\": 1}"), Err(HeadLineError::Malformed(_))));
        assert_eq!(k.public().verify_line(&"x".repeat(MAX_LINE + 1)), Err(HeadLineError::TooLong));
    }

    #[test]
    fn fields_cannot_bleed_into_each_other() {
        assert_ne!(signing_message("ab", 1, "c", "t"), signing_message("a", 1, "bc", "t"));
        assert_ne!(signing_message("a", 1, "b", "t"), signing_message("a", 256, "b", "t"));
        assert!(signing_message("a", 1, "b", "t").starts_with(DOMAIN));
    }

    fn anchors(heads: &[(u64, &str)]) -> Anchors {
        let mut a = Anchors::new();
        for (seq, hash) in heads {
            a.add(key().sign(&head(*seq, hash), &format!("t{seq}")));
        }
        a
    }

    fn run(a: &Anchors, stored: &[(u64, &str)]) -> TailReport {
        let mut c = a.check("tenant-a");
        for (seq, hash) in stored {
            c.push(*seq, hash);
        }
        c.finish()
    }

    #[test]
    fn a_chain_matching_its_heads_is_anchored_with_its_unanchored_tail_counted() {
        let a = anchors(&[(2, "h2"), (3, "h3")]);
        let r = run(&a, &[(1, "h1"), (2, "h2"), (3, "h3"), (4, "h4")]);
        assert!(r.ok(), "{r:?}");
        assert_eq!((r.events, r.anchor.as_ref().map(|a| a.seq), r.unanchored), (4, Some(3), 1));
        assert!(r.describe().contains("anchored at seq 3"), "{}", r.describe());
        let none = run(&Anchors::new(), &[(1, "h1")]);
        assert!(none.ok() && none.describe().contains("unanchored"));
    }

    #[test]
    fn a_deleted_tail_is_named_by_its_missing_seqs() {
        let a = anchors(&[(3, "h3"), (100, "h100")]);
        let r = run(&a, &[(1, "h1"), (2, "h2"), (3, "h3")]);
        assert_eq!(r.missing.as_ref().map(|m| (m.from, m.to)), Some((4, 100)));
        assert!(!r.ok() && r.describe().contains("events 4–100"), "{}", r.describe());
        // Every event deleted.
        let r = run(&a, &[]);
        assert_eq!(r.missing.map(|m| (m.from, m.to)), Some((1, 100)));
    }

    #[test]
    fn a_tail_deleted_then_regrown_past_the_head_is_a_rewrite() {
        let a = anchors(&[(3, "h3")]);
        let r = run(&a, &[(1, "h1"), (2, "h2"), (3, "other"), (4, "h4")]);
        assert_eq!(r.rewritten.as_ref().map(|w| w.seq), Some(3));
        assert!(!r.ok());
        // An older head still catches a tail regrown beyond a newer one.
        let a = anchors(&[(2, "h2"), (4, "h4")]);
        let r = run(&a, &[(1, "h1"), (2, "x2"), (3, "x3"), (4, "x4"), (5, "x5")]);
        assert_eq!(r.rewritten.map(|w| w.seq), Some(2));
    }

    #[test]
    fn a_signed_seq_missing_in_the_middle_is_named() {
        let a = anchors(&[(2, "h2")]);
        let r = run(&a, &[(1, "h1"), (3, "h3")]);
        assert_eq!(r.rewritten.map(|w| w.seq), Some(2));
    }
}
