//! What face and voice enrollment share: the consent check that comes before any media is
//! decoded, writing one sealed template and counting the user's templates, and reading back the
//! templates of the current model.

use crate::error::{Error, Result};
use crate::service::store::{ConsentKind, Modality, TemplateModel};
use crate::service::Engine;
use vouch_bio::{
    FaceQualityReason as QualityReason, Match, RgbImage, SpeechReason, FACE_MODEL_ID,
    FACE_MODEL_VERSION, VOICE_MODEL_ID, VOICE_MODEL_VERSION,
};
use vouch_media::{decode_image, ImageLimits};

/// Quality reasons that make a face unusable for enrollment (a template from it would verify
/// poorly for as long as it is stored). Blur, light, pitch (its estimate is rough) and extra faces
/// are reported, not refused.
const FACE_BLOCKERS: [QualityReason; 3] = [
    QualityReason::FaceTooSmall,
    QualityReason::PoseYaw,
    QualityReason::LowFaceConfidence,
];

/// Speech reasons that make a voice unusable for enrollment: a template from it would verify
/// poorly for as long as it is stored.
const VOICE_BLOCKERS: [SpeechReason; 4] = [
    SpeechReason::Silence,
    SpeechReason::NoSpeech,
    SpeechReason::TooLittleSpeech,
    SpeechReason::Clipping,
];

/// The enrollment gate for faces, shared by `enroll/face` and auto-enrollment: the names of the
/// reasons among `reasons` that keep the face from being enrolled (none: it may be).
pub(crate) fn face_enroll_blockers(reasons: &[QualityReason]) -> Vec<&'static str> {
    reasons
        .iter()
        .filter(|r| FACE_BLOCKERS.contains(r))
        .map(|r| r.as_str())
        .collect()
}

/// The enrollment gate for voices, shared by `enroll/voice` and auto-enrollment.
pub(crate) fn voice_enroll_blockers(reasons: &[SpeechReason]) -> Vec<&'static str> {
    reasons
        .iter()
        .filter(|r| VOICE_BLOCKERS.contains(r))
        .map(|r| r.as_str())
        .collect()
}

/// The closest of the enrolled templates to a probe (`compare` gives one template's match with
/// it): the one that decides recognition for both modalities. `None` when nothing is enrolled.
pub(crate) fn best_match<T>(enrolled: &[T], compare: impl Fn(&T) -> Match) -> Option<Match> {
    enrolled
        .iter()
        .map(compare)
        .min_by(|a, b| a.distance.total_cmp(&b.distance))
}

/// The model whose templates this build makes and compares, per modality: the one place that
/// names it. Templates stored by another model or version are never compared with new ones.
pub(crate) fn current_model(modality: Modality) -> TemplateModel {
    let (model_id, model_version) = match modality {
        Modality::Face => (FACE_MODEL_ID, FACE_MODEL_VERSION),
        Modality::Voice => (VOICE_MODEL_ID, VOICE_MODEL_VERSION),
    };
    TemplateModel {
        model_id: model_id.to_owned(),
        model_version,
    }
}

impl Engine {
    /// Both consents, checked before the media is even decoded (the store checks them again when
    /// it writes): 403 `authorization consent is required` / `storage consent is required`.
    pub(crate) fn require_enrollment_consent(
        &self,
        project_id: &str,
        fullname: &str,
    ) -> Result<()> {
        let consent = self.store.consent(project_id, fullname)?;
        for kind in [ConsentKind::Authorization, ConsentKind::Storage] {
            if !consent.get(kind).given {
                return Err(Error::ConsentRequired(format!(
                    "{} consent is required",
                    kind.as_str()
                )));
            }
        }
        Ok(())
    }

    /// Seals and stores one template of the modality's [`current_model`]; returns its row id and
    /// how many templates of the modality the user has now.
    pub(crate) fn store_template(
        &self,
        project_id: &str,
        fullname: &str,
        modality: Modality,
        bytes: &[u8],
    ) -> Result<(i64, usize)> {
        let model = current_model(modality);
        let id = self.store.insert_template(
            project_id,
            fullname,
            modality,
            &model,
            bytes,
            self.now_ms(),
        )?;
        Ok((
            id,
            self.store.template_count(project_id, fullname, modality)?,
        ))
    }

    /// The byte forms of the user's templates of `model` (needs authorization consent); templates
    /// of other models are never compared.
    pub(crate) fn current_templates(
        &self,
        project_id: &str,
        fullname: &str,
        modality: Modality,
    ) -> Result<Vec<Vec<u8>>> {
        let model = current_model(modality);
        Ok(self
            .store
            .templates(project_id, fullname, modality)?
            .into_iter()
            .filter(|t| t.model == model)
            .map(|t| t.data)
            .collect())
    }
}

/// An image file (JPEG or PNG; EXIF orientation applied) as RGB.
pub(crate) fn decode_rgb(bytes: &[u8]) -> Result<RgbImage> {
    let frame = decode_image(bytes, &ImageLimits::default())?;
    RgbImage::from_frame(frame)
        .ok_or_else(|| Error::InvalidArgument("the image is empty".to_owned()))
}

/// Enrollment against a template that no longer opens (altered bytes; the key itself is checked
/// when the engine opens): the new sample cannot be checked against the enrolled identity, so it
/// is a conflict the user can resolve, not a server error.
pub(crate) fn unreadable_conflict(error: Error) -> Error {
    match error {
        Error::TemplateUnreadable => Error::Conflict(
            "a template already enrolled for this user no longer opens (altered data); withdraw \
             and give consent again to delete it, then enroll anew"
                .to_owned(),
        ),
        other => other,
    }
}
