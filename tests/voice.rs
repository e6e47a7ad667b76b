//! Speaker embeddings on real speech, when `../shared/data/speech` is present (it says so loudly
//! when it is not): utterances of one LibriSpeech speaker are closer to each other than to another
//! speaker's, through the whole path (FLAC decoding, volume, Silero segments, GE2E).

use std::path::PathBuf;

use vouch::bio::voice::VoiceModels;
use vouch::media::{decode_audio, DecodeLimits};

#[test]
fn one_speaker_is_closer_to_itself_than_to_another() {
    let speech = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/speech"
    ));
    if !speech.is_dir() {
        eprintln!(
            "NOTE: {} not found: the real-speech voice test did not run",
            speech.display()
        );
        return;
    }
    let models = VoiceModels::load(&PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models"
    )))
    .expect("models");
    let embed = |path: &str| {
        let bytes = std::fs::read(speech.join(path)).expect("audio");
        let (pcm, _) = decode_audio(&bytes, &DecodeLimits::default()).expect("decodes");
        *models
            .analyze(&pcm.samples)
            .expect("speech")
            .template
            .values()
    };
    let cosine = |a: &[f32; 256], b: &[f32; 256]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    let a1 = embed("librispeech_test_other/1688/1688-142285-0000.flac");
    let a2 = embed("librispeech_test_other/1688/1688-142285-0001.flac");
    let trials = std::fs::read_to_string(speech.join("trials.csv")).expect("trials");
    let other = trials
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f[2] == "0" && f[0].contains("/1688/"))
        .map(|f| f[1].to_owned())
        .expect("a non-target trial for speaker 1688");
    let b = embed(&other);
    let (same, different) = (cosine(&a1, &a2), cosine(&a1, &b));
    assert!(
        same > different + 0.1,
        "same {same}, different {different} ({other})"
    );
}
