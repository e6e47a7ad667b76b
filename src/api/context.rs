//! The header rules: [`RequestContext`] holds a request's checked headers. Each optional header is
//! checked only when present, and a bad value is a 400 whose text names the header.

use serde_json::Value;

use super::endpoint::Endpoint;
use super::error::ApiError;
use super::Request;
use crate::service::consent::check_fullname;

/// The values of `X-Action-Trigger` (and of process-video's `trigger` part).
pub(crate) const ACTION_TRIGGERS: [&str; 3] = ["authentication", "registration", "confirmation"];

/// Largest JSON header (`X-Device-Info`, `X-Geo-Location`) accepted, in bytes.
const MAX_JSON_HEADER_BYTES: usize = 4096;
/// Most tags accepted in `X-Request-Tags`, and the longest tag.
const MAX_TAGS: usize = 20;
const MAX_TAG_LEN: usize = 64;
const MAX_SESSION_ID_LEN: usize = 128;

/// The values of the spec's request headers, checked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestContext {
    /// `X-User-Fullname`.
    pub fullname: Option<String>,
    /// `X-Session-ID`.
    pub session_id: Option<String>,
    /// `X-Action-Trigger`: `authentication`, `registration` or `confirmation`.
    pub action_trigger: Option<String>,
    /// `X-Device-Info`, a JSON object.
    pub device_info: Option<Value>,
    /// `X-Geo-Location`, a JSON object with any of `lat`, `lng`, `country` and `city`.
    pub geo_location: Option<Value>,
    /// `X-Request-Tags`, split at commas, trimmed, empty tags dropped.
    pub request_tags: Vec<String>,
    /// `X-Inhouse-Docauth` (default `true`).
    pub inhouse_docauth: bool,
    /// `X-Inhouse-MRZ` (default `false`).
    pub inhouse_mrz: bool,
    /// `X-Use-Prefilled-Video` (default `false`).
    pub use_prefilled_video: bool,
}

impl RequestContext {
    /// Reads and checks the headers of `request` for `endpoint`.
    pub fn from_request(request: &Request, endpoint: Endpoint) -> Result<RequestContext, ApiError> {
        let fullname = request.header_value("X-User-Fullname").map(str::to_owned);
        match &fullname {
            None if endpoint.requires_fullname() => {
                return Err(ApiError::bad_request("X-User-Fullname header is required"))
            }
            Some(name) => check_fullname(name, "X-User-Fullname header")
                .map_err(|error| ApiError::bad_request(error.to_string()))?,
            None => {}
        }
        let session_id = request.header_value("X-Session-ID").map(str::to_owned);
        if let Some(id) = &session_id {
            if id.is_empty()
                || id.len() > MAX_SESSION_ID_LEN
                || id.chars().any(|c| c.is_control() || c.is_whitespace())
            {
                return Err(ApiError::bad_request(format!(
                    "X-Session-ID header must be 1 to {MAX_SESSION_ID_LEN} characters without spaces"
                )));
            }
        }
        let action_trigger = request.header_value("X-Action-Trigger").map(str::to_owned);
        if let Some(trigger) = &action_trigger {
            if !ACTION_TRIGGERS.contains(&trigger.as_str()) {
                return Err(ApiError::bad_request(
                    "X-Action-Trigger header must be authentication, registration or confirmation",
                ));
            }
        }
        let device_info = request
            .header_value("X-Device-Info")
            .map(|text| json_object_header("X-Device-Info", text))
            .transpose()?;
        let geo_location = request
            .header_value("X-Geo-Location")
            .map(geo_location)
            .transpose()?;
        let request_tags = request
            .header_value("X-Request-Tags")
            .map(request_tags)
            .transpose()?
            .unwrap_or_default();
        Ok(RequestContext {
            fullname,
            session_id,
            action_trigger,
            device_info,
            geo_location,
            request_tags,
            inhouse_docauth: boolean_header(request, "X-Inhouse-Docauth", true)?,
            inhouse_mrz: boolean_header(request, "X-Inhouse-MRZ", false)?,
            use_prefilled_video: boolean_header(request, "X-Use-Prefilled-Video", false)?,
        })
    }
}

fn json_object_header(name: &str, text: &str) -> Result<Value, ApiError> {
    if text.len() > MAX_JSON_HEADER_BYTES {
        return Err(ApiError::bad_request(format!(
            "{name} header is longer than {MAX_JSON_HEADER_BYTES} bytes"
        )));
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|_| ApiError::bad_request(format!("{name} header is not valid JSON")))?;
    if !value.is_object() {
        return Err(ApiError::bad_request(format!(
            "{name} header must be a JSON object"
        )));
    }
    Ok(value)
}

fn geo_location(text: &str) -> Result<Value, ApiError> {
    let value = json_object_header("X-Geo-Location", text)?;
    let object = value.as_object().expect("checked to be an object");
    for key in object.keys() {
        if !matches!(key.as_str(), "lat" | "lng" | "country" | "city") {
            return Err(ApiError::bad_request(format!(
                "X-Geo-Location header has an unknown field \"{key}\"; allowed: lat, lng, country, city"
            )));
        }
    }
    // Each field is optional (the spec lists the four, and a client may know only some, such as
    // the country); a field that is present must be what it says.
    for (field, limit) in [("lat", 90.0), ("lng", 180.0)] {
        match object.get(field).map(Value::as_f64) {
            None => {}
            Some(Some(degrees)) if (-limit..=limit).contains(&degrees) => {}
            _ => {
                return Err(ApiError::bad_request(format!(
                "X-Geo-Location header field {field} must be a number between -{limit} and {limit}"
            )))
            }
        }
    }
    for field in ["country", "city"] {
        if object.get(field).is_some_and(|value| !value.is_string()) {
            return Err(ApiError::bad_request(format!(
                "X-Geo-Location header field {field} must be a string"
            )));
        }
    }
    Ok(value)
}

fn request_tags(text: &str) -> Result<Vec<String>, ApiError> {
    let tags: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|tag| !tag.is_empty())
        .map(str::to_owned)
        .collect();
    if tags.len() > MAX_TAGS
        || tags
            .iter()
            .any(|tag| tag.len() > MAX_TAG_LEN || tag.chars().any(char::is_control))
    {
        return Err(ApiError::bad_request(format!(
            "X-Request-Tags header must hold at most {MAX_TAGS} comma-separated tags of at most {MAX_TAG_LEN} characters"
        )));
    }
    Ok(tags)
}

fn boolean_header(request: &Request, name: &str, default: bool) -> Result<bool, ApiError> {
    match request.header_value(name) {
        None => Ok(default),
        Some(value) if value.eq_ignore_ascii_case("true") => Ok(true),
        Some(value) if value.eq_ignore_ascii_case("false") => Ok(false),
        Some(_) => Err(ApiError::bad_request(format!(
            "{name} header must be true or false"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(headers: &[(&str, &str)], endpoint: Endpoint) -> Result<RequestContext, ApiError> {
        let mut request = Request::new("POST", "/");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        RequestContext::from_request(&request, endpoint)
    }

    fn message(headers: &[(&str, &str)]) -> String {
        context(headers, Endpoint::ProcessVideo)
            .unwrap_err()
            .message
    }

    #[test]
    fn fullname_is_required_on_the_gateway_except_start() {
        assert_eq!(
            context(&[], Endpoint::ProcessVideo).unwrap_err().message,
            "X-User-Fullname header is required"
        );
        assert_eq!(
            context(&[], Endpoint::ProcessVideo).unwrap_err().status,
            400
        );
        assert!(context(&[], Endpoint::SessionStart).is_ok());
        assert!(context(&[], Endpoint::AuthorizationConsent).is_ok());
        assert!(message(&[("x-user-fullname", "")]).contains("X-User-Fullname header must be"));
    }

    #[test]
    fn json_headers_are_checked_and_named() {
        let base = ("X-User-Fullname", "alice");
        assert_eq!(
            message(&[base, ("X-Device-Info", "{oops")]),
            "X-Device-Info header is not valid JSON"
        );
        assert_eq!(
            message(&[base, ("X-Device-Info", "[1]")]),
            "X-Device-Info header must be a JSON object"
        );
        assert_eq!(
            message(&[base, ("X-Geo-Location", "nope")]),
            "X-Geo-Location header is not valid JSON"
        );
        assert!(
            message(&[base, ("X-Geo-Location", r#"{"lat":91,"lng":0}"#)]).contains("field lat")
        );
        assert!(
            message(&[base, ("X-Geo-Location", r#"{"lat":1,"lng":2,"zip":"x"}"#)])
                .contains("unknown field \"zip\"")
        );
        assert!(
            message(&[base, ("X-Geo-Location", r#"{"lat":1,"lng":2,"city":3}"#)])
                .contains("field city")
        );
        assert!(message(&[base, ("X-Geo-Location", r#"{"lat":"1"}"#)]).contains("field lat"));
        // Any field may be left out.
        for partial in [r#"{"country":"DE"}"#, r#"{"lat":52.5,"lng":13.4}"#, "{}"] {
            assert!(
                context(&[base, ("X-Geo-Location", partial)], Endpoint::ProcessVideo).is_ok(),
                "{partial}"
            );
        }
        let ok = context(
            &[
                base,
                (
                    "X-Geo-Location",
                    r#"{"lat":52.5,"lng":13.4,"country":"DE","city":"Berlin"}"#,
                ),
                ("X-Device-Info", r#"{"os":"iOS"}"#),
            ],
            Endpoint::ProcessVideo,
        )
        .unwrap();
        assert_eq!(ok.geo_location.unwrap()["city"], "Berlin");
        assert_eq!(ok.device_info.unwrap()["os"], "iOS");
    }

    #[test]
    fn trigger_tags_and_flags() {
        let base = ("X-User-Fullname", "alice");
        assert!(message(&[base, ("X-Action-Trigger", "login")]).contains("X-Action-Trigger"));
        assert!(message(&[base, ("X-Use-Prefilled-Video", "yes")])
            .contains("X-Use-Prefilled-Video header must be true or false"));
        let ok = context(
            &[
                base,
                ("X-Action-Trigger", "registration"),
                ("X-Request-Tags", " kiosk, ,lobby "),
                ("X-Inhouse-Docauth", "FALSE"),
            ],
            Endpoint::ProcessVideo,
        )
        .unwrap();
        assert_eq!(ok.request_tags, vec!["kiosk", "lobby"]);
        assert!(!ok.inhouse_docauth);
        assert!(!ok.inhouse_mrz);
        let many = vec!["t"; 21].join(",");
        assert!(message(&[base, ("X-Request-Tags", &many)]).contains("X-Request-Tags"));
    }
}
