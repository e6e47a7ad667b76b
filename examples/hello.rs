//! The same job as `examples/hello.c`, in Rust: open an engine, create a key, start a session, give
//! both consents, print every response. Run with `cargo run --example hello`.

use serde_json::json;
use vouch::api::Request;
use vouch::service::keys::NewApiKey;
use vouch::Engine;

fn main() -> Result<(), vouch::Error> {
    // A real app keeps these keys in the platform's keystore; fixed values keep the example short.
    let engine = Engine::open_json(
        r#"{
            "database": ":memory:",
            "template_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
            "api_keys": { "hs256_secret": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA==" }
        }"#,
    )?;
    let key = engine.api_keys().create(&NewApiKey {
        project_id: "hello".into(),
        selected_services: vec!["Face Recognition".into(), "Voice Recognition".into()],
        scores_id: None,
        label: None,
    })?;

    let started = vouch::api::handle(
        &engine,
        Request::new("POST", "/api-gateway/sessions/start").bearer(&key.token),
    );
    println!("{} {}", started.status, started.body);
    let session = started.body["data"].as_str().unwrap_or_default().to_owned();

    for path in ["/api-consent/consent", "/api-consent/strg-consent"] {
        let response = vouch::api::handle(
            &engine,
            Request::new("POST", path)
                .bearer(&key.token)
                .header("X-Session-ID", &session)
                .json(&json!({ "is_consent_given": true, "user_fullname": "alice" })),
        );
        println!("{} {}", response.status, response.body);
    }
    Ok(())
}
