//! Face quality: measures from the detection, the landmarks and the aligned chip, and
//! machine-readable reasons when one is outside what verification handles well.

use serde::Serialize;

use super::align::CHIP;
use super::detect::Detection;
use super::landmarks::Landmarks;

/// Fewer pixels between the eye centres than this: too small to verify reliably.
const MIN_INTEROCULAR_PX: f32 = 24.0;
/// Variance of the Laplacian of the chip's centre below this: blurred.
const MIN_SHARPNESS: f32 = 20.0;
/// Head turned further than this (degrees).
const MAX_YAW: f32 = 35.0;
const MAX_PITCH: f32 = 30.0;
const MAX_ROLL: f32 = 40.0;
/// Mean brightness (0..255) of the chip's centre outside this range.
const MIN_BRIGHTNESS: f32 = 45.0;
const MAX_BRIGHTNESS: f32 = 215.0;
/// FaceMesh face-presence probability below this.
const MIN_PRESENCE: f32 = 0.5;

/// A reason a face is of poor quality. Serialised as its [`QualityReason::as_str`] name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QualityReason {
    /// The face is too small (few pixels between the eyes).
    FaceTooSmall,
    /// The face is blurred.
    Blurry,
    /// The head is turned left or right.
    PoseYaw,
    /// The head is tilted up or down.
    PosePitch,
    /// The head is tilted sideways.
    PoseRoll,
    /// The face is too dark.
    TooDark,
    /// The face is too bright.
    TooBright,
    /// More than one face is in the picture (the largest was used).
    MultipleFaces,
    /// The landmark model doubts this is a face.
    LowFaceConfidence,
}

impl QualityReason {
    /// The machine-readable name, e.g. `face_too_small`.
    pub fn as_str(self) -> &'static str {
        match self {
            QualityReason::FaceTooSmall => "face_too_small",
            QualityReason::Blurry => "blurry",
            QualityReason::PoseYaw => "pose_yaw",
            QualityReason::PosePitch => "pose_pitch",
            QualityReason::PoseRoll => "pose_roll",
            QualityReason::TooDark => "too_dark",
            QualityReason::TooBright => "too_bright",
            QualityReason::MultipleFaces => "multiple_faces",
            QualityReason::LowFaceConfidence => "low_face_confidence",
        }
    }
}

impl Serialize for QualityReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Quality measures of one face.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quality {
    /// Detector confidence, 0..1.
    pub detection_score: f32,
    /// Landmark model's face-presence probability, 0..1.
    pub face_presence: f32,
    /// Distance between the eye centres, pixels.
    pub interocular_px: f32,
    /// Variance of the Laplacian of the aligned chip's grey centre.
    pub sharpness: f32,
    /// Mean grey level of the aligned chip's centre, 0..255.
    pub brightness: f32,
    /// Head yaw, pitch and roll estimates, degrees.
    pub yaw: f32,
    /// See `yaw`.
    pub pitch: f32,
    /// See `yaw`.
    pub roll: f32,
    /// Mouth opening (inner-lip gap over mouth width).
    pub mouth_open: f32,
    /// Eye openness (lid gap over eye width).
    pub eyes_open: f32,
    /// Faces in the picture.
    pub face_count: usize,
    /// Why the face is of poor quality; empty when it is fine.
    pub reasons: Vec<QualityReason>,
}

impl Quality {
    /// Measures a face.
    pub fn measure(
        detection: &Detection,
        face_count: usize,
        landmarks: &Landmarks,
        chip: &[u8],
    ) -> Quality {
        let (sharpness, brightness) = chip_measures(chip);
        let (yaw, pitch, roll) = landmarks.pose_degrees();
        let mut quality = Quality {
            detection_score: detection.score,
            face_presence: landmarks.presence,
            interocular_px: landmarks.interocular(),
            sharpness,
            brightness,
            yaw,
            pitch,
            roll,
            mouth_open: landmarks.mouth_open(),
            eyes_open: landmarks.eyes_open(),
            face_count,
            reasons: Vec::new(),
        };
        let checks = [
            (
                quality.interocular_px < MIN_INTEROCULAR_PX,
                QualityReason::FaceTooSmall,
            ),
            (quality.sharpness < MIN_SHARPNESS, QualityReason::Blurry),
            (yaw.abs() > MAX_YAW, QualityReason::PoseYaw),
            (pitch.abs() > MAX_PITCH, QualityReason::PosePitch),
            (roll.abs() > MAX_ROLL, QualityReason::PoseRoll),
            (brightness < MIN_BRIGHTNESS, QualityReason::TooDark),
            (brightness > MAX_BRIGHTNESS, QualityReason::TooBright),
            (face_count > 1, QualityReason::MultipleFaces),
            (
                quality.face_presence < MIN_PRESENCE,
                QualityReason::LowFaceConfidence,
            ),
        ];
        quality.reasons = checks
            .into_iter()
            .filter(|(failed, _)| *failed)
            .map(|(_, reason)| reason)
            .collect();
        quality
    }
}

/// (Laplacian variance, mean grey) over the chip's central square (the face, not the padding).
fn chip_measures(chip: &[u8]) -> (f32, f32) {
    let (from, to) = (CHIP / 4, CHIP * 3 / 4);
    let grey = |x: usize, y: usize| {
        let i = (y * CHIP + x) * 3;
        0.299 * f32::from(chip[i]) + 0.587 * f32::from(chip[i + 1]) + 0.114 * f32::from(chip[i + 2])
    };
    let (mut sum, mut count) = (0f64, 0f64);
    let mut laplacians = Vec::with_capacity((to - from) * (to - from));
    for y in from..to {
        for x in from..to {
            let centre = grey(x, y);
            sum += f64::from(centre);
            count += 1.0;
            let lap =
                grey(x - 1, y) + grey(x + 1, y) + grey(x, y - 1) + grey(x, y + 1) - 4.0 * centre;
            laplacians.push(f64::from(lap));
        }
    }
    let n = laplacians.len() as f64;
    let mean = laplacians.iter().sum::<f64>() / n;
    let variance = laplacians.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / n;
    (variance as f32, (sum / count) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_chips_are_blurry_and_checkerboards_sharp() {
        let flat = vec![128u8; CHIP * CHIP * 3];
        let (sharpness, brightness) = chip_measures(&flat);
        assert_eq!(sharpness, 0.0);
        assert!((brightness - 128.0).abs() < 0.5);
        let checker: Vec<u8> = (0..CHIP * CHIP)
            .flat_map(|i| {
                let v = if (i % CHIP + i / CHIP).is_multiple_of(2) {
                    60
                } else {
                    190
                };
                [v, v, v]
            })
            .collect();
        let (sharpness, _) = chip_measures(&checker);
        assert!(sharpness > MIN_SHARPNESS * 100.0);
    }
}
