//! Several threads sharing one engine on a file database, and two engines on one file.

mod common;

use std::sync::{Arc, Barrier};
use std::thread;

use common::*;
use vouch::service::{ConsentKind, Modality, TemplateModel};
use vouch::Engine;

const THREADS: usize = 4;
const ROUNDS: usize = 20;

/// One round: start a session, give consent in it, use it, end it with a phone number.
fn round(engine: &Engine, token: &str, fullname: &str) -> Vec<u16> {
    let start = vouch::api::handle(engine, authed("POST", "/api-gateway/sessions/start", token));
    let session = start.body["data"].as_str().unwrap_or_default().to_owned();
    let consent = vouch::api::handle(
        engine,
        consent_request(token, false, fullname, true).header("X-Session-ID", &session),
    );
    let media = vouch::api::handle(
        engine,
        gateway("/api-gateway/match-faces", token, fullname)
            .header("X-Session-ID", &session)
            .header("X-Use-Prefilled-Video", "true"),
    );
    let mut end = gateway(
        &format!("/api-gateway/sessions/end/{session}"),
        token,
        fullname,
    );
    end.body = Some(br#"{"phone_number":"+4915112345678"}"#.to_vec());
    let end = vouch::api::handle(engine, end);
    vec![start.status, consent.status, media.status, end.status]
}

#[test]
fn threads_share_one_engine() {
    let db = Db::new();
    let engine = Arc::new(db.open());
    let key = create_key(&engine, "p1");
    // A backend key none of the threads has presented yet: all of them record it at once.
    let backend = backend_verifier(SECRET)
        .mint(&claims("p1", "backend-shared"))
        .unwrap();
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|index| {
            let engine = Arc::clone(&engine);
            let barrier = Arc::clone(&barrier);
            let token = key.token.clone();
            let backend = backend.clone();
            thread::spawn(move || {
                let fullname = format!("user-{index}");
                barrier.wait();
                let first = vouch::api::handle(
                    &engine,
                    authed("POST", "/api-gateway/sessions/start", &backend),
                );
                assert_eq!(first.status, 200, "{:?}", first.body);
                let mut ids = vec![first.request_id().to_owned()];
                for _ in 0..ROUNDS {
                    assert_eq!(round(&engine, &token, &fullname), vec![200, 200, 400, 200]);
                }
                ids.push(
                    vouch::api::handle(&engine, consent_request(&token, true, &fullname, true))
                        .request_id()
                        .to_owned(),
                );
                ids
            })
        })
        .collect();
    let mut request_ids = Vec::new();
    for handle in handles {
        request_ids.extend(handle.join().expect("thread finished"));
    }
    let rounds = (THREADS * ROUNDS) as i64;
    let threads = THREADS as i64;
    // 4 rows per round, plus each thread's backend start and storage consent.
    assert_eq!(
        db.count("SELECT COUNT(*) FROM transactions"),
        4 * rounds + 2 * threads
    );
    assert_eq!(
        db.count("SELECT COUNT(DISTINCT request_id) FROM transactions"),
        4 * rounds + 2 * threads
    );
    assert_eq!(db.count("SELECT COUNT(*) FROM sessions"), rounds + threads);
    assert_eq!(
        db.count("SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL"),
        rounds
    );
    // No SIM-swap provider is configured: every check is recorded as unavailable.
    assert_eq!(
        db.count("SELECT COUNT(*) FROM sim_swap_results WHERE status = 'unavailable'"),
        rounds
    );
    assert_eq!(db.count("SELECT COUNT(*) FROM users"), threads);
    assert_eq!(db.count("SELECT COUNT(*) FROM consents"), 2 * threads);
    assert_eq!(
        db.count("SELECT COUNT(*) FROM api_keys WHERE id = 'backend-shared'"),
        1
    );
    // Every session is locked to the thread's user that used it.
    for index in 0..THREADS {
        let fullname = format!("user-{index}");
        let locked: i64 = db.sql().query_row(
            "SELECT COUNT(*) FROM sessions WHERE user_fullname = ?1",
            &[&fullname],
            |row| row.get(0),
        );
        assert_eq!(locked, ROUNDS as i64, "{fullname}");
        let state = engine.consents().get("p1", &fullname).unwrap();
        assert!(state.authorization.given && state.storage.given);
    }
    // Each returned request id is a stored transaction.
    for id in &request_ids {
        assert!(engine.audit().get("p1", id).unwrap().is_some(), "{id}");
    }
}

#[test]
fn threads_race_for_one_session() {
    let db = Db::new();
    let engine = Arc::new(db.open());
    let key = create_key(&engine, "p1");
    let session = start_session(&engine, &key.token);
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|index| {
            let engine = Arc::clone(&engine);
            let barrier = Arc::clone(&barrier);
            let token = key.token.clone();
            let session = session.clone();
            thread::spawn(move || {
                barrier.wait();
                let fullname = format!("user-{index}");
                // process-video passes the lock, then needs models this engine lacks (500).
                vouch::api::handle(
                    &engine,
                    gateway("/api-gateway/process-video", &token, &fullname)
                        .header("X-Session-ID", &session)
                        .file_part(
                            "video",
                            "v.mp4",
                            "video/mp4",
                            b"\0\0\0\x18ftypmp42".to_vec(),
                        )
                        .text_part("phrase", "one two three"),
                )
                .status
            })
        })
        .collect();
    let mut statuses: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    statuses.sort_unstable();
    // Exactly one user wins the lock; everyone else is refused.
    assert_eq!(statuses, vec![403, 403, 403, 500]);
    let record = engine.sessions().get("p1", &session).unwrap().unwrap();
    assert!(record.user_fullname.unwrap().starts_with("user-"));
}

#[test]
fn two_engines_on_one_file_write_at_once() {
    let db = Db::new();
    let first = Arc::new(db.open());
    let second = Arc::new(db.open());
    let key = create_key(&first, "p1");
    let model = TemplateModel {
        model_id: "m".to_owned(),
        model_version: 1,
    };
    for engine in [&first, &second] {
        for kind in [ConsentKind::Authorization, ConsentKind::Storage] {
            engine.consents().set("p1", "alice", kind, true).unwrap();
        }
    }
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = [Arc::clone(&first), Arc::clone(&second)]
        .into_iter()
        .map(|engine| {
            let barrier = Arc::clone(&barrier);
            let token = key.token.clone();
            let model = model.clone();
            thread::spawn(move || {
                barrier.wait();
                for i in 0..25u8 {
                    let response = vouch::api::handle(
                        &engine,
                        authed("POST", "/api-gateway/sessions/start", &token),
                    );
                    assert_eq!(response.status, 200, "{:?}", response.body);
                    engine
                        .store()
                        .insert_template("p1", "alice", Modality::Face, &model, &[i; 8], 0)
                        .unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(db.count("SELECT COUNT(*) FROM sessions"), 50);
    assert_eq!(db.count("SELECT COUNT(*) FROM transactions"), 50);
    // Both engines read everything, including what the other wrote.
    for engine in [&first, &second] {
        let templates = engine
            .store()
            .templates("p1", "alice", Modality::Face)
            .unwrap();
        assert_eq!(templates.len(), 50);
    }
}
