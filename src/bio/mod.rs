//! Biometric pipelines built on [`crate::infer`]: faces, voice (in progress); documents later.

pub mod calibration;
pub mod document;
pub(crate) mod embedding;
pub mod eval;
pub mod face;
pub mod speech;
pub mod video;
pub mod voice;
