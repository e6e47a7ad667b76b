//! Face Liveness Detection from active evidence that a still photo or a dubbed clip cannot fake
//! together: the mouth moves ([`MIN_MOUTH_MOTION`], and [`JITTER_MULTIPLE`] times the clip's own
//! landmark jitter) and it moves with the voice (Active Speaker Detection). Blinks and head motion
//! are measured and reported; they are not required, because a live person may hold still and not
//! blink in three seconds.
//!
//! The score is the smaller of the two probabilities (mouth motion, lip sync), so either failing
//! fails liveness.
//!
//! The passive (single-frame texture) model is fused as a veto only: Human's antispoof model
//! (`bio::face::passive`), averaged over the track's chosen frames, fails the clip when it calls the
//! face confidently fake ([`PASSIVE_REAL_VETO`]). It is weak (it called a printed photo and a tablet
//! replay as real as live faces, `models/README.md`), so it never passes a clip the active evidence
//! fails, and its threshold sits far under every live face measured. The 32x32 liveness model's
//! score is reported but not used: which of its outputs means live is not documented reliably.

use super::speaker::{SpeakerCheck, SpeakerCode};
use super::{logistic, std_dev, Signals};
use crate::face::passive::PassiveScore;

/// Mean antispoof score under which the face is called fake. Live faces measured: 0.45 (a large
/// live photo) to 0.80, and 0.51-0.80 on the development talking heads' frames.
pub const PASSIVE_REAL_VETO: f32 = 0.2;

/// Spread of the mouth opening (inner-lip gap over mouth width) at which motion scores 0.5. A
/// held still frame gives 0; the quietest real speaker of the development clips 0.019.
pub const MIN_MOUTH_MOTION: f32 = 0.01;

/// How many times the clip's landmark jitter ([`LivenessCheck::mouth_jitter`]) the mouth's spread
/// must be. A printed photo moved by hand keeps its mouth opening (a ratio of distances on a flat
/// picture) but for the jitter of the landmarks, so its spread is about 1 jitter; it is measured on
/// the eye corners, whose ratio a flat picture cannot change either. Genuine talking heads measured:
/// 2.5 to 16 jitters (the lowest with large head turns, which add to the eye-corner spread), GRID
/// 9 and over. A held still frame has no jitter, which [`MIN_MOUTH_MOTION`] covers.
pub const JITTER_MULTIPLE: f32 = 2.0;

/// Slope of the logistic map of the mouth's spread.
const MOTION_SLOPE: f32 = 600.0;

/// An eye is taken as shut when its openness falls under this share of the clip's median.
const BLINK_SHARE: f32 = 0.6;

/// The service's `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LivenessCode {
    /// 0: live.
    Live = 0,
    /// 1: the face does not move (a still photo).
    NoMotion = 1,
    /// 2: the lips do not follow the voice (a dubbed or replayed clip).
    LipsDoNotFollowVoice = 2,
    /// 3: no face in enough frames.
    NoFace = 3,
    /// 4: not enough speech to check the lips against.
    NoSpeech = 4,
    /// 5: the passive model calls the face fake (a print, screen or mask texture).
    PassiveSpoof = 5,
}

/// The outcome of Face Liveness Detection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LivenessCheck {
    /// What was found.
    pub code: LivenessCode,
    /// Whether the face is judged live.
    pub live: bool,
    /// Probability-like score in 0..1 (0 when the check could not run).
    pub score: f32,
    /// Spread (standard deviation) of the mouth opening over the speech span (first to last grid
    /// point in speech; the whole clip when that is under 0.48 s).
    pub mouth_motion: f32,
    /// The clip's landmark jitter in the units of the mouth opening: the spread of the eye-corner
    /// ratio scaled by the eyes' width over the mouth's (see [`Signals::eye_corners`]).
    pub mouth_jitter: f32,
    /// Blinks seen.
    pub blinks: usize,
    /// Spread of the head's position (interocular distances) and pose (degrees).
    pub head_motion: f32,
    /// The passive models' mean scores over the chosen frames (`None` without a face).
    pub passive: Option<PassiveScore>,
}

/// Fuses the evidence of a clip's signals, its Active Speaker Detection and the passive models'
/// mean scores.
pub fn check(
    signals: &Signals,
    speaker: &SpeakerCheck,
    passive: Option<PassiveScore>,
) -> LivenessCheck {
    let mouth_motion = std_dev(speech_span(&signals.mouth, &signals.speech));
    let mouth_jitter = std_dev(&signals.eye_corners) * signals.eyes_over_mouth;
    let blinks = count_blinks(&signals.eyes);
    let head_motion = {
        let x: Vec<f32> = signals.position.iter().map(|p| p.0).collect();
        let y: Vec<f32> = signals.position.iter().map(|p| p.1).collect();
        let yaw: Vec<f32> = signals.pose.iter().map(|p| p.0).collect();
        std_dev(&x) + std_dev(&y) + std_dev(&yaw) / 30.0
    };
    let result = |code, score: f32| LivenessCheck {
        code,
        live: code == LivenessCode::Live,
        score,
        mouth_motion,
        mouth_jitter,
        blinks,
        head_motion,
        passive,
    };
    match speaker.code {
        SpeakerCode::NoFace => return result(LivenessCode::NoFace, 0.0),
        SpeakerCode::NoSpeech => return result(LivenessCode::NoSpeech, 0.0),
        SpeakerCode::Speaking | SpeakerCode::NotSpeaking => {}
    }
    // The logistic's slope is per unit of spread; scaled with the threshold when jitter raises it.
    let threshold = MIN_MOUTH_MOTION.max(JITTER_MULTIPLE * mouth_jitter);
    let motion = logistic(
        mouth_motion,
        threshold,
        MOTION_SLOPE * MIN_MOUTH_MOTION / threshold,
    );
    let spoof = passive.filter(|p| p.real < PASSIVE_REAL_VETO);
    let score = motion.min(speaker.score).min(spoof.map_or(1.0, |p| p.real));
    let code = if motion < 0.5 {
        LivenessCode::NoMotion
    } else if speaker.score < 0.5 {
        LivenessCode::LipsDoNotFollowVoice
    } else if spoof.is_some() {
        LivenessCode::PassiveSpoof
    } else {
        LivenessCode::Live
    };
    result(code, score)
}

/// Least grid steps of speech span over which the mouth's spread is taken (0.48 s); over the whole
/// clip when the span is shorter.
const MIN_SPAN_STEPS: usize = 12;

/// The part of `values` from the first to the last grid point in speech (pauses between words
/// included), or all of it when that span is under [`MIN_SPAN_STEPS`].
fn speech_span<'a>(values: &'a [f32], speech: &[bool]) -> &'a [f32] {
    let first = speech.iter().position(|&s| s);
    let last = speech.iter().rposition(|&s| s);
    match (first, last) {
        (Some(first), Some(last)) if last + 1 - first >= MIN_SPAN_STEPS && last < values.len() => {
            &values[first..=last]
        }
        _ => values,
    }
}

/// Blinks: dips of the eye openness under [`BLINK_SHARE`] of its median that recover.
fn count_blinks(eyes: &[f32]) -> usize {
    if eyes.len() < 3 {
        return 0;
    }
    let mut sorted = eyes.to_vec();
    sorted.sort_by(f32::total_cmp);
    let shut = sorted[sorted.len() / 2] * BLINK_SHARE;
    let mut blinks = 0;
    let mut closed = false;
    for &value in eyes {
        if value < shut {
            closed = true;
        } else if closed {
            blinks += 1;
            closed = false;
        }
    }
    blinks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn speaker(score: f32) -> SpeakerCheck {
        SpeakerCheck {
            code: if score >= 0.5 {
                SpeakerCode::Speaking
            } else {
                SpeakerCode::NotSpeaking
            },
            score,
            contrast: 0.0,
            correlation: 0.0,
            lag_ms: 0,
        }
    }

    fn signals(mouth: Vec<f32>) -> Signals {
        Signals {
            eyes: vec![0.3; mouth.len()],
            mouth,
            face_coverage: 1.0,
            speech_seconds: 2.0,
            ..Signals::default()
        }
    }

    #[test]
    fn a_still_mouth_is_not_live_even_with_sync() {
        let still = check(&signals(vec![0.1; 50]), &speaker(0.9), None);
        assert_eq!(still.code, LivenessCode::NoMotion);
        assert!(!still.live);
    }

    #[test]
    fn a_moving_mouth_needs_the_voice_to_follow() {
        let moving: Vec<f32> = (0..50)
            .map(|i| 0.1 + 0.1 * ((i as f32) * 0.8).sin())
            .collect();
        assert_eq!(
            check(&signals(moving.clone()), &speaker(0.2), None).code,
            LivenessCode::LipsDoNotFollowVoice
        );
        let live = check(&signals(moving.clone()), &speaker(0.9), None);
        assert!(live.live && live.score >= 0.5);
    }

    #[test]
    fn the_passive_model_vetoes_only_a_confident_fake() {
        let moving: Vec<f32> = (0..50)
            .map(|i| 0.1 + 0.1 * ((i as f32) * 0.8).sin())
            .collect();
        let passive = |real| Some(PassiveScore { real, live: 0.5 });
        let fake = check(&signals(moving.clone()), &speaker(0.9), passive(0.05));
        assert_eq!(fake.code, LivenessCode::PassiveSpoof);
        assert!(!fake.live && fake.score < 0.5);
        let unsure = check(&signals(moving.clone()), &speaker(0.9), passive(0.45));
        assert!(
            unsure.live,
            "a middling passive score does not fail a live clip"
        );
        // It never passes what the active evidence fails.
        let dubbed = check(&signals(moving), &speaker(0.2), passive(0.99));
        assert_eq!(dubbed.code, LivenessCode::LipsDoNotFollowVoice);
    }

    #[test]
    fn a_mouth_moving_no_more_than_the_landmarks_jitter_is_not_live() {
        // A photo moved by hand: mouth and eye corners jitter alike (spread 0.014 in mouth units,
        // over MIN_MOUTH_MOTION).
        let jitter = |i: usize, phase: f32| 0.02 * ((i as f32) * 2.3 + phase).sin();
        let photo = Signals {
            eye_corners: (0..50).map(|i| 0.4 + jitter(i, 1.0) / 2.4).collect(),
            eyes_over_mouth: 2.4,
            ..signals((0..50).map(|i| 0.05 + jitter(i, 0.0)).collect())
        };
        let still = check(&photo, &speaker(0.9), None);
        assert!(still.mouth_motion > MIN_MOUTH_MOTION, "{still:?}");
        assert!(
            (still.mouth_jitter / still.mouth_motion - 1.0).abs() < 0.1,
            "{still:?}"
        );
        assert_eq!(still.code, LivenessCode::NoMotion);
        // A speaking mouth with the same jitter passes.
        let speaking = Signals {
            mouth: (0..50)
                .map(|i| 0.1 + 0.1 * ((i as f32) * 0.8).sin() + jitter(i, 0.0))
                .collect(),
            ..photo
        };
        assert!(check(&speaking, &speaker(0.9), None).live);
    }

    #[test]
    fn the_mouth_is_measured_over_the_speech_span() {
        let speech: Vec<bool> = (0..50).map(|i| (10..40).contains(&i)).collect();
        let values: Vec<f32> = (0..50).map(|i| i as f32).collect();
        assert_eq!(speech_span(&values, &speech), &values[10..40]);
        assert_eq!(speech_span(&values, &speech[..12]).len(), 50);
        assert_eq!(speech_span(&values, &[]).len(), 50);
        // Still outside speech, moving inside it: the spread is that of the speech.
        let mouth: Vec<f32> = (0..50)
            .map(|i| {
                if speech[i] {
                    0.1 + 0.05 * ((i as f32) * 0.8).sin()
                } else {
                    0.1
                }
            })
            .collect();
        let inside = std_dev(&mouth[10..40]);
        let live = check(
            &Signals {
                speech,
                ..signals(mouth)
            },
            &speaker(0.9),
            None,
        );
        assert!(
            (live.mouth_motion - inside).abs() < 1e-6 && live.live,
            "{live:?}"
        );
    }

    #[test]
    fn blinks_are_dips_that_recover() {
        assert_eq!(count_blinks(&[0.3, 0.3, 0.05, 0.3, 0.3, 0.1, 0.1, 0.3]), 2);
        assert_eq!(count_blinks(&[0.3, 0.3, 0.3]), 0);
    }
}
