//! Faces on the engine: templates from images and frames, enrollment (consent-gated, sealed),
//! and matching a document portrait against a live image or video frames. Work runs on the
//! engine's own pool; nothing biometric is logged.

use serde::Serialize;

use crate::auth::ApiKey;
use crate::error::{Error, Result};
use crate::service::store::{AttemptOutcome, FaceSource, Modality};
use crate::service::Engine;
use vouch_bio::{
    FaceError, FaceQuality as Quality, FaceResult, FaceTemplate, Match, RgbImage,
    FACE_CALIBRATION as CALIBRATION,
};
use vouch_media::{decode_image, DecodeOptions, Frame, FrameSampler, ImageLimits};

use super::attempts::Counted;
use super::templates::decode_rgb;

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

/// A document portrait compared with a live face (match-faces).
#[derive(Debug, Clone, Serialize)]
pub struct DocumentMatch {
    /// Whether the distance is under the threshold.
    #[serde(rename = "match")]
    pub is_match: bool,
    /// `1 - distance`, clamped to 0..1 (1 identical).
    pub similarity: f32,
    /// Calibrated probability of the same person.
    pub probability: f32,
    /// The distance threshold used.
    pub threshold: f32,
    /// Template distance of the best live face.
    pub distance: f32,
    /// `face_match_passed` or `face_match_failed`, then the document portrait's quality reasons.
    pub reasons: Vec<String>,
    /// Index of the live face (frame) that matched best.
    pub best_frame: usize,
    /// Live faces compared.
    pub frames_with_face: usize,
    /// Quality of the document portrait, when it was analysed in this call.
    pub document_quality: Option<Quality>,
}

/// Where match-faces takes the live face from.
#[derive(Debug, Clone, Copy)]
pub enum LiveFace<'a> {
    /// The faces kept from the session's process-video (`X-Use-Prefilled-Video: true`).
    Session,
    /// A video file (MP4, MOV, WebM, Matroska): faces of evenly spread frames.
    Video(&'a [u8]),
    /// An image file (JPEG or PNG).
    Image(&'a [u8]),
}

/// Live frames taken from a match-faces video.
const LIVE_VIDEO_FRAMES: usize = 8;

/// Compares a portrait with live faces: the best-matching live face decides.
fn compare_portrait(
    portrait: &FaceTemplate,
    document_quality: Option<Quality>,
    live: &[Option<FaceTemplate>],
) -> Result<DocumentMatch> {
    let best = live
        .iter()
        .enumerate()
        .filter_map(|(i, face)| Some((i, portrait.compare(face.as_ref()?))))
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
    let mut reasons = vec![if is_match {
        "face_match_passed"
    } else {
        "face_match_failed"
    }
    .to_owned()];
    if let Some(quality) = &document_quality {
        reasons.extend(quality.reasons.iter().map(|r| r.as_str().to_owned()));
    }
    Ok(DocumentMatch {
        is_match,
        similarity: (1.0 - distance).clamp(0.0, 1.0),
        probability,
        threshold: CALIBRATION.threshold,
        distance,
        reasons,
        best_frame,
        frames_with_face: live.iter().filter(|f| f.is_some()).count(),
        document_quality,
    })
}

fn no_face(error: FaceError) -> Error {
    match error {
        FaceError::NoFace => Error::NoFace("no face found in the image".to_owned()),
        FaceError::Model(error) => Error::Model(error.to_string()),
    }
}

impl Engine {
    fn compare_for_match(
        &self,
        project_id: &str,
        (session_id, fullname): (&str, &str),
        document: Option<&[u8]>,
        live: LiveFace<'_>,
    ) -> Result<DocumentMatch> {
        let model = super::templates::current_model(Modality::Face);
        // Expired faces are deleted before any is read.
        self.store
            .purge_session_faces(self.now_ms() - self.session_faces_ttl_ms)?;
        let session_faces = |source: FaceSource| -> Result<Vec<FaceTemplate>> {
            Ok(self
                .store
                .session_faces(project_id, (session_id, fullname), source, &model)?
                .iter()
                .filter_map(|bytes| FaceTemplate::from_bytes(bytes))
                .collect())
        };
        let (portrait, document_quality) = match document {
            Some(bytes) => {
                let face = self.document_portrait(bytes)?;
                (face.template, Some(face.quality))
            }
            None => match session_faces(FaceSource::Document)?.into_iter().next() {
                Some(template) => (template, None),
                None => return Err(Error::InvalidArgument(
                    "image is required: the session has no document portrait from docauth/check"
                        .to_owned(),
                )),
            },
        };
        let live: Vec<Option<FaceTemplate>> = match live {
            LiveFace::Session => {
                let faces = session_faces(FaceSource::Video)?;
                if faces.is_empty() {
                    return Err(Error::InvalidArgument(
                        "the session has no faces from process-video: call process-video with this \
                         X-Session-ID first, or send the live face as video or live_image"
                            .to_owned(),
                    ));
                }
                faces.into_iter().map(Some).collect()
            }
            LiveFace::Image(bytes) => vec![Some(
                self.faces()
                    .from_image(bytes)
                    .map_err(|error| match error {
                        Error::NoFace(_) => {
                            Error::NoFace("no face found in the live image".to_owned())
                        }
                        other => other,
                    })?
                    .template,
            )],
            LiveFace::Video(bytes) => {
                let clip = self.media().decode_video(
                    bytes,
                    &DecodeOptions {
                        sampler: FrameSampler::Evenly(LIVE_VIDEO_FRAMES),
                        audio: false,
                        ..DecodeOptions::default()
                    },
                )?;
                self.faces()
                    .in_frames(&clip.frames)?
                    .into_iter()
                    .map(|face| face.map(|f| f.template))
                    .collect()
            }
        };
        compare_portrait(&portrait, document_quality, &live)
    }

    /// The portrait of a document image.
    fn document_portrait(&self, document: &[u8]) -> Result<FaceResult> {
        self.faces()
            .from_image(document)
            .map_err(|error| match error {
                Error::NoFace(_) => Error::NoFace("no face found in the document image".to_owned()),
                other => other,
            })
    }
}

/// What `Face Recognition` found in a verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaceStatus {
    /// The best-matching enrolled template is under the calibrated threshold.
    Identified,
    /// Compared, and no enrolled template is under the threshold.
    NotIdentified,
    /// The user has no face template of the current model.
    NotEnrolled,
    /// No usable face in the clip: nothing to compare.
    NoFace,
}

impl FaceStatus {
    /// The spec's status text.
    pub fn as_str(self) -> &'static str {
        match self {
            FaceStatus::Identified => "identified",
            FaceStatus::NotIdentified => "not_identified",
            FaceStatus::NotEnrolled => "not_enrolled",
            FaceStatus::NoFace => "no_face_detected",
        }
    }
}

/// The `Face Recognition` result of a verification.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaceRecognition {
    /// What the comparison found.
    pub status: FaceStatus,
    /// Calibrated probability (0..1) that the face is the enrolled user's, from the
    /// best-matching template; 0 when nothing was compared.
    pub probability: f32,
}

/// The probe's identity against the enrolled face templates: the best-matching template decides.
pub(crate) fn recognize(
    enrolled: &[FaceTemplate],
    probe: Option<&FaceTemplate>,
) -> FaceRecognition {
    let mut result = FaceRecognition {
        status: FaceStatus::NotEnrolled,
        probability: 0.0,
    };
    if enrolled.is_empty() {
        return result;
    }
    let Some(probe) = probe else {
        result.status = FaceStatus::NoFace;
        return result;
    };
    if let Some(best) = super::templates::best_match(enrolled, |template| template.compare(probe)) {
        result.probability = best.probability;
        result.status = if best.is_match {
            FaceStatus::Identified
        } else {
            FaceStatus::NotIdentified
        };
    }
    result
}

/// Faces: detection and templates from images and frames, enrollment, document-portrait matching
/// ([`Engine::faces`]).
#[derive(Debug, Clone, Copy)]
pub struct Faces<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// Faces: detection and templates from images and frames, enrollment, document-portrait
    /// matching.
    pub fn faces(&self) -> Faces<'_> {
        Faces(self)
    }
}

impl Faces<'_> {
    /// The largest face of an image file (JPEG or PNG; EXIF orientation applied).
    pub fn from_image(&self, bytes: &[u8]) -> Result<FaceResult> {
        let engine = self.0;
        let models = engine.face_models()?;
        let image = decode_rgb(bytes)?;
        engine.install(|| models.analyze(&image)).map_err(no_face)
    }

    /// The largest face of a decoded frame.
    pub fn from_frame(&self, frame: &Frame) -> Result<FaceResult> {
        let engine = self.0;
        let models = engine.face_models()?;
        let image = RgbImage::new(
            frame.width as usize,
            frame.height as usize,
            frame.rgb.clone(),
        )
        .ok_or_else(|| {
            Error::InvalidArgument("the frame's size does not match its pixels".to_owned())
        })?;
        engine.install(|| models.analyze(&image)).map_err(no_face)
    }

    /// Faces of many frames, analysed in parallel on the engine's pool (`None` where none).
    pub fn in_frames(&self, frames: &[Frame]) -> Result<Vec<Option<FaceResult>>> {
        let engine = self.0;
        let models = engine.face_models()?;
        let images: Vec<RgbImage> = frames
            .iter()
            .map(|f| RgbImage::new(f.width as usize, f.height as usize, f.rgb.clone()))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                Error::InvalidArgument("a frame's size does not match its pixels".to_owned())
            })?;
        let results = engine.install(|| models.analyze_many(&images));
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
    /// before the image is even decoded, and again when the sealed template is written). A user
    /// who has face templates already can only add one that matches them ([`Error::Conflict`]
    /// otherwise).
    pub fn enroll(
        &self,
        project_id: &str,
        fullname: &str,
        image: &[u8],
        is_document: bool,
    ) -> Result<FaceEnrollment> {
        let engine = self.0;
        engine.require_enrollment_consent(project_id, fullname)?;
        let face = engine.faces().from_image(image)?;
        let blocking = super::templates::face_enroll_blockers(&face.quality.reasons);
        if !blocking.is_empty() {
            return Err(Error::NoFace(format!(
                "the face is not good enough to enroll: {}",
                blocking.join(", ")
            )));
        }
        // A user's further faces must be the same person: otherwise enroll/face would attach a
        // second person to the identity, who would then pass as the user.
        let enrolled = engine
            .faces()
            .templates(project_id, fullname)
            .map_err(super::templates::unreadable_conflict)?;
        if !enrolled.is_empty() && !enrolled.iter().any(|t| t.compare(&face.template).is_match) {
            return Err(Error::Conflict(
                "the face does not match the face already enrolled for this user".to_owned(),
            ));
        }
        let (template_id, templates) = engine.store_template(
            project_id,
            fullname,
            Modality::Face,
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
    pub fn templates(&self, project_id: &str, fullname: &str) -> Result<Vec<FaceTemplate>> {
        let engine = self.0;
        Ok(engine
            .current_templates(project_id, fullname, Modality::Face)?
            .iter()
            .filter_map(|bytes| FaceTemplate::from_bytes(bytes))
            .collect())
    }

    /// Compares a document portrait (image file) with live frames: the best-matching frame wins.
    pub fn match_document(&self, document: &[u8], live: &[Frame]) -> Result<DocumentMatch> {
        let engine = self.0;
        if live.is_empty() {
            return Err(Error::InvalidArgument("no live image or frames".to_owned()));
        }
        let portrait = engine.document_portrait(document)?;
        let faces: Vec<Option<FaceTemplate>> = engine
            .faces()
            .in_frames(live)?
            .into_iter()
            .map(|face| face.map(|f| f.template))
            .collect();
        compare_portrait(&portrait.template, Some(portrait.quality), &faces)
    }

    /// Compares a document portrait (image file) with a live image file (JPEG or PNG).
    pub fn match_document_image(&self, document: &[u8], live: &[u8]) -> Result<DocumentMatch> {
        let engine = self.0;
        let frame = decode_image(live, &ImageLimits::default())?;
        engine.faces().match_document(document, &[frame])
    }

    /// match-faces: the document portrait (`document`, or the one kept from the session's
    /// docauth/check) against the live face. Needs the user's authorization consent.
    ///
    /// A decision about the user, so it counts against the attempt limit of the key's rule set
    /// ([`super::attempts`]): a non-match is a failed attempt, a match starts the count again, and
    /// a user held back is refused before anything is decoded ([`Error::Forbidden`], whose text
    /// says when the next attempt is allowed). A failure that starts a wait adds its reason.
    pub fn match_faces(
        &self,
        key: &ApiKey,
        (session_id, fullname): (&str, &str),
        document: Option<&[u8]>,
        live: LiveFace<'_>,
    ) -> Result<DocumentMatch> {
        let engine = self.0;
        let project_id = key.project_id.as_str();
        if !engine
            .consents()
            .get(project_id, fullname)?
            .authorization
            .given
        {
            return Err(Error::ConsentRequired(
                "authorization consent is required".to_owned(),
            ));
        }
        let (rules, _) = engine.rules().for_key(key)?;
        let counted = engine.counted(
            (project_id, fullname),
            &rules,
            || engine.compare_for_match(project_id, (session_id, fullname), document, live),
            |found| {
                if found.is_match {
                    AttemptOutcome::Passed
                } else {
                    AttemptOutcome::Failed
                }
            },
        )?;
        match counted {
            Counted::Held(notice) => Err(Error::Forbidden(notice.message())),
            Counted::Ran(mut found, started) => {
                if let Some(notice) = started {
                    found.reasons.push(notice.reason().to_owned());
                }
                Ok(found)
            }
        }
    }

    /// Keeps the portrait of a docauth/check document with the session for match-faces, sealed,
    /// when the session's user has given both consents. Returns whether it was kept.
    pub fn keep_document_portrait(
        &self,
        project_id: &str,
        (session_id, fullname): (&str, &str),
        document: &[u8],
    ) -> Result<bool> {
        let engine = self.0;
        let consent = engine.consents().get(project_id, fullname)?;
        if !(consent.authorization.given && consent.storage.given) {
            return Ok(false);
        }
        engine
            .store
            .purge_session_faces(engine.now_ms() - engine.session_faces_ttl_ms)?;
        let Ok(portrait) = engine.faces().from_image(document) else {
            return Ok(false);
        };
        engine.store.replace_session_faces(
            project_id,
            (session_id, fullname),
            FaceSource::Document,
            &super::templates::current_model(Modality::Face),
            &[portrait.template.to_bytes()],
            engine.now_ms(),
        )?;
        Ok(true)
    }
}
