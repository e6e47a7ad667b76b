//! `vouch`: the command-line tool around the vouch library.
//!
//! - `vouch demo` runs a whole verification-service conversation on an embedded database and prints
//!   each request and response as the cloud service would.
//! - `vouch init` writes a configuration (engine options with fresh random keys).
//! - `vouch keys create|list|revoke` administers API keys; `vouch rules default|show|set` scoring rules.
//! - `vouch request METHOD PATH` sends one request of the spec to the engine.
//! - `vouch eval faces --pairs PAIRS.csv --images DIR` measures face verification accuracy and speed;
//!   `vouch eval voices --trials TRIALS.csv --audio DIR` speaker verification.

mod demo;
mod engine;
mod eval;
mod eval_documents;
mod eval_phrases;
mod eval_videos;
mod plot;
mod verify;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use vouch::api::{Part, Request, Response};
use vouch::scoring::RuleSet;
use vouch::service::keys::NewApiKey;
use vouch::Engine;

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
    Verify {
        /// The video (MP4, MOV, WebM, Matroska).
        video: PathBuf,
        /// The user (X-User-Fullname).
        #[arg(long)]
        user: String,
        /// The phrase the user was shown.
        #[arg(long)]
        phrase: String,
        /// Sent as the `vocabulary` part, which the cloud API has; Vouch's recogniser does not
        /// need it.
        #[arg(long)]
        vocabulary: Option<String>,
        /// Database file; its options and API key live in PATH.json.
        #[arg(long, default_value = "vouch.sqlite")]
        db: PathBuf,
        /// Print only the response body.
        #[arg(long)]
        json: bool,
        /// Create the database and key if missing, and give the user's authorization and storage
        /// consent first.
        #[arg(long)]
        grant_consent: bool,
    },
    /// Enroll a user's face (an image) or voice (an audio file).
    Enroll {
        /// `face` or `voice`.
        #[arg(value_parser = ["face", "voice"])]
        what: String,
        /// The image or audio file.
        file: PathBuf,
        /// The user (X-User-Fullname).
        #[arg(long)]
        user: String,
        /// The phrase spoken (voice only; the speaker model is text-independent).
        #[arg(long, default_value = "enrollment")]
        phrase: String,
        /// Database file; its options and API key live in PATH.json.
        #[arg(long, default_value = "vouch.sqlite")]
        db: PathBuf,
        /// Print only the response body.
        #[arg(long)]
        json: bool,
        /// Create the database and key if missing, and give the user's consents first.
        #[arg(long)]
        grant_consent: bool,
    },
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
    Faces {
        /// CSV with a header and the columns img_a, img_b, same (1 or 0).
        #[arg(long)]
        pairs: PathBuf,
        /// Folder the image names are relative to.
        #[arg(long)]
        images: PathBuf,
        /// Folder with the ONNX models.
        #[arg(long, default_value = "models")]
        models: PathBuf,
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
        /// Where to write the DET plot (default: det-<pairs file stem>.png).
        #[arg(long)]
        det: Option<PathBuf>,
        /// Worker threads (1 gives single-thread ms per image).
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Write every pair's distance to this CSV ("inf" when a face was not found).
        #[arg(long)]
        scores: Option<PathBuf>,
        /// Also fit the calibration on all cross pairs of this `image,identity` labels file.
        #[arg(long)]
        calibrate: Option<PathBuf>,
    },
    /// Speaker verification on `enroll,test,target` trials: EER, minDCF (p_target 0.01),
    /// real-time factor, and a DET plot.
    Voices {
        /// CSV with a header and the columns enroll, test, target (1 or 0).
        #[arg(long)]
        trials: PathBuf,
        /// Folder the audio paths are relative to.
        #[arg(long)]
        audio: PathBuf,
        /// Folder with the ONNX models.
        #[arg(long, default_value = "models")]
        models: PathBuf,
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
        /// Where to write the DET plot (default: det-<trials file stem>.png).
        #[arg(long)]
        det: Option<PathBuf>,
        /// Worker threads.
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Also fit the calibration on all pairs of this labels file (columns `path`, `speaker`;
        /// files are paired only with files under the same first folder).
        #[arg(long)]
        calibrate: Option<PathBuf>,
        /// Use only the first S seconds of every recording (a speech-duration study).
        #[arg(long)]
        max_seconds: Option<f32>,
        /// Also score with S-norm against a cohort: the `--calibrate` recordings of the same
        /// corpus whose speaker is neither side's (a score-normalisation study).
        #[arg(long, requires = "calibrate")]
        snorm: bool,
    },
    /// MRZ reading on document images: share of documents with every field exact, per-field
    /// accuracy, check-digit agreement, ms per document.
    Documents {
        /// TSV with a header: image, mrz_type, mrz_lines (|-joined), all_check_digits_valid.
        #[arg(long)]
        truth: PathBuf,
        /// Folder the image paths are relative to.
        #[arg(long)]
        dir: PathBuf,
        /// Folder with the ONNX models.
        #[arg(long, default_value = "models")]
        models: PathBuf,
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// The spoken-phrase check on real speech: own phrases must pass; other phrases, one word
    /// changed, dropped or added, and random words must fail; per set (LibriSpeech short and long,
    /// FSDD PINs, GRID).
    Phrases {
        /// The speech folder (`utterances.csv`, `librispeech_test_other/`,
        /// `fsdd_pin_phrases_derived/`).
        #[arg(long)]
        speech: PathBuf,
        /// The GRID folder (`clips.csv` and its MP4 clips), to add its sentences.
        #[arg(long)]
        grid: Option<PathBuf>,
        /// Folder with the ONNX models.
        #[arg(long, default_value = "models")]
        models: PathBuf,
        /// Worker threads (0: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Print one JSON object (with every trial) instead of the summary.
        #[arg(long)]
        json: bool,
    },
    /// process-video's checks on one set of talking-head clips: active speaker (own and other
    /// audio, AUC), phrase false accept and reject, liveness BPCER and APCER per attack kind, end
    /// to end acceptance through process-video, ms per clip.
    Videos {
        /// CSV with a header and the columns mp4, webm, identity, transcript (every clip genuine)
        /// or file, label (real/fake), identity, transcript (may be empty); `asd_trials.csv`
        /// beside it (video_from, audio_from, match) adds active-speaker trials.
        #[arg(long)]
        clips: PathBuf,
        /// Folder the clip names are relative to.
        #[arg(long)]
        dir: PathBuf,
        /// Folder with the ONNX models.
        #[arg(long, default_value = "models")]
        models: PathBuf,
        /// Words the impostor phrases are drawn from (default: every word of the transcripts).
        #[arg(long)]
        vocabulary: Option<String>,
        /// Read the webm column instead of mp4.
        #[arg(long)]
        webm: bool,
        /// Worker threads (0: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
        /// Write each clip's face and audio signals to DIR/<clip>.json (for studying the checks).
        #[arg(long)]
        dump: Option<PathBuf>,
    },
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
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("vouch: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Demo { db } => demo::run(db.as_deref()),
        Command::Verify {
            video,
            user,
            phrase,
            vocabulary,
            db,
            json,
            grant_consent,
        } => verify::verify(&verify::Verify {
            video,
            user,
            phrase,
            vocabulary,
            db,
            json,
            grant_consent,
        }),
        Command::Enroll {
            what,
            file,
            user,
            phrase,
            db,
            json,
            grant_consent,
        } => verify::enroll(&verify::Enroll {
            voice: what == "voice",
            file,
            user,
            phrase,
            db,
            json,
            grant_consent,
        }),
        Command::Eval {
            what:
                EvalWhat::Faces {
                    pairs,
                    images,
                    models,
                    json,
                    det,
                    threads,
                    scores,
                    calibrate,
                },
        } => eval::run(&eval::FaceEval {
            pairs,
            images,
            models,
            json,
            det,
            threads: threads.max(1),
            scores,
            calibrate,
        }),
        Command::Eval {
            what:
                EvalWhat::Voices {
                    trials,
                    audio,
                    models,
                    json,
                    det,
                    threads,
                    calibrate,
                    max_seconds,
                    snorm,
                },
        } => eval::run_voices(&eval::VoiceEval {
            trials,
            audio,
            models,
            json,
            det,
            threads: threads.max(1),
            calibrate,
            max_seconds,
            snorm,
        }),
        Command::Eval {
            what:
                EvalWhat::Documents {
                    truth,
                    dir,
                    models,
                    json,
                },
        } => eval_documents::run(&eval_documents::DocumentEval {
            truth,
            dir,
            models,
            json,
        }),
        Command::Eval {
            what:
                EvalWhat::Phrases {
                    speech,
                    grid,
                    models,
                    threads,
                    json,
                },
        } => eval_phrases::run(&eval_phrases::PhraseEval {
            speech,
            grid,
            models,
            threads,
            json,
        }),
        Command::Eval {
            what:
                EvalWhat::Videos {
                    clips,
                    dir,
                    models,
                    vocabulary,
                    webm,
                    threads,
                    json,
                    dump,
                },
        } => eval_videos::run(&eval_videos::VideoEval {
            clips,
            dir,
            models,
            vocabulary,
            webm,
            threads,
            json,
            dump,
        }),
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
            let response = engine.handle(request);
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
    let text = fs::read_to_string(config).map_err(|error| {
        format!(
            "cannot read {}: {error} (create one with `vouch init`)",
            config.display()
        )
    })?;
    engine::open(&text)
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
                .create_api_key(&NewApiKey {
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
                .list_api_keys(&project)
                .map_err(|error| error.to_string())?,
        )
        .expect("plain data"),
        KeysAction::Revoke { project, key_id } => serde_json::to_value(
            engine
                .revoke_api_key(&project, &key_id)
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

fn rules(engine: &Engine, action: RulesAction) -> Result<(), String> {
    match action {
        RulesAction::Default => unreachable!("handled without an engine"),
        RulesAction::Show { project, scores_id } => {
            let stored = engine
                .store()
                .rule_set(&project, scores_id.as_deref())
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
                .set_scoring_rules(&project, scores_id.as_deref(), &rules)
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
