//! Schema migrations, applied in order by `PRAGMA user_version`. A migration is never edited once
//! released; a change of schema is a new entry at the end of [`MIGRATIONS`].

use rusqlite::Connection;

use super::sqlite as storage;
use crate::error::{Error, Result};

/// Each entry moves the schema from version `index` to `index + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: the foundation's tables.
    r#"
    CREATE TABLE projects (
        id          TEXT PRIMARY KEY,
        created_at  INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE api_keys (
        id                 TEXT PRIMARY KEY,
        project_id         TEXT NOT NULL REFERENCES projects(id),
        selected_services  TEXT NOT NULL,
        scores_id          TEXT,
        label              TEXT,
        origin             TEXT NOT NULL CHECK (origin IN ('created', 'seen')),
        created_at         INTEGER NOT NULL,
        revoked_at         INTEGER
    ) STRICT;
    CREATE INDEX api_keys_by_project ON api_keys(project_id, created_at);

    CREATE TABLE users (
        id          INTEGER PRIMARY KEY,
        project_id  TEXT NOT NULL REFERENCES projects(id),
        fullname    TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        UNIQUE (project_id, fullname)
    ) STRICT;

    CREATE TABLE consents (
        user_id       INTEGER NOT NULL REFERENCES users(id),
        kind          TEXT NOT NULL CHECK (kind IN ('authorization', 'storage')),
        given         INTEGER NOT NULL CHECK (given IN (0, 1)),
        given_at      INTEGER,
        withdrawn_at  INTEGER,
        updated_at    INTEGER NOT NULL,
        PRIMARY KEY (user_id, kind)
    ) STRICT;

    CREATE TABLE templates (
        id              INTEGER PRIMARY KEY,
        user_id         INTEGER NOT NULL REFERENCES users(id),
        modality        TEXT NOT NULL CHECK (modality IN ('face', 'voice')),
        model_id        TEXT NOT NULL,
        model_version   INTEGER NOT NULL,
        format_version  INTEGER NOT NULL,
        sealed          BLOB NOT NULL,
        created_at      INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX templates_by_user ON templates(user_id, modality);

    CREATE TABLE sessions (
        id             TEXT PRIMARY KEY,
        project_id     TEXT NOT NULL REFERENCES projects(id),
        key_id         TEXT NOT NULL,
        user_fullname  TEXT,
        started_at     INTEGER NOT NULL,
        ended_at       INTEGER
    ) STRICT;

    CREATE TABLE sim_swap_checks (
        session_id    TEXT PRIMARY KEY REFERENCES sessions(id),
        project_id    TEXT NOT NULL REFERENCES projects(id),
        phone_number  TEXT NOT NULL,
        status        TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        requested_at  INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE transactions (
        id              INTEGER PRIMARY KEY,
        request_id      TEXT NOT NULL UNIQUE,
        project_id      TEXT NOT NULL REFERENCES projects(id),
        key_id          TEXT NOT NULL,
        method          TEXT NOT NULL,
        endpoint        TEXT NOT NULL,
        status_code     INTEGER NOT NULL,
        user_fullname   TEXT,
        session_id      TEXT,
        action_trigger  TEXT,
        device_info     TEXT,
        geo_location    TEXT,
        request_tags    TEXT NOT NULL,
        result          TEXT,
        created_at      INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX transactions_by_project ON transactions(project_id, id);

    CREATE TABLE scoring_rule_sets (
        project_id  TEXT NOT NULL REFERENCES projects(id),
        scores_id   TEXT NOT NULL,
        rules       TEXT NOT NULL,
        updated_at  INTEGER NOT NULL,
        PRIMARY KEY (project_id, scores_id)
    ) STRICT;
    "#,
    // 2: faces kept with a session for match-faces (issue 6 and 7): the live faces of the session's
    // process-video and the portrait of its docauth/check, sealed like templates, deleted when the
    // session ends.
    r#"
    CREATE TABLE session_faces (
        id              INTEGER PRIMARY KEY,
        session_id      TEXT NOT NULL REFERENCES sessions(id),
        source          TEXT NOT NULL CHECK (source IN ('video', 'document')),
        model_id        TEXT NOT NULL,
        model_version   INTEGER NOT NULL,
        format_version  INTEGER NOT NULL,
        sealed          BLOB NOT NULL,
        created_at      INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX session_faces_by_session ON session_faces(session_id, source);
    "#,
    // 3: a key-check value (issue 16): a known text sealed with the template key, so that an engine
    // opened with another key fails at open instead of enrolling templates nobody can read.
    r#"
    CREATE TABLE key_check (
        id              INTEGER PRIMARY KEY CHECK (id = 1),
        format_version  INTEGER NOT NULL,
        sealed          BLOB NOT NULL
    ) STRICT;
    "#,
    // 4: the job-scheduling service (issue 17): jobs, one row per execution attempt, and each
    // project's credits. `seq` orders pages; `request_hash` makes an idempotency key answer the
    // same body with the same job.
    r#"
    CREATE TABLE jobs (
        seq              INTEGER PRIMARY KEY,
        id               TEXT NOT NULL UNIQUE,
        project_id       TEXT NOT NULL REFERENCES projects(id),
        url              TEXT NOT NULL,
        http_method      TEXT NOT NULL,
        headers          TEXT NOT NULL,
        body             TEXT,
        scheduled_at     INTEGER NOT NULL,
        max_retries      INTEGER NOT NULL,
        idempotency_key  TEXT,
        request_hash     TEXT,
        webhook_url      TEXT,
        webhook_headers  TEXT,
        status           TEXT NOT NULL
                         CHECK (status IN ('scheduled', 'pending', 'success', 'failed', 'cancelled')),
        attempts         INTEGER NOT NULL DEFAULT 0,
        next_attempt_at  INTEGER NOT NULL,
        lease_until      INTEGER,
        replay_of        TEXT,
        created_at       INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX jobs_by_project ON jobs(project_id, seq);
    CREATE INDEX jobs_due ON jobs(status, next_attempt_at);
    CREATE UNIQUE INDEX jobs_by_idempotency_key ON jobs(project_id, idempotency_key)
        WHERE idempotency_key IS NOT NULL;

    CREATE TABLE job_executions (
        seq          INTEGER PRIMARY KEY,
        id           TEXT NOT NULL UNIQUE,
        job_id       TEXT NOT NULL REFERENCES jobs(id),
        project_id   TEXT NOT NULL REFERENCES projects(id),
        attempt_num  INTEGER NOT NULL,
        status       TEXT NOT NULL,
        status_code  INTEGER,
        error        TEXT,
        duration_ms  INTEGER,
        executed_at  INTEGER NOT NULL,
        UNIQUE (job_id, attempt_num)
    ) STRICT;
    CREATE INDEX job_executions_by_project ON job_executions(project_id, executed_at);

    CREATE TABLE credits (
        project_id   TEXT PRIMARY KEY REFERENCES projects(id),
        balance      INTEGER NOT NULL,
        plan         TEXT NOT NULL,
        daily_limit  INTEGER,
        updated_at   INTEGER NOT NULL
    ) STRICT;
    "#,
    // 5: cron schedules (issue 17). A spawned job names its schedule and slot (the occurrence it
    // runs for); UNIQUE(schedule_id, slot) makes a slot spawn at most one job, even across crashes.
    r#"
    CREATE TABLE schedules (
        seq              INTEGER PRIMARY KEY,
        id               TEXT NOT NULL UNIQUE,
        project_id       TEXT NOT NULL REFERENCES projects(id),
        url              TEXT NOT NULL,
        http_method      TEXT NOT NULL,
        cron             TEXT NOT NULL,
        headers          TEXT NOT NULL,
        body             TEXT,
        max_retries      INTEGER NOT NULL,
        webhook_url      TEXT,
        webhook_headers  TEXT,
        status           TEXT NOT NULL CHECK (status IN ('active', 'deleted')),
        next_run_at      INTEGER,
        created_at       INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX schedules_by_project ON schedules(project_id, seq);
    CREATE INDEX schedules_due ON schedules(status, next_run_at);
    ALTER TABLE jobs ADD COLUMN schedule_id TEXT;
    ALTER TABLE jobs ADD COLUMN slot INTEGER;
    CREATE UNIQUE INDEX jobs_by_schedule_slot ON jobs(schedule_id, slot)
        WHERE schedule_id IS NOT NULL;
    "#,
    // 6: alert channels (issue 17), notified when a job exhausts its retries.
    r#"
    CREATE TABLE alert_channels (
        seq         INTEGER PRIMARY KEY,
        id          TEXT NOT NULL UNIQUE,
        project_id  TEXT NOT NULL REFERENCES projects(id),
        type        TEXT NOT NULL CHECK (type IN ('webhook', 'slack')),
        target      TEXT NOT NULL,
        name        TEXT,
        enabled     INTEGER NOT NULL,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX alert_channels_by_project ON alert_channels(project_id, seq);
    "#,
    // 7: the outbox (issue 17): deliveries a request decided on (the webhook of a cancelled job)
    // wait here, written in the same transaction, until the next pump sends them.
    r#"
    CREATE TABLE outbox (
        seq            INTEGER PRIMARY KEY,
        project_id     TEXT NOT NULL REFERENCES projects(id),
        url            TEXT NOT NULL,
        headers        TEXT NOT NULL,
        body           TEXT NOT NULL,
        timeout_ms     INTEGER NOT NULL,
        created_at     INTEGER NOT NULL,
        claimed_until  INTEGER
    ) STRICT;
    "#,
    // 8: a covering index for the stats (issue 17): the window's attempts are read from the index
    // alone, without touching the table's rows.
    r#"
    DROP INDEX job_executions_by_project;
    CREATE INDEX job_executions_stats
        ON job_executions(project_id, executed_at, status, duration_ms);
    "#,
    // 9: webhook signing secrets (Standard Webhooks), sealed like templates (issue 17).
    r#"
    CREATE TABLE signing_secrets (
        id             TEXT PRIMARY KEY,
        project_id     TEXT NOT NULL REFERENCES projects(id),
        sealed         BLOB NOT NULL,
        format_version INTEGER NOT NULL,
        created_at     INTEGER NOT NULL,
        expires_at     INTEGER
    ) STRICT;
    CREATE INDEX signing_secrets_by_project ON signing_secrets(project_id, created_at);
    "#,
    // 10: the verification service's outbound events (issue 17). Webhook endpoints with their own
    // signing secrets (`owner` names the endpoint; '' is the project's job-delivery secret); event
    // deliveries and SIM-swap checks ride the job engine as jobs of another `kind`, hidden from
    // `/jobs`, never charged and left out of the stats (`billable` = 0 on their attempts). A
    // SIM-swap check keeps its result, not the phone number (the check's job carries the number
    // until the provider answered, then forgets it). Checks queued before a provider could be
    // configured become `unavailable`.
    r#"
    ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'call'
        CHECK (kind IN ('call', 'event', 'sim_swap'));
    ALTER TABLE jobs ADD COLUMN subject TEXT;
    CREATE INDEX jobs_by_subject ON jobs(subject) WHERE subject IS NOT NULL;
    CREATE INDEX jobs_internal_due ON jobs(status, next_attempt_at) WHERE kind != 'call';
    ALTER TABLE job_executions ADD COLUMN billable INTEGER NOT NULL DEFAULT 1;
    DROP INDEX job_executions_stats;
    CREATE INDEX job_executions_stats
        ON job_executions(project_id, billable, executed_at, status, duration_ms);
    ALTER TABLE signing_secrets ADD COLUMN owner TEXT NOT NULL DEFAULT '';

    CREATE TABLE webhook_endpoints (
        seq          INTEGER PRIMARY KEY,
        id           TEXT NOT NULL UNIQUE,
        project_id   TEXT NOT NULL REFERENCES projects(id),
        url          TEXT NOT NULL,
        events       TEXT NOT NULL,
        description  TEXT,
        created_at   INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX webhook_endpoints_by_project ON webhook_endpoints(project_id, seq);

    CREATE TABLE sim_swap_results (
        session_id    TEXT PRIMARY KEY REFERENCES sessions(id),
        project_id    TEXT NOT NULL REFERENCES projects(id),
        status        TEXT NOT NULL
                      CHECK (status IN ('pending', 'completed', 'failed', 'unavailable')),
        swapped       INTEGER CHECK (swapped IN (0, 1)),
        detail        TEXT,
        job_id        TEXT,
        requested_at  INTEGER NOT NULL,
        completed_at  INTEGER
    ) STRICT;
    INSERT INTO sim_swap_results (session_id, project_id, status, detail, requested_at, completed_at)
        SELECT session_id, project_id, 'unavailable',
               'requested before this engine could reach a SIM-swap provider',
               requested_at, requested_at
        FROM sim_swap_checks;
    DROP TABLE sim_swap_checks;
    "#,
    // 11: asynchronous video-forgery analysis (issue 19). The upload is sealed with the template
    // key until the analysis ends, then set to NULL; a record keeps the verdict, no media.
    r#"
    CREATE TABLE avf_requests (
        id               TEXT PRIMARY KEY,
        project_id       TEXT NOT NULL REFERENCES projects(id),
        user_fullname    TEXT,
        session_id       TEXT,
        source_filename  TEXT NOT NULL,
        status           TEXT NOT NULL
                         CHECK (status IN ('pending', 'processing', 'completed', 'failed')),
        upload           BLOB,
        upload_bytes     INTEGER NOT NULL,
        attempts         INTEGER NOT NULL DEFAULT 0,
        lease_until      INTEGER,
        result           TEXT,
        error            TEXT,
        received_at      INTEGER NOT NULL,
        started_at       INTEGER,
        completed_at     INTEGER
    ) STRICT;
    CREATE INDEX avf_requests_due ON avf_requests(status, received_at);
    CREATE INDEX avf_requests_by_user ON avf_requests(project_id, user_fullname);
    "#,
    // 12: attempt limits (issue 36, NIST SP 800-63B §5.2.3). Consecutive failed decisions per
    // user, the wait they earned or the disabling, and an audit row for every hold, disabling and
    // reset. An attempt is counted when it starts and given back when it errs or succeeds, so
    // parallel calls cannot race past the limit.
    r#"
    CREATE TABLE attempt_counters (
        user_id     INTEGER PRIMARY KEY REFERENCES users(id),
        failures    INTEGER NOT NULL CHECK (failures >= 0),
        held_until  INTEGER,
        disabled    INTEGER NOT NULL CHECK (disabled IN (0, 1)),
        updated_at  INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE attempt_events (
        id          INTEGER PRIMARY KEY,
        user_id     INTEGER NOT NULL REFERENCES users(id),
        event       TEXT NOT NULL CHECK (event IN ('hold', 'disable', 'reset')),
        failures    INTEGER NOT NULL,
        held_until  INTEGER,
        created_at  INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX attempt_events_by_user ON attempt_events(user_id, id);
    "#,
    // 13: what every pump reads, in the order it reads it (issue 41): the free waiting jobs by
    // when they are due, the engine's own ones apart (the claims' looks and the next wake stop at
    // their first rows instead of sorting every waiting job, in flight or not; they replace the
    // indexes by status, which nothing else read), and the held jobs by when their hold runs out
    // (lease recovery).
    PUMP_INDEXES,
];

/// Migration 13, the same on both backends.
/// The indexes it replaces go last: on PostgreSQL a `DROP INDEX` holds the table from every
/// reader until the migration commits, so the builds run before it.
const PUMP_INDEXES: &str = r#"
    CREATE INDEX jobs_free_due ON jobs(next_attempt_at, seq)
        WHERE status IN ('scheduled', 'pending') AND lease_until IS NULL;
    CREATE INDEX jobs_internal_free_due ON jobs(next_attempt_at, seq)
        WHERE kind != 'call' AND status IN ('scheduled', 'pending') AND lease_until IS NULL;
    CREATE INDEX jobs_by_lease ON jobs(lease_until) WHERE lease_until IS NOT NULL;
    DROP INDEX jobs_due;
    DROP INDEX jobs_internal_due;
"#;

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// PostgreSQL's migrations, by the schema version each brings the database to (the same numbers
/// as SQLite's). PostgreSQL support began at version 12, so its first entry is the whole schema of
/// version 12: the tables and indexes SQLite has after its first twelve. Columns are `BIGINT`,
/// `DOUBLE PRECISION`, `TEXT` and `BYTEA`, the store's four value types; flags stay 0/1
/// integers so that both backends read the same rows. A later change of schema is one entry here
/// and one in [`MIGRATIONS`].
#[cfg(feature = "postgres")]
const POSTGRES_MIGRATIONS: &[(u32, &str)] = &[
    (
        12,
        r#"
    CREATE TABLE projects (
        id          TEXT PRIMARY KEY,
        created_at  BIGINT NOT NULL
    );

    CREATE TABLE api_keys (
        id                 TEXT PRIMARY KEY,
        project_id         TEXT NOT NULL REFERENCES projects(id),
        selected_services  TEXT NOT NULL,
        scores_id          TEXT,
        label              TEXT,
        origin             TEXT NOT NULL CHECK (origin IN ('created', 'seen')),
        created_at         BIGINT NOT NULL,
        revoked_at         BIGINT
    );
    CREATE INDEX api_keys_by_project ON api_keys(project_id, created_at);

    CREATE TABLE users (
        id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        project_id  TEXT NOT NULL REFERENCES projects(id),
        fullname    TEXT NOT NULL,
        created_at  BIGINT NOT NULL,
        UNIQUE (project_id, fullname)
    );

    CREATE TABLE consents (
        user_id       BIGINT NOT NULL REFERENCES users(id),
        kind          TEXT NOT NULL CHECK (kind IN ('authorization', 'storage')),
        given         BIGINT NOT NULL CHECK (given IN (0, 1)),
        given_at      BIGINT,
        withdrawn_at  BIGINT,
        updated_at    BIGINT NOT NULL,
        PRIMARY KEY (user_id, kind)
    );

    CREATE TABLE templates (
        id              BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        user_id         BIGINT NOT NULL REFERENCES users(id),
        modality        TEXT NOT NULL CHECK (modality IN ('face', 'voice')),
        model_id        TEXT NOT NULL,
        model_version   BIGINT NOT NULL,
        format_version  BIGINT NOT NULL,
        sealed          BYTEA NOT NULL,
        created_at      BIGINT NOT NULL
    );
    CREATE INDEX templates_by_user ON templates(user_id, modality);

    CREATE TABLE sessions (
        id             TEXT PRIMARY KEY,
        project_id     TEXT NOT NULL REFERENCES projects(id),
        key_id         TEXT NOT NULL,
        user_fullname  TEXT,
        started_at     BIGINT NOT NULL,
        ended_at       BIGINT
    );

    CREATE TABLE transactions (
        id              BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        request_id      TEXT NOT NULL UNIQUE,
        project_id      TEXT NOT NULL REFERENCES projects(id),
        key_id          TEXT NOT NULL,
        method          TEXT NOT NULL,
        endpoint        TEXT NOT NULL,
        status_code     BIGINT NOT NULL,
        user_fullname   TEXT,
        session_id      TEXT,
        action_trigger  TEXT,
        device_info     TEXT,
        geo_location    TEXT,
        request_tags    TEXT NOT NULL,
        result          TEXT,
        created_at      BIGINT NOT NULL
    );
    CREATE INDEX transactions_by_project ON transactions(project_id, id);

    CREATE TABLE scoring_rule_sets (
        project_id  TEXT NOT NULL REFERENCES projects(id),
        scores_id   TEXT NOT NULL,
        rules       TEXT NOT NULL,
        updated_at  BIGINT NOT NULL,
        PRIMARY KEY (project_id, scores_id)
    );

    CREATE TABLE session_faces (
        id              BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        session_id      TEXT NOT NULL REFERENCES sessions(id),
        source          TEXT NOT NULL CHECK (source IN ('video', 'document')),
        model_id        TEXT NOT NULL,
        model_version   BIGINT NOT NULL,
        format_version  BIGINT NOT NULL,
        sealed          BYTEA NOT NULL,
        created_at      BIGINT NOT NULL
    );
    CREATE INDEX session_faces_by_session ON session_faces(session_id, source);

    CREATE TABLE key_check (
        id              BIGINT PRIMARY KEY CHECK (id = 1),
        format_version  BIGINT NOT NULL,
        sealed          BYTEA NOT NULL
    );

    CREATE TABLE jobs (
        seq              BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        id               TEXT NOT NULL UNIQUE,
        project_id       TEXT NOT NULL REFERENCES projects(id),
        url              TEXT NOT NULL,
        http_method      TEXT NOT NULL,
        headers          TEXT NOT NULL,
        body             TEXT,
        scheduled_at     BIGINT NOT NULL,
        max_retries      BIGINT NOT NULL,
        idempotency_key  TEXT,
        request_hash     TEXT,
        webhook_url      TEXT,
        webhook_headers  TEXT,
        status           TEXT NOT NULL
                         CHECK (status IN ('scheduled', 'pending', 'success', 'failed', 'cancelled')),
        attempts         BIGINT NOT NULL DEFAULT 0,
        next_attempt_at  BIGINT NOT NULL,
        lease_until      BIGINT,
        replay_of        TEXT,
        created_at       BIGINT NOT NULL,
        updated_at       BIGINT NOT NULL,
        schedule_id      TEXT,
        slot             BIGINT,
        kind             TEXT NOT NULL DEFAULT 'call' CHECK (kind IN ('call', 'event', 'sim_swap')),
        subject          TEXT
    );
    CREATE INDEX jobs_by_project ON jobs(project_id, seq);
    CREATE INDEX jobs_due ON jobs(status, next_attempt_at);
    CREATE UNIQUE INDEX jobs_by_idempotency_key ON jobs(project_id, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    CREATE UNIQUE INDEX jobs_by_schedule_slot ON jobs(schedule_id, slot)
        WHERE schedule_id IS NOT NULL;
    CREATE INDEX jobs_by_subject ON jobs(subject) WHERE subject IS NOT NULL;
    CREATE INDEX jobs_internal_due ON jobs(status, next_attempt_at) WHERE kind != 'call';

    CREATE TABLE job_executions (
        seq          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        id           TEXT NOT NULL UNIQUE,
        job_id       TEXT NOT NULL REFERENCES jobs(id),
        project_id   TEXT NOT NULL REFERENCES projects(id),
        attempt_num  BIGINT NOT NULL,
        status       TEXT NOT NULL,
        status_code  BIGINT,
        error        TEXT,
        duration_ms  BIGINT,
        executed_at  BIGINT NOT NULL,
        billable     BIGINT NOT NULL DEFAULT 1,
        UNIQUE (job_id, attempt_num)
    );
    CREATE INDEX job_executions_stats
        ON job_executions(project_id, billable, executed_at, status, duration_ms);

    CREATE TABLE credits (
        project_id   TEXT PRIMARY KEY REFERENCES projects(id),
        balance      BIGINT NOT NULL,
        plan         TEXT NOT NULL,
        daily_limit  BIGINT,
        updated_at   BIGINT NOT NULL
    );

    CREATE TABLE schedules (
        seq              BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        id               TEXT NOT NULL UNIQUE,
        project_id       TEXT NOT NULL REFERENCES projects(id),
        url              TEXT NOT NULL,
        http_method      TEXT NOT NULL,
        cron             TEXT NOT NULL,
        headers          TEXT NOT NULL,
        body             TEXT,
        max_retries      BIGINT NOT NULL,
        webhook_url      TEXT,
        webhook_headers  TEXT,
        status           TEXT NOT NULL CHECK (status IN ('active', 'deleted')),
        next_run_at      BIGINT,
        created_at       BIGINT NOT NULL,
        updated_at       BIGINT NOT NULL
    );
    CREATE INDEX schedules_by_project ON schedules(project_id, seq);
    CREATE INDEX schedules_due ON schedules(status, next_run_at);

    CREATE TABLE alert_channels (
        seq         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        id          TEXT NOT NULL UNIQUE,
        project_id  TEXT NOT NULL REFERENCES projects(id),
        type        TEXT NOT NULL CHECK (type IN ('webhook', 'slack')),
        target      TEXT NOT NULL,
        name        TEXT,
        enabled     BIGINT NOT NULL,
        created_at  BIGINT NOT NULL,
        updated_at  BIGINT NOT NULL
    );
    CREATE INDEX alert_channels_by_project ON alert_channels(project_id, seq);

    CREATE TABLE outbox (
        seq            BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        project_id     TEXT NOT NULL REFERENCES projects(id),
        url            TEXT NOT NULL,
        headers        TEXT NOT NULL,
        body           TEXT NOT NULL,
        timeout_ms     BIGINT NOT NULL,
        created_at     BIGINT NOT NULL,
        claimed_until  BIGINT
    );

    CREATE TABLE signing_secrets (
        id             TEXT PRIMARY KEY,
        project_id     TEXT NOT NULL REFERENCES projects(id),
        sealed         BYTEA NOT NULL,
        format_version BIGINT NOT NULL,
        created_at     BIGINT NOT NULL,
        expires_at     BIGINT,
        owner          TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX signing_secrets_by_project ON signing_secrets(project_id, created_at);

    CREATE TABLE webhook_endpoints (
        seq          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        id           TEXT NOT NULL UNIQUE,
        project_id   TEXT NOT NULL REFERENCES projects(id),
        url          TEXT NOT NULL,
        events       TEXT NOT NULL,
        description  TEXT,
        created_at   BIGINT NOT NULL,
        updated_at   BIGINT NOT NULL
    );
    CREATE INDEX webhook_endpoints_by_project ON webhook_endpoints(project_id, seq);

    CREATE TABLE sim_swap_results (
        session_id    TEXT PRIMARY KEY REFERENCES sessions(id),
        project_id    TEXT NOT NULL REFERENCES projects(id),
        status        TEXT NOT NULL
                      CHECK (status IN ('pending', 'completed', 'failed', 'unavailable')),
        swapped       BIGINT CHECK (swapped IN (0, 1)),
        detail        TEXT,
        job_id        TEXT,
        requested_at  BIGINT NOT NULL,
        completed_at  BIGINT
    );

    CREATE TABLE avf_requests (
        id               TEXT PRIMARY KEY,
        project_id       TEXT NOT NULL REFERENCES projects(id),
        user_fullname    TEXT,
        session_id       TEXT,
        source_filename  TEXT NOT NULL,
        status           TEXT NOT NULL
                         CHECK (status IN ('pending', 'processing', 'completed', 'failed')),
        upload           BYTEA,
        upload_bytes     BIGINT NOT NULL,
        attempts         BIGINT NOT NULL DEFAULT 0,
        lease_until      BIGINT,
        result           TEXT,
        error            TEXT,
        received_at      BIGINT NOT NULL,
        started_at       BIGINT,
        completed_at     BIGINT
    );
    CREATE INDEX avf_requests_due ON avf_requests(status, received_at);
    CREATE INDEX avf_requests_by_user ON avf_requests(project_id, user_fullname);

    CREATE TABLE attempt_counters (
        user_id     BIGINT PRIMARY KEY REFERENCES users(id),
        failures    BIGINT NOT NULL CHECK (failures >= 0),
        held_until  BIGINT,
        disabled    BIGINT NOT NULL CHECK (disabled IN (0, 1)),
        updated_at  BIGINT NOT NULL
    );

    CREATE TABLE attempt_events (
        id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        user_id     BIGINT NOT NULL REFERENCES users(id),
        event       TEXT NOT NULL CHECK (event IN ('hold', 'disable', 'reset')),
        failures    BIGINT NOT NULL,
        held_until  BIGINT,
        created_at  BIGINT NOT NULL
    );
    CREATE INDEX attempt_events_by_user ON attempt_events(user_id, id);
    "#,
    ),
    (13, PUMP_INDEXES),
];

/// A number for PostgreSQL's advisory lock that serialises migrations across servers starting at
/// once ("vouch" in ASCII).
#[cfg(feature = "postgres")]
const MIGRATION_LOCK: i64 = 0x0076_6f75_6368;

/// Brings a PostgreSQL database up to [`SCHEMA_VERSION`]: every missing migration and its row in
/// `vouch_schema` in one transaction (PostgreSQL's DDL is transactional, so a half-applied
/// migration cannot exist), behind an advisory lock so servers starting together apply it once.
#[cfg(feature = "postgres")]
pub(super) fn migrate_postgres(
    connection: &std::cell::RefCell<super::postgres::PgConn>,
) -> Result<()> {
    use super::sql::{params, Conn};
    let conn = Conn::postgres(connection);
    conn.execute_batch("BEGIN")?;
    let outcome = (|| -> Result<()> {
        conn.query_row(
            "SELECT 1 FROM (SELECT pg_advisory_xact_lock(?1)) AS locked",
            params![MIGRATION_LOCK],
            |_| Ok(()),
        )?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS vouch_schema (
                 version     BIGINT PRIMARY KEY,
                 applied_at  BIGINT NOT NULL
             )",
        )?;
        let current: i64 = conn.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM vouch_schema",
            params![],
            |row| row.get(0),
        )?;
        if current > i64::from(SCHEMA_VERSION) {
            return Err(Error::Storage(format!(
                "database schema version {current} is newer than this library supports ({SCHEMA_VERSION}); upgrade the library"
            )));
        }
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis() as i64);
        for (version, sql) in POSTGRES_MIGRATIONS {
            if i64::from(*version) <= current {
                continue;
            }
            conn.execute_batch(sql)?;
            conn.execute(
                "INSERT INTO vouch_schema (version, applied_at) VALUES (?1, ?2)",
                params![*version, now_ms],
            )?;
        }
        Ok(())
    })();
    match outcome {
        Ok(()) => Ok(conn.execute_batch("COMMIT")?),
        Err(error) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(error)
        }
    }
}

/// The version a PostgreSQL database's schema is at.
#[cfg(feature = "postgres")]
pub(super) fn postgres_version(
    connection: &std::cell::RefCell<super::postgres::PgConn>,
) -> Result<u32> {
    use super::sql::{params, Conn};
    let version: i64 = Conn::postgres(connection).query_row(
        "SELECT COALESCE(MAX(version), 0) FROM vouch_schema",
        params![],
        |row| row.get(0),
    )?;
    u32::try_from(version).map_err(|_| Error::Storage(format!("schema version {version}")))
}

/// Applies every migration the database has not seen, each in its own immediate transaction;
/// returns whether any was applied.
pub(super) fn migrate(connection: &mut Connection) -> Result<bool> {
    let current: u32 = connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(storage)?;
    if current > SCHEMA_VERSION {
        return Err(Error::Storage(format!(
            "database schema version {current} is newer than this library supports ({SCHEMA_VERSION}); upgrade the library"
        )));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let transaction = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(storage)?;
        transaction.execute_batch(sql).map_err(storage)?;
        transaction
            .pragma_update(None, "user_version", index as u32 + 1)
            .map_err(storage)?;
        transaction.commit().map_err(storage)?;
    }
    Ok(current < SCHEMA_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_ends_at_the_same_version() {
        assert_eq!(
            POSTGRES_MIGRATIONS.last().map(|(v, _)| *v),
            Some(SCHEMA_VERSION)
        );
    }

    /// A database written by schema 9 keeps its jobs and secrets through migration 10: jobs
    /// become `call`s, attempts stay billable, the project's secret keeps signing, and a SIM-swap
    /// check left `pending` (nothing could send it) becomes `unavailable`, its number dropped.
    #[test]
    fn version_9_data_survives_migration_10() {
        let mut connection = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..9] {
            connection.execute_batch(sql).unwrap();
        }
        connection
            .execute_batch(
                "PRAGMA user_version = 9;
                 INSERT INTO projects VALUES ('p1', 0);
                 INSERT INTO sessions VALUES ('sess_1', 'p1', 'k1', 'alice', 0, 5);
                 INSERT INTO sim_swap_checks VALUES ('sess_1', 'p1', '+4915112345678', 'pending', 5);
                 INSERT INTO jobs (id, project_id, url, http_method, headers, scheduled_at,
                     max_retries, status, next_attempt_at, created_at, updated_at)
                     VALUES ('job_1', 'p1', 'https://a.example/', 'POST', '{}', 0, 0, 'success', 0, 0, 0);
                 INSERT INTO job_executions (id, job_id, project_id, attempt_num, status, executed_at)
                     VALUES ('exec_1', 'job_1', 'p1', 1, 'success', 0);
                 INSERT INTO signing_secrets VALUES ('whk_1', 'p1', x'00', 1, 0, NULL);",
            )
            .unwrap();
        migrate(&mut connection).unwrap();
        let text =
            |sql: &str| -> String { connection.query_row(sql, [], |row| row.get(0)).unwrap() };
        let number =
            |sql: &str| -> i64 { connection.query_row(sql, [], |row| row.get(0)).unwrap() };
        assert_eq!(number("PRAGMA user_version"), i64::from(SCHEMA_VERSION));
        assert_eq!(text("SELECT kind FROM jobs"), "call");
        assert_eq!(number("SELECT billable FROM job_executions"), 1);
        assert_eq!(text("SELECT owner FROM signing_secrets"), "");
        assert_eq!(text("SELECT status FROM sim_swap_results"), "unavailable");
        assert_eq!(number("SELECT completed_at FROM sim_swap_results"), 5);
        assert_eq!(
            number("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sim_swap_checks'"),
            0
        );
    }
}
