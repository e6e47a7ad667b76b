//! `vouch eval forgery`: the asynchronous forgery analysis (`Forgery::analyze`, the verdict
//! `avf/infer` reports) on labelled videos, per kind: the verdict shares, APCER (forgeries not
//! judged `fake`) and the AUC of the fused score against every real video for each forgery kind,
//! BPCER (real videos judged `fake`) for each real kind, and the same AUC for each signal alone,
//! with the spread of each signal's value over the real videos (what its thresholds are placed
//! on, `docs/avf.md`). With a `set` column (as `scripts/forgery-set` writes) the per-kind rows are
//! repeated for each data set on its own, forgeries against that set's real videos. A file that
//! cannot be read or analysed is counted and listed.

use std::path::PathBuf;
use std::time::Instant;

use std::collections::BTreeMap;

use serde::Serialize;
use vouch_bio::{ForgeryVerdict, Prediction};

use crate::eval::progress::Progress;
use crate::eval::read_columns;
use crate::eval::report::{data_set_name, Output, Report, Scored, Summary};
use crate::eval::videos::auc;

/// Options of `vouch eval forgery`.
#[derive(clap::Args)]
pub struct ForgeryEval {
    /// CSV with columns `file` (relative to --dir, or absolute), `label` (`real` or `fake`) and
    /// `kind` (e.g. `bona_fide`, `tts_piper`, `swapped_audio`, `lipsync`), as `scripts/forgery-set`
    /// writes it.
    #[arg(long)]
    pub labels: PathBuf,
    /// Folder the files are relative to.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    #[command(flatten)]
    pub output: Output,
    /// The column the rows are grouped by: `kind` (the default), or another such as `family`
    /// (the generator family of `talking-more/labels.csv`).
    #[arg(long, default_value = "kind")]
    pub by: String,
    /// Threads of the engine's pool (the videos are analysed one after another).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

struct Clip {
    file: String,
    real: bool,
    kind: String,
    /// The data set it comes from (the optional `set` column; the labels file's name without it).
    set: String,
}

/// The signals, in report order.
const SIGNALS: [&str; 5] = [
    "synthetic_voice",
    "lip_sync",
    "mouth_detail",
    "streams",
    "face_identity",
];

/// Runs the evaluation and prints the report.
pub fn run(options: &ForgeryEval) -> Result<(), String> {
    let clips = read_clips(options)?;
    let engine = crate::eval::eval_engine(&options.models, options.threads)?;
    let started = Instant::now();
    let (analysed, unreadable) = analyse(&engine, options, &clips);
    let wall_s = started.elapsed().as_secs_f64();
    let report = ForgeryReport::new(options, &clips, &analysed, unreadable, wall_s);
    let json = serde_json::to_value(&report).map_err(|error| error.to_string())?;
    if let Some(dir) = &options.output.report {
        let trials: Vec<Scored> = analysed
            .iter()
            .map(|(clip, verdict)| Scored {
                a: clip.file.clone(),
                b: clip.kind.clone(),
                // "genuine" here is a real video; lower fakeness is more genuine.
                genuine: clip.real,
                score: -fused(verdict),
            })
            .collect();
        Report {
            json: &json,
            trials: &trials,
            plot: None,
            summary: summary(&report),
        }
        .write(dir)?;
    }
    if options.output.json {
        println!("{json}");
    } else {
        print_text(&report);
    }
    Ok(())
}

/// The labels file: each video, real or fake, its kind (the `--by` column) and its data set.
fn read_clips(options: &ForgeryEval) -> Result<Vec<Clip>, String> {
    let by = options.by.as_str();
    let with_set = read_columns(&options.labels, &["file", "label", by, "set"]);
    let rows = match with_set {
        Ok(rows) => rows,
        Err(_) => read_columns(&options.labels, &["file", "label", by])?,
    };
    let default_set = data_set_name(&options.labels);
    let clips: Vec<Clip> = rows
        .into_iter()
        .map(|row| match row[1].as_str() {
            "real" | "fake" => Ok(Clip {
                file: row[0].clone(),
                real: row[1] == "real",
                kind: row[2].clone(),
                set: row.get(3).cloned().unwrap_or_else(|| default_set.clone()),
            }),
            other => Err(format!(
                "{}: label must be real or fake, got {other:?}",
                options.labels.display()
            )),
        })
        .collect::<Result<_, _>>()?;
    if clips.is_empty() {
        return Err(format!("{}: no videos", options.labels.display()));
    }
    Ok(clips)
}

/// Every video through the forgery analysis: the verdicts, and the videos that could not be read
/// or analysed (with why).
fn analyse<'c>(
    engine: &vouch::Engine,
    options: &ForgeryEval,
    clips: &'c [Clip],
) -> (Vec<(&'c Clip, ForgeryVerdict)>, Vec<Unreadable>) {
    let progress = Progress::new(clips.len(), "videos", options.output.json);
    let mut analysed = Vec::new();
    let mut unreadable = Vec::new();
    for clip in clips {
        let verdict = std::fs::read(options.dir.join(&clip.file))
            .map_err(|e| e.to_string())
            .and_then(|bytes| engine.forgery().analyze(&bytes).map_err(|e| e.to_string()));
        match verdict {
            Ok(verdict) => analysed.push((clip, verdict)),
            Err(error) => unreadable.push(Unreadable {
                file: clip.file.clone(),
                error,
            }),
        }
        progress.tick();
    }
    drop(progress);
    (analysed, unreadable)
}

/// The fused fakeness score of a verdict.
fn fused(verdict: &ForgeryVerdict) -> f64 {
    f64::from(verdict.score)
}

/// report.json of `eval forgery` (and `--json`'s output). Written through a JSON value, whose
/// keys serde_json sorts: the file keeps the order it always had.
#[derive(Serialize)]
struct ForgeryReport {
    data_set: String,
    videos: usize,
    real: usize,
    fake: usize,
    /// Forgeries not judged fake.
    apcer: f64,
    /// Real videos judged fake.
    bpcer: f64,
    real_judged_inconclusive: f64,
    /// Of the fused score, forgeries against real videos.
    auc: Option<f64>,
    per_kind: Vec<KindRow>,
    /// The per-kind rows of each data set on its own, when the labels name several.
    per_set: Vec<SetRows>,
    real_signal_values: Vec<SignalValues>,
    clips: Vec<ClipResult>,
    videos_unreadable: usize,
    unreadable: Vec<Unreadable>,
    ms_per_video: f64,
    threads: usize,
    wall_s: f64,
}

/// One kind (or family) of video: its verdict shares and, for forgeries, the AUCs.
#[derive(Serialize)]
struct KindRow {
    kind: String,
    label: &'static str,
    videos: usize,
    judged_fake: f64,
    judged_inconclusive: f64,
    judged_real: f64,
    /// Real kinds: judged fake.
    #[serde(skip_serializing_if = "Option::is_none")]
    bpcer: Option<f64>,
    /// Forged kinds: not judged fake.
    #[serde(skip_serializing_if = "Option::is_none")]
    apcer: Option<f64>,
    /// Forged kinds: of the fused score against every real video (`Some(None)` when it cannot be
    /// computed).
    #[serde(skip_serializing_if = "Option::is_none")]
    auc: Option<Option<f64>>,
    /// Forged kinds: each signal's AUC alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    auc_per_signal: Option<BTreeMap<String, Option<f64>>>,
}

/// The per-kind rows of one data set.
#[derive(Serialize)]
struct SetRows {
    set: String,
    per_kind: Vec<KindRow>,
}

/// One signal's raw values over the real videos: quantiles of what was measured.
#[derive(Serialize)]
struct SignalValues {
    signal: &'static str,
    measured: usize,
    min: Option<f64>,
    p05: Option<f64>,
    median: Option<f64>,
    p95: Option<f64>,
    max: Option<f64>,
}

/// One video's verdict and signal values.
#[derive(Serialize)]
struct ClipResult {
    file: String,
    kind: String,
    label: &'static str,
    prediction: Prediction,
    score: f64,
    values: BTreeMap<String, Option<f64>>,
}

/// A video that could not be read or analysed.
#[derive(Serialize)]
struct Unreadable {
    file: String,
    error: String,
}

/// The per-kind rows of each data set on its own (the `set` column), when there is more than one.
fn per_set(analysed: &[(&Clip, ForgeryVerdict)]) -> Vec<SetRows> {
    let mut sets: Vec<&str> = Vec::new();
    for (clip, _) in analysed {
        if !sets.contains(&clip.set.as_str()) {
            sets.push(clip.set.as_str());
        }
    }
    if sets.len() < 2 {
        return Vec::new();
    }
    sets.iter()
        .map(|&set| {
            let of_set: Vec<(&Clip, ForgeryVerdict)> = analysed
                .iter()
                .filter(|(c, _)| c.set == set)
                .map(|(c, v)| (*c, v.clone()))
                .collect();
            SetRows {
                set: set.to_owned(),
                per_kind: kind_rows(&of_set),
            }
        })
        .collect()
}

/// Each signal's raw value over the real videos: what its thresholds are placed on.
fn real_signal_values(analysed: &[(&Clip, ForgeryVerdict)]) -> Vec<SignalValues> {
    SIGNALS
        .iter()
        .map(|&name| {
            let mut values: Vec<f32> = analysed
                .iter()
                .filter(|(c, _)| c.real)
                .filter_map(|(_, v)| v.signals.iter().find(|s| s.name == name)?.value)
                .collect();
            values.sort_by(f32::total_cmp);
            let at = |q: f64| {
                (!values.is_empty())
                    .then(|| f64::from(values[((values.len() - 1) as f64 * q).round() as usize]))
            };
            SignalValues {
                signal: name,
                measured: values.len(),
                min: at(0.0),
                p05: at(0.05),
                median: at(0.5),
                p95: at(0.95),
                max: at(1.0),
            }
        })
        .collect()
}

impl ForgeryReport {
    fn new(
        options: &ForgeryEval,
        clips: &[Clip],
        analysed: &[(&Clip, ForgeryVerdict)],
        unreadable: Vec<Unreadable>,
        wall_s: f64,
    ) -> ForgeryReport {
        let of_label = |real: bool| -> Vec<&ForgeryVerdict> {
            analysed
                .iter()
                .filter(|(c, _)| c.real == real)
                .map(|(_, v)| v)
                .collect()
        };
        let (reals, fakes) = (of_label(true), of_label(false));
        ForgeryReport {
            data_set: data_set_name(&options.labels),
            videos: clips.len(),
            real: reals.len(),
            fake: fakes.len(),
            apcer: 1.0 - share(&fakes, Prediction::Fake),
            bpcer: share(&reals, Prediction::Fake),
            real_judged_inconclusive: share(&reals, Prediction::Inconclusive),
            auc: auc(
                &fakes.iter().map(|v| fused(v)).collect::<Vec<_>>(),
                &reals.iter().map(|v| fused(v)).collect::<Vec<_>>(),
            ),
            per_kind: kind_rows(analysed),
            per_set: per_set(analysed),
            real_signal_values: real_signal_values(analysed),
            clips: analysed
                .iter()
                .map(|(clip, verdict)| ClipResult {
                    file: clip.file.clone(),
                    kind: clip.kind.clone(),
                    label: if clip.real { "real" } else { "fake" },
                    prediction: verdict.prediction,
                    score: fused(verdict),
                    values: verdict
                        .signals
                        .iter()
                        .map(|signal| (signal.name.clone(), signal.value.map(f64::from)))
                        .collect(),
                })
                .collect(),
            videos_unreadable: unreadable.len(),
            unreadable,
            ms_per_video: wall_s * 1e3 / analysed.len().max(1) as f64,
            threads: options.threads,
            wall_s,
        }
    }
}

/// The text output, from the report.
fn print_text(report: &ForgeryReport) {
    println!(
        "videos {} ({} real, {} fake), {} unreadable; {:.0} ms each on {} threads",
        report.videos,
        report.real,
        report.fake,
        report.videos_unreadable,
        report.ms_per_video,
        report.threads
    );
    println!(
        "pooled: AUC {}, APCER {} (forgeries not judged fake), BPCER {} (real judged fake), real judged inconclusive {}",
        number(report.auc),
        percent_of(report.apcer),
        percent_of(report.bpcer),
        percent_of(report.real_judged_inconclusive)
    );
    for row in &report.per_kind {
        println!("{}", kind_line(row));
    }
    for set in &report.per_set {
        println!("{}:", set.set);
        for row in &set.per_kind {
            println!("  {}", kind_line(row));
        }
    }
    println!("signal values over the real videos (min / 5th percentile / median / 95th / max):");
    for row in &report.real_signal_values {
        println!(
            "  {:<16} n {:>3}  {} / {} / {} / {} / {}",
            row.signal,
            row.measured,
            number(row.min),
            number(row.p05),
            number(row.median),
            number(row.p95),
            number(row.max),
        );
    }
}

/// Share of `of` with `prediction`.
fn share(of: &[&ForgeryVerdict], prediction: Prediction) -> f64 {
    of.iter().filter(|v| v.prediction == prediction).count() as f64 / of.len().max(1) as f64
}

/// One row per (kind, label) of `analysed`: verdict shares; BPCER for real kinds; APCER and the
/// AUC of the fused score, and of each signal alone, against every real video of `analysed` for
/// forgery kinds.
fn kind_rows(analysed: &[(&Clip, ForgeryVerdict)]) -> Vec<KindRow> {
    // A signal's fakeness; 0.5 (undecided) where it was not measured.
    let signal = |verdict: &ForgeryVerdict, name: &str| {
        verdict
            .signals
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.score)
            .map_or(0.5, f64::from)
    };
    let real_scores = |score: &dyn Fn(&ForgeryVerdict) -> f64| -> Vec<f64> {
        analysed
            .iter()
            .filter(|(c, _)| c.real)
            .map(|(_, v)| score(v))
            .collect()
    };
    let mut kinds: Vec<(&str, bool)> = Vec::new();
    for (clip, _) in analysed {
        if !kinds.contains(&(clip.kind.as_str(), clip.real)) {
            kinds.push((clip.kind.as_str(), clip.real));
        }
    }
    kinds
        .iter()
        .map(|&(kind, real)| {
            let of_kind: Vec<&ForgeryVerdict> = analysed
                .iter()
                .filter(|(c, _)| c.kind == kind && c.real == real)
                .map(|(_, v)| v)
                .collect();
            let judged_fake = share(&of_kind, Prediction::Fake);
            let mut row = KindRow {
                kind: kind.to_owned(),
                label: if real { "real" } else { "fake" },
                videos: of_kind.len(),
                judged_fake,
                judged_inconclusive: share(&of_kind, Prediction::Inconclusive),
                judged_real: share(&of_kind, Prediction::Real),
                bpcer: None,
                apcer: None,
                auc: None,
                auc_per_signal: None,
            };
            if real {
                row.bpcer = Some(judged_fake);
            } else {
                row.apcer = Some(1.0 - judged_fake);
                let forged: Vec<f64> = of_kind.iter().map(|v| fused(v)).collect();
                row.auc = Some(auc(&forged, &real_scores(&fused)));
                row.auc_per_signal = Some(
                    SIGNALS
                        .iter()
                        .map(|name| {
                            let forged: Vec<f64> =
                                of_kind.iter().map(|v| signal(v, name)).collect();
                            let genuine = real_scores(&|v| signal(v, name));
                            ((*name).to_owned(), auc(&forged, &genuine))
                        })
                        .collect(),
                );
            }
            row
        })
        .collect()
}

fn number(value: Option<f64>) -> String {
    value.map_or("-".to_owned(), |v| format!("{v:.3}"))
}

/// A rate as a percentage with two decimals, "n/a" for a non-finite one.
fn percent_of(rate: f64) -> String {
    crate::eval::report::percent_of(Some(rate))
}

/// One kind's line: label, verdict shares, its error rate and AUCs.
fn kind_line(row: &KindRow) -> String {
    let rate = if row.label == "fake" {
        let signals: Vec<String> = SIGNALS
            .iter()
            .map(|name| {
                let value = row
                    .auc_per_signal
                    .as_ref()
                    .and_then(|by_signal| by_signal.get(*name).copied().flatten());
                format!("{name} {}", number(value))
            })
            .collect();
        format!(
            "APCER {}, AUC {} (alone: {})",
            row.apcer.map_or("n/a".to_owned(), percent_of),
            number(row.auc.flatten()),
            signals.join(", ")
        )
    } else {
        format!("BPCER {}", row.bpcer.map_or("n/a".to_owned(), percent_of))
    };
    format!(
        "{:<5} {:<20} n {:>3}  fake {} inconclusive {} real {}  {rate}",
        row.label,
        row.kind,
        row.videos,
        percent_of(row.judged_fake),
        percent_of(row.judged_inconclusive),
        percent_of(row.judged_real),
    )
}

/// The "Per kind" list of summary.md.
fn kind_list(rows: &[KindRow]) -> String {
    let lines: Vec<String> = rows
        .iter()
        .map(|row| format!("- {}", kind_line(row)))
        .collect();
    format!("Per kind:\n\n{}", lines.join("\n"))
}

fn summary(r: &ForgeryReport) -> String {
    let mut s = Summary::new(&format!("Video-forgery analysis: {}", r.data_set));
    s.row(
        "videos",
        format!("{} ({} real, {} fake)", r.videos, r.real, r.fake),
    );
    s.row("AUC (pooled)", number(r.auc));
    s.row("APCER", percent_of(r.apcer));
    s.row("BPCER", percent_of(r.bpcer));
    s.row(
        "real judged inconclusive",
        percent_of(r.real_judged_inconclusive),
    );
    s.row("ms per video", format!("{:.0}", r.ms_per_video));
    s.text(&kind_list(&r.per_kind));
    for set in &r.per_set {
        s.text(&format!("{}:", set.set));
        s.text(&kind_list(&set.per_kind));
    }
    s.failed("Unreadable videos", &r.unreadable, |u| (&u.file, &u.error));
    s.finish()
}
