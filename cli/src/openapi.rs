//! The OpenAPI 3.1 document of `vouch serve` (`GET /openapi.json`). Its paths come from the
//! library's own routing table (`Endpoint::ALL` with `Endpoint::method_and_path`, which a library
//! test maps back through the router), and every endpoint's request is described by an
//! exhaustive `match` here, so a new endpoint cannot be served without being documented.

use serde_json::{json, Map, Value};
use vouch::api::Endpoint;

/// How an endpoint takes its input.
enum Input {
    /// No body.
    Nothing,
    /// A JSON body of this schema.
    Json(Value),
    /// `multipart/form-data` with these parts: name, is a file, required.
    Multipart(&'static [(&'static str, bool, bool)]),
}

/// Summary, input and success status of an endpoint.
fn describe(endpoint: Endpoint) -> (&'static str, Input, u16) {
    use Endpoint as E;
    let object = |properties: Value, required: &[&str]| json!({ "type": "object", "properties": properties, "required": required });
    let consent = || {
        Input::Json(object(
            json!({ "is_consent_given": { "type": "boolean" }, "user_fullname": { "type": "string" } }),
            &["is_consent_given", "user_fullname"],
        ))
    };
    let call = |extra: Value, required: &[&str]| {
        let mut properties = json!({
            "url": { "type": "string", "format": "uri" },
            "http_method": { "type": "string" },
            "headers": { "type": "object", "additionalProperties": { "type": "string" } },
            "body": { "type": "string" },
            "max_retries": { "type": "integer", "minimum": 0 },
            "webhook_url": { "type": "string", "format": "uri" },
            "webhook_headers": { "type": "object", "additionalProperties": { "type": "string" } },
        });
        for (name, schema) in extra.as_object().into_iter().flatten() {
            properties[name] = schema.clone();
        }
        Input::Json(object(properties, required))
    };
    match endpoint {
        E::SessionStart => ("Start a session", Input::Nothing, 200),
        E::SessionEnd => (
            "End a session; a phone number starts a SIM-swap check",
            Input::Json(object(json!({ "phone_number": { "type": "string" } }), &[])),
            200,
        ),
        E::ProcessVideo => (
            "Verify a selfie video: the key's recognition services and the scoring decision",
            Input::Multipart(&[
                ("video", true, true),
                ("phrase", false, true),
                ("vocabulary", false, false),
                ("trigger", false, false),
            ]),
            200,
        ),
        E::EnrollFace => (
            "Enroll a face (needs both consents)",
            Input::Multipart(&[("face", true, true), ("is_document", false, false)]),
            200,
        ),
        E::EnrollVoice => (
            "Enroll a voice (needs both consents)",
            Input::Multipart(&[("voice", true, true), ("phrase", false, false)]),
            200,
        ),
        E::DocauthCheck => (
            "Read a document's machine-readable zone",
            Input::Multipart(&[("document", true, true)]),
            200,
        ),
        E::MatchFaces => (
            "Match a document photo against the session's live face",
            Input::Multipart(&[
                ("image", true, false),
                ("video", true, false),
                ("live_image", true, false),
            ]),
            200,
        ),
        E::AvfInfer => (
            "Video forgery analysis (answers 501 in this build)",
            Input::Multipart(&[("file", true, true)]),
            202,
        ),
        E::AuthorizationConsent => ("Give or withdraw authorization consent", consent(), 200),
        E::StorageConsent => ("Give or withdraw storage consent", consent(), 200),
        E::AuthorizationConsentRead => ("Read authorization consent", Input::Nothing, 200),
        E::StorageConsentRead => ("Read storage consent", Input::Nothing, 200),
        E::ConsentStatus => ("Read both consents", Input::Nothing, 200),
        E::TransactionList => ("A page of the project's transactions", Input::Nothing, 200),
        E::TransactionGet => ("One transaction", Input::Nothing, 200),
        E::JobCreate => (
            "Create a job",
            call(
                json!({ "scheduled_at": { "type": "string", "format": "date-time" },
                        "idempotency_key": { "type": "string" } }),
                &["url", "scheduled_at"],
            ),
            201,
        ),
        E::JobList => ("A page of the project's jobs", Input::Nothing, 200),
        E::JobGet => ("One job", Input::Nothing, 200),
        E::JobCancel => ("Cancel a job before its first attempt", Input::Nothing, 200),
        E::JobReplay => ("Replay a failed job", Input::Nothing, 201),
        E::JobExecutions => ("A job's execution attempts", Input::Nothing, 200),
        E::ScheduleCreate => (
            "Create a cron schedule",
            call(json!({ "cron": { "type": "string" } }), &["url", "cron"]),
            201,
        ),
        E::ScheduleList => ("A page of the project's schedules", Input::Nothing, 200),
        E::ScheduleDelete => ("Delete a schedule", Input::Nothing, 200),
        E::StatsJobs => ("Execution statistics", Input::Nothing, 200),
        E::StatsUsage => ("Executions per day and credits", Input::Nothing, 200),
        E::AlertCreate => (
            "Create an alert channel",
            Input::Json(object(
                json!({ "type": { "enum": ["webhook", "slack"] }, "target": { "type": "string" },
                        "name": { "type": "string" }, "enabled": { "type": "boolean" } }),
                &["type", "target"],
            )),
            201,
        ),
        E::AlertList => ("The project's alert channels", Input::Nothing, 200),
        E::AlertUpdate => (
            "Pause or resume an alert channel",
            Input::Json(object(
                json!({ "enabled": { "type": "boolean" } }),
                &["enabled"],
            )),
            204,
        ),
        E::AlertDelete => ("Delete an alert channel", Input::Nothing, 204),
        E::SigningSecretRotate => (
            "Create or rotate the project's job-delivery signing secret",
            Input::Nothing,
            201,
        ),
        E::SigningSecretList => ("The signing secrets in use", Input::Nothing, 200),
        E::WebhookCreate => (
            "Register a webhook endpoint for verification events",
            Input::Json(object(
                json!({ "url": { "type": "string", "format": "uri" },
                        "events": { "type": "array", "items": { "type": "string" } },
                        "description": { "type": "string" } }),
                &["url"],
            )),
            201,
        ),
        E::WebhookList => ("The project's webhook endpoints", Input::Nothing, 200),
        E::WebhookGet => ("One webhook endpoint", Input::Nothing, 200),
        E::WebhookDelete => ("Delete a webhook endpoint", Input::Nothing, 200),
        E::WebhookRotate => ("Rotate a webhook endpoint's secret", Input::Nothing, 200),
        E::SimSwapGet => ("A session's SIM-swap check", Input::Nothing, 200),
    }
}

/// The error statuses every endpoint may answer.
const ERRORS: [u16; 11] = [400, 401, 402, 403, 404, 405, 409, 413, 415, 429, 500];

fn operation(endpoint: Endpoint) -> Value {
    let (summary, input, success) = describe(endpoint);
    let (_, template) = endpoint.method_and_path();
    let jobs = endpoint.is_jobs();
    let mut parameters: Vec<Value> = template
        .split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| {
            json!({ "name": name, "in": "path", "required": true,
                    "schema": { "type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$" } })
        })
        .collect();
    if endpoint.requires_fullname() {
        parameters.push(
            json!({ "name": "X-User-Fullname", "in": "header", "required": true,
                                "schema": { "type": "string" } }),
        );
    }
    if endpoint.is_gateway() {
        parameters.push(
            json!({ "name": "X-Session-ID", "in": "header", "required": false,
                                "schema": { "type": "string" } }),
        );
    }
    let error_schema = if jobs {
        "#/components/schemas/JobError"
    } else {
        "#/components/schemas/Error"
    };
    let mut responses = Map::new();
    let body = if success == 204 {
        json!({ "description": "done" })
    } else {
        json!({ "description": "the result",
                "content": { "application/json": { "schema": { "type": "object" } } } })
    };
    responses.insert(success.to_string(), body);
    for status in ERRORS.iter().chain(
        if endpoint == Endpoint::AvfInfer || endpoint == Endpoint::DocauthCheck {
            &[501u16][..]
        } else {
            &[][..]
        },
    ) {
        responses.insert(
            status.to_string(),
            json!({ "description": "an error",
                    "content": { "application/json": { "schema": { "$ref": error_schema } } } }),
        );
    }
    let mut operation = json!({
        "summary": summary,
        "operationId": format!("{endpoint:?}"),
        "tags": [if jobs { "jobs" } else { "verification" }],
        "parameters": parameters,
        "responses": responses,
    });
    match input {
        Input::Nothing => {}
        Input::Json(schema) => {
            operation["requestBody"] = json!({
                "required": schema["required"].as_array().is_some_and(|r| !r.is_empty()),
                "content": { "application/json": { "schema": schema } },
            });
        }
        Input::Multipart(parts) => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for (name, file, needed) in parts {
                let schema = if *file {
                    json!({ "type": "string", "contentMediaType": "application/octet-stream" })
                } else {
                    json!({ "type": "string" })
                };
                properties.insert((*name).to_owned(), schema);
                if *needed {
                    required.push(*name);
                }
            }
            operation["requestBody"] = json!({
                "required": true,
                "content": { "multipart/form-data": { "schema": {
                    "type": "object", "properties": properties, "required": required,
                } } },
            });
        }
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
    let admin_error = json!({ "description": "an error",
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } });
    let key_body = json!({ "type": "object", "required": ["project_id"], "properties": {
        "project_id": { "type": "string" },
        "selected_services": { "type": "array", "items": { "type": "string" } },
        "scores_id": { "type": "string" }, "label": { "type": "string" } } });
    let project_query = json!({ "name": "project_id", "in": "query", "required": true,
                                "schema": { "type": "string" } });
    let ok = |description: &str| {
        json!({ "description": description,
        "content": { "application/json": { "schema": { "type": "object" } } } })
    };
    let admin = |operation: Value| {
        let mut operation = operation;
        operation["tags"] = json!(["administration"]);
        operation["security"] = json!([{ "admin": [] }]);
        for status in [400, 401, 403, 404, 405] {
            operation["responses"][status.to_string()] = admin_error.clone();
        }
        operation
    };
    paths.insert(
        "/api-projects/api-keys".to_owned(),
        json!({
            "post": admin(json!({ "summary": "Create an API key (the token is shown once)",
                "operationId": "ApiKeyCreate",
                "requestBody": { "required": true, "content": { "application/json": { "schema": key_body } } },
                "responses": { "201": ok("the key and its token") } })),
            "get": admin(json!({ "summary": "A project's API keys", "operationId": "ApiKeyList",
                "parameters": [project_query.clone()], "responses": { "200": ok("the keys") } })),
        }),
    );
    paths.insert(
        "/api-projects/api-keys/{key_id}".to_owned(),
        json!({
            "delete": admin(json!({ "summary": "Revoke an API key", "operationId": "ApiKeyRevoke",
                "parameters": [project_query,
                    { "name": "key_id", "in": "path", "required": true, "schema": { "type": "string" } }],
                "responses": { "200": ok("the revoked key") } })),
        }),
    );
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Vouch",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "On-device biometric verification and job scheduling, served by `vouch serve` (docs/http.md).",
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
            "schemas": {
                "Error": { "type": "object", "required": ["error"],
                           "properties": { "error": { "type": "string" } } },
                "JobError": { "type": "object", "required": ["error"], "properties": { "error": {
                    "type": "object", "required": ["code", "message"],
                    "properties": { "code": { "type": "string" }, "message": { "type": "string" } } } } },
            },
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
        // The library's endpoints and the server's three key-administration operations.
        assert_eq!(documented, operations + 3);
    }
}
