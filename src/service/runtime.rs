//! [`Runtime`]: the engine's own machinery as a host sees it (its models, its worker pool, its
//! clock, its address policy and its database's schema), apart from the operations of the specs.

use super::engine::Engine;
use crate::address::AddressPolicy;
use crate::error::Result;

/// The engine's models, pool, clock and schema ([`Engine::runtime`]).
#[derive(Debug, Clone, Copy)]
pub struct Runtime<'e>(pub(super) &'e Engine);

impl Engine {
    /// The engine's models, pool, clock and schema.
    pub fn runtime(&self) -> Runtime<'_> {
        Runtime(self)
    }
}

impl Runtime<'_> {
    /// Loads now, in parallel on the engine's pool, every model that process-video needs (and
    /// the synthetic-speech detector with `voice_spoof_check`), instead of in the first calls that
    /// need them: what `preload_models` does at open. A server that would rather pay this at
    /// start-up than in its first request calls it, and so does a host that wants every file's
    /// sha256 checked before it takes a request. Without `models_dir` it does nothing.
    pub fn load_models(&self) -> Result<()> {
        self.0.load_models()
    }

    /// Loads the multilingual recogniser (Whisper base) now instead of on the first phrase that
    /// needs it: about a second of CPU and 239 MiB more held (318 MiB at once while it loads),
    /// which an app that expects phrases in other languages than English may rather pay at
    /// start-up than in a user's first call.
    pub fn load_multilingual(&self) -> Result<()> {
        self.0.load_multilingual()
    }

    /// Which addresses the engine's outbound calls may reach (`allow_private` of the options):
    /// a host's transport applies it to every address it resolves.
    pub fn address_policy(&self) -> &AddressPolicy {
        self.0.address_policy()
    }

    /// The schema version of the open database (`vouch::service::SCHEMA_VERSION` after open).
    pub fn schema_version(&self) -> Result<u32> {
        self.0.schema_version()
    }

    /// The current time of the engine's clock, Unix ms.
    pub fn now_ms(&self) -> i64 {
        self.0.now_ms()
    }

    /// Worker threads in the engine's pool.
    pub fn thread_count(&self) -> usize {
        self.0.thread_count()
    }

    /// Runs `work` on the engine's pool (rayon parallel iterators inside it use that pool).
    pub fn install<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        self.0.install(work)
    }
}
