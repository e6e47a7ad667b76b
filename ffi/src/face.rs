//! Face primitives for apps that drive the pipeline themselves: a template from an image file or
//! from a clip's frame, comparing two templates, and matching a document portrait against a live
//! image or a clip's frames.

use std::ffi::c_char;

use serde_json::json;

use super::boundary::{boundary, check_out, into_c_string, read_bytes, FfiError};
use super::engine::{engine_ref, vouch_engine};
use super::media::vouch_clip;
use super::status::vouch_status;
use vouch::service::face::DocumentMatch;
use vouch::{FaceResult, FaceTemplate, Match};

/// Bytes in a face template (`vouch_face_template_from_image` writes exactly this many).
pub const VOUCH_FACE_TEMPLATE_BYTES: usize = 513;

/// The comparison of two templates (faces or voices).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct vouch_match {
    /// Template distance, lower is more alike: euclidean for faces (0 identical), cosine distance
    /// for voices (0 same direction, 2 opposite).
    pub distance: f32,
    /// Calibrated probability of the same person, 0..1.
    pub probability: f32,
    /// 1 when the distance is under the default threshold (false-match rate 1e-3), else 0.
    pub is_match: u8,
}

impl From<Match> for vouch_match {
    fn from(m: Match) -> Self {
        vouch_match {
            distance: m.distance,
            probability: m.probability,
            is_match: u8::from(m.is_match),
        }
    }
}

impl From<&DocumentMatch> for vouch_match {
    fn from(m: &DocumentMatch) -> Self {
        vouch_match {
            distance: m.distance,
            probability: m.probability,
            is_match: u8::from(m.is_match),
        }
    }
}

/// Parses two template buffers (`what` and its byte size name the kind in errors) and writes
/// their comparison: the shared body of `vouch_face_compare` and `vouch_voice_compare`.
///
/// # Safety
/// `a` and `b` valid for their lengths; `out_match` NULL or writable.
pub(super) unsafe fn compare_templates<T>(
    a: (*const u8, usize),
    b: (*const u8, usize),
    out_match: *mut vouch_match,
    (what, size): (&str, usize),
    parse: fn(&[u8]) -> Option<T>,
    compare: fn(&T, &T) -> Match,
) -> vouch_status {
    boundary(|| {
        check_out(out_match, "out_match")?;
        let read = |(pointer, len), name: &str| -> Result<T, FfiError> {
            // SAFETY: per this function's contract.
            let bytes = unsafe { read_bytes(pointer, len, name) }?;
            parse(bytes).ok_or_else(|| {
                FfiError::new(
                    vouch_status::InvalidArgument,
                    format!("{name} is not a {what} template of this version ({size} bytes)"),
                )
            })
        };
        let (a, b) = (read(a, "a")?, read(b, "b")?);
        // SAFETY: checked non-NULL above.
        unsafe { *out_match = compare(&a, &b).into() };
        Ok(())
    })
}

fn info_json(face: &FaceResult) -> String {
    let reasons: Vec<&str> = face.quality.reasons.iter().map(|r| r.as_str()).collect();
    json!({
        "face_count": face.face_count,
        "box": face.detection.bbox,
        "detection_score": face.detection.score,
        "quality": face.quality,
        "reasons": reasons,
    })
    .to_string()
}

/// Writes a face's template and (when asked) its info JSON.
///
/// # Safety
/// `out_template` valid for `VOUCH_FACE_TEMPLATE_BYTES` bytes; `out_info_json` NULL or writable.
unsafe fn write_face(face: &FaceResult, out_template: *mut u8, out_info_json: *mut *mut c_char) {
    let bytes = face.template.to_bytes();
    // SAFETY: checked non-NULL by the caller; the buffer holds VOUCH_FACE_TEMPLATE_BYTES bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out_template, bytes.len()) };
    if !out_info_json.is_null() {
        // SAFETY: non-NULL and writable per the contract.
        unsafe { *out_info_json = into_c_string(info_json(face)) };
    }
}

/// The template of the largest face in an image file (JPEG or PNG; EXIF orientation applied).
/// Writes `VOUCH_FACE_TEMPLATE_BYTES` bytes to `out_template`; when `out_info_json` is not NULL it
/// receives a JSON string (face count, box, quality measures and reasons) to free with
/// `vouch_string_free`. `VOUCH_STATUS_NO_FACE` when there is no face, `VOUCH_STATUS_MODEL` when the
/// engine was opened without `models_dir`, `VOUCH_STATUS_MEDIA` for an undecodable image.
///
/// # Safety
/// `engine` live or NULL; `data` valid for `len` bytes; `out_template` NULL or valid for
/// `VOUCH_FACE_TEMPLATE_BYTES` bytes; `out_info_json` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_face_template_from_image(
    engine: *const vouch_engine,
    data: *const u8,
    len: usize,
    out_template: *mut u8,
    out_info_json: *mut *mut c_char,
) -> vouch_status {
    boundary(|| {
        check_out(out_template, "out_template")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let bytes = unsafe { read_bytes(data, len, "data") }?;
        let face = engine.faces().from_image(bytes)?;
        // SAFETY: outputs checked above.
        unsafe { write_face(&face, out_template, out_info_json) };
        Ok(())
    })
}

/// The template of the largest face in frame `index` of a clip (from `vouch_clip_decode` or, for
/// frames the app decoded itself, `vouch_clip_from_raw`). Outputs as for
/// `vouch_face_template_from_image`.
///
/// # Safety
/// `engine` and `clip` live or NULL; outputs as for `vouch_face_template_from_image`.
#[no_mangle]
pub unsafe extern "C" fn vouch_face_template_from_clip_frame(
    engine: *const vouch_engine,
    clip: *const vouch_clip,
    index: usize,
    out_template: *mut u8,
    out_info_json: *mut *mut c_char,
) -> vouch_status {
    boundary(|| {
        check_out(out_template, "out_template")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let clip = unsafe { clip.as_ref() }.ok_or_else(|| FfiError::null("clip"))?;
        let frame = clip.clip.frames.get(index).ok_or_else(|| {
            FfiError::new(
                vouch_status::InvalidArgument,
                format!(
                    "index {index} is past the clip's {} frames",
                    clip.clip.frames.len()
                ),
            )
        })?;
        let face = engine.faces().from_frame(frame)?;
        // SAFETY: outputs checked above.
        unsafe { write_face(&face, out_template, out_info_json) };
        Ok(())
    })
}

/// Compares two face templates (costs well under 0.1 ms). A buffer that is not a template of this
/// library's version is `VOUCH_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `a` and `b` valid for their lengths; `out_match` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_face_compare(
    a: *const u8,
    a_len: usize,
    b: *const u8,
    b_len: usize,
    out_match: *mut vouch_match,
) -> vouch_status {
    // SAFETY: per this function's contract.
    unsafe {
        compare_templates(
            (a, a_len),
            (b, b_len),
            out_match,
            ("face", VOUCH_FACE_TEMPLATE_BYTES),
            FaceTemplate::from_bytes,
            FaceTemplate::compare,
        )
    }
}

/// Matches the portrait on a document photo (image file) against a live image file.
/// `VOUCH_STATUS_NO_FACE` names which of the two has no face.
///
/// # Safety
/// `engine` live or NULL; buffers valid for their lengths; `out_match` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_face_match_document(
    engine: *const vouch_engine,
    document: *const u8,
    document_len: usize,
    live: *const u8,
    live_len: usize,
    out_match: *mut vouch_match,
) -> vouch_status {
    boundary(|| {
        check_out(out_match, "out_match")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let document = unsafe { read_bytes(document, document_len, "document") }?;
        let live = unsafe { read_bytes(live, live_len, "live") }?;
        let result = engine.faces().match_document_image(document, live)?;
        // SAFETY: checked non-NULL above.
        unsafe { *out_match = (&result).into() };
        Ok(())
    })
}

/// Matches the portrait on a document photo against every frame of a clip; the best frame wins.
///
/// # Safety
/// `engine` and `clip` live or NULL; `document` valid for its length; `out_match` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_face_match_document_clip(
    engine: *const vouch_engine,
    document: *const u8,
    document_len: usize,
    clip: *const vouch_clip,
    out_match: *mut vouch_match,
) -> vouch_status {
    boundary(|| {
        check_out(out_match, "out_match")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let document = unsafe { read_bytes(document, document_len, "document") }?;
        let clip = unsafe { clip.as_ref() }.ok_or_else(|| FfiError::null("clip"))?;
        let result = engine.faces().match_document(document, &clip.clip.frames)?;
        // SAFETY: checked non-NULL above.
        unsafe { *out_match = (&result).into() };
        Ok(())
    })
}
