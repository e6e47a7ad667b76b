//! API-key administration and request authentication on the engine: [`NewApiKey`], [`CreatedApiKey`].

use serde::{Deserialize, Serialize};

use crate::auth::{bearer_token, ApiKey, AuthError, KeyClaims};
use crate::clock::format_timestamp;
use crate::error::{Error, Result};
use crate::recognition::Service;
use crate::service::store::{ApiKeyOrigin, ApiKeyRecord};
use crate::service::{new_id, Engine};

/// What to create a key for. JSON: `{"project_id": "...", "selected_services": ["Face Recognition"],
/// "scores_id": null, "label": "kiosk 3"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewApiKey {
    /// Project the key belongs to.
    pub project_id: String,
    /// Services the key enables, by spec name.
    pub selected_services: Vec<String>,
    /// Custom scoring rules the key uses.
    #[serde(default)]
    pub scores_id: Option<String>,
    /// A label for people administering keys.
    #[serde(default)]
    pub label: Option<String>,
}

/// A created key. The token is shown once; only its id and claims are stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreatedApiKey {
    /// The key's id.
    pub id: String,
    /// The project.
    pub project_id: String,
    /// The signed JWT to send as `Authorization: Bearer <token>`.
    pub token: String,
    /// Enabled services.
    pub selected_services: Vec<String>,
    /// Custom scoring rules.
    pub scores_id: Option<String>,
    /// Label.
    pub label: Option<String>,
    /// Creation time, RFC 3339.
    pub created_at: String,
}

/// A key as listed (no token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiKeyInfo {
    /// The key's id.
    pub id: String,
    /// The project.
    pub project_id: String,
    /// Enabled services.
    pub selected_services: Vec<String>,
    /// Custom scoring rules.
    pub scores_id: Option<String>,
    /// Label.
    pub label: Option<String>,
    /// `created` here or `seen` (minted by the backend and first presented here).
    pub origin: &'static str,
    /// `active` or `revoked`.
    pub status: &'static str,
    /// Creation (or first-seen) time, RFC 3339.
    pub created_at: String,
    /// Revocation time, RFC 3339.
    pub revoked_at: Option<String>,
}

impl From<ApiKeyRecord> for ApiKeyInfo {
    fn from(record: ApiKeyRecord) -> ApiKeyInfo {
        ApiKeyInfo {
            id: record.id,
            project_id: record.project_id,
            selected_services: record.selected_services,
            scores_id: record.scores_id,
            label: record.label,
            origin: match record.origin {
                ApiKeyOrigin::Created => "created",
                ApiKeyOrigin::Seen => "seen",
            },
            status: if record.revoked_at.is_some() {
                "revoked"
            } else {
                "active"
            },
            created_at: format_timestamp(record.created_at),
            revoked_at: record.revoked_at.map(format_timestamp),
        }
    }
}

/// API keys: create, list, revoke ([`Engine::api_keys`]).
#[derive(Debug, Clone, Copy)]
pub struct ApiKeys<'e>(pub(super) &'e Engine);

impl Engine {
    /// API keys: create, list, revoke.
    pub fn api_keys(&self) -> ApiKeys<'_> {
        ApiKeys(self)
    }
}

impl ApiKeys<'_> {
    /// Authenticates a request from its `Authorization` header value: verifies the JWT, then checks
    /// in the store that the key is not revoked. A valid key minted elsewhere is recorded when
    /// first seen, so that it can be listed and revoked like a key created here.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<ApiKey> {
        let engine = self.0;
        let now = engine.now_ms();
        let claims = engine.keys.verify(bearer_token(authorization)?, now)?;
        let services: Vec<Service> = claims.services().map_err(AuthError::Invalid)?;
        match engine.store.api_key(&claims.id)? {
            Some(record) if record.project_id != claims.project_id => {
                return Err(
                    AuthError::Invalid("key id belongs to another project".to_owned()).into(),
                )
            }
            Some(record) if record.revoked_at.is_some() => return Err(AuthError::NotActive.into()),
            Some(_) => {}
            None => {
                let record = ApiKeyRecord {
                    id: claims.id.clone(),
                    project_id: claims.project_id.clone(),
                    selected_services: services.iter().map(|s| s.name().to_owned()).collect(),
                    scores_id: claims.scores_id.clone(),
                    label: None,
                    origin: ApiKeyOrigin::Seen,
                    created_at: now,
                    revoked_at: None,
                };
                match engine.store.insert_api_key(&record) {
                    // Another thread recorded it first; that is the same outcome.
                    Ok(()) | Err(Error::Conflict(_)) => {}
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(ApiKey {
            key_id: claims.id,
            project_id: claims.project_id,
            services,
            scores_id: claims.scores_id,
        })
    }
}

impl ApiKeys<'_> {
    /// Creates and signs an HS256 key for a project (needs `api_keys.hs256_secret`).
    pub fn create(&self, new_key: &NewApiKey) -> Result<CreatedApiKey> {
        let engine = self.0;
        let now = engine.now_ms();
        let claims = KeyClaims {
            project_id: new_key.project_id.clone(),
            selected_services: new_key.selected_services.clone(),
            scores_id: new_key.scores_id.clone(),
            id: new_id("key_"),
            iat: Some(now.div_euclid(1000)),
            exp: None,
            nbf: None,
        };
        claims.validate().map_err(Error::InvalidArgument)?;
        if let Some(label) = &new_key.label {
            if label.len() > 256 || label.chars().any(char::is_control) {
                return Err(Error::InvalidArgument(
                    "label must be at most 256 printable characters".to_owned(),
                ));
            }
        }
        let token = engine.keys.mint(&claims)?;
        let services: Vec<String> = claims
            .services()
            .map_err(Error::InvalidArgument)?
            .iter()
            .map(|s| s.name().to_owned())
            .collect();
        engine.store.insert_api_key(&ApiKeyRecord {
            id: claims.id.clone(),
            project_id: claims.project_id.clone(),
            selected_services: services.clone(),
            scores_id: claims.scores_id.clone(),
            label: new_key.label.clone(),
            origin: ApiKeyOrigin::Created,
            created_at: now,
            revoked_at: None,
        })?;
        Ok(CreatedApiKey {
            id: claims.id,
            project_id: claims.project_id,
            token,
            selected_services: services,
            scores_id: claims.scores_id,
            label: new_key.label.clone(),
            created_at: format_timestamp(now),
        })
    }

    /// The project's keys, oldest first.
    pub fn list(&self, project_id: &str) -> Result<Vec<ApiKeyInfo>> {
        let engine = self.0;
        Ok(engine
            .store
            .api_keys(project_id)?
            .into_iter()
            .map(ApiKeyInfo::from)
            .collect())
    }

    /// Revokes a key of the project; requests with it then get `api key is not active`.
    pub fn revoke(&self, project_id: &str, key_id: &str) -> Result<ApiKeyInfo> {
        let engine = self.0;
        Ok(engine
            .store
            .revoke_api_key(project_id, key_id, engine.now_ms())?
            .into())
    }
}
