//! Biometric pipelines built on [`crate::infer`]: faces now; voice and documents later.

pub mod eval;
pub mod face;
