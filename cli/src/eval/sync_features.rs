//! `vouch eval sync-features`: the audio-visual sync features process-video computes, one JSON line
//! per clip, for training and studying the sync model (`models/train_sync.py`). Each line holds the
//! 40 ms grid's lip distances, speech band levels, viseme probabilities and speech flags
//! (`Signals`), Whisper's 80 log-mel bins on the grid (`video::grid_log_mel`, before the engine
//! pools them into bands: training shifts them to imitate other voices), and (with `--encoder`) the
//! Whisper encoder's states on the grid, for studies.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use vouch::service::video::decode_options;
use vouch_bio::grid_log_mel;
use vouch_bio::Phrase;
use vouch_bio::Signals;
use vouch_bio::{Whisper, TINY_EN_WIDTH};
use vouch_media::Pcm;

use crate::eval::progress::Progress;
use crate::eval::{clip_column, eval_engine, header_of, read_columns};

/// Options of `vouch eval sync-features`.
#[derive(clap::Args)]
pub struct SyncFeatures {
    /// CSV with a header naming `file` (or `mp4`) and `identity`; a `label` column keeps `real`
    /// rows only unless --all.
    #[arg(long)]
    pub clips: PathBuf,
    /// Folder the clip names are relative to.
    #[arg(long)]
    pub dir: PathBuf,
    /// Name of the set, written on every line.
    #[arg(long)]
    pub set: String,
    /// Output file (JSON lines).
    #[arg(long)]
    pub out: PathBuf,
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    /// Keep forgeries too (rows labelled `fake`).
    #[arg(long)]
    pub all: bool,
    /// Also write the Whisper encoder's states.
    #[arg(long)]
    pub encoder: bool,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Add white noise at this signal-to-noise ratio (dB, against the track's own power) to the
    /// audio before the features are computed: training data that imitates noisier recordings.
    /// The noise is the same on every run (seeded by the file name).
    #[arg(long)]
    pub noise_snr_db: Option<f32>,
}

/// `samples` with white noise `snr_db` below their mean power, from a generator seeded by `name`.
fn with_noise(samples: &mut [f32], snr_db: f32, name: &str) {
    let power = samples.iter().map(|s| s * s).sum::<f32>() / samples.len().max(1) as f32;
    let sd = (power / 10f32.powf(snr_db / 10.0)).sqrt();
    // FNV-1a of the name, then xorshift64*; a sum of four uniforms is near enough Gaussian.
    let mut state = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    }) | 1;
    let mut uniform = || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    for sample in samples {
        let noise = (uniform() + uniform() + uniform() + uniform()) * 3f32.sqrt();
        *sample += sd * noise;
    }
}

fn rows(path: &Path, all: bool) -> Result<Vec<(String, String, String)>, String> {
    let header = header_of(path)?;
    let file = clip_column(&header);
    if header.iter().any(|name| name == "label") {
        Ok(read_columns(path, &[file, "identity", "label"])?
            .into_iter()
            .filter(|r| all || r[2] == "real")
            .map(|r| (r[0].clone(), r[1].clone(), r[2].clone()))
            .collect())
    } else {
        Ok(read_columns(path, &[file, "identity"])?
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone(), "real".to_owned()))
            .collect())
    }
}

fn round4(v: f32) -> f32 {
    (v * 1e4).round() / 1e4
}

/// One clip's line of the output. Written through a JSON value, whose keys serde_json sorts: the
/// lines keep the order they always had.
#[derive(Serialize)]
struct FeatureLine<'a> {
    set: &'a str,
    file: &'a str,
    identity: &'a str,
    label: &'a str,
    /// The analysis grid's times, ms.
    times: Vec<i64>,
    lips: Vec<Vec<f32>>,
    bands: Vec<Vec<f32>>,
    speech: Vec<bool>,
    mel: Vec<Vec<f32>>,
    visemes: Vec<Vec<f32>>,
    /// With `--encoder`: the Whisper encoder's states at each grid time.
    encoder: Option<Vec<Vec<f32>>>,
    face_coverage: f32,
    asd_z: f32,
    audio_start_ms: i64,
}

/// Writes the features of every clip of the list.
pub fn run(options: &SyncFeatures) -> Result<(), String> {
    let clips = rows(&options.clips, options.all)?;
    let engine = eval_engine(&options.models, options.threads)?;
    let whisper = if options.encoder {
        Some(Whisper::load(&options.models).map_err(|e| e.to_string())?)
    } else {
        None
    };
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&options.out)
            .map_err(|e| format!("{}: {e}", options.out.display()))?,
    );
    let progress = Progress::new(clips.len(), "sync features", false);
    for (file, identity, label) in &clips {
        progress.tick();
        let Some((signals, audio, asd_z)) = analyse(&engine, options, file)? else {
            continue;
        };
        let start_ms = audio.as_ref().map_or(0, |a| a.start_ms);
        let line = FeatureLine {
            set: &options.set,
            file,
            identity,
            label,
            times: signals.times_ms.clone(),
            lips: rounded(&signals.lips),
            bands: rounded(&signals.speech_bands_db),
            speech: signals.speech.clone(),
            mel: mels(audio.as_ref(), &signals),
            visemes: rounded(&signals.visemes),
            encoder: encoder_states(whisper.as_ref(), audio.as_ref(), &signals)?,
            face_coverage: signals.face_coverage,
            asd_z,
            audio_start_ms: start_ms,
        };
        let line = serde_json::to_value(&line).map_err(|e| e.to_string())?;
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())
}

/// Decodes and analyses one clip (with `--noise-snr-db`'s noise): its signals, its audio and the
/// active-speaker contrast; none, with a line on stderr, when it cannot be decoded or analysed.
fn analyse(
    engine: &vouch::Engine,
    options: &SyncFeatures,
    file: &str,
) -> Result<Option<(Signals, Option<Pcm>, f32)>, String> {
    let bytes = std::fs::read(options.dir.join(file)).map_err(|e| format!("{file}: {e}"))?;
    let mut clip = match engine.media().decode_video(&bytes, &decode_options()) {
        Ok(clip) => clip,
        Err(e) => {
            eprintln!("{file}: {e}");
            return Ok(None);
        }
    };
    if let (Some(snr), Some(audio)) = (options.noise_snr_db, clip.audio.as_mut()) {
        with_noise(&mut audio.samples, snr, file);
    }
    let audio = clip.audio.clone();
    match engine.analysis().clip(clip, Phrase::new(""), false) {
        Ok(analysis) => Ok(Some((analysis.signals, audio, analysis.speaker.contrast))),
        Err(e) => {
            eprintln!("{file}: {e}");
            Ok(None)
        }
    }
}

/// Every row rounded to 4 decimals.
fn rounded<const N: usize>(rows: &[[f32; N]]) -> Vec<Vec<f32>> {
    rows.iter()
        .map(|row| row.iter().map(|&v| round4(v)).collect())
        .collect()
}

/// The log-mel bins at each grid time, rounded; zeros without audio.
fn mels(audio: Option<&Pcm>, signals: &Signals) -> Vec<Vec<f32>> {
    match audio {
        Some(pcm) => grid_log_mel(pcm, &signals.times_ms)
            .iter()
            .map(|bins| bins.iter().map(|&v| round4(v)).collect())
            .collect(),
        None => vec![vec![0.0; 80]; signals.times_ms.len()],
    }
}

/// With `--encoder` and audio: the Whisper encoder's states at each grid time.
fn encoder_states(
    whisper: Option<&Whisper>,
    audio: Option<&Pcm>,
    signals: &Signals,
) -> Result<Option<Vec<Vec<f32>>>, String> {
    let (samples, start_ms) = audio.map_or((&[][..], 0), |a| (&a.samples[..], a.start_ms));
    let Some(whisper) = whisper.filter(|_| !samples.is_empty()) else {
        return Ok(None);
    };
    let encoded = whisper.encode(samples).map_err(|e| e.to_string())?;
    let (states, frames) = (encoded.states(), encoded.frames());
    Ok(Some(
        signals
            .times_ms
            .iter()
            .map(|&time| at_grid(time - start_ms, frames, TINY_EN_WIDTH, states))
            .collect(),
    ))
}

/// The mean of the two encoder states nearest `time` (ms from the audio's start; the states are
/// 20 ms apart), rounded.
fn at_grid(time: i64, frames: usize, width: usize, data: &[f32]) -> Vec<f32> {
    let centre = time as f64 / 20.0;
    let first = (centre - 1.0).round() as i64;
    let rows: Vec<usize> = (first..first + 2)
        .filter(|&f| f >= 0 && (f as usize) < frames)
        .map(|f| f as usize)
        .collect();
    (0..width)
        .map(|k| {
            let sum: f32 = rows.iter().map(|&f| data[f * width + k]).sum();
            round4(if rows.is_empty() {
                0.0
            } else {
                sum / rows.len() as f32
            })
        })
        .collect()
}
