//! The outbound call a job or a schedule describes (`url`, `http_method`, `headers`, `body`,
//! `max_retries`, `webhook_url`, `webhook_headers`), checked and normalised the same way for both.

use std::collections::BTreeMap;

use crate::address::{check_headers, check_url, AddressPolicy};
use crate::error::{Error, Result};

/// Most retries a job may ask for.
pub const MAX_RETRIES: u32 = 10;
/// Longest body of a job's call, bytes.
pub const MAX_BODY_LEN: usize = 256 * 1024;
/// Methods a job's call may use.
pub const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidArgument(message.into())
}

/// The outbound call a job or a schedule describes, checked and normalised: what creating either
/// shares.
pub(crate) struct CheckedCall {
    /// Upper-case method.
    pub method: String,
    /// Headers of the call.
    pub headers: BTreeMap<String, String>,
    /// Headers of the webhook.
    pub webhook_headers: BTreeMap<String, String>,
    /// Retries (0 by default).
    pub max_retries: u32,
}

/// Checks the call fields of a job or schedule: URL and webhook URL (against the address
/// policy), method (default `POST`), headers, body, retries, webhook headers.
pub(crate) fn check_call(
    addresses: &AddressPolicy,
    (url, webhook_url): (&str, Option<&str>),
    http_method: Option<&str>,
    headers: Option<&BTreeMap<String, String>>,
    body: Option<&str>,
    max_retries: Option<u32>,
    webhook_headers: Option<&BTreeMap<String, String>>,
) -> Result<CheckedCall> {
    check_url(url, "url", addresses)?;
    let method = http_method.unwrap_or("POST").to_ascii_uppercase();
    if !METHODS.contains(&method.as_str()) {
        return Err(invalid(format!(
            "http_method must be one of {}",
            METHODS.join(", ")
        )));
    }
    let headers = headers.cloned().unwrap_or_default();
    check_headers(&headers, "headers")?;
    let webhook_headers = webhook_headers.cloned().unwrap_or_default();
    check_headers(&webhook_headers, "webhook_headers")?;
    if let Some(url) = webhook_url {
        check_url(url, "webhook_url", addresses)?;
    }
    if body.is_some_and(|body| body.len() > MAX_BODY_LEN) {
        return Err(invalid(format!(
            "body must be at most {MAX_BODY_LEN} bytes"
        )));
    }
    let max_retries = max_retries.unwrap_or(0);
    if max_retries > MAX_RETRIES {
        return Err(invalid(format!(
            "max_retries must be from 0 to {MAX_RETRIES}"
        )));
    }
    Ok(CheckedCall {
        method,
        headers,
        webhook_headers,
        max_retries,
    })
}
