//! `vouch`: the command-line tool around the vouch library.
//!
//! - `vouch demo` runs a whole verification-service conversation on an embedded database and prints
//!   each request and response as the cloud service would.
//! - `vouch init` writes a configuration (engine options with fresh random keys).
//! - `vouch keys create|list|revoke` administers API keys; `vouch rules default|show|set` scoring rules.
//! - `vouch request METHOD PATH` sends one request of the spec to the engine.
//! - `vouch eval faces --pairs PAIRS.csv --images DIR` measures face verification accuracy and speed;
//!   `vouch eval voices --trials TRIALS.csv --audio DIR` speaker verification; every `vouch eval`
//!   takes `--json` and `--report DIR`, and `vouch eval compare` draws saved scores on one DET plot.

mod demo;
mod engine;
mod eval;
mod jobs;
mod jobs_load;
mod serve;
mod verify;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use vouch::api::{Part, Request, Response};
use vouch::service::jobs::Credits;
use vouch::service::keys::NewApiKey;
use vouch::Engine;
use vouch::RuleSet;

#[derive(Parser)]
#[command(
    name = "vouch",
    version,
    about = "Offline, on-device biometric verification"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct ConfigArgs {
    /// Engine options file written by `vouch init`.
    #[arg(long, default_value = "vouch.json")]
    config: PathBuf,
}

#[derive(Subcommand)]
enum Command {
    /// Run a whole verification-service conversation and print every request and response.
    Demo {
        /// Database file (default: in memory, gone when the demo ends).
        #[arg(long)]
        db: Option<PathBuf>,
    },
    /// Write a configuration with fresh random template key and HS256 secret.
    Init {
        #[command(flatten)]
        config: ConfigArgs,
        /// Database file the configuration points at.
        #[arg(long, default_value = "vouch.sqlite")]
        db: PathBuf,
        /// Replace an existing configuration (its keys are lost, and with them the stored templates).
        #[arg(long)]
        force: bool,
    },
    /// Administer API keys.
    Keys {
        #[command(subcommand)]
        action: KeysAction,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Show or reset a user's failed attempts (the attempt limit: wait or disabling).
    Attempts {
        #[command(subcommand)]
        action: AttemptsAction,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Show or set a project's job credits: balance, plan and daily execution cap.
    Credits {
        #[command(subcommand)]
        action: CreditsAction,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Serve both services over HTTP/1.1 with the cloud's paths, and run the job worker.
    Serve {
        #[command(flatten)]
        options: serve::Serve,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Run the job service's outbound work: job calls, webhooks and alerts over HTTP.
    Jobs {
        #[command(subcommand)]
        action: JobsAction,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Show or store scoring rule sets.
    Rules {
        #[command(subcommand)]
        action: RulesAction,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Send one request of the verification spec to the engine and print the response.
    Request {
        /// HTTP method, e.g. POST.
        method: String,
        /// Path with optional query, e.g. /api-gateway/sessions/start.
        path: String,
        /// A header, `Name: value` (repeatable).
        #[arg(short = 'H', long = "header")]
        headers: Vec<String>,
        /// A JSON body.
        #[arg(long)]
        json: Option<String>,
        /// A multipart part: `name=@file` for a file, `name=text` for a field (repeatable).
        #[arg(long = "part")]
        parts: Vec<String>,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Verify a user from a selfie video in which they speak the displayed phrase (process-video)
    /// and print the spec's JSON.
    Verify(verify::Verify),
    /// Enroll a user's face (an image) or voice (an audio file).
    Enroll(verify::Enroll),
    /// Measure accuracy and speed on labelled data.
    Eval {
        #[command(subcommand)]
        what: EvalWhat,
    },
}

#[derive(Subcommand)]
enum EvalWhat {
    /// Face verification on `img_a,img_b,same` pairs: EER, FNMR at FMR 1e-2 and 1e-3, failure to
    /// detect, ms per image, and a DET plot.
    Faces(eval::FaceEval),
    /// Speaker verification on `enroll,test,target` trials: EER, minDCF (p_target 0.01),
    /// real-time factor, and a DET plot.
    Voices(eval::VoiceEval),
    /// MRZ reading on document images: share of documents with every field exact, per-field
    /// accuracy, check-digit agreement, ms per document.
    Documents(eval::documents::DocumentEval),
    /// The synthetic-speech detector (engine option `voice_spoof_check`) on labelled recordings:
    /// verdict shares per kind, APCER, BPCER and EER per attack kind.
    Spoof(eval::spoof::SpoofEval),
    /// The asynchronous forgery analysis (avf/infer's verdict) on labelled videos: verdict shares,
    /// APCER, BPCER and AUC per forgery kind, and each signal's AUC alone.
    Forgery(eval::forgery::ForgeryEval),
    /// The spoken-phrase check on real speech: own phrases must pass; other phrases, one word
    /// changed, dropped or added, and random words must fail; per set (LibriSpeech short and long,
    /// FSDD PINs, GRID).
    Phrases(eval::phrases::PhraseEval),
    /// process-video's checks on one set of talking-head clips: active speaker (own and other
    /// audio, AUC), phrase false accept and reject, liveness BPCER and APCER per attack kind, end
    /// to end acceptance through process-video, ms per clip.
    Videos(eval::videos::VideoEval),
    /// The audio-visual sync features of talking-head clips, one JSON line per clip (for
    /// `models/train_sync.py`).
    SyncFeatures(eval::sync_features::SyncFeatures),
    /// The eye-aligned face crops the forgery analysis shows its face-blend detector, as NumPy
    /// arrays per clip (for `models/train_blend.py`).
    FaceCrops(eval::face_crops::FaceCrops),
    /// Where the time and memory of loading the models go: tract's stages per file, each
    /// loader's wall time and resident memory, and the engine's open, lazy and preloaded.
    Models(eval::models::ModelsEval),
    /// Several systems or data sets on one DET plot, from score files or `--report` directories.
    Compare(eval::report::Compare),
}

/// A file of the source tree (models, sample media), found from the working directory or from where
/// this binary was built.
pub fn source_path(relative: &str) -> Option<PathBuf> {
    [
        PathBuf::from(relative),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(relative),
    ]
    .into_iter()
    .find(|path| path.exists())
}

#[derive(Subcommand)]
enum KeysAction {
    /// Create a key; prints its JSON including the token (shown only once).
    Create {
        #[arg(long)]
        project: String,
        /// Comma-separated service names, e.g. "Face Recognition,Voice Recognition".
        #[arg(
            long,
            default_value = "Active Speaker Detection,Visual Speech Recognition,Face Liveness Detection,Voice Recognition,Face Recognition"
        )]
        services: String,
        /// Custom scoring rules for this key.
        #[arg(long)]
        scores_id: Option<String>,
        #[arg(long)]
        label: Option<String>,
    },
    /// List a project's keys.
    List {
        #[arg(long)]
        project: String,
    },
    /// Revoke a key.
    Revoke {
        #[arg(long)]
        project: String,
        key_id: String,
    },
}

#[derive(Subcommand)]
enum AttemptsAction {
    /// Print where a user stands: failures, the limit, the wait or disabling, and the latest
    /// holds and resets.
    Show {
        #[arg(long)]
        project: String,
        /// The user (`X-User-Fullname`).
        #[arg(long)]
        user: String,
    },
    /// Clear a user's failed attempts, wait and disabling, once another factor has been
    /// checked; the reset is an audit row.
    Reset {
        #[arg(long)]
        project: String,
        /// The user (`X-User-Fullname`).
        #[arg(long)]
        user: String,
    },
}

#[derive(Subcommand)]
enum CreditsAction {
    /// Set the project's credits (the project becomes metered).
    Set {
        #[arg(long)]
        project: String,
        /// Credits left; each job execution attempt costs one.
        #[arg(long, allow_negative_numbers = true)]
        balance: i64,
        /// The plan's name.
        #[arg(long, default_value = "device")]
        plan: String,
        /// Execution attempts allowed per UTC day.
        #[arg(long)]
        daily_limit: Option<i64>,
    },
    /// Print the project's credits (`null` when it is unmetered).
    Show {
        #[arg(long)]
        project: String,
    },
}

#[derive(Subcommand)]
enum JobsAction {
    /// Send due jobs, retries, webhooks and alerts through an SSRF-guarded HTTP client.
    Work(jobs::Work),
    /// Measure creates and deliveries per second on a fresh temporary database and a local
    /// receiver (the configuration is not read).
    Load(jobs_load::Load),
}

#[derive(Subcommand)]
enum RulesAction {
    /// Print the built-in default rule set.
    Default,
    /// Print the rule set a project (or a custom scores_id) has stored.
    Show {
        #[arg(long)]
        project: String,
        #[arg(long)]
        scores_id: Option<String>,
    },
    /// Store a rule set from a JSON file for a project (or as custom set scores_id).
    Set {
        #[arg(long)]
        project: String,
        #[arg(long)]
        scores_id: Option<String>,
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("vouch: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Ends the process quietly, with the shell's status for a closed pipe (128 + SIGPIPE), when the
/// reader of stdout has gone (`vouch eval ... --json | head`): Rust ignores SIGPIPE, so `println!`
/// would otherwise panic with "failed printing to stdout: Broken pipe". Any other panic is
/// reported as usual.
fn quiet_on_closed_pipe() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        report(info);
    }));
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Demo { db } => demo::run(db.as_deref()),
        Command::Verify(options) => verify::verify(&options),
        Command::Enroll(options) => verify::enroll(&options),
        Command::Eval {
            what: EvalWhat::Faces(options),
        } => eval::run(&options),
        Command::Eval {
            what: EvalWhat::Voices(options),
        } => eval::run_voices(&options),
        Command::Eval {
            what: EvalWhat::Documents(options),
        } => eval::documents::run(&options),
        Command::Eval {
            what: EvalWhat::Spoof(options),
        } => eval::spoof::run(&options),
        Command::Eval {
            what: EvalWhat::Forgery(options),
        } => eval::forgery::run(&options),
        Command::Eval {
            what: EvalWhat::Phrases(options),
        } => eval::phrases::run(&options),
        Command::Eval {
            what: EvalWhat::Videos(options),
        } => eval::videos::run(&options),
        Command::Eval {
            what: EvalWhat::SyncFeatures(options),
        } => eval::sync_features::run(&options),
        Command::Eval {
            what: EvalWhat::FaceCrops(options),
        } => eval::face_crops::run(&options),
        Command::Eval {
            what: EvalWhat::Models(options),
        } => eval::models::run(&options),
        Command::Eval {
            what: EvalWhat::Compare(options),
        } => eval::report::compare(&options),
        Command::Init { config, db, force } => init(&config.config, &db, force),
        Command::Keys { action, config } => keys(&open(&config.config)?, action),
        Command::Rules {
            action: RulesAction::Default,
            ..
        } => {
            println!("{}", RuleSet::default_rules().to_json());
            Ok(())
        }
        Command::Rules { action, config } => rules(&open(&config.config)?, action),
        Command::Credits { action, config } => credits(&open(&config.config)?, action),
        Command::Attempts { action, config } => attempts(&open(&config.config)?, action),
        Command::Jobs {
            action: JobsAction::Work(options),
            config,
        } => jobs::work(
            &open_with_serve(
                &config.config,
                &Overrides {
                    allow_private: &options.allow_private,
                    ..Overrides::default()
                },
            )?
            .0,
            &options,
        ),
        Command::Jobs {
            action: JobsAction::Load(options),
            ..
        } => jobs_load::load(&options),
        Command::Serve { options, config } => {
            let overrides = Overrides {
                allow_private: &options.allow_private,
                database: options.database.as_deref(),
                database_pool_size: options.database_pool_size,
            };
            let (engine, serving) = open_with_serve(&config.config, &overrides)?;
            // A server pays for its models at start-up, not in its first requests (the engine
            // otherwise loads each on first use; `preload_models` in the file does the same).
            engine
                .runtime()
                .load_models()
                .map_err(|error| error.to_string())?;
            serve::serve(engine, &serving, &options)
        }
        Command::Request {
            method,
            path,
            headers,
            json,
            parts,
            config,
        } => {
            let engine = open(&config.config)?;
            let request = build_request(&method, &path, &headers, json.as_deref(), &parts)?;
            let response = vouch::api::handle(&engine, request);
            print_response(&response);
            if response.status < 400 {
                Ok(())
            } else {
                Err(format!(
                    "the request was answered with status {}",
                    response.status
                ))
            }
        }
    }
}

/// Fresh engine options: random 32-byte template key and HS256 secret.
fn init(config: &Path, db: &Path, force: bool) -> Result<(), String> {
    if config.exists() && !force {
        return Err(format!(
            "{} exists; pass --force to replace it (its keys would be lost)",
            config.display()
        ));
    }
    let options = engine::fresh_options(&db.to_string_lossy());
    let text = serde_json::to_string_pretty(&options).expect("plain JSON");
    let mut file_options = fs::OpenOptions::new();
    file_options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // The file holds the template key: readable by its owner only.
        file_options.mode(0o600);
    }
    let mut file = file_options
        .open(config)
        .map_err(|error| format!("cannot write {}: {error}", config.display()))?;
    file.write_all(text.as_bytes())
        .map_err(|error| format!("cannot write {}: {error}", config.display()))?;
    engine::open(&text)?;
    println!(
        "wrote {} (database {}); keep it secret: it holds the template key",
        config.display(),
        db.display()
    );
    Ok(())
}

fn open(config: &Path) -> Result<Engine, String> {
    open_with_serve(config, &Overrides::default()).map(|(engine, _)| engine)
}

/// What `vouch serve`'s flags change in the file's engine options.
#[derive(Default)]
struct Overrides<'a> {
    /// Ranges added to `allow_private`.
    allow_private: &'a [String],
    /// `database` instead of the file's.
    database: Option<&'a str>,
    /// `database_pool_size` instead of the file's.
    database_pool_size: Option<u64>,
}

/// Opens the engine of `vouch.json` and reads its `serve` section (which the engine never sees),
/// with `--allow-private`'s ranges added to the engine's `allow_private`: the flag opens a range
/// for everything outbound, the create-time checks of jobs, webhooks and alert channels as well
/// as their delivery, exactly as the same range in the file does.
fn open_with_serve(
    config: &Path,
    overrides: &Overrides<'_>,
) -> Result<(Engine, serve::config::ServeConfig), String> {
    let text = fs::read_to_string(config).map_err(|error| {
        format!(
            "cannot read {}: {error} (create one with `vouch init`)",
            config.display()
        )
    })?;
    let (options, serving) =
        serve::config::split(&text).map_err(|error| format!("{}: {error}", config.display()))?;
    let options = with_allowed_ranges(&options, overrides.allow_private)?;
    let options = with_database(&options, overrides)?;
    Ok((engine::open(&options)?, serving))
}

/// Engine options (JSON) with `--database` and `--database-pool-size` in place of the file's.
fn with_database(options: &str, overrides: &Overrides<'_>) -> Result<String, String> {
    if overrides.database.is_none() && overrides.database_pool_size.is_none() {
        return Ok(options.to_owned());
    }
    let mut value: serde_json::Value = serde_json::from_str(options)
        .map_err(|error| format!("the engine options are not JSON: {error}"))?;
    let object = value
        .as_object_mut()
        .ok_or("the engine options are not a JSON object")?;
    if let Some(database) = overrides.database {
        object.insert("database".to_owned(), database.into());
    }
    if let Some(size) = overrides.database_pool_size {
        object.insert("database_pool_size".to_owned(), size.into());
    }
    Ok(value.to_string())
}

/// Engine options (JSON) with `ranges` added to `allow_private`; the ranges are checked first so
/// that a bad one is reported against the flag.
fn with_allowed_ranges(options: &str, ranges: &[String]) -> Result<String, String> {
    if ranges.is_empty() {
        return Ok(options.to_owned());
    }
    vouch::AddressPolicy::parse(ranges).map_err(|error| format!("--allow-private: {error}"))?;
    let mut value: serde_json::Value = serde_json::from_str(options)
        .map_err(|error| format!("the engine options are not JSON: {error}"))?;
    let object = value
        .as_object_mut()
        .ok_or("the engine options are not a JSON object")?;
    let allowed = object
        .entry("allow_private")
        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
    let list = allowed
        .as_array_mut()
        .ok_or("allow_private must be a list of address ranges")?;
    list.extend(ranges.iter().cloned().map(serde_json::Value::String));
    Ok(value.to_string())
}

fn keys(engine: &Engine, action: KeysAction) -> Result<(), String> {
    let output = match action {
        KeysAction::Create {
            project,
            services,
            scores_id,
            label,
        } => {
            let selected_services = services
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let created = engine
                .api_keys()
                .create(&NewApiKey {
                    project_id: project,
                    selected_services,
                    scores_id,
                    label,
                })
                .map_err(|error| error.to_string())?;
            serde_json::to_value(created).expect("plain data")
        }
        KeysAction::List { project } => serde_json::to_value(
            engine
                .api_keys()
                .list(&project)
                .map_err(|error| error.to_string())?,
        )
        .expect("plain data"),
        KeysAction::Revoke { project, key_id } => serde_json::to_value(
            engine
                .api_keys()
                .revoke(&project, &key_id)
                .map_err(|error| error.to_string())?,
        )
        .expect("plain data"),
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&output).expect("plain JSON")
    );
    Ok(())
}

fn attempts(engine: &Engine, action: AttemptsAction) -> Result<(), String> {
    let status = match action {
        AttemptsAction::Show { project, user } => engine
            .attempts()
            .project_rules(&project)
            .and_then(|rules| engine.attempts().status(&project, &user, &rules)),
        AttemptsAction::Reset { project, user } => engine
            .attempts()
            .project_rules(&project)
            .and_then(|rules| engine.attempts().reset(&project, &user, &rules)),
    }
    .map_err(|error| error.to_string())?;
    println!(
        "{}",
        serde_json::to_string_pretty(&status).expect("plain data")
    );
    Ok(())
}

fn credits(engine: &Engine, action: CreditsAction) -> Result<(), String> {
    let project = match action {
        CreditsAction::Set {
            project,
            balance,
            plan,
            daily_limit,
        } => {
            engine
                .billing()
                .set(
                    &project,
                    &Credits {
                        balance,
                        plan,
                        daily_limit,
                    },
                )
                .map_err(|error| error.to_string())?;
            project
        }
        CreditsAction::Show { project } => project,
    };
    let credits = engine
        .billing()
        .get(&project)
        .map_err(|error| error.to_string())?;
    let json = credits.map(|credits| {
        serde_json::json!({
            "project": project,
            "balance": credits.balance,
            "plan": credits.plan,
            "daily_limit": credits.daily_limit,
        })
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&json).expect("plain JSON")
    );
    Ok(())
}

fn rules(engine: &Engine, action: RulesAction) -> Result<(), String> {
    match action {
        RulesAction::Default => unreachable!("handled without an engine"),
        RulesAction::Show { project, scores_id } => {
            let stored = engine
                .rules()
                .get(&project, scores_id.as_deref())
                .map_err(|error| error.to_string())?;
            match stored {
                Some(json) => println!("{json}"),
                None => {
                    return Err(
                        "no rule set stored there; the default applies (`vouch rules default`)"
                            .to_owned(),
                    )
                }
            }
        }
        RulesAction::Set {
            project,
            scores_id,
            file,
        } => {
            let text = fs::read_to_string(&file)
                .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
            let rules = RuleSet::from_json(&text).map_err(|error| error.to_string())?;
            engine
                .rules()
                .set(&project, scores_id.as_deref(), &rules)
                .map_err(|error| error.to_string())?;
            println!("stored rule set {} version {}", rules.id(), rules.version());
        }
    }
    Ok(())
}

fn build_request(
    method: &str,
    path: &str,
    headers: &[String],
    json: Option<&str>,
    parts: &[String],
) -> Result<Request, String> {
    let mut request = Request::new(method, path);
    for header in headers {
        let (name, value) = header
            .split_once(':')
            .ok_or_else(|| format!("header \"{header}\" is not `Name: value`"))?;
        request = request.header(name.trim(), value.trim());
    }
    if let Some(json) = json {
        request.body = Some(json.as_bytes().to_vec());
    }
    for part in parts {
        let (name, value) = part
            .split_once('=')
            .ok_or_else(|| format!("part \"{part}\" is not name=@file or name=text"))?;
        request.parts.push(match value.strip_prefix('@') {
            Some(file) => Part {
                name: name.to_owned(),
                filename: Path::new(file)
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned()),
                content_type: None,
                data: fs::read(file).map_err(|error| format!("cannot read {file}: {error}"))?,
            },
            None => Part {
                name: name.to_owned(),
                data: value.as_bytes().to_vec(),
                ..Part::default()
            },
        });
    }
    Ok(request)
}

pub(crate) fn print_response(response: &Response) {
    println!("<== {}", response.status);
    for (name, value) in &response.headers {
        println!("    {name}: {value}");
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&response.body).expect("plain JSON")
    );
}
