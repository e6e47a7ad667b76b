//! The engine and its three systems, each a room of its own, over one private store:
//!
//! - [`verify`]: the verification service (sessions, consent, media, faces, voices, documents,
//!   process-video, scoring rule sets, attempt limits, the audit trail);
//! - [`jobs`]: the job scheduler (jobs, their lifecycle, schedules, alerts, the pump and its
//!   transport), which also carries the engine's own deliveries;
//! - [`events`]: what the verification service tells the outside (the event envelope, webhook
//!   endpoints, signing secrets), queued as jobs of the engine's own kinds;
//! - [`avf`]: the asynchronous video-forgery analysis.
//!
//! Beside them: the engine itself (`engine.rs`, its models in [`runtime`]), API keys ([`keys`]) and
//! the store (`store/`, rows and SQL only). No file of `jobs` imports anything biometric. The
//! request surface in `api` calls these through the engine's handles; Rust hosts can call them
//! directly. The modules keep their paths from before the rooms (`service::face`,
//! `service::pump`, ...), re-exported here.

pub mod avf;
mod engine;
pub mod events;
pub mod jobs;
pub mod keys;
pub mod runtime;
mod store;
pub mod verify;

pub use events::signing;
pub use jobs::{alerts, project, pump, schedules};
use jobs::{calls, lifecycle, transport};
pub use verify::{
    attempts, consent, document, face, media, process, rules, session, transactions, video, voice,
};

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
