//! The job pump through a transport the C host supplies: [`vouch_jobs_pump`] calls the host's
//! [`vouch_transport_fn`] once per outbound request (job attempts and job webhooks), on the calling
//! thread, and records the outcomes (`docs/jobs.md`).

use std::ffi::{c_char, c_void, CString};

use super::boundary::{boundary, into_c_string, FfiError};
use super::engine::{engine_ref, vouch_engine};
use super::status::vouch_status;
use vouch::service::pump::{
    OutboundRequest, OutboundResponse, PumpReport, Transport, MAX_RESPONSE_BODY,
};
use vouch::Engine;

/// One header of an outbound request (NUL-terminated UTF-8).
#[repr(C)]
pub struct vouch_header {
    /// Header name.
    pub name: *const c_char,
    /// Header value.
    pub value: *const c_char,
}

/// An HTTP request the engine asks the host to send. Every pointer is valid only during the
/// callback; copy what you keep.
#[repr(C)]
pub struct vouch_http_request {
    /// Upper-case method, e.g. `POST`.
    pub method: *const c_char,
    /// Absolute `http` or `https` URL.
    pub url: *const c_char,
    /// `header_count` headers.
    pub headers: *const vouch_header,
    /// Number of headers.
    pub header_count: usize,
    /// Body bytes (NULL when `body_len` is 0).
    pub body: *const u8,
    /// Body length.
    pub body_len: usize,
    /// Give up after this many milliseconds.
    pub timeout_ms: u64,
}

/// What the target answered; the callback fills it when it returns 0.
#[repr(C)]
pub struct vouch_http_response {
    /// HTTP status of the answer.
    pub status: u16,
    /// The answer's `Retry-After` in seconds, or -1 when it had none (preset to -1).
    pub retry_after_s: i64,
    /// The engine's; leave it alone. Hand the answer's body over with
    /// `vouch_http_response_set_body`.
    pub body_sink: *mut c_void,
}

/// Hands the answer's body to the engine (copied; the first 65,536 bytes are kept, the rest
/// dropped). Call it from the transport callback, before returning 0, when the request may need
/// its answer read: SIM-swap checks do (their body is the provider's verdict); for other requests
/// it may be skipped. Calling it again replaces the body.
///
/// # Safety
/// `response` is the pointer the callback received, or NULL, used only before the callback
/// returns (it points into the pump's stack; keeping it for later is a use after free); `body`
/// points to `len` readable bytes, or is NULL when `len` is 0.
#[no_mangle]
pub unsafe extern "C" fn vouch_http_response_set_body(
    response: *mut vouch_http_response,
    body: *const u8,
    len: usize,
) -> vouch_status {
    boundary(|| {
        if response.is_null() {
            return Err(FfiError::null("response"));
        }
        if body.is_null() && len > 0 {
            return Err(FfiError::null("body"));
        }
        // SAFETY: non-NULL and the callback's, per the contract.
        let sink = unsafe { (*response).body_sink }.cast::<Vec<u8>>();
        if sink.is_null() {
            return Err(FfiError::null("response.body_sink"));
        }
        let kept = len.min(MAX_RESPONSE_BODY);
        let bytes = if kept == 0 {
            &[][..]
        } else {
            // SAFETY: `body` holds `len` >= `kept` readable bytes per the contract.
            unsafe { std::slice::from_raw_parts(body, kept) }
        };
        // SAFETY: `body_sink` is the engine's own Vec, alive for the callback's duration.
        let sink = unsafe { &mut *sink };
        sink.clear();
        sink.extend_from_slice(bytes);
        Ok(())
    })
}

/// The host's transport: send `request`, wait for the answer's status line and headers, fill
/// `response` and return 0; return any other value when no answer came (no connection, DNS, TLS,
/// timeout, a refused address). Called on the thread that called `vouch_jobs_pump`.
#[expect(non_camel_case_types, reason = "C naming of the exported type")]
pub type vouch_transport_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        request: *const vouch_http_request,
        response: *mut vouch_http_response,
    ) -> i32,
>;

/// The host's callback and its `user_data`, as a [`Transport`].
struct CallbackTransport {
    send: unsafe extern "C" fn(
        *mut c_void,
        *const vouch_http_request,
        *mut vouch_http_response,
    ) -> i32,
    user_data: *mut c_void,
}

// SAFETY: the pump calls the transport only on the thread that called `vouch_jobs_pump`, one
// request at a time; `Sync` is needed only because the `Transport` trait may be shared in Rust.
unsafe impl Sync for CallbackTransport {}

impl Transport for CallbackTransport {
    fn send(&self, request: &OutboundRequest) -> Result<OutboundResponse, String> {
        let text = |value: &str, what: &str| {
            CString::new(value).map_err(|_| format!("the {what} holds a NUL byte"))
        };
        let method = text(&request.method, "method")?;
        let url = text(&request.url, "URL")?;
        let mut owned = Vec::with_capacity(request.headers.len());
        for (name, value) in &request.headers {
            owned.push((text(name, "header name")?, text(value, "header value")?));
        }
        let headers: Vec<vouch_header> = owned
            .iter()
            .map(|(name, value)| vouch_header {
                name: name.as_ptr(),
                value: value.as_ptr(),
            })
            .collect();
        let body = request.body.as_deref().unwrap_or_default();
        let c_request = vouch_http_request {
            method: method.as_ptr(),
            url: url.as_ptr(),
            headers: headers.as_ptr(),
            header_count: headers.len(),
            body: if body.is_empty() {
                std::ptr::null()
            } else {
                body.as_ptr()
            },
            body_len: body.len(),
            timeout_ms: request.timeout_ms,
        };
        let mut body_sink: Vec<u8> = Vec::new();
        let mut response = vouch_http_response {
            status: 0,
            retry_after_s: -1,
            body_sink: (&mut body_sink as *mut Vec<u8>).cast::<c_void>(),
        };
        // SAFETY: the host's callback, per `vouch_jobs_pump`'s contract; every pointer in
        // `c_request` stays valid until it returns.
        let code = unsafe { (self.send)(self.user_data, &c_request, &mut response) };
        if code != 0 {
            return Err(format!(
                "the host transport reported no answer (code {code})"
            ));
        }
        if !(100..=599).contains(&response.status) {
            return Err(format!(
                "the host transport reported HTTP status {}, not 100-599",
                response.status
            ));
        }
        let mut headers = Vec::new();
        if response.retry_after_s >= 0 {
            headers.push(("Retry-After".to_owned(), response.retry_after_s.to_string()));
        }
        Ok(OutboundResponse {
            status: response.status,
            headers,
            body: body_sink,
        })
    }
}

/// Sends up to `max_jobs` due job attempts (and the webhooks of jobs that end) through
/// `transport`, and records the outcomes. Call it from the host's own timer or background task;
/// several threads or processes may pump one database at once. `out_next_due_ms` (NULL or
/// writable) receives when the next job is due (Unix ms), or -1 when none waits;
/// `out_report_json` (NULL or writable) receives `{"attempts", "succeeded", "failed",
/// "interrupted", "next_due_ms", "analyses", "analysis_error"}`, to free with
/// `vouch_string_free`. Each pump first runs one due forgery analysis (`avf/infer` uploads; seconds
/// of work on the calling thread): `analyses` is 1 when it ended one, and `analysis_error` says why
/// one could not run (it is tried again later). A host that wants the two on different timers or
/// threads calls `vouch_avf_run` and `vouch_jobs_deliver` instead.
///
/// # Safety
/// `engine` live or NULL; `transport` a function that follows `vouch_transport_fn`'s contract,
/// called with `user_data`; the out pointers NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_jobs_pump(
    engine: *const vouch_engine,
    transport: vouch_transport_fn,
    user_data: *mut c_void,
    max_jobs: usize,
    out_next_due_ms: *mut i64,
    out_report_json: *mut *mut c_char,
) -> vouch_status {
    // SAFETY: per this function's contract, which is `pump`'s.
    unsafe {
        pump(
            (engine, transport, user_data),
            (out_next_due_ms, out_report_json),
            |engine, transport| engine.pump().run(transport, max_jobs),
        )
    }
}

/// The delivery half of `vouch_jobs_pump`, without the forgery analysis: sends up to `max_jobs`
/// due job attempts, webhooks, events and SIM-swap checks through `transport` and records them,
/// with the same outputs (`analyses` is always 0 and `analysis_error` null). For a host that runs
/// deliveries (mostly waiting on the network) on a timer or thread of their own, apart from the
/// analyses (`vouch_avf_run`, CPU work).
///
/// # Safety
/// As for `vouch_jobs_pump`.
#[no_mangle]
pub unsafe extern "C" fn vouch_jobs_deliver(
    engine: *const vouch_engine,
    transport: vouch_transport_fn,
    user_data: *mut c_void,
    max_jobs: usize,
    out_next_due_ms: *mut i64,
    out_report_json: *mut *mut c_char,
) -> vouch_status {
    // SAFETY: per this function's contract, which is `pump`'s.
    unsafe {
        pump(
            (engine, transport, user_data),
            (out_next_due_ms, out_report_json),
            |engine, transport| engine.pump().deliver(transport, max_jobs),
        )
    }
}

/// The local half of `vouch_jobs_pump`: analyses up to `max` due forgery-analysis uploads
/// (`avf/infer`), oldest first, one at a time on the calling thread (each uses the engine's pool
/// for seconds), recording each verdict and queueing `avf.completed` for the next delivery.
/// `out_done` (NULL or writable) receives how many ended. Several threads or processes may run
/// it at once: an analysis is claimed by one at a time. An analysis that cannot run (a model or
/// storage failure) is a failed status, and is tried again once its lease runs out.
///
/// # Safety
/// `engine` live or NULL; `out_done` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vouch_avf_run(
    engine: *const vouch_engine,
    max: usize,
    out_done: *mut usize,
) -> vouch_status {
    boundary(|| {
        // SAFETY: per this function's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let done = engine.forgery().run(max)?;
        if !out_done.is_null() {
            // SAFETY: non-NULL, writable per the contract.
            unsafe { *out_done = done };
        }
        Ok(())
    })
}

/// `vouch_jobs_pump` and `vouch_jobs_deliver`: the arguments checked, `run` called with the
/// host's transport, the report written.
///
/// # Safety
/// As for `vouch_jobs_pump`.
unsafe fn pump(
    (engine, transport, user_data): (*const vouch_engine, vouch_transport_fn, *mut c_void),
    (out_next_due_ms, out_report_json): (*mut i64, *mut *mut c_char),
    run: impl FnOnce(&Engine, &CallbackTransport) -> vouch::Result<PumpReport>,
) -> vouch_status {
    boundary(|| {
        // SAFETY: per the caller's contract.
        let engine = unsafe { engine_ref(engine) }?;
        let send = transport.ok_or_else(|| FfiError::null("transport"))?;
        let transport = CallbackTransport { send, user_data };
        let report = run(engine, &transport)?;
        if !out_next_due_ms.is_null() {
            // SAFETY: non-NULL, writable per the contract.
            unsafe { *out_next_due_ms = report.next_due_ms.unwrap_or(-1) };
        }
        if !out_report_json.is_null() {
            let json = serde_json::json!({
                "attempts": report.attempts,
                "succeeded": report.succeeded,
                "failed": report.failed,
                "interrupted": report.interrupted,
                "next_due_ms": report.next_due_ms,
                "analyses": report.analyses,
                "analysis_error": report.analysis_error,
            });
            // SAFETY: non-NULL, writable per the contract.
            unsafe { *out_report_json = into_c_string(json.to_string()) };
        }
        Ok(())
    })
}
