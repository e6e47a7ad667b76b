//! API-key authentication through `vouch::api::handle` and the key administration of the Rust API.

mod common;

use std::collections::HashSet;

use common::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use vouch::api::Request;
use vouch::service::keys::NewApiKey;
use vouch::{ApiKey, KeyClaims};
use vouch::{ApiKeyOptions, PublicKeyOption};
use vouch::{Engine, Error, Service};

const START: &str = "/api-gateway/sessions/start";
const AVF: &str = "/api-gateway/avf/infer";

/// A request to every kind of endpoint, each carrying what it needs apart from authorization.
fn endpoints() -> Vec<Request> {
    vec![
        Request::new("POST", START),
        Request::new("POST", "/api-gateway/sessions/end/sess_1").header("X-User-Fullname", "a"),
        Request::new("POST", "/api-gateway/process-video").header("X-User-Fullname", "a"),
        Request::new("POST", "/api-consent/consent"),
        Request::new("GET", "/api-consent/status?user_fullname=a"),
        Request::new("GET", "/api-transactions/transactions"),
        Request::new("GET", "/api-transactions/transactions/req_1"),
    ]
}

fn avf_request() -> Request {
    Request::new("POST", AVF)
        .header("X-User-Fullname", "alice")
        .file_part("file", "clip.mp4", "video/mp4", mp4(64))
}

fn with_authorization(request: Request, value: &str) -> Request {
    request.header("Authorization", value)
}

#[test]
fn missing_token_is_401_everywhere() {
    let db = Db::new();
    let engine = db.open();
    for request in endpoints().into_iter().chain([avf_request()]) {
        let path = request.path.clone();
        let response = vouch::api::handle(&engine, request);
        assert_eq!(response.status, 401, "{path}");
        assert_error(&response, 401, "missing authorization token");
    }
    // Refused requests leave no transaction (there is no project to file them under).
    assert_eq!(db.count("SELECT COUNT(*) FROM transactions"), 0);
}

#[test]
fn a_header_that_is_not_bearer_is_401_invalid_format() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let values = [
        "Token x".to_owned(),
        "Bearer ".to_owned(),
        "Bearer".to_owned(),
        "Bearer    ".to_owned(),
        format!("bearer {}", key.token),
        format!("Basic {}", key.token),
        key.token.clone(),
    ];
    for value in &values {
        for request in endpoints().into_iter().chain([avf_request()]) {
            let response = vouch::api::handle(&engine, with_authorization(request, value));
            assert_error(&response, 401, "invalid api key format");
        }
    }
    assert_eq!(db.count("SELECT COUNT(*) FROM transactions"), 0);
}

#[test]
fn a_key_signed_with_another_secret_is_500_but_401_on_avf() {
    let db = Db::new();
    let engine = db.open();
    let foreign = Engine::open(options(":memory:", TEMPLATE_KEY, Some(&other_secret()))).unwrap();
    let key = create_key(&foreign, "p1");
    for request in endpoints() {
        let response = vouch::api::handle(&engine, request.bearer(&key.token));
        assert_error(&response, 500, "invalid api key: signature does not verify");
    }
    let response = vouch::api::handle(&engine, avf_request().bearer(&key.token));
    assert_error(&response, 401, "invalid api key: signature does not verify");
    // The foreign key was not recorded as seen.
    assert!(engine.api_keys().list("p1").unwrap().is_empty());
    assert_eq!(db.count("SELECT COUNT(*) FROM api_keys"), 0);
}

#[test]
fn malformed_tokens_are_500_but_401_on_avf() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let mut truncated = key.token.clone();
    truncated.truncate(key.token.rfind('.').unwrap());
    for token in ["abc", "a.b.c", "x.y", truncated.as_str()] {
        let response = vouch::api::handle(&engine, authed("POST", START, token));
        assert_error(&response, 500, "invalid api key: malformed token");
        let response = vouch::api::handle(&engine, avf_request().bearer(token));
        assert_error(&response, 401, "invalid api key: malformed token");
    }
    // A signature from another token: valid shape, wrong signature.
    let other = create_key(&engine, "p1");
    let (head, _) = key.token.rsplit_once('.').unwrap();
    let (_, signature) = other.token.rsplit_once('.').unwrap();
    let spliced = format!("{head}.{signature}");
    let response = vouch::api::handle(&engine, authed("POST", START, &spliced));
    assert_error(&response, 500, "invalid api key: signature does not verify");
}

#[test]
fn unusable_claims_are_refused() {
    let db = Db::new();
    let engine = db.open();
    let backend = backend_verifier(SECRET);
    let mut palm = claims("p1", "key_palm");
    palm.selected_services = vec!["Palm Reading".to_owned()];
    let response = vouch::api::handle(
        &engine,
        authed("POST", START, &backend.mint(&palm).unwrap()),
    );
    assert_error(
        &response,
        500,
        "invalid api key: unknown service \"Palm Reading\" in selected_services; known services: \
         Active Speaker Detection, Visual Speech Recognition, Face Liveness Detection, \
         Voice Recognition, Face Recognition",
    );
    let empty_project = backend.mint(&claims("", "key_x")).unwrap();
    let response = vouch::api::handle(&engine, authed("POST", START, &empty_project));
    assert_error(
        &response,
        500,
        "invalid api key: claim project_id must be 1 to 128 printable characters",
    );
    // Claims that are not a key's claims at all.
    let encoding = EncodingKey::from_secret(b"secret-secret-secret-secret-secret");
    let no_project = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &serde_json::json!({"id": "k", "selected_services": []}),
        &encoding,
    )
    .unwrap();
    let response = vouch::api::handle(&engine, authed("POST", START, &no_project));
    assert_eq!(response.status, 500);
    let text = response.error_text().unwrap();
    assert!(
        text.starts_with("invalid api key: unusable claims: missing field `project_id`"),
        "{text}"
    );
    // HS384 with the same secret is not an accepted algorithm.
    let hs384 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS384),
        &claims("p1", "key_384"),
        &encoding,
    )
    .unwrap();
    let response = vouch::api::handle(&engine, authed("POST", START, &hs384));
    assert_error(
        &response,
        500,
        "invalid api key: algorithm HS384 is not accepted",
    );
    assert_eq!(db.count("SELECT COUNT(*) FROM api_keys"), 0);
}

#[test]
fn an_exp_claim_is_checked_against_the_engine_clock() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let expires_at = START_MS / 1000 + 10;
    let token = backend_verifier(SECRET)
        .mint(&KeyClaims {
            exp: Some(expires_at),
            ..claims("p1", "key_expiring")
        })
        .unwrap();
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &token)).status,
        200
    );
    clock.set(expires_at * 1000 - 1);
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &token)).status,
        200
    );
    clock.set(expires_at * 1000);
    let response = vouch::api::handle(&engine, authed("POST", START, &token));
    assert_error(&response, 500, "api key has expired");
    let response = vouch::api::handle(&engine, avf_request().bearer(&token));
    assert_error(&response, 401, "api key has expired");
    let error = engine
        .api_keys()
        .authenticate(Some(&format!("Bearer {token}")))
        .unwrap_err();
    assert_eq!(error.to_string(), "api key has expired");
    // Going back in time makes it valid again: only the engine clock counts.
    clock.set(START_MS);
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &token)).status,
        200
    );
}

#[test]
fn an_nbf_claim_is_checked_against_the_engine_clock() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let not_before = START_MS / 1000 + 10;
    let token = backend_verifier(SECRET)
        .mint(&KeyClaims {
            nbf: Some(not_before),
            ..claims("p1", "key_later")
        })
        .unwrap();
    let response = vouch::api::handle(&engine, authed("POST", START, &token));
    assert_error(&response, 500, "api key is not valid yet");
    let response = vouch::api::handle(&engine, avf_request().bearer(&token));
    assert_error(&response, 401, "api key is not valid yet");
    clock.set(not_before * 1000);
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &token)).status,
        200
    );
}

#[test]
fn revoked_keys_are_not_active() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let key = create_key(&engine, "p1");
    let kept = create_key(&engine, "p1");
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &key.token)).status,
        200
    );
    clock.advance(2_000);
    let info = engine.api_keys().revoke("p1", &key.id).unwrap();
    assert_eq!(info.status, "revoked");
    assert_eq!(info.revoked_at.as_deref(), Some("2026-11-21T10:32:07.123Z"));
    for request in endpoints() {
        let response = vouch::api::handle(&engine, request.bearer(&key.token));
        assert_error(&response, 500, "api key is not active");
    }
    let response = vouch::api::handle(&engine, avf_request().bearer(&key.token));
    assert_error(&response, 401, "api key is not active");
    // Other keys of the project are untouched.
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &kept.token)).status,
        200
    );
    // Revoking again keeps the first revocation time.
    clock.advance(5_000);
    let again = engine.api_keys().revoke("p1", &key.id).unwrap();
    assert_eq!(
        again.revoked_at.as_deref(),
        Some("2026-11-21T10:32:07.123Z")
    );
    // Revocation survives a reopen.
    drop(engine);
    let engine = db.open_with_clock(&clock);
    let response = vouch::api::handle(&engine, authed("POST", START, &key.token));
    assert_error(&response, 500, "api key is not active");
}

#[test]
fn revoking_needs_the_right_project_and_an_existing_key() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    match engine.api_keys().revoke("p2", &key.id) {
        Err(Error::NotFound(text)) => {
            assert_eq!(text, format!("api key {} not found in project p2", key.id))
        }
        other => panic!("{other:?}"),
    }
    match engine.api_keys().revoke("p1", "key_missing") {
        Err(Error::NotFound(text)) => {
            assert_eq!(text, "api key key_missing not found in project p1")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &key.token)).status,
        200
    );
}

#[test]
fn keys_minted_elsewhere_are_recorded_as_seen_and_can_be_revoked() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let created = create_key(&engine, "p1");
    clock.advance(1_000);
    let mut backend_claims = claims("p1", "backend-key-1");
    backend_claims.scores_id = Some("gold".to_owned());
    backend_claims.selected_services = vec![
        "Voice Recognition".to_owned(),
        "Face Liveness Detection".to_owned(),
        "Voice Recognition".to_owned(),
    ];
    let token = backend_verifier(SECRET).mint(&backend_claims).unwrap();
    assert_eq!(engine.api_keys().list("p1").unwrap().len(), 1);

    let key = engine
        .api_keys()
        .authenticate(Some(&format!("Bearer {token}")))
        .unwrap();
    assert_eq!(
        key,
        ApiKey {
            key_id: "backend-key-1".to_owned(),
            project_id: "p1".to_owned(),
            services: vec![Service::VoiceRecognition, Service::FaceLivenessDetection],
            scores_id: Some("gold".to_owned()),
        }
    );
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &token)).status,
        200
    );
    let keys = engine.api_keys().list("p1").unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(
        (keys[0].id.as_str(), keys[0].origin),
        (created.id.as_str(), "created")
    );
    let seen = &keys[1];
    assert_eq!(seen.id, "backend-key-1");
    assert_eq!(seen.origin, "seen");
    assert_eq!(seen.status, "active");
    assert_eq!(seen.project_id, "p1");
    assert_eq!(seen.scores_id.as_deref(), Some("gold"));
    assert_eq!(seen.label, None);
    assert_eq!(
        seen.selected_services,
        vec!["Voice Recognition", "Face Liveness Detection"]
    );
    assert_eq!(seen.created_at, "2026-11-21T10:32:06.123Z");
    assert_eq!(
        db.count("SELECT COUNT(*) FROM api_keys WHERE origin = 'seen'"),
        1
    );

    engine.api_keys().revoke("p1", "backend-key-1").unwrap();
    let response = vouch::api::handle(&engine, authed("POST", START, &token));
    assert_error(&response, 500, "api key is not active");
    let keys = engine.api_keys().list("p1").unwrap();
    assert_eq!((keys[1].origin, keys[1].status), ("seen", "revoked"));
}

#[test]
fn a_key_id_of_another_project_is_refused() {
    let db = Db::new();
    let engine = db.open();
    let key = create_key(&engine, "p1");
    let token = backend_verifier(SECRET)
        .mint(&claims("p2", &key.id))
        .unwrap();
    let response = vouch::api::handle(&engine, authed("POST", START, &token));
    assert_error(
        &response,
        500,
        "invalid api key: key id belongs to another project",
    );
    assert!(engine.api_keys().list("p2").unwrap().is_empty());
}

#[test]
fn creating_and_listing_keys_through_the_rust_api() {
    let db = Db::new();
    let clock = manual_clock();
    let engine = db.open_with_clock(&clock);
    let created = engine
        .api_keys()
        .create(&NewApiKey {
            project_id: "p1".to_owned(),
            selected_services: vec![
                "Face Recognition".to_owned(),
                "Active Speaker Detection".to_owned(),
                "Face Recognition".to_owned(),
            ],
            scores_id: Some("strict".to_owned()),
            label: Some("kiosk 3".to_owned()),
        })
        .unwrap();
    assert!(created.id.starts_with("key_"));
    assert_eq!(created.id.len(), 4 + 32);
    assert_eq!(created.project_id, "p1");
    assert_eq!(
        created.selected_services,
        vec!["Face Recognition", "Active Speaker Detection"]
    );
    assert_eq!(created.scores_id.as_deref(), Some("strict"));
    assert_eq!(created.label.as_deref(), Some("kiosk 3"));
    assert_eq!(created.created_at, START_TEXT);
    let key = engine
        .api_keys()
        .authenticate(Some(&format!("Bearer {}", created.token)))
        .unwrap();
    assert_eq!(key.key_id, created.id);
    assert_eq!(
        key.services,
        vec![Service::FaceRecognition, Service::ActiveSpeakerDetection]
    );

    clock.advance(10);
    let second = create_key(&engine, "p1");
    let other_project = create_key(&engine, "p2");
    assert_ne!(second.id, created.id);
    assert_ne!(second.token, created.token);
    let listed = engine.api_keys().list("p1").unwrap();
    let ids: Vec<&str> = listed.iter().map(|k| k.id.as_str()).collect();
    assert_eq!(ids, vec![created.id.as_str(), second.id.as_str()]);
    assert_eq!(listed[0].label.as_deref(), Some("kiosk 3"));
    assert_eq!(listed[0].revoked_at, None);
    assert_eq!(listed[1].created_at, "2026-11-21T10:32:05.133Z");
    let p2: Vec<String> = engine
        .api_keys()
        .list("p2")
        .unwrap()
        .into_iter()
        .map(|k| k.id)
        .collect();
    assert_eq!(p2, vec![other_project.id]);
    // The token is never stored.
    let stored: i64 = db.count(&format!(
        "SELECT COUNT(*) FROM api_keys WHERE replace(selected_services || coalesce(label, ''), \
         '{0}', '') <> selected_services || coalesce(label, '')",
        &created.token[..20]
    ));
    assert_eq!(stored, 0);
}

#[test]
fn invalid_new_keys_are_rejected() {
    let db = Db::new();
    let engine = db.open();
    let new_key =
        |project: &str, services: &[&str], scores: Option<&str>, label: Option<&str>| NewApiKey {
            project_id: project.to_owned(),
            selected_services: services.iter().map(|s| (*s).to_owned()).collect(),
            scores_id: scores.map(str::to_owned),
            label: label.map(str::to_owned),
        };
    let cases = [
        (
            new_key("", &["Face Recognition"], None, None),
            "claim project_id must be 1 to 128 printable characters",
        ),
        (
            new_key("p1", &["Face Recognition"], Some(""), None),
            "claim scores_id must be 1 to 128 printable characters",
        ),
        (
            new_key("p1", &["face recognition"], None, None),
            "unknown service \"face recognition\" in selected_services; known services: \
             Active Speaker Detection, Visual Speech Recognition, Face Liveness Detection, \
             Voice Recognition, Face Recognition",
        ),
        (
            new_key("p1", &["Face Recognition"], None, Some("line\nbreak")),
            "label must be at most 256 printable characters",
        ),
    ];
    for (new_key, expected) in cases {
        match engine.api_keys().create(&new_key) {
            Err(Error::InvalidArgument(text)) => assert_eq!(text, expected),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(db.count("SELECT COUNT(*) FROM api_keys"), 0);
}

#[test]
fn an_engine_without_a_secret_cannot_mint_nor_accept_hs256() {
    let db = Db::new();
    let engine = Engine::open(options(db.path_str(), TEMPLATE_KEY, None)).unwrap();
    match engine.api_keys().create(&NewApiKey {
        project_id: "p1".to_owned(),
        selected_services: vec![],
        scores_id: None,
        label: None,
    }) {
        Err(Error::InvalidArgument(text)) => assert_eq!(
            text,
            "creating api keys needs api_keys.hs256_secret in the engine options"
        ),
        other => panic!("{other:?}"),
    }
    let token = backend_verifier(SECRET).mint(&claims("p1", "k1")).unwrap();
    let response = vouch::api::handle(&engine, authed("POST", START, &token));
    assert_error(
        &response,
        500,
        "invalid api key: HS256 keys are not accepted by this engine",
    );
}

#[test]
fn request_ids_are_returned_on_auth_failures_and_unique() {
    let db = Db::new();
    let engine = db.open();
    let mut ids = HashSet::new();
    for value in ["", "Token x", "Bearer abc"] {
        let mut request = Request::new("POST", START);
        if !value.is_empty() {
            request = request.header("Authorization", value);
        }
        let response = vouch::api::handle(&engine, request);
        assert!(response.status == 401 || response.status == 500);
        assert_eq!(response.request_id().len(), 4 + 32);
        assert!(ids.insert(response.request_id().to_owned()));
    }
}

// --- EdDSA: RFC 8032 test vectors 1 and 2 (seed, public key). ---

const SEED_1: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const PUBLIC_1: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
const SEED_2: &str = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// PKCS#8 v1 DER of an Ed25519 private key seed.
fn ed_private_der(seed_hex: &str) -> Vec<u8> {
    let mut der = hex("302e020100300506032b657004220420");
    der.extend(hex(seed_hex));
    der
}

/// SubjectPublicKeyInfo PEM of an Ed25519 public key.
fn ed_public_pem(public_hex: &str) -> String {
    let mut der = hex("302a300506032b6570032100");
    der.extend(hex(public_hex));
    format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        b64(&der)
    )
}

fn eddsa_token(seed_hex: &str, kid: Option<&str>, claims: &KeyClaims) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(
        &header,
        claims,
        &EncodingKey::from_ed_der(&ed_private_der(seed_hex)),
    )
    .unwrap()
}

fn eddsa_engine(db: &Db, kid: Option<&str>, with_secret: bool) -> Engine {
    let mut options = options(db.path_str(), TEMPLATE_KEY, with_secret.then_some(SECRET));
    options.api_keys = ApiKeyOptions {
        hs256_secret: options.api_keys.hs256_secret,
        public_keys: vec![PublicKeyOption {
            kid: kid.map(str::to_owned),
            algorithm: "EdDSA".to_owned(),
            pem: ed_public_pem(PUBLIC_1),
        }],
    };
    Engine::open(options).unwrap()
}

#[test]
fn eddsa_keys_from_the_backend_are_accepted() {
    let db = Db::new();
    let engine = eddsa_engine(&db, Some("backend-1"), false);
    let good = claims("p1", "ed-key-1");
    for kid in [Some("backend-1"), None] {
        let token = eddsa_token(SEED_1, kid, &good);
        let response = vouch::api::handle(&engine, authed("POST", START, &token));
        assert_eq!(response.status, 200, "{kid:?}: {:?}", response.body);
    }
    let keys = engine.api_keys().list("p1").unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!((keys[0].id.as_str(), keys[0].origin), ("ed-key-1", "seen"));

    // Another kid than the configured one.
    let token = eddsa_token(SEED_1, Some("backend-2"), &claims("p1", "ed-key-2"));
    let response = vouch::api::handle(&engine, authed("POST", START, &token));
    assert_error(
        &response,
        500,
        "invalid api key: no verification key for algorithm EdDSA and kid \"backend-2\"",
    );
    // Signed by another Ed25519 key.
    let token = eddsa_token(SEED_2, Some("backend-1"), &claims("p1", "ed-key-3"));
    let response = vouch::api::handle(&engine, authed("POST", START, &token));
    assert_error(&response, 500, "invalid api key: signature does not verify");
    let response = vouch::api::handle(&engine, avf_request().bearer(&token));
    assert_error(&response, 401, "invalid api key: signature does not verify");
    // A token whose payload was swapped keeps the signature of the original payload.
    let original = eddsa_token(SEED_1, Some("backend-1"), &claims("p1", "ed-key-1"));
    let forged_payload = eddsa_token(SEED_2, Some("backend-1"), &claims("p2", "ed-key-1"));
    let parts: Vec<&str> = original.split('.').collect();
    let forged: Vec<&str> = forged_payload.split('.').collect();
    let spliced = format!("{}.{}.{}", parts[0], forged[1], parts[2]);
    let response = vouch::api::handle(&engine, authed("POST", START, &spliced));
    assert_error(&response, 500, "invalid api key: signature does not verify");
    // Revocation works for EdDSA keys too.
    engine.api_keys().revoke("p1", "ed-key-1").unwrap();
    let response = vouch::api::handle(&engine, authed("POST", START, &original));
    assert_error(&response, 500, "api key is not active");
    // Without a secret the engine accepts no HS256 key, and with one HS256 keeps working.
    let hs = backend_verifier(SECRET)
        .mint(&claims("p1", "hs-1"))
        .unwrap();
    let response = vouch::api::handle(&engine, authed("POST", START, &hs));
    assert_error(
        &response,
        500,
        "invalid api key: HS256 keys are not accepted by this engine",
    );
    drop(engine);
    let engine = eddsa_engine(&db, None, true);
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &hs)).status,
        200
    );
    let token = eddsa_token(SEED_1, Some("any-kid"), &claims("p1", "ed-key-4"));
    let response = vouch::api::handle(&engine, authed("POST", START, &token));
    assert_error(
        &response,
        500,
        "invalid api key: no verification key for algorithm EdDSA and kid \"any-kid\"",
    );
    let token = eddsa_token(SEED_1, None, &claims("p1", "ed-key-4"));
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &token)).status,
        200
    );
}

#[test]
fn an_unusable_public_key_fails_at_open() {
    let db = Db::new();
    let mut options = options(db.path_str(), TEMPLATE_KEY, None);
    options.api_keys.public_keys = vec![PublicKeyOption {
        kid: None,
        algorithm: "EdDSA".to_owned(),
        pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n".to_owned(),
    }];
    let error = Engine::open(options).unwrap_err();
    assert!(matches!(error, Error::InvalidOptions(_)), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with("invalid options: api_keys.public_keys[0].pem is not a usable key: "),
        "{error}"
    );
}

// --- ES256: a P-256 key pair made for this test only (openssl ecparam -name prime256v1). ---

const ES256_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg9ySIodbOY2IViLSD
EgTYeuPoE01DYTQMpEI8whBUHumhRANCAAR53ghI5yN/Tx/exn8RqvLbd/V6dHrV
u9xMiVydOvqFPFvs2GR+ONOYM7SaKdUAtf0apiFQYj3z3c4mE2tpJoQ7
-----END PRIVATE KEY-----
";
const ES256_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEed4ISOcjf08f3sZ/Eary23f1enR6
1bvcTIlcnTr6hTxb7NhkfjjTmDO0minVALX9GqYhUGI9893OJhNraSaEOw==
-----END PUBLIC KEY-----
";

#[test]
fn es256_keys_from_the_backend_are_accepted_and_checked() {
    let db = Db::new();
    let mut options = options(db.path_str(), TEMPLATE_KEY, None);
    options.api_keys.public_keys = vec![PublicKeyOption {
        kid: None,
        algorithm: "ES256".to_owned(),
        pem: ES256_PUBLIC.to_owned(),
    }];
    let engine = Engine::open(options).unwrap();
    let signing = EncodingKey::from_ec_pem(ES256_PRIVATE.as_bytes()).unwrap();
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::ES256),
        &claims("p1", "es-key-1"),
        &signing,
    )
    .unwrap();
    assert_eq!(
        vouch::api::handle(&engine, authed("POST", START, &token)).status,
        200
    );
    // A one-character change in the signature must fail verification.
    let (head, signature) = token.rsplit_once('.').unwrap();
    let flipped = if signature.starts_with('A') { 'B' } else { 'A' };
    let tampered = format!("{head}.{flipped}{}", &signature[1..]);
    let response = vouch::api::handle(&engine, authed("POST", START, &tampered));
    assert_eq!(response.status, 500);
    assert!(response
        .error_text()
        .unwrap()
        .starts_with("invalid api key: "));
    // EdDSA tokens find no EdDSA key on this engine.
    let eddsa = eddsa_token(SEED_1, None, &claims("p1", "ed-key-9"));
    assert_error(
        &vouch::api::handle(&engine, authed("POST", START, &eddsa)),
        500,
        "invalid api key: no verification key for algorithm EdDSA",
    );
}
