//! One project's resources, as its API key reaches them: [`Engine::project`] gives a [`Project`],
//! and the project a handle per resource, each defined in the file of its resource with every
//! operation of that resource on it (after octocrab's `octocrab.issues(owner, repo)`):
//!
//! | handle | file | operations |
//! |---|---|---|
//! | [`Jobs`](crate::service::jobs::Jobs) | `jobs.rs` | create, get, list, cancel, replay, executions, stats, usage |
//! | [`Schedules`](crate::service::schedules::Schedules) | `schedules.rs` | create, list, delete |
//! | [`Alerts`](crate::service::alerts::Alerts) | `alerts.rs` | create, list, enable or disable, delete |
//! | [`Webhooks`](crate::service::events::Webhooks) | `events.rs` | create, list, get, rotate the secret, delete |
//! | [`SigningSecrets`](crate::service::signing::SigningSecrets) | `signing.rs` | rotate, list |
//!
//! ```
//! # use vouch::{Engine, service::keys::NewApiKey};
//! # let engine = Engine::open_json(r#"{"database": ":memory:",
//! #     "template_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
//! #     "api_keys": {"hs256_secret": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="}}"#)?;
//! # let created = engine.api_keys().create(&NewApiKey { project_id: "demo".into(),
//! #     selected_services: vec![], scores_id: None, label: None })?;
//! let key = engine.api_keys().authenticate(Some(&format!("Bearer {}", created.token)))?;
//! let page = engine.project(&key).jobs().list(None, None, 20)?;
//! assert!(page.jobs.is_empty());
//! # Ok::<(), vouch::Error>(())
//! ```

use crate::auth::ApiKey;
use crate::service::Engine;

/// The resources of the project an API key belongs to ([`Engine::project`]). Cheap to make and
/// to copy: it borrows the engine and the key.
#[derive(Debug, Clone, Copy)]
pub struct Project<'e> {
    pub(in crate::service) engine: &'e Engine,
    pub(in crate::service) key: &'e ApiKey,
}

impl Engine {
    /// The resources of the key's project: jobs, schedules, alert channels, webhook endpoints and
    /// signing secrets, each a handle with its operations.
    pub fn project<'e>(&'e self, key: &'e ApiKey) -> Project<'e> {
        Project { engine: self, key }
    }
}
