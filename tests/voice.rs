//! Voices end to end on the real models: templates from audio files and host PCM in every format,
//! speech measures and their reasons, enrollment through the request path with its consent rules,
//! the `Voice Recognition` statuses, and bad input. One engine per test binary (models load once).
//!
//! Runs everywhere on the generated speech of `tests/media` (espeak-ng, `scripts/make-test-media`);
//! when `../shared/data/speech` exists it also enrolls and verifies real LibriSpeech speakers, and
//! says loudly when it does not.

mod common;

use std::sync::OnceLock;

use common::*;
use vouch::service::voice::VoiceStatus;
use vouch::service::{Modality, TemplateModel};
use vouch::SpeechReason;
use vouch::{Engine, Error};
use vouch_bio::VOICE_CALIBRATION as CALIBRATION;
use vouch_media::raw::{RawAudio, SampleFormat};

struct Fixture {
    db: Db,
    engine: Engine,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let db = Db::new();
        let engine = db.open_with_models();
        Fixture { db, engine }
    })
}

/// A 16-bit mono WAV file of `samples` at `rate`.
fn wav(samples: &[f32], rate: u32) -> Vec<u8> {
    let data: Vec<u8> = samples
        .iter()
        .flat_map(|s| ((s.clamp(-1.0, 1.0) * 32767.0) as i16).to_le_bytes())
        .collect();
    let mut out = Vec::with_capacity(44 + data.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&data);
    out
}

#[test]
fn speech_in_every_format_gives_one_voice() {
    let engine = &fixture().engine;
    let (reference, quality) = engine
        .voices()
        .from_audio(&media("speech.wav"))
        .expect("speech");
    assert!(quality.reasons.is_empty(), "{quality:?}");
    assert!(
        quality.speech_seconds > 4.0 && quality.speech_seconds <= quality.duration_seconds,
        "{quality:?}"
    );
    // The same recording at 48 kHz stereo through Opus, at 8 kHz (telephone band), and as PCM the
    // host hands over: the same voice each time.
    for name in ["speech_48k_stereo.ogg", "speech_8k.wav"] {
        let (template, quality) = engine.voices().from_audio(&media(name)).expect(name);
        assert!(quality.reasons.is_empty(), "{name}: {quality:?}");
        let m = reference.compare(&template);
        assert!(m.is_match && m.probability > 0.9, "{name}: {m:?}");
    }
    let (pcm, _) = engine
        .media()
        .decode_audio(&media("speech.wav"), &Default::default())
        .expect("decodes");
    let bytes: Vec<u8> = pcm.samples.iter().flat_map(|s| s.to_ne_bytes()).collect();
    let raw = RawAudio {
        data: &bytes,
        format: SampleFormat::F32,
        sample_rate: 16_000,
        channels: 1,
        timestamp_ms: 0,
    };
    let (from_raw, _) = engine.voices().from_raw(&raw).expect("raw speech");
    assert!(reference.distance(&from_raw) < 1e-4);
}

#[test]
fn poor_audio_is_a_clear_result() {
    let engine = &fixture().engine;
    let no_speech = |bytes: &[u8]| match engine.voices().from_audio(bytes) {
        Err(Error::NoSpeech(text)) => text,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        no_speech(&wav(&[0.0; 32_000], 16_000)),
        "the audio is silent"
    );
    assert_eq!(
        no_speech(&media("tone.wav")),
        "no speech found in the audio"
    );
    // 0.2 s of speech in 1.5 s: under Silero's quarter-second minimum, or too little.
    match engine.voices().from_audio(&media("speech_short.wav")) {
        Err(Error::NoSpeech(_)) => {}
        Ok((_, quality)) => assert_eq!(quality.reasons, [SpeechReason::TooLittleSpeech]),
        Err(other) => panic!("{other:?}"),
    }
    let (_, quality) = engine
        .voices()
        .from_audio(&media("speech_clipped.wav"))
        .expect("clipped speech is still speech");
    assert_eq!(quality.reasons, [SpeechReason::Clipping]);
    assert!(quality.clipped_share > 0.01, "{quality:?}");

    let speech = media("speech.wav");
    for bad in [&speech[..100], &b"RIFF\0\0\0\0WAVEjunk"[..], &[0u8; 64][..]] {
        assert!(
            matches!(engine.voices().from_audio(bad), Err(Error::Media(_))),
            "{:?}",
            engine.voices().from_audio(bad)
        );
    }
    let bytes = [0u8; 3];
    let odd = RawAudio {
        data: &bytes,
        format: SampleFormat::S16,
        sample_rate: 16_000,
        channels: 1,
        timestamp_ms: 0,
    };
    assert!(matches!(
        engine.voices().from_raw(&odd),
        Err(Error::Media(_))
    ));
}

#[test]
fn enrollment_and_verification_follow_consent() {
    let fixture = fixture();
    let engine = &fixture.engine;
    let key = create_key(engine, "proj-voice");
    let enroll = |fullname: &str, file: &str| {
        vouch::api::handle(
            engine,
            gateway("/api-gateway/enroll/voice", &key.token, fullname)
                .file_part("voice", file, "audio/wav", media(file))
                .text_part("phrase", "my voice is my password"),
        )
    };
    assert_error(
        &enroll("dave", "speech.wav"),
        403,
        "authorization consent is required",
    );
    set_consent(engine, &key.token, false, "dave", true);
    assert_error(
        &enroll("dave", "speech.wav"),
        403,
        "storage consent is required",
    );
    set_consent(engine, &key.token, true, "dave", true);
    let response = enroll("dave", "speech.wav");
    assert_eq!(response.status, 200, "{:?}", response.body);
    assert_eq!(response.body["message"], "voice enrolled");
    assert_eq!(response.body["data"]["templates"], 1);
    assert_eq!(
        response.body["data"]["quality"]["reasons"],
        serde_json::json!([])
    );
    assert_eq!(enroll("dave", "speech_8k.wav").body["data"]["templates"], 2);

    // Poor recordings are refused and store nothing.
    assert_error(
        &enroll("dave", "speech_clipped.wav"),
        400,
        "the voice is not good enough to enroll: clipping",
    );
    let silent = vouch::api::handle(
        engine,
        gateway("/api-gateway/enroll/voice", &key.token, "dave")
            .file_part("voice", "s.wav", "audio/wav", wav(&[0.0; 32_000], 16_000))
            .text_part("phrase", "my voice is my password"),
    );
    assert_error(
        &silent,
        400,
        "the voice is not good enough to enroll: silence",
    );
    let no_phrase = vouch::api::handle(
        engine,
        gateway("/api-gateway/enroll/voice", &key.token, "dave").file_part(
            "voice",
            "speech.wav",
            "audio/wav",
            media("speech.wav"),
        ),
    );
    assert_error(&no_phrase, 400, "phrase is required");
    let image = vouch::api::handle(
        engine,
        gateway("/api-gateway/enroll/voice", &key.token, "dave")
            .file_part("voice", "x.png", "image/png", media("marker.png"))
            .text_part("phrase", "hello"),
    );
    assert_400_like(&image, "invalid file format", "voice");
    assert_eq!(
        engine
            .store()
            .template_count("proj-voice", "dave", Modality::Voice)
            .unwrap(),
        2
    );
    // Sealed at rest: the stored rows never hold the template's bytes.
    let (template, _) = engine.voices().from_audio(&media("speech.wav")).unwrap();
    let plain = template.to_bytes();
    let sealed: Vec<Vec<u8>> = fixture
        .db
        .sql()
        // This project only: other tests of the binary enroll voices in the same file at the
        // same time.
        .rows(
            "SELECT t.sealed FROM templates t JOIN users u ON u.id = t.user_id
             WHERE t.modality = 'voice' AND u.project_id = 'proj-voice'",
            &[],
        )
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(sealed.len(), 2);
    assert!(sealed
        .iter()
        .all(|row| !row.windows(64).any(|w| plain.windows(64).any(|p| p == w))));

    // Verification statuses.
    let (pcm, _) = engine
        .media()
        .decode_audio(&media("speech_48k_stereo.ogg"), &Default::default())
        .unwrap();
    let result = engine
        .voices()
        .verify("proj-voice", "dave", &pcm.samples)
        .unwrap();
    assert_eq!(result.status, VoiceStatus::Identified, "{result:?}");
    assert!(result.score > 0.9, "{result:?}");
    let silence = engine
        .voices()
        .verify("proj-voice", "dave", &[0.0; 32_000])
        .unwrap();
    assert_eq!(silence.status, VoiceStatus::NotEnoughSpeech);
    assert_eq!(silence.reasons, [SpeechReason::Silence]);
    set_consent(engine, &key.token, false, "erin", true);
    let nobody = engine
        .voices()
        .verify("proj-voice", "erin", &pcm.samples)
        .unwrap();
    assert_eq!(nobody.status, VoiceStatus::NotEnrolled);
    assert!(matches!(
        engine.voices().verify("proj-voice", "frank", &pcm.samples),
        Err(Error::ConsentRequired(_))
    ));

    // Withdrawing storage consent deletes them.
    set_consent(engine, &key.token, true, "dave", false);
    assert_eq!(
        engine
            .store()
            .template_count("proj-voice", "dave", Modality::Voice)
            .unwrap(),
        0
    );
}

#[test]
fn a_changed_speaker_model_re_enrolls_and_never_compares_across_models() {
    let engine = &fixture().engine;
    let key = create_key(engine, "proj-voice-migration");
    let (project, user) = ("proj-voice-migration", "gwen");
    set_consent(engine, &key.token, false, user, true);
    set_consent(engine, &key.token, true, user, true);
    // A template the previous model (GE2E, 256 values, byte format 1) stored before the upgrade.
    let old_model = TemplateModel {
        model_id: vouch_bio::GE2E_MODEL_ID.to_owned(),
        model_version: 1,
    };
    let mut old_bytes = vec![1u8];
    old_bytes.extend((0..256).flat_map(|i| ((i % 7) as f32 / 16.0).to_le_bytes()));
    engine
        .store()
        .insert_template(project, user, Modality::Voice, &old_model, &old_bytes, 1)
        .unwrap();
    let models = |engine: &Engine| -> Vec<String> {
        engine
            .store()
            .templates(project, user, Modality::Voice)
            .unwrap()
            .into_iter()
            .map(|t| t.model.model_id)
            .collect()
    };
    assert_eq!(models(engine), [vouch_bio::GE2E_MODEL_ID]);

    // Verification never compares with it: the status says the model changed.
    let (pcm, _) = engine
        .media()
        .decode_audio(&media("speech.wav"), &Default::default())
        .unwrap();
    let before = engine.voices().verify(project, user, &pcm.samples).unwrap();
    assert_eq!(before.status, VoiceStatus::ModelOutdated, "{before:?}");
    assert_eq!(before.score, 0.0);
    assert!(engine.voices().templates(project, user).unwrap().is_empty());

    // Enrolling with the current model replaces it, in the same transaction.
    let response = vouch::api::handle(
        engine,
        gateway("/api-gateway/enroll/voice", &key.token, user)
            .file_part("voice", "speech.wav", "audio/wav", media("speech.wav"))
            .text_part("phrase", "my voice is my password"),
    );
    assert_eq!(response.status, 200, "{:?}", response.body);
    assert_eq!(response.body["data"]["templates"], 1);
    assert_eq!(models(engine), [vouch::VOICE_MODEL_ID]);
    let after = engine.voices().verify(project, user, &pcm.samples).unwrap();
    assert_eq!(after.status, VoiceStatus::Identified, "{after:?}");
}

#[test]
fn real_speakers_from_the_development_set() {
    let Some(speech) = shared_data("speech", "the real-speech voice test") else {
        return;
    };
    let engine = &fixture().engine;
    let key = create_key(engine, "proj-voice-real");
    set_consent(engine, &key.token, false, "speaker-1688", true);
    set_consent(engine, &key.token, true, "speaker-1688", true);
    let read = |path: &str| std::fs::read(speech.join(path)).expect("audio");
    for take in ["0000", "0001"] {
        let file = format!("librispeech_test_other/1688/1688-142285-{take}.flac");
        let response = vouch::api::handle(
            engine,
            gateway("/api-gateway/enroll/voice", &key.token, "speaker-1688")
                .file_part("voice", "take.flac", "audio/flac", read(&file))
                .text_part("phrase", "any phrase"),
        );
        assert_eq!(response.status, 200, "{:?}", response.body);
    }
    let trials = std::fs::read_to_string(speech.join("trials.csv")).expect("trials");
    let other = trials
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f[2] == "0" && f[0].contains("/1688/"))
        .map(|f| f[1].to_owned())
        .expect("a non-target trial for speaker 1688");
    let verify = |path: &str| {
        let (pcm, _) = engine
            .media()
            .decode_audio(&read(path), &Default::default())
            .expect("decodes");
        engine
            .voices()
            .verify("proj-voice-real", "speaker-1688", &pcm.samples)
            .expect("verifies")
    };
    let same = verify("librispeech_test_other/1688/1688-142285-0002.flac");
    assert_eq!(same.status, VoiceStatus::Identified, "{same:?}");
    let different = verify(&other);
    assert_eq!(
        different.status,
        VoiceStatus::NotIdentified,
        "{different:?} ({other})"
    );
    assert!(same.score > 0.5 && different.score < 0.5);
    // Another person's voice cannot be enrolled under this user.
    let response = vouch::api::handle(
        engine,
        gateway("/api-gateway/enroll/voice", &key.token, "speaker-1688")
            .file_part("voice", "other.flac", "audio/flac", read(&other))
            .text_part("phrase", "any phrase"),
    );
    assert_error(
        &response,
        409,
        "the voice does not match the voice already enrolled for this user",
    );
    let enrolled = engine
        .voices()
        .templates("proj-voice-real", "speaker-1688")
        .unwrap();
    // Both enrollments are kept, and the best-matching one decided: the score is the largest
    // probability either enrolled template gives on its own.
    assert_eq!(enrolled.len(), 2);
    let (live, _) = engine
        .voices()
        .from_audio(&read("librispeech_test_other/1688/1688-142285-0002.flac"))
        .expect("speech");
    let best = enrolled
        .iter()
        .map(|t| t.compare(&live))
        .max_by(|a, b| a.probability.total_cmp(&b.probability))
        .expect("two templates");
    assert!(
        (same.score - best.probability).abs() < 1e-6,
        "{same:?} {best:?}"
    );
    assert!(best.distance < CALIBRATION.threshold, "{best:?}");
}
