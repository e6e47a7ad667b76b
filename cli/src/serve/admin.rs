//! Project administration over HTTP for `vouch serve`, under the prefix the verification spec
//! reserves for it (`/api-projects`): API keys (`/api-projects/api-keys`: create, the token shown
//! once; list; revoke), a project's job credits (`/api-projects/credits`: read, set) and its
//! scoring rules (`/api-projects/scoring-rules`, the project's set or a custom `scores_id` set:
//! read, set), what `vouch keys`, `vouch jobs credits` and `vouch rules` do on the device. Guarded
//! by an admin credential that is not a project key: a secret of at least 32 characters read from
//! `--admin-token-file`, sent as `Authorization: Bearer <admin token>`. Without that option the
//! paths answer 403 (administration is off), so a server started without it cannot mint keys.

use serde::Deserialize;
use serde_json::{json, Value};
use vouch::service::keys::NewApiKey;
use vouch::Engine;

/// Shortest admin token accepted.
pub(crate) const MIN_ADMIN_TOKEN_LEN: usize = 32;

/// Body of `POST /api-projects/api-keys`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    project_id: String,
    /// Absent: all five services, as `vouch keys create` gives; `[]`: none (a key for the job
    /// service only).
    #[serde(default)]
    selected_services: Option<Vec<String>>,
    #[serde(default)]
    scores_id: Option<String>,
    #[serde(default)]
    label: Option<String>,
}

/// Body of `PUT /api-projects/credits`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreditsBody {
    balance: i64,
    plan: String,
    #[serde(default)]
    daily_limit: Option<i64>,
}

/// One project-administration operation of `vouch serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admin {
    /// Create an API key.
    Create,
    /// List a project's API keys.
    List,
    /// Revoke an API key.
    Revoke,
    /// Read a project's job credits.
    CreditsRead,
    /// Set a project's job credits.
    CreditsSet,
    /// Read a project's (or a custom set's) scoring rules.
    ScoringRulesRead,
    /// Store a project's (or a custom set's) scoring rules.
    ScoringRulesSet,
}

/// An administration operation, declared once: the router, a 405's `Allow`, which paths are
/// administration at all, and the OpenAPI document read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AdminOperation {
    /// Which operation.
    pub which: Admin,
    /// Its method.
    pub method: &'static str,
    /// Its path, `{key_id}` where a segment names a key.
    pub path: &'static str,
    /// One line for the document.
    pub summary: &'static str,
    /// The operation's id in the document.
    pub operation_id: &'static str,
}

const fn operation(
    which: Admin,
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    operation_id: &'static str,
) -> AdminOperation {
    AdminOperation {
        which,
        method,
        path,
        summary,
        operation_id,
    }
}

/// Every administration operation, in the document's order.
pub(crate) const ADMIN: [AdminOperation; 7] = [
    operation(
        Admin::Create,
        "POST",
        "/api-projects/api-keys",
        "Create an API key (the token is shown once)",
        "ApiKeyCreate",
    ),
    operation(
        Admin::List,
        "GET",
        "/api-projects/api-keys",
        "A project's API keys",
        "ApiKeyList",
    ),
    operation(
        Admin::Revoke,
        "DELETE",
        "/api-projects/api-keys/{key_id}",
        "Revoke an API key",
        "ApiKeyRevoke",
    ),
    operation(
        Admin::CreditsRead,
        "GET",
        "/api-projects/credits",
        "A project's job credits (404 while it is unmetered)",
        "CreditsRead",
    ),
    operation(
        Admin::CreditsSet,
        "PUT",
        "/api-projects/credits",
        "Set a project's job credits: balance, plan, optional daily cap",
        "CreditsSet",
    ),
    operation(
        Admin::ScoringRulesRead,
        "GET",
        "/api-projects/scoring-rules",
        "A project's stored scoring rules, or a custom set's (404 when none is stored)",
        "ScoringRulesRead",
    ),
    operation(
        Admin::ScoringRulesSet,
        "PUT",
        "/api-projects/scoring-rules",
        "Store a project's scoring rules, or a custom set (`vouch rules default` prints the default)",
        "ScoringRulesSet",
    ),
];

/// The operations whose path `path` (without its query) fits, with the key id when the path
/// names one: everything after `/api-projects/api-keys/` (a key minted elsewhere may have any
/// printable id, so the router's identifier rule is not applied here).
fn operations_at(path: &str) -> impl Iterator<Item = (&'static AdminOperation, Option<String>)> {
    let bare = path.trim_end_matches('/').to_owned();
    ADMIN.iter().filter_map(
        move |operation| match operation.path.strip_suffix("{key_id}") {
            Some(prefix) => bare
                .strip_prefix(prefix)
                .filter(|id| !id.is_empty())
                .map(|id| (operation, Some(id.to_owned()))),
            None => (bare == operation.path).then_some((operation, None)),
        },
    )
}

/// Whether `path` (without its query) is one of the administration paths.
pub(crate) fn is_admin_path(path: &str) -> bool {
    operations_at(path).next().is_some()
}

/// The methods `path` answers, for a 405's `Allow`.
pub(crate) fn allowed_methods(path: &str) -> String {
    ["GET", "POST", "PUT", "DELETE"]
        .into_iter()
        .filter(|method| operations_at(path).any(|(operation, _)| operation.method == *method))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads and checks the admin token file.
pub(crate) fn read_token(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("--admin-token-file {}: {error}", path.display()))?;
    let token = text.trim().to_owned();
    if token.len() < MIN_ADMIN_TOKEN_LEN
        || token.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "--admin-token-file {}: the token must be at least {MIN_ADMIN_TOKEN_LEN} characters without spaces",
            path.display()
        ));
    }
    Ok(token)
}

/// Equal in time independent of where the first difference is.
fn same(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |difference, (a, b)| difference | (a ^ b))
            == 0
}

fn error(status: u16, message: &str) -> (u16, Value) {
    (status, json!({ "error": message }))
}

fn status_of(error: &vouch::Error) -> u16 {
    match error {
        vouch::Error::NotFound(_) => 404,
        vouch::Error::InvalidArgument(_) | vouch::Error::RuleSet(_) => 400,
        vouch::Error::Conflict(_) => 409,
        _ => 500,
    }
}

/// The refusal of a request without the admin token: 403 while administration is off, 401 for a
/// missing or wrong token.
fn refusal(admin_token: Option<&str>, authorization: Option<&str>) -> Option<(u16, Value)> {
    let Some(expected) = admin_token else {
        return Some(error(
            403,
            "project administration is off: start vouch serve with --admin-token-file",
        ));
    };
    let given = authorization
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !same(given.as_bytes(), expected.as_bytes()) {
        return Some(error(
            401,
            "project administration needs Authorization: Bearer <admin token>",
        ));
    }
    None
}

/// Answers a key-administration request, or `None` when `path` is not one.
pub(crate) fn answer(
    engine: &Engine,
    admin_token: Option<&str>,
    method: &str,
    path_and_query: &str,
    authorization: Option<&str>,
    body: Option<&[u8]>,
) -> Option<(u16, Value)> {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    if !is_admin_path(path) {
        return None;
    }
    if let Some(refused) = refusal(admin_token, authorization) {
        return Some(refused);
    }
    // Decoded (`%XX`, `+`), so a project id with spaces or non-ASCII letters, as a client
    // encodes it, names the project the key was created for.
    let query_value = |wanted: &str| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value.into_owned())
    };
    let project = query_value("project_id");
    // Credits and scoring rules name their project first, whatever the method.
    let per_project = operations_at(path).any(|(operation, _)| {
        matches!(
            operation.which,
            Admin::CreditsRead
                | Admin::CreditsSet
                | Admin::ScoringRulesRead
                | Admin::ScoringRulesSet
        )
    });
    if per_project && project.is_none() {
        return Some(error(400, "project_id query parameter is required"));
    }
    let Some((operation, id)) =
        operations_at(path).find(|(operation, _)| operation.method == method)
    else {
        return Some(error(
            405,
            &format!("method {method} is not allowed on {path}"),
        ));
    };
    Some(match operation.which {
        Admin::CreditsRead | Admin::CreditsSet => credits(engine, operation.which, project, body),
        Admin::ScoringRulesRead | Admin::ScoringRulesSet => scoring_rules(
            engine,
            operation.which,
            (project, query_value("scores_id")),
            body,
        ),
        Admin::Create => create_key(engine, body),
        Admin::List | Admin::Revoke => list_or_revoke(engine, operation.which, project, id),
    })
}

/// `POST /api-projects/api-keys`: creates a key; the answer holds its token, shown once.
fn create_key(engine: &Engine, body: Option<&[u8]>) -> (u16, Value) {
    let parsed: Result<CreateBody, _> = serde_json::from_slice(body.unwrap_or_default());
    match parsed {
        Err(problem) => error(400, &format!("invalid request body: {problem}")),
        Ok(body) => match engine.api_keys().create(&NewApiKey {
            project_id: body.project_id,
            selected_services: body.selected_services.unwrap_or_else(|| {
                vouch::Service::ALL
                    .iter()
                    .map(|service| service.name().to_owned())
                    .collect()
            }),
            scores_id: body.scores_id,
            label: body.label,
        }) {
            Ok(created) => (
                201,
                json!({ "message": "api key created", "data": created }),
            ),
            Err(problem) => error(status_of(&problem), &problem.to_string()),
        },
    }
}

/// `GET /api-projects/api-keys?project_id=`: the project's keys; `DELETE
/// /api-projects/api-keys/{key_id}?project_id=`: revokes one.
fn list_or_revoke(
    engine: &Engine,
    which: Admin,
    project: Option<String>,
    id: Option<String>,
) -> (u16, Value) {
    let Some(project) = project else {
        return error(400, "project_id query parameter is required");
    };
    if which == Admin::List {
        return match engine.api_keys().list(&project) {
            Ok(keys) => (200, json!({ "message": "ok", "data": keys })),
            Err(problem) => error(status_of(&problem), &problem.to_string()),
        };
    }
    match engine
        .api_keys()
        .revoke(&project, id.as_deref().unwrap_or_default())
    {
        Ok(key) => (200, json!({ "message": "api key revoked", "data": key })),
        Err(problem) => error(status_of(&problem), &problem.to_string()),
    }
}

fn credits_json(credits: &vouch::service::jobs::Credits) -> Value {
    json!({ "balance": credits.balance, "plan": credits.plan, "daily_limit": credits.daily_limit })
}

/// `GET /api-projects/credits?project_id=`: the project's credits (404 while it is unmetered);
/// `PUT` with `{"balance", "plan", "daily_limit"?}` sets them.
fn credits(
    engine: &Engine,
    which: Admin,
    project: Option<String>,
    body: Option<&[u8]>,
) -> (u16, Value) {
    let Some(project) = project else {
        return error(400, "project_id query parameter is required");
    };
    match which {
        Admin::CreditsRead => match engine.billing().get(&project) {
            Ok(Some(credits)) => (
                200,
                json!({ "message": "ok", "data": credits_json(&credits) }),
            ),
            Ok(None) => error(
                404,
                &format!("project {project} is unmetered: no credits were set"),
            ),
            Err(problem) => error(status_of(&problem), &problem.to_string()),
        },
        _ => {
            let parsed: Result<CreditsBody, _> = serde_json::from_slice(body.unwrap_or_default());
            let body = match parsed {
                Ok(body) => body,
                Err(problem) => return error(400, &format!("invalid request body: {problem}")),
            };
            let credits = vouch::service::jobs::Credits {
                balance: body.balance,
                plan: body.plan,
                daily_limit: body.daily_limit,
            };
            match engine.billing().set(&project, &credits) {
                Ok(()) => (
                    200,
                    json!({ "message": "credits set", "data": credits_json(&credits) }),
                ),
                Err(problem) => error(status_of(&problem), &problem.to_string()),
            }
        }
    }
}

/// `GET /api-projects/scoring-rules?project_id=[&scores_id=]`: the stored rule set (404 when
/// none is stored there); `PUT` with a rule set (`vouch rules default` prints one) stores it.
fn scoring_rules(
    engine: &Engine,
    which: Admin,
    (project, scores_id): (Option<String>, Option<String>),
    body: Option<&[u8]>,
) -> (u16, Value) {
    let Some(project) = project else {
        return error(400, "project_id query parameter is required");
    };
    let stored = |json: &str| serde_json::from_str::<Value>(json).unwrap_or(Value::Null);
    match which {
        Admin::ScoringRulesRead => match engine.rules().get(&project, scores_id.as_deref()) {
            Ok(Some(rules)) => (200, json!({ "message": "ok", "data": stored(&rules) })),
            Ok(None) => error(
                404,
                &match &scores_id {
                    Some(id) => format!(
                        "no scoring rules stored for project {project} under scores_id {id}"
                    ),
                    None => format!("no scoring rules stored for project {project}"),
                },
            ),
            Err(problem) => error(status_of(&problem), &problem.to_string()),
        },
        _ => {
            let text = String::from_utf8_lossy(body.unwrap_or_default());
            let rules = match vouch::RuleSet::from_json(&text) {
                Ok(rules) => rules,
                Err(problem) => return error(400, &format!("invalid rule set: {problem}")),
            };
            match engine.rules().set(&project, scores_id.as_deref(), &rules) {
                Ok(()) => (
                    200,
                    json!({ "message": "scoring rules set", "data": stored(&rules.to_json()) }),
                ),
                Err(problem) => error(status_of(&problem), &problem.to_string()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_decides_the_paths_and_their_methods() {
        assert_eq!(allowed_methods("/api-projects/api-keys"), "GET, POST");
        assert_eq!(allowed_methods("/api-projects/api-keys/key_1/"), "DELETE");
        assert_eq!(allowed_methods("/api-projects/credits"), "GET, PUT");
        assert_eq!(allowed_methods("/api-projects/scoring-rules"), "GET, PUT");
        assert!(is_admin_path("/api-projects/api-keys/key_1"));
        // A key minted elsewhere may have any printable id.
        assert!(is_admin_path("/api-projects/api-keys/key.2024"));
        assert!(is_admin_path("/api-projects/api-keys/a/b"));
        assert!(!is_admin_path("/api-projects/api-keys-old"));
        assert!(!is_admin_path("/api-projects/webhooks"));
        for operation in &ADMIN {
            let path = operation.path.replace("{key_id}", "key_1");
            assert!(
                allowed_methods(&path).contains(operation.method),
                "{operation:?}"
            );
        }
    }

    #[test]
    fn the_admin_token_is_compared_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"ab", b"abc"));
        assert!(!same(b"", b"abc"));
    }

    #[test]
    fn the_project_id_in_the_query_is_percent_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
        let options = json!({
            "database": dir.path().join("v.sqlite"),
            "template_key": secret,
            "api_keys": { "hs256_secret": secret },
        });
        let engine = Engine::open_json(&options.to_string()).unwrap();
        let admin = "a".repeat(MIN_ADMIN_TOKEN_LEN);
        let bearer = format!("Bearer {admin}");
        let ask = |method: &str, path: &str, body: Option<&str>| {
            answer(
                &engine,
                Some(&admin),
                method,
                path,
                Some(&bearer),
                body.map(str::as_bytes),
            )
            .unwrap()
        };
        let (status, created) = ask(
            "POST",
            "/api-projects/api-keys",
            Some(r#"{"project_id": "kiosk 3/ü"}"#),
        );
        assert_eq!(status, 201, "{created}");
        let id = created["data"]["id"].as_str().unwrap();
        let (status, listed) = ask(
            "GET",
            "/api-projects/api-keys?project_id=kiosk+3%2F%C3%BC",
            None,
        );
        assert_eq!(status, 200, "{listed}");
        assert_eq!(listed["data"][0]["id"], id);
        let (status, revoked) = ask(
            "DELETE",
            &format!("/api-projects/api-keys/{id}?project_id=kiosk%203%2F%C3%BC"),
            None,
        );
        assert_eq!(status, 200, "{revoked}");
        assert_eq!(revoked["data"]["status"], "revoked");
    }
}
