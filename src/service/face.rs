//! Faces on the engine: templates from images and frames, enrollment (consent-gated, sealed),
//! and matching a document portrait against a live image or video frames. Work runs on the
//! engine's own pool; nothing biometric is logged.

use serde::Serialize;

use crate::bio::face::{
    template::{MODEL_ID, MODEL_VERSION},
    FaceError, FaceResult, FaceTemplate, Match, Quality, QualityReason, RgbImage,
};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::media::Frame;
use crate::store::Modality;

use super::templates::decode_rgb;

/// Quality reasons that make a face unusable for enrollment (a template from it would verify
/// poorly for as long as it is stored). Blur, light, pitch (its estimate is rough) and extra faces
/// are reported, not refused.
const ENROLL_BLOCKERS: [QualityReason; 3] = [
    QualityReason::FaceTooSmall,
    QualityReason::PoseYaw,
    QualityReason::LowFaceConfidence,
];

/// A stored face enrollment.
#[derive(Debug, Clone, Serialize)]
pub struct FaceEnrollment {
    /// Row id of the new sealed template.
    pub template_id: i64,
    /// Face templates the user has now.
    pub templates: usize,
    /// Whether the image was a document photo.
    pub is_document: bool,
    /// Faces seen in the image (the largest was enrolled).
    pub face_count: usize,
    /// Quality of the enrolled face.
    pub quality: Quality,
}

/// A document portrait compared with a live face.
#[derive(Debug, Clone, Serialize)]
pub struct DocumentMatch {
    /// Template distance of the best live frame.
    pub distance: f32,
    /// Calibrated probability of the same person.
    pub probability: f32,
    /// Whether the distance is under the default threshold.
    pub is_match: bool,
    /// Index of the live frame that matched best.
    pub best_frame: usize,
    /// Live frames in which a face was found.
    pub frames_with_face: usize,
    /// Quality of the document portrait.
    pub document_quality: Quality,
}

fn no_face(error: FaceError) -> Error {
    match error {
        FaceError::NoFace => Error::NoFace("no face found in the image".to_owned()),
        FaceError::Model(error) => Error::Model(error.to_string()),
    }
}

impl Engine {
    /// The largest face of an image file (JPEG or PNG; EXIF orientation applied).
    pub fn face_from_image(&self, bytes: &[u8]) -> Result<FaceResult> {
        let models = self.face_models()?;
        let image = decode_rgb(bytes)?;
        self.install(|| models.analyze(&image)).map_err(no_face)
    }

    /// The largest face of a decoded frame.
    pub fn face_from_frame(&self, frame: &Frame) -> Result<FaceResult> {
        let models = self.face_models()?;
        let image = RgbImage::new(
            frame.width as usize,
            frame.height as usize,
            frame.rgb.clone(),
        )
        .ok_or_else(|| {
            Error::InvalidArgument("the frame's size does not match its pixels".to_owned())
        })?;
        self.install(|| models.analyze(&image)).map_err(no_face)
    }

    /// Faces of many frames, analysed in parallel on the engine's pool (`None` where none).
    pub fn faces_in_frames(&self, frames: &[Frame]) -> Result<Vec<Option<FaceResult>>> {
        let models = self.face_models()?;
        let images: Vec<RgbImage> = frames
            .iter()
            .map(|f| RgbImage::new(f.width as usize, f.height as usize, f.rgb.clone()))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                Error::InvalidArgument("a frame's size does not match its pixels".to_owned())
            })?;
        let results = self.install(|| models.analyze_many(&images));
        results
            .into_iter()
            .map(|result| match result {
                Ok(face) => Ok(Some(face)),
                Err(FaceError::NoFace) => Ok(None),
                Err(error) => Err(no_face(error)),
            })
            .collect()
    }

    /// Enrolls the largest face of an image for a user: both consents must be given (checked
    /// before the image is even decoded, and again when the sealed template is written).
    pub fn enroll_face(
        &self,
        project_id: &str,
        fullname: &str,
        image: &[u8],
        is_document: bool,
    ) -> Result<FaceEnrollment> {
        self.require_enrollment_consent(project_id, fullname)?;
        let face = self.face_from_image(image)?;
        let blocking: Vec<&str> = face
            .quality
            .reasons
            .iter()
            .filter(|r| ENROLL_BLOCKERS.contains(r))
            .map(|r| r.as_str())
            .collect();
        if !blocking.is_empty() {
            return Err(Error::NoFace(format!(
                "the face is not good enough to enroll: {}",
                blocking.join(", ")
            )));
        }
        let (template_id, templates) = self.store_template(
            project_id,
            fullname,
            Modality::Face,
            (MODEL_ID, MODEL_VERSION),
            &face.template.to_bytes(),
        )?;
        Ok(FaceEnrollment {
            template_id,
            templates,
            is_document,
            face_count: face.face_count,
            quality: face.quality,
        })
    }

    /// The user's enrolled face templates of the current model (needs authorization consent).
    pub fn face_templates(&self, project_id: &str, fullname: &str) -> Result<Vec<FaceTemplate>> {
        Ok(self
            .current_templates(
                project_id,
                fullname,
                Modality::Face,
                (MODEL_ID, MODEL_VERSION),
            )?
            .iter()
            .filter_map(|bytes| FaceTemplate::from_bytes(bytes))
            .collect())
    }

    /// Compares a document portrait (image file) with live frames: the best-matching frame wins.
    pub fn match_document_face(&self, document: &[u8], live: &[Frame]) -> Result<DocumentMatch> {
        if live.is_empty() {
            return Err(Error::InvalidArgument("no live image or frames".to_owned()));
        }
        let portrait = self
            .face_from_image(document)
            .map_err(|error| match error {
                Error::NoFace(_) => Error::NoFace("no face found in the document image".to_owned()),
                other => other,
            })?;
        let faces = self.faces_in_frames(live)?;
        let best = faces
            .iter()
            .enumerate()
            .filter_map(|(i, face)| Some((i, portrait.template.compare(&face.as_ref()?.template))))
            .min_by(|a, b| a.1.distance.total_cmp(&b.1.distance));
        let Some((
            best_frame,
            Match {
                distance,
                probability,
                is_match,
            },
        )) = best
        else {
            return Err(Error::NoFace(
                "no face found in the live image or frames".to_owned(),
            ));
        };
        Ok(DocumentMatch {
            distance,
            probability,
            is_match,
            best_frame,
            frames_with_face: faces.iter().filter(|f| f.is_some()).count(),
            document_quality: portrait.quality,
        })
    }
}
