//! `vouch eval videos`: the checks of process-video on labelled talking-head clips.
//!
//! For every clip of a `mp4,webm,identity,transcript` file (the `mp4` column, or `webm` with
//! `--webm`), the whole analysis runs once (decode, face track, voice, phrase; timed per clip), and
//! then on clips the command builds from them:
//!
//! - **active speaker**: each row of `asd_trials.csv` beside the clips (`video_from`, `audio_from`,
//!   `match`), the video of one clip with the audio of another (or its own); accuracy of the
//!   speaking / not speaking decision;
//! - **phrase**: each clip claimed with its own transcript (must pass) and with the next clip's
//!   transcript (must fail); the vocabulary is every word of the transcripts unless given;
//! - **liveness**: the genuine clips (BPCER: share judged not live), and two attacks per clip
//!   (APCER: share judged live): a photo (the clip's middle frame held for the whole clip, with
//!   the clip's own audio) and a dub (the clip's video with the next clip's audio);
//! - **identity**: where an identity has two clips, a face and voice template from one verifies
//!   the other; every pair of clips of different identities is an impostor trial.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};
use vouch::bio::video::phrase::{word_errors, words, PhraseCode};
use vouch::bio::video::speaker::SpeakerCode;
use vouch::media::{Clip, Frame};
use vouch::service::video::{decode_options, VideoAnalysis};
use vouch::Engine;

use crate::eval::{read_columns, read_labelled};

/// Options of `vouch eval videos`.
pub struct VideoEval {
    pub clips: PathBuf,
    pub dir: PathBuf,
    pub models: PathBuf,
    pub speech_model: Option<PathBuf>,
    pub vocabulary: Option<String>,
    pub webm: bool,
    pub threads: usize,
    pub dump: Option<PathBuf>,
    pub json: bool,
}

struct ClipRow {
    file: String,
    identity: String,
    transcript: String,
}

fn read_clips(path: &Path, webm: bool) -> Result<Vec<ClipRow>, String> {
    let file = if webm { "webm" } else { "mp4" };
    Ok(read_columns(path, &[file, "identity", "transcript"])?
        .into_iter()
        .map(|mut row| ClipRow {
            transcript: row.pop().unwrap_or_default(),
            identity: row.pop().unwrap_or_default(),
            file: row.pop().unwrap_or_default(),
        })
        .collect())
}

/// `video_from,audio_from,match` rows, if the file exists.
fn read_asd_trials(path: &Path) -> Result<Vec<(String, String, bool)>, String> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    read_labelled(path, ["video_from", "audio_from", "match"])
}

fn open_engine(options: &VideoEval) -> Result<Engine, String> {
    let key = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [7u8; 32]);
    let mut config = json!({
        "database": ":memory:",
        "template_key": key,
        "threads": options.threads,
        "models_dir": options.models,
    });
    if let Some(dir) = &options.speech_model {
        config["speech_model_dir"] = json!(dir);
    }
    Engine::open_json(&config.to_string()).map_err(|e| e.to_string())
}

/// A clip with another clip's audio.
fn with_audio(video: &Clip, audio: &Clip) -> Clip {
    Clip {
        frames: video.frames.clone(),
        audio: audio.audio.clone(),
        info: video.info.clone(),
    }
}

/// A photo attack: the middle frame held for the whole clip, with the clip's own audio.
fn photo_of(clip: &Clip) -> Clip {
    let still = &clip.frames[clip.frames.len() / 2];
    Clip {
        frames: clip
            .frames
            .iter()
            .map(|f| Frame {
                timestamp_ms: f.timestamp_ms,
                ..still.clone()
            })
            .collect(),
        audio: clip.audio.clone(),
        info: clip.info.clone(),
    }
}

fn summary(analysis: &VideoAnalysis) -> Value {
    json!({
        "speaker_code": analysis.speaker.code as u8,
        "contrast": (analysis.speaker.contrast * 1000.0).round() / 1000.0,
        "lag_ms": analysis.speaker.lag_ms,
        "liveness_code": analysis.liveness.code as u8,
        "mouth_motion": (analysis.liveness.mouth_motion * 1000.0).round() / 1000.0,
        "blinks": analysis.liveness.blinks,
        "head_motion": (analysis.liveness.head_motion * 1000.0).round() / 1000.0,
        "face_coverage": analysis.signals.face_coverage,
        "speech_seconds": analysis.signals.speech_seconds,
        "passive_real": analysis.liveness.passive.map(|p| (p.real * 1000.0).round() / 1000.0),
        "passive_live": analysis.liveness.passive.map(|p| (p.live * 1000.0).round() / 1000.0),
    })
}

pub fn run(options: &VideoEval) -> Result<(), String> {
    let clips = read_clips(&options.clips, options.webm)?;
    if clips.is_empty() {
        return Err(format!("{}: no clips", options.clips.display()));
    }
    let engine = open_engine(options)?;
    let vocabulary = options.vocabulary.clone().unwrap_or_else(|| {
        let mut all: Vec<String> = clips.iter().flat_map(|c| words(&c.transcript)).collect();
        all.sort();
        all.dedup();
        all.join(" ")
    });
    let mut decoded: BTreeMap<String, Clip> = BTreeMap::new();
    let mut genuine = Vec::new();
    let mut rows = Vec::new();
    let mut total_ms = 0f64;
    for clip in &clips {
        let path = options.dir.join(&clip.file);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // Decoded once: the clip is kept for the attacks and trials built from it below, and the
        // time per clip covers decoding and the whole analysis, as analyze_video would.
        let start = Instant::now();
        let decoded_clip = engine
            .decode_video(&bytes, &decode_options())
            .map_err(|e| format!("{}: {e}", clip.file))?;
        let kept = decoded_clip.clone();
        let decode_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        let analysis = engine
            .analyze_clip(decoded_clip, &clip.transcript, &vocabulary, true)
            .map_err(|e| format!("{}: {e}", clip.file))?;
        let ms = decode_ms + start.elapsed().as_secs_f64() * 1e3;
        total_ms += ms;
        if let Some(dir) = &options.dump {
            let signals = &analysis.signals;
            // Per sampled frame: its time and the FaceMesh points (x, y pixels), for studies of
            // other mouth features.
            let frame_times: Vec<i64> = kept.frames.iter().map(|f| f.timestamp_ms).collect();
            let landmarks: Vec<Option<Vec<f32>>> = analysis
                .track
                .faces
                .iter()
                .map(|face| {
                    face.as_ref().map(|face| {
                        face.landmarks
                            .points
                            .iter()
                            .flat_map(|p| {
                                [(p[0] * 10.0).round() / 10.0, (p[1] * 10.0).round() / 10.0]
                            })
                            .collect()
                    })
                })
                .collect();
            let dump = json!({
                "times": signals.times_ms, "mouth": signals.mouth, "level": signals.band_db,
                "eyes": signals.eyes, "frame_times": frame_times, "landmarks": landmarks,
            });
            std::fs::write(dir.join(format!("{}.json", clip.file)), dump.to_string())
                .map_err(|e| e.to_string())?;
        }
        let mut row = summary(&analysis);
        row["clip"] = json!(clip.file);
        row["ms"] = json!((ms * 10.0).round() / 10.0);
        row["recognized"] = json!(analysis.phrase.recognized);
        rows.push(row);
        decoded.insert(clip.file.clone(), kept);
        genuine.push(analysis);
    }
    let n = clips.len();

    // Phrase: own transcript must pass, the next clip's must fail.
    let (mut phrase_right, mut phrase_trials, mut phrase_exact) = (0usize, 0usize, 0usize);
    let (mut phrase_word_errors, mut phrase_words) = (0usize, 0usize);
    let mut phrase_unavailable = false;
    for (i, clip) in clips.iter().enumerate() {
        let own = &genuine[i].phrase;
        phrase_unavailable |= own.code == PhraseCode::Unavailable;
        phrase_trials += 1;
        phrase_right += usize::from(own.code == PhraseCode::Matched);
        phrase_exact += usize::from(own.recognized == words(&clip.transcript).join(" "));
        let expected = words(&clip.transcript);
        phrase_word_errors += word_errors(&words(&own.recognized), &expected);
        phrase_words += expected.len();
        let other = &clips[(i + 1) % n].transcript;
        let samples = decoded[&clip.file]
            .audio
            .as_ref()
            .map(|a| a.samples.clone())
            .unwrap_or_default();
        let claimed = engine.check_spoken_phrase(&samples, other, &vocabulary);
        rows[i]["phrase_code"] = json!(own.code as u8);
        rows[i]["phrase_margin"] = json!(own.margin);
        rows[i]["other_phrase_code"] = json!(claimed.code as u8);
        rows[i]["other_phrase_margin"] = json!(claimed.margin);
        phrase_trials += 1;
        phrase_right += usize::from(claimed.code == PhraseCode::Differs);
    }

    // Active speaker trials.
    let trials = read_asd_trials(&options.clips.with_file_name("asd_trials.csv"))?;
    let by_name = |name: &str| {
        decoded.get(name).or_else(|| {
            // The trials name the mp4 files; with --webm, find the row's clip by stem.
            let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
            decoded
                .iter()
                .find(|(k, _)| k.rsplit_once('.').map_or(k.as_str(), |(s, _)| s) == stem)
                .map(|(_, v)| v)
        })
    };
    let mut asd_right = 0usize;
    let mut asd_rows = Vec::new();
    for (video, audio, matched) in &trials {
        let (Some(v), Some(a)) = (by_name(video), by_name(audio)) else {
            return Err(format!(
                "asd trial {video},{audio}: clip not in the clips file"
            ));
        };
        let analysis = engine
            .analyze_clip(with_audio(v, a), "", &vocabulary, false)
            .map_err(|e| e.to_string())?;
        let speaking = analysis.speaker.code == SpeakerCode::Speaking;
        asd_right += usize::from(speaking == *matched);
        asd_rows.push(json!({
            "video": video, "audio": audio, "match": matched,
            "contrast": (analysis.speaker.contrast * 1000.0).round() / 1000.0,
            "speaking": speaking,
        }));
    }

    // Every clip's video against every other clip's audio, from the signals already measured
    // (same grid for clips that start at the same time).
    let (mut pairs_own_ok, mut pairs_other, mut pairs_other_ok) = (0usize, 0usize, 0usize);
    for (i, video) in genuine.iter().enumerate() {
        for (j, audio) in genuine.iter().enumerate() {
            let contrast =
                vouch::bio::video::speaker::synchrony(&video.signals.mouth, &audio.signals.band_db)
                    .map_or(0.0, |s| s.contrast);
            let speaking = contrast >= vouch::bio::video::speaker::PASS_CONTRAST;
            if i == j {
                pairs_own_ok += usize::from(speaking);
            } else {
                pairs_other += 1;
                pairs_other_ok += usize::from(!speaking);
            }
        }
    }

    // Liveness: genuine clips and two attacks per clip.
    let bpcer_count = genuine.iter().filter(|a| !a.liveness.live).count();
    let mut attacks_live = 0usize;
    let mut attack_rows = Vec::new();
    for (i, clip) in clips.iter().enumerate() {
        let own = &decoded[&clip.file];
        let other = &decoded[&clips[(i + 1) % n].file];
        for (kind, attack) in [("photo", photo_of(own)), ("dub", with_audio(own, other))] {
            let analysis = engine
                .analyze_clip(attack, &clip.transcript, &vocabulary, false)
                .map_err(|e| e.to_string())?;
            attacks_live += usize::from(analysis.liveness.live);
            let mut row = summary(&analysis);
            row["attack"] = json!(kind);
            row["clip"] = json!(clip.file);
            row["judged_live"] = json!(analysis.liveness.live);
            attack_rows.push(row);
        }
    }
    let attacks = 2 * n;

    // Identity across clips.
    let (mut face_genuine, mut face_genuine_ok, mut face_impostor, mut face_impostor_ok) =
        (0, 0, 0, 0);
    let (mut voice_genuine, mut voice_genuine_ok, mut voice_impostor, mut voice_impostor_ok) =
        (0, 0, 0, 0);
    for i in 0..n {
        for j in 0..n {
            if i == j {
                continue;
            }
            let same = clips[i].identity == clips[j].identity;
            if let (Some(a), Some(b)) = (
                genuine[i].track.mean_template(),
                genuine[j].track.mean_template(),
            ) {
                let m = a.compare(&b);
                if same {
                    face_genuine += 1;
                    face_genuine_ok += usize::from(m.is_match);
                } else {
                    face_impostor += 1;
                    face_impostor_ok += usize::from(!m.is_match);
                }
            }
            if let (Some(a), Some(b)) = (&genuine[i].voice.template, &genuine[j].voice.template) {
                let m = a.compare(b);
                if same {
                    voice_genuine += 1;
                    voice_genuine_ok += usize::from(m.is_match);
                } else {
                    voice_impostor += 1;
                    voice_impostor_ok += usize::from(!m.is_match);
                }
            }
        }
    }

    let ratio = |a: usize, b: usize| {
        if b == 0 {
            Value::Null
        } else {
            json!(a as f64 / b as f64)
        }
    };
    let report = json!({
        "asd_accuracy": ratio(asd_right, trials.len()),
        "phrase_accuracy": if phrase_unavailable { Value::Null } else { ratio(phrase_right, phrase_trials) },
        "phrase_exact": ratio(phrase_exact, n),
        "phrase_word_error_rate": ratio(phrase_word_errors, phrase_words),
        "liveness_apcer": ratio(attacks_live, attacks),
        "liveness_bpcer": ratio(bpcer_count, n),
        "ms_per_clip": total_ms / n as f64,
        "clips": n,
        "asd_trials": trials.len(),
        "phrase_trials": phrase_trials,
        "asd_all_pairs": {
            "own_audio_accepted": format!("{pairs_own_ok}/{n}"),
            "other_audio_rejected": format!("{pairs_other_ok}/{pairs_other}"),
        },
        "attacks": attacks,
        "face_same_identity_accepted": format!("{face_genuine_ok}/{face_genuine}"),
        "face_other_identity_rejected": format!("{face_impostor_ok}/{face_impostor}"),
        "voice_same_identity_accepted": format!("{voice_genuine_ok}/{voice_genuine}"),
        "voice_other_identity_rejected": format!("{voice_impostor_ok}/{voice_impostor}"),
        "threads": engine.thread_count(),
        "results": rows,
        "asd": asd_rows,
        "attack_results": attack_rows,
    });
    if options.json {
        println!("{report}");
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    for row in &rows {
        let _ = writeln!(out, "{row}");
    }
    for row in attack_rows.iter().chain(&asd_rows) {
        let _ = writeln!(out, "{row}");
    }
    let _ = writeln!(
        out,
        "clips {n}: active speaker {asd_right}/{} right, phrase {phrase_right}/{phrase_trials} right ({phrase_exact}/{n} recognised exactly, word error rate {:.1} %), liveness APCER {attacks_live}/{attacks} BPCER {bpcer_count}/{n}, {:.0} ms per clip on {} threads",
        trials.len(),
        100.0 * phrase_word_errors as f64 / phrase_words.max(1) as f64,
        total_ms / n as f64,
        engine.thread_count()
    );
    let _ = writeln!(
        out,
        "active speaker over every video x audio pair: own audio {pairs_own_ok}/{n} accepted, other audio {pairs_other_ok}/{pairs_other} rejected"
    );
    let _ = writeln!(
        out,
        "identity: face same {face_genuine_ok}/{face_genuine} accepted, other {face_impostor_ok}/{face_impostor} rejected; voice same {voice_genuine_ok}/{voice_genuine} accepted, other {voice_impostor_ok}/{voice_impostor} rejected"
    );
    if phrase_unavailable {
        let _ = writeln!(
            out,
            "phrase check unavailable: build with the `phrase` feature and pass --speech-model"
        );
    }
    Ok(())
}
