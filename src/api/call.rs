//! [`Call`], one request on its way through an endpoint, and [`Reply`], what an endpoint answers:
//! the two types every endpoint module takes and gives, apart from the dispatch in `handle.rs`.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::RequestContext;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::Request;
use crate::auth::ApiKey;
use crate::service::Engine;

/// A successful (or deliberately non-2xx, like 501) reply of an endpoint.
#[derive(Debug)]
pub(super) struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn ok(body: Value) -> Reply {
        Reply {
            status: 200,
            body,
            headers: Vec::new(),
        }
    }
}

/// An endpoint's handler: each endpoint module lists its own as `HANDLERS`, beside the
/// endpoints they answer (the dispatch in `handle.rs` reads the lists).
pub(super) type Handler = fn(&mut Call<'_>) -> Result<Reply, ApiError>;

/// One request on its way through an endpoint.
pub(super) struct Call<'a> {
    pub engine: &'a Engine,
    /// The request's `X-Request-Id` (also an AVF analysis's `request_id`).
    pub request_id: &'a str,
    pub request: &'a Request,
    pub endpoint: Endpoint,
    pub path_id: Option<String>,
    /// The raw query string, decoded into `query` by `dispatch` (so a bad query is still recorded).
    pub query_text: String,
    pub query: Vec<(String, String)>,
    pub key: ApiKey,
    pub context: RequestContext,
    /// Who and which session the transaction row names; endpoints fill in what headers do not say.
    pub audit_fullname: Option<String>,
    pub audit_session: Option<String>,
}

impl Call<'_> {
    /// Applies the session lock for `fullname` when the request names a session.
    pub fn lock_session(&mut self, fullname: &str) -> Result<(), ApiError> {
        if let Some(session_id) = self.context.session_id.clone() {
            self.engine
                .sessions()
                .bind(&self.key, &session_id, fullname)
                .map_err(|error| self.error(error))?;
        }
        Ok(())
    }

    /// What every media endpoint checks first: the fullname header, no query, the session lock.
    /// Returns the fullname.
    pub fn media_preamble(&mut self) -> Result<String, ApiError> {
        let fullname = self
            .context
            .fullname
            .clone()
            .ok_or_else(|| ApiError::bad_request("X-User-Fullname header is required"))?;
        self.query_value(&[], "")?;
        self.lock_session(&fullname)?;
        Ok(fullname)
    }

    /// Maps a library error for this endpoint.
    pub fn error(&self, error: crate::Error) -> ApiError {
        ApiError::from_error(error, self.endpoint)
    }

    /// Parses the JSON body into `T`, rejecting unknown fields as `T` declares.
    pub fn json_body<T: DeserializeOwned>(&self, expected: &str) -> Result<Option<T>, ApiError> {
        let Some(body) = self
            .request
            .body
            .as_deref()
            .filter(|body| !body.iter().all(u8::is_ascii_whitespace))
        else {
            return Ok(None);
        };
        let limit = self.endpoint.json_body_limit();
        if body.len() > limit {
            return Err(ApiError::new(
                413,
                format!("request body is larger than {limit} bytes"),
            ));
        }
        serde_json::from_slice(body).map(Some).map_err(|error| {
            ApiError::bad_request(format!("invalid request body ({expected}): {error}"))
        })
    }

    /// The value of a query parameter; parameters not in `allowed` are a 400.
    pub fn query_value(&self, allowed: &[&str], name: &str) -> Result<Option<&str>, ApiError> {
        if let Some((unknown, _)) = self
            .query
            .iter()
            .find(|(key, _)| !allowed.contains(&key.as_str()))
        {
            return Err(ApiError::bad_request(format!(
                "unknown query parameter \"{unknown}\""
            )));
        }
        Ok(self
            .query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str()))
    }
}
