//! Routing from the endpoint table: [`route`] from method and path to an [`Endpoint`], the
//! methods a path answers for a 405's `Allow` ([`allowed_methods`]), and the error shape a path's
//! service answers in ([`ApiError::for_path`]).

use super::endpoint::{Endpoint, Family, ENDPOINTS};
use super::error::ApiError;

/// Longest identifier accepted in a path.
const MAX_PATH_ID_LEN: usize = 128;

/// Finds the endpoint for a method and a path (without query). Returns the endpoint and the path's
/// identifier, if it has one. Unknown paths are 404; known paths with another method are 405,
/// each in the error shape of the path's service.
pub fn route(method: &str, path: &str) -> Result<(Endpoint, Option<String>), ApiError> {
    let path = trimmed(path);
    let mut family = None;
    for declaration in &ENDPOINTS {
        if let Some(id) = fits_template(declaration.path, path) {
            if declaration.method.eq_ignore_ascii_case(method) {
                return Ok((declaration.endpoint, id));
            }
            family = Some(declaration.family);
        }
    }
    // The job routes and the project routes have always named the method upper-cased, the others
    // as it was sent.
    let shown = if path.starts_with("/jobs") || path.starts_with("/api-projects/") {
        method.to_ascii_uppercase()
    } else {
        method.to_owned()
    };
    Err(match family {
        Some(family) => shaped(
            ApiError::new(405, format!("method {shown} is not allowed on {path}")),
            family,
        ),
        None => shaped(
            ApiError::new(404, format!("no endpoint at {path}")),
            family_of_prefix(path),
        ),
    })
}

/// The methods `path` (with or without a query) is routed for, for the `Allow` header of a 405:
/// e.g. `GET, POST`.
pub fn allowed_methods(path: &str) -> String {
    let path = trimmed(path.split_once('?').map_or(path, |(path, _)| path));
    ["GET", "POST", "PATCH", "DELETE"]
        .into_iter()
        .filter(|method| {
            ENDPOINTS.iter().any(|declaration| {
                declaration.method == *method && fits_template(declaration.path, path).is_some()
            })
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The path without one trailing slash (`/` stays).
fn trimmed(path: &str) -> &str {
    if path.len() > 1 {
        path.strip_suffix('/').unwrap_or(path)
    } else {
        path
    }
}

/// Whether `path` (without query or trailing slash) fits `template` segment by segment (a
/// `{name}` segment takes one identifier: 1 to 128 letters, digits, `_` or `-`): `Some` with the
/// identifier, if the template has one.
fn fits_template(template: &str, path: &str) -> Option<Option<String>> {
    let mut id = None;
    let mut wanted = template.split('/');
    let mut given = path.split('/');
    loop {
        match (wanted.next(), given.next()) {
            (None, None) => return Some(id),
            (Some(segment), Some(value)) if segment.starts_with('{') => {
                if !is_path_id(value) {
                    return None;
                }
                id = Some(value.to_owned());
            }
            (Some(segment), Some(value)) if segment == value => {}
            _ => return None,
        }
    }
}

/// The service a path that matches no endpoint belongs to, by its first segment: the job
/// service's for `/jobs/...`, `/schedules/...` and the other first segments of its endpoints.
fn family_of_prefix(path: &str) -> Family {
    let first = |path: &'static str| path.split('/').nth(1);
    let given = path.split('/').nth(1);
    if ENDPOINTS
        .iter()
        .any(|declaration| declaration.family == Family::Jobs && first(declaration.path) == given)
    {
        Family::Jobs
    } else {
        Family::Gateway
    }
}

/// `error` in the shape of `family`'s errors.
fn shaped(error: ApiError, family: Family) -> ApiError {
    if family == Family::Jobs {
        error.for_jobs(None)
    } else {
        error
    }
}

fn is_path_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_PATH_ID_LEN
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

impl ApiError {
    /// The same error in the shape of the service that answers `path` (with or without a query):
    /// the job-scheduling spec's on its paths, routed or not, the verification spec's elsewhere.
    /// For a server that answers before the engine (`vouch serve`'s `Host` check and body limits).
    pub fn for_path(self, path: &str) -> ApiError {
        let path = path.split_once('?').map_or(path, |(path, _)| path);
        let jobs = match route("GET", path) {
            Ok((endpoint, _)) => endpoint.is_jobs(),
            Err(error) => error.code.is_some(),
        };
        if jobs {
            self.for_jobs(None)
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_s_method_and_path_route_back_to_it() {
        let mut seen = std::collections::HashSet::new();
        for endpoint in Endpoint::ALL {
            assert!(seen.insert(endpoint), "{endpoint:?} twice");
            let (method, template) = endpoint.method_and_path();
            let path = template
                .split('/')
                .map(|segment| {
                    if segment.starts_with('{') {
                        "id_1"
                    } else {
                        segment
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            let (routed, id) = route(method, &path).unwrap();
            assert_eq!(routed, endpoint, "{method} {path}");
            assert_eq!(id.is_some(), template.contains('{'), "{method} {path}");
        }
    }

    #[test]
    fn routes_every_endpoint() {
        assert_eq!(
            route("POST", "/api-gateway/sessions/start").unwrap().0,
            Endpoint::SessionStart
        );
        assert_eq!(
            route("post", "/api-gateway/process-video/").unwrap().0,
            Endpoint::ProcessVideo
        );
        assert_eq!(
            route("POST", "/api-gateway/sessions/end/sess_ab12").unwrap(),
            (Endpoint::SessionEnd, Some("sess_ab12".to_owned()))
        );
        assert_eq!(
            route("GET", "/api-consent/consent").unwrap().0,
            Endpoint::AuthorizationConsentRead
        );
        assert_eq!(
            route("POST", "/api-consent/strg-consent").unwrap().0,
            Endpoint::StorageConsent
        );
        assert_eq!(
            route("GET", "/api-transactions/transactions/req_1").unwrap(),
            (Endpoint::TransactionGet, Some("req_1".to_owned()))
        );
    }

    #[test]
    fn unknown_paths_and_methods() {
        assert_eq!(route("POST", "/api-gateway/nope").unwrap_err().status, 404);
        assert_eq!(
            route("GET", "/api-gateway/process-video")
                .unwrap_err()
                .status,
            405
        );
        assert_eq!(
            route("DELETE", "/api-consent/consent").unwrap_err().status,
            405
        );
        assert_eq!(
            route("POST", "/api-gateway/sessions/end/")
                .unwrap_err()
                .status,
            404
        );
        assert_eq!(
            route("POST", "/api-gateway/sessions/end/a/b")
                .unwrap_err()
                .status,
            404
        );
        assert_eq!(
            route("POST", "/api-gateway/sessions/end/%2e%2e")
                .unwrap_err()
                .status,
            404
        );
    }

    #[test]
    fn a_path_that_fits_no_endpoint_takes_its_service_s_shape() {
        for path in [
            "/jobs/job_1/nothing",
            "/stats/nothing",
            "/schedules/a/b",
            "/signing-secrets/x",
        ] {
            let error = route("GET", path).unwrap_err();
            assert_eq!((error.status, error.code.is_some()), (404, true), "{path}");
        }
        for path in ["/jobsearch", "/api-gateway/nothing", "/", "nothing"] {
            let error = route("GET", path).unwrap_err();
            assert_eq!((error.status, error.code.is_some()), (404, false), "{path}");
        }
        let error = route("PUT", "/alerts/alt_1").unwrap_err();
        assert_eq!((error.status, error.code.is_some()), (405, true));
        assert_eq!(allowed_methods("/alerts/alt_1/"), "PATCH, DELETE");
        // As they always did: the job and project routes name the method upper-cased.
        let message = |method: &str, path: &str| route(method, path).unwrap_err().message;
        assert_eq!(
            message("put", "/jobs/job_1"),
            "method PUT is not allowed on /jobs/job_1"
        );
        assert_eq!(
            message("put", "/api-gateway/process-video"),
            "method put is not allowed on /api-gateway/process-video"
        );
        // The upload limit follows the path's upload endpoint whatever the method.
        assert_eq!(
            crate::api::upload_limit("/api-gateway/avf/infer/x?y=1"),
            (crate::api::MAX_AVF_BYTES, 413, "file size exceeds 100MB")
        );
        assert_eq!(
            crate::api::upload_limit("/api-gateway/enroll/face"),
            (crate::api::MAX_MEDIA_BYTES, 400, "file size exceeds 50MB")
        );
    }
}
