//! Faces end to end on the real models: templates from images and frames, comparison, document
//! matching, enrollment through the request path with its consent rules, and bad input. One engine
//! per test binary (models load once).
//!
//! Runs everywhere on `tests/media/face_astronaut.png` (public domain, `scripts/fetch-test-faces`);
//! when `../shared/data/faces-bbt` exists it also checks real same/different pairs, and says loudly
//! when it does not.

mod common;

use std::sync::OnceLock;

use common::*;
use vouch::{Engine, Error};
use vouch_bio::FACE_CALIBRATION as CALIBRATION;
use vouch_media::Frame;

struct Fixture {
    _db: Db,
    engine: Engine,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let db = Db::new();
        let engine = db.open_with_models();
        Fixture { _db: db, engine }
    })
}

fn astronaut_png() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/media/face_astronaut.png"
    ))
    .expect("tests/media/face_astronaut.png (scripts/fetch-test-faces)")
}

fn astronaut_frame() -> Frame {
    vouch_media::decode_image(&astronaut_png(), &Default::default()).expect("decodes")
}

fn png(frame: &Frame) -> Vec<u8> {
    let mut out = Vec::new();
    image::RgbImage::from_raw(frame.width, frame.height, frame.rgb.clone())
        .expect("buffer")
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .expect("png");
    out
}

/// The frame turned 90 degrees clockwise.
fn rotated(frame: &Frame) -> Frame {
    let (w, h) = (frame.width as usize, frame.height as usize);
    let mut rgb = vec![0u8; w * h * 3];
    for y in 0..h {
        for x in 0..w {
            let (nx, ny) = (h - 1 - y, x);
            rgb[(ny * h + nx) * 3..(ny * h + nx) * 3 + 3]
                .copy_from_slice(&frame.rgb[(y * w + x) * 3..(y * w + x) * 3 + 3]);
        }
    }
    Frame {
        timestamp_ms: 0,
        width: frame.height,
        height: frame.width,
        rgb,
    }
}

fn grey(frame: &Frame) -> Frame {
    let mut out = frame.clone();
    for p in out.rgb.chunks_mut(3) {
        let g =
            ((u32::from(p[0]) * 299 + u32::from(p[1]) * 587 + u32::from(p[2]) * 114) / 1000) as u8;
        p.fill(g);
    }
    out
}

/// Two copies side by side, the right one at 70 % size (so the left one is the largest).
fn two_faces(frame: &Frame) -> Frame {
    let small = image::imageops::resize(
        &image::RgbImage::from_raw(frame.width, frame.height, frame.rgb.clone()).unwrap(),
        frame.width * 7 / 10,
        frame.height * 7 / 10,
        image::imageops::FilterType::Triangle,
    );
    let mut canvas = image::RgbImage::new(frame.width * 2, frame.height);
    image::imageops::replace(
        &mut canvas,
        &image::RgbImage::from_raw(frame.width, frame.height, frame.rgb.clone()).unwrap(),
        0,
        0,
    );
    image::imageops::replace(&mut canvas, &small, i64::from(frame.width) + 20, 30);
    Frame {
        timestamp_ms: 0,
        width: canvas.width(),
        height: canvas.height(),
        rgb: canvas.into_raw(),
    }
}

#[test]
fn the_same_face_matches_itself_through_rotation_grey_and_scale() {
    let engine = &fixture().engine;
    let reference = engine.faces().from_image(&astronaut_png()).expect("a face");
    assert_eq!(reference.face_count, 1);
    assert!(
        reference.quality.interocular_px > 40.0,
        "{:?}",
        reference.quality
    );
    assert!(
        reference.quality.reasons.is_empty(),
        "{:?}",
        reference.quality.reasons
    );
    let frame = astronaut_frame();
    let small = {
        let resized = image::imageops::resize(
            &image::RgbImage::from_raw(frame.width, frame.height, frame.rgb.clone()).unwrap(),
            160,
            160,
            image::imageops::FilterType::Triangle,
        );
        Frame {
            timestamp_ms: 0,
            width: 160,
            height: 160,
            rgb: resized.into_raw(),
        }
    };
    let upside_down = rotated(&rotated(&frame));
    for (name, variant) in [
        ("rotated 90", rotated(&frame)),
        ("rotated 270", rotated(&rotated(&upside_down))),
        ("upside down", upside_down.clone()),
        ("grey", grey(&frame)),
        ("grey and rotated 90", rotated(&grey(&frame))),
        ("downscaled to 160 px", small),
    ] {
        let face = engine
            .faces()
            .from_frame(&variant)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let m = reference.template.compare(&face.template);
        assert!(m.is_match && m.probability > 0.9, "{name}: {m:?}");
    }
    // The same pixels through PNG give the same template.
    let again = engine.faces().from_image(&png(&frame)).expect("a face");
    assert!(reference.template.distance(&again.template) < 1e-5);
}

#[test]
fn several_faces_use_the_largest_and_say_so() {
    let engine = &fixture().engine;
    let reference = engine.faces().from_image(&astronaut_png()).expect("a face");
    let face = engine
        .faces()
        .from_frame(&two_faces(&astronaut_frame()))
        .expect("faces");
    assert_eq!(face.face_count, 2);
    assert!(face
        .quality
        .reasons
        .contains(&vouch::FaceQualityReason::MultipleFaces));
    assert!(
        face.detection.bbox[2] < 300.0,
        "the left (larger) face: {:?}",
        face.detection.bbox
    );
    assert!(reference.template.compare(&face.template).is_match);
}

#[test]
fn no_face_and_bad_images_are_clear_errors() {
    let engine = &fixture().engine;
    // A smooth gradient: no face.
    let gradient = Frame {
        timestamp_ms: 0,
        width: 200,
        height: 150,
        rgb: (0..200 * 150)
            .flat_map(|i| [(i % 200) as u8, (i / 200) as u8, 128])
            .collect(),
    };
    match engine.faces().from_image(&png(&gradient)) {
        Err(Error::NoFace(text)) => assert_eq!(text, "no face found in the image"),
        other => panic!("{other:?}"),
    }
    let bytes = astronaut_png();
    assert!(matches!(
        engine.faces().from_image(&bytes[..bytes.len() / 3]),
        Err(Error::Media(_))
    ));
    assert!(matches!(
        engine.faces().from_image(b"not an image"),
        Err(Error::Media(_))
    ));
    assert!(matches!(
        engine.faces().from_image(&[]),
        Err(Error::Media(_))
    ));
}

#[test]
fn document_portrait_matching_picks_the_best_frame() {
    let engine = &fixture().engine;
    let frame = astronaut_frame();
    let empty = Frame {
        timestamp_ms: 0,
        width: 64,
        height: 64,
        rgb: vec![90; 64 * 64 * 3],
    };
    let result = engine
        .faces()
        .match_document(
            &astronaut_png(),
            &[empty.clone(), grey(&frame), empty.clone()],
        )
        .expect("match");
    assert!(result.is_match, "{result:?}");
    assert_eq!((result.best_frame, result.frames_with_face), (1, 1));
    match engine.faces().match_document(&astronaut_png(), &[empty]) {
        Err(Error::NoFace(text)) => assert!(text.contains("live"), "{text}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn enrollment_needs_both_consents_and_stores_sealed_templates() {
    let engine = &fixture().engine;
    let key = create_key(engine, "proj-face");
    let enroll = |fullname: &str| {
        vouch::api::handle(
            engine,
            gateway("/api-gateway/enroll/face", &key.token, fullname)
                .file_part("face", "me.png", "image/png", astronaut_png())
                .text_part("is_document", "false"),
        )
    };
    assert_error(&enroll("carol"), 403, "authorization consent is required");
    set_consent(engine, &key.token, false, "carol", true);
    assert_error(&enroll("carol"), 403, "storage consent is required");
    set_consent(engine, &key.token, true, "carol", true);
    let response = enroll("carol");
    assert_eq!(response.status, 200, "{:?}", response.body);
    assert_eq!(response.body["message"], "face enrolled");
    assert_eq!(response.body["data"]["templates"], 1);
    assert_eq!(response.body["data"]["face_count"], 1);
    assert!(
        response.body["data"]["quality"]["interocular_px"]
            .as_f64()
            .unwrap()
            > 40.0
    );
    assert_eq!(enroll("carol").body["data"]["templates"], 2);

    let templates = engine
        .faces()
        .templates("proj-face", "carol")
        .expect("templates");
    assert_eq!(templates.len(), 2);
    let live = engine
        .faces()
        .from_frame(&grey(&astronaut_frame()))
        .expect("face");
    assert!(templates.iter().all(|t| t.compare(&live.template).is_match));

    // No face: 400 and nothing stored.
    let gradient = Frame {
        timestamp_ms: 0,
        width: 120,
        height: 90,
        rgb: vec![200; 120 * 90 * 3],
    };
    let response = vouch::api::handle(
        engine,
        gateway("/api-gateway/enroll/face", &key.token, "carol").file_part(
            "face",
            "x.png",
            "image/png",
            png(&gradient),
        ),
    );
    assert_error(&response, 400, "no face found in the image");
    assert_eq!(
        engine
            .faces()
            .templates("proj-face", "carol")
            .unwrap()
            .len(),
        2
    );

    // Withdrawing storage consent deletes them.
    set_consent(engine, &key.token, true, "carol", false);
    assert_eq!(
        engine
            .store()
            .template_count("proj-face", "carol", vouch::service::Modality::Face)
            .unwrap(),
        0
    );
}

#[test]
fn real_pairs_from_the_development_set() {
    let Some(dir) = shared_data("faces-bbt/images", "the real-pair face test") else {
        return;
    };
    let engine = &fixture().engine;
    let face = |name: &str| {
        engine
            .faces()
            .from_image(&std::fs::read(dir.join(name)).expect("image"))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let (a1, a2, b1) = (face("amy_1.png"), face("amy_2.png"), face("penny_1.png"));
    assert!(a1.template.compare(&a2.template).is_match);
    let other = a1.template.compare(&b1.template);
    assert!(
        !other.is_match && other.distance > CALIBRATION.threshold,
        "{other:?}"
    );
}

#[test]
fn a_second_person_cannot_be_enrolled_under_an_enrolled_face() {
    let Some(dir) = shared_data("faces-bbt/images", "the second-person enrollment test") else {
        return;
    };
    let engine = &fixture().engine;
    let key = create_key(engine, "proj-face-conflict");
    set_consent(engine, &key.token, false, "amy", true);
    set_consent(engine, &key.token, true, "amy", true);
    let enroll = |name: &str| {
        let image = std::fs::read(dir.join(name)).expect("image");
        vouch::api::handle(
            engine,
            gateway("/api-gateway/enroll/face", &key.token, "amy").file_part(
                "face",
                name,
                "image/png",
                image,
            ),
        )
    };
    assert_eq!(enroll("amy_1.png").status, 200);
    // Another picture of the same person is added ...
    assert_eq!(enroll("amy_2.png").body["data"]["templates"], 2);
    // ... someone else is refused, and nothing is stored.
    assert_error(
        &enroll("penny_1.png"),
        409,
        "the face does not match the face already enrolled for this user",
    );
    assert_eq!(
        engine
            .faces()
            .templates("proj-face-conflict", "amy")
            .unwrap()
            .len(),
        2
    );
}
