//! Biometric pipelines built on [`crate::infer`]: faces, voice (in progress); documents later.

pub mod eval;
pub mod face;
pub mod voice;
