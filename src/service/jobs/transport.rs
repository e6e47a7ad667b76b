//! The engine's outbound HTTP, as data: [`OutboundRequest`] and [`OutboundResponse`], and the
//! [`Transport`] a host supplies to send them (the library does no networking). The pump sends
//! job attempts, webhooks, events, alerts and SIM-swap checks through it.

/// Timeout of a job's call, ms.
pub const CALL_TIMEOUT_MS: u64 = 30_000;
/// Timeout of a job webhook, ms (the spec's 10 s).
pub const WEBHOOK_TIMEOUT_MS: u64 = 10_000;

/// An HTTP request the engine wants sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundRequest {
    /// Upper-case method.
    pub method: String,
    /// Absolute `http` or `https` URL.
    pub url: String,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// Body bytes, if any.
    pub body: Option<Vec<u8>>,
    /// Give up after this long.
    pub timeout_ms: u64,
}

/// What the target answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundResponse {
    /// HTTP status.
    pub status: u16,
    /// Response headers (names in any case).
    pub headers: Vec<(String, String)>,
    /// The first [`MAX_RESPONSE_BODY`](crate::service::pump::MAX_RESPONSE_BODY) bytes of the
    /// answer's body (a transport may leave it empty when nothing in the engine reads it).
    pub body: Vec<u8>,
}

/// Sends the engine's outbound HTTP requests. `Err` is a transport failure (no connection, DNS,
/// TLS, timeout, a refused address): the attempt failed without an HTTP status.
pub trait Transport: Sync {
    /// Sends one request and waits for its status line and headers.
    fn send(&self, request: &OutboundRequest) -> std::result::Result<OutboundResponse, String>;

    /// How many requests the pump may have this transport send at once, each from a thread of
    /// its own. The default, 1, keeps every call on the thread that pumps, one at a time (what a
    /// host's callback that is not thread-safe, or a JVM's, needs).
    fn max_concurrent(&self) -> usize {
        1
    }
}
