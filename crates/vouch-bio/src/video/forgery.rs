//! Video-forgery evidence (asynchronous forgery analysis, `avf/infer`): each signal measured on its
//! own, with a finding (`real`, `fake`, `inconclusive` or `not_measured`), a fakeness score in
//! 0..1 and a sentence saying why, then fused into one verdict by a fixed rule ([`fuse`]).
//!
//! Every threshold here is placed by a stated rule on genuine development recordings or on a null
//! distribution, never per clip (`docs/avf.md` has the measurements). A signal maps its raw value
//! to a fakeness score with [`band_score`]: 0.5 at its `fake` threshold, 0.25 at its `real` one,
//! linear between and beyond (clamped to 0.02..0.98), so that scores of different signals can be
//! compared and the fused score is simply the largest.
//!
//! None of the detectors was trained on face-swap or talking-head generators (no registry ships
//! such a model): what they see is the audio-visual mismatch of a dub, synthetic speech, a mouth
//! region that was rendered at a lower resolution than the face around it, and edits of the
//! streams. A whole-frame generator with its own matching voice can pass all of them.

use serde::{Deserialize, Serialize};

use super::liveness::{self, LivenessCode};
use super::speaker::{self, SpeakerCheck, SpeakerCode, PASS_Z};
use super::Signals;
use crate::face::landmarks::Landmarks;
use crate::face::{EmbeddedFace, FaceTrack};
use crate::voice::spoof::{SyntheticSpeech, BONA_FIDE_FROM, SPOOF_BELOW};

/// The analysis's conclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prediction {
    /// No signal found a forgery and lip sync confirmed the recording.
    Real,
    /// At least one signal found a forgery.
    Fake,
    /// No signal found a forgery, but none could confirm the recording either.
    Inconclusive,
}

/// What one signal found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// Like genuine recordings.
    Real,
    /// Beyond every genuine development recording (or the signal's null).
    Fake,
    /// Between the two thresholds.
    Inconclusive,
    /// The clip does not have what the signal needs (no speech, no face).
    NotMeasured,
}

/// One signal's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    /// `synthetic_voice`, `lip_sync`, `mouth_detail`, `streams` or `face_identity`.
    pub name: String,
    /// What it found.
    pub finding: Finding,
    /// Fakeness, 0..1 (0.5 at the signal's `fake` threshold), when measured.
    pub score: Option<f32>,
    /// The raw measure the score comes from (units in `docs/avf.md`), when measured.
    pub value: Option<f32>,
    /// Whether the verdict uses it; a signal without development data to place its thresholds
    /// is reported only.
    pub fused: bool,
    /// Why, in a sentence.
    pub detail: String,
}

/// The verdict of one video.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForgeryVerdict {
    /// The conclusion.
    pub prediction: Prediction,
    /// How sure, 0..1: the score for `fake`, one minus it for `real`, 0.5 for `inconclusive`.
    pub confidence: f32,
    /// Fakeness 0..1: the largest score of the fused signals that were measured (0 when none).
    pub score: f32,
    /// The details of the signals that decided, most telling first.
    pub reasons: Vec<String>,
    /// Every signal, measured or not.
    pub signals: Vec<Signal>,
}

/// Fakeness of `value` for a signal whose forgeries lie on the far side of `fake_at` from
/// `real_at`: 0.5 at `fake_at`, 0.25 at `real_at`, linear between and beyond, clamped to
/// 0.02..0.98. NaN is 0.5.
pub fn band_score(value: f32, fake_at: f32, real_at: f32) -> f32 {
    let score = 0.5 - 0.25 * (value - fake_at) / (real_at - fake_at);
    if score.is_nan() {
        0.5
    } else {
        score.clamp(0.02, 0.98)
    }
}

/// The finding of a score from [`band_score`].
fn finding_of(score: f32) -> Finding {
    if score >= 0.5 {
        Finding::Fake
    } else if score <= 0.25 {
        Finding::Real
    } else {
        Finding::Inconclusive
    }
}

fn not_measured(name: &str, fused: bool, detail: &str) -> Signal {
    Signal {
        name: name.to_owned(),
        finding: Finding::NotMeasured,
        score: None,
        value: None,
        fused,
        detail: detail.to_owned(),
    }
}

fn measured(name: &str, value: f32, score: f32, fused: bool, detail: String) -> Signal {
    Signal {
        name: name.to_owned(),
        finding: finding_of(score),
        score: Some(score),
        value: Some(value),
        fused,
        detail,
    }
}

/// Synthetic or converted voice: AASIST's bona-fide logit of the speech (`voice::spoof`), with
/// that module's thresholds (`fake` under [`SPOOF_BELOW`], `real` from [`BONA_FIDE_FROM`]).
pub fn synthetic_voice(speech: Option<&SyntheticSpeech>) -> Signal {
    let name = "synthetic_voice";
    let Some(speech) = speech else {
        return not_measured(name, true, "no speech to judge");
    };
    let score = band_score(speech.score, SPOOF_BELOW, BONA_FIDE_FROM);
    let detail = match finding_of(score) {
        Finding::Fake => format!(
            "the voice scores as synthetic or converted speech (AASIST logit {:.2}, under every \
             genuine development recording)",
            speech.score
        ),
        Finding::Real => format!(
            "the voice scores like genuine speech (AASIST logit {:.2})",
            speech.score
        ),
        _ => format!(
            "the synthetic-voice detector cannot tell (AASIST logit {:.2}, between its bands)",
            speech.score
        ),
    };
    measured(name, speech.score, score, true, detail)
}

/// z under which the lips and the sound are judged not to belong together: the best lag's
/// canonical correlation is less than one null standard deviation above what unrelated sound gives
/// (the circular-shift null of `video::speaker`). Genuine talking heads in sync reach [`PASS_Z`]
/// or more as a rule; on the development forgery set 2 of 54 genuine clips with speech fall under
/// 1.0 (3.7 %; 5 under 1.645, the one-sided 95 % point, which would flag 9 % of genuine clips), and
/// dubs spread from -0.2 to 3.7 (`docs/avf.md`).
pub const LIP_SYNC_FAKE_BELOW_Z: f32 = 1.0;

/// Audio-visual consistency: Active Speaker Detection's z (`video::speaker`). `fake` under
/// [`LIP_SYNC_FAKE_BELOW_Z`], `real` from [`PASS_Z`]; a still mouth while speech is heard is
/// `fake` (`mouth_still`: liveness's `NoMotion`, the mouth's spread under twice the landmarks'
/// jitter, or a mouth that never changes); no face or no speech is not measured.
pub fn lip_sync(check: &SpeakerCheck, mouth_still: bool) -> Signal {
    let name = "lip_sync";
    let never_changes = check.contrast == 0.0 && check.correlation == 0.0;
    match check.code {
        SpeakerCode::NoFace => return not_measured(name, true, "no face in enough frames"),
        SpeakerCode::NoSpeech => {
            return not_measured(name, true, "not enough speech to compare with the lips")
        }
        _ if mouth_still || (check.code == SpeakerCode::NotSpeaking && never_changes) => {
            return Signal {
                name: name.to_owned(),
                finding: Finding::Fake,
                score: Some(0.9),
                value: None,
                fused: true,
                detail: "speech is heard but the mouth does not move".to_owned(),
            };
        }
        _ => {}
    }
    let z = check.contrast;
    let score = band_score(z, LIP_SYNC_FAKE_BELOW_Z, PASS_Z);
    let detail = match finding_of(score) {
        Finding::Fake => format!(
            "the lips do not follow the speech (sync z {z:.2}, like an unrelated sound): dubbed \
             or swapped audio"
        ),
        Finding::Real => format!(
            "the lips follow the speech (sync z {z:.2}, sound {} ms after the mouth)",
            check.lag_ms
        ),
        _ => format!("the lips follow the speech only weakly (sync z {z:.2})"),
    };
    measured(name, z, score, true, detail)
}

/// Ratio of mouth detail to eye detail under which the mouth region looks rendered at a lower
/// resolution than the face around it (lip-sync generators that paste a low-resolution mouth):
/// under every genuine development clip (lowest 0.28).
pub const MOUTH_DETAIL_FAKE_BELOW: f32 = 0.25;
/// Ratio from which the mouth region is as detailed as genuine faces' (the genuine development
/// clips' 5th percentile, 0.41, rounded down).
pub const MOUTH_DETAIL_REAL_FROM: f32 = 0.4;

/// Mouth detail: the median over frames of [`mouth_to_eye_detail`]. Reported, not fused: the
/// lip-sync forgeries at hand (Wav2Lip, HyperLips, VASA-1, EMO, GeneFace outputs) render the mouth
/// at the face's own resolution, and the signal does not separate them (AUC 0.51, `docs/avf.md`).
pub fn mouth_detail(ratio: Option<f32>) -> Signal {
    let name = "mouth_detail";
    let Some(ratio) = ratio else {
        return not_measured(name, false, "no face large enough to compare its regions");
    };
    let score = band_score(ratio, MOUTH_DETAIL_FAKE_BELOW, MOUTH_DETAIL_REAL_FROM);
    let detail = match finding_of(score) {
        Finding::Fake => format!(
            "the mouth region has far less fine detail than the eyes (ratio {ratio:.2}): it looks \
             rendered at a lower resolution and pasted in"
        ),
        Finding::Real => format!("the mouth region is as detailed as the eyes (ratio {ratio:.2})"),
        _ => format!("the mouth region is softer than the eyes (ratio {ratio:.2})"),
    };
    measured(name, ratio, score, false, detail)
}

/// Facts about a file's streams, for [`streams`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamFacts {
    /// Video length: from the first to one frame past the last sampled frame, ms.
    pub video_ms: i64,
    /// Audio length, ms (`None` without an audio track).
    pub audio_ms: Option<i64>,
    /// Largest gap between consecutive sampled frames over the median gap.
    pub worst_gap: f32,
}

/// Tracks whose lengths differ by more than this (ms) were cut or joined separately.
pub const TRACK_MISMATCH_MS: i64 = 500;
/// A frame gap this many times the median is a cut or a dropped stretch.
pub const GAP_MULTIPLE: f32 = 4.0;

/// Stream forensics: tracks of different lengths and gaps in the frame timing. Such edits are
/// common in genuine uploads too, so this signal can make a verdict `inconclusive`, never `fake`.
pub fn streams(facts: &StreamFacts) -> Signal {
    let name = "streams";
    let mut findings = Vec::new();
    if let Some(audio_ms) = facts.audio_ms {
        let difference = (audio_ms - facts.video_ms).abs();
        if difference > TRACK_MISMATCH_MS {
            findings.push(format!(
                "the audio and video tracks differ in length by {difference} ms"
            ));
        }
    }
    if facts.worst_gap > GAP_MULTIPLE {
        findings.push(format!(
            "the frame timing has a gap {:.1} times the usual one",
            facts.worst_gap
        ));
    }
    let (finding, score, detail) = if findings.is_empty() {
        (
            Finding::Real,
            0.1,
            "the tracks are of one length and the frames evenly timed".to_owned(),
        )
    } else {
        (
            Finding::Inconclusive,
            0.4,
            format!("{}: an edit", findings.join("; ")),
        )
    };
    Signal {
        name: name.to_owned(),
        finding,
        score: Some(score),
        value: Some(facts.worst_gap),
        fused: true,
        detail,
    }
}

/// Identity stability: the largest distance between the face embeddings (dlib, Euclidean; one
/// person's frames stay well under 0.6) of frames spread over the clip: a face swap that slips
/// shows up as a change of identity. Reported, not fused: no face-swap forgery is available to
/// place a threshold.
pub fn face_identity(largest_distance: Option<f32>) -> Signal {
    let name = "face_identity";
    match largest_distance {
        None => not_measured(name, false, "fewer than two frames with a usable face"),
        Some(distance) => Signal {
            name: name.to_owned(),
            finding: Finding::Inconclusive,
            score: None,
            value: Some(distance),
            fused: false,
            detail: format!(
                "largest distance between the face's embeddings over the clip {distance:.2} \
                 (reported only)"
            ),
        },
    }
}

/// What one clip shows the forgery analysis, gathered by the engine (which lends the models).
#[derive(Debug, Clone, Copy)]
pub struct ForgeryEvidence<'a> {
    /// The clip's audio-visual signals (lips, speech, visemes).
    pub signals: &'a Signals,
    /// The face track over the sampled frames, with the embeddings of some.
    pub track: &'a FaceTrack,
    /// The sampled frames' times, ms.
    pub timestamps: &'a [i64],
    /// The grey pictures kept for the mouth's detail, each with its frame's index in the track.
    pub details: &'a [(usize, GrayFrame)],
    /// The 16 kHz audio's length in samples (0 without audio).
    pub audio_samples: usize,
    /// The synthetic-speech detector's reading of the speech (`None` without speech).
    pub synthetic: Option<&'a SyntheticSpeech>,
}

/// Measures every signal on the clip's evidence and fuses them ([`fuse`]): lip sync (with the
/// mouth's stillness from the liveness check), the mouth's detail against the eyes' (on half the
/// kept pictures at least, so that one odd frame cannot speak for the clip), the streams' facts,
/// the synthetic voice and the face's identity over the clip.
pub fn judge(evidence: &ForgeryEvidence<'_>) -> ForgeryVerdict {
    let sync = speaker::check(evidence.signals);
    let mouth_still = liveness::check(evidence.signals, &sync, None).code == LivenessCode::NoMotion;
    let mut ratios: Vec<f32> = evidence
        .details
        .iter()
        .filter_map(|(index, gray)| {
            let face = evidence.track.faces.get(*index)?.as_ref()?;
            mouth_to_eye_detail(gray, &face.landmarks)
        })
        .filter(|ratio| ratio.is_finite())
        .collect();
    let mouth = (ratios.len() * 2 >= evidence.details.len().max(1))
        .then(|| median(&mut ratios))
        .flatten();
    let identity = largest_distance(&evidence.track.embedded);
    let facts = stream_facts(evidence.timestamps, evidence.audio_samples);
    fuse(vec![
        synthetic_voice(evidence.synthetic),
        lip_sync(&sync, mouth_still),
        mouth_detail(mouth),
        streams(&facts),
        face_identity(identity),
    ])
}

/// The largest distance between two of the track's embeddings (`None` with fewer than two).
fn largest_distance(embedded: &[EmbeddedFace]) -> Option<f32> {
    let mut largest: Option<f32> = None;
    for (i, a) in embedded.iter().enumerate() {
        for b in &embedded[i + 1..] {
            let distance = a.template.distance(&b.template);
            largest = Some(largest.map_or(distance, |l| l.max(distance)));
        }
    }
    largest
}

/// The streams' lengths and the frame timing's worst gap, from the sampled frames' times and the
/// 16 kHz audio's length.
fn stream_facts(timestamps: &[i64], audio_samples: usize) -> StreamFacts {
    let mut gaps: Vec<f32> = timestamps
        .windows(2)
        .map(|pair| (pair[1] - pair[0]) as f32)
        .collect();
    let worst = gaps.iter().copied().fold(0.0f32, f32::max);
    let usual = median(&mut gaps).unwrap_or(0.0);
    let span = match (timestamps.first(), timestamps.last()) {
        (Some(_), Some(last)) => last + usual.round() as i64,
        _ => 0,
    };
    StreamFacts {
        video_ms: span,
        audio_ms: (audio_samples > 0).then(|| (audio_samples as i64) * 1000 / 16_000),
        worst_gap: if usual > 0.0 { worst / usual } else { 1.0 },
    }
}

/// Fuses the signals: `fake` when a fused signal found a forgery; otherwise `real` when lip sync
/// confirmed the recording (the synthetic-voice detector's `inconclusive` band is common on genuine
/// video soundtracks and does not block it, nor does a `streams` edit alone); otherwise
/// `inconclusive`. The score is the largest score of the fused, measured signals.
pub fn fuse(signals: Vec<Signal>) -> ForgeryVerdict {
    let fused: Vec<&Signal> = signals
        .iter()
        .filter(|signal| signal.fused && signal.finding != Finding::NotMeasured)
        .collect();
    let score = fused
        .iter()
        .filter_map(|signal| signal.score)
        .fold(0.0f32, f32::max);
    let mut fakes: Vec<&Signal> = fused
        .iter()
        .copied()
        .filter(|signal| signal.finding == Finding::Fake)
        .collect();
    fakes.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let synced = fused
        .iter()
        .any(|signal| signal.name == "lip_sync" && signal.finding == Finding::Real);
    let edited = fused
        .iter()
        .any(|signal| signal.name == "streams" && signal.finding == Finding::Inconclusive);
    let (prediction, reasons) = if !fakes.is_empty() {
        (
            Prediction::Fake,
            fakes.iter().map(|signal| signal.detail.clone()).collect(),
        )
    } else if synced && !edited {
        (
            Prediction::Real,
            fused
                .iter()
                .filter(|signal| signal.finding == Finding::Real)
                .map(|signal| signal.detail.clone())
                .collect(),
        )
    } else {
        let mut reasons: Vec<String> = fused
            .iter()
            .filter(|signal| signal.finding == Finding::Inconclusive)
            .map(|signal| signal.detail.clone())
            .collect();
        if !synced {
            let why = signals
                .iter()
                .find(|signal| signal.name == "lip_sync")
                .map_or("lip sync was not measured", |signal| signal.detail.as_str());
            reasons.insert(0, format!("nothing confirms the recording: {why}"));
        }
        (Prediction::Inconclusive, reasons)
    };
    let confidence = match prediction {
        Prediction::Fake => score,
        Prediction::Real => 1.0 - score,
        Prediction::Inconclusive => 0.5,
    };
    ForgeryVerdict {
        prediction,
        confidence,
        score,
        reasons,
        signals,
    }
}

/// A frame's luma (BT.601), kept for [`mouth_to_eye_detail`].
#[derive(Debug, Clone, PartialEq)]
pub struct GrayFrame {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width * height` values.
    pub luma: Vec<u8>,
}

impl GrayFrame {
    /// The luma of packed RGB (`None` when the sizes do not match).
    pub fn from_rgb(width: usize, height: usize, rgb: &[u8]) -> Option<GrayFrame> {
        if width == 0 || height == 0 || rgb.len() != width.checked_mul(height)?.checked_mul(3)? {
            return None;
        }
        let luma = rgb
            .chunks_exact(3)
            .map(|p| {
                ((77 * u32::from(p[0]) + 150 * u32::from(p[1]) + 29 * u32::from(p[2]) + 128) >> 8)
                    as u8
            })
            .collect();
        Some(GrayFrame {
            width,
            height,
            luma,
        })
    }
}

/// Least eye distance (pixels) for the regions to have detail worth comparing.
const MIN_EYE_DISTANCE: f32 = 40.0;

/// Contrast floor (luma variance) that keeps flat regions from dividing by nothing.
const CONTRAST_FLOOR: f32 = 25.0;

/// Fine detail of a region: the mean squared 4-neighbour Laplacian over the luma variance (so that
/// it does not change with lighting or contrast, only with sharpness).
fn detail(frame: &GrayFrame, x0: f32, y0: f32, x1: f32, y1: f32) -> Option<f32> {
    let clamp = |v: f32, max: usize| (v.round().max(1.0) as usize).min(max.saturating_sub(2));
    let (x0, x1) = (clamp(x0, frame.width), clamp(x1, frame.width));
    let (y0, y1) = (clamp(y0, frame.height), clamp(y1, frame.height));
    if x1 < x0 + 4 || y1 < y0 + 4 {
        return None;
    }
    let at = |x: usize, y: usize| f32::from(frame.luma[y * frame.width + x]);
    let (mut energy, mut sum, mut square) = (0f64, 0f64, 0f64);
    let mut count = 0f64;
    for y in y0..=y1 {
        for x in x0..=x1 {
            let centre = at(x, y);
            let laplacian =
                at(x - 1, y) + at(x + 1, y) + at(x, y - 1) + at(x, y + 1) - 4.0 * centre;
            energy += f64::from(laplacian * laplacian);
            sum += f64::from(centre);
            square += f64::from(centre * centre);
            count += 1.0;
        }
    }
    let mean = sum / count;
    let variance = (square / count - mean * mean).max(0.0) as f32;
    Some((energy / count) as f32 / (variance + CONTRAST_FLOOR))
}

/// Fine detail of the mouth region (the lips and a margin of skin) over that of the eye region, in
/// one frame; `None` for a face too small or too close to the edge. Genuine faces give similar
/// values in both (about 1); a mouth a generator rendered at a lower resolution is far softer.
pub fn mouth_to_eye_detail(frame: &GrayFrame, landmarks: &Landmarks) -> Option<f32> {
    use crate::face::landmarks::index;
    let point = |i: usize| landmarks.points.get(i).map(|p| (p[0], p[1]));
    let (left_eye, right_eye) = (
        point(index::LEFT_EYE_OUTER)?,
        point(index::RIGHT_EYE_OUTER)?,
    );
    let eye_distance =
        ((right_eye.0 - left_eye.0).powi(2) + (right_eye.1 - left_eye.1).powi(2)).sqrt();
    if eye_distance < MIN_EYE_DISTANCE {
        return None;
    }
    let eye_y = (left_eye.1 + right_eye.1) / 2.0;
    let half = 0.15 * eye_distance;
    let eyes = detail(
        frame,
        left_eye.0.min(right_eye.0),
        eye_y - half,
        left_eye.0.max(right_eye.0),
        eye_y + half,
    )?;
    let (corner_a, corner_b) = (
        point(index::MOUTH_CORNERS.0)?,
        point(index::MOUTH_CORNERS.1)?,
    );
    // Outer lip top (0) and bottom (17).
    let (top, bottom) = (point(0)?, point(17)?);
    let margin = 0.1 * eye_distance;
    let mouth = detail(
        frame,
        corner_a.0.min(corner_b.0) - margin,
        top.1 - margin,
        corner_a.0.max(corner_b.0) + margin,
        bottom.1 + margin,
    )?;
    (eyes > 0.0).then(|| mouth / eyes)
}

/// The median of `values` (`None` when empty; NaN-free input expected).
pub fn median(values: &mut [f32]) -> Option<f32> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let middle = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::voice::spoof::SpoofVerdict;

    fn speaker(code: SpeakerCode, z: f32) -> SpeakerCheck {
        SpeakerCheck {
            code,
            score: 0.0,
            contrast: z,
            correlation: if z == 0.0 { 0.0 } else { 0.4 },
            lag_ms: 80,
        }
    }

    #[test]
    fn band_scores_meet_the_thresholds() {
        assert!((band_score(1.0, 1.0, 2.8) - 0.5).abs() < 1e-6);
        assert!((band_score(2.8, 1.0, 2.8) - 0.25).abs() < 1e-6);
        assert_eq!(band_score(-100.0, 1.645, 2.8), 0.98);
        assert_eq!(band_score(100.0, 1.645, 2.8), 0.02);
        assert_eq!(band_score(f32::NAN, 0.0, 1.0), 0.5);
        assert_eq!(
            finding_of(band_score(SPOOF_BELOW - 0.1, SPOOF_BELOW, BONA_FIDE_FROM)),
            Finding::Fake
        );
        // The synthetic-voice finding agrees with the detector's own verdict.
        for logit in [-9.0, -6.1, -5.9, -3.0, -1.6, -1.5, 0.0, 4.0] {
            let signal = synthetic_voice(Some(&SyntheticSpeech {
                score: logit,
                verdict: SpoofVerdict::of(logit),
            }));
            let expected = match SpoofVerdict::of(logit) {
                SpoofVerdict::Spoof => Finding::Fake,
                SpoofVerdict::BonaFide => Finding::Real,
                SpoofVerdict::Inconclusive => Finding::Inconclusive,
            };
            assert_eq!(signal.finding, expected, "{logit}");
        }
    }

    #[test]
    fn the_fusion_rule() {
        let streams_ok = streams(&StreamFacts {
            video_ms: 5000,
            audio_ms: Some(5020),
            worst_gap: 1.1,
        });
        let voice_unsure = synthetic_voice(Some(&SyntheticSpeech {
            score: -3.0,
            verdict: SpoofVerdict::of(-3.0),
        }));
        // In sync, nothing fake: real, despite the voice detector's doubt.
        let verdict = fuse(vec![
            voice_unsure.clone(),
            lip_sync(&speaker(SpeakerCode::Speaking, 4.0), false),
            streams_ok.clone(),
        ]);
        assert_eq!(verdict.prediction, Prediction::Real);
        assert!(verdict.score < 0.5 && verdict.confidence > 0.5);
        // Out of sync: fake, and the reason says so.
        let verdict = fuse(vec![
            voice_unsure.clone(),
            lip_sync(&speaker(SpeakerCode::NotSpeaking, 0.3), false),
            streams_ok.clone(),
        ]);
        assert_eq!(verdict.prediction, Prediction::Fake);
        assert!(verdict.score >= 0.5);
        assert!(
            verdict.reasons[0].contains("do not follow"),
            "{:?}",
            verdict.reasons
        );
        // A still mouth under speech is fake.
        let still = lip_sync(&speaker(SpeakerCode::NotSpeaking, 0.0), false);
        assert_eq!(still.finding, Finding::Fake);
        let still = lip_sync(&speaker(SpeakerCode::Speaking, 1.5), true);
        assert_eq!(still.finding, Finding::Fake);
        // No face: nothing confirms the recording.
        let verdict = fuse(vec![
            voice_unsure,
            lip_sync(&speaker(SpeakerCode::NoFace, 0.0), true),
            streams_ok,
        ]);
        assert_eq!(verdict.prediction, Prediction::Inconclusive);
        assert!(verdict.reasons[0].starts_with("nothing confirms"));
        // An edit alone makes a synced clip inconclusive, never fake.
        let edited = streams(&StreamFacts {
            video_ms: 5000,
            audio_ms: Some(7000),
            worst_gap: 1.0,
        });
        let verdict = fuse(vec![
            lip_sync(&speaker(SpeakerCode::Speaking, 4.0), false),
            edited,
        ]);
        assert_eq!(verdict.prediction, Prediction::Inconclusive);
        // Reported-only signals change nothing.
        let verdict = fuse(vec![
            lip_sync(&speaker(SpeakerCode::Speaking, 4.0), false),
            face_identity(Some(0.9)),
        ]);
        assert_eq!(verdict.prediction, Prediction::Real);
    }

    /// A frame of random-ish texture whose lower half is blurred (a pasted low-resolution mouth).
    fn textured(blur_below: usize) -> GrayFrame {
        let (width, height) = (200, 200);
        let mut luma: Vec<u8> = (0..width * height)
            .map(|i| ((i as u64).wrapping_mul(2_654_435_761) >> 7) as u8)
            .collect();
        for _ in 0..4 {
            let copy = luma.clone();
            for y in blur_below.max(1)..height - 1 {
                for x in 1..width - 1 {
                    let sum: u32 = [(0, 0), (1, 0), (0, 1), (2, 1), (1, 2)]
                        .iter()
                        .map(|(dx, dy)| u32::from(copy[(y + dy - 1) * width + x + dx - 1]))
                        .sum();
                    luma[y * width + x] = (sum / 5) as u8;
                }
            }
        }
        GrayFrame {
            width,
            height,
            luma,
        }
    }

    fn face() -> Landmarks {
        let mut points = vec![[100.0, 100.0, 0.0]; 468];
        points[33] = [50.0, 60.0, 0.0];
        points[263] = [150.0, 60.0, 0.0];
        points[61] = [70.0, 150.0, 0.0];
        points[291] = [130.0, 150.0, 0.0];
        points[0] = [100.0, 140.0, 0.0];
        points[17] = [100.0, 162.0, 0.0];
        Landmarks {
            points,
            presence: 1.0,
        }
    }

    #[test]
    fn a_soft_mouth_has_less_detail_than_the_eyes() {
        let sharp = mouth_to_eye_detail(&textured(usize::MAX / 2), &face()).unwrap();
        let soft = mouth_to_eye_detail(&textured(110), &face()).unwrap();
        assert!((0.7..1.4).contains(&sharp), "{sharp}");
        assert!(soft < 0.3 * sharp, "{soft} vs {sharp}");
        // A face too small to judge.
        let mut small = face();
        small.points[263] = [70.0, 60.0, 0.0];
        assert_eq!(mouth_to_eye_detail(&textured(0), &small), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut []), None);
    }
}
