//! Operations of the verification service as Rust calls on [`crate::Engine`]: API keys ([`keys`]),
//! sessions ([`session`]), consent ([`consent`]), scoring rule sets ([`rules`]), media ([`media`]),
//! faces ([`face`]), voices ([`voice`]), documents ([`document`]), process-video ([`process`]),
//! attempt limits ([`attempts`]) and the audit trail ([`transactions`]). The request
//! surface in `api` calls these; Rust hosts can call them directly.

pub mod alerts;
pub mod attempts;
pub mod avf;
mod calls;
pub mod consent;
pub mod document;
mod engine;
pub mod events;
pub mod face;
pub mod jobs;
pub mod keys;
mod lifecycle;
pub mod media;
pub mod process;
pub mod project;
pub mod pump;
pub mod rules;
pub mod runtime;
pub mod schedules;
pub mod session;
pub mod signing;
mod store;
mod templates;
pub mod transactions;
mod transport;
pub mod video;
pub mod voice;

pub(crate) use engine::new_id;
pub use engine::Engine;
#[cfg(feature = "inspect")]
pub use store::Store;
pub use store::{
    ApiKeyOrigin, ApiKeyRecord, AttemptEvent, AttemptHold, AttemptState, ConsentKind,
    ConsentRecord, ConsentState, FaceSource, Modality, SessionBinding, SessionRecord,
    SimSwapResult, StoredTemplate, TemplateKey, TemplateModel, TransactionFilter, TransactionPage,
    TransactionRecord, SCHEMA_VERSION, TEMPLATE_FORMAT_VERSION,
};
