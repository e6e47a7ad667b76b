//! Media endpoints' request rules (process-video, enroll/face, enroll/voice, docauth/check,
//! match-faces, avf/infer): validation first, then what an engine opened without models does
//! (process-video and docauth/check say they need models; enrollment and match-faces check consent
//! first; avf/infer says it needs models). tests/avf.rs, tests/process_video.rs, tests/face.rs, tests/voice.rs and
//! tests/document.rs have the rest on the real models.

mod common;

use common::*;
use serde_json::json;
use vouch::api::{Request, Response, MAX_AVF_BYTES, MAX_MEDIA_BYTES};
use vouch::Engine;

struct Setup {
    _db: Db,
    engine: Engine,
    token: String,
    session: String,
}

fn setup() -> Setup {
    let db = Db::new();
    let engine = db.open();
    let token = create_key(&engine, "p1").token;
    let session = start_session(&engine, &token);
    Setup {
        _db: db,
        engine,
        token,
        session,
    }
}

impl Setup {
    fn post(&self, path: &str) -> Request {
        gateway(path, &self.token, "alice")
    }

    fn send(&self, request: Request) -> Response {
        vouch::api::handle(&self.engine, request)
    }
}

/// What a valid avf/infer upload gets from an engine opened without models.
const AVF_NO_MODELS: &str = "video forgery analysis needs models: open the engine with models_dir";

/// What a valid process-video request gets from an engine opened without models.
const NO_MODELS: &str = "face recognition needs models: open the engine with models_dir";

const VIDEO_PARTS: &str = "video, phrase, vocabulary, trigger, language";

#[test]
fn process_video_validates_before_it_needs_models() {
    let s = setup();
    let path = "/api-gateway/process-video";
    let video = || mp4(1024);
    let response = s.send(s.post(path).text_part("phrase", "one two"));
    assert_error(&response, 400, "video is required");
    let response = s.send(
        s.post(path)
            .file_part("video", "v.mp4", "video/mp4", video()),
    );
    assert_error(&response, 400, "phrase is required");
    let response = s.send(
        s.post(path)
            .file_part("video", "v.mp4", "video/mp4", video())
            .text_part("phrase", "  "),
    );
    assert_error(&response, 400, "phrase is required");
    let response = s.send(
        s.post(path)
            .file_part("video", "v.mp4", "video/mp4", video())
            .text_part("phrase", "one")
            .text_part("extra", "x"),
    );
    assert_error(
        &response,
        400,
        &format!("unknown part \"extra\"; expected: {VIDEO_PARTS}"),
    );
    let response = s.send(
        s.post(path)
            .file_part("video", "v.mp4", "video/mp4", video())
            .text_part("phrase", "one")
            .text_part("phrase", "two"),
    );
    assert_error(&response, 400, "part \"phrase\" is given more than once");
    let response = s.send(
        s.post(path)
            .file_part(
                "video",
                "v.avi",
                "video/x-msvideo",
                b"RIFF\0\0\0\0AVI LIST".to_vec(),
            )
            .text_part("phrase", "one"),
    );
    assert_error(
        &response,
        400,
        "invalid file format: video must be an MP4, MOV, WebM or Matroska video",
    );
    let response = s.send(
        s.post(path)
            .file_part("video", "v.mp4", "video/mp4", Vec::new())
            .text_part("phrase", "one"),
    );
    assert_error(&response, 400, "video is empty");
    let response = s.send(
        s.post(path)
            .file_part("video", "v.mp4", "video/mp4", video())
            .text_part("phrase", &"p".repeat(4097)),
    );
    assert_error(&response, 400, "phrase is longer than 4096 bytes");
    let mut bad_utf8 = s
        .post(path)
        .file_part("video", "v.mp4", "video/mp4", video());
    bad_utf8.parts.push(vouch::api::Part {
        name: "phrase".to_owned(),
        data: vec![0xff, 0xfe],
        ..Default::default()
    });
    assert_error(&s.send(bad_utf8), 400, "phrase is not valid UTF-8");

    // Valid: MP4 and WebM/Matroska, with the optional parts.
    let webm = vec![0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81];
    for data in [video(), webm] {
        let response = s.send(
            s.post(path)
                .header("X-Session-ID", &s.session)
                .file_part("video", "v", "video/mp4", data)
                .text_part("phrase", "one two three")
                .text_part("vocabulary", "one two three four")
                .text_part("trigger", "authentication"),
        );
        assert_error(&response, 500, NO_MODELS);
    }
}

#[test]
fn the_50mb_limit() {
    let s = setup();
    let path = "/api-gateway/process-video";
    let response = s.send(
        s.post(path)
            .file_part("video", "v.mp4", "video/mp4", mp4(MAX_MEDIA_BYTES + 1))
            .text_part("phrase", "one"),
    );
    assert_error(&response, 400, "file size exceeds 50MB");
    // The size is checked before the parts are: a too-large video without a phrase.
    let response =
        s.send(
            s.post(path)
                .file_part("video", "v.mp4", "video/mp4", mp4(MAX_MEDIA_BYTES + 1)),
        );
    assert_error(&response, 400, "file size exceeds 50MB");
    // Exactly 50 MiB is allowed.
    let response = s.send(
        s.post(path)
            .file_part("video", "v.mp4", "video/mp4", mp4(MAX_MEDIA_BYTES))
            .text_part("phrase", "one"),
    );
    assert_error(&response, 500, NO_MODELS);
    // Images and audio share the limit.
    let mut big_png = PNG.to_vec();
    big_png.resize(MAX_MEDIA_BYTES + 1, 0);
    let response =
        s.send(
            s.post("/api-gateway/enroll/face")
                .file_part("face", "f.png", "image/png", big_png),
        );
    assert_error(&response, 400, "file size exceeds 50MB");
    assert_eq!(MAX_MEDIA_BYTES, 50 * 1024 * 1024);
}

#[test]
fn avf_infer_has_a_100mb_limit_answered_with_413() {
    let s = setup();
    let path = "/api-gateway/avf/infer";
    let response = s.send(s.post(path));
    assert_error(&response, 400, "file is required");
    let response =
        s.send(
            s.post(path)
                .file_part("file", "c.mp4", "video/mp4", mp4(MAX_AVF_BYTES + 1)),
        );
    assert_error(&response, 413, "file size exceeds 100MB");
    // Over 50 MiB but within 100 MiB is accepted by validation.
    let response =
        s.send(
            s.post(path)
                .file_part("file", "c.mp4", "video/mp4", mp4(MAX_MEDIA_BYTES + 1)),
        );
    assert_error(&response, 500, AVF_NO_MODELS);
    let response = s.send(
        s.post(path)
            .file_part("file", "c.mp4", "video/mp4", mp4(MAX_AVF_BYTES)),
    );
    assert_error(&response, 500, AVF_NO_MODELS);
    let response = s.send(
        s.post(path)
            .file_part("file", "c.txt", "text/plain", b"hello".to_vec()),
    );
    assert_error(
        &response,
        400,
        "invalid file format: file must be an MP4, MOV, WebM or Matroska video",
    );
    let response = s.send(
        s.post(path)
            .file_part("file", "c.mp4", "video/mp4", mp4(64))
            .text_part("video", "x"),
    );
    assert_error(&response, 400, "unknown part \"video\"; expected: file");
    // Optional AVF headers are checked like everywhere.
    let response = s.send(s.post(path).header("X-Device-Info", "nope").file_part(
        "file",
        "c.mp4",
        "video/mp4",
        mp4(64),
    ));
    assert_error(&response, 400, "X-Device-Info header is not valid JSON");
    assert_eq!(MAX_AVF_BYTES, 100 * 1024 * 1024);
}

#[test]
fn enrollment_parts() {
    let s = setup();
    let face = "/api-gateway/enroll/face";
    assert_error(&s.send(s.post(face)), 400, "face is required");
    let response = s.send(
        s.post(face)
            .file_part("face", "f.png", "image/png", PNG.to_vec())
            .text_part("is_document", "maybe"),
    );
    assert_error(&response, 400, "is_document must be true or false");
    let response = s.send(
        s.post(face)
            .file_part("face", "f.gif", "image/gif", GIF.to_vec()),
    );
    assert_error(
        &response,
        400,
        "invalid file format: face must be a jpg, jpeg, png or webp image",
    );
    // A phone's WebP photo under a .jpg name is an image: it gets past the format check to the
    // consent check.
    let webp = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/media/marker.webp"
    ))
    .expect("marker.webp");
    let response = s.send(
        s.post(face)
            .file_part("face", "IMG_0001.jpg", "image/jpeg", webp),
    );
    assert_error(&response, 403, "authorization consent is required");
    for is_document in ["true", "false"] {
        let response = s.send(
            s.post(face)
                .header("X-Session-ID", &s.session)
                .file_part("face", "f.jpg", "image/jpeg", JPEG.to_vec())
                .text_part("is_document", is_document),
        );
        assert_error(&response, 403, "authorization consent is required");
    }
    // With both consents, an engine opened without models_dir cannot do it: a server error.
    set_consent(&s.engine, &s.token, false, "alice", true);
    set_consent(&s.engine, &s.token, true, "alice", true);
    let response = s.send(
        s.post(face)
            .file_part("face", "f.png", "image/png", PNG.to_vec()),
    );
    assert_error(
        &response,
        500,
        "face recognition needs models: open the engine with models_dir",
    );

    let voice = "/api-gateway/enroll/voice";
    let response = s.send(s.post(voice).text_part("phrase", "one"));
    assert_error(&response, 400, "voice is required");
    let response = s.send(
        s.post(voice)
            .file_part("voice", "v.wav", "audio/wav", WAV.to_vec()),
    );
    assert_error(&response, 400, "phrase is required");
    let response = s.send(
        s.post(voice)
            .file_part("voice", "v.mp3", "audio/mpeg", b"ID3\x03\0\0\0".to_vec())
            .text_part("phrase", "one"),
    );
    assert_error(
        &response,
        400,
        "invalid file format: voice must be WAV, FLAC, OGG, M4A or WebM audio",
    );
    let response = s.send(
        s.post(voice)
            .file_part("voice", "v.wav", "audio/wav", WAV.to_vec())
            .text_part("face", "x"),
    );
    assert_error(
        &response,
        400,
        "unknown part \"face\"; expected: voice, phrase",
    );
    for data in [
        WAV.to_vec(),
        b"fLaC\0\0\0\x22".to_vec(),
        b"OggS\0\x02".to_vec(),
    ] {
        let response = s.send(
            s.post(voice)
                .file_part("voice", "v", "audio/wav", data)
                .text_part("phrase", "one two three"),
        );
        assert_error(
            &response,
            500,
            "voice recognition needs models: open the engine with models_dir",
        );
    }
}

#[test]
fn docauth_accepts_jpeg_png_and_webp_by_content() {
    let s = setup();
    let path = "/api-gateway/docauth/check";
    // The spec's text, kept although WebP is accepted too.
    let wrong = "invalid file format: only jpg, jpeg and png documents are accepted";
    assert_error(&s.send(s.post(path)), 400, "document is required");
    let cases: [(&str, &str, &[u8]); 3] = [
        ("id.gif", "image/gif", GIF),
        ("id.png", "image/png", GIF),
        ("id.pdf", "application/pdf", b"%PDF-1.7"),
    ];
    for (filename, content_type, data) in cases {
        let response =
            s.send(
                s.post(path)
                    .file_part("document", filename, content_type, data.to_vec()),
            );
        assert_error(&response, 400, wrong);
    }
    let webp = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/media/marker.webp"
    ))
    .expect("marker.webp");
    let valid: [(&str, &str, &[u8]); 7] = [
        ("id.png", "image/png", PNG),
        ("ID.PNG", "image/png", PNG),
        ("id.jpg", "image/jpeg", JPEG),
        ("id.jpeg", "application/octet-stream", JPEG),
        // The bytes decide, not the name or the type the client gave.
        ("id.png", "image/gif", PNG),
        ("id.gif", "image/png", PNG),
        ("scan.jpg", "image/jpeg", &webp),
    ];
    for (filename, content_type, data) in valid {
        let response = s.send(s.post(path).header("X-Inhouse-MRZ", "true").file_part(
            "document",
            filename,
            content_type,
            data.to_vec(),
        ));
        // Accepted, then the engine (opened without models here) says what it lacks.
        assert_error(
            &response,
            500,
            "document reading needs models: open the engine with models_dir",
        );
        let external = s.send(s.post(path).header("X-Inhouse-Docauth", "false").file_part(
            "document",
            filename,
            content_type,
            data.to_vec(),
        ));
        assert_eq!(external.status, 501, "{:?}", external.body);
    }
    let response = s.send(s.post(path).header("X-Inhouse-MRZ", "on").file_part(
        "document",
        "id.png",
        "image/png",
        PNG.to_vec(),
    ));
    assert_error(&response, 400, "X-Inhouse-MRZ header must be true or false");
}

#[test]
fn match_faces_needs_a_session() {
    let s = setup();
    let path = "/api-gateway/match-faces";
    let image = || JPEG.to_vec();
    let response = s.send(
        s.post(path)
            .file_part("image", "i.jpg", "image/jpeg", image()),
    );
    assert_error(&response, 400, "X-Session-ID header is required");
    let response = s.send(s.post(path).header("X-Session-ID", &s.session));
    assert_error(&response, 400, "image is required");
    let response = s.send(s.post(path).header("X-Session-ID", &s.session).file_part(
        "image",
        "i.jpg",
        "image/jpeg",
        image(),
    ));
    assert_error(
        &response,
        400,
        "the live face is missing: send X-Use-Prefilled-Video: true after process-video in this \
         session, or a video or live_image part",
    );
    // With X-Use-Prefilled-Video the image may be left out; faces need authorization consent.
    let response = s.send(
        s.post(path)
            .header("X-Session-ID", &s.session)
            .header("X-Use-Prefilled-Video", "true"),
    );
    assert_error(&response, 403, "authorization consent is required");
    let response = s.send(
        s.post(path)
            .header("X-Session-ID", &s.session)
            .header("X-Use-Prefilled-Video", "false"),
    );
    assert_error(&response, 400, "image is required");
    let response = s.send(
        s.post(path)
            .header("X-Session-ID", "sess_missing")
            .file_part("image", "i.jpg", "image/jpeg", image()),
    );
    assert_error(&response, 404, "session not found");
}

#[test]
fn media_endpoints_refuse_query_strings_and_other_methods() {
    let s = setup();
    let response = s.send(s.post("/api-gateway/enroll/face?debug=1").file_part(
        "face",
        "f.png",
        "image/png",
        PNG.to_vec(),
    ));
    assert_error(&response, 400, "unknown query parameter \"debug\"");
    for path in [
        "/api-gateway/process-video",
        "/api-gateway/enroll/face",
        "/api-gateway/enroll/voice",
        "/api-gateway/docauth/check",
        "/api-gateway/match-faces",
        "/api-gateway/avf/infer",
    ] {
        let response = s.send(authed("GET", path, &s.token).header("X-User-Fullname", "alice"));
        assert_error(
            &response,
            405,
            &format!("method GET is not allowed on {path}"),
        );
    }
}

#[test]
fn media_requests_are_recorded_with_their_outcome() {
    let s = setup();
    let response = s.send(
        s.post("/api-gateway/process-video")
            .header("X-Session-ID", &s.session)
            .header("X-Action-Trigger", "authentication")
            .file_part("video", "v.mp4", "video/mp4", mp4(256))
            .text_part("phrase", "one"),
    );
    assert_eq!(response.status, 500);
    let row = transaction(&s.engine, &s.token, response.request_id());
    assert_eq!(row["status_code"], 500);
    assert_eq!(row["endpoint"], "/api-gateway/process-video");
    assert_eq!(row["user_fullname"], "alice");
    assert_eq!(row["session_id"], s.session.as_str());
    assert_eq!(row["action_trigger"], "authentication");
    assert_eq!(row["result"], json!({ "error": NO_MODELS }));
    let response = s.send(
        s.post("/api-gateway/process-video")
            .text_part("phrase", "x"),
    );
    let row = transaction(&s.engine, &s.token, response.request_id());
    assert_eq!(row["status_code"], 400);
    assert_eq!(row["result"], json!({"error": "video is required"}));
}

#[test]
fn the_trigger_part_is_recorded_like_the_action_trigger_header() {
    let s = setup();
    let trigger_of = |header: Option<&str>, part: &str| {
        let mut request = s
            .post("/api-gateway/process-video")
            .file_part("video", "v.mp4", "video/mp4", mp4(256))
            .text_part("phrase", "one")
            .text_part("trigger", part);
        if let Some(value) = header {
            request = request.header("X-Action-Trigger", value);
        }
        let response = s.send(request);
        transaction(&s.engine, &s.token, response.request_id())["action_trigger"].clone()
    };
    assert_eq!(trigger_of(None, "registration"), "registration");
    assert_eq!(
        trigger_of(Some("authentication"), "registration"),
        "authentication",
        "the header wins"
    );
    assert_eq!(
        trigger_of(None, "button"),
        json!(null),
        "other text is ignored"
    );
}
