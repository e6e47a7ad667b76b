//! The OpenAPI 3.1 document of `vouch serve` (`GET /openapi.json`), derived from the library's
//! endpoint table (`vouch::api::ENDPOINTS`, the same rows the router and the dispatch read): each
//! row's method and path, summary, query parameters, body (JSON by a schema's name, or the
//! multipart parts) and success answers (by a schema's name, resolved in `openapi_schemas.rs`).
//! So a served endpoint is a documented one. What only the document adds sits here, by endpoint,
//! with nothing as the default: examples, links and the headers some endpoints read besides those
//! of their family.

use serde_json::{json, Map, Value};
use vouch::api::{Body, Endpoint, Family, Format, Need, Query, QueryKind};

use crate::serve::admin::{Admin, AdminOperation, ADMIN};
use crate::serve::openapi_schemas::{
    admin_success, components, fullname, reference, success, Answer,
};

/// A query parameter of the endpoint table, as the document writes it.
fn query_parameter(query: &Query) -> Value {
    let schema = match query.kind {
        QueryKind::Fullname => fullname(),
        QueryKind::Text => json!({ "type": "string" }),
        QueryKind::Limit => json!({ "type": "integer", "minimum": 1, "maximum": 100 }),
        QueryKind::Integer => json!({ "type": "integer" }),
        QueryKind::OneOf(values) => json!({ "enum": values }),
    };
    json!({ "name": query.name, "in": "query", "required": query.required, "schema": schema })
}

/// An example of an endpoint's JSON body, for the document's readers (and a fuzzer's first,
/// valid, requests).
fn example(endpoint: Endpoint) -> Option<Value> {
    use Endpoint as E;
    Some(match endpoint {
        E::SessionEnd => json!({ "phone_number": "+4915112345678" }),
        E::AuthorizationConsent | E::StorageConsent => {
            json!({ "is_consent_given": true, "user_fullname": "alice" })
        }
        E::JobCreate => json!({
            "url": "https://backend.example.com/nightly",
            "scheduled_at": "2099-12-01T02:00:00Z",
            "webhook_url": "https://backend.example.com/job-done",
        }),
        E::ScheduleCreate => {
            json!({ "url": "https://backend.example.com/hourly", "cron": "0 * * * *" })
        }
        E::AlertCreate => json!({
            "type": "webhook", "target": "https://ops.example.com/vouch-alerts", "name": "ops",
        }),
        E::AlertUpdate => json!({ "enabled": false }),
        E::WebhookCreate => json!({
            "url": "https://backend.example.com/vouch-events",
            "events": ["process_video.completed", "session.ended"],
            "description": "backend",
        }),
        _ => return None,
    })
}

/// The error statuses every endpoint may answer.
const ERRORS: [u16; 12] = [400, 401, 402, 403, 404, 405, 409, 413, 415, 421, 429, 500];

/// A `true`/`false` header (in any letter case).
fn flag_header(name: &str, description: &str) -> Value {
    json!({ "name": name, "in": "header", "required": false, "description": description,
            "schema": { "type": "string", "pattern": "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$" } })
}

/// The request headers an endpoint reads besides `Authorization`.
fn headers(endpoint: Endpoint) -> Vec<Value> {
    let mut parameters = Vec::new();
    if endpoint.requires_fullname() {
        parameters.push(
            json!({ "name": "X-User-Fullname", "in": "header", "required": true,
                    "schema": fullname() }),
        );
    } else if endpoint == Endpoint::AvfInfer {
        parameters.push(
            json!({ "name": "X-User-Fullname", "in": "header", "required": false,
                    "description": "optional here (the spec lists only Authorization); kept with the upload and locks the session when given",
                    "schema": fullname() }),
        );
    }
    if endpoint.family() == Family::Gateway
        || matches!(
            endpoint,
            Endpoint::AuthorizationConsent | Endpoint::StorageConsent
        )
    {
        parameters.push(
            json!({ "name": "X-Session-ID", "in": "header", "required": false,
                    "schema": { "type": "string", "pattern": "^[!-~]{1,128}$" } }),
        );
    }
    if endpoint.records_transaction() {
        parameters.extend([
            json!({ "name": "X-Action-Trigger", "in": "header", "required": false,
                    "schema": { "enum": ["authentication", "registration", "confirmation"] } }),
            json!({ "name": "X-Device-Info", "in": "header", "required": false,
                    "description": "a JSON object, kept with the transaction",
                    "schema": { "type": "string" } }),
            json!({ "name": "X-Geo-Location", "in": "header", "required": false,
                    "description": "a JSON object with any of lat (-90..90), lng (-180..180), country and city",
                    "schema": { "type": "string" } }),
            json!({ "name": "X-Request-Tags", "in": "header", "required": false,
                    "description": "at most 20 comma-separated tags of at most 64 characters",
                    "schema": { "type": "string" } }),
        ]);
    }
    if endpoint == Endpoint::DocauthCheck {
        parameters.push(flag_header(
            "X-Inhouse-Docauth",
            "false asks for an external provider: 501 (default true)",
        ));
        parameters.push(flag_header(
            "X-Inhouse-MRZ",
            "true adds mrz_validation (default false)",
        ));
    }
    if endpoint == Endpoint::MatchFaces {
        parameters.push(flag_header(
            "X-Use-Prefilled-Video",
            "true compares with the faces of the session's process-video (default false)",
        ));
    }
    parameters
}

/// The response object of a success answer.
fn success_response(answer: &Answer, links: Option<Value>) -> Value {
    let mut headers = json!({ "X-Request-Id": { "$ref": "#/components/headers/X-Request-Id" } });
    for name in answer.headers {
        headers[*name] = json!({ "$ref": format!("#/components/headers/{name}") });
    }
    let mut response = json!({ "description": answer.description, "headers": headers });
    if let Some(schema) = &answer.schema {
        response["content"] = json!({ "application/json": { "schema": schema } });
    }
    if let Some(links) = links {
        response["links"] = links;
    }
    response
}

/// OpenAPI links to the operations `targets`, each target's parameters taken from the
/// answer by these runtime expressions.
fn link(targets: &[&str], parameters: Value) -> Value {
    let links: Map<String, Value> = targets
        .iter()
        .map(|target| {
            (
                (*target).to_owned(),
                json!({ "operationId": target, "parameters": parameters }),
            )
        })
        .collect();
    Value::Object(links)
}

/// Where an answer leads: the calls on what it created or names (for clients, and so that a
/// fuzzer's stateful phase can follow a create with the calls on what it created).
fn links(endpoint: Endpoint) -> Option<Value> {
    use Endpoint as E;
    let name = |endpoint: E| format!("{endpoint:?}");
    let to = |targets: &[E], parameter: &str, expression: &str| {
        let targets: Vec<String> = targets.iter().map(|target| name(*target)).collect();
        let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
        link(&targets, json!({ parameter: expression }))
    };
    let mut links = match endpoint {
        E::SessionStart => to(
            &[E::SessionEnd, E::SimSwapGet],
            "path.session_id",
            "$response.body#/data",
        ),
        E::JobCreate | E::JobReplay => to(
            &[E::JobGet, E::JobCancel, E::JobReplay, E::JobExecutions],
            "path.job_id",
            "$response.body#/id",
        ),
        E::ScheduleCreate => to(
            &[E::ScheduleDelete],
            "path.schedule_id",
            "$response.body#/id",
        ),
        E::AlertCreate => to(
            &[E::AlertUpdate, E::AlertDelete],
            "path.alert_id",
            "$response.body#/id",
        ),
        E::WebhookCreate => to(
            &[E::WebhookGet, E::WebhookDelete, E::WebhookRotate],
            "path.webhook_id",
            "$response.body#/data/id",
        ),
        _ => json!({}),
    };
    // Every verification request that is recorded can be read back by its `X-Request-Id`.
    if endpoint.records_transaction() {
        links[name(E::TransactionGet)] = json!({ "operationId": name(E::TransactionGet),
            "parameters": { "path.request_id": "$response.header.X-Request-Id" } });
    }
    links
        .as_object()
        .is_some_and(|map| !map.is_empty())
        .then_some(links)
}

/// The response object of an error.
fn error_response(schema: &str) -> Value {
    json!({ "description": "an error",
            "headers": { "X-Request-Id": { "$ref": "#/components/headers/X-Request-Id" } },
            "content": { "application/json": { "schema": reference(schema) } } })
}

fn operation(endpoint: Endpoint) -> Value {
    let declaration = endpoint.declaration();
    let jobs = declaration.family == Family::Jobs;
    let mut parameters: Vec<Value> = declaration
        .path
        .split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| {
            json!({ "name": name, "in": "path", "required": true,
                    "schema": { "type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$" } })
        })
        .collect();
    parameters.extend(declaration.query.iter().map(query_parameter));
    parameters.extend(headers(endpoint));
    let error_schema = if jobs { "JobError" } else { "Error" };
    let mut responses = Map::new();
    for answer in declaration.answers.iter().map(success) {
        let links = answer.schema.as_ref().and_then(|_| links(endpoint));
        responses.insert(answer.status.to_string(), success_response(&answer, links));
    }
    for status in ERRORS.iter().chain(if endpoint == Endpoint::DocauthCheck {
        &[501u16][..]
    } else {
        &[][..]
    }) {
        responses.insert(status.to_string(), error_response(error_schema));
    }
    if matches!(declaration.body, Body::Multipart { .. }) {
        // `vouch serve` answers an upload that waited too long for its turn with 503.
        let mut busy = error_response(error_schema);
        busy["description"] = json!("the server is busy with other uploads");
        busy["headers"]["Retry-After"] =
            json!({ "description": "seconds to wait", "schema": { "type": "string" } });
        responses.insert("503".to_owned(), busy);
    }
    let mut operation = json!({
        "summary": declaration.summary,
        "operationId": format!("{endpoint:?}"),
        "tags": [if jobs { "jobs" } else { "verification" }],
        "parameters": parameters,
        "responses": responses,
    });
    match declaration.body {
        Body::Empty => {}
        Body::Json {
            schema, optional, ..
        } => {
            let mut body = json!({ "schema": reference(schema) });
            if let Some(example) = example(endpoint) {
                body["example"] = example;
            }
            operation["requestBody"] = json!({
                "required": !optional,
                "content": { "application/json": body },
            });
        }
        Body::Multipart { parts, .. } => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for part in parts {
                let file = !matches!(part.format, Format::Text | Format::Boolean);
                let mut schema = if file {
                    json!({ "type": "string", "contentMediaType": "application/octet-stream" })
                } else {
                    json!({ "type": "string" })
                };
                if part.name == "language" {
                    schema["description"] = json!(
                        "Vouch's addition: the phrase's language, a BCP 47 tag whose primary \
                         subtag is one of Whisper's 99 languages (en, pt-BR, zh, hi, ...). \
                         Without it the language is found from the phrase's script and the \
                         audio. An unknown tag is a 400; a phrase in another script than the \
                         tag's language fails the phrase check (code 3, \
                         phrase_language_mismatch)."
                    );
                }
                properties.insert(part.name.to_owned(), schema);
                if part.need == Need::Required {
                    required.push(part.name);
                }
            }
            operation["requestBody"] = json!({
                "required": true,
                // Unknown parts are refused (400), like unknown JSON fields.
                "content": { "multipart/form-data": { "schema": {
                    "type": "object", "properties": properties, "required": required,
                    "additionalProperties": false,
                } } },
            });
        }
    }
    operation
}

/// An administration operation (`serve/admin.rs`'s table): its summary, parameters and body,
/// its success answer and the errors the server gives.
fn admin(declared: &AdminOperation) -> Value {
    let which = declared.which;
    let project_query = json!({ "name": "project_id", "in": "query", "required": true,
                                "schema": { "type": "string" } });
    let scores_query = json!({ "name": "scores_id", "in": "query", "required": false,
                               "description": "a custom set's name; without it, the project's set",
                               "schema": { "type": "string" } });
    let key_path = json!({ "name": "key_id", "in": "path", "required": true,
                           "schema": { "type": "string" } });
    let body = |schema: Value, example: Option<Value>| {
        let mut content = json!({ "schema": schema });
        if let Some(example) = example {
            content["example"] = example;
        }
        json!({ "required": true, "content": { "application/json": content } })
    };
    let mut operation = json!({ "summary": declared.summary, "responses": {} });
    match which {
        Admin::Create => {
            operation["requestBody"] = body(
                json!({ "type": "object", "required": ["project_id"], "additionalProperties": false,
                    "properties": {
                        "project_id": { "type": "string" },
                        "selected_services": { "type": ["array", "null"], "items": { "type": "string" },
                                               "description": "absent or null: all five services; []: none" },
                        "scores_id": { "type": ["string", "null"] }, "label": { "type": ["string", "null"] } } }),
                Some(json!({ "project_id": "demo", "label": "kiosk 3" })),
            );
        }
        Admin::List | Admin::CreditsRead => operation["parameters"] = json!([project_query]),
        Admin::Revoke => operation["parameters"] = json!([key_path, project_query]),
        Admin::CreditsSet => {
            operation["parameters"] = json!([project_query]);
            operation["requestBody"] = body(
                json!({ "type": "object", "required": ["balance", "plan"],
                    "additionalProperties": false,
                    "properties": {
                        "balance": { "type": "integer" }, "plan": { "type": "string" },
                        "daily_limit": { "type": ["integer", "null"] } } }),
                Some(json!({ "balance": 1000, "plan": "standard", "daily_limit": 500 })),
            );
        }
        Admin::ScoringRulesRead => {
            operation["parameters"] = json!([project_query, scores_query]);
        }
        Admin::ScoringRulesSet => {
            operation["parameters"] = json!([project_query, scores_query]);
            operation["requestBody"] = body(json!({ "type": "object" }), None);
        }
    }
    operation["operationId"] = json!(declared.operation_id);
    operation["tags"] = json!(["administration"]);
    operation["security"] = json!([{ "admin": [] }]);
    let answer = admin_success(which);
    let links = (which == Admin::Create).then(|| {
        link(
            &["ApiKeyRevoke"],
            json!({ "path.key_id": "$response.body#/data/id",
                    "query.project_id": "$response.body#/data/project_id" }),
        )
    });
    operation["responses"][answer.status.to_string()] = success_response(&answer, links);
    for status in [400, 401, 403, 404, 405, 409, 421, 500] {
        operation["responses"][status.to_string()] = error_response("Error");
    }
    operation
}

/// The whole document.
pub(crate) fn document() -> Value {
    let mut paths = Map::new();
    for endpoint in Endpoint::ALL {
        let (method, template) = endpoint.method_and_path();
        let item = paths
            .entry(template.to_owned())
            .or_insert_with(|| json!({}));
        item[method.to_ascii_lowercase()] = operation(endpoint);
    }
    for declared in &ADMIN {
        let item = paths
            .entry(declared.path.to_owned())
            .or_insert_with(|| json!({}));
        item[declared.method.to_ascii_lowercase()] = admin(declared);
    }
    let flag = |description: &str| {
        json!({ "description": description, "required": true,
                "schema": { "type": "string", "enum": ["true", "false"] } })
    };
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Vouch",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "On-device biometric verification and job scheduling, served by `vouch serve` (docs/http.md). Jobs: every failed attempt (any non-2xx, 3xx and 4xx included, a timeout, a lost connection) is retried up to `max_retries` with capped exponential backoff and full jitter; up to 5 redirects are followed, each hop's address checked; deliveries run concurrently within 64 in flight, 16 per project and 16 per destination (docs/jobs.md). Unknown JSON fields, query parameters and multipart parts are refused with a 400 that names them. A key that fails validation is 500 on the verification paths, 401 on the AVF and job paths (docs/http.md, 'One key failure, one status').",
        },
        "servers": [{ "url": "/" }],
        "security": [{ "bearer": [] }],
        "components": {
            "securitySchemes": {
                "bearer": { "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                            "description": "A project's API key" },
                "admin": { "type": "http", "scheme": "bearer",
                           "description": "The server's admin token (--admin-token-file)" },
            },
            "headers": {
                "X-Request-Id": { "description": "the request's id (a transaction's request_id)",
                                  "required": true, "schema": { "type": "string" } },
                "X-Auto-Enroll": flag("whether the user was enrolled from this video"),
                "X-Removed-Services": flag("whether Face or Voice Recognition was left out for missing authorization consent"),
                "Retry-After": { "description": "seconds until the user's next attempt is allowed (the attempt limit held the user back, or this failure started a wait)",
                                 "required": false, "schema": { "type": "string" } },
            },
            "schemas": components(),
        },
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_is_in_the_document_once_with_its_method() {
        let document = document();
        let mut operations = 0;
        for endpoint in Endpoint::ALL {
            let (method, template) = endpoint.method_and_path();
            let operation = &document["paths"][template][method.to_ascii_lowercase()];
            assert_eq!(
                operation["operationId"],
                format!("{endpoint:?}"),
                "{method} {template}"
            );
            operations += 1;
        }
        let documented: usize = document["paths"]
            .as_object()
            .unwrap()
            .values()
            .map(|item| item.as_object().unwrap().len())
            .sum();
        // The library's endpoints and the server's seven administration operations (three on
        // keys, two on credits, two on scoring rules).
        assert_eq!(documented, operations + 7);
    }

    #[test]
    fn every_success_answer_has_a_schema_of_its_own() {
        let document = document();
        let bare = json!({ "type": "object" });
        let mut checked = 0;
        for (template, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let responses = operation["responses"].as_object().unwrap();
                let successes: Vec<(&String, &Value)> = responses
                    .iter()
                    .filter(|(status, _)| status.starts_with('2'))
                    .collect();
                assert!(!successes.is_empty(), "{method} {template}");
                for (status, response) in successes {
                    if status == "204" {
                        assert!(response.get("content").is_none(), "{method} {template}");
                        continue;
                    }
                    let schema = &response["content"]["application/json"]["schema"];
                    assert!(
                        schema.is_object() && *schema != bare,
                        "{method} {template} {status}: {schema}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked >= 36, "{checked}");
    }

    #[test]
    fn every_link_leads_to_an_operation_and_its_parameters() {
        let document = document();
        let mut operations = std::collections::HashMap::new();
        for item in document["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                operations.insert(operation["operationId"].as_str().unwrap(), operation);
            }
        }
        let mut links = 0;
        for operation in operations.values() {
            for response in operation["responses"].as_object().unwrap().values() {
                for link in response["links"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|l| l.1)
                {
                    let target = operations[link["operationId"].as_str().unwrap()];
                    for name in link["parameters"].as_object().unwrap().keys() {
                        let (place, name) = name.split_once('.').unwrap();
                        assert!(
                            target["parameters"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .any(|parameter| {
                                    parameter["in"] == place && parameter["name"] == name
                                }),
                            "{link}"
                        );
                    }
                    links += 1;
                }
            }
        }
        assert!(links >= 20, "{links}");
    }

    #[test]
    fn every_reference_resolves() {
        fn visit(value: &Value, document: &Value, seen: &mut usize) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(target)) = map.get("$ref") {
                        let pointer = target.strip_prefix('#').unwrap();
                        assert!(document.pointer(pointer).is_some(), "{target}");
                        *seen += 1;
                    }
                    map.values().for_each(|value| visit(value, document, seen));
                }
                Value::Array(items) => items.iter().for_each(|value| visit(value, document, seen)),
                _ => {}
            }
        }
        let document = document();
        let mut seen = 0;
        visit(&document, &document, &mut seen);
        assert!(seen > 100, "{seen}");
    }
}
