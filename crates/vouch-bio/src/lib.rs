//! Vouch's biometric pipelines, built on [`infer`] (ONNX models run by tract): faces, voices, the
//! speech recogniser, documents, the audio-visual checks of process-video, calibration and the
//! evaluation metrics. Depends on `vouch-media` and on no other part of Vouch: the engine, store
//! and API live in the `vouch` crate above it, which re-exports this crate as `vouch::bio` and its
//! [`infer`] module as `vouch::infer`.

pub mod infer;

pub mod calibration;
pub mod document;
pub(crate) mod embedding;
pub mod eval;
pub mod face;
pub mod speech;
pub mod video;
pub mod voice;
