//! The cloud-compatible request surface: [`Request`] in, [`Response`] out, through
//! [`handle`] (with the engine), one entry point for every endpoint of the verification spec.
//!
//! This module owns routing (`route.rs`), the header rules (`context.rs`), the spec's statuses and
//! error texts (`error.rs`) and the JSON shapes of responses. Media parts arrive already split out of
//! multipart/form-data (the gateway or the app does that) and are validated here against the spec's
//! limits before any decoding.

mod attempts;
mod body;
mod call;
mod consent;
mod context;
mod endpoint;
mod error;
mod handle;
mod jobs;
mod media_endpoints;
mod projects;
mod route;
mod sessions;
mod transactions;

pub use body::document_json;
pub use endpoint::{
    Answer, Body, Declaration, Endpoint, Family, Format, Fullname, Need, PartSpec, Query,
    QueryKind, ENDPOINTS,
};
pub use error::ApiError;
pub use handle::handle;

use serde_json::Value;

/// Largest `video` (process-video) and image or audio upload: 50 MiB, the spec's "50MB".
pub const MAX_MEDIA_BYTES: usize = 50 * 1024 * 1024;
/// Largest avf/infer `file`: 100 MiB, the spec's "100MB".
pub const MAX_AVF_BYTES: usize = 100 * 1024 * 1024;
/// Largest JSON body accepted, but by [`json_body_limit`]'s endpoints.
pub const MAX_JSON_BODY_BYTES: usize = 64 * 1024;
/// Largest JSON body of a job or schedule create: its `body` may be 256 KiB
/// (`service::jobs::MAX_BODY_LEN`), and JSON escaping can make that up to six times longer
/// (`\u0001`), with room for the other fields.
pub const MAX_JOB_JSON_BODY_BYTES: usize = 2 * 1024 * 1024;

/// The largest JSON body `method` `path` accepts, from the endpoint table:
/// [`MAX_JOB_JSON_BODY_BYTES`] for `POST /jobs` and `POST /schedules`, [`MAX_JSON_BODY_BYTES`] for
/// everything else (paths that match no endpoint included). A server reads a body to one byte past
/// it and lets the engine refuse.
pub fn json_body_limit(method: &str, path: &str) -> usize {
    let path = path.split_once('?').map_or(path, |(path, _)| path);
    route::route(method, path).map_or(MAX_JSON_BODY_BYTES, |(endpoint, _)| {
        endpoint.json_body_limit()
    })
}

/// The largest file part of an upload to `path`, and the status and message that refuse
/// a larger one, from the endpoint table: those of the upload endpoint whose path `path` starts
/// with, whatever the method (100 MiB and 413 under avf/infer, 50 MiB and 400 elsewhere, paths
/// that match no endpoint included). A server stops reading there and answers itself.
pub fn upload_limit(path: &str) -> (usize, u16, &'static str) {
    let path = path.split_once('?').map_or(path, |(path, _)| path);
    ENDPOINTS
        .iter()
        .find_map(|declaration| match declaration.body {
            Body::Multipart {
                max_file_bytes,
                too_large: (status, message),
                ..
            } if path.starts_with(declaration.path) => Some((max_file_bytes, status, message)),
            _ => None,
        })
        .unwrap_or((MAX_MEDIA_BYTES, 400, "file size exceeds 50MB"))
}

/// One request, as the cloud service would receive it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// HTTP method, e.g. `POST` (compared case-insensitively).
    pub method: String,
    /// Path with an optional query, e.g. `/api-transactions/transactions?limit=10`.
    pub path: String,
    /// Header names and values; names are compared case-insensitively, the first of a name counts.
    pub headers: Vec<(String, String)>,
    /// Parts of a multipart/form-data body.
    pub parts: Vec<Part>,
    /// A JSON body (for consent and session-end requests).
    pub body: Option<Vec<u8>>,
}

/// One part of a multipart/form-data body.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Part {
    /// The form field name, e.g. `video`.
    pub name: String,
    /// The uploaded file's name, for file parts.
    pub filename: Option<String>,
    /// The part's content type, e.g. `video/mp4`.
    pub content_type: Option<String>,
    /// The part's bytes.
    pub data: Vec<u8>,
}

impl std::fmt::Debug for Part {
    // Never print media bytes: they are biometric data.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Part")
            .field("name", &self.name)
            .field("filename", &self.filename)
            .field("content_type", &self.content_type)
            .field("len", &self.data.len())
            .finish()
    }
}

/// The response the cloud service would send.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Response headers; always `X-Request-Id` and `Content-Type`.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
}

impl Request {
    /// A request with no headers, parts or body.
    pub fn new(method: &str, path: &str) -> Request {
        Request {
            method: method.to_owned(),
            path: path.to_owned(),
            ..Request::default()
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds `Authorization: Bearer <token>`.
    pub fn bearer(self, token: &str) -> Request {
        self.header("Authorization", &format!("Bearer {token}"))
    }

    /// Sets a JSON body.
    pub fn json(mut self, body: &Value) -> Request {
        self.body = Some(body.to_string().into_bytes());
        self
    }

    /// Adds a text part.
    pub fn text_part(mut self, name: &str, value: &str) -> Request {
        self.parts.push(Part {
            name: name.to_owned(),
            data: value.as_bytes().to_vec(),
            ..Part::default()
        });
        self
    }

    /// Adds a file part.
    pub fn file_part(
        mut self,
        name: &str,
        filename: &str,
        content_type: &str,
        data: Vec<u8>,
    ) -> Request {
        self.parts.push(Part {
            name: name.to_owned(),
            filename: Some(filename.to_owned()),
            content_type: Some(content_type.to_owned()),
            data,
        });
        self
    }

    /// The first value of a header, by case-insensitive name.
    pub fn header_value(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }
}

impl Response {
    /// The first value of a response header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The `X-Request-Id` of this response.
    pub fn request_id(&self) -> &str {
        self.header("X-Request-Id").unwrap_or_default()
    }

    /// The error text of an error response (`error` or `message` field).
    pub fn error_text(&self) -> Option<&str> {
        self.body.get("error").and_then(Value::as_str)
    }

    /// The headers as a JSON object (`{"X-Request-Id": "..."}`), as the C ABI returns them.
    pub fn headers_json(&self) -> String {
        let map: serde_json::Map<String, Value> = self
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect();
        Value::Object(map).to_string()
    }
}

fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}
