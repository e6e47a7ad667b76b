//! `vouch verify` and `vouch enroll`: process-video and enrollment on a local database, through the
//! same request path a backend uses.
//!
//! The database `--db PATH` keeps its engine options and an API key with all five services in
//! `PATH.json` (owner-readable only: it holds the template key). `--grant-consent` creates both
//! when missing and gives the user's authorization and storage consent first.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use vouch::api::{Request, Response};
use vouch::service::keys::NewApiKey;
use vouch::Engine;

use crate::engine::fresh_options;
use crate::print_response;

/// An engine on a local database with its API key.
pub struct Local {
    pub engine: Engine,
    pub token: String,
}

fn state_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".json");
    PathBuf::from(name)
}

/// Opens the database's engine; with `create`, makes the options and key when they are missing.
pub fn open_local(db: &Path, create: bool) -> Result<Local, String> {
    let state_file = state_path(db);
    let mut state: Value = match fs::read_to_string(&state_file) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|error| format!("{}: {error}", state_file.display()))?,
        Err(_) if create => json!({ "options": fresh_options(&db.to_string_lossy()) }),
        Err(error) => {
            return Err(format!(
                "cannot read {}: {error} (pass --grant-consent to create the database, a key and the user's consents)",
                state_file.display()
            ))
        }
    };
    let mut options = state["options"].clone();
    if let Some(models) = crate::engine::source_models() {
        options["models_dir"] = json!(models);
    }
    let engine = crate::engine::open(&options.to_string())?;
    if state["token"].as_str().is_none() {
        let key = engine
            .api_keys()
            .create(&NewApiKey {
                project_id: "local".into(),
                selected_services: vouch::Service::ALL
                    .iter()
                    .map(|service| service.name().to_owned())
                    .collect(),
                scores_id: None,
                label: Some("vouch cli".into()),
            })
            .map_err(|error| error.to_string())?;
        state["token"] = json!(key.token);
        write_private(
            &state_file,
            &serde_json::to_string_pretty(&state).expect("plain JSON"),
        )?;
    }
    let token = state["token"].as_str().unwrap_or_default().to_owned();
    Ok(Local { engine, token })
}

fn write_private(path: &Path, text: &str) -> Result<(), String> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    file.write_all(text.as_bytes())
        .map_err(|error| format!("cannot write {}: {error}", path.display()))
}

impl Local {
    /// Sends a request with the key.
    pub fn send(&self, request: Request) -> Response {
        vouch::api::handle(&self.engine, request.bearer(&self.token))
    }

    /// Gives the user's authorization and storage consent.
    pub fn grant_consent(&self, user: &str) -> Result<(), String> {
        for path in ["/api-consent/consent", "/api-consent/strg-consent"] {
            let response = self.send(
                Request::new("POST", path)
                    .json(&json!({ "is_consent_given": true, "user_fullname": user })),
            );
            if response.status != 200 {
                return Err(format!("{path}: {}", response.body));
            }
        }
        Ok(())
    }
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|error| format!("cannot read {}: {error}", path.display()))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| "upload".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// Prints the response (only the body with `json`); an error status is an error.
fn finish(response: &Response, json: bool) -> Result<(), String> {
    if json {
        println!("{}", response.body);
    } else {
        print_response(response);
    }
    if response.status == 200 {
        Ok(())
    } else {
        Err(format!(
            "the request was answered with status {}",
            response.status
        ))
    }
}

/// Options of `vouch verify`.
#[derive(clap::Args)]
pub struct Verify {
    /// The video (MP4, MOV, WebM, Matroska).
    pub video: PathBuf,
    /// The user (X-User-Fullname).
    #[arg(long)]
    pub user: String,
    /// The phrase the user was shown.
    #[arg(long)]
    pub phrase: String,
    /// Sent as the `vocabulary` part, which the cloud API has; Vouch's recogniser does not
    /// need it.
    #[arg(long)]
    pub vocabulary: Option<String>,
    /// The phrase's language, a BCP 47 tag (`pt-BR`, `hi`), sent as the `language` part;
    /// without it the phrase check finds the language from the phrase's script and the audio.
    #[arg(long)]
    pub language: Option<String>,
    /// This call registers the user (`X-Action-Trigger: registration`): when it enrols a
    /// first-time user it may pass. Without it the enrolling call enrols but fails with
    /// `enrolled_verify_again`, and the next call verifies.
    #[arg(long)]
    pub registration: bool,
    #[command(flatten)]
    pub local: LocalArgs,
}

/// The local database and output options `verify` and `enroll` share.
#[derive(clap::Args)]
pub struct LocalArgs {
    /// Database file; its options and API key live in PATH.json.
    #[arg(long, default_value = "vouch.sqlite")]
    pub db: PathBuf,
    /// Print only the response body.
    #[arg(long)]
    pub json: bool,
    /// Create the database and key if missing, and give the user's authorization and storage
    /// consent first.
    #[arg(long)]
    pub grant_consent: bool,
}

pub fn verify(options: &Verify) -> Result<(), String> {
    let local = open_local(&options.local.db, options.local.grant_consent)?;
    if options.local.grant_consent {
        local.grant_consent(&options.user)?;
    }
    let mut request = Request::new("POST", "/api-gateway/process-video")
        .header("X-User-Fullname", &options.user)
        .file_part(
            "video",
            &file_name(&options.video),
            "video/mp4",
            read(&options.video)?,
        )
        .text_part("phrase", &options.phrase);
    if let Some(vocabulary) = &options.vocabulary {
        request = request.text_part("vocabulary", vocabulary);
    }
    if let Some(language) = &options.language {
        request = request.text_part("language", language);
    }
    if options.registration {
        request = request.header("X-Action-Trigger", "registration");
    }
    finish(&local.send(request), options.local.json)
}

/// Options of `vouch enroll`.
#[derive(clap::Args)]
pub struct Enroll {
    /// `face` or `voice`.
    #[arg(value_parser = ["face", "voice"])]
    pub what: String,
    /// The image or audio file.
    pub file: PathBuf,
    /// The user (X-User-Fullname).
    #[arg(long)]
    pub user: String,
    /// The phrase spoken (voice only; the speaker model is text-independent).
    #[arg(long, default_value = "enrollment")]
    pub phrase: String,
    #[command(flatten)]
    pub local: LocalArgs,
}

pub fn enroll(options: &Enroll) -> Result<(), String> {
    let local = open_local(&options.local.db, options.local.grant_consent)?;
    if options.local.grant_consent {
        local.grant_consent(&options.user)?;
    }
    let bytes = read(&options.file)?;
    let name = file_name(&options.file);
    let request = if options.what == "voice" {
        Request::new("POST", "/api-gateway/enroll/voice")
            .file_part("voice", &name, "application/octet-stream", bytes)
            .text_part("phrase", &options.phrase)
    } else {
        Request::new("POST", "/api-gateway/enroll/face").file_part(
            "face",
            &name,
            "application/octet-stream",
            bytes,
        )
    };
    finish(
        &local.send(request.header("X-User-Fullname", &options.user)),
        options.local.json,
    )
}
