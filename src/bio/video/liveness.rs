//! Face Liveness Detection from active evidence that a still photo or a dubbed clip cannot fake
//! together: the mouth moves ([`MIN_MOUTH_MOTION`]) and it moves with the voice (Active Speaker
//! Detection). Blinks and head motion are measured and reported; they are not required, because
//! a live person may hold still and not blink in three seconds.
//!
//! The score is the smaller of the two probabilities (mouth motion, lip sync), so either failing
//! fails liveness. No passive (texture) model is fused: the ones a registry ships
//! (`../shared/MODELS.md`) are weak, and no replay or mask attacks exist here to measure one on.

use super::speaker::{SpeakerCheck, SpeakerCode};
use super::{logistic, std_dev, Signals};

/// Spread of the mouth opening (inner-lip gap over mouth width) at which motion scores 0.5. A
/// held still frame gives 0; the quietest real speaker of the development clips 0.019.
pub const MIN_MOUTH_MOTION: f32 = 0.01;

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
    /// Spread of the mouth opening.
    pub mouth_motion: f32,
    /// Blinks seen.
    pub blinks: usize,
    /// Spread of the head's position (interocular distances) and pose (degrees).
    pub head_motion: f32,
}

/// Fuses the evidence of a clip's signals and its Active Speaker Detection.
pub fn check(signals: &Signals, speaker: &SpeakerCheck) -> LivenessCheck {
    let mouth_motion = std_dev(&signals.mouth);
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
        blinks,
        head_motion,
    };
    match speaker.code {
        SpeakerCode::NoFace => return result(LivenessCode::NoFace, 0.0),
        SpeakerCode::NoSpeech => return result(LivenessCode::NoSpeech, 0.0),
        SpeakerCode::Speaking | SpeakerCode::NotSpeaking => {}
    }
    let motion = logistic(mouth_motion, MIN_MOUTH_MOTION, MOTION_SLOPE);
    let score = motion.min(speaker.score);
    let code = if motion < 0.5 {
        LivenessCode::NoMotion
    } else if speaker.score < 0.5 {
        LivenessCode::LipsDoNotFollowVoice
    } else {
        LivenessCode::Live
    };
    result(code, score)
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
        let still = check(&signals(vec![0.1; 50]), &speaker(0.9));
        assert_eq!(still.code, LivenessCode::NoMotion);
        assert!(!still.live);
    }

    #[test]
    fn a_moving_mouth_needs_the_voice_to_follow() {
        let moving: Vec<f32> = (0..50)
            .map(|i| 0.1 + 0.1 * ((i as f32) * 0.8).sin())
            .collect();
        assert_eq!(
            check(&signals(moving.clone()), &speaker(0.2)).code,
            LivenessCode::LipsDoNotFollowVoice
        );
        let live = check(&signals(moving), &speaker(0.9));
        assert!(live.live && live.score >= 0.5);
    }

    #[test]
    fn blinks_are_dips_that_recover() {
        assert_eq!(count_blinks(&[0.3, 0.3, 0.05, 0.3, 0.3, 0.1, 0.1, 0.3]), 2);
        assert_eq!(count_blinks(&[0.3, 0.3, 0.3]), 0);
    }
}
