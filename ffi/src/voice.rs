//! Voice primitives for apps that drive the pipeline themselves: a speaker template from an audio
//! file or from PCM the app recorded, and comparing two templates. Enrollment and verification
//! with stored templates go through `vouch_request` (`POST /api-gateway/enroll/voice`).

use std::ffi::c_char;

use serde_json::json;

use super::boundary::{boundary, check_out, into_c_string, read_bytes, FfiError};
use super::engine::{engine_ref, vouch_engine};
use super::face::{compare_templates, vouch_match};
use super::media::{raw_audio, vouch_audio};
use super::status::vouch_status;
use vouch::{SpeechQuality, VoiceTemplate, VOICE_TEMPLATE_BYTES as TEMPLATE_BYTES};

/// Bytes in a voice template (`vouch_voice_template_from_audio` writes exactly this many).
pub const VOUCH_VOICE_TEMPLATE_BYTES: usize = 769;
const _: () = assert!(VOUCH_VOICE_TEMPLATE_BYTES == TEMPLATE_BYTES);

/// Writes a voice template and (when asked) its speech measures as JSON.
///
/// # Safety
/// `out_template` valid for `VOUCH_VOICE_TEMPLATE_BYTES` bytes; `out_info_json` NULL or writable.
unsafe fn write_voice(
    template: &VoiceTemplate,
    quality: &SpeechQuality,
    out_template: *mut u8,
    out_info_json: *mut *mut c_char,
) {
    let bytes = template.to_bytes();
    // SAFETY: checked non-NULL by the caller; the buffer holds VOUCH_VOICE_TEMPLATE_BYTES bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out_template, bytes.len()) };
    if !out_info_json.is_null() {
        // SAFETY: non-NULL and writable per the contract.
        unsafe { *out_info_json = into_c_string(json!(quality).to_string()) };
    }
}

/// The speaker template of an audio file (WAV, FLAC, Ogg Opus/Vorbis, M4A, WebM; any sample rate
/// and channel count). Writes `VOUCH_VOICE_TEMPLATE_BYTES` bytes to `out_template`; when
/// `out_info_json` is not NULL it receives the speech measures as JSON (`duration_seconds`,
/// `speech_seconds`, `rms_dbfs`, `clipped_share`, `reasons`: `too_little_speech`, `clipping`) to
/// free with `vouch_string_free`. `VOUCH_STATUS_NO_SPEECH` for silence or no speech,
/// `VOUCH_STATUS_MEDIA` for an undecodable file, `VOUCH_STATUS_MODEL` when the engine was opened
/// without `models_dir`.
///
/// # Safety
/// `engine` live or NULL; `data` valid for `len` bytes; `out_template` NULL or valid for
/// `VOUCH_VOICE_TEMPLATE_BYTES` bytes; `out_info_json` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_voice_template_from_audio(
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
        let (template, quality) = engine.voices().from_audio(bytes)?;
        // SAFETY: outputs checked above.
        unsafe { write_voice(&template, &quality, out_template, out_info_json) };
        Ok(())
    })
}

/// The speaker template of audio the app recorded or decoded: interleaved s16 or f32 samples at
/// 4 to 384 kHz, any channel count (mixed to mono, resampled to 16 kHz). Outputs as for
/// `vouch_voice_template_from_audio`; inconsistent audio is `VOUCH_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `engine` live or NULL; `audio` NULL or valid with its data; outputs as for
/// `vouch_voice_template_from_audio`.
#[no_mangle]
pub unsafe extern "C" fn vouch_voice_template_from_pcm(
    engine: *const vouch_engine,
    audio: *const vouch_audio,
    out_template: *mut u8,
    out_info_json: *mut *mut c_char,
) -> vouch_status {
    boundary(|| {
        check_out(out_template, "out_template")?;
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let audio = unsafe { audio.as_ref() }.ok_or_else(|| FfiError::null("audio"))?;
        let raw = unsafe { raw_audio(audio) }?;
        let (template, quality) = engine.voices().from_raw(&raw)?;
        // SAFETY: outputs checked above.
        unsafe { write_voice(&template, &quality, out_template, out_info_json) };
        Ok(())
    })
}

/// Compares two voice templates (well under 0.1 ms): cosine distance, calibrated probability of
/// the same speaker, and the default decision (false-match rate 1e-3 on the development trials).
/// A buffer that is not a voice template of this library's version is
/// `VOUCH_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `a` and `b` valid for their lengths; `out_match` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_voice_compare(
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
            ("voice", VOUCH_VOICE_TEMPLATE_BYTES),
            VoiceTemplate::from_bytes,
            VoiceTemplate::compare,
        )
    }
}
