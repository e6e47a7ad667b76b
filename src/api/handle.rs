//! [`handle`]: route, authenticate, check headers and the session lock, run the
//! endpoint, record the transaction, and stamp `X-Request-Id` on whatever comes out.

use serde_json::Value;

use super::call::{Call, Handler, Reply};
use super::context::RequestContext;
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::route::{allowed_methods, route};
use super::{
    attempts, consent, jobs, media_endpoints, projects, sessions, transactions, Request, Response,
};
use crate::service::transactions::TransactionRecord;
use crate::service::{new_id, Engine};

/// Serves one request of the verification spec and returns what the cloud service would: status,
/// headers (always `X-Request-Id`) and JSON body. Never panics on any input; failures are
/// error responses.
pub fn handle(engine: &Engine, request: Request) -> Response {
    let request_id = new_id("req_");
    let reply = serve(engine, &request, &request_id).unwrap_or_else(|error| Reply {
        status: error.status,
        body: error.body(),
        // RFC 9110 (15.5.6): a 405 must say which methods the resource does answer.
        headers: if error.status == 405 {
            vec![("Allow".to_owned(), allowed_methods(&request.path))]
        } else {
            Vec::new()
        },
    });
    let mut headers = vec![
        ("X-Request-Id".to_owned(), request_id),
        ("Content-Type".to_owned(), "application/json".to_owned()),
    ];
    headers.extend(reply.headers);
    Response {
        status: reply.status,
        headers,
        body: reply.body,
    }
}

fn serve(engine: &Engine, request: &Request, request_id: &str) -> Result<Reply, ApiError> {
    let (path, query_text) = request.path.split_once('?').unwrap_or((&request.path, ""));
    let (endpoint, path_id) = route(&request.method, path)?;
    let key = engine
        .api_keys()
        .authenticate(request.header_value("Authorization"))
        .map_err(|error| ApiError::from_error(error, endpoint))?;
    let mut call = Call {
        engine,
        request_id,
        request,
        endpoint,
        path_id,
        query_text: query_text.to_owned(),
        query: Vec::new(),
        key,
        context: RequestContext::default(),
        audit_fullname: request.header_value("X-User-Fullname").map(str::to_owned),
        audit_session: request.header_value("X-Session-ID").map(str::to_owned),
    };
    let reply = dispatch(&mut call).unwrap_or_else(|error| {
        let error = if endpoint.is_jobs() {
            error.for_jobs(None)
        } else {
            error
        };
        Reply {
            status: error.status,
            body: error.body(),
            headers: Vec::new(),
        }
    });
    if endpoint.records_transaction() {
        record_transaction(engine, &call, request_id, path, &reply)
            .map_err(|error| call.error(error))?;
    }
    Ok(reply)
}

fn record_transaction(
    engine: &Engine,
    call: &Call<'_>,
    request_id: &str,
    path: &str,
    reply: &Reply,
) -> crate::Result<()> {
    // Bound what is kept of unchecked header values: a row must not become a dumping ground.
    let clip = |text: Option<String>| text.map(|text| text.chars().take(256).collect::<String>());
    engine.audit().insert(&TransactionRecord {
        request_id: request_id.to_owned(),
        project_id: call.key.project_id.clone(),
        key_id: call.key.key_id.clone(),
        method: call.request.method.to_ascii_uppercase(),
        endpoint: path.to_owned(),
        status_code: reply.status,
        user_fullname: clip(call.audit_fullname.clone()),
        session_id: clip(call.audit_session.clone()),
        action_trigger: call.context.action_trigger.clone(),
        device_info: call.context.device_info.as_ref().map(Value::to_string),
        geo_location: call.context.geo_location.as_ref().map(Value::to_string),
        request_tags: call.context.request_tags.clone(),
        result: Some(audit_result(call.endpoint, &reply.body).to_string()),
        created_at: engine.now_ms(),
    })
}

/// The fields of a docauth/check answer that an audit row keeps: what kind of document it was
/// and whether it checked out, not who it belongs to.
const DOCUMENT_AUDIT_FIELDS: [&str; 4] =
    ["mrz_format", "document_type", "issuing_state", "expired"];

/// What a transaction row keeps of a response body. docauth/check's answer carries the
/// document's personal data (names, document number, dates of birth and expiry, the raw zone);
/// the row keeps only [`DOCUMENT_AUDIT_FIELDS`] and whether the check digits held, so the audit
/// trail holds no personal data a consent withdrawal would have to chase. Other bodies are kept
/// whole (they carry scores and reasons, no personal data beyond the user identifier the row
/// names anyway).
fn audit_result(endpoint: Endpoint, body: &Value) -> Value {
    if endpoint != Endpoint::DocauthCheck {
        return body.clone();
    }
    let Some(data) = body.get("data").and_then(Value::as_object) else {
        return body.clone();
    };
    let mut kept: serde_json::Map<String, Value> = DOCUMENT_AUDIT_FIELDS
        .iter()
        .filter_map(|&name| Some((name.to_owned(), data.get(name)?.clone())))
        .collect();
    if let Some(valid) = data.get("mrz_validation").and_then(|v| v.get("valid")) {
        kept.insert("mrz_valid".to_owned(), valid.clone());
    }
    let mut redacted = body.clone();
    redacted["data"] = Value::Object(kept);
    redacted
}

/// Splits `a=1&b=2` into decoded pairs (`+` is a space, `%XX` a byte). Unlike a lenient form
/// decoder, bytes that do not decode to UTF-8 are a 400 rather than silently replaced.
fn parse_query(query: &str) -> Result<Vec<(String, String)>, ApiError> {
    let decode = |text: &str| -> Result<String, ApiError> {
        let spaced = text.replace('+', " ");
        percent_encoding::percent_decode_str(&spaced)
            .decode_utf8()
            .map(|decoded| decoded.into_owned())
            .map_err(|_| {
                ApiError::bad_request("query string is not valid UTF-8 after percent-decoding")
            })
    };
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((decode(name)?, decode(value)?))
        })
        .collect()
}

fn dispatch(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query = parse_query(&call.query_text)?;
    if !call.endpoint.is_jobs() {
        call.context = RequestContext::from_request(call.request, call.endpoint)?;
    }
    let handler = handler_of(call.endpoint)
        .ok_or_else(|| ApiError::new(500, format!("{} has no handler", call.endpoint.name())))?;
    handler(call)
}

/// Every endpoint module's handlers.
const HANDLERS: [&[(Endpoint, Handler)]; 7] = [
    sessions::HANDLERS,
    media_endpoints::HANDLERS,
    attempts::HANDLERS,
    consent::HANDLERS,
    transactions::HANDLERS,
    jobs::HANDLERS,
    projects::HANDLERS,
];

/// The handler of `endpoint` (a test checks every endpoint has one, and only one).
fn handler_of(endpoint: Endpoint) -> Option<Handler> {
    HANDLERS
        .iter()
        .flat_map(|list| list.iter())
        .find(|(answered, _)| *answered == endpoint)
        .map(|(_, handler)| *handler)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_has_one_handler() {
        for endpoint in Endpoint::ALL {
            let count = HANDLERS
                .iter()
                .flat_map(|list| list.iter())
                .filter(|(answered, _)| *answered == endpoint)
                .count();
            assert_eq!(count, 1, "{endpoint:?}");
        }
    }

    #[test]
    fn queries_decode_strictly() {
        assert_eq!(
            parse_query("user_fullname=alice%40example.com&limit=5&x").unwrap(),
            vec![
                ("user_fullname".to_owned(), "alice@example.com".to_owned()),
                ("limit".to_owned(), "5".to_owned()),
                ("x".to_owned(), String::new())
            ]
        );
        assert_eq!(
            parse_query("a=b+c").unwrap(),
            vec![("a".to_owned(), "b c".to_owned())]
        );
        assert!(parse_query("").unwrap().is_empty());
        assert_eq!(parse_query("user_fullname=%FF").unwrap_err().status, 400);
    }

    #[test]
    fn a_405_names_the_methods_the_path_answers() {
        assert_eq!(allowed_methods("/jobs?status=failed"), "GET, POST");
        assert_eq!(allowed_methods("/alerts/alt_1"), "PATCH, DELETE");
        assert_eq!(allowed_methods("/api-consent/consent"), "GET, POST");
        assert_eq!(allowed_methods("/api-gateway/process-video/"), "POST");
        assert_eq!(allowed_methods("/stats/jobs"), "GET");
        for endpoint in Endpoint::ALL {
            let (method, template) = endpoint.method_and_path();
            let path = template.replace('{', "x").replace('}', "");
            assert!(
                allowed_methods(&path).split(", ").any(|m| m == method),
                "{method} {path}"
            );
        }
    }
}
