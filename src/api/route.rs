//! Routing: [`route`] from method and path to an [`Endpoint`], and the error shape a path's
//! service answers in ([`ApiError::for_path`]).

use super::endpoint::Endpoint;
use super::error::ApiError;

/// Longest identifier accepted in a path.
const MAX_PATH_ID_LEN: usize = 128;

/// Finds the endpoint for a method and a path (without query). Returns the endpoint and the path's
/// identifier, if it has one. Unknown paths are 404; known paths with another method are 405.
pub fn route(method: &str, path: &str) -> Result<(Endpoint, Option<String>), ApiError> {
    let path = if path.len() > 1 {
        path.strip_suffix('/').unwrap_or(path)
    } else {
        path
    };
    let post = method.eq_ignore_ascii_case("POST");
    let get = method.eq_ignore_ascii_case("GET");
    if let Some(found) = route_jobs(method, path) {
        return found;
    }
    if let Some(found) = route_projects(method, path) {
        return found;
    }
    let exact = |endpoint, allowed: bool| {
        if allowed {
            Ok((endpoint, None))
        } else {
            Err(ApiError::new(
                405,
                format!("method {method} is not allowed on {path}"),
            ))
        }
    };
    match path {
        "/api-gateway/sessions/start" => exact(Endpoint::SessionStart, post),
        "/api-gateway/process-video" => exact(Endpoint::ProcessVideo, post),
        "/api-gateway/enroll/face" => exact(Endpoint::EnrollFace, post),
        "/api-gateway/enroll/voice" => exact(Endpoint::EnrollVoice, post),
        "/api-gateway/docauth/check" => exact(Endpoint::DocauthCheck, post),
        "/api-gateway/match-faces" => exact(Endpoint::MatchFaces, post),
        "/api-gateway/avf/infer" => exact(Endpoint::AvfInfer, post),
        "/api-gateway/attempts" => exact(Endpoint::AttemptsRead, get),
        "/api-gateway/attempts/reset" => exact(Endpoint::AttemptsReset, post),
        "/api-consent/consent" if get => Ok((Endpoint::AuthorizationConsentRead, None)),
        "/api-consent/consent" => exact(Endpoint::AuthorizationConsent, post),
        "/api-consent/strg-consent" if get => Ok((Endpoint::StorageConsentRead, None)),
        "/api-consent/strg-consent" => exact(Endpoint::StorageConsent, post),
        "/api-consent/status" => exact(Endpoint::ConsentStatus, get),
        "/api-transactions/transactions" => exact(Endpoint::TransactionList, get),
        _ => {
            let with_id = [
                ("/api-gateway/sessions/end/", Endpoint::SessionEnd, post),
                ("/api-gateway/avf/status/", Endpoint::AvfStatus, get),
                (
                    "/api-transactions/transactions/",
                    Endpoint::TransactionGet,
                    get,
                ),
            ];
            for (prefix, endpoint, allowed) in with_id {
                if let Some(id) = path.strip_prefix(prefix) {
                    if !is_path_id(id) {
                        break;
                    }
                    return exact(endpoint, allowed)
                        .map(|(endpoint, _)| (endpoint, Some(id.to_owned())));
                }
            }
            Err(ApiError::new(404, format!("no endpoint at {path}")))
        }
    }
}

/// Vouch's `/api-projects` paths: `/webhooks`, `/webhooks/{id}`, `/webhooks/{id}/rotate`,
/// `/sessions/{id}/sim-swap`; `None` for any other path.
fn route_projects(
    method: &str,
    path: &str,
) -> Option<Result<(Endpoint, Option<String>), ApiError>> {
    let rest = path.strip_prefix("/api-projects/")?;
    let method = method.to_ascii_uppercase();
    let not_allowed = || {
        Err(ApiError::new(
            405,
            format!("method {method} is not allowed on {path}"),
        ))
    };
    let not_found = || Err(ApiError::new(404, format!("no endpoint at {path}")));
    let parts: Vec<&str> = rest.split('/').collect();
    Some(match parts.as_slice() {
        ["webhooks"] => match method.as_str() {
            "POST" => Ok((Endpoint::WebhookCreate, None)),
            "GET" => Ok((Endpoint::WebhookList, None)),
            _ => not_allowed(),
        },
        ["webhooks", id] if is_path_id(id) => match method.as_str() {
            "GET" => Ok((Endpoint::WebhookGet, Some((*id).to_owned()))),
            "DELETE" => Ok((Endpoint::WebhookDelete, Some((*id).to_owned()))),
            _ => not_allowed(),
        },
        ["webhooks", id, "rotate"] if is_path_id(id) => match method.as_str() {
            "POST" => Ok((Endpoint::WebhookRotate, Some((*id).to_owned()))),
            _ => not_allowed(),
        },
        ["sessions", id, "sim-swap"] if is_path_id(id) => match method.as_str() {
            "GET" => Ok((Endpoint::SimSwapGet, Some((*id).to_owned()))),
            _ => not_allowed(),
        },
        _ => not_found(),
    })
}

/// The job-scheduling spec's paths: `/jobs`, `/jobs/{id}`, `/jobs/{id}/replay`,
/// `/jobs/{id}/executions`, `/schedules`, `/schedules/{id}`, `/stats/jobs`, `/stats/usage`,
/// `/alerts`, `/alerts/{id}`; `None` for any other path.
fn route_jobs(method: &str, path: &str) -> Option<Result<(Endpoint, Option<String>), ApiError>> {
    if let Some(rest) = path.strip_prefix("/schedules") {
        return route_resource(
            method,
            path,
            rest,
            &[
                ("POST", Endpoint::ScheduleCreate),
                ("GET", Endpoint::ScheduleList),
            ],
            &[("DELETE", Endpoint::ScheduleDelete)],
        );
    }
    if let Some(rest) = path.strip_prefix("/alerts") {
        return route_resource(
            method,
            path,
            rest,
            &[
                ("POST", Endpoint::AlertCreate),
                ("GET", Endpoint::AlertList),
            ],
            &[
                ("PATCH", Endpoint::AlertUpdate),
                ("DELETE", Endpoint::AlertDelete),
            ],
        );
    }
    if let Some(rest) = path.strip_prefix("/signing-secrets") {
        return route_resource(
            method,
            path,
            rest,
            &[
                ("POST", Endpoint::SigningSecretRotate),
                ("GET", Endpoint::SigningSecretList),
            ],
            &[],
        );
    }
    let stats = match path {
        "/stats/jobs" => Some(Endpoint::StatsJobs),
        "/stats/usage" => Some(Endpoint::StatsUsage),
        _ => None,
    };
    if let Some(endpoint) = stats {
        return Some(if method.eq_ignore_ascii_case("GET") {
            Ok((endpoint, None))
        } else {
            Err(
                ApiError::new(405, format!("method {method} is not allowed on {path}"))
                    .for_jobs(None),
            )
        });
    }
    let rest = path.strip_prefix("/jobs")?;
    let method = method.to_ascii_uppercase();
    let not_allowed = || {
        Err(ApiError::new(405, format!("method {method} is not allowed on {path}")).for_jobs(None))
    };
    let not_found = || Err(ApiError::new(404, format!("no endpoint at {path}")).for_jobs(None));
    if rest.is_empty() {
        return Some(match method.as_str() {
            "POST" => Ok((Endpoint::JobCreate, None)),
            "GET" => Ok((Endpoint::JobList, None)),
            _ => not_allowed(),
        });
    }
    let rest = rest.strip_prefix('/')?;
    let (id, action) = rest.split_once('/').unwrap_or((rest, ""));
    if !is_path_id(id) {
        return Some(not_found());
    }
    let id = Some(id.to_owned());
    Some(match (action, method.as_str()) {
        ("", "GET") => Ok((Endpoint::JobGet, id)),
        ("", "DELETE") => Ok((Endpoint::JobCancel, id)),
        ("replay", "POST") => Ok((Endpoint::JobReplay, id)),
        ("executions", "GET") => Ok((Endpoint::JobExecutions, id)),
        ("" | "replay" | "executions", _) => not_allowed(),
        _ => not_found(),
    })
}

/// A resource of the job spec without sub-paths: `root` lists the methods of the collection
/// (`/schedules`), `item` those of one member (`/schedules/{id}`). `None` when `rest` is neither
/// (another path that merely starts with the same letters).
fn route_resource(
    method: &str,
    path: &str,
    rest: &str,
    root: &[(&str, Endpoint)],
    item: &[(&str, Endpoint)],
) -> Option<Result<(Endpoint, Option<String>), ApiError>> {
    let (allowed, id) = if rest.is_empty() {
        (root, None)
    } else {
        let id = rest.strip_prefix('/')?;
        if !is_path_id(id) || item.is_empty() {
            return Some(Err(
                ApiError::new(404, format!("no endpoint at {path}")).for_jobs(None)
            ));
        }
        (item, Some(id.to_owned()))
    };
    Some(
        allowed
            .iter()
            .find(|(name, _)| method.eq_ignore_ascii_case(name))
            .map(|(_, endpoint)| (*endpoint, id))
            .ok_or_else(|| {
                ApiError::new(405, format!("method {method} is not allowed on {path}"))
                    .for_jobs(None)
            }),
    )
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
    fn fullname_rule_covers_the_gateway_except_start() {
        assert!(!Endpoint::SessionStart.requires_fullname());
        assert!(!Endpoint::AvfInfer.requires_fullname());
        for endpoint in [
            Endpoint::ProcessVideo,
            Endpoint::SessionEnd,
            Endpoint::MatchFaces,
        ] {
            assert!(endpoint.requires_fullname());
        }
        assert!(!Endpoint::AuthorizationConsent.requires_fullname());
    }
}
