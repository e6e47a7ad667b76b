//! The endpoint table: one [`Declaration`] per operation of the request surface, and everything
//! that used to be spread over the router, the dispatch, the part rules, the auth rule, the
//! server's size texts and the OpenAPI document derived from it: routing and 405 `Allow`
//! (`route.rs`), the error shape per [`Family`], the status of a rejected key, the
//! `X-User-Fullname` rule, whether a transaction row is written, the body and its limits (which
//! `vouch serve` reads instead of repeating them), the multipart parts by name, and the summary,
//! query parameters and success answers of the document. The handler is named beside it, in its
//! own module's `HANDLERS` list (so that this table, which every endpoint module reads, reads none
//! of them). Adding an endpoint is a variant and a row here, its handler with its line in
//! `HANDLERS`, and its test.

use super::{MAX_AVF_BYTES, MAX_JOB_JSON_BODY_BYTES, MAX_JSON_BODY_BYTES, MAX_MEDIA_BYTES};

/// One operation of the verification spec, the job-scheduling spec, or Vouch's own paths. Each
/// has one row in [`ENDPOINTS`], in this order (a test checks it).
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
    /// `GET /api-gateway/avf/status/{request_id}`
    AvfStatus,
    /// `GET /api-gateway/attempts` (Vouch's path)
    AttemptsRead,
    /// `POST /api-gateway/attempts/reset` (Vouch's path)
    AttemptsReset,
    /// `POST /api-consent/consent`
    AuthorizationConsent,
    /// `GET /api-consent/consent`
    AuthorizationConsentRead,
    /// `POST /api-consent/strg-consent`
    StorageConsent,
    /// `GET /api-consent/strg-consent`
    StorageConsentRead,
    /// `GET /api-consent/status`
    ConsentStatus,
    /// `GET /api-transactions/transactions`
    TransactionList,
    /// `GET /api-transactions/transactions/{request_id}`
    TransactionGet,
    /// `POST /jobs`
    JobCreate,
    /// `GET /jobs`
    JobList,
    /// `GET /jobs/{job_id}`
    JobGet,
    /// `DELETE /jobs/{job_id}`
    JobCancel,
    /// `POST /jobs/{job_id}/replay`
    JobReplay,
    /// `GET /jobs/{job_id}/executions`
    JobExecutions,
    /// `POST /schedules`
    ScheduleCreate,
    /// `GET /schedules`
    ScheduleList,
    /// `DELETE /schedules/{schedule_id}`
    ScheduleDelete,
    /// `GET /stats/jobs`
    StatsJobs,
    /// `GET /stats/usage`
    StatsUsage,
    /// `POST /alerts`
    AlertCreate,
    /// `GET /alerts`
    AlertList,
    /// `PATCH /alerts/{alert_id}`
    AlertUpdate,
    /// `DELETE /alerts/{alert_id}`
    AlertDelete,
    /// `POST /signing-secrets` (Vouch's path)
    SigningSecretRotate,
    /// `GET /signing-secrets` (Vouch's path)
    SigningSecretList,
    /// `POST /api-projects/webhooks` (Vouch's path)
    WebhookCreate,
    /// `GET /api-projects/webhooks`
    WebhookList,
    /// `GET /api-projects/webhooks/{webhook_id}`
    WebhookGet,
    /// `DELETE /api-projects/webhooks/{webhook_id}`
    WebhookDelete,
    /// `POST /api-projects/webhooks/{webhook_id}/rotate`
    WebhookRotate,
    /// `GET /api-projects/sessions/{session_id}/sim-swap`
    SimSwapGet,
}

/// Which service answers an endpoint: its error shape, its tag in the document, and the
/// headers it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `/api-gateway`: sessions, media and the forgery analysis.
    Gateway,
    /// `/api-consent`.
    Consent,
    /// `/api-transactions`: the history, read only.
    Transactions,
    /// `/api-projects`: the project's webhooks and results, answered in the verification
    /// spec's error shape and never recorded.
    Projects,
    /// The job-scheduling spec: errors are `{"error": {"code", "message"}}`, a rejected key is
    /// a 401, and no transaction row is written.
    Jobs,
}

/// Whether an endpoint needs `X-User-Fullname`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fullname {
    /// Not read.
    No,
    /// Required (a 400 without it).
    Required,
    /// Optional; kept and used for the session lock when given (avf/infer, whose header list
    /// in the spec names only `Authorization`).
    Optional,
}

/// What a multipart part holds, checked by content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A text field (at most 4 KiB of UTF-8).
    Text,
    /// `true` or `false`.
    Boolean,
    /// MP4 / MOV / fragmented MP4, WebM / Matroska.
    Video,
    /// WAV, FLAC, OGG, MP4/M4A, WebM (or a video's audio track).
    Audio,
    /// JPEG, PNG or WebP.
    Image,
}

/// Whether a part must be there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Always.
    Required,
    /// Never.
    Optional,
    /// Unless `X-Use-Prefilled-Video: true` (match-faces' `image`).
    UnlessPrefilledVideo,
}

/// One multipart part an endpoint takes.
#[derive(Debug, Clone, Copy)]
pub struct PartSpec {
    /// The form field name.
    pub name: &'static str,
    /// What it holds.
    pub format: Format,
    /// Whether it must be there.
    pub need: Need,
}

/// What an endpoint's body is.
#[derive(Debug, Clone, Copy)]
pub enum Body {
    /// No body is read.
    Empty,
    /// A JSON object of the document's `schema` component, at most `max_bytes` (a 413 past it).
    Json {
        /// Largest body.
        max_bytes: usize,
        /// The document's schema of it (`components/schemas`).
        schema: &'static str,
        /// Whether the body may be left out.
        optional: bool,
    },
    /// `multipart/form-data` with these parts and no others; a file over `max_file_bytes` is
    /// answered with `too_large` (status and message).
    Multipart {
        /// The parts, in the order the document lists them.
        parts: &'static [PartSpec],
        /// Largest file part.
        max_file_bytes: usize,
        /// The answer to a larger one: status and message.
        too_large: (u16, &'static str),
    },
}

/// What a query parameter holds (for the document; handlers check values themselves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// A user identifier.
    Fullname,
    /// Any text.
    Text,
    /// A page size, 1 to 100.
    Limit,
    /// A whole number.
    Integer,
    /// One of these words.
    OneOf(&'static [&'static str]),
}

/// One query parameter an endpoint reads.
#[derive(Debug, Clone, Copy)]
pub struct Query {
    /// Its name.
    pub name: &'static str,
    /// Whether it must be given.
    pub required: bool,
    /// What it holds.
    pub kind: QueryKind,
}

/// One success answer of an endpoint.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// What it is.
    pub description: &'static str,
    /// The body's schema: a component's name, `data:Name` for `{"message", "data": Name}`,
    /// `data[]:Name` for a list in `data`, `page:Name` for the job service's cursor page; `None`
    /// for a 204.
    pub schema: Option<&'static str>,
    /// Response headers it always carries besides `X-Request-Id`.
    pub headers: &'static [&'static str],
}

/// One endpoint, declared once.
#[derive(Clone, Copy)]
pub struct Declaration {
    /// Which endpoint.
    pub endpoint: Endpoint,
    /// Its method.
    pub method: &'static str,
    /// Its path, `{name}` where a path segment names a resource.
    pub path: &'static str,
    /// Its service.
    pub family: Family,
    /// Short name in messages, e.g. `process-video`.
    pub name: &'static str,
    /// One line for the document.
    pub summary: &'static str,
    /// Whether `X-User-Fullname` is needed.
    pub fullname: Fullname,
    /// Whether a transaction row is written (reading history does not).
    pub records: bool,
    /// The status of a well-formed but rejected key (expired, revoked, bad signature): 500 in
    /// the verification spec's table, 401 for the AVF endpoints and the job service. A missing
    /// or malformed `Authorization` is a 401 everywhere.
    pub rejected_key: u16,
    /// Its body.
    pub body: Body,
    /// Its query parameters (any other is a 400).
    pub query: &'static [Query],
    /// Its success answers.
    pub answers: &'static [Answer],
}

impl std::fmt::Debug for Declaration {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Declaration")
            .field("endpoint", &self.endpoint)
            .field("method", &self.method)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

const fn part(name: &'static str, format: Format, need: Need) -> PartSpec {
    PartSpec { name, format, need }
}

const fn media(parts: &'static [PartSpec]) -> Body {
    Body::Multipart {
        parts,
        max_file_bytes: MAX_MEDIA_BYTES,
        too_large: (400, "file size exceeds 50MB"),
    }
}

const fn json(schema: &'static str) -> Body {
    Body::Json {
        max_bytes: MAX_JSON_BODY_BYTES,
        schema,
        optional: false,
    }
}

const fn answer(status: u16, description: &'static str, schema: &'static str) -> Answer {
    Answer {
        status,
        description,
        schema: Some(schema),
        headers: &[],
    }
}

const fn no_content(description: &'static str) -> Answer {
    Answer {
        status: 204,
        description,
        schema: None,
        headers: &[],
    }
}

const fn query(name: &'static str, required: bool, kind: QueryKind) -> Query {
    Query {
        name,
        required,
        kind,
    }
}

const USER: &[Query] = &[query("user_fullname", true, QueryKind::Fullname)];
const PAGE: &[Query] = &[
    query("limit", false, QueryKind::Limit),
    query("cursor", false, QueryKind::Text),
];
const DAYS: &[Query] = &[query("days", false, QueryKind::Integer)];
const ATTEMPTS: Answer = answer(
    200,
    "where the user stands (after a reset: a clean count)",
    "data:AttemptStatus",
);
const JOB_STATUSES: &[&str] = &["scheduled", "pending", "success", "failed", "cancelled"];

/// A row with the defaults of its family; the table overrides what differs.
const fn row(
    endpoint: Endpoint,
    method: &'static str,
    path: &'static str,
    family: Family,
    name: &'static str,
    summary: &'static str,
    answers: &'static [Answer],
) -> Declaration {
    let jobs = matches!(family, Family::Jobs);
    Declaration {
        endpoint,
        method,
        path,
        family,
        name,
        summary,
        fullname: if matches!(family, Family::Gateway) {
            Fullname::Required
        } else {
            Fullname::No
        },
        records: !jobs && !matches!(family, Family::Projects),
        rejected_key: if jobs { 401 } else { 500 },
        body: Body::Empty,
        query: &[],
        answers,
    }
}

use Endpoint as E;
use Family as F;

/// Every endpoint, in the order of [`Endpoint`] and of the docs.
pub const ENDPOINTS: [Declaration; 41] = [
    Declaration {
        fullname: Fullname::No,
        ..row(
            E::SessionStart,
            "POST",
            "/api-gateway/sessions/start",
            F::Gateway,
            "sessions/start",
            "Start a session",
            &[answer(
                200,
                "the session; `data` is its id",
                "data:SessionId",
            )],
        )
    },
    Declaration {
        body: Body::Json {
            max_bytes: MAX_JSON_BODY_BYTES,
            schema: "SessionEndBody",
            optional: true,
        },
        ..row(
            E::SessionEnd,
            "POST",
            "/api-gateway/sessions/end/{session_id}",
            F::Gateway,
            "sessions/end",
            "End a session; a phone number starts a SIM-swap check",
            &[answer(200, "the ended session", "data:Session")],
        )
    },
    Declaration {
        body: media(&[
            part("video", Format::Video, Need::Required),
            part("phrase", Format::Text, Need::Required),
            part("vocabulary", Format::Text, Need::Optional),
            part("trigger", Format::Text, Need::Optional),
            part("language", Format::Text, Need::Optional),
        ]),
        ..row(
            E::ProcessVideo,
            "POST",
            "/api-gateway/process-video",
            F::Gateway,
            "process-video",
            "Verify a selfie video: the key's recognition services and the scoring decision",
            &[Answer {
                headers: &["X-Auto-Enroll", "X-Removed-Services", "Retry-After"],
                ..answer(
                    200,
                    "the services' results and the scoring decision",
                    "VideoVerification",
                )
            }],
        )
    },
    Declaration {
        body: media(&[
            part("face", Format::Image, Need::Required),
            part("is_document", Format::Boolean, Need::Optional),
        ]),
        ..row(
            E::EnrollFace,
            "POST",
            "/api-gateway/enroll/face",
            F::Gateway,
            "enroll/face",
            "Enroll a face (needs both consents)",
            &[answer(200, "the face enrolled", "data:FaceEnrollment")],
        )
    },
    Declaration {
        body: media(&[
            part("voice", Format::Audio, Need::Required),
            part("phrase", Format::Text, Need::Required),
        ]),
        ..row(
            E::EnrollVoice,
            "POST",
            "/api-gateway/enroll/voice",
            F::Gateway,
            "enroll/voice",
            "Enroll a voice (needs both consents)",
            &[answer(200, "the voice enrolled", "data:VoiceEnrollment")],
        )
    },
    Declaration {
        body: media(&[part("document", Format::Image, Need::Required)]),
        ..row(
            E::DocauthCheck,
            "POST",
            "/api-gateway/docauth/check",
            F::Gateway,
            "docauth/check",
            "Read a document's machine-readable zone",
            &[answer(200, "the document's fields", "data:Document")],
        )
    },
    Declaration {
        body: media(&[
            part("image", Format::Image, Need::UnlessPrefilledVideo),
            part("video", Format::Video, Need::Optional),
            part("live_image", Format::Image, Need::Optional),
        ]),
        ..row(
            E::MatchFaces,
            "POST",
            "/api-gateway/match-faces",
            F::Gateway,
            "match-faces",
            "Match a document photo against the session's live face",
            &[answer(200, "the comparison", "data:FaceMatch")],
        )
    },
    Declaration {
        fullname: Fullname::Optional,
        rejected_key: 401,
        body: Body::Multipart {
            parts: &[part("file", Format::Video, Need::Required)],
            max_file_bytes: MAX_AVF_BYTES,
            too_large: (413, "file size exceeds 100MB"),
        },
        ..row(
            E::AvfInfer,
            "POST",
            "/api-gateway/avf/infer",
            F::Gateway,
            "avf/infer",
            "Store a video for forgery analysis (202 at once; the pump analyses it)",
            &[answer(
                202,
                "the video is stored for analysis; the result slots are null until the status \
                 endpoint reports `completed`",
                "AvfRecord",
            )],
        )
    },
    Declaration {
        fullname: Fullname::No,
        records: false,
        rejected_key: 401,
        ..row(
            E::AvfStatus,
            "GET",
            "/api-gateway/avf/status/{request_id}",
            F::Gateway,
            "avf/status",
            "Where a forgery analysis stands, and its verdict",
            &[answer(
                200,
                "where the analysis stands and, once completed, its verdict",
                "AvfRecord",
            )],
        )
    },
    Declaration {
        records: false,
        ..row(
            E::AttemptsRead,
            "GET",
            "/api-gateway/attempts",
            F::Gateway,
            "attempts",
            "Where the user stands against the attempt limit",
            &[ATTEMPTS],
        )
    },
    row(
        E::AttemptsReset,
        "POST",
        "/api-gateway/attempts/reset",
        F::Gateway,
        "attempts",
        "Clear the user's failed attempts, wait and disabling (after another factor)",
        &[ATTEMPTS],
    ),
    Declaration {
        body: json("ConsentBody"),
        ..row(
            E::AuthorizationConsent,
            "POST",
            "/api-consent/consent",
            F::Consent,
            "consent",
            "Give or withdraw authorization consent",
            &[answer(
                200,
                "the consent now; withdrawing storage consent adds `templates_deleted`",
                "data:ConsentChange",
            )],
        )
    },
    Declaration {
        query: USER,
        ..row(
            E::AuthorizationConsentRead,
            "GET",
            "/api-consent/consent",
            F::Consent,
            "consent",
            "Read authorization consent",
            &[answer(200, "the consent", "data:ConsentOfUser")],
        )
    },
    Declaration {
        body: json("ConsentBody"),
        ..row(
            E::StorageConsent,
            "POST",
            "/api-consent/strg-consent",
            F::Consent,
            "strg-consent",
            "Give or withdraw storage consent",
            &[answer(
                200,
                "the consent now; withdrawing storage consent adds `templates_deleted`",
                "data:ConsentChange",
            )],
        )
    },
    Declaration {
        query: USER,
        ..row(
            E::StorageConsentRead,
            "GET",
            "/api-consent/strg-consent",
            F::Consent,
            "strg-consent",
            "Read storage consent",
            &[answer(200, "the consent", "data:ConsentOfUser")],
        )
    },
    Declaration {
        query: USER,
        ..row(
            E::ConsentStatus,
            "GET",
            "/api-consent/status",
            F::Consent,
            "consent status",
            "Read both consents",
            &[answer(200, "both consents", "data:ConsentStatus")],
        )
    },
    Declaration {
        records: false,
        query: &[
            query("limit", false, QueryKind::Limit),
            query("cursor", false, QueryKind::Text),
            // Filters: any text (one that names no user finds nothing).
            query("user_fullname", false, QueryKind::Text),
            query("session_id", false, QueryKind::Text),
        ],
        ..row(
            E::TransactionList,
            "GET",
            "/api-transactions/transactions",
            F::Transactions,
            "transactions",
            "A page of the project's transactions",
            &[answer(
                200,
                "a page of transactions, newest first",
                "TransactionPage",
            )],
        )
    },
    Declaration {
        records: false,
        ..row(
            E::TransactionGet,
            "GET",
            "/api-transactions/transactions/{request_id}",
            F::Transactions,
            "transactions",
            "One transaction",
            &[answer(200, "the transaction", "data:Transaction")],
        )
    },
    Declaration {
        body: Body::Json {
            max_bytes: MAX_JOB_JSON_BODY_BYTES,
            schema: "JobCreateBody",
            optional: false,
        },
        ..row(
            E::JobCreate,
            "POST",
            "/jobs",
            F::Jobs,
            "jobs",
            "Create a job",
            &[
                answer(201, "the new job", "Job"),
                answer(
                    200,
                    "the job created before with the same idempotency key and request",
                    "Job",
                ),
            ],
        )
    },
    Declaration {
        query: &[
            query("limit", false, QueryKind::Limit),
            query("cursor", false, QueryKind::Text),
            query("status", false, QueryKind::OneOf(JOB_STATUSES)),
        ],
        ..row(
            E::JobList,
            "GET",
            "/jobs",
            F::Jobs,
            "jobs",
            "A page of the project's jobs",
            &[answer(200, "a page of jobs, newest first", "page:Job")],
        )
    },
    row(
        E::JobGet,
        "GET",
        "/jobs/{job_id}",
        F::Jobs,
        "jobs",
        "One job",
        &[answer(200, "the job", "Job")],
    ),
    row(
        E::JobCancel,
        "DELETE",
        "/jobs/{job_id}",
        F::Jobs,
        "jobs",
        "Cancel a job before its first attempt",
        &[answer(200, "the cancelled job", "Job")],
    ),
    row(
        E::JobReplay,
        "POST",
        "/jobs/{job_id}/replay",
        F::Jobs,
        "jobs",
        "Replay a failed job",
        &[answer(201, "the pending clone", "Job")],
    ),
    row(
        E::JobExecutions,
        "GET",
        "/jobs/{job_id}/executions",
        F::Jobs,
        "jobs",
        "A job's execution attempts",
        &[answer(200, "the attempts, first first", "Executions")],
    ),
    Declaration {
        body: Body::Json {
            max_bytes: MAX_JOB_JSON_BODY_BYTES,
            schema: "ScheduleCreateBody",
            optional: false,
        },
        ..row(
            E::ScheduleCreate,
            "POST",
            "/schedules",
            F::Jobs,
            "schedules",
            "Create a cron schedule",
            &[answer(201, "the new schedule", "Schedule")],
        )
    },
    Declaration {
        query: PAGE,
        ..row(
            E::ScheduleList,
            "GET",
            "/schedules",
            F::Jobs,
            "schedules",
            "A page of the project's schedules",
            &[answer(
                200,
                "a page of active schedules, newest first",
                "page:Schedule",
            )],
        )
    },
    row(
        E::ScheduleDelete,
        "DELETE",
        "/schedules/{schedule_id}",
        F::Jobs,
        "schedules",
        "Delete a schedule",
        &[answer(200, "the schedule, now deleted", "Schedule")],
    ),
    Declaration {
        query: DAYS,
        ..row(
            E::StatsJobs,
            "GET",
            "/stats/jobs",
            F::Jobs,
            "stats",
            "Execution statistics",
            &[answer(200, "the statistics", "JobStats")],
        )
    },
    Declaration {
        query: DAYS,
        ..row(
            E::StatsUsage,
            "GET",
            "/stats/usage",
            F::Jobs,
            "stats",
            "Executions per day and credits",
            &[answer(200, "the usage", "Usage")],
        )
    },
    Declaration {
        body: json("AlertCreateBody"),
        ..row(
            E::AlertCreate,
            "POST",
            "/alerts",
            F::Jobs,
            "alerts",
            "Create an alert channel",
            &[answer(201, "the new channel", "AlertChannel")],
        )
    },
    row(
        E::AlertList,
        "GET",
        "/alerts",
        F::Jobs,
        "alerts",
        "The project's alert channels",
        &[answer(200, "the channels, oldest first", "AlertChannels")],
    ),
    Declaration {
        body: json("AlertUpdateBody"),
        ..row(
            E::AlertUpdate,
            "PATCH",
            "/alerts/{alert_id}",
            F::Jobs,
            "alerts",
            "Pause or resume an alert channel",
            &[no_content("updated")],
        )
    },
    row(
        E::AlertDelete,
        "DELETE",
        "/alerts/{alert_id}",
        F::Jobs,
        "alerts",
        "Delete an alert channel",
        &[no_content("deleted")],
    ),
    row(
        E::SigningSecretRotate,
        "POST",
        "/signing-secrets",
        F::Jobs,
        "signing-secrets",
        "Create or rotate the project's job-delivery signing secret",
        &[answer(
            201,
            "the new secret, shown only here",
            "CreatedSigningSecret",
        )],
    ),
    row(
        E::SigningSecretList,
        "GET",
        "/signing-secrets",
        F::Jobs,
        "signing-secrets",
        "The signing secrets in use",
        &[answer(
            200,
            "the secrets that sign now, newest first, without their values",
            "SigningSecrets",
        )],
    ),
    Declaration {
        body: json("WebhookCreateBody"),
        ..row(
            E::WebhookCreate,
            "POST",
            "/api-projects/webhooks",
            F::Projects,
            "webhooks",
            "Register a webhook endpoint for verification events",
            &[answer(
                201,
                "the endpoint and its secret, shown only here",
                "data:CreatedWebhook",
            )],
        )
    },
    row(
        E::WebhookList,
        "GET",
        "/api-projects/webhooks",
        F::Projects,
        "webhooks",
        "The project's webhook endpoints",
        &[answer(
            200,
            "the endpoints, oldest first, without secrets",
            "data[]:WebhookEndpoint",
        )],
    ),
    row(
        E::WebhookGet,
        "GET",
        "/api-projects/webhooks/{webhook_id}",
        F::Projects,
        "webhooks",
        "One webhook endpoint",
        &[answer(
            200,
            "the endpoint and the secrets that sign now (without their values)",
            "data:WebhookWithSecrets",
        )],
    ),
    row(
        E::WebhookDelete,
        "DELETE",
        "/api-projects/webhooks/{webhook_id}",
        F::Projects,
        "webhooks",
        "Delete a webhook endpoint",
        &[answer(
            200,
            "the id of the deleted endpoint",
            "data:DeletedId",
        )],
    ),
    row(
        E::WebhookRotate,
        "POST",
        "/api-projects/webhooks/{webhook_id}/rotate",
        F::Projects,
        "webhooks",
        "Rotate a webhook endpoint's secret",
        &[answer(
            200,
            "the new secret, shown only here",
            "data:RotatedWebhookSecret",
        )],
    ),
    row(
        E::SimSwapGet,
        "GET",
        "/api-projects/sessions/{session_id}/sim-swap",
        F::Projects,
        "sim-swap",
        "A session's SIM-swap check",
        &[answer(
            200,
            "the session's SIM-swap check",
            "data:SimSwapCheck",
        )],
    ),
];

impl Endpoint {
    /// Every endpoint, in the order of the table.
    pub const ALL: [Endpoint; ENDPOINTS.len()] = {
        let mut all = [Endpoint::SessionStart; ENDPOINTS.len()];
        let mut index = 0;
        while index < ENDPOINTS.len() {
            all[index] = ENDPOINTS[index].endpoint;
            index += 1;
        }
        all
    };

    /// The endpoint's row of [`ENDPOINTS`].
    pub fn declaration(self) -> &'static Declaration {
        // The table is in the enum's order (a test checks it).
        &ENDPOINTS[self as usize]
    }

    /// Its service.
    pub fn family(self) -> Family {
        self.declaration().family
    }

    /// An operation of the job-scheduling spec.
    pub fn is_jobs(self) -> bool {
        self.family() == Family::Jobs
    }

    /// Needs `X-User-Fullname`.
    pub fn requires_fullname(self) -> bool {
        self.declaration().fullname == Fullname::Required
    }

    /// Writes a transaction row.
    pub fn records_transaction(self) -> bool {
        self.declaration().records
    }

    /// Short name used in messages, e.g. `process-video`.
    pub fn name(self) -> &'static str {
        self.declaration().name
    }

    /// The endpoint's method and path template (`{name}` where the path names a resource).
    pub fn method_and_path(self) -> (&'static str, &'static str) {
        let declaration = self.declaration();
        (declaration.method, declaration.path)
    }

    /// The largest JSON body it reads ([`MAX_JSON_BODY_BYTES`] when it reads none).
    pub fn json_body_limit(self) -> usize {
        match self.declaration().body {
            Body::Json { max_bytes, .. } => max_bytes,
            _ => MAX_JSON_BODY_BYTES,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_enum_s_order_and_names_each_endpoint_once() {
        for (index, declaration) in ENDPOINTS.iter().enumerate() {
            assert_eq!(declaration.endpoint as usize, index, "{declaration:?}");
        }
        let mut routes = std::collections::HashSet::new();
        for declaration in &ENDPOINTS {
            assert!(
                routes.insert((declaration.method, declaration.path)),
                "{declaration:?} twice"
            );
            assert!(!declaration.answers.is_empty(), "{declaration:?}");
        }
    }

    #[test]
    fn the_families_keep_their_rules() {
        assert!(!Endpoint::SessionStart.requires_fullname());
        assert!(!Endpoint::AvfInfer.requires_fullname());
        assert!(!Endpoint::AvfStatus.requires_fullname());
        for endpoint in [
            Endpoint::ProcessVideo,
            Endpoint::SessionEnd,
            Endpoint::MatchFaces,
            Endpoint::AttemptsReset,
        ] {
            assert!(endpoint.requires_fullname(), "{endpoint:?}");
        }
        assert!(!Endpoint::AuthorizationConsent.requires_fullname());
        for endpoint in Endpoint::ALL {
            let declaration = endpoint.declaration();
            if declaration.family == Family::Jobs {
                assert!(!declaration.records && declaration.rejected_key == 401);
            }
            if declaration.family == Family::Projects {
                assert!(!declaration.records);
            }
        }
        assert_eq!(
            Endpoint::JobCreate.json_body_limit(),
            MAX_JOB_JSON_BODY_BYTES
        );
        assert_eq!(Endpoint::AlertUpdate.json_body_limit(), MAX_JSON_BODY_BYTES);
    }
}
