//! `vouch eval videos`: process-video's checks on one labelled set of talking-head clips, with
//! every figure reported for that set alone.
//!
//! The clips file is either `mp4,webm,identity,transcript` (GRID style: every clip genuine; the
//! `webm` column with `--webm`) or `file,label,kind,identity,...,transcript` (talking-real style:
//! `label` real or fake). Each clip is decoded once and analysed once with its phrase; then:
//!
//! - **active speaker**: every genuine clip's video with its own audio (must be accepted) and with
//!   every other genuine clip's audio (a dub: must be rejected), from the face track already
//!   measured; the area under the ROC curve of the statistic; `asd_trials.csv` beside the clips,
//!   when present, as before; and the threshold's rule checked: the statistic where the sound is
//!   unrelated to the mouth (each genuine clip's own audio circularly shifted, every position at
//!   least 600 ms clear, `speaker::null_statistics`), its 95th percentile and the share at or
//!   above `PASS_Z` (`asd_null_z` holds the values, for pooling sets);
//! - **phrase** (clips with a transcript only): the own transcript (must pass), another clip's
//!   transcript, the transcript with one word changed, and a phrase of random vocabulary words
//!   (each must fail);
//! - **attacks**, each judged by liveness alone and by the presentation checks that the default
//!   rules require (live, speaking, phrase recognised): a photo (the clip's middle frame held, with
//!   the clip's own audio), a dub (the clip's video with the next genuine clip's audio), a replay
//!   claimed with another phrase, and, in sets that have them, the labelled forgeries (`fake`),
//!   claimed with what they say;
//! - **end to end** through `engine.verification().process_clip` with both consents: each identity enrolls on
//!   one call (its first clip) and verifies on another (its second clip, or the same clip again);
//!   every identity's clip is also presented as the next identity (an impostor).
//!
//! Clips without a transcript (talking-real) are claimed with what the recogniser transcribes
//! (`Analysis::transcribe`): that exercises every other check on real speech, but the phrase
//! figures come only from clips with a real transcript.
//!
//! A clip that cannot be read, decoded, transcribed or analysed is counted and listed
//! (`unreadable`) and left out. `--report DIR` writes report.json, scores.csv (the active-speaker
//! trials: video clip, audio clip, 1 for its own audio, the statistic z), the active-speaker DET
//! plot (z negated as a distance, the threshold `PASS_Z` marked) and summary.md.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use serde_json::json;
use vouch::service::process::VideoRequest;
use vouch::service::video::decode_options;
use vouch::service::ConsentKind;
use vouch::ApiKey;
use vouch::Service;
use vouch_bio::Signals;
use vouch_bio::VideoAnalysis;
use vouch_bio::{check_speaker, null_statistics, SpeakerCode, SYNC_PASS_Z};
use vouch_bio::{words, Phrase, PhraseCode};
use vouch_media::{Clip, Frame};

use crate::eval::plot::{write_det, DetPlot, System};
use crate::eval::progress::Progress;
use crate::eval::report::{as_json, percent_of, Output, Report, Scored, Share, Summary};
use crate::eval::{det_path, eval_engine, plot_shown, read_columns, read_labelled, Sequence};

/// Options of `vouch eval videos`.
#[derive(clap::Args)]
pub struct VideoEval {
    /// CSV with a header and the columns mp4, webm, identity, transcript (every clip genuine)
    /// or file, label (real/fake), identity, transcript (may be empty); `asd_trials.csv`
    /// beside it (video_from, audio_from, match) adds active-speaker trials.
    #[arg(long)]
    pub clips: PathBuf,
    /// Folder the clip names are relative to.
    #[arg(long)]
    pub dir: PathBuf,
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    /// Words the impostor phrases are drawn from (default: every word of the transcripts).
    #[arg(long)]
    pub vocabulary: Option<String>,
    /// CSV with the columns file and transcript: transcripts for clips the clips file has none
    /// for (talking-real's non-English clips: `scripts/phrase-speech/talking-real-transcripts.csv`).
    #[arg(long)]
    pub transcripts: Option<PathBuf>,
    /// Read the webm column instead of mp4.
    #[arg(long)]
    pub webm: bool,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    #[command(flatten)]
    pub output: Output,
    /// Where to write the active-speaker DET plot, .png or .svg (default: none, or the report's
    /// with --report).
    #[arg(long)]
    pub det: Option<PathBuf>,
    /// Write each clip's face and audio signals to DIR/<clip>.json (for studying the checks).
    #[arg(long)]
    pub dump: Option<PathBuf>,
}

struct ClipRow {
    file: String,
    genuine: bool,
    identity: String,
    /// The spoken words, when the set knows them.
    transcript: Option<String>,
}

fn read_clips(path: &Path, webm: bool) -> Result<Vec<ClipRow>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let header: Vec<&str> = text.lines().next().unwrap_or("").split(',').collect();
    let transcript = |text: String| Some(text).filter(|t| !t.trim().is_empty());
    if header.contains(&"file") {
        return read_columns(path, &["file", "label", "identity", "transcript"])?
            .into_iter()
            .map(|row| {
                let [file, label, identity, spoken]: [String; 4] =
                    row.try_into().map_err(|_| "short row".to_owned())?;
                Ok(ClipRow {
                    genuine: match label.as_str() {
                        "real" => true,
                        "fake" => false,
                        other => return Err(format!("{file}: label {other:?}")),
                    },
                    file,
                    identity,
                    transcript: transcript(spoken),
                })
            })
            .collect();
    }
    let file = if webm { "webm" } else { "mp4" };
    Ok(read_columns(path, &[file, "identity", "transcript"])?
        .into_iter()
        .map(|mut row| ClipRow {
            transcript: transcript(row.pop().unwrap_or_default()),
            identity: row.pop().unwrap_or_default(),
            file: row.pop().unwrap_or_default(),
            genuine: true,
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

fn round3(value: f32) -> f64 {
    (f64::from(value) * 1000.0).round() / 1000.0
}

/// What one analysis found, as every clip and attack row reports it.
#[derive(Serialize)]
struct Measures {
    speaker_code: u8,
    speaker_score: f64,
    contrast: f64,
    lag_ms: i64,
    liveness_code: u8,
    mouth_motion: f64,
    blinks: usize,
    head_motion: f64,
    face_coverage: f32,
    speech_seconds: f32,
    passive_real: Option<f64>,
    phrase_code: u8,
    recognized: String,
}

impl Measures {
    fn of(analysis: &VideoAnalysis) -> Self {
        Measures {
            speaker_code: analysis.speaker.code as u8,
            speaker_score: round3(analysis.speaker.score),
            contrast: round3(analysis.speaker.contrast),
            lag_ms: analysis.speaker.lag_ms,
            liveness_code: analysis.liveness.code as u8,
            mouth_motion: round3(analysis.liveness.mouth_motion),
            blinks: analysis.liveness.blinks,
            head_motion: round3(analysis.liveness.head_motion),
            face_coverage: analysis.signals.face_coverage,
            speech_seconds: analysis.signals.speech_seconds,
            passive_real: analysis.liveness.passive.map(|p| round3(p.real)),
            phrase_code: analysis.phrase.code as u8,
            recognized: analysis.phrase.recognized.clone(),
        }
    }
}

/// What the presentation checks of the default rules say: live, the visible mouth speaking the
/// audio, and the phrase recognised.
fn presentation_accepted(analysis: &VideoAnalysis) -> bool {
    analysis.liveness.live
        && analysis.speaker.code == SpeakerCode::Speaking
        && analysis.phrase.code == PhraseCode::Matched
}

/// Area under the ROC curve: the chance that a random positive outscores a random negative (ties
/// count half).
pub(crate) fn auc(positives: &[f64], negatives: &[f64]) -> Option<f64> {
    if positives.is_empty() || negatives.is_empty() {
        return None;
    }
    let mut wins = 0.0;
    for p in positives {
        for n in negatives {
            wins += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    Some(wins / (positives.len() * negatives.len()) as f64)
}

/// A counted share, `k of n`; none (null) of nothing.
fn share(k: usize, n: usize) -> Option<Share> {
    (n != 0).then(|| Share::new(k, n))
}

/// `k / n`; none (null) of nothing.
fn rate(k: usize, n: usize) -> Option<f64> {
    (n != 0).then(|| k as f64 / n as f64)
}

/// The words of `phrase` with word `at` replaced by another vocabulary word.
fn one_word_changed(phrase: &[String], vocabulary: &[String], at: usize) -> Option<String> {
    let at = at % phrase.len().max(1);
    let original = phrase.get(at)?;
    let start = vocabulary.iter().position(|w| w == original).unwrap_or(0);
    let replacement = (1..=vocabulary.len())
        .map(|k| &vocabulary[(start + k * 7) % vocabulary.len()])
        .find(|w| *w != original)?;
    let mut changed = phrase.to_vec();
    changed[at] = replacement.clone();
    Some(changed.join(" "))
}

/// A phrase of `len` vocabulary words picked by a fixed pseudo-random sequence.
fn random_phrase(vocabulary: &[String], len: usize, seed: u64) -> String {
    let mut sequence = Sequence(seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    (0..len.max(1))
        .map(|_| vocabulary[sequence.below(vocabulary.len())].clone())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The API key the end-to-end calls use: every service, the default rules.
fn key(project: &str) -> ApiKey {
    ApiKey {
        key_id: "key_eval".to_owned(),
        project_id: project.to_owned(),
        services: Service::ALL.to_vec(),
        scores_id: None,
    }
}

pub fn run(options: &VideoEval) -> Result<(), String> {
    let clips = read_inputs(options)?;
    let set = options
        .dir
        .canonicalize()
        .ok()
        .and_then(|dir| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| options.dir.display().to_string());
    let engine = eval_engine(&options.models, options.threads)?;
    let vocabulary = vocabulary_words(options, &clips);
    let quiet = options.output.json;
    let started = Instant::now();
    let set_analysed = analyse_clips(&engine, options, &clips)?;
    let asd = active_speaker(&engine, options, &set_analysed)?;
    let phrases = phrase_trials(&engine, &set_analysed, &vocabulary)?;
    let attacks = attacks(&engine, &set_analysed, quiet)?;
    let e2e = end_to_end(&engine, &set_analysed, quiet)?;
    let plot = det_plot(&set, &asd);
    let det_path = det_path(
        options.det.as_deref(),
        options.output.report.as_deref(),
        &options.clips,
    )
    .filter(|_| options.det.is_some());
    if let Some(path) = &det_path {
        write_det(path, &plot)?;
    }
    let findings = Findings {
        set: &set,
        clips: &set_analysed,
        asd: &asd,
        phrases: &phrases,
        attacks: &attacks,
        e2e: &e2e,
        threads: engine.runtime().thread_count(),
    };
    let report = findings.report(
        started.elapsed().as_secs_f64(),
        plot_shown(det_path.as_deref(), options.output.report.as_deref()),
    );
    let json = serde_json::to_value(&report).map_err(|error| error.to_string())?;
    if let Some(dir) = &options.output.report {
        Report {
            json: &json,
            trials: &asd.scored,
            plot: (!asd.own_scores.is_empty() && !asd.other_scores.is_empty()).then_some(&plot),
            summary: report_summary(&report, options),
        }
        .write(dir)?;
    }
    if options.output.json {
        println!("{json}");
        return Ok(());
    }
    findings.print(&report);
    Ok(())
}

/// The clips file, with the transcripts of `--transcripts` added where a clip has none.
fn read_inputs(options: &VideoEval) -> Result<Vec<ClipRow>, String> {
    let mut clips = read_clips(&options.clips, options.webm)?;
    if let Some(path) = &options.transcripts {
        for row in read_columns(path, &["file", "transcript"])? {
            let text = row[1].trim();
            for clip in clips.iter_mut().filter(|c| c.file == row[0]) {
                if clip.transcript.is_none() && !text.is_empty() {
                    clip.transcript = Some(text.to_owned());
                }
            }
        }
    }
    if clips.is_empty() {
        return Err(format!("{}: no clips", options.clips.display()));
    }
    Ok(clips)
}

/// The words impostor phrases are drawn from: `--vocabulary`, or every word of the transcripts.
fn vocabulary_words(options: &VideoEval, clips: &[ClipRow]) -> Vec<String> {
    match &options.vocabulary {
        Some(text) => words(text),
        None => {
            let mut all: Vec<String> = clips
                .iter()
                .filter_map(|c| c.transcript.as_deref())
                .flat_map(words)
                .collect();
            all.sort();
            all.dedup();
            all
        }
    }
}

/// Every clip that could be read, decoded and analysed, each once with its phrase; the later
/// steps index them `0..clips.len()`.
struct Analysed<'c> {
    /// The clips kept, in the file's order.
    clips: Vec<&'c ClipRow>,
    /// Each kept clip decoded, by file name.
    decoded: BTreeMap<String, Clip>,
    analyses: Vec<VideoAnalysis>,
    /// The phrase each clip was claimed with (its transcript, or what the recogniser heard).
    claimed: Vec<String>,
    /// One summary row per kept clip.
    rows: Vec<ClipResult>,
    /// The clips left out, and why.
    failures: Vec<Unreadable>,
    /// Decoding and analysis time, all clips, ms.
    total_ms: f64,
    /// The genuine clips and the labelled forgeries.
    genuine: Vec<usize>,
    fakes: Vec<usize>,
}

impl Analysed<'_> {
    /// The decoded clip of `k`.
    fn decoded_of(&self, k: usize) -> &Clip {
        &self.decoded[&self.clips[k].file]
    }

    /// The genuine clip after `k` (wrapping), for dubs.
    fn next_genuine(&self, k: usize) -> usize {
        let at = self.genuine.iter().position(|&g| g == k).unwrap_or(0);
        self.genuine[(at + 1) % self.genuine.len()]
    }

    /// The genuine clips whose transcript the set gives.
    fn with_transcript(&self) -> Vec<usize> {
        self.genuine
            .iter()
            .copied()
            .filter(|&k| self.clips[k].transcript.is_some())
            .collect()
    }
}

/// Step 1: decodes and analyses every clip once, with its phrase (its transcript, or what the
/// recogniser transcribes).
fn analyse_clips<'c>(
    engine: &vouch::Engine,
    options: &VideoEval,
    clips: &'c [ClipRow],
) -> Result<Analysed<'c>, String> {
    let mut set = Analysed {
        clips: Vec::new(),
        decoded: BTreeMap::new(),
        analyses: Vec::new(),
        claimed: Vec::new(),
        rows: Vec::new(),
        failures: Vec::new(),
        total_ms: 0.0,
        genuine: Vec::new(),
        fakes: Vec::new(),
    };
    let progress = Progress::new(clips.len(), "analysing clips", options.output.json);
    for clip in clips {
        progress.tick();
        match analyse_clip(engine, options, clip)? {
            Err(error) => set.failures.push(Unreadable {
                clip: clip.file.clone(),
                error,
            }),
            Ok((decoded, phrase, analysis, ms)) => {
                set.total_ms += ms;
                set.rows.push(ClipResult {
                    clip: clip.file.clone(),
                    genuine: clip.genuine,
                    claimed: phrase.clone(),
                    ms: (ms * 10.0).round() / 10.0,
                    measures: Measures::of(&analysis),
                });
                set.decoded.insert(clip.file.clone(), decoded);
                set.analyses.push(analysis);
                set.claimed.push(phrase);
                set.clips.push(clip);
            }
        }
    }
    drop(progress);
    let n = set.clips.len();
    set.genuine = (0..n).filter(|&k| set.clips[k].genuine).collect();
    set.fakes = (0..n).filter(|&k| !set.clips[k].genuine).collect();
    if set.genuine.is_empty() {
        return Err("no genuine clip could be read".to_owned());
    }
    Ok(set)
}

/// One clip of step 1: the decoded clip, its phrase, its analysis and the time both took (ms);
/// the inner error says why the clip is left out, the outer one stops the evaluation (`--dump`
/// could not write).
#[allow(clippy::type_complexity)]
fn analyse_clip(
    engine: &vouch::Engine,
    options: &VideoEval,
    clip: &ClipRow,
) -> Result<Result<(Clip, String, VideoAnalysis, f64), String>, String> {
    let path = options.dir.join(&clip.file);
    let start = Instant::now();
    let decoded = match std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| {
            engine
                .media()
                .decode_video(&bytes, &decode_options())
                .map_err(|e| e.to_string())
        }) {
        Ok(decoded) => decoded,
        Err(error) => return Ok(Err(error)),
    };
    let decode_ms = start.elapsed().as_secs_f64() * 1e3;
    let phrase = match &clip.transcript {
        Some(text) => Ok(text.clone()),
        None => {
            let samples = decoded.audio.as_ref().map_or(&[][..], |a| &a.samples);
            engine
                .analysis()
                .transcribe(samples)
                .map_err(|e| format!("transcribing: {e}"))
        }
    };
    let start = Instant::now();
    let analysed = phrase.and_then(|phrase| {
        engine
            .analysis()
            .clip(decoded.clone(), Phrase::new(&phrase), true)
            .map(|analysis| (phrase, analysis))
            .map_err(|e| format!("analysing: {e}"))
    });
    let (phrase, analysis) = match analysed {
        Ok(analysed) => analysed,
        Err(error) => return Ok(Err(error)),
    };
    let ms = decode_ms + start.elapsed().as_secs_f64() * 1e3;
    if let Some(dir) = &options.dump {
        dump(dir, &clip.file, &decoded, &analysis)?;
    }
    Ok(Ok((decoded, phrase, analysis, ms)))
}

/// Step 2's findings: the active-speaker statistic with each clip's own audio and with every
/// other genuine clip's, the null it is judged against, and the set's own trials.
struct ActiveSpeaker {
    own_scores: Vec<f64>,
    other_scores: Vec<f64>,
    scored: Vec<Scored>,
    own_ok: usize,
    other_ok: usize,
    /// The statistic where the sound is unrelated (circular shifts), sorted.
    null: Vec<f32>,
    null_above: usize,
    null_p95: Option<f64>,
    /// `asd_trials.csv`: how many, and how many judged right.
    trials: usize,
    trials_right: usize,
}

/// Step 2: Active Speaker Detection, own audio and every other genuine clip's audio on the same
/// face track; the threshold's null; the set's `asd_trials.csv`.
fn active_speaker(
    engine: &vouch::Engine,
    options: &VideoEval,
    set: &Analysed<'_>,
) -> Result<ActiveSpeaker, String> {
    let mut asd = ActiveSpeaker {
        own_scores: Vec::new(),
        other_scores: Vec::new(),
        scored: Vec::new(),
        own_ok: 0,
        other_ok: 0,
        null: Vec::new(),
        null_above: 0,
        null_p95: None,
        trials: 0,
        trials_right: 0,
    };
    for &i in &set.genuine {
        let video = &set.analyses[i];
        for &j in &set.genuine {
            let check = if i == j {
                video.speaker
            } else {
                let signals = Signals::new(
                    &video.track,
                    &video.timestamps_ms,
                    set.decoded_of(j).audio.as_ref(),
                    &set.analyses[j].segments,
                    Some(&set.analyses[j].visemes),
                );
                check_speaker(&signals)
            };
            let speaking = check.code == SpeakerCode::Speaking;
            let statistic = f64::from(speaker_statistic(&check));
            asd.scored.push(Scored {
                a: set.clips[i].file.clone(),
                b: set.clips[j].file.clone(),
                genuine: i == j,
                score: statistic,
            });
            if i == j {
                asd.own_scores.push(statistic);
                asd.own_ok += usize::from(speaking);
            } else {
                asd.other_scores.push(statistic);
                asd.other_ok += usize::from(!speaking);
            }
        }
    }
    // The threshold's rule: the statistic where the sound is unrelated (circular shifts of the
    // clip's own audio), pooled over the genuine clips; PASS_Z should be its 95th percentile.
    asd.null = set
        .genuine
        .iter()
        .flat_map(|&k| null_statistics(&set.analyses[k].signals))
        .collect();
    asd.null.sort_by(f32::total_cmp);
    asd.null_above = asd.null.iter().filter(|&&z| z >= SYNC_PASS_Z).count();
    asd.null_p95 = (!asd.null.is_empty()).then(|| {
        let at = (0.95 * (asd.null.len() - 1) as f64).round() as usize;
        f64::from(asd.null[at])
    });
    let trials = read_asd_trials(&options.clips.with_file_name("asd_trials.csv"))?;
    asd.trials = trials.len();
    asd.trials_right = asd_trials(engine, set, &trials)?;
    Ok(asd)
}

/// The set's own active-speaker trials (video from one clip, audio from another, whether they
/// match): how many are judged right.
fn asd_trials(
    engine: &vouch::Engine,
    set: &Analysed<'_>,
    trials: &[(String, String, bool)],
) -> Result<usize, String> {
    let by_name = |name: &str| {
        set.decoded.get(name).or_else(|| {
            // The trials name the mp4 files; with --webm, find the row's clip by stem.
            let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
            set.decoded
                .iter()
                .find(|(k, _)| k.rsplit_once('.').map_or(k.as_str(), |(s, _)| s) == stem)
                .map(|(_, v)| v)
        })
    };
    let mut right = 0usize;
    for (video, audio, matched) in trials {
        let (Some(v), Some(a)) = (by_name(video), by_name(audio)) else {
            return Err(format!(
                "asd trial {video},{audio}: clip not in the clips file"
            ));
        };
        let analysis = engine
            .analysis()
            .clip(with_audio(v, a), Phrase::new(""), false)
            .map_err(|e| e.to_string())?;
        right += usize::from((analysis.speaker.code == SpeakerCode::Speaking) == *matched);
    }
    Ok(right)
}

/// Step 3's findings: the own transcripts, and the impostor phrases by kind (accepted, of).
struct Phrases {
    own: usize,
    own_ok: usize,
    false_accepts: BTreeMap<&'static str, (usize, usize)>,
    rows: Vec<PhraseRow>,
}

/// Step 3: the phrase check, on clips whose transcript the set gives: the own transcript (must
/// pass), another clip's, one word changed, random vocabulary words (each must fail).
fn phrase_trials(
    engine: &vouch::Engine,
    set: &Analysed<'_>,
    vocabulary: &[String],
) -> Result<Phrases, String> {
    let mut phrases = Phrases {
        own: 0,
        own_ok: 0,
        false_accepts: BTreeMap::new(),
        rows: Vec::new(),
    };
    let with_transcript = set.with_transcript();
    for (t, &k) in with_transcript.iter().enumerate() {
        phrases.own += 1;
        phrases.own_ok += usize::from(set.analyses[k].phrase.code == PhraseCode::Matched);
        let samples = set
            .decoded_of(k)
            .audio
            .as_ref()
            .map(|a| a.samples.clone())
            .unwrap_or_default();
        let expected = words(&set.claimed[k]);
        let mut impostors: Vec<(&'static str, String)> = Vec::new();
        if with_transcript.len() > 1 {
            let other = with_transcript[(t + 1) % with_transcript.len()];
            impostors.push(("other_transcript", set.claimed[other].clone()));
        }
        if let Some(changed) = one_word_changed(&expected, vocabulary, t) {
            impostors.push(("one_word_changed", changed));
        }
        if !vocabulary.is_empty() {
            impostors.push((
                "random_words",
                random_phrase(vocabulary, expected.len(), t as u64),
            ));
        }
        for (kind, phrase) in impostors {
            let check = engine
                .analysis()
                .phrase_in_audio(&samples, Phrase::new(&phrase))
                .map_err(|e| e.to_string())?;
            let accepted = check.code == PhraseCode::Matched;
            let entry = phrases.false_accepts.entry(kind).or_default();
            entry.0 += usize::from(accepted);
            entry.1 += 1;
            phrases.rows.push(PhraseRow {
                clip: set.clips[k].file.clone(),
                kind,
                claimed: phrase,
                accepted,
                recognized: check.recognized,
            });
        }
    }
    Ok(phrases)
}

impl Phrases {
    /// False accepts over all impostor kinds: (accepted, of).
    fn false_accepted(&self) -> (usize, usize) {
        self.false_accepts
            .values()
            .fold((0, 0), |(a, b), (k, m)| (a + k, b + m))
    }
}

/// Step 4's findings: per attack kind (judged live, accepted by the presentation checks, of),
/// one row per attack, and the genuine clips liveness or the presentation checks rejected.
struct Attacks {
    counts: BTreeMap<&'static str, (usize, usize, usize)>,
    rows: Vec<AttackRow>,
    bpcer: usize,
    presentation_rejected: usize,
}

impl Attacks {
    /// Counts one attack and keeps its row.
    fn judge(&mut self, kind: &'static str, file: &str, analysis: &VideoAnalysis) {
        let entry = self.counts.entry(kind).or_default();
        entry.0 += usize::from(analysis.liveness.live);
        entry.1 += usize::from(presentation_accepted(analysis));
        entry.2 += 1;
        self.rows.push(AttackRow {
            attack: kind,
            clip: file.to_owned(),
            judged_live: analysis.liveness.live,
            presentation_accepted: presentation_accepted(analysis),
            measures: Measures::of(analysis),
        });
    }
}

/// Step 4: the attacks, each judged by liveness alone and by the presentation checks: a photo
/// (the middle frame held, the clip's own audio), a dub (the next genuine clip's audio), a replay
/// claimed with another phrase, and the set's labelled forgeries.
fn attacks(engine: &vouch::Engine, set: &Analysed<'_>, quiet: bool) -> Result<Attacks, String> {
    let mut attacks = Attacks {
        counts: BTreeMap::new(),
        rows: Vec::new(),
        bpcer: 0,
        presentation_rejected: 0,
    };
    let with_transcript = set.with_transcript();
    let analyse = |clip: Clip, phrase: &str| {
        engine
            .analysis()
            .clip(clip, Phrase::new(phrase), false)
            .map_err(|e| e.to_string())
    };
    let progress = Progress::new(set.genuine.len(), "attacks", quiet);
    for &k in &set.genuine {
        progress.tick();
        let file = &set.clips[k].file;
        let own = set.decoded_of(k);
        let other = set.next_genuine(k);
        attacks.judge("photo", file, &analyse(photo_of(own), &set.claimed[k])?);
        if other != k {
            let dub = analyse(with_audio(own, set.decoded_of(other)), &set.claimed[other])?;
            attacks.judge("dub", file, &dub);
        }
        // A replay of the genuine recording when another phrase is displayed.
        let displayed = match with_transcript.iter().position(|&w| w == k) {
            Some(at) if with_transcript.len() > 1 => {
                set.claimed[with_transcript[(at + 1) % with_transcript.len()]].clone()
            }
            _ => "please open the door now".to_owned(),
        };
        let replay = analyse(own.clone(), &displayed)?;
        attacks.judge("replay_other_phrase", file, &replay);
    }
    drop(progress);
    for &k in &set.fakes {
        attacks.judge("forgery", &set.clips[k].file, &set.analyses[k]);
    }
    attacks.bpcer = set
        .genuine
        .iter()
        .filter(|&&k| !set.analyses[k].liveness.live)
        .count();
    attacks.presentation_rejected = set
        .genuine
        .iter()
        .filter(|&&k| !presentation_accepted(&set.analyses[k]))
        .count();
    Ok(attacks)
}

/// Step 5's findings, per person.
struct EndToEnd {
    people: usize,
    enrolled: usize,
    accepted: usize,
    impostor_accepted: usize,
    impostor_trials: usize,
    rows: Vec<PersonRow>,
}

/// Step 5: end to end through process-video with both consents: each identity enrolls on one
/// call (its first clip) and verifies on another (its second clip, or the same again); another
/// identity's clip is presented as it once it is enrolled.
fn end_to_end(engine: &vouch::Engine, set: &Analysed<'_>, quiet: bool) -> Result<EndToEnd, String> {
    let mut identities: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for &k in &set.genuine {
        identities
            .entry(&set.clips[k].identity)
            .or_default()
            .push(k);
    }
    let people: Vec<(&str, Vec<usize>)> = identities.into_iter().collect();
    let mut e2e = EndToEnd {
        people: people.len(),
        enrolled: 0,
        accepted: 0,
        impostor_accepted: 0,
        impostor_trials: 0,
        rows: Vec::new(),
    };
    let progress = Progress::new(people.len(), "end to end", quiet);
    for (p, (identity, ks)) in people.iter().enumerate() {
        progress.tick();
        let project = format!("eval-{p}");
        let user = format!("user-{p}");
        for kind in [ConsentKind::Authorization, ConsentKind::Storage] {
            engine
                .consents()
                .set(&project, &user, kind, true)
                .map_err(|e| e.to_string())?;
        }
        let call = |k: usize, fullname: &str| {
            engine
                .verification()
                .process_clip(
                    &VideoRequest {
                        key: &key(&project),
                        fullname,
                        session_id: None,
                        request_id: None,
                        phrase: &set.claimed[k],
                        language: None,
                        // Measured as authentications: the enrolling call does not pass.
                        registration: false,
                    },
                    set.decoded_of(k).clone(),
                )
                .map_err(|e| e.to_string())
        };
        let first = call(ks[0], &user)?;
        e2e.enrolled += usize::from(first.auto_enrolled);
        let verify_on = *ks.get(1).unwrap_or(&ks[0]);
        // A person the first call did not enroll is a failure to enroll: the second call is not
        // made (it would enroll the person itself and pass on its own templates).
        let second = if first.auto_enrolled {
            Some(call(verify_on, &user)?)
        } else {
            None
        };
        let passed = second.as_ref().is_some_and(|s| s.decision.passed);
        e2e.accepted += usize::from(passed);
        e2e.rows.push(PersonRow {
            identity: (*identity).to_owned(),
            enrolled_from: set.clips[ks[0]].file.clone(),
            verified_with: set.clips[verify_on].file.clone(),
            auto_enrolled: first.auto_enrolled,
            enrollment_reasons: first.decision.decision_reasons,
            passed,
            reasons: second.map(|s| s.decision.decision_reasons),
        });
        // Someone else claiming to be this person, once the person is enrolled.
        if first.auto_enrolled && people.len() > 1 {
            let other = people[(p + 1) % people.len()].1[0];
            let attempt = call(other, &user)?;
            e2e.impostor_trials += 1;
            e2e.impostor_accepted += usize::from(attempt.decision.passed);
        }
    }
    drop(progress);
    Ok(e2e)
}

/// The active-speaker DET plot: the statistic as a distance (lower = own audio).
fn det_plot(set: &str, asd: &ActiveSpeaker) -> DetPlot {
    let distances = |scores: &[f64]| scores.iter().map(|z| -z).collect::<Vec<f64>>();
    DetPlot {
        title: format!(
            "Active speaker DET: {set} ({} own-audio, {} other-audio trials)",
            asd.own_scores.len(),
            asd.other_scores.len()
        ),
        systems: vec![System {
            label: "lip-sound synchrony z, other clips' audio as impostors".to_owned(),
            genuine: distances(&asd.own_scores),
            impostor: distances(&asd.other_scores),
            threshold: Some((-f64::from(SYNC_PASS_Z), format!("z {}", SYNC_PASS_Z))),
            eer_interval: None,
        }],
    }
}

/// One kept clip of step 1: its analysis and how it was claimed.
#[derive(Serialize)]
struct ClipResult {
    clip: String,
    genuine: bool,
    claimed: String,
    /// Decoding and analysis, ms.
    ms: f64,
    #[serde(flatten)]
    measures: Measures,
}

/// A clip left out: it could not be read, decoded, transcribed or analysed.
#[derive(Serialize)]
struct Unreadable {
    clip: String,
    error: String,
}

/// One impostor phrase of step 3 and the phrase check's verdict.
#[derive(Serialize)]
struct PhraseRow {
    clip: String,
    kind: &'static str,
    claimed: String,
    accepted: bool,
    recognized: String,
}

/// One attack of step 4: what liveness and the presentation checks said.
#[derive(Serialize)]
struct AttackRow {
    attack: &'static str,
    clip: String,
    judged_live: bool,
    presentation_accepted: bool,
    #[serde(flatten)]
    measures: Measures,
}

/// One person of step 5: the enrolling call and the verifying one.
#[derive(Serialize)]
struct PersonRow {
    identity: String,
    enrolled_from: String,
    verified_with: String,
    auto_enrolled: bool,
    enrollment_reasons: Vec<String>,
    passed: bool,
    /// The verifying call's reasons; none when the first call did not enroll.
    reasons: Option<Vec<String>>,
}

/// One attack kind's error rates: judged live, and accepted by the presentation checks.
#[derive(Serialize)]
struct AttackFigures {
    liveness_apcer: Option<Share>,
    presentation_apcer: Option<Share>,
}

/// report.json of `eval videos` (and `--json`'s output). Written through a JSON value, whose keys
/// serde_json sorts: the file keeps the order it always had.
#[derive(Serialize)]
struct VideoReport<'a> {
    set: &'a str,
    data_set: &'a str,
    wall_s: f64,
    det_plot: Option<String>,
    clips_unreadable: usize,
    clips: usize,
    genuine_clips: usize,
    forgeries: usize,
    unreadable: &'a [Unreadable],
    asd_accuracy: Option<f64>,
    asd_auc: Option<f64>,
    /// The equal error rate of the same trials.
    asd_eer: Option<f64>,
    asd_own_audio_accepted: Option<Share>,
    asd_other_audio_rejected: Option<Share>,
    asd_trials: usize,
    asd_threshold_z: f32,
    asd_null_z_p95: Option<f64>,
    asd_null_accepted: Option<Share>,
    asd_null_z: Vec<f64>,
    phrase_accuracy: Option<f64>,
    phrase_false_reject: Option<Share>,
    phrase_false_accept: Option<Share>,
    phrase_false_accept_by_kind: BTreeMap<&'static str, Option<Share>>,
    liveness_apcer: Option<f64>,
    liveness_bpcer: Option<f64>,
    presentation_bpcer: Option<Share>,
    attacks: BTreeMap<&'static str, AttackFigures>,
    e2e_enrolled: Option<Share>,
    e2e_genuine_acceptance: Option<Share>,
    e2e_impostor_acceptance: Option<Share>,
    ms_per_clip: f64,
    threads: usize,
    results: &'a [ClipResult],
    phrase_trials: &'a [PhraseRow],
    attack_results: &'a [AttackRow],
    end_to_end: &'a [PersonRow],
}

/// Everything the steps found, for the report and the text.
struct Findings<'a> {
    set: &'a str,
    clips: &'a Analysed<'a>,
    asd: &'a ActiveSpeaker,
    phrases: &'a Phrases,
    attacks: &'a Attacks,
    e2e: &'a EndToEnd,
    threads: usize,
}

impl<'a> Findings<'a> {
    /// report.json (and `--json`'s output).
    fn report(&self, wall_s: f64, det_plot: Option<String>) -> VideoReport<'a> {
        let (set, clips, asd, phrases, attacks, e2e) = (
            self.set,
            self.clips,
            self.asd,
            self.phrases,
            self.attacks,
            self.e2e,
        );
        let n = clips.clips.len();
        let attack_figures = attacks
            .counts
            .iter()
            .map(|(kind, (live, accepted, of))| {
                let figures = AttackFigures {
                    liveness_apcer: share(*live, *of),
                    presentation_apcer: share(*accepted, *of),
                };
                (*kind, figures)
            })
            .collect();
        let (photo_dub_live, photo_dub) = ["photo", "dub"]
            .iter()
            .filter_map(|kind| attacks.counts.get(kind))
            .fold((0, 0), |(a, b), (live, _, of)| (a + live, b + of));
        let (fa, fa_of) = phrases.false_accepted();
        VideoReport {
            set,
            data_set: set,
            wall_s,
            det_plot,
            clips_unreadable: clips.failures.len(),
            clips: n,
            genuine_clips: clips.genuine.len(),
            forgeries: clips.fakes.len(),
            unreadable: &clips.failures,
            asd_accuracy: if asd.trials == 0 {
                rate(
                    asd.own_ok + asd.other_ok,
                    asd.own_scores.len() + asd.other_scores.len(),
                )
            } else {
                rate(asd.trials_right, asd.trials)
            },
            asd_auc: auc(&asd.own_scores, &asd.other_scores),
            // z negated: the metrics read distances.
            asd_eer: vouch_bio::metrics(
                &asd.own_scores.iter().map(|z| -z).collect::<Vec<_>>(),
                &asd.other_scores.iter().map(|z| -z).collect::<Vec<_>>(),
            )
            .eer,
            asd_own_audio_accepted: share(asd.own_ok, asd.own_scores.len()),
            asd_other_audio_rejected: share(asd.other_ok, asd.other_scores.len()),
            asd_trials: asd.trials,
            asd_threshold_z: SYNC_PASS_Z,
            asd_null_z_p95: asd.null_p95,
            asd_null_accepted: share(asd.null_above, asd.null.len()),
            asd_null_z: asd.null.iter().map(|&z| round3(z)).collect(),
            phrase_accuracy: rate(phrases.own_ok + (fa_of - fa), phrases.own + fa_of),
            phrase_false_reject: share(phrases.own - phrases.own_ok, phrases.own),
            phrase_false_accept: share(fa, fa_of),
            phrase_false_accept_by_kind: phrases
                .false_accepts
                .iter()
                .map(|(kind, (accepted, of))| (*kind, share(*accepted, *of)))
                .collect(),
            liveness_apcer: rate(photo_dub_live, photo_dub),
            liveness_bpcer: rate(attacks.bpcer, clips.genuine.len()),
            presentation_bpcer: share(attacks.presentation_rejected, clips.genuine.len()),
            attacks: attack_figures,
            e2e_enrolled: share(e2e.enrolled, e2e.people),
            e2e_genuine_acceptance: share(e2e.accepted, e2e.people),
            e2e_impostor_acceptance: share(e2e.impostor_accepted, e2e.impostor_trials),
            ms_per_clip: clips.total_ms / n.max(1) as f64,
            threads: self.threads,
            results: &clips.rows,
            phrase_trials: &phrases.rows,
            attack_results: &attacks.rows,
            end_to_end: &e2e.rows,
        }
    }

    /// The text output: every row, then the figures.
    fn print(&self, report: &VideoReport<'_>) {
        let (clips, asd, attacks) = (self.clips, self.asd, self.attacks);
        let mut out = std::io::stdout().lock();
        // Each row as report.json holds it.
        for row in &clips.rows {
            let _ = writeln!(out, "{}", as_json(row));
        }
        for row in &attacks.rows {
            let _ = writeln!(out, "{}", as_json(row));
        }
        for row in &self.e2e.rows {
            let _ = writeln!(out, "{}", as_json(row));
        }
        let text = |share: &Option<Share>| {
            share.map_or("-".to_owned(), |share| {
                format!("{}/{}", share.count, share.of)
            })
        };
        let n = clips.clips.len();
        let _ = writeln!(
            out,
            "set {}: {n} clips ({} genuine, {} forgeries), {:.0} ms per clip on {} threads",
            self.set,
            clips.genuine.len(),
            clips.fakes.len(),
            clips.total_ms / n.max(1) as f64,
            self.threads
        );
        let _ = writeln!(
            out,
            "active speaker: own audio {} accepted, other audio {} rejected, AUC {}, EER {}",
            text(&report.asd_own_audio_accepted),
            text(&report.asd_other_audio_rejected),
            report.asd_auc.map_or("-".to_owned(), |a| format!("{a:.3}")),
            report
                .asd_eer
                .map_or("-".to_owned(), |e| format!("{:.1} %", 100.0 * e))
        );
        let _ = writeln!(
            out,
            "active speaker null (the clips' own audio circularly shifted): {} positions, 95th percentile of z {}, {} at or above the threshold {}",
            asd.null.len(),
            asd.null_p95.map_or("-".to_owned(), |z| format!("{z:.2}")),
            text(&report.asd_null_accepted),
            SYNC_PASS_Z
        );
        let _ = writeln!(
            out,
            "phrase: false reject {}, false accept {} {}",
            text(&report.phrase_false_reject),
            text(&report.phrase_false_accept),
            as_json(&report.phrase_false_accept_by_kind)
        );
        let _ = writeln!(
            out,
            "liveness: BPCER {}/{}; presentation checks reject {} genuine",
            attacks.bpcer,
            clips.genuine.len(),
            text(&report.presentation_bpcer)
        );
        for (kind, (live, accepted, of)) in &attacks.counts {
            let _ = writeln!(
                out,
                "attack {kind}: judged live {live}/{of}, accepted by the presentation checks {accepted}/{of}"
            );
        }
        let _ = writeln!(
            out,
            "end to end: enrolled {}, genuine accepted {}, impostor accepted {}",
            text(&report.e2e_enrolled),
            text(&report.e2e_genuine_acceptance),
            text(&report.e2e_impostor_acceptance)
        );
        for failure in &clips.failures {
            let _ = writeln!(out, "unreadable: {}", as_json(failure));
        }
    }
}

/// A counted share as `count of n (rate %)`, "n/a" for none.
fn count(share: &Option<Share>) -> String {
    share.as_ref().map_or("n/a".into(), Share::text)
}

/// summary.md of `eval videos`.
fn report_summary(r: &VideoReport<'_>, options: &VideoEval) -> String {
    let mut s = Summary::new(&format!("process-video checks: {}", r.set));
    s.row(
        "data set",
        format!(
            "`{}`, clips in `{}`",
            options.clips.display(),
            options.dir.display()
        ),
    );
    s.row(
        "clips",
        format!(
            "{} analysed ({} genuine, {} forgeries), {} unreadable",
            r.clips, r.genuine_clips, r.forgeries, r.clips_unreadable
        ),
    );
    s.row(
        "models",
        format!(
            "faces {}; speech {}; passive liveness {}, {}",
            vouch_bio::FACE_MODEL_ID,
            vouch_bio::infer::WHISPER_DECODER.file,
            vouch_bio::infer::PASSIVE_ANTISPOOF.file,
            vouch_bio::infer::PASSIVE_LIVENESS.file
        ),
    );
    summary_active_speaker(&mut s, r);
    summary_phrases_and_presentation(&mut s, r);
    summary_end_to_end_and_time(&mut s, r);
    if r.asd_auc.is_some() {
        s.text("![Active speaker DET curve](det.png)");
    }
    s.failed("Unreadable clips", r.unreadable, |u| (&u.clip, &u.error));
    s.finish()
}

/// summary.md's active-speaker rows: own and other audio, AUC, EER and the threshold.
fn summary_active_speaker(s: &mut Summary, r: &VideoReport<'_>) {
    s.row(
        "active speaker, own audio accepted",
        count(&r.asd_own_audio_accepted),
    );
    s.row(
        "active speaker, other audio rejected",
        count(&r.asd_other_audio_rejected),
    );
    s.row(
        "active speaker AUC",
        r.asd_auc.map_or("n/a".into(), |a| format!("{a:.3}")),
    );
    s.row(
        "active speaker EER",
        r.asd_eer
            .map_or("n/a".into(), |e| format!("{:.1} %", 100.0 * e)),
    );
    s.row(
        "active speaker threshold",
        format!(
            "z {}; unrelated sound (circular shifts) at or above it: {}, 95th percentile {}",
            as_json(r.asd_threshold_z),
            count(&r.asd_null_accepted),
            r.asd_null_z_p95.map_or("n/a".into(), |z| format!("{z:.2}"))
        ),
    );
}

/// summary.md's rows on the phrase check, liveness and each presentation attack.
fn summary_phrases_and_presentation(s: &mut Summary, r: &VideoReport<'_>) {
    s.row("phrase false reject", count(&r.phrase_false_reject));
    s.row("phrase false accept", count(&r.phrase_false_accept));
    s.row("liveness BPCER", percent_of(r.liveness_bpcer));
    s.row(
        "presentation checks reject genuine",
        count(&r.presentation_bpcer),
    );
    for (kind, figures) in &r.attacks {
        s.row(
            &format!("attack `{kind}`"),
            format!(
                "judged live {}; accepted by the presentation checks {}",
                count(&figures.liveness_apcer),
                count(&figures.presentation_apcer)
            ),
        );
    }
}

/// summary.md's end-to-end rows and the time.
fn summary_end_to_end_and_time(s: &mut Summary, r: &VideoReport<'_>) {
    s.row("end to end, enrolled", count(&r.e2e_enrolled));
    s.row(
        "end to end, genuine accepted",
        count(&r.e2e_genuine_acceptance),
    );
    s.row(
        "end to end, impostor accepted",
        count(&r.e2e_impostor_acceptance),
    );
    s.row(
        "time",
        format!(
            "{:.0} ms per clip on {} threads, {:.0} s in all",
            r.ms_per_clip, r.threads, r.wall_s
        ),
    );
}

/// The active-speaker statistic the ROC curve is drawn from.
fn speaker_statistic(check: &vouch_bio::SpeakerCheck) -> f32 {
    check.contrast
}

/// Writes a clip's per-frame FaceMesh points and signals to `dir/<clip>.json`, for studies.
fn dump(dir: &Path, file: &str, clip: &Clip, analysis: &VideoAnalysis) -> Result<(), String> {
    let signals = &analysis.signals;
    let frame_times: Vec<i64> = clip.frames.iter().map(|f| f.timestamp_ms).collect();
    let landmarks: Vec<Option<Vec<f32>>> = analysis
        .track
        .faces
        .iter()
        .map(|face| {
            face.as_ref().map(|face| {
                face.landmarks
                    .points
                    .iter()
                    .flat_map(|p| [(p[0] * 10.0).round() / 10.0, (p[1] * 10.0).round() / 10.0])
                    .collect()
            })
        })
        .collect();
    let value = json!({
        "times": signals.times_ms, "mouth": signals.mouth, "level": signals.band_db,
        "eyes": signals.eyes, "frame_times": frame_times, "landmarks": landmarks,
    });
    let name = file.replace('/', "_");
    std::fs::write(dir.join(format!("{name}.json")), value.to_string()).map_err(|e| e.to_string())
}
