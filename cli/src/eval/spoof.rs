//! `vouch eval spoof`: the synthetic-speech detector (AASIST, `vouch_bio::SpoofDetector`, engine
//! option `voice_spoof_check`) on labelled recordings, per kind: the score spread, the share of
//! each verdict at the shipped bands, and for every attack kind the EER against all bona fide
//! recordings and the APCER (attacks not judged `spoof`); for every bona fide kind the BPCER
//! (judged `spoof`). A file that cannot be read or decoded is counted and listed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;
use vouch_bio::metrics;
use vouch_bio::{SpoofDetector, SpoofVerdict, BONA_FIDE_FROM, SPOOF_BELOW};
use vouch_media::{decode_audio, DecodeLimits};

use crate::eval::progress::Progress;
use crate::eval::read_columns;
use crate::eval::report::{as_json, data_set_name, percent_of, Output, Report, Scored, Summary};

/// Options of `vouch eval spoof`.
#[derive(clap::Args)]
pub struct SpoofEval {
    /// CSV with columns `file` (relative to --dir, or absolute), `label` (`bona_fide` or
    /// `spoof`) and `kind` (e.g. `librispeech`, `espeak-ng`, `piper`).
    #[arg(long)]
    pub clips: PathBuf,
    /// Folder the files are relative to.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    #[command(flatten)]
    pub output: Output,
    /// Worker threads (one recording each).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

struct Clip {
    file: String,
    bona_fide: bool,
    kind: String,
}

/// Runs the evaluation and prints the report.
pub fn run(options: &SpoofEval) -> Result<(), String> {
    let clips = read_clips(options)?;
    let detector = SpoofDetector::load(&options.models).map_err(|e| e.to_string())?;
    let scores = score_clips(&detector, options, &clips)?;
    let report = scores.report(options, clips.len());
    let json = serde_json::to_value(&report).map_err(|error| error.to_string())?;
    if let Some(dir) = &options.output.report {
        Report {
            json: &json,
            trials: &scores.trials(),
            plot: None,
            summary: summary(&report),
        }
        .write(dir)?;
    }
    if options.output.json {
        println!("{json}");
        return Ok(());
    }
    print_text(&report);
    Ok(())
}

/// The labelled recordings of `--clips`; an error for an unknown label or an empty list.
fn read_clips(options: &SpoofEval) -> Result<Vec<Clip>, String> {
    let clips: Vec<Clip> = read_columns(&options.clips, &["file", "label", "kind"])?
        .into_iter()
        .map(|row| match row[1].as_str() {
            "bona_fide" => Ok(Clip {
                file: row[0].clone(),
                bona_fide: true,
                kind: row[2].clone(),
            }),
            "spoof" => Ok(Clip {
                file: row[0].clone(),
                bona_fide: false,
                kind: row[2].clone(),
            }),
            other => Err(format!(
                "{}: label must be bona_fide or spoof, got {other:?}",
                options.clips.display()
            )),
        })
        .collect::<Result<_, _>>()?;
    if clips.is_empty() {
        return Err(format!("{}: no recordings", options.clips.display()));
    }
    Ok(clips)
}

/// Every recording's score, and the recordings left out.
struct Scores<'c> {
    /// The recordings that could be scored, each with its bona-fide logit, in the list's order.
    scored: Vec<(&'c Clip, f32)>,
    /// The recordings that could not be read, decoded or scored, and why.
    unreadable: Vec<Unreadable>,
    /// The time scoring all recordings took, seconds.
    wall_s: f64,
}

/// Reads, decodes and scores every recording on `--threads` workers; a recording that fails is
/// kept aside with its error.
fn score_clips<'c>(
    detector: &SpoofDetector,
    options: &SpoofEval,
    clips: &'c [Clip],
) -> Result<Scores<'c>, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .build()
        .map_err(|e| e.to_string())?;
    let progress = Progress::new(clips.len(), "recordings", options.output.json);
    let started = Instant::now();
    let results: Vec<Result<f32, String>> = pool.install(|| {
        clips
            .par_iter()
            .map(|clip| {
                let score = score_file(detector, &options.dir.join(&clip.file));
                progress.tick();
                score
            })
            .collect()
    });
    drop(progress);
    let wall_s = started.elapsed().as_secs_f64();
    let mut scores = Scores {
        scored: Vec::new(),
        unreadable: Vec::new(),
        wall_s,
    };
    for (clip, result) in clips.iter().zip(results) {
        match result {
            Ok(score) => scores.scored.push((clip, score)),
            Err(error) => scores.unreadable.push(Unreadable {
                file: clip.file.clone(),
                error,
            }),
        }
    }
    Ok(scores)
}

/// The bona-fide logit of the recording at `path`.
fn score_file(detector: &SpoofDetector, path: &Path) -> Result<f32, String> {
    std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| decode_audio(&bytes, &DecodeLimits::default()).map_err(|e| e.to_string()))
        .and_then(|(pcm, _)| detector.score(&pcm.samples).map_err(|e| e.to_string()))
}

/// The share of `values` judged `verdict` at the shipped bands (0 when there are none).
fn share_judged(values: &[f32], verdict: SpoofVerdict) -> f64 {
    values
        .iter()
        .filter(|s| SpoofVerdict::of(**s) == verdict)
        .count() as f64
        / values.len().max(1) as f64
}

impl Scores<'_> {
    /// The scores of the bona fide recordings (`genuine`) or of the attacks, in the list's order.
    fn of_label(&self, genuine: bool) -> Vec<f32> {
        self.scored
            .iter()
            .filter(|(c, _)| c.bona_fide == genuine)
            .map(|(_, s)| *s)
            .collect()
    }

    /// The scores of the label as distances for the shared metrics: lower is more genuine.
    fn distances(&self, genuine: bool) -> Vec<f64> {
        self.of_label(genuine)
            .iter()
            .map(|s| -f64::from(*s))
            .collect()
    }

    /// Every (kind, bona fide) the scored recordings have, in order of first appearance.
    fn kinds(&self) -> Vec<(&str, bool)> {
        let mut kinds: Vec<(&str, bool)> = Vec::new();
        for (clip, _) in &self.scored {
            if !kinds.contains(&(clip.kind.as_str(), clip.bona_fide)) {
                kinds.push((clip.kind.as_str(), clip.bona_fide));
            }
        }
        kinds
    }

    /// One kind's row of the report: the score spread, the share of each verdict, and its error
    /// rate (BPCER for bona fide, APCER and the EER against all bona fide recordings for attacks).
    fn kind_row(&self, kind: &str, genuine: bool, bona_fide: &[f64]) -> KindRow {
        let mut values: Vec<f32> = self
            .scored
            .iter()
            .filter(|(c, _)| c.kind == kind && c.bona_fide == genuine)
            .map(|(_, s)| *s)
            .collect();
        values.sort_by(f32::total_cmp);
        let n = values.len();
        let share = |verdict: SpoofVerdict| share_judged(&values, verdict);
        let mut row = KindRow {
            kind: kind.to_owned(),
            label: if genuine { "bona_fide" } else { "spoof" },
            recordings: n,
            min: values.first().copied(),
            median: values.get(n / 2).copied(),
            max: values.last().copied(),
            judged_spoof: share(SpoofVerdict::Spoof),
            judged_inconclusive: share(SpoofVerdict::Inconclusive),
            judged_bona_fide: share(SpoofVerdict::BonaFide),
            bpcer: None,
            apcer: None,
            eer_against_all_bona_fide: None,
        };
        if genuine {
            row.bpcer = Some(share(SpoofVerdict::Spoof));
        } else {
            row.apcer = Some(1.0 - share(SpoofVerdict::Spoof));
            let attacks: Vec<f64> = values.iter().map(|s| -f64::from(*s)).collect();
            row.eer_against_all_bona_fide = Some(metrics(bona_fide, &attacks).eer);
        }
        row
    }

    /// report.json (and `--json`'s output) of a list of `recordings`.
    fn report(&self, options: &SpoofEval, recordings: usize) -> SpoofReport<'_> {
        let bona_fide = self.distances(true);
        let attacks = self.distances(false);
        let per_kind: Vec<KindRow> = self
            .kinds()
            .iter()
            .map(|&(kind, genuine)| self.kind_row(kind, genuine, &bona_fide))
            .collect();
        let pooled = metrics(&bona_fide, &attacks);
        SpoofReport {
            data_set: data_set_name(&options.clips),
            model: vouch_bio::infer::AASIST.file,
            model_sha256: vouch_bio::infer::AASIST.sha256,
            spoof_below: SPOOF_BELOW,
            bona_fide_from: BONA_FIDE_FROM,
            recordings,
            bona_fide: bona_fide.len(),
            attacks: attacks.len(),
            eer: pooled.eer,
            apcer: 1.0 - share_judged(&self.of_label(false), SpoofVerdict::Spoof),
            bpcer: share_judged(&self.of_label(true), SpoofVerdict::Spoof),
            per_kind,
            recordings_unreadable: self.unreadable.len(),
            unreadable: &self.unreadable,
            ms_per_recording: self.wall_s * 1e3 * options.threads as f64
                / self.scored.len().max(1) as f64,
            threads: options.threads,
            wall_s: self.wall_s,
        }
    }

    /// scores.csv's rows: each scored recording with its kind, its label and its score.
    fn trials(&self) -> Vec<Scored> {
        self.scored
            .iter()
            .map(|(clip, score)| Scored {
                a: clip.file.clone(),
                b: clip.kind.clone(),
                genuine: clip.bona_fide,
                score: f64::from(*score),
            })
            .collect()
    }
}

/// report.json of `eval spoof` (and `--json`'s output). Written through a JSON value, whose keys
/// serde_json sorts: the file keeps the order it always had.
#[derive(Serialize)]
struct SpoofReport<'a> {
    data_set: String,
    model: &'static str,
    model_sha256: &'static str,
    /// The verdict bands: spoof under this logit...
    spoof_below: f32,
    /// ...bona fide from this one, inconclusive between.
    bona_fide_from: f32,
    recordings: usize,
    bona_fide: usize,
    attacks: usize,
    /// Pooled: every attack against every bona fide recording.
    eer: Option<f64>,
    /// Attacks not judged spoof.
    apcer: f64,
    /// Bona fide recordings judged spoof.
    bpcer: f64,
    per_kind: Vec<KindRow>,
    recordings_unreadable: usize,
    unreadable: &'a [Unreadable],
    /// On one thread.
    ms_per_recording: f64,
    threads: usize,
    wall_s: f64,
}

/// One kind of recording: its score spread, verdict shares and error rate.
#[derive(Serialize)]
struct KindRow {
    kind: String,
    label: &'static str,
    recordings: usize,
    min: Option<f32>,
    median: Option<f32>,
    max: Option<f32>,
    judged_spoof: f64,
    judged_inconclusive: f64,
    judged_bona_fide: f64,
    /// Bona fide kinds: judged spoof.
    #[serde(skip_serializing_if = "Option::is_none")]
    bpcer: Option<f64>,
    /// Attack kinds: not judged spoof.
    #[serde(skip_serializing_if = "Option::is_none")]
    apcer: Option<f64>,
    /// Attack kinds: against every bona fide recording (`Some(None)` when it has no crossing).
    #[serde(skip_serializing_if = "Option::is_none")]
    eer_against_all_bona_fide: Option<Option<f64>>,
}

/// A recording that could not be read, decoded or scored.
#[derive(Serialize)]
struct Unreadable {
    file: String,
    error: String,
}

/// The text output: the counts and time, the pooled rates, then one line per kind.
fn print_text(report: &SpoofReport) {
    println!(
        "recordings {} ({} bona fide, {} attacks), {} unreadable; AASIST {:.0} ms each on one thread",
        report.recordings, report.bona_fide, report.attacks, report.recordings_unreadable,
        finite(report.ms_per_recording).unwrap_or(0.0)
    );
    println!(
        "pooled: EER {}, APCER {} (attacks not judged spoof, under {SPOOF_BELOW}), BPCER {} (bona fide judged spoof)",
        percent_of(report.eer), percent_of(Some(report.apcer)), percent_of(Some(report.bpcer))
    );
    for row in &report.per_kind {
        println!("{}", kind_line(row));
    }
}

/// A figure as the JSON holds it: none when not finite (null).
fn finite(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

/// One kind's line: label, spread, verdict shares and its error rate.
fn kind_line(row: &KindRow) -> String {
    let number = |v: Option<f32>| {
        v.map(f64::from)
            .and_then(finite)
            .map_or("-".to_owned(), |v| format!("{v:.2}"))
    };
    let rate = if row.label == "spoof" {
        format!(
            "APCER {}, EER against all bona fide {}",
            percent_of(row.apcer),
            percent_of(row.eer_against_all_bona_fide.flatten())
        )
    } else {
        format!("BPCER {}", percent_of(row.bpcer))
    };
    // `n` unpadded: the count was a JSON value, whose Display ignores widths, and the report's
    // text stays as it was.
    format!(
        "{:<9} {:<22} n {}  score min {} median {} max {}  spoof {} inconclusive {} bona fide {}  {rate}",
        row.label,
        row.kind,
        row.recordings,
        number(row.min),
        number(row.median),
        number(row.max),
        percent_of(Some(row.judged_spoof)),
        percent_of(Some(row.judged_inconclusive)),
        percent_of(Some(row.judged_bona_fide)),
    )
}

fn summary(r: &SpoofReport) -> String {
    let mut s = Summary::new(&format!("Synthetic-speech detection: {}", r.data_set));
    s.row(
        "recordings",
        format!(
            "{} ({} bona fide, {} attacks)",
            r.recordings, r.bona_fide, r.attacks
        ),
    );
    s.row(
        "model",
        format!("{} ({})", r.model, r.model_sha256.get(..12).unwrap_or("")),
    );
    s.row(
        "verdict bands",
        format!(
            "spoof under {}, bona fide from {}, inconclusive between",
            as_json(r.spoof_below),
            as_json(r.bona_fide_from)
        ),
    );
    s.row("EER (pooled)", percent_of(r.eer));
    s.row(
        "APCER (attacks not judged spoof)",
        percent_of(Some(r.apcer)),
    );
    s.row("BPCER (bona fide judged spoof)", percent_of(Some(r.bpcer)));
    s.row(
        "time",
        format!(
            "{:.0} ms per recording on one thread",
            finite(r.ms_per_recording).unwrap_or(0.0)
        ),
    );
    let lines: Vec<String> = r
        .per_kind
        .iter()
        .map(|row| format!("- {}", kind_line(row)))
        .collect();
    s.text(&format!("Per kind:\n\n{}", lines.join("\n")));
    s.failed("Unreadable recordings", r.unreadable, |entry| {
        (entry.file.as_str(), entry.error.as_str())
    });
    s.finish()
}
