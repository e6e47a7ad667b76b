//! `vouch_request`: any operation of the verification spec through one call, and `vouch_response`.

use std::ffi::{c_char, CString};

use super::boundary::{boundary, check_out, read_bytes, read_optional_str, read_str, FfiError};
use super::engine::{engine_ref, vouch_engine};
use super::status::vouch_status;
use vouch::api::{Part, Request, Response, MAX_AVF_BYTES};

/// Most parts accepted in one request.
const MAX_PARTS: usize = 64;

/// One multipart/form-data part. The library copies what it needs during the call; the caller keeps
/// ownership of every pointer.
#[repr(C)]
pub struct vouch_part {
    /// Form field name, e.g. "video". Required, UTF-8.
    pub name: *const c_char,
    /// Uploaded file name, or NULL for text fields.
    pub filename: *const c_char,
    /// Content type, e.g. "video/mp4", or NULL.
    pub content_type: *const c_char,
    /// The bytes (NULL only when `len` is 0).
    pub data: *const u8,
    /// Number of bytes at `data`.
    pub len: usize,
}

/// A response: status, headers and JSON body, as the cloud service would send them.
///
/// Thread safety: a response is not shared; read and free it on one thread at a time.
#[expect(non_camel_case_types, reason = "C naming of the exported type")]
pub struct vouch_response {
    status: u16,
    headers: Vec<(CString, CString)>,
    headers_json: CString,
    body_json: CString,
}

fn c_string(text: String) -> CString {
    CString::new(text.replace('\0', " ")).unwrap_or_default()
}

impl From<Response> for vouch_response {
    fn from(response: Response) -> vouch_response {
        vouch_response {
            status: response.status,
            headers_json: c_string(response.headers_json()),
            headers: response
                .headers
                .into_iter()
                .map(|(name, value)| (c_string(name), c_string(value)))
                .collect(),
            body_json: c_string(response.body.to_string()),
        }
    }
}

/// Reads the headers argument: a JSON object of string values, e.g.
/// `{"Authorization": "Bearer ...", "X-User-Fullname": "alice@example.com"}`.
fn parse_headers(text: Option<&str>) -> Result<Vec<(String, String)>, FfiError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|error| {
        FfiError::new(
            vouch_status::InvalidJson,
            format!("headers_json is not valid JSON: {error}"),
        )
    })?;
    let object = value.as_object().ok_or_else(|| {
        FfiError::new(
            vouch_status::InvalidJson,
            "headers_json must be a JSON object",
        )
    })?;
    object
        .iter()
        .map(|(name, value)| match value.as_str() {
            Some(text) => Ok((name.clone(), text.to_owned())),
            None => Err(FfiError::new(
                vouch_status::InvalidJson,
                format!("header \"{name}\" must have a string value"),
            )),
        })
        .collect()
}

/// Runs one request of the verification spec (`/api-gateway/...`, `/api-consent/...`,
/// `/api-transactions/...`) and writes the response to `*out_response`.
///
/// - `method`, `path`: e.g. "POST", "/api-gateway/sessions/start"; the path may carry a query.
/// - `headers_json`: JSON object of header names to string values, or NULL for none.
/// - `parts`, `n_parts`: multipart parts (NULL when `n_parts` is 0); copied during the call. A part
///   larger than 100 MiB is rejected by the request rules without being copied whole.
/// - `body`, `body_len`: a JSON body (consent, session end), or NULL.
///
/// The status is `VOUCH_STATUS_OK` whenever a response was produced, including error responses
/// such as 400 or 401: read `vouch_response_status`. Other statuses mean the arguments themselves
/// were unusable (NULL, invalid UTF-8, headers that are not a JSON object of strings).
/// Free the response with `vouch_response_free`.
///
/// # Safety
/// Every pointer must be NULL or valid as described, for the duration of the call.
#[no_mangle]
pub unsafe extern "C" fn vouch_request(
    engine: *const vouch_engine,
    method: *const c_char,
    path: *const c_char,
    headers_json: *const c_char,
    parts: *const vouch_part,
    n_parts: usize,
    body: *const u8,
    body_len: usize,
    out_response: *mut *mut vouch_response,
) -> vouch_status {
    boundary(|| {
        check_out(out_response, "out_response")?;
        // SAFETY (all reads below): the caller's contract for each argument.
        let engine = unsafe { engine_ref(engine) }?;
        let method = unsafe { read_str(method, "method") }?;
        let path = unsafe { read_str(path, "path") }?;
        let headers = parse_headers(unsafe { read_optional_str(headers_json, "headers_json") }?)?;
        if n_parts > MAX_PARTS {
            return Err(FfiError::new(
                vouch_status::InvalidArgument,
                format!("n_parts must be at most {MAX_PARTS}"),
            ));
        }
        let raw_parts: &[vouch_part] = if n_parts == 0 {
            &[]
        } else if parts.is_null() {
            return Err(FfiError::null("parts"));
        } else {
            // SAFETY: non-NULL, `n_parts` elements per the contract.
            unsafe { std::slice::from_raw_parts(parts, n_parts) }
        };
        let mut request_parts = Vec::with_capacity(raw_parts.len());
        for (index, part) in raw_parts.iter().enumerate() {
            let name = unsafe { read_str(part.name, &format!("parts[{index}].name")) }?.to_owned();
            let filename =
                unsafe { read_optional_str(part.filename, &format!("parts[{index}].filename")) }?;
            let content_type = unsafe {
                read_optional_str(part.content_type, &format!("parts[{index}].content_type"))
            }?;
            let data = unsafe { read_bytes(part.data, part.len, &format!("parts[{index}].data")) }?;
            // Anything over the largest limit is refused by the request rules by its length alone.
            let kept = &data[..data.len().min(MAX_AVF_BYTES + 1)];
            request_parts.push(Part {
                name,
                filename: filename.map(str::to_owned),
                content_type: content_type.map(str::to_owned),
                data: kept.to_vec(),
            });
        }
        let body = unsafe { read_bytes(body, body_len, "body") }?;
        let request = Request {
            method: method.to_owned(),
            path: path.to_owned(),
            headers,
            parts: request_parts,
            body: if body.is_empty() {
                None
            } else {
                Some(body.to_vec())
            },
        };
        let response = vouch_response::from(vouch::api::handle(engine, request));
        // SAFETY: checked non-NULL above.
        unsafe { *out_response = Box::into_raw(Box::new(response)) };
        Ok(())
    })
}

/// The HTTP status of a response, or 0 for NULL.
///
/// # Safety
/// `response` must be NULL or a live response.
#[no_mangle]
pub unsafe extern "C" fn vouch_response_status(response: *const vouch_response) -> u16 {
    // SAFETY: NULL or live per the contract.
    unsafe { response.as_ref() }.map_or(0, |response| response.status)
}

/// The response headers as a JSON object of strings. NULL for a NULL response. The string belongs to
/// the response and lives until `vouch_response_free`.
///
/// # Safety
/// `response` must be NULL or a live response.
#[no_mangle]
pub unsafe extern "C" fn vouch_response_headers_json(
    response: *const vouch_response,
) -> *const c_char {
    // SAFETY: NULL or live per the contract.
    unsafe { response.as_ref() }.map_or(std::ptr::null(), |response| response.headers_json.as_ptr())
}

/// The value of one response header (name compared case-insensitively), or NULL when absent or when
/// an argument is NULL or not UTF-8. The string belongs to the response.
///
/// # Safety
/// `response` must be NULL or a live response; `name` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn vouch_response_header(
    response: *const vouch_response,
    name: *const c_char,
) -> *const c_char {
    // SAFETY: NULL or live per the contract.
    let (Some(response), Ok(Some(name))) = (unsafe { response.as_ref() }, unsafe {
        read_optional_str(name, "name")
    }) else {
        return std::ptr::null();
    };
    response
        .headers
        .iter()
        .find(|(key, _)| key.to_str().is_ok_and(|key| key.eq_ignore_ascii_case(name)))
        .map_or(std::ptr::null(), |(_, value)| value.as_ptr())
}

/// The JSON body of a response. NULL for a NULL response. The string belongs to the response.
///
/// # Safety
/// `response` must be NULL or a live response.
#[no_mangle]
pub unsafe extern "C" fn vouch_response_body_json(
    response: *const vouch_response,
) -> *const c_char {
    // SAFETY: NULL or live per the contract.
    unsafe { response.as_ref() }.map_or(std::ptr::null(), |response| response.body_json.as_ptr())
}

/// Frees a response and every string it handed out. NULL is a no-op.
///
/// # Safety
/// `response` must be NULL or a response from `vouch_request` not freed yet.
#[no_mangle]
pub unsafe extern "C" fn vouch_response_free(response: *mut vouch_response) {
    if !response.is_null() {
        // SAFETY: from Box::into_raw in vouch_request, freed once per the contract.
        drop(unsafe { Box::from_raw(response) });
    }
}
