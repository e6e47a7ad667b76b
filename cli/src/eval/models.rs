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
use vouch_bio::{Whisper, WHISPER_BASE};

/// Options of `vouch eval models`.
#[derive(clap::Args)]
pub struct ModelsEval {
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    /// Time each model's run instead (the median of this many after one warm-up, one thread, on
    /// the inputs of [`RUNS`]): the tract side of `scripts/compare-onnxruntime`.
    #[arg(long, default_value_t = 0)]
    pub runs: usize,
    /// With `--runs`: also write the timings and the inputs' shapes here, as JSON.
    #[arg(long, requires = "runs")]
    pub runs_json: Option<PathBuf>,
}

/// The models whose runs are timed, with the input shapes they run on: the fixed shapes of the
/// files that have them, and for the symbolic ones the shapes of a 5 s clip (Whisper's encoders
/// on 600 frames, the clip and its tail rounded to a second, and hama on 80,000 samples). The
/// Whisper decoders are left out: the engine cuts their tied embedding out of the graph before
/// it plans them (`VariableModel::load_tied`), so the file onnxruntime would run is another graph.
const RUNS: [(ModelSpec, &[&[usize]]); 14] = [
    (
        infer::FACE_DETECTOR_SHORT,
        infer::FACE_DETECTOR_SHORT.inputs,
    ),
    (infer::FACE_DETECTOR_FULL, infer::FACE_DETECTOR_FULL.inputs),
    (infer::FACE_LANDMARKS, infer::FACE_LANDMARKS.inputs),
    (infer::FACE_EMBEDDER, infer::FACE_EMBEDDER.inputs),
    (infer::PASSIVE_ANTISPOOF, infer::PASSIVE_ANTISPOOF.inputs),
    (infer::PASSIVE_LIVENESS, infer::PASSIVE_LIVENESS.inputs),
    (infer::VOICE_ACTIVITY, infer::VOICE_ACTIVITY.inputs),
    (infer::SPEAKER_EMBEDDER, infer::SPEAKER_EMBEDDER.inputs),
    (infer::AASIST, infer::AASIST.inputs),
    (infer::TEXT_RECOGNIZER, infer::TEXT_RECOGNIZER.inputs),
    (
        infer::SPEAKER_EMBEDDER_GE2E,
        infer::SPEAKER_EMBEDDER_GE2E.inputs,
    ),
    (infer::PHONEME_RECOGNIZER, &[&[1, 80_000]]),
    (infer::WHISPER_ENCODER, &[&[1, 80, 600]]),
    (infer::WHISPER_BASE_ENCODER, &[&[1, 80, 600]]),
];

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

/// The values of an input of `len` elements, the same in `scripts/onnxruntime_compare.py`: a
/// multiplicative hash of the index folded into -0.5..0.5, so that no run meets only zeros.
fn input_values(len: usize) -> Vec<f32> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) % 65_536) as f32 / 65_536.0 - 0.5)
        .collect()
}

/// One model's run times, as `--runs-json` writes them.
#[derive(serde::Serialize)]
struct RunTimes {
    file: &'static str,
    inputs: Vec<Vec<usize>>,
    median_ms: f64,
    min_ms: f64,
}

/// The file `--runs-json` writes.
#[derive(serde::Serialize)]
struct RunReport {
    runtime: &'static str,
    threads: usize,
    runs: usize,
    models: Vec<RunTimes>,
}

/// Times `run` `runs` times after one warm-up; (median, min) in ms.
fn run_times(
    runs: usize,
    mut run: impl FnMut() -> Result<(), String>,
) -> Result<(f64, f64), String> {
    run()?;
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        run()?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    // As Python's `statistics.median` on the onnxruntime side: the mean of the middle two of an
    // even count.
    let middle = ms.len() / 2;
    let median = if ms.len() % 2 == 0 {
        (ms[middle - 1] + ms[middle]) / 2.0
    } else {
        ms[middle]
    };
    Ok((median, ms[0]))
}

/// `--runs`: loads each model of [`RUNS`] as the engine does and times its runs on one thread;
/// prints a Markdown table and, with `--runs-json`, writes it for the onnxruntime side.
fn time_runs(options: &ModelsEval) -> Result<(), String> {
    let dir = &options.models;
    let text = |e: infer::ModelError| e.to_string();
    println!(
        "Runs, one thread, median of {} after one warm-up, ms\n",
        options.runs
    );
    println!("| file | inputs | median | min |");
    println!("|---|---|---|---|");
    let mut models = Vec::new();
    for (spec, shapes) in RUNS {
        let data: Vec<Vec<f32>> = shapes
            .iter()
            .map(|shape| input_values(shape.iter().product()))
            .collect();
        let (median_ms, min_ms) = if spec.inputs.is_empty() {
            let model = infer::VariableModel::load(dir, spec).map_err(text)?;
            let inputs: Vec<infer::Input<'_>> = shapes
                .iter()
                .zip(&data)
                .map(|(shape, values)| infer::Input::F32(shape, values))
                .collect();
            run_times(options.runs, || model.run(&inputs).map(drop).map_err(text))?
        } else {
            let model = infer::Model::load(dir, spec).map_err(text)?;
            let inputs: Vec<&[f32]> = data.iter().map(Vec::as_slice).collect();
            run_times(options.runs, || model.run(&inputs).map(drop).map_err(text))?
        };
        let inputs: Vec<Vec<usize>> = shapes.iter().map(|shape| shape.to_vec()).collect();
        println!(
            "| `{}` | {inputs:?} | {median_ms:.2} | {min_ms:.2} |",
            spec.file
        );
        models.push(RunTimes {
            file: spec.file,
            inputs,
            median_ms,
            min_ms,
        });
    }
    if let Some(path) = &options.runs_json {
        let report = RunReport {
            runtime: "tract",
            threads: 1,
            runs: options.runs,
            models,
        };
        let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Runs the measurements and prints three Markdown tables: each loader with everything before it
/// still held, then the engine's open with all of those still held, then tract's stages per file.
pub fn run(options: &ModelsEval) -> Result<(), String> {
    if options.runs > 0 {
        return time_runs(options);
    }
    // The loaders run on a pool of one thread, so a loader that spreads its files over the pool
    // (the face models) is timed as the sum of its parts, as the rest are.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| e.to_string())?;
    pool.install(|| run_on(options))
}

fn run_on(options: &ModelsEval) -> Result<(), String> {
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
        Whisper::load_variant(dir, &WHISPER_BASE).map_err(text)
    })?;
    println!("\nThe engine's open (in-memory database), seconds, and the resident MiB it adds\n");
    println!("| open | seconds | MiB |");
    println!("|---|---|---|");
    let lazy = timed("lazy (the default): files checked, nothing loaded", || {
        Engine::open(engine_options(dir, false)?).map_err(|e| e.to_string())
    })?;
    // The engine opens its own pool, one thread per core, outside this one.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let preloaded = timed(
        &format!("`preload_models`: process-video's models in parallel, {threads} threads"),
        || Engine::open(engine_options(dir, true)?).map_err(|e| e.to_string()),
    )?;
    drop((lazy, preloaded));
    drop((face, vad, english, phonemes, spoof, document, base));
    println!("\nPer file: tract's stages, seconds (one thread)\n");
    println!("| file | MB | read, decode + sha256 | parse | types | declutter | optimise | runnable | total | nodes |");
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
