//! The C ABI of Vouch, a crate of its own over the public Rust API of `vouch` (it can reach nothing
//! else: the store, the engine's fields and the crate-private helpers do not compile from here).
//! Built as `libvouch.a` and `libvouch.so`. Every exported symbol is listed here; `include/vouch.h`
//! is generated from this crate by cbindgen (`scripts/header`) and diffed in CI.
//!
//! | symbol | purpose |
//! |---|---|
//! | `vouch_engine_new`, `vouch_engine_free` | open and close an engine from JSON options |
//! | `vouch_request` | run any operation of the verification spec; returns a `vouch_response` |
//! | `vouch_response_status`, `vouch_response_header`, `vouch_response_headers_json`, `vouch_response_body_json`, `vouch_response_free` | read and free a response |
//! | `vouch_api_key_create`, `vouch_api_key_list`, `vouch_api_key_revoke` | API-key administration |
//! | `vouch_clip_decode`, `vouch_audio_decode`, `vouch_clip_from_raw` | decode a video or audio file, or take frames and audio the app decoded, into a `vouch_clip` |
//! | `vouch_clip_frame_count`, `vouch_clip_frame`, `vouch_clip_audio`, `vouch_clip_info_json`, `vouch_clip_free` | read and free a clip |
//! | `vouch_face_template_from_image`, `vouch_face_template_from_clip_frame`, `vouch_face_compare`, `vouch_face_match_document`, `vouch_face_match_document_clip` | face templates, comparison and document-portrait matching |
//! | `vouch_voice_template_from_audio`, `vouch_voice_template_from_pcm`, `vouch_voice_compare` | voice templates and comparison |
//! | `vouch_document_read` | a document's machine-readable zone: fields, validation, portrait box |
//! | `vouch_scoring_rules_set` | store a project's or a custom scoring rule set |
//! | `vouch_attempts_get`, `vouch_attempts_reset` | where a user stands against the attempt limit; the backend's reset |
//! | `vouch_jobs_pump`, `vouch_jobs_deliver`, `vouch_avf_run` | send due job attempts through the host's `vouch_transport_fn` and record them, with or without the forgery analyses; or run the analyses alone |
//! | `vouch_last_error_message`, `vouch_status_text` | why the last call on this thread failed |
//! | `vouch_version`, `vouch_string_free` | version; free strings the library returned |
//!
//! Conventions (after rustls-ffi): every fallible call returns a [`status::vouch_status`] and writes
//! its outputs only on success; every pointer is checked for NULL; strings are UTF-8 and checked;
//! panics never cross the boundary (they become `VOUCH_STATUS_PANIC`, with the panic's message as
//! the last error) and are not printed to the host's stderr (a chained panic hook, installed by the
//! first call, stays quiet while a call is running and passes other panics to the hook that was
//! there before); the last error message is per thread.

#![deny(missing_docs)]

mod attempts;
mod boundary;
mod document;
mod engine;
mod face;
#[cfg(feature = "jni")]
mod java;
mod jobs;
mod keys;
mod media;
mod request;
mod status;
mod version;
mod voice;

pub use attempts::{vouch_attempts_get, vouch_attempts_reset};
pub use document::vouch_document_read;
pub use engine::{vouch_engine, vouch_engine_free, vouch_engine_new};
pub use face::{
    vouch_face_compare, vouch_face_match_document, vouch_face_match_document_clip,
    vouch_face_template_from_clip_frame, vouch_face_template_from_image, vouch_match,
    VOUCH_FACE_TEMPLATE_BYTES,
};
pub use jobs::{
    vouch_avf_run, vouch_header, vouch_http_request, vouch_http_response, vouch_jobs_deliver,
    vouch_jobs_pump, vouch_transport_fn,
};
pub use keys::{
    vouch_api_key_create, vouch_api_key_list, vouch_api_key_revoke, vouch_scoring_rules_set,
};
pub use media::{
    vouch_audio, vouch_audio_decode, vouch_clip, vouch_clip_audio, vouch_clip_decode,
    vouch_clip_frame, vouch_clip_frame_count, vouch_clip_free, vouch_clip_from_raw,
    vouch_clip_info_json, vouch_frame, vouch_pcm, vouch_pixel_format, vouch_plane, vouch_rgb_frame,
    vouch_sample_format,
};
pub use request::{
    vouch_part, vouch_request, vouch_response, vouch_response_body_json, vouch_response_free,
    vouch_response_header, vouch_response_headers_json, vouch_response_status,
};
pub use status::{vouch_last_error_message, vouch_status, vouch_status_text, vouch_string_free};
pub use version::{vouch_version, VOUCH_VERSION_MAJOR, VOUCH_VERSION_MINOR, VOUCH_VERSION_PATCH};
pub use voice::{
    vouch_voice_compare, vouch_voice_template_from_audio, vouch_voice_template_from_pcm,
    VOUCH_VOICE_TEMPLATE_BYTES,
};
