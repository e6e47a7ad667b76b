//! Routing: [`Endpoint`], every operation the surface knows, and [`route`] from method and path.

use super::error::ApiError;

/// One operation of the verification spec (and the paths Vouch defines where the spec shows none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `POST /api-gateway/sessions/start`
    SessionStart,
    /// `POST /api-gateway/sessions/end/{session_id}`
    SessionEnd,
    /// `POST /api-gateway/process-video`
    ProcessVideo,
    /// `POST /api-gateway/enroll/face`
    EnrollFace,
    /// `POST /api-gateway/enroll/voice`
    EnrollVoice,
    /// `POST /api-gateway/docauth/check`
    DocauthCheck,
    /// `POST /api-gateway/match-faces`
    MatchFaces,
    /// `POST /api-gateway/avf/infer`
    AvfInfer,
    /// `GET /api-gateway/avf/status/{request_id}`: where an analysis stands, and its verdict.
    AvfStatus,
    /// `GET /api-gateway/attempts`: where `X-User-Fullname` stands against the attempt limit
    /// (Vouch's path; the spec shows none).
    AttemptsRead,
    /// `POST /api-gateway/attempts/reset`: clears the user's failed attempts, wait and
    /// disabling, after the backend checked another factor (Vouch's path).
    AttemptsReset,
    /// `POST /api-consent/consent`: give or withdraw authorization consent.
    AuthorizationConsent,
    /// `GET /api-consent/consent?user_fullname=...`: read authorization consent.
    AuthorizationConsentRead,
    /// `POST /api-consent/strg-consent`: give or withdraw storage consent.
    StorageConsent,
    /// `GET /api-consent/strg-consent?user_fullname=...`: read storage consent.
    StorageConsentRead,
    /// `GET /api-consent/status?user_fullname=...`: read both consents.
    ConsentStatus,
    /// `GET /api-transactions/transactions`: a page of the project's transactions.
    TransactionList,
    /// `GET /api-transactions/transactions/{request_id}`: one transaction.
    TransactionGet,
    /// `POST /jobs` (job-scheduling spec).
    JobCreate,
    /// `GET /jobs`: a page of the project's jobs.
    JobList,
    /// `GET /jobs/{job_id}`.
    JobGet,
    /// `DELETE /jobs/{job_id}`: cancel before the first attempt.
    JobCancel,
    /// `POST /jobs/{job_id}/replay`: clone a failed job.
    JobReplay,
    /// `GET /jobs/{job_id}/executions`.
    JobExecutions,
    /// `POST /schedules`.
    ScheduleCreate,
    /// `GET /schedules`: a page of the project's active schedules.
    ScheduleList,
    /// `DELETE /schedules/{schedule_id}`.
    ScheduleDelete,
    /// `GET /stats/jobs?days=`.
    StatsJobs,
    /// `GET /stats/usage?days=`.
    StatsUsage,
    /// `POST /alerts`.
    AlertCreate,
    /// `GET /alerts`.
    AlertList,
    /// `PATCH /alerts/{id}`: pause or resume.
    AlertUpdate,
    /// `DELETE /alerts/{id}`.
    AlertDelete,
    /// `POST /signing-secrets`: create or rotate the project's webhook signing secret (Vouch's
    /// path; the job spec names none).
    SigningSecretRotate,
    /// `GET /signing-secrets`: the secrets that sign now, without their values.
    SigningSecretList,
    /// `POST /api-projects/webhooks`: register a webhook endpoint (its secret is shown once).
    WebhookCreate,
    /// `GET /api-projects/webhooks`.
    WebhookList,
    /// `GET /api-projects/webhooks/{id}`.
    WebhookGet,
    /// `DELETE /api-projects/webhooks/{id}`.
    WebhookDelete,
    /// `POST /api-projects/webhooks/{id}/rotate`: a new secret, shown once.
    WebhookRotate,
    /// `GET /api-projects/sessions/{session_id}/sim-swap`: the session's SIM-swap check.
    SimSwapGet,
}

impl Endpoint {
    /// An operation of the job-scheduling spec: its errors are `{"error": {"code", "message"}}`,
    /// any token failure is a 401, and no transaction row is written.
    pub fn is_jobs(self) -> bool {
        matches!(
            self,
            Endpoint::JobCreate
                | Endpoint::JobList
                | Endpoint::JobGet
                | Endpoint::JobCancel
                | Endpoint::JobReplay
                | Endpoint::JobExecutions
                | Endpoint::ScheduleCreate
                | Endpoint::ScheduleList
                | Endpoint::ScheduleDelete
                | Endpoint::StatsJobs
                | Endpoint::StatsUsage
                | Endpoint::AlertCreate
                | Endpoint::AlertList
                | Endpoint::AlertUpdate
                | Endpoint::AlertDelete
                | Endpoint::SigningSecretRotate
                | Endpoint::SigningSecretList
        )
    }

    /// Under `/api-projects`: the project's own settings and results, answered in the
    /// verification spec's error shape, never recorded as transactions.
    pub fn is_project(self) -> bool {
        matches!(
            self,
            Endpoint::WebhookCreate
                | Endpoint::WebhookList
                | Endpoint::WebhookGet
                | Endpoint::WebhookDelete
                | Endpoint::WebhookRotate
                | Endpoint::SimSwapGet
        )
    }

    /// Under `/api-gateway`.
    pub fn is_gateway(self) -> bool {
        !self.is_jobs()
            && !self.is_project()
            && !matches!(
                self,
                Endpoint::AuthorizationConsent
                    | Endpoint::AuthorizationConsentRead
                    | Endpoint::StorageConsent
                    | Endpoint::StorageConsentRead
                    | Endpoint::ConsentStatus
                    | Endpoint::TransactionList
                    | Endpoint::TransactionGet
            )
    }

    /// Needs `X-User-Fullname`: every `/api-gateway` endpoint except session start, avf/infer
    /// (whose own header list in the spec names only `Authorization`; a fullname given is kept)
    /// and the AVF status (a read, like the transaction history).
    pub fn requires_fullname(self) -> bool {
        self.is_gateway()
            && !matches!(
                self,
                Endpoint::SessionStart | Endpoint::AvfInfer | Endpoint::AvfStatus
            )
    }

    /// Answers a missing or invalid API key with 401 (the spec's AVF rule; the job service's too).
    pub fn is_avf(self) -> bool {
        matches!(self, Endpoint::AvfInfer | Endpoint::AvfStatus)
    }

    /// Writes a transaction row (reading history does not).
    pub fn records_transaction(self) -> bool {
        !self.is_jobs()
            && !self.is_project()
            && !matches!(
                self,
                Endpoint::TransactionList
                    | Endpoint::TransactionGet
                    | Endpoint::AvfStatus
                    | Endpoint::AttemptsRead
            )
    }

    /// Short name used in messages, e.g. `process-video`.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::SessionStart => "sessions/start",
            Endpoint::SessionEnd => "sessions/end",
            Endpoint::ProcessVideo => "process-video",
            Endpoint::EnrollFace => "enroll/face",
            Endpoint::EnrollVoice => "enroll/voice",
            Endpoint::DocauthCheck => "docauth/check",
            Endpoint::MatchFaces => "match-faces",
            Endpoint::AvfInfer => "avf/infer",
            Endpoint::AvfStatus => "avf/status",
            Endpoint::AttemptsRead | Endpoint::AttemptsReset => "attempts",
            Endpoint::AuthorizationConsent | Endpoint::AuthorizationConsentRead => "consent",
            Endpoint::StorageConsent | Endpoint::StorageConsentRead => "strg-consent",
            Endpoint::ConsentStatus => "consent status",
            Endpoint::TransactionList | Endpoint::TransactionGet => "transactions",
            Endpoint::JobCreate
            | Endpoint::JobList
            | Endpoint::JobGet
            | Endpoint::JobCancel
            | Endpoint::JobReplay
            | Endpoint::JobExecutions => "jobs",
            Endpoint::ScheduleCreate | Endpoint::ScheduleList | Endpoint::ScheduleDelete => {
                "schedules"
            }
            Endpoint::StatsJobs | Endpoint::StatsUsage => "stats",
            Endpoint::AlertCreate
            | Endpoint::AlertList
            | Endpoint::AlertUpdate
            | Endpoint::AlertDelete => "alerts",
            Endpoint::SigningSecretRotate | Endpoint::SigningSecretList => "signing-secrets",
            Endpoint::WebhookCreate
            | Endpoint::WebhookList
            | Endpoint::WebhookGet
            | Endpoint::WebhookDelete
            | Endpoint::WebhookRotate => "webhooks",
            Endpoint::SimSwapGet => "sim-swap",
        }
    }
}

impl Endpoint {
    /// Every endpoint, in the order of the docs.
    pub const ALL: [Endpoint; 41] = [
        Endpoint::SessionStart,
        Endpoint::SessionEnd,
        Endpoint::ProcessVideo,
        Endpoint::EnrollFace,
        Endpoint::EnrollVoice,
        Endpoint::DocauthCheck,
        Endpoint::MatchFaces,
        Endpoint::AvfInfer,
        Endpoint::AvfStatus,
        Endpoint::AttemptsRead,
        Endpoint::AttemptsReset,
        Endpoint::AuthorizationConsent,
        Endpoint::AuthorizationConsentRead,
        Endpoint::StorageConsent,
        Endpoint::StorageConsentRead,
        Endpoint::ConsentStatus,
        Endpoint::TransactionList,
        Endpoint::TransactionGet,
        Endpoint::JobCreate,
        Endpoint::JobList,
        Endpoint::JobGet,
        Endpoint::JobCancel,
        Endpoint::JobReplay,
        Endpoint::JobExecutions,
        Endpoint::ScheduleCreate,
        Endpoint::ScheduleList,
        Endpoint::ScheduleDelete,
        Endpoint::StatsJobs,
        Endpoint::StatsUsage,
        Endpoint::AlertCreate,
        Endpoint::AlertList,
        Endpoint::AlertUpdate,
        Endpoint::AlertDelete,
        Endpoint::SigningSecretRotate,
        Endpoint::SigningSecretList,
        Endpoint::WebhookCreate,
        Endpoint::WebhookList,
        Endpoint::WebhookGet,
        Endpoint::WebhookDelete,
        Endpoint::WebhookRotate,
        Endpoint::SimSwapGet,
    ];

    /// The endpoint's method and path template (`{name}` where the path names a resource), as
    /// in the OpenAPI document of `vouch serve`; [`route`] maps them back (a test checks it).
    pub fn method_and_path(self) -> (&'static str, &'static str) {
        match self {
            Endpoint::SessionStart => ("POST", "/api-gateway/sessions/start"),
            Endpoint::SessionEnd => ("POST", "/api-gateway/sessions/end/{session_id}"),
            Endpoint::ProcessVideo => ("POST", "/api-gateway/process-video"),
            Endpoint::EnrollFace => ("POST", "/api-gateway/enroll/face"),
            Endpoint::EnrollVoice => ("POST", "/api-gateway/enroll/voice"),
            Endpoint::DocauthCheck => ("POST", "/api-gateway/docauth/check"),
            Endpoint::MatchFaces => ("POST", "/api-gateway/match-faces"),
            Endpoint::AvfInfer => ("POST", "/api-gateway/avf/infer"),
            Endpoint::AvfStatus => ("GET", "/api-gateway/avf/status/{request_id}"),
            Endpoint::AttemptsRead => ("GET", "/api-gateway/attempts"),
            Endpoint::AttemptsReset => ("POST", "/api-gateway/attempts/reset"),
            Endpoint::AuthorizationConsent => ("POST", "/api-consent/consent"),
            Endpoint::AuthorizationConsentRead => ("GET", "/api-consent/consent"),
            Endpoint::StorageConsent => ("POST", "/api-consent/strg-consent"),
            Endpoint::StorageConsentRead => ("GET", "/api-consent/strg-consent"),
            Endpoint::ConsentStatus => ("GET", "/api-consent/status"),
            Endpoint::TransactionList => ("GET", "/api-transactions/transactions"),
            Endpoint::TransactionGet => ("GET", "/api-transactions/transactions/{request_id}"),
            Endpoint::JobCreate => ("POST", "/jobs"),
            Endpoint::JobList => ("GET", "/jobs"),
            Endpoint::JobGet => ("GET", "/jobs/{job_id}"),
            Endpoint::JobCancel => ("DELETE", "/jobs/{job_id}"),
            Endpoint::JobReplay => ("POST", "/jobs/{job_id}/replay"),
            Endpoint::JobExecutions => ("GET", "/jobs/{job_id}/executions"),
            Endpoint::ScheduleCreate => ("POST", "/schedules"),
            Endpoint::ScheduleList => ("GET", "/schedules"),
            Endpoint::ScheduleDelete => ("DELETE", "/schedules/{schedule_id}"),
            Endpoint::StatsJobs => ("GET", "/stats/jobs"),
            Endpoint::StatsUsage => ("GET", "/stats/usage"),
            Endpoint::AlertCreate => ("POST", "/alerts"),
            Endpoint::AlertList => ("GET", "/alerts"),
            Endpoint::AlertUpdate => ("PATCH", "/alerts/{alert_id}"),
            Endpoint::AlertDelete => ("DELETE", "/alerts/{alert_id}"),
            Endpoint::SigningSecretRotate => ("POST", "/signing-secrets"),
            Endpoint::SigningSecretList => ("GET", "/signing-secrets"),
            Endpoint::WebhookCreate => ("POST", "/api-projects/webhooks"),
            Endpoint::WebhookList => ("GET", "/api-projects/webhooks"),
            Endpoint::WebhookGet => ("GET", "/api-projects/webhooks/{webhook_id}"),
            Endpoint::WebhookDelete => ("DELETE", "/api-projects/webhooks/{webhook_id}"),
            Endpoint::WebhookRotate => ("POST", "/api-projects/webhooks/{webhook_id}/rotate"),
            Endpoint::SimSwapGet => ("GET", "/api-projects/sessions/{session_id}/sim-swap"),
        }
    }
}

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
