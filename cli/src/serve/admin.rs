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

/// The administration paths, by their first segment after `/api-projects/`.
const RESOURCES: [&str; 3] = ["api-keys", "credits", "scoring-rules"];

/// Whether `path` (without its query) is one of the administration paths.
pub(crate) fn is_admin_path(path: &str) -> bool {
    let bare = path.trim_end_matches('/');
    RESOURCES.iter().any(|resource| {
        bare.strip_prefix("/api-projects/")
            .and_then(|rest| rest.strip_prefix(resource))
            .is_some_and(|rest| {
                rest.is_empty() || (*resource == "api-keys" && rest.starts_with('/'))
            })
    })
}

/// The methods `path` answers, for a 405's `Allow`.
pub(crate) fn allowed_methods(path: &str) -> &'static str {
    let bare = path.trim_end_matches('/');
    if bare == "/api-projects/api-keys" {
        "GET, POST"
    } else if bare.starts_with("/api-projects/api-keys/") {
        "DELETE"
    } else {
        "GET, PUT"
    }
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
    // Decoded (`%XX`, `+`), so a project id with spaces or non-ASCII letters, as a client
    // encodes it, names the project the key was created for.
    let query_value = |wanted: &str| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(name, _)| name == wanted)
            .map(|(_, value)| value.into_owned())
    };
    let project = query_value("project_id");
    let bare = path.trim_end_matches('/');
    if bare == "/api-projects/credits" {
        return Some(credits(engine, method, path, project, body));
    }
    if bare == "/api-projects/scoring-rules" {
        let scores_id = query_value("scores_id");
        return Some(scoring_rules(
            engine,
            method,
            path,
            (project, scores_id),
            body,
        ));
    }
    let rest = path
        .strip_prefix("/api-projects/api-keys")
        .unwrap_or_default();
    let id = rest.strip_prefix('/').filter(|id| !id.is_empty());
    Some(match (method, id) {
        ("POST", None) => {
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
        ("GET", None) => match project {
            None => error(400, "project_id query parameter is required"),
            Some(project) => match engine.api_keys().list(&project) {
                Ok(keys) => (200, json!({ "message": "ok", "data": keys })),
                Err(problem) => error(status_of(&problem), &problem.to_string()),
            },
        },
        ("DELETE", Some(id)) => match project {
            None => error(400, "project_id query parameter is required"),
            Some(project) => match engine.api_keys().revoke(&project, id) {
                Ok(key) => (200, json!({ "message": "api key revoked", "data": key })),
                Err(problem) => error(status_of(&problem), &problem.to_string()),
            },
        },
        _ => error(405, &format!("method {method} is not allowed on {path}")),
    })
}

fn credits_json(credits: &vouch::service::jobs::Credits) -> Value {
    json!({ "balance": credits.balance, "plan": credits.plan, "daily_limit": credits.daily_limit })
}

/// `GET /api-projects/credits?project_id=`: the project's credits (404 while it is unmetered);
/// `PUT` with `{"balance", "plan", "daily_limit"?}` sets them.
fn credits(
    engine: &Engine,
    method: &str,
    path: &str,
    project: Option<String>,
    body: Option<&[u8]>,
) -> (u16, Value) {
    let Some(project) = project else {
        return error(400, "project_id query parameter is required");
    };
    match method {
        "GET" => match engine.billing().get(&project) {
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
        "PUT" => {
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
        _ => error(405, &format!("method {method} is not allowed on {path}")),
    }
}

/// `GET /api-projects/scoring-rules?project_id=[&scores_id=]`: the stored rule set (404 when
/// none is stored there); `PUT` with a rule set (`vouch rules default` prints one) stores it.
fn scoring_rules(
    engine: &Engine,
    method: &str,
    path: &str,
    (project, scores_id): (Option<String>, Option<String>),
    body: Option<&[u8]>,
) -> (u16, Value) {
    let Some(project) = project else {
        return error(400, "project_id query parameter is required");
    };
    let stored = |json: &str| serde_json::from_str::<Value>(json).unwrap_or(Value::Null);
    match method {
        "GET" => match engine.rules().get(&project, scores_id.as_deref()) {
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
        "PUT" => {
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
        _ => error(405, &format!("method {method} is not allowed on {path}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
