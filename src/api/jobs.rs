//! The job-scheduling spec's `/jobs` and `/schedules` endpoints (`docs/jobs.md`): jobs are
//! created, listed, read, cancelled, replayed and their executions read; schedules are created,
//! listed and deleted; `/stats/jobs` and `/stats/usage` report executions; `/alerts` manages
//! alert channels. Errors are `{"error": {"code", "message"}}` (`handle.rs` shapes them).

use serde_json::{json, Value};

use super::call::{Call, Handler, Reply};
use super::endpoint::Endpoint;
use super::error::ApiError;
use super::transactions::{encode_cursor, page};
use crate::clock::format_timestamp;
use crate::service::alerts::{AlertChannel, NewAlertChannel};
use crate::service::jobs::{
    ExecutionRecord, Job, JobRecord, JobStatus, NewJob, DEFAULT_STATS_DAYS, MAX_STATS_DAYS,
};
use crate::service::schedules::{NewSchedule, ScheduleRecord};
use crate::service::signing::SigningSecretInfo;

const LIST_PARAMETERS: &[&str] = &["limit", "cursor", "status"];

/// The job object: the create fields, `status`, `created_at`, `replay_of` on replay clones, and
/// `execution_count` when known.
fn job_json(job: &JobRecord, executions: Option<u32>) -> Value {
    let mut value = json!({
        "id": job.id,
        "url": job.url,
        "http_method": job.http_method,
        "scheduled_at": format_timestamp(job.scheduled_at),
        "headers": job.headers,
        "body": job.body,
        "max_retries": job.max_retries,
        "idempotency_key": job.idempotency_key,
        "webhook_url": job.webhook_url,
        "webhook_headers": job.webhook_headers,
        "status": job.status.as_str(),
        "created_at": format_timestamp(job.created_at),
        "updated_at": format_timestamp(job.updated_at),
    });
    if let Some(source) = &job.replay_of {
        value["replay_of"] = json!(source);
    }
    if let Some(count) = executions {
        value["execution_count"] = json!(count);
    }
    value
}

fn execution_json(execution: &ExecutionRecord) -> Value {
    json!({
        "id": execution.id,
        "attempt_num": execution.attempt_num,
        "status": execution.status,
        "status_code": execution.status_code,
        "error": execution.error,
        "duration_ms": execution.duration_ms,
        "executed_at": format_timestamp(execution.executed_at),
    })
}

/// The id in the path (a job, schedule or alert channel).
fn path_id(call: &Call<'_>) -> String {
    call.path_id.clone().unwrap_or_default()
}

fn created(body: Value) -> Reply {
    Reply {
        status: 201,
        ..Reply::ok(body)
    }
}

/// `POST /jobs`: 201 with the new job; 200 with the original job when the idempotency key was
/// used before with the same request.
pub(super) fn create(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let new_job: NewJob = call.json_body("a job")?.ok_or_else(|| {
        ApiError::bad_request("a JSON body with url and scheduled_at is required")
    })?;
    let (job, is_new) = call
        .engine
        .project(&call.key)
        .jobs()
        .create(&new_job)
        .map_err(|error| call.error(error))?;
    let body = job_json(&job.record, Some(job.executions));
    Ok(if is_new {
        created(body)
    } else {
        Reply::ok(body)
    })
}

/// `GET /jobs?status=&limit=&cursor=`: `{"data": [jobs], "next_cursor": "..." | null}`.
pub(super) fn list(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let (limit, before) = page(call, LIST_PARAMETERS)?;
    let status = call
        .query_value(LIST_PARAMETERS, "status")?
        .map(|text| {
            JobStatus::parse(text).ok_or_else(|| {
                ApiError::bad_request(
                    "status must be one of scheduled, pending, success, failed, cancelled",
                )
            })
        })
        .transpose()?;
    let page = call
        .engine
        .project(&call.key)
        .jobs()
        .list(status, before, limit)
        .map_err(|error| call.error(error))?;
    let data: Vec<Value> = page
        .jobs
        .iter()
        .map(|(job, executions)| job_json(job, Some(*executions)))
        .collect();
    Ok(Reply::ok(json!({
        "data": data,
        "next_cursor": page.next_before.map(encode_cursor),
    })))
}

/// `GET /jobs/{id}`: the job with its `execution_count`.
pub(super) fn get(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let Job { record, executions } = call
        .engine
        .project(&call.key)
        .jobs()
        .get(&path_id(call))
        .map_err(|error| call.error(error))?;
    Ok(Reply::ok(job_json(&record, Some(executions))))
}

/// `DELETE /jobs/{id}`: 200 with the cancelled job; 404 when absent, 409 once it has fired.
pub(super) fn cancel(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let job = call
        .engine
        .project(&call.key)
        .jobs()
        .cancel(&path_id(call))
        .map_err(|error| call.error(error))?;
    Ok(Reply::ok(job_json(&job, None)))
}

/// `POST /jobs/{id}/replay`: 201 with the `pending` clone; 409 unless the job failed.
pub(super) fn replay(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let clone = call
        .engine
        .project(&call.key)
        .jobs()
        .replay(&path_id(call))
        .map_err(|error| call.error(error))?;
    Ok(created(job_json(&clone, Some(0))))
}

/// `GET /jobs/{id}/executions`: `{"executions": [...]}`, first attempt first.
pub(super) fn executions(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let executions = call
        .engine
        .project(&call.key)
        .jobs()
        .executions(&path_id(call))
        .map_err(|error| call.error(error))?;
    let data: Vec<Value> = executions.iter().map(execution_json).collect();
    Ok(Reply::ok(json!({ "executions": data })))
}

/// The schedule object: the create fields, `status` (`active`, or `deleted` in a delete's
/// answer), `created_at` and `next_run_at` (null once deleted).
fn schedule_json(schedule: &ScheduleRecord) -> Value {
    json!({
        "id": schedule.id,
        "url": schedule.url,
        "http_method": schedule.http_method,
        "cron": schedule.cron,
        "headers": schedule.headers,
        "body": schedule.body,
        "max_retries": schedule.max_retries,
        "webhook_url": schedule.webhook_url,
        "webhook_headers": schedule.webhook_headers,
        "status": if schedule.active { "active" } else { "deleted" },
        "created_at": format_timestamp(schedule.created_at),
        "next_run_at": schedule.next_run_at.map(format_timestamp),
    })
}

/// `POST /schedules`: 201 with the schedule and its `next_run_at`.
pub(super) fn create_schedule(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let new_schedule: NewSchedule = call
        .json_body("a schedule")?
        .ok_or_else(|| ApiError::bad_request("a JSON body with url and cron is required"))?;
    let schedule = call
        .engine
        .project(&call.key)
        .schedules()
        .create(&new_schedule)
        .map_err(|error| call.error(error))?;
    Ok(created(schedule_json(&schedule)))
}

/// `GET /schedules?limit=&cursor=`: `{"data": [schedules], "next_cursor": "..." | null}`.
pub(super) fn list_schedules(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let (limit, before) = page(call, &["limit", "cursor"])?;
    let page = call
        .engine
        .project(&call.key)
        .schedules()
        .list(before, limit)
        .map_err(|error| call.error(error))?;
    let data: Vec<Value> = page.schedules.iter().map(schedule_json).collect();
    Ok(Reply::ok(json!({
        "data": data,
        "next_cursor": page.next_before.map(encode_cursor),
    })))
}

/// `DELETE /schedules/{id}`: 200 with the schedule, now `deleted`; 404 when absent.
pub(super) fn delete_schedule(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let schedule = call
        .engine
        .project(&call.key)
        .schedules()
        .delete(&path_id(call))
        .map_err(|error| call.error(error))?;
    Ok(Reply::ok(schedule_json(&schedule)))
}

/// The `days` query parameter: default 30, clamped to 1..365; not an integer is a 400.
fn stats_days(call: &Call<'_>) -> Result<u32, ApiError> {
    match call.query_value(&["days"], "days")? {
        None => Ok(DEFAULT_STATS_DAYS),
        Some(text) => text
            .parse::<i64>()
            .map(|days| days.clamp(1, i64::from(MAX_STATS_DAYS)) as u32)
            .map_err(|_| ApiError::bad_request("days must be an integer")),
    }
}

/// `GET /stats/jobs?days=`: the project's execution attempts over the window.
pub(super) fn stats(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let days = stats_days(call)?;
    let stats = call
        .engine
        .project(&call.key)
        .jobs()
        .stats(days)
        .map_err(|error| call.error(error))?;
    let rate = if stats.total == 0 {
        0.0
    } else {
        stats.succeeded as f64 / stats.total as f64
    };
    Ok(Reply::ok(json!({
        "total_executions": stats.total,
        "succeeded": stats.succeeded,
        "failed": stats.failed,
        "success_rate": (rate * 1e4).round() / 1e4,
        "avg_duration_ms": (stats.avg_duration_ms * 10.0).round() / 10.0,
        "p95_duration_ms": stats.p95_duration_ms,
        "since_days": days,
    })))
}

/// `GET /stats/usage?days=`: attempts per UTC day (every day of the window, oldest first),
/// totals, and the credits (`balance` null and `plan` `unmetered` when none were set).
pub(super) fn usage(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let days = stats_days(call)?;
    let usage = call
        .engine
        .project(&call.key)
        .jobs()
        .usage(days)
        .map_err(|error| call.error(error))?;
    let buckets: Vec<Value> = usage
        .days
        .iter()
        .map(|(day, count)| {
            json!({
                "date": &format_timestamp(*day)[..10],
                "job_executions": count,
                "buffer_executions": 0,
            })
        })
        .collect();
    let total: u64 = usage.days.iter().map(|(_, count)| count).sum();
    Ok(Reply::ok(json!({
        "buckets": buckets,
        "total_job_executions": total,
        "total_buffer_executions": 0,
        "balance": usage.credits.as_ref().map(|credits| credits.balance),
        "plan": usage.credits.as_ref().map_or("unmetered", |credits| credits.plan.as_str()),
        "since_days": days,
    })))
}

fn alert_json(channel: &AlertChannel) -> Value {
    json!({
        "id": channel.id,
        "type": channel.kind,
        "target": channel.target,
        "name": channel.name,
        "enabled": channel.enabled,
        "created_at": format_timestamp(channel.created_at),
        "updated_at": format_timestamp(channel.updated_at),
    })
}

fn no_content() -> Reply {
    Reply {
        status: 204,
        ..Reply::ok(Value::Null)
    }
}

/// `POST /alerts`: 201 with the channel, enabled.
pub(super) fn create_alert(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let new_channel: NewAlertChannel = call
        .json_body("an alert channel")?
        .ok_or_else(|| ApiError::bad_request("a JSON body with type and target is required"))?;
    let channel = call
        .engine
        .project(&call.key)
        .alerts()
        .create(&new_channel)
        .map_err(|error| call.error(error))?;
    Ok(created(alert_json(&channel)))
}

/// `GET /alerts`: `{"channels": [...]}`, oldest first.
pub(super) fn list_alerts(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let channels = call
        .engine
        .project(&call.key)
        .alerts()
        .list()
        .map_err(|error| call.error(error))?;
    let data: Vec<Value> = channels.iter().map(alert_json).collect();
    Ok(Reply::ok(json!({ "channels": data })))
}

/// `POST /signing-secrets`: 201 with `id`, `secret` (shown only here), `created_at` and
/// `previous_expires_at` (when the secrets it replaced stop signing, or null).
pub(super) fn rotate_signing_secret(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let secret = call
        .engine
        .project(&call.key)
        .signing_secrets()
        .rotate()
        .map_err(|error| call.error(error))?;
    Ok(created(json!({
        "id": secret.id,
        "secret": secret.secret,
        "created_at": format_timestamp(secret.created_at),
        "previous_expires_at": secret.previous_expire_at.map(format_timestamp),
    })))
}

/// `GET /signing-secrets`: `{"secrets": [{"id", "created_at", "expires_at"}]}`, newest first,
/// never the values.
pub(super) fn list_signing_secrets(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let secrets = call
        .engine
        .project(&call.key)
        .signing_secrets()
        .list()
        .map_err(|error| call.error(error))?;
    let data: Vec<Value> = secrets.iter().map(secret_info_json).collect();
    Ok(Reply::ok(json!({ "secrets": data })))
}

/// A signing secret in use, without its value: `{"id", "created_at", "expires_at"}`.
pub(super) fn secret_info_json(secret: &SigningSecretInfo) -> Value {
    json!({
        "id": secret.id,
        "created_at": format_timestamp(secret.created_at),
        "expires_at": secret.expires_at.map(format_timestamp),
    })
}

/// The body of `PATCH /alerts/{id}`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AlertUpdate {
    enabled: bool,
}

/// `PATCH /alerts/{id}` with `{"enabled": bool}`: 204.
pub(super) fn update_alert(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let update: AlertUpdate = call
        .json_body("{\"enabled\": true or false}")?
        .ok_or_else(|| ApiError::bad_request("a JSON body {\"enabled\": bool} is required"))?;
    call.engine
        .project(&call.key)
        .alerts()
        .set_enabled(&path_id(call), update.enabled)
        .map_err(|error| call.error(error))?;
    Ok(no_content())
}

/// `DELETE /alerts/{id}`: 204.
pub(super) fn delete_alert(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    call.engine
        .project(&call.key)
        .alerts()
        .delete(&path_id(call))
        .map_err(|error| call.error(error))?;
    Ok(no_content())
}

/// The endpoints this module answers, and how (read by the dispatch in `handle.rs`).
pub(super) const HANDLERS: &[(Endpoint, Handler)] = &[
    (Endpoint::JobCreate, create),
    (Endpoint::JobList, list),
    (Endpoint::JobGet, get),
    (Endpoint::JobCancel, cancel),
    (Endpoint::JobReplay, replay),
    (Endpoint::JobExecutions, executions),
    (Endpoint::ScheduleCreate, create_schedule),
    (Endpoint::ScheduleList, list_schedules),
    (Endpoint::ScheduleDelete, delete_schedule),
    (Endpoint::StatsJobs, stats),
    (Endpoint::StatsUsage, usage),
    (Endpoint::AlertCreate, create_alert),
    (Endpoint::AlertList, list_alerts),
    (Endpoint::AlertUpdate, update_alert),
    (Endpoint::AlertDelete, delete_alert),
    (Endpoint::SigningSecretRotate, rotate_signing_secret),
    (Endpoint::SigningSecretList, list_signing_secrets),
];
