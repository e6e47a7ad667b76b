//! The verification service: sessions ([`session`]), consent ([`consent`]), media ([`media`]),
//! faces ([`face`]), voices ([`voice`]), documents ([`document`]), the clip analysis
//! ([`video`]) and process-video's decision ([`process`]), scoring rule sets ([`rules`]), attempt
//! limits ([`attempts`]), stored templates (`templates`) and the audit trail ([`transactions`]).
//! The biometric work itself is `vouch-bio`'s; these files lend it the engine's models and pool,
//! gate it by consent and keep what the spec says to keep.

pub mod attempts;
pub mod consent;
pub mod document;
pub mod face;
pub mod media;
pub mod process;
pub mod rules;
pub mod session;
pub(in crate::service) mod templates;
pub mod transactions;
pub mod video;
pub mod voice;
