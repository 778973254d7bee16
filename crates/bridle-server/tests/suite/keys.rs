//! RS256 and ES256 verification from a PEM public key and from a JWKS file (test-only keys in
//! `tests/data/`), and the algorithm-confusion attack: an HS256 token "signed" with the public
//! key is refused.

use std::path::{Path, PathBuf};

use bridle_server::auth::{AuthConfig, AuthError, KeySource, Verifier};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn claims() -> Value {
    let exp = time::OffsetDateTime::now_utc().unix_timestamp() + 600;
    json!({"sub": "requester-1", "tenant": "tenant-a", "services": ["checkout"], "scopes": ["service:read"],
           "exp": exp, "iss": "bridle", "aud": "bridle"})
}

fn private(alg: Algorithm) -> EncodingKey {
    match alg {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(&std::fs::read(data("rs256-private.pem")).unwrap()).unwrap(),
        _ => EncodingKey::from_ec_pem(&std::fs::read(data("es256-private.pem")).unwrap()).unwrap(),
    }
}

fn sign(alg: Algorithm, kid: Option<&str>) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, &claims(), &private(alg)).unwrap()
}

fn verifier(keys: KeySource) -> Verifier {
    Verifier::new(&AuthConfig::new(keys)).unwrap()
}

#[test]
fn pem_public_keys_verify_rs256_and_es256() {
    for (alg, file) in [(Algorithm::RS256, "rs256-public.pem"), (Algorithm::ES256, "es256-public.pem")] {
        let v = verifier(KeySource::PemFile(data(file)));
        let p = v.verify(&sign(alg, None)).unwrap();
        assert!(v.verify(&sign(alg, Some("idp-key-7"))).is_ok(), "a PEM key takes any `kid`");
        assert_eq!((p.subject.as_str(), p.tenant.as_str()), ("requester-1", "tenant-a"));
        // The other algorithm's token does not verify with this key.
        let other = if alg == Algorithm::RS256 { Algorithm::ES256 } else { Algorithm::RS256 };
        assert!(matches!(v.verify(&sign(other, None)), Err(AuthError::Invalid(_))), "{alg:?}");
    }
}

#[test]
fn an_hs256_token_keyed_with_the_public_key_is_refused() {
    let public = std::fs::read(data("rs256-public.pem")).unwrap();
    let forged = bridle_server::auth::encode_hs256(&public, &claims()).unwrap();
    let v = verifier(KeySource::PemFile(data("rs256-public.pem")));
    assert!(matches!(v.verify(&forged), Err(AuthError::Invalid(_))));
}

#[test]
fn jwks_keys_are_chosen_by_kid() {
    let mut rsa = Jwk::from_encoding_key(&private(Algorithm::RS256), Algorithm::RS256).unwrap();
    rsa.common.key_id = Some("rsa-1".into());
    let mut ec = Jwk::from_encoding_key(&private(Algorithm::ES256), Algorithm::ES256).unwrap();
    ec.common.key_id = Some("ec-1".into());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, serde_json::to_vec(&JwkSet { keys: vec![rsa, ec] }).unwrap()).unwrap();
    let v = verifier(KeySource::JwksFile(path));
    assert!(v.verify(&sign(Algorithm::RS256, Some("rsa-1"))).is_ok());
    assert!(v.verify(&sign(Algorithm::ES256, Some("ec-1"))).is_ok());
    assert!(v.verify(&sign(Algorithm::ES256, None)).is_ok(), "without a `kid`, each key of the algorithm is tried");
    for (alg, kid) in [(Algorithm::RS256, "nobody"), (Algorithm::RS256, "ec-1"), (Algorithm::ES256, "rsa-1")] {
        assert!(matches!(v.verify(&sign(alg, Some(kid))), Err(AuthError::Invalid(_))), "{alg:?} {kid}");
    }
}

#[test]
fn unusable_key_files_fail_at_start_up() {
    let config = AuthConfig::new;
    let missing = Verifier::new(&config(KeySource::PemFile(data("nothing.pem"))));
    assert!(matches!(missing, Err(AuthError::Config(m)) if m.contains("cannot read")));
    let not_a_key = Verifier::new(&config(KeySource::PemFile(data("README.md"))));
    assert!(matches!(not_a_key, Err(AuthError::Config(_))));
    let short = Verifier::new(&config(KeySource::Secret(b"short".to_vec())));
    assert!(matches!(short, Err(AuthError::Config(m)) if m.contains("at least 32 bytes")));
}
