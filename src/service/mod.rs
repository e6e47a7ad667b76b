//! Operations of the verification service as Rust calls on [`crate::Engine`]: API keys ([`keys`]),
//! sessions ([`session`]), consent ([`consent`]) and scoring rule sets ([`rules`]). The request
//! surface in `api` calls these; Rust hosts can call them directly.

pub mod consent;
pub mod face;
pub mod keys;
pub mod media;
pub mod rules;
pub mod session;
