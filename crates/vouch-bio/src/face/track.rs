//! One face track over the sampled frames of a video: BlazeFace on every
//! [`DETECT_EVERY`]-th frame, FaceMesh on every frame (its region taken from the nearest detection),
//! and, for the few most frontal frames, the passive anti-spoofing scores and (with consent) the
//! embeddings. The track feeds liveness, active speaker detection and face recognition, so each
//! frame is looked at once. [`FaceTracker`] builds it chunk by chunk as frames are decoded, so a
//! clip is never held whole.

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

/// Frames [`FaceTracker`] gathers before it analyses them together: enough to keep every core
/// busy, few enough that a chunk of the largest frames decoding produces (1280x1280) stays near
/// [`CHUNK_BYTES`].
const CHUNK_FRAMES: usize = 24;

/// Bytes of RGB after which [`FaceTracker`] analyses the frames it has gathered (32 MiB).
pub const CHUNK_BYTES: usize = 32 * 1024 * 1024;

/// The face track built as frames arrive, so that a clip never has to be held whole: frames are
/// gathered in chunks of [`CHUNK_FRAMES`] (or [`CHUNK_BYTES`]), each chunk is detected and
/// landmarked in parallel and dropped, and only the best frame so far of each of the
/// [`EMBEDDED_FRAMES`] parts of the clip is kept for the passive scores and embeddings made at
/// [`FaceTracker::finish`]. Memory is one chunk plus those frames, whatever the clip's length.
///
/// Key frames (every [`DETECT_EVERY`]-th and the last) are the same as over the whole clip, and a
/// chunk always ends on a key frame, so each frame's nearest detection is the one the whole clip
/// would give, except where the detector found nothing for longer than a chunk.
pub struct FaceTracker<'m> {
    models: &'m FaceModels,
    embed: bool,
    /// Frames the clip is expected to have (to split it into parts for embedding).
    expected: usize,
    faces: Vec<Option<TrackedFace>>,
    /// Frames gathered and not yet analysed; the first is frame `faces.len()`.
    pending: Vec<RgbImage>,
    pending_bytes: usize,
    /// The latest key frame with a detection before `pending`, and its faces.
    previous: Option<(usize, Detection, usize)>,
    /// The best frame so far of each part: its cost, index and pixels.
    best: Vec<Option<(f32, usize, RgbImage)>>,
}

impl std::fmt::Debug for FaceTracker<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("FaceTracker")
            .field("expected", &self.expected)
            .field("frames", &self.faces.len())
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl<'m> FaceTracker<'m> {
    /// A tracker for a clip of about `expected` frames, embedding [`EMBEDDED_FRAMES`] of them when
    /// `embed` is set (no templates are computed otherwise).
    pub fn new(models: &'m FaceModels, expected: usize, embed: bool) -> FaceTracker<'m> {
        FaceTracker {
            models,
            embed,
            expected,
            faces: Vec::with_capacity(expected),
            pending: Vec::new(),
            pending_bytes: 0,
            previous: None,
            best: vec![None; EMBEDDED_FRAMES],
        }
    }

    /// Frames analysed or gathered so far.
    pub fn frames(&self) -> usize {
        self.faces.len() + self.pending.len()
    }

    /// Adds the next frame (in presentation order); analyses the gathered chunk on the current
    /// rayon pool when it is full.
    pub fn push(&mut self, image: RgbImage) -> Result<(), ModelError> {
        self.pending_bytes += image.rgb.len();
        self.pending.push(image);
        if self.pending.len() > CHUNK_FRAMES || self.pending_bytes > CHUNK_BYTES {
            // Up to the last key frame gathered: the frames after it are nearer the next one.
            let start = self.faces.len();
            let last_key = (start..start + self.pending.len())
                .rev()
                .find(|index| index % DETECT_EVERY == 0);
            if let Some(last_key) = last_key {
                self.analyse(last_key + 1 - start, None)?;
            }
        }
        Ok(())
    }

    /// Analyses what is left and makes the passive scores and embeddings of the chosen frames.
    pub fn finish(mut self) -> Result<FaceTrack, ModelError> {
        let last = self.frames().checked_sub(1);
        self.analyse(self.pending.len(), last)?;
        let chosen: Vec<(usize, RgbImage)> = self
            .best
            .into_iter()
            .flatten()
            .map(|(_, index, image)| (index, image))
            .collect();
        let models = self.models;
        let faces = self.faces;
        let embed = self.embed;
        let analysed: Vec<(PassiveScore, Option<EmbeddedFace>)> = chosen
            .par_iter()
            .map(|(index, image)| {
                let Some(face) = &faces[*index] else {
                    unreachable!("only frames with a face are chosen")
                };
                let passive = models.passive.score(image, &face.detection)?;
                if !embed {
                    return Ok((passive, None));
                }
                let pixels = extract_chip(image, &chip_details(&five_points(&face.landmarks)));
                let template = models.embed_chip(&pixels)?;
                let quality =
                    Quality::measure(&face.detection, face.face_count, &face.landmarks, &pixels);
                let embedded = EmbeddedFace {
                    frame: *index,
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

    /// Detects and landmarks the first `count` pending frames and keeps the best of them for
    /// embedding. `last` is the clip's last frame when this is the final chunk (a key frame).
    fn analyse(&mut self, count: usize, last: Option<usize>) -> Result<(), ModelError> {
        let start = self.faces.len();
        let chunk: Vec<RgbImage> = self.pending.drain(..count).collect();
        self.pending_bytes = self.pending.iter().map(|image| image.rgb.len()).sum();
        let keys: Vec<usize> = (start..start + chunk.len())
            .filter(|index| index % DETECT_EVERY == 0 || Some(*index) == last)
            .collect();
        let models = self.models;
        let detections: Vec<Option<(Detection, usize)>> = keys
            .par_iter()
            .map(|&index| {
                let found = models.detect(&chunk[index - start])?;
                let count = found.len();
                Ok(found.into_iter().next().map(|detection| (detection, count)))
            })
            .collect::<Result<_, ModelError>>()?;
        // The earlier key wins a tie, as over the whole clip.
        let mut found: Vec<(usize, &Detection, usize)> = Vec::new();
        if let Some((index, detection, count)) = &self.previous {
            found.push((*index, detection, *count));
        }
        for (&key, detection) in keys.iter().zip(&detections) {
            if let Some((detection, count)) = detection {
                found.push((key, detection, *count));
            }
        }
        let nearest = |index: usize| {
            found
                .iter()
                .min_by_key(|(key, _, _)| key.abs_diff(index))
                .map(|&(_, detection, count)| (detection, count))
        };
        let faces: Vec<Option<TrackedFace>> = chunk
            .par_iter()
            .enumerate()
            .map(|(offset, image)| {
                let Some((detection, face_count)) = nearest(start + offset) else {
                    return Ok(None);
                };
                let landmarks = models.upright_landmarks(image, &Roi::from_detection(detection))?;
                Ok((landmarks.presence >= MIN_PRESENCE).then(|| TrackedFace {
                    detection: detection.clone(),
                    face_count,
                    landmarks,
                }))
            })
            .collect::<Result<_, ModelError>>()?;
        if let Some(&(index, detection, count)) = found.last() {
            self.previous = Some((index, detection.clone(), count));
        }
        for (offset, (image, face)) in chunk.into_iter().zip(&faces).enumerate() {
            let Some(face) = face else { continue };
            let index = start + offset;
            let cost = frame_cost(face);
            let parts: Vec<usize> = (0..EMBEDDED_FRAMES)
                .filter(|&part| {
                    part_range(part, self.expected, EMBEDDED_FRAMES).contains(&index)
                        && self.best[part]
                            .as_ref()
                            .is_none_or(|(best, _, _)| cost < *best)
                })
                .collect();
            if let Some((&last_part, others)) = parts.split_last() {
                for &part in others {
                    self.best[part] = Some((cost, index, image.clone()));
                }
                self.best[last_part] = Some((cost, index, image));
            }
        }
        self.faces.extend(faces);
        Ok(())
    }
}

impl FaceModels {
    /// Tracks the largest face through `frames` (in presentation order) on the current rayon pool,
    /// embedding [`EMBEDDED_FRAMES`] of them when `embed` is set (no templates are computed
    /// otherwise). The frames are analysed and dropped a chunk at a time ([`FaceTracker`]).
    pub fn track(&self, frames: Vec<RgbImage>, embed: bool) -> Result<FaceTrack, ModelError> {
        let mut tracker = FaceTracker::new(self, frames.len(), embed);
        for frame in frames {
            tracker.push(frame)?;
        }
        tracker.finish()
    }
}

/// How poor a frame is for embedding: turned away, tilted or with the eyes closed.
fn frame_cost(face: &TrackedFace) -> f32 {
    let (yaw, pitch, _) = face.landmarks.pose_degrees();
    let closed_eyes = (0.25 - face.landmarks.eyes_open()).max(0.0) * 100.0;
    yaw.abs() + 0.5 * pitch.abs() + closed_eyes
}

/// The frames of part `part` when `frames` frames are split into `parts` equal parts (a part
/// has at least one frame, so short clips share frames between parts).
fn part_range(part: usize, frames: usize, parts: usize) -> std::ops::Range<usize> {
    let start = part * frames / parts;
    let end = ((part + 1) * frames / parts).max(start + 1).min(frames);
    start..end
}
