//! Vouch: offline, on-device biometric verification with the same operations, JSON shapes, error
//! texts and consent rules as the cloud verification service it mirrors.
//!
//! The [`Engine`] is the one value a host opens: it holds the SQLite store, the API-key verifier
//! ([`KeyVerifier`]), the [`Clock`] and the worker pool. Requests of the spec go through [`api::handle`]
//! ([`api::Request`] in, [`api::Response`] out); Rust hosts can also call the operations in
//! [`service`] directly. C, Swift, Kotlin and Python hosts use the C ABI (`include/vouch.h`), a
//! crate of its own over this crate's public API (`ffi/`, crate `vouch-ffi`, built as `libvouch.a`
//! and `libvouch.so`). The store is private to [`service`]: the request layer and the C ABI reach
//! it only through the operations, and a skip does not compile. The lower modules (key
//! verification, clock, options, the recognition services, scoring) are private; what a host
//! needs of them is re-exported here, flat ([`RuleSet`], [`ApiKey`], [`EngineOptions`], ...).
//!
//! ```
//! use vouch::api::Request;
//! use vouch::service::keys::NewApiKey;
//! use vouch::Engine;
//!
//! let engine = Engine::open_json(r#"{
//!     "database": ":memory:",
//!     "template_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
//!     "api_keys": { "hs256_secret": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA==" }
//! }"#)?;
//! let key = engine.api_keys().create(&NewApiKey {
//!     project_id: "demo".into(),
//!     selected_services: vec!["Face Recognition".into()],
//!     scores_id: None,
//!     label: None,
//! })?;
//! let response = vouch::api::handle(
//!     &engine,
//!     Request::new("POST", "/api-gateway/sessions/start").bearer(&key.token),
//! );
//! assert_eq!(response.status, 200);
//! assert_eq!(response.body["message"], "session started");
//! # Ok::<(), vouch::Error>(())
//! ```
//!
//! Thread safety: [`Engine`] is `Send + Sync`; share one per process (an `Arc`, or the C handle)
//! across threads. The library does no networking and logs nothing biometric.

#![warn(missing_docs)]

mod address;
pub mod api;
mod auth;
mod clock;
mod error;
mod options;
mod recognition;
mod scoring;
pub mod service;

pub use address::{blocked_reason, AddressPolicy, Cidr};
pub use auth::{ApiKey, AuthError, KeyClaims, KeyVerifier};
pub use clock::{format_timestamp, parse_timestamp, Clock, ManualClock, SystemClock};
pub use error::{Error, Result};
pub use options::{
    ApiKeyOptions, EngineOptions, PublicKeyOption, SimSwapProvider, DEFAULT_SESSION_FACES_TTL_S,
};
pub use recognition::Service;
pub use scoring::{Decision, Lockout, Outcome, Policy, RuleSet, RuleSetError, RuleSource};
pub use service::Engine;

// The biometric and media types that the engine's public operations take and return, and the
// types of their public fields, so that a host needs no other crate to call them and read what
// they answer. The rest of `vouch-bio` (the pipelines, their models and constants, the evaluation
// metrics) and of `vouch-media` is theirs: depend on them directly for more, as `vouch-cli`'s
// evaluations do.
pub use vouch_bio::infer::ModelError;
pub use vouch_bio::{
    ChipDetails, EmbeddedFace, FaceCrop, FaceDetection, FaceLandmarks, FaceQuality,
    FaceQualityReason, FaceResult, FaceTemplate, FaceTrack, ForgeryFinding, ForgerySignal,
    ForgeryVerdict, Language, LivenessCheck, LivenessCode, Match, MrzCheck, MrzFields, MrzFormat,
    PassiveScore, Phrase, PhraseCheck, PhraseCode, Prediction, Signals, SpeakerCheck, SpeakerCode,
    SpeechQuality, SpeechReason, SpeechSegment, SpoofVerdict, SyncStrength, SyntheticSpeech,
    TrackedFace, VideoAnalysis, Visemes, VoiceAnalysis, VoiceResult, VoiceTemplate, FACE_MODEL_ID,
    FACE_MODEL_VERSION, VOICE_MODEL_ID, VOICE_MODEL_VERSION, VOICE_TEMPLATE_BYTES,
};
pub use vouch_media::raw::{PixelFormat, RawAudio, RawFrame, RawPlane, SampleFormat};
pub use vouch_media::{
    AudioCodec, Clip, Container, DecodeLimits, DecodeOptions, Frame, FrameSampler, MediaError,
    MediaInfo, Pcm, Rotation, VideoCodec, PCM_SAMPLE_RATE,
};

/// The library version, from Cargo.toml.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod tests {
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn engine_is_send_and_sync() {
        assert_send_sync::<super::Engine>();
    }
}
