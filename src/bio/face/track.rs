//! One face track over the sampled frames of a video: BlazeFace on every
//! [`DETECT_EVERY`]-th frame, FaceMesh on every frame (its region taken from the nearest detection),
//! and, for the few most frontal frames, the passive anti-spoofing scores and (with consent) the
//! embeddings. The track feeds liveness, active speaker detection and face recognition, so each
//! frame is looked at once.

use rayon::prelude::*;

use super::align::{chip_details, extract_chip};
use super::detect::Detection;
use super::landmarks::{Landmarks, Roi};
use super::passive::PassiveScore;
use super::template::DIMENSIONS;
use super::{five_points, FaceModels, FaceTemplate, Quality, RgbImage};
use crate::infer::ModelError;

/// The detector runs on every third frame; FaceMesh's region is 1.5 times the face box, which
/// holds a talking head over the 100-200 ms in between.
pub const DETECT_EVERY: usize = 3;

/// FaceMesh presence under this means the face was lost in that frame.
const MIN_PRESENCE: f32 = 0.5;

/// How many frames are embedded for recognition.
pub const EMBEDDED_FRAMES: usize = 3;

/// The face in one frame.
#[derive(Debug, Clone)]
pub struct TrackedFace {
    /// The detection the landmarks' region came from (this frame's or the nearest key frame's).
    pub detection: Detection,
    /// Faces the detector saw in the key frame.
    pub face_count: usize,
    /// FaceMesh landmarks in this frame.
    pub landmarks: Landmarks,
}

/// A face embedded for recognition.
#[derive(Debug, Clone)]
pub struct EmbeddedFace {
    /// Index of the frame.
    pub frame: usize,
    /// The template.
    pub template: FaceTemplate,
    /// Quality of the face in that frame.
    pub quality: Quality,
}

/// The face track of a clip.
#[derive(Debug, Clone, Default)]
pub struct FaceTrack {
    /// One entry per frame; `None` where no face was found.
    pub faces: Vec<Option<TrackedFace>>,
    /// The embedded frames, best first.
    pub embedded: Vec<EmbeddedFace>,
    /// The passive anti-spoofing scores of the chosen frames (the frames embedded, or that would
    /// be: they are scored with or without `embed`).
    pub passive: Vec<PassiveScore>,
}

impl FaceTrack {
    /// Frames with a face.
    pub fn frames_with_face(&self) -> usize {
        self.faces.iter().filter(|face| face.is_some()).count()
    }

    /// The mean of the embedded templates: the track's identity, less noisy than any one frame.
    pub fn mean_template(&self) -> Option<FaceTemplate> {
        if self.embedded.is_empty() {
            return None;
        }
        let mut sum = [0f32; DIMENSIONS];
        for face in &self.embedded {
            for (total, value) in sum.iter_mut().zip(face.template.values()) {
                *total += value;
            }
        }
        let count = self.embedded.len() as f32;
        Some(FaceTemplate::new(sum.map(|total| total / count)))
    }
}

impl FaceModels {
    /// Tracks the largest face through `frames` (in presentation order) on the current rayon pool,
    /// embedding [`EMBEDDED_FRAMES`] of them when `embed` is set (no templates are computed
    /// otherwise).
    pub fn track(&self, frames: &[RgbImage], embed: bool) -> Result<FaceTrack, ModelError> {
        let keys: Vec<usize> = (0..frames.len())
            .filter(|index| index % DETECT_EVERY == 0 || *index + 1 == frames.len())
            .collect();
        let detections: Vec<Option<(Detection, usize)>> = keys
            .par_iter()
            .map(|&index| {
                let found = self.detect(&frames[index])?;
                let count = found.len();
                Ok(found.into_iter().next().map(|detection| (detection, count)))
            })
            .collect::<Result<_, ModelError>>()?;
        let nearest = |index: usize| -> Option<&(Detection, usize)> {
            keys.iter()
                .zip(&detections)
                .filter_map(|(&key, found)| Some((key.abs_diff(index), found.as_ref()?)))
                .min_by_key(|(gap, _)| *gap)
                .map(|(_, found)| found)
        };
        let faces: Vec<Option<TrackedFace>> = frames
            .par_iter()
            .enumerate()
            .map(|(index, image)| {
                let Some((detection, face_count)) = nearest(index) else {
                    return Ok(None);
                };
                let landmarks = self.upright_landmarks(image, &Roi::from_detection(detection))?;
                Ok((landmarks.presence >= MIN_PRESENCE).then(|| TrackedFace {
                    detection: detection.clone(),
                    face_count: *face_count,
                    landmarks,
                }))
            })
            .collect::<Result<_, ModelError>>()?;
        let chosen = choose_frames(&faces, EMBEDDED_FRAMES);
        let analysed: Vec<(PassiveScore, Option<EmbeddedFace>)> = chosen
            .par_iter()
            .map(|&index| {
                let Some(face) = &faces[index] else {
                    unreachable!("only frames with a face are chosen")
                };
                let passive = self.passive.score(&frames[index], &face.detection)?;
                if !embed {
                    return Ok((passive, None));
                }
                let pixels =
                    extract_chip(&frames[index], &chip_details(&five_points(&face.landmarks)));
                let template = self.embed_chip(&pixels)?;
                let quality =
                    Quality::measure(&face.detection, face.face_count, &face.landmarks, &pixels);
                let embedded = EmbeddedFace {
                    frame: index,
                    template,
                    quality,
                };
                Ok((passive, Some(embedded)))
            })
            .collect::<Result<_, ModelError>>()?;
        let (passive, embedded): (Vec<_>, Vec<_>) = analysed.into_iter().unzip();
        let embedded = embedded.into_iter().flatten().collect();
        Ok(FaceTrack {
            faces,
            embedded,
            passive,
        })
    }
}

/// Up to `count` frames for embedding: the most frontal (smallest yaw and pitch) with open eyes,
/// spread over the clip (one from each of `count` equal parts where the parts have a face).
fn choose_frames(faces: &[Option<TrackedFace>], count: usize) -> Vec<usize> {
    let cost = |face: &TrackedFace| {
        let (yaw, pitch, _) = face.landmarks.pose_degrees();
        let closed_eyes = (0.25 - face.landmarks.eyes_open()).max(0.0) * 100.0;
        yaw.abs() + 0.5 * pitch.abs() + closed_eyes
    };
    let mut chosen = Vec::with_capacity(count);
    if faces.is_empty() || count == 0 {
        return chosen;
    }
    for part in 0..count {
        let start = part * faces.len() / count;
        let end = ((part + 1) * faces.len() / count)
            .max(start + 1)
            .min(faces.len());
        let best = (start..end)
            .filter_map(|index| Some((index, cost(faces[index].as_ref()?))))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((index, _)) = best {
            chosen.push(index);
        }
    }
    chosen
}
