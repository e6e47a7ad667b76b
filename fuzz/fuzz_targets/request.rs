//! The request surface: arbitrary methods, paths, headers, JSON bodies and parts through
//! `vouch::api::handle`. Every input must produce a response with `X-Request-Id` and never panic.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use vouch::api::{Part, Request};
use vouch::service::keys::NewApiKey;
use vouch::Engine;

fn engine() -> &'static (Engine, String) {
    static ENGINE: OnceLock<(Engine, String)> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let engine = Engine::open_json(
            r#"{"database":":memory:","template_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                "api_keys":{"hs256_secret":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="}}"#,
        )
        .expect("engine opens");
        let key = engine
            .api_keys()
            .create(&NewApiKey {
                project_id: "fuzz".into(),
                selected_services: vec!["Face Recognition".into()],
                scores_id: None,
                label: None,
            })
            .expect("key");
        (engine, key.token)
    })
}

const PATHS: &[&str] = &[
    "/api-gateway/sessions/start",
    "/api-gateway/sessions/end/",
    "/api-gateway/process-video",
    "/api-gateway/enroll/face",
    "/api-gateway/docauth/check",
    "/api-gateway/match-faces",
    "/api-gateway/avf/infer",
    "/api-gateway/avf/status/",
    "/api-gateway/attempts",
    "/api-gateway/attempts/reset",
    "/api-consent/consent",
    "/api-consent/strg-consent",
    "/api-consent/status?user_fullname=",
    "/api-transactions/transactions?",
    "/api-transactions/transactions/",
    "/jobs",
    "/jobs/",
    "/schedules",
    "/schedules/",
    "/alerts/",
    "/signing-secrets",
    "/api-projects/webhooks",
    "/api-projects/webhooks/",
    "/api-projects/sessions/",
    "/stats/jobs?days=",
    "/stats/usage?days=",
];
const HEADERS: &[&str] = &[
    "X-User-Fullname",
    "X-Session-ID",
    "X-Device-Info",
    "X-Geo-Location",
    "X-Action-Trigger",
    "X-Request-Tags",
    "X-Use-Prefilled-Video",
    "Authorization",
];

fuzz_target!(|data: &[u8]| {
    let (engine, token) = engine();
    // Input layout: a selector byte, then fields separated by 0xFF.
    let Some((&selector, rest)) = data.split_first() else { return };
    let fields: Vec<&[u8]> = rest.split(|byte| *byte == 0xFF).collect();
    let text = |index: usize| String::from_utf8_lossy(fields.get(index).copied().unwrap_or_default()).into_owned();
    let method = if selector & 1 == 0 { "POST" } else { "GET" };
    let path = format!("{}{}", PATHS[selector as usize % PATHS.len()], text(0));
    let mut request = Request::new(method, &path);
    if selector & 2 == 0 {
        request = request.bearer(token);
    }
    for (index, header) in HEADERS.iter().enumerate() {
        if selector.rotate_left(index as u32) & 4 != 0 {
            request = request.header(header, &text(1 + index));
        }
    }
    if let Some(body) = fields.get(9) {
        request.body = Some(body.to_vec());
    }
    for (index, name) in ["video", "phrase", "face", "document", "image", "file", "is_document"].iter().enumerate() {
        if let Some(part) = fields.get(10 + index) {
            request.parts.push(Part { name: (*name).to_owned(), data: part.to_vec(), ..Part::default() });
        }
    }
    let response = vouch::api::handle(&engine, request);
    assert!(!response.request_id().is_empty());
    assert!((200..600).contains(&response.status));
});
