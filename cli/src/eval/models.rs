//! `vouch eval models`: where the time and memory of loading the models go (issue 39's tables
//! in `docs/performance.md`). Per file, tract's stages from the ONNX file to a runnable plan
//! ([`vouch_bio::infer::profile_load`]); per loader, the engine's real load as a whole, with the
//! resident memory it adds; and the engine's open, lazy (the default) and with `preload_models`.
//! Resident memory is read from `/proc/self/statm`, so it is reported on Linux only.

use std::path::{Path, PathBuf};
use std::time::Instant;

use vouch::{Engine, EngineOptions};
use vouch_bio::infer::{self, ModelSpec};
use vouch_bio::DocumentModels;
use vouch_bio::FaceModels;
use vouch_bio::PhonemeRecognizer;
use vouch_bio::SpoofDetector;
use vouch_bio::VoiceModels;
use vouch_bio::{Whisper, BASE};

/// Options of `vouch eval models`.
#[derive(clap::Args)]
pub struct ModelsEval {
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
}

/// Every file the engine loads with tract's standard path, in the order of the table.
const FILES: [ModelSpec; 14] = [
    infer::FACE_DETECTOR_SHORT,
    infer::FACE_DETECTOR_FULL,
    infer::FACE_LANDMARKS,
    infer::FACE_EMBEDDER,
    infer::PASSIVE_ANTISPOOF,
    infer::PASSIVE_LIVENESS,
    infer::VOICE_ACTIVITY,
    infer::SPEAKER_EMBEDDER,
    infer::AASIST,
    infer::TEXT_RECOGNIZER,
    infer::PHONEME_RECOGNIZER,
    infer::WHISPER_ENCODER,
    infer::WHISPER_BASE_ENCODER,
    infer::SPEAKER_EMBEDDER_GE2E,
];

/// Resident memory in MiB (Linux), or `None`.
fn resident_mib() -> Option<f64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: f64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096.0 / 1_048_576.0)
}

fn mib(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.0}"))
}

/// Runs `load`, then reports its wall time and the resident memory it added; the value is
/// returned so that the caller keeps it (what is freed would be reused by the next row, which
/// would then seem to need nothing).
fn timed<T>(name: &str, load: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let before = resident_mib();
    let start = Instant::now();
    let value = load()?;
    let seconds = start.elapsed().as_secs_f64();
    let held = resident_mib()
        .zip(before)
        .map(|(after, before)| after - before);
    println!("| {name} | {seconds:.3} | {} |", mib(held));
    Ok(value)
}

fn engine_options(models: &Path, preload: bool) -> Result<EngineOptions, String> {
    let json = format!(
        r#"{{"database":":memory:","template_key":"{}","models_dir":{},"preload_models":{preload}}}"#,
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        serde_json::to_string(&models.display().to_string()).map_err(|e| e.to_string())?
    );
    EngineOptions::from_json(&json).map_err(|e| e.to_string())
}

/// Runs the measurements and prints three Markdown tables: each loader with everything before it
/// still held, then the engine's open with all of those still held, then tract's stages per file.
pub fn run(options: &ModelsEval) -> Result<(), String> {
    let dir = &options.models;
    let text = |e: infer::ModelError| e.to_string();
    println!(
        "Per loader, one thread: the engine's real load, seconds, and the resident MiB it keeps\n"
    );
    println!("| loader | seconds | MiB held |");
    println!("|---|---|---|");
    let face = timed(
        "face (`FaceModels`: 2 detectors, landmarks, embedder, 2 passive)",
        || FaceModels::load(dir).map_err(text),
    )?;
    let vad = timed("speech detection (`VoiceModels`: Silero VAD)", || {
        VoiceModels::load(dir).map_err(text)
    })?;
    timed("speaker embedder (CAM++, with the first template)", || {
        vad.preload().map_err(text)
    })?;
    let english = timed("phrase, English (Whisper tiny.en)", || {
        Whisper::load(dir).map_err(text)
    })?;
    let phonemes = timed("sync (hama phoneme recogniser)", || {
        PhonemeRecognizer::load(dir).map_err(text)
    })?;
    let spoof = timed("synthetic speech (AASIST)", || {
        SpoofDetector::load(dir).map_err(text)
    })?;
    let document = timed("documents (PP-OCRv6)", || {
        DocumentModels::load(dir).map_err(text)
    })?;
    let base = timed("phrase, other languages (Whisper base)", || {
        Whisper::load_variant(dir, &BASE).map_err(text)
    })?;
    println!("\nThe engine's open (in-memory database), seconds, and the resident MiB it adds\n");
    println!("| open | seconds | MiB |");
    println!("|---|---|---|");
    let lazy = timed("lazy (the default): files checked, nothing loaded", || {
        Engine::open(engine_options(dir, false)?).map_err(|e| e.to_string())
    })?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let preloaded = timed(
        &format!("`preload_models`: process-video's models in parallel, {threads} threads"),
        || Engine::open(engine_options(dir, true)?).map_err(|e| e.to_string()),
    )?;
    drop((lazy, preloaded));
    drop((face, vad, english, phonemes, spoof, document, base));
    println!("\nPer file: tract's stages, seconds (one thread)\n");
    println!("| file | MB | read + sha256 | parse | types | declutter | optimise | runnable | total | nodes |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for spec in FILES {
        let bytes = std::fs::metadata(dir.join(spec.file))
            .map(|m| m.len() as f64 / 1e6)
            .map_err(|e| format!("{}: {e}", spec.file))?;
        let p = infer::profile_load(dir, spec).map_err(|e| e.to_string())?;
        let total = p.read_check + p.parse + p.typed + p.declutter + p.optimise + p.runnable;
        println!(
            "| `{}` | {bytes:.1} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {total:.3} | {} |",
            spec.file, p.read_check, p.parse, p.typed, p.declutter, p.optimise, p.runnable, p.nodes
        );
    }
    Ok(())
}
