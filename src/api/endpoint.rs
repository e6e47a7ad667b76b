//! [`Endpoint`]: every operation the request surface knows, with what each one needs (its
//! family's error shape, whether it is recorded, its method and path for the OpenAPI document).

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
