//! The face pipeline: detect (BlazeFace) -> landmarks (FaceMesh) -> align (dlib chip) -> embed
//! (dlib ResNet, 128-d) -> quality, on one image or on many frames in parallel.
//!
//! [`FaceModels::analyze`] returns the largest face with its template and quality, or a
//! [`FaceError`] that says why there is none. Nothing here logs or keeps images or templates.

pub mod align;
pub mod crop;
pub mod detect;
pub mod image;
pub mod landmarks;
pub mod passive;
pub mod quality;
pub mod template;
pub mod track;

use std::path::Path;

use rayon::prelude::*;

use crate::infer::{
    Model, ModelError, ModelSpec, FACE_DETECTOR_FULL, FACE_DETECTOR_SHORT, FACE_EMBEDDER,
    FACE_LANDMARKS, PASSIVE_ANTISPOOF, PASSIVE_LIVENESS,
};

use self::align::{chip_details, extract_chip, ChipDetails};
use self::detect::{Detection, Detector, DetectorKind};
pub use self::image::RgbImage;
use self::landmarks::{index, LandmarkModel, Landmarks, Roi};
use self::passive::PassiveModels;
pub use self::quality::{Quality, QualityReason};
pub use self::template::FaceTemplate;
pub use self::track::{EmbeddedFace, FaceTrack, FaceTracker, TrackedFace};

/// Why no template came out of an image.
#[derive(Debug, Clone, PartialEq)]
pub enum FaceError {
    /// No face was found.
    NoFace,
    /// A model could not run.
    Model(ModelError),
}

impl std::fmt::Display for FaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FaceError::NoFace => f.write_str("no face found in the image"),
            FaceError::Model(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for FaceError {}

impl From<ModelError> for FaceError {
    fn from(error: ModelError) -> Self {
        FaceError::Model(error)
    }
}

/// One analysed face.
#[derive(Debug, Clone)]
pub struct FaceResult {
    /// The detection (largest face).
    pub detection: Detection,
    /// How many faces the detector saw.
    pub face_count: usize,
    /// FaceMesh landmarks.
    pub landmarks: Landmarks,
    /// Where the aligned chip came from.
    pub chip: ChipDetails,
    /// The embedding.
    pub template: FaceTemplate,
    /// Quality measures and reasons.
    pub quality: Quality,
}

/// The four face models, loaded once.
#[derive(Debug)]
pub struct FaceModels {
    short_range: Detector,
    full_range: Detector,
    landmarks: LandmarkModel,
    embedder: Model,
    passive: PassiveModels,
}

impl FaceModels {
    /// The files [`Self::load`] reads.
    pub const SPECS: [ModelSpec; 6] = [
        FACE_DETECTOR_SHORT,
        FACE_DETECTOR_FULL,
        FACE_LANDMARKS,
        FACE_EMBEDDER,
        PASSIVE_ANTISPOOF,
        PASSIVE_LIVENESS,
    ];

    /// Checks that the models' files are in `dir`, without reading them.
    pub fn check_present(dir: &Path) -> Result<(), ModelError> {
        FaceModels::SPECS
            .iter()
            .try_for_each(|spec| crate::infer::check_present(dir, spec.file))
    }

    /// Loads and checks the models from `dir`.
    ///
    /// The six files load side by side on the current rayon pool (one after another on a pool of
    /// one thread), the largest first so that the small ones fill in around it.
    pub fn load(dir: &Path) -> Result<FaceModels, ModelError> {
        const SPECS: [ModelSpec; 6] = [
            FACE_DETECTOR_FULL,
            FACE_EMBEDDER,
            FACE_LANDMARKS,
            FACE_DETECTOR_SHORT,
            PASSIVE_ANTISPOOF,
            PASSIVE_LIVENESS,
        ];
        let loaded: Vec<Model> = SPECS
            .par_iter()
            .with_max_len(1)
            .map(|&spec| Model::load(dir, spec))
            .collect::<Result<_, _>>()?;
        let [full_range, embedder, landmarks, short_range, antispoof, liveness]: [Model; 6] =
            loaded.try_into().map_err(|_| ModelError::Runtime {
                file: FACE_DETECTOR_FULL.file,
                detail: "face models: not all six loaded".into(),
            })?;
        Ok(FaceModels {
            short_range: Detector::new(DetectorKind::ShortRange, short_range),
            full_range: Detector::new(DetectorKind::FullRange, full_range),
            landmarks: LandmarkModel::new(landmarks),
            embedder,
            passive: PassiveModels {
                antispoof,
                liveness,
            },
        })
    }

    /// Finds faces, largest first, trying in turn: the short-range detector on the image, the
    /// same on the image with a margin (tight crops such as ID photos, where the face touches the
    /// border), and the full-range detector (small, distant faces).
    pub fn detect(&self, image: &RgbImage) -> Result<Vec<Detection>, ModelError> {
        let mut found = self.short_range.detect(image)?;
        if found.is_empty() {
            let margin = image.width.max(image.height) / 4;
            let padded = pad(image, margin);
            found = self.short_range.detect(&padded)?;
            let m = margin as f32;
            for d in &mut found {
                for v in &mut d.bbox {
                    *v -= m;
                }
                for p in &mut d.keypoints {
                    p.0 -= m;
                    p.1 -= m;
                }
            }
        }
        if found.is_empty() {
            found = self.full_range.detect(image)?;
        }
        found.sort_by(|a, b| b.area().total_cmp(&a.area()));
        Ok(found)
    }

    /// FaceMesh landmarks for a detection (the landmark stage alone, for benches and tools).
    pub fn landmarks_for(
        &self,
        image: &RgbImage,
        detection: &Detection,
    ) -> Result<Landmarks, ModelError> {
        self.landmarks
            .landmarks(image, &Roi::from_detection(detection))
    }

    /// The aligned 150x150 RGB chip for landmarks (the alignment stage alone).
    pub fn chip_for(image: &RgbImage, landmarks: &Landmarks) -> Vec<u8> {
        extract_chip(image, &chip_details(&five_points(landmarks)))
    }

    /// Analyses the largest face of an image.
    pub fn analyze(&self, image: &RgbImage) -> Result<FaceResult, FaceError> {
        let detections = self.detect(image)?;
        let detection = detections.first().cloned().ok_or(FaceError::NoFace)?;
        let landmarks = self.upright_landmarks(image, &Roi::from_detection(&detection))?;
        let chip = chip_details(&five_points(&landmarks));
        let pixels = extract_chip(image, &chip);
        let template = self.embed_chip(&pixels)?;
        let quality = Quality::measure(&detection, detections.len(), &landmarks, &pixels);
        Ok(FaceResult {
            detection,
            face_count: detections.len(),
            landmarks,
            chip,
            template,
            quality,
        })
    }

    /// FaceMesh landmarks in `roi`. FaceMesh is all but certain (presence above 0.99) on an
    /// upright crop of a real face; less usually means the detector's keypoints turned the crop the
    /// wrong way (faces lying on their side or upside down): the other three quarter turns are
    /// tried and the surest kept.
    pub fn upright_landmarks(&self, image: &RgbImage, roi: &Roi) -> Result<Landmarks, ModelError> {
        let mut landmarks = self.landmarks.landmarks(image, roi)?;
        if landmarks.presence < 0.99 {
            for turn in [1.0f32, 2.0, 3.0] {
                let other = self
                    .landmarks
                    .landmarks(image, &roi.turned(turn * std::f32::consts::FRAC_PI_2))?;
                if other.presence > landmarks.presence {
                    landmarks = other;
                }
            }
        }
        Ok(landmarks)
    }

    /// Analyses many images (video frames) in parallel on the current rayon pool.
    pub fn analyze_many(&self, images: &[RgbImage]) -> Vec<Result<FaceResult, FaceError>> {
        images.par_iter().map(|image| self.analyze(image)).collect()
    }

    /// The embedding of an aligned 150x150 RGB chip.
    pub fn embed_chip(&self, chip: &[u8]) -> Result<FaceTemplate, ModelError> {
        let input: Vec<f32> = chip.iter().map(|&v| f32::from(v)).collect();
        let outputs = self.embedder.run(&[&input])?;
        let values: [f32; template::DIMENSIONS] = outputs
            .first()
            .and_then(|o| o.as_slice().try_into().ok())
            .ok_or_else(|| ModelError::Runtime {
                file: FACE_EMBEDDER.file,
                detail: "the embedding is not 128 values".into(),
            })?;
        Ok(FaceTemplate::new(values))
    }
}

/// dlib's five points from FaceMesh landmarks, in dlib's order and pixel convention (pixel
/// centres at integers, so FaceMesh's +0.5 centres move by half a pixel).
///
/// FaceMesh's eye corners and subnasale sit a little apart from where dlib's 5-point landmarker
/// puts them, which shifts the chip; each point is therefore moved by a fixed offset in the face's
/// own frame (x along the line between the eye centres, y perpendicular, both in units of the eye
/// distance). The offsets are least-squares fits of dlib's points from FaceMesh's on 224 talking-
/// head frames and live selfies (none of them in the evaluation pairs);
/// `scripts/study-face-alignment.py` reproduces them. They halve the embedding gap to dlib-aligned
/// chips of the same photos.
fn five_points(landmarks: &Landmarks) -> [(f64, f64); 5] {
    const POINTS: [(usize, f64, f64); 5] = [
        (index::RIGHT_EYE_OUTER, -0.0171, 0.0193),
        (index::RIGHT_EYE_INNER, 0.0300, 0.0052),
        (index::LEFT_EYE_OUTER, 0.0426, 0.0179),
        (index::LEFT_EYE_INNER, -0.0053, 0.0055),
        (index::NOSE_BASE, 0.0114, 0.0062),
    ];
    let at = |i: usize| {
        let p = landmarks.points[i];
        (f64::from(p[0]) - 0.5, f64::from(p[1]) - 0.5)
    };
    let mid = |a: (f64, f64), b: (f64, f64)| ((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0);
    let left = mid(at(index::LEFT_EYE_OUTER), at(index::LEFT_EYE_INNER));
    let right = mid(at(index::RIGHT_EYE_INNER), at(index::RIGHT_EYE_OUTER));
    let ex = (right.0 - left.0, right.1 - left.1);
    let ey = (-ex.1, ex.0);
    POINTS.map(|(i, du, dv)| {
        let p = at(i);
        (p.0 + du * ex.0 + dv * ey.0, p.1 + du * ex.1 + dv * ey.1)
    })
}

/// A copy of `image` with a black margin on every side.
fn pad(image: &RgbImage, margin: usize) -> RgbImage {
    let width = image.width + 2 * margin;
    let height = image.height + 2 * margin;
    let mut rgb = vec![0u8; width * height * 3];
    for y in 0..image.height {
        let src = &image.rgb[y * image.width * 3..(y + 1) * image.width * 3];
        let start = ((y + margin) * width + margin) * 3;
        rgb[start..start + src.len()].copy_from_slice(src);
    }
    RgbImage { width, height, rgb }
}
