//! `vouch eval faces`: accuracy and speed of the face pipeline on labelled pairs.
//!
//! Every distinct image of the pairs file is analysed once (timed from reading the file to the
//! template), each pair is scored by template distance, and the figures of `vouch_bio::metrics`
//! are printed; a DET plot is written (`crate::eval::plot`), and with `--report DIR` the whole report
//! (`crate::eval::report`). `--calibrate` also fits the logistic calibration and the FMR 1e-3 threshold
//! on every cross-identity pair of the images. `vouch eval voices` ([`run_voices`]) does the same
//! for speaker verification.

pub(crate) mod documents;
pub(crate) mod face_crops;
pub(crate) mod forgery;
pub(crate) mod models;
pub(crate) mod phrases;
pub(crate) mod plot;
pub(crate) mod plot_png;
pub(crate) mod progress;
pub(crate) mod report;
pub(crate) mod spoof;
pub(crate) mod sync_features;
pub(crate) mod videos;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use plot::{write_det, DetPlot, System};
use progress::Progress;
use rayon::prelude::*;
use report::{
    as_json, data_set_name, percent_of, range_of, Intervals, Output, Report, Scored, Summary,
};
use serde::Serialize;
use vouch_bio::{bootstrap, metrics, min_dcf, rule_of_three, GroupedScore, Metrics};
use vouch_bio::{FaceError, FaceModels, FaceTemplate, RgbImage};
use vouch_bio::{VoiceModels, VoiceTemplate};
use vouch_media::{decode_image, ImageLimits, MediaError};

/// Options of `vouch eval faces`.
#[derive(clap::Args)]
pub struct FaceEval {
    /// CSV with a header and the columns img_a, img_b, same (1 or 0).
    #[arg(long)]
    pub pairs: PathBuf,
    /// Folder the image names are relative to.
    #[arg(long)]
    pub images: PathBuf,
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    #[command(flatten)]
    pub output: Output,
    /// Where to write the DET plot, .png or .svg (default: det-<pairs file stem>.png, or only
    /// the report's with --report).
    #[arg(long)]
    pub det: Option<PathBuf>,
    /// Worker threads (1 gives single-thread ms per image).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Write every pair's distance to this CSV ("inf" when a face was not found).
    #[arg(long)]
    pub scores: Option<PathBuf>,
    /// Also fit the calibration on all cross pairs of this `image,identity` labels file.
    #[arg(long)]
    pub calibrate: Option<PathBuf>,
}

struct Pair {
    a: String,
    b: String,
    same: bool,
}

/// A fixed pseudo-random sequence (PCG multiplier), so evaluation trials are the same every run.
pub(crate) struct Sequence(pub(crate) u64);

impl Sequence {
    /// The next number below `n`.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize % n.max(1)
    }
}

/// An engine for evaluations: an in-memory database, a throwaway template key, the models.
pub(crate) fn eval_engine(models: &Path, threads: usize) -> Result<vouch::Engine, String> {
    crate::engine::open(&crate::engine::eval_options(models, threads).to_string())
}

/// The header fields of a CSV file (its first line, split at commas), for lists whose optional
/// columns vary: `file` or `mp4` for the clip, and `label`, `family`, `kind` where present.
pub(crate) fn header_of(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::to_owned)
        .collect())
}

/// The column naming the clip in a clip list: `file`, or `mp4` (talking-grid's `clips.csv`).
pub(crate) fn clip_column(header: &[String]) -> &'static str {
    if header.iter().any(|name| name == "file") {
        "file"
    } else {
        "mp4"
    }
}

/// Reads a CSV with a header naming (at least) the columns `a`, `b` and `flag` (1/0 or
/// true/false): the labelled pairs both `eval faces` and `eval voices` take.
/// The named columns of each non-blank row of a CSV file with a header line, in the order asked;
/// a missing column or a short row is an error. Fields may be quoted (RFC 4180: commas inside
/// quotes, `""` for a quote), as the transcripts of talking-real are; a quoted field does not
/// span lines.
pub(crate) fn read_columns(path: &Path, names: &[&str]) -> Result<Vec<Vec<String>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .ok_or_else(|| format!("{}: empty file", path.display()))?
        .split(',')
        .map(str::trim)
        .collect();
    let columns: Vec<usize> = names
        .iter()
        .map(|name| {
            header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| format!("{}: no `{name}` column", path.display()))
        })
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for (n, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fields = csv_fields(line);
        let row = columns
            .iter()
            .map(|&i| fields.get(i).map(|f| f.trim().to_owned()))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| format!("{}: line {} is short", path.display(), n + 2))?;
        rows.push(row);
    }
    Ok(rows)
}

/// The fields of one CSV line, unquoted.
pub(crate) fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let field = fields.last_mut().expect("never empty");
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => field.push(c),
        }
    }
    fields
}

/// `a, b, flag` rows, the flag `1`/`true` or `0`/`false`.
pub(crate) fn read_labelled(
    path: &Path,
    [a, b, flag]: [&str; 3],
) -> Result<Vec<(String, String, bool)>, String> {
    read_columns(path, &[a, b, flag])?
        .into_iter()
        .map(|mut row| {
            let value = match row[2].as_str() {
                "1" | "true" => true,
                "0" | "false" => false,
                other => return Err(format!("{}: {flag} = {other:?}", path.display())),
            };
            let b = row.swap_remove(1);
            Ok((row.swap_remove(0), b, value))
        })
        .collect()
}

/// Resamples of the bootstrap intervals.
const RESAMPLES: usize = 1000;

/// The subject of each row's first sample, from `column`, when the file has that column.
pub(crate) fn read_subjects(path: &Path, column: &str) -> Option<Vec<String>> {
    read_columns(path, &[column])
        .ok()
        .map(|rows| rows.into_iter().map(|mut row| row.swap_remove(0)).collect())
}

/// 95 % intervals of a report's EER and FNMR at FMR 1e-2: the bootstrap by subject when
/// `subjects` (one per pair) are known, by pair otherwise; and the rule of three where no error
/// was observed.
pub(crate) fn confidence(
    subjects: Option<&[String]>,
    pairs: &[(bool, f64)],
    m: &Metrics,
) -> Intervals {
    let by_subject = subjects.filter(|subjects| subjects.len() == pairs.len());
    let mut index: HashMap<&str, usize> = HashMap::new();
    let grouped: Vec<GroupedScore> = pairs
        .iter()
        .enumerate()
        .map(|(n, &(genuine, score))| {
            let group = match by_subject {
                Some(subjects) => {
                    let next = index.len();
                    *index.entry(subjects[n].as_str()).or_insert(next)
                }
                None => n,
            };
            GroupedScore {
                group,
                genuine,
                score,
            }
        })
        .collect();
    let c = bootstrap(&grouped, RESAMPLES, 0x5EED);
    let pair = |i: Option<vouch_bio::Interval>| i.map(|i| [i.low, i.high]);
    Intervals {
        resampled_by: if by_subject.is_some() {
            "subject"
        } else {
            "pair"
        },
        groups: c.groups,
        resamples: c.resamples,
        eer_ci95: pair(c.eer),
        fnmr_at_fmr_1e2_ci95: pair(Some(c.fnmr_at_fmr_1e2)),
        fnmr_at_fmr_1e2_upper95: (m.fnmr_at_fmr_1e2 == 0.0).then(|| rule_of_three(m.genuine)),
        // No error on either side at some threshold: each rate is below three over its count.
        eer_upper95: m
            .eer
            .is_some_and(|eer| eer < 1e-12)
            .then(|| rule_of_three(m.genuine.min(m.impostor))),
    }
}

/// The interval lines of [`confidence`] for a person.
pub(crate) fn print_confidence(out: &mut impl Write, c: &Intervals, genuine: usize) {
    let range = |interval| range_of(interval).unwrap_or_else(|| "n/a".into());
    let _ = writeln!(
        out,
        "95 % intervals   EER {}, FNMR @ FMR 1e-2 {} (bootstrap by {}: {} resamples of {} {}s)",
        range(c.eer_ci95),
        range(c.fnmr_at_fmr_1e2_ci95),
        c.resampled_by,
        c.resamples,
        c.groups,
        c.resampled_by
    );
    if let Some(bound) = c.fnmr_at_fmr_1e2_upper95 {
        let _ = writeln!(
            out,
            "                 FNMR @ FMR 1e-2: 0 of {genuine} genuine missed, below {:.2} % at 95 % (rule of three)",
            bound * 100.0
        );
    }
    if let Some(bound) = c.eer_upper95 {
        let _ = writeln!(
            out,
            "                 EER 0: below {:.2} % at 95 % (rule of three)",
            bound * 100.0
        );
    }
}

fn read_pairs(path: &Path) -> Result<Vec<Pair>, String> {
    Ok(read_labelled(path, ["img_a", "img_b", "same"])?
        .into_iter()
        .map(|(a, b, same)| Pair { a, b, same })
        .collect())
}

/// Reads an image: JPEG/PNG through the library's decoder (EXIF, CMYK, 16-bit), other formats
/// of evaluation sets (PGM) through the `image` crate.
fn load(path: &Path) -> Result<RgbImage, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    match decode_image(&bytes, &ImageLimits::default()) {
        Ok(frame) => RgbImage::from_frame(frame).ok_or_else(|| "empty image".into()),
        Err(MediaError::UnknownFormat { .. }) => {
            let image = image::load_from_memory(&bytes)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .to_rgb8();
            let (w, h) = image.dimensions();
            RgbImage::new(w as usize, h as usize, image.into_raw())
                .ok_or_else(|| "empty image".into())
        }
        Err(error) => Err(format!("{}: {error}", path.display())),
    }
}

/// `vouch eval faces`: analyses every distinct image of the pairs once, scores the pairs by
/// template distance, and reports the figures (and the calibration, with `--calibrate`).
pub fn run(options: &FaceEval) -> Result<(), String> {
    let pairs = read_pairs(&options.pairs)?;
    if pairs.is_empty() {
        return Err(format!("{}: no pairs", options.pairs.display()));
    }
    let images = Images::of(&pairs);
    let models = FaceModels::load(&options.models).map_err(|e| e.to_string())?;
    let analysed = analyse_images(&models, options, &images.names)?;
    let templates = analysed.templates();
    let scores = score_pairs(&pairs, &images, &templates);
    let measured = metrics(&scores.genuine, &scores.impostor);
    let intervals = confidence(
        read_subjects(&options.pairs, "id_a").as_deref(),
        &scores.labelled,
        &measured,
    );
    if let Some(path) = &options.scores {
        write_scores(path, &scores.trials)?;
    }
    let findings = FaceFindings {
        data_set: data_set_name(&options.pairs),
        images: &images,
        analysed: &analysed,
        scores: &scores,
        metrics: &measured,
        intervals: &intervals,
        threshold: face_threshold(),
    };
    let plot = findings.det_plot();
    let det_path = det_path(
        options.det.as_deref(),
        options.output.report.as_deref(),
        &options.pairs,
    );
    if let Some(path) = &det_path {
        write_det(path, &plot)?;
    }
    let report = findings.report(
        options,
        plot_shown(det_path.as_deref(), options.output.report.as_deref()),
    );
    let json = serde_json::to_value(&report).map_err(|error| error.to_string())?;
    if options.output.json {
        println!("{json}");
    } else {
        print_human(&report);
    }
    if let Some(dir) = &options.output.report {
        Report {
            json: &json,
            trials: &scores.trials,
            plot: Some(&plot),
            summary: face_summary(&report, options),
        }
        .write(dir)?;
    }
    if let Some(labels) = &options.calibrate {
        let fit = calibrate(labels, &images.names, &templates)?;
        print_fit(&fit)?;
    }
    Ok(())
}

/// The distinct images of the pairs, each once, in order of first appearance.
struct Images {
    names: Vec<String>,
    /// Each name's place in `names`.
    index: HashMap<String, usize>,
}

impl Images {
    /// The images that the pairs name.
    fn of(pairs: &[Pair]) -> Self {
        let mut images = Images {
            names: Vec::new(),
            index: HashMap::new(),
        };
        for pair in pairs {
            for name in [&pair.a, &pair.b] {
                if !images.index.contains_key(name) {
                    images.index.insert(name.clone(), images.names.len());
                    images.names.push(name.clone());
                }
            }
        }
        images
    }
}

/// What analysing every image found: per image (in the order of `Images::names`) its template or
/// why there is none (`no face`, or why it could not be read), and the time it took.
struct Analysed {
    results: Vec<(Result<FaceTemplate, String>, f64)>,
    /// The time analysing all images took, seconds.
    wall_s: f64,
}

/// Analyses every image once on `--threads` workers, each timed from reading the file to the
/// template, after one untimed warm-up.
fn analyse_images(
    models: &FaceModels,
    options: &FaceEval,
    names: &[String],
) -> Result<Analysed, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads.max(1))
        .build()
        .map_err(|e| e.to_string())?;
    // One untimed warm-up, as the peer does.
    if let Ok(image) = load(&options.images.join(&names[0])) {
        let _ = models.analyze(&image);
    }
    let progress = Progress::new(names.len(), "images", options.output.json);
    let started = Instant::now();
    let results = pool.install(|| {
        names
            .par_iter()
            .map(|name| {
                let start = Instant::now();
                let result = face_template(models, &options.images.join(name));
                let ms = start.elapsed().as_secs_f64() * 1000.0;
                progress.tick();
                (result, ms)
            })
            .collect()
    });
    drop(progress);
    Ok(Analysed {
        results,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// The face template of the image at `path`; the error `no face` when none was found.
fn face_template(models: &FaceModels, path: &Path) -> Result<FaceTemplate, String> {
    load(path).and_then(|image| match models.analyze(&image) {
        Ok(face) => Ok(face.template),
        Err(FaceError::NoFace) => Err("no face".into()),
        Err(error) => Err(error.to_string()),
    })
}

impl Analysed {
    /// Each image's template, when it has one.
    fn templates(&self) -> Vec<Option<&FaceTemplate>> {
        self.results.iter().map(|(r, _)| r.as_ref().ok()).collect()
    }

    /// The images that could not be read or decoded, with why. Such a file is a failure to
    /// acquire: counted and listed, and its pairs scored as no match, like a face that was not
    /// found; the run goes on.
    fn unreadable(&self, names: &[String]) -> Vec<UnreadableImage> {
        names
            .iter()
            .zip(&self.results)
            .filter_map(|(name, (result, _))| match result {
                Err(error) if error != "no face" => Some(UnreadableImage {
                    image: name.clone(),
                    error: error.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// The images in which no face was found.
    fn no_face(&self, names: &[String]) -> Vec<String> {
        names
            .iter()
            .zip(&self.results)
            .filter(|(_, (result, _))| matches!(result, Err(error) if error == "no face"))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The mean time per image, ms.
    fn ms_per_image(&self) -> f64 {
        self.results.iter().map(|(_, ms)| ms).sum::<f64>() / self.results.len() as f64
    }
}

/// Every pair's (or trial's) score, split by label, and as the rows of scores.csv.
struct PairScores {
    genuine: Vec<f64>,
    impostor: Vec<f64>,
    /// (genuine, score) per pair in the file's order, for the intervals.
    labelled: Vec<(bool, f64)>,
    trials: Vec<Scored>,
}

impl PairScores {
    /// Room for `pairs` pairs.
    fn with_capacity(pairs: usize) -> Self {
        PairScores {
            genuine: Vec::new(),
            impostor: Vec::new(),
            labelled: Vec::with_capacity(pairs),
            trials: Vec::with_capacity(pairs),
        }
    }

    /// Keeps one pair's score.
    fn push(&mut self, a: &str, b: &str, genuine: bool, score: f64) {
        self.labelled.push((genuine, score));
        self.trials.push(Scored {
            a: a.to_owned(),
            b: b.to_owned(),
            genuine,
            score,
        });
        if genuine {
            self.genuine.push(score);
        } else {
            self.impostor.push(score);
        }
    }
}

/// Scores every pair by template distance; a pair with a side without a template scores +inf.
fn score_pairs(pairs: &[Pair], images: &Images, templates: &[Option<&FaceTemplate>]) -> PairScores {
    let score = |a: &str, b: &str| match (templates[images.index[a]], templates[images.index[b]]) {
        (Some(x), Some(y)) => f64::from(x.distance(y)),
        _ => f64::INFINITY,
    };
    let mut scores = PairScores::with_capacity(pairs.len());
    for pair in pairs {
        scores.push(&pair.a, &pair.b, pair.same, score(&pair.a, &pair.b));
    }
    scores
}

/// Writes `--scores`: every pair's distance (`inf` when a face was not found).
fn write_scores(path: &Path, trials: &[Scored]) -> Result<(), String> {
    let mut lines = String::from("img_a,img_b,same,distance\n");
    for trial in trials {
        lines.push_str(&format!(
            "{},{},{},{}\n",
            trial.a,
            trial.b,
            u8::from(trial.genuine),
            trial.score
        ));
    }
    std::fs::write(path, lines).map_err(|e| format!("{}: {e}", path.display()))
}

/// The shipped face threshold (a distance), rounded to the 4 decimals it is written with, not
/// the f32 widening noise.
fn face_threshold() -> f64 {
    (f64::from(vouch_bio::FACE_CALIBRATION.threshold) * 1e4).round() / 1e4
}

/// The share of `scores` for which `hit` holds (0 when there are none).
fn share_where(scores: &[f64], hit: impl Fn(f64) -> bool) -> f64 {
    scores.iter().filter(|&&s| hit(s)).count() as f64 / scores.len().max(1) as f64
}

/// Everything `eval faces` found, for the DET plot and the report.
struct FaceFindings<'a> {
    data_set: String,
    images: &'a Images,
    analysed: &'a Analysed,
    scores: &'a PairScores,
    metrics: &'a Metrics,
    intervals: &'a Intervals,
    /// The shipped threshold, a distance.
    threshold: f64,
}

impl FaceFindings<'_> {
    /// The DET plot of the pairs, the shipped threshold marked.
    fn det_plot(&self) -> DetPlot {
        DetPlot {
            title: format!(
                "Face verification DET: {} ({} genuine, {} impostor pairs)",
                self.data_set, self.metrics.genuine, self.metrics.impostor
            ),
            systems: vec![System {
                label: format!("Vouch faces ({})", vouch_bio::FACE_MODEL_ID),
                genuine: self.scores.genuine.clone(),
                impostor: self.scores.impostor.clone(),
                threshold: Some((self.threshold, self.threshold.to_string())),
                eer_interval: interval_pair(self.intervals.eer_ci95),
            }],
        }
    }

    /// The share of pairs judged right at distance `threshold`.
    fn accuracy_at(&self, threshold: f64) -> f64 {
        let (genuine, impostor) = (&self.scores.genuine, &self.scores.impostor);
        let right = genuine.iter().filter(|&&s| s <= threshold).count()
            + impostor.iter().filter(|&&s| s > threshold).count();
        right as f64 / self.scores.labelled.len() as f64
    }

    /// report.json (and `--json`'s output).
    fn report(&self, options: &FaceEval, det_plot: Option<String>) -> FaceReport<'_> {
        let (measured, names, threshold) = (self.metrics, &self.images.names, self.threshold);
        let unreadable = self.analysed.unreadable(names);
        let no_face_images = self.analysed.no_face(names);
        let no_face = no_face_images.len();
        let face_models = [
            vouch_bio::infer::FACE_DETECTOR_SHORT,
            vouch_bio::infer::FACE_DETECTOR_FULL,
            vouch_bio::infer::FACE_LANDMARKS,
            vouch_bio::infer::FACE_EMBEDDER,
        ];
        FaceReport {
            data_set: self.data_set.clone(),
            model_id: vouch_bio::FACE_MODEL_ID,
            model_version: vouch_bio::FACE_MODEL_VERSION,
            models: face_models
                .iter()
                .map(|spec| ModelFile {
                    file: spec.file,
                    sha256: spec.sha256,
                })
                .collect(),
            eer: measured.eer,
            fnmr_at_fmr_1e2: measured.fnmr_at_fmr_1e2,
            fnmr_at_fmr_1e3: measured.fnmr_at_fmr_1e3,
            confidence: self.intervals,
            ftd_rate: no_face as f64 / names.len() as f64,
            fta_rate: (no_face + unreadable.len()) as f64 / names.len() as f64,
            ms_per_image: self.analysed.ms_per_image(),
            pairs: self.scores.labelled.len(),
            genuine: measured.genuine,
            impostor: measured.impostor,
            images: names.len(),
            images_no_face: no_face,
            no_face: no_face_images,
            images_unreadable: unreadable.len(),
            unreadable,
            eer_threshold: measured.eer_threshold,
            threshold,
            accuracy_at_threshold: self.accuracy_at(threshold),
            fmr_at_threshold: share_where(&self.scores.impostor, |s| s <= threshold),
            fnmr_at_threshold: share_where(&self.scores.genuine, |s| s > threshold),
            threads: options.threads,
            wall_s: self.analysed.wall_s,
            det_plot,
        }
    }
}

/// report.json of `eval faces` (and `--json`'s output). Written through a JSON value, whose keys
/// serde_json sorts: the file keeps the order it always had.
#[derive(Serialize)]
struct FaceReport<'a> {
    data_set: String,
    model_id: &'static str,
    model_version: u32,
    models: Vec<ModelFile>,
    eer: Option<f64>,
    fnmr_at_fmr_1e2: f64,
    fnmr_at_fmr_1e3: f64,
    confidence: &'a Intervals,
    /// Failure to detect: images without a face.
    ftd_rate: f64,
    /// Failure to acquire: images without a face or unreadable.
    fta_rate: f64,
    ms_per_image: f64,
    pairs: usize,
    genuine: usize,
    impostor: usize,
    images: usize,
    images_no_face: usize,
    no_face: Vec<String>,
    images_unreadable: usize,
    unreadable: Vec<UnreadableImage>,
    /// A distance.
    eer_threshold: Option<f64>,
    /// The shipped threshold, a distance.
    threshold: f64,
    accuracy_at_threshold: f64,
    fmr_at_threshold: f64,
    fnmr_at_threshold: f64,
    threads: usize,
    wall_s: f64,
    det_plot: Option<String>,
}

/// A model file and its digest.
#[derive(Serialize)]
struct ModelFile {
    file: &'static str,
    sha256: &'static str,
}

/// An image that could not be read or decoded.
#[derive(Serialize)]
struct UnreadableImage {
    image: String,
    error: String,
}

/// Where the DET plot goes besides a `--report` directory: `--det`; else nowhere when there is
/// a report; else `det-<labels file stem>.png` in the working directory.
pub(crate) fn det_path(
    det: Option<&Path>,
    report: Option<&Path>,
    labels: &Path,
) -> Option<PathBuf> {
    match (det, report) {
        (Some(path), _) => Some(path.to_owned()),
        (None, Some(_)) => None,
        (None, None) => {
            let stem = labels
                .file_stem()
                .map_or("trials".into(), |s| s.to_string_lossy().into_owned());
            Some(PathBuf::from(format!("det-{stem}.png")))
        }
    }
}

/// The DET plot a report names: `--det`'s, else the report directory's PNG.
pub(crate) fn plot_shown(det: Option<&Path>, report: Option<&Path>) -> Option<String> {
    det.map(Path::to_owned)
        .or_else(|| report.map(|dir| dir.join("det.png")))
        .map(|path| path.display().to_string())
}

/// A `[low, high]` interval as the plot takes it.
pub(crate) fn interval_pair(interval: Option<[f64; 2]>) -> Option<(f64, f64)> {
    interval
        .filter(|[low, high]| low.is_finite() && high.is_finite())
        .map(|[low, high]| (low, high))
}

/// summary.md of `eval faces`.
fn face_summary(r: &FaceReport, options: &FaceEval) -> String {
    let mut s = Summary::new(&format!("Face verification: {}", r.data_set));
    s.row(
        "data set",
        format!(
            "`{}`, images in `{}`",
            options.pairs.display(),
            options.images.display()
        ),
    );
    s.row(
        "pairs",
        format!(
            "{} ({} genuine, {} impostor) over {} images",
            r.pairs, r.genuine, r.impostor, r.images
        ),
    );
    s.row(
        "model",
        format!(
            "{} version {}: {}",
            r.model_id,
            r.model_version,
            model_files(&r.models)
        ),
    );
    s.row("EER", with_interval(r.eer, r.confidence.eer_ci95));
    s.row(
        "FNMR @ FMR 1e-2",
        with_interval(Some(r.fnmr_at_fmr_1e2), r.confidence.fnmr_at_fmr_1e2_ci95),
    );
    s.row("FNMR @ FMR 1e-3", percent_of(Some(r.fnmr_at_fmr_1e3)));
    s.intervals(r.confidence, r.genuine);
    s.row(
        "shipped threshold",
        format!(
            "distance {}: FMR {}, FNMR {}, accuracy {}",
            as_json(r.threshold),
            percent_of(Some(r.fmr_at_threshold)),
            percent_of(Some(r.fnmr_at_threshold)),
            percent_of(Some(r.accuracy_at_threshold))
        ),
    );
    s.row(
        "EER threshold",
        finite(r.eer_threshold).map_or("n/a".into(), |t| format!("distance {t:.4}")),
    );
    s.row(
        "failure to detect",
        format!(
            "{} of {} images ({})",
            r.images_no_face,
            r.images,
            percent_of(Some(r.ftd_rate))
        ),
    );
    s.row(
        "unreadable",
        format!("{} images (scored as no match)", r.images_unreadable),
    );
    s.row(
        "time",
        format!(
            "{:.1} ms per image on {} thread(s), {:.1} s in all",
            finite(Some(r.ms_per_image)).unwrap_or(0.0),
            r.threads,
            finite(Some(r.wall_s)).unwrap_or(0.0)
        ),
    );
    s.text("Pairs with an image that has no face, or that could not be read, score as no match (distance +inf) and stay in the rates.");
    s.text("![DET curve](det.png)");
    s.failed("Failure to detect", &r.no_face, |name| {
        (name.as_str(), "no face found")
    });
    s.failed("Unreadable images", &r.unreadable, |entry| {
        (entry.image.as_str(), entry.error.as_str())
    });
    s.finish()
}

/// A figure JSON can write: none for a missing or non-finite one (JSON's null), as the text
/// output read it back from the JSON.
fn finite(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite())
}

/// A rate with its 95 % interval, when there is one.
fn with_interval(rate: Option<f64>, interval: Option<[f64; 2]>) -> String {
    match range_of(interval) {
        Some(range) => format!("{} (95 % interval {range})", percent_of(rate)),
        None => percent_of(rate),
    }
}

/// `file (sha256 prefix)` of each model of a report.
fn model_files(models: &[ModelFile]) -> String {
    models
        .iter()
        .map(|m| format!("{} ({})", m.file, m.sha256.get(..12).unwrap_or("")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_human(r: &FaceReport) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "pairs            {} ({} genuine, {} impostor), {} images",
        r.pairs, r.genuine, r.impostor, r.images
    );
    let _ = writeln!(out, "EER              {}", percent_of(r.eer));
    let _ = writeln!(
        out,
        "FNMR @ FMR 1e-2  {}",
        percent_of(Some(r.fnmr_at_fmr_1e2))
    );
    let _ = writeln!(
        out,
        "FNMR @ FMR 1e-3  {}",
        percent_of(Some(r.fnmr_at_fmr_1e3))
    );
    print_confidence(&mut out, r.confidence, r.genuine);
    let _ = writeln!(
        out,
        "failure to detect {} ({} images)",
        percent_of(Some(r.ftd_rate)),
        r.images_no_face
    );
    if !r.unreadable.is_empty() {
        let _ = writeln!(
            out,
            "unreadable       {} images (scored as no match):",
            r.unreadable.len()
        );
        for entry in &r.unreadable {
            let _ = writeln!(out, "  {}: {}", entry.image, entry.error);
        }
    }
    let _ = writeln!(
        out,
        "accuracy at the default threshold {}: {}",
        as_json(r.threshold),
        percent_of(Some(r.accuracy_at_threshold))
    );
    let _ = writeln!(
        out,
        "ms per image     {:.1} ({} thread(s))",
        finite(Some(r.ms_per_image)).unwrap_or(0.0),
        r.threads
    );
    if let Some(path) = &r.det_plot {
        let _ = writeln!(out, "DET plot         {path}");
    }
}

/// Fits the calibration (`vouch_bio::fit_calibration`) on every pair of the labelled images in
/// the same folder that both have a face.
fn calibrate(
    labels: &Path,
    names: &[String],
    templates: &[Option<&FaceTemplate>],
) -> Result<FitReport, String> {
    let text = std::fs::read_to_string(labels).map_err(|e| format!("{}: {e}", labels.display()))?;
    let identity: HashMap<&str, &str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(','))
        .map(|(a, b)| (a.trim(), b.trim()))
        .collect();
    // Images in different folders (pooled data sets) are not paired with each other: such pairs are
    // trivially different and would loosen the FMR 1e-3 threshold.
    let folder = |name: &str| name.rsplit_once('/').map_or("", |(dir, _)| dir).to_string();
    let known: Vec<(&str, String, &FaceTemplate)> = names
        .iter()
        .zip(templates)
        .filter_map(|(n, t)| Some((identity.get(n.as_str()).copied()?, folder(n), (*t)?)))
        .collect();
    let (mut genuine, mut impostor) = (Vec::new(), Vec::new());
    for i in 0..known.len() {
        for j in i + 1..known.len() {
            if known[i].1 != known[j].1 {
                continue;
            }
            let d = f64::from(known[i].2.distance(known[j].2));
            if known[i].0 == known[j].0 {
                genuine.push(d);
            } else {
                impostor.push(d);
            }
        }
    }
    fit_report(&genuine, &impostor)
}

/// The logistic calibration and FMR 1e-3 threshold fitted on genuine and impostor distances.
fn fit_report(genuine: &[f64], impostor: &[f64]) -> Result<FitReport, String> {
    let fit = vouch_bio::fit_calibration(genuine, impostor)
        .ok_or("calibration needs genuine and impostor pairs with a template on both sides")?;
    Ok(FitReport {
        calibration: Calibration {
            midpoint: fit.midpoint,
            slope: fit.slope,
        },
        threshold_fmr_1e3: fit.threshold_fmr_1e3,
        fnmr_at_that_threshold: fit.fnmr_at_that_threshold,
        genuine_pairs: fit.genuine_pairs,
        impostor_pairs: fit.impostor_pairs,
    })
}

/// What `--calibrate` prints: the fitted calibration and the FMR 1e-3 threshold.
#[derive(Serialize)]
struct FitReport {
    calibration: Calibration,
    threshold_fmr_1e3: f64,
    fnmr_at_that_threshold: f64,
    genuine_pairs: usize,
    impostor_pairs: usize,
}

/// The logistic calibration's parameters.
#[derive(Serialize)]
struct Calibration {
    midpoint: f64,
    slope: f64,
}

/// Prints `--calibrate`'s fit, pretty, through a JSON value (sorted keys, as it always was).
fn print_fit(fit: &FitReport) -> Result<(), String> {
    let json = serde_json::to_value(fit).map_err(|error| error.to_string())?;
    println!(
        "{}",
        serde_json::to_string_pretty(&json).unwrap_or_default()
    );
    Ok(())
}

/// Options of `vouch eval voices`.
#[derive(clap::Args)]
pub struct VoiceEval {
    /// CSV with a header and the columns enroll, test, target (1 or 0).
    #[arg(long)]
    pub trials: PathBuf,
    /// Folder the audio paths are relative to.
    #[arg(long)]
    pub audio: PathBuf,
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    #[command(flatten)]
    pub output: Output,
    /// Where to write the DET plot, .png or .svg (default: det-<trials file stem>.png, or only
    /// the report's with --report).
    #[arg(long)]
    pub det: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Also fit the calibration on all pairs of this labels file (columns `path`, `speaker`;
    /// files are paired only with files under the same first folder).
    #[arg(long)]
    pub calibrate: Option<PathBuf>,
    /// Use only the first S seconds of every recording (a speech-duration study).
    #[arg(long)]
    pub max_seconds: Option<f32>,
    /// Also score with S-norm against a cohort: the `--calibrate` recordings of the same
    /// corpus whose speaker is neither side's (a score-normalisation study).
    #[arg(long, requires = "calibrate")]
    pub snorm: bool,
    /// The speaker pipeline: `campplus` (what Voice Recognition ships: CAM++ on Silero's speech
    /// segments), `campplus-whole` (CAM++ on the whole recording, no speech detection: a study)
    /// or `ge2e` (Resemblyzer's GE2E on the speech segments, the model before CAM++).
    #[arg(long, value_enum, default_value_t = SpeakerModel::Campplus)]
    pub model: SpeakerModel,
}

/// The speaker pipelines `eval voices` can measure.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SpeakerModel {
    Campplus,
    CampplusWhole,
    Ge2e,
}

/// The unit embedding of a recording by a pipeline other than the shipped one; `None` when it has
/// no speech to embed.
fn study_embedding(
    model: SpeakerModel,
    models: &VoiceModels,
    ge2e: Option<&vouch_bio::Ge2e>,
    samples: &[f32],
) -> Result<Option<Vec<f32>>, String> {
    if samples.is_empty() {
        return Ok(None);
    }
    match (model, ge2e) {
        (SpeakerModel::CampplusWhole, _) => models
            .embed_speech(samples)
            .map(|e| Some(e.to_vec()))
            .map_err(|e| e.to_string()),
        (SpeakerModel::Ge2e, Some(ge2e)) => {
            // As Voice Recognition ran it: volume raised on the whole recording, silences cut
            // with Silero's segments, GE2E on the speech.
            let (segments, _) = models.speech(samples).map_err(|e| e.to_string())?;
            if segments.is_empty() {
                return Ok(None);
            }
            let mut audio = samples.to_vec();
            vouch_bio::normalize_volume(&mut audio);
            let speech: Vec<f32> = segments
                .iter()
                .flat_map(|s| audio[s.start..s.end].iter().copied())
                .collect();
            ge2e.embed_utterance(&speech)
                .map(|e| Some(e.to_vec()))
                .map_err(|e| e.to_string())
        }
        _ => Err("no study pipeline for the shipped model".into()),
    }
}

struct Trial {
    enroll: String,
    test: String,
    target: bool,
}

fn read_trials(path: &Path) -> Result<Vec<Trial>, String> {
    Ok(read_labelled(path, ["enroll", "test", "target"])?
        .into_iter()
        .map(|(enroll, test, target)| Trial {
            enroll,
            test,
            target,
        })
        .collect())
}

/// `path,speaker` rows of a labels CSV (other columns ignored; rows with either empty skipped).
fn read_speakers(path: &Path) -> Result<Vec<(String, String)>, String> {
    Ok(read_columns(path, &["path", "speaker"])?
        .into_iter()
        .filter_map(|mut row| {
            let speaker = row.pop()?;
            let path = row.pop()?;
            (!path.is_empty() && !speaker.is_empty()).then_some((path, speaker))
        })
        .collect())
}

/// What `eval voices` found in one recording.
struct Embedded {
    template: Option<VoiceTemplate>,
    /// The unit embedding of a study pipeline (`--model campplus-whole` or `ge2e`).
    embedding: Option<Vec<f32>>,
    too_little_speech: bool,
    processing_s: f64,
    audio_s: f64,
}

fn embed_file(
    models: &VoiceModels,
    study: Option<(SpeakerModel, Option<&vouch_bio::Ge2e>)>,
    path: &Path,
    max_seconds: Option<f32>,
) -> Result<Embedded, String> {
    use vouch_bio::VoiceError;
    use vouch_media::{decode_audio, DecodeLimits};
    let start = Instant::now();
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (mut pcm, _) = decode_audio(&bytes, &DecodeLimits::default())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(seconds) = max_seconds {
        pcm.samples.truncate((seconds.max(0.0) * 16_000.0) as usize);
    }
    if let Some((model, ge2e)) = study {
        let embedding = study_embedding(model, models, ge2e, &pcm.samples)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(Embedded {
            template: None,
            too_little_speech: embedding.is_none(),
            embedding,
            processing_s: start.elapsed().as_secs_f64(),
            audio_s: pcm.samples.len() as f64 / 16_000.0,
        });
    }
    let (template, too_little_speech) = match models.analyze(&pcm.samples) {
        Ok(voice) => (Some(voice.template), voice.quality.is_not_enough_speech()),
        Err(VoiceError::NoSpeech(_)) => (None, true),
        Err(error) => return Err(format!("{}: {error}", path.display())),
    };
    Ok(Embedded {
        embedding: None,
        template,
        too_little_speech,
        processing_s: start.elapsed().as_secs_f64(),
        audio_s: pcm.samples.len() as f64 / 16_000.0,
    })
}

/// Calibration distances: every pair of labelled files under the same first folder (pooled corpora
/// are not paired with each other: such pairs are trivially different).
fn voice_pairs(
    labels: &[(String, String)],
    templates: &HashMap<&str, Option<&VoiceTemplate>>,
) -> (Vec<f64>, Vec<f64>) {
    let corpus = |path: &str| path.split('/').next().unwrap_or_default().to_string();
    let known: Vec<(&str, String, &VoiceTemplate)> = labels
        .iter()
        .filter_map(|(path, speaker)| {
            Some((
                speaker.as_str(),
                corpus(path),
                (*templates.get(path.as_str())?)?,
            ))
        })
        .collect();
    let (mut genuine, mut impostor) = (Vec::new(), Vec::new());
    for (i, a) in known.iter().enumerate() {
        for b in &known[i + 1..] {
            if a.1 != b.1 {
                continue;
            }
            let d = f64::from(a.2.distance(b.2));
            if a.0 == b.0 {
                genuine.push(d);
            } else {
                impostor.push(d);
            }
        }
    }
    (genuine, impostor)
}

/// Symmetric score normalisation (S-norm) of every trial against a cohort of impostor recordings:
/// the labelled recordings of the same corpus whose speaker is neither side's. Scores are cosine
/// similarities; returned as distances (negated normalised scores, lower is more alike), `+inf`
/// where a side has no template or the cohort is too small.
fn snorm_scores(
    trials: &[Trial],
    labels: &[(String, String)],
    templates: &HashMap<&str, Option<&VoiceTemplate>>,
) -> (Vec<f64>, Vec<f64>) {
    let corpus = |path: &str| path.split('/').next().unwrap_or_default().to_string();
    let speaker: HashMap<&str, &str> = labels
        .iter()
        .map(|(p, s)| (p.as_str(), s.as_str()))
        .collect();
    let cohort: Vec<(&str, String, &VoiceTemplate)> = labels
        .iter()
        .filter_map(|(p, s)| Some((s.as_str(), corpus(p), (*templates.get(p.as_str())?)?)))
        .collect();
    let stats = |t: &VoiceTemplate, members: &[&VoiceTemplate]| {
        let scores: Vec<f64> = members
            .iter()
            .map(|c| 1.0 - f64::from(t.distance(c)))
            .collect();
        let mean = scores.iter().sum::<f64>() / scores.len() as f64;
        let var = scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / scores.len() as f64;
        (mean, var.sqrt().max(1e-6))
    };
    let (mut genuine, mut impostor) = (Vec::new(), Vec::new());
    for trial in trials {
        let (e, t) = (trial.enroll.as_str(), trial.test.as_str());
        let sides = (
            templates.get(e).copied().flatten(),
            templates.get(t).copied().flatten(),
        );
        let excluded = [speaker.get(e).copied(), speaker.get(t).copied()];
        let members: Vec<&VoiceTemplate> = cohort
            .iter()
            .filter(|(s, c, _)| *c == corpus(e) && !excluded.contains(&Some(*s)))
            .map(|(_, _, template)| *template)
            .collect();
        let score = match sides {
            (Some(a), Some(b)) if members.len() >= 10 => {
                let raw = 1.0 - f64::from(a.distance(b));
                let (me, se) = stats(a, &members);
                let (mt, st) = stats(b, &members);
                -0.5 * ((raw - me) / se + (raw - mt) / st)
            }
            _ => f64::INFINITY,
        };
        if trial.target {
            genuine.push(score);
        } else {
            impostor.push(score);
        }
    }
    (genuine, impostor)
}

/// `vouch eval voices`: EER, minDCF (p_target 0.01) and real-time factor on `enroll,test,target`
/// trials; every distinct file is embedded once, trials are scored by cosine distance (a side
/// without speech scores +inf).
pub fn run_voices(options: &VoiceEval) -> Result<(), String> {
    let trials = read_trials(&options.trials)?;
    if trials.is_empty() {
        return Err(format!("{}: no trials", options.trials.display()));
    }
    let labels = match &options.calibrate {
        Some(path) => read_speakers(path)?,
        None => Vec::new(),
    };
    let (models, ge2e) = speaker_models(options)?;
    let study = (options.model != SpeakerModel::Campplus).then_some((options.model, ge2e.as_ref()));
    let recordings = embed_recordings(&models, study, options, recording_names(&trials, &labels))?;
    let templates = recordings.templates();
    let scores = score_trials(&trials, &templates, &recordings.embeddings());
    let measured = metrics(&scores.genuine, &scores.impostor);
    let intervals = confidence(
        read_subjects(&options.trials, "spk_enroll").as_deref(),
        &scores.labelled,
        &measured,
    );
    let findings = VoiceFindings {
        data_set: data_set_name(&options.trials),
        pipeline: Pipeline::of(options.model),
        recordings: &recordings,
        scores: &scores,
        metrics: &measured,
        intervals: &intervals,
        min_dcf: min_dcf(&scores.genuine, &scores.impostor, 0.01),
    };
    let plot = findings.det_plot();
    let det_path = det_path(
        options.det.as_deref(),
        options.output.report.as_deref(),
        &options.trials,
    );
    if let Some(path) = &det_path {
        write_det(path, &plot)?;
    }
    let mut report = findings.report(
        options,
        plot_shown(det_path.as_deref(), options.output.report.as_deref()),
    );
    if options.snorm {
        report.snorm = Some(snorm_figures(&trials, &labels, &templates));
    }
    let json = serde_json::to_value(&report).map_err(|error| error.to_string())?;
    if options.output.json {
        println!("{json}");
    } else {
        findings.print(&report, options);
    }
    if let Some(dir) = &options.output.report {
        Report {
            json: &json,
            trials: &scores.trials,
            plot: Some(&plot),
            summary: voice_summary(&report, options),
        }
        .write(dir)?;
    }
    if options.calibrate.is_some() {
        let (genuine, impostor) = voice_pairs(&labels, &templates);
        let fit = fit_report(&genuine, &impostor)?;
        print_fit(&fit)?;
    }
    Ok(())
}

/// The shipped voice models, and GE2E with `--model ge2e`; an error for `--calibrate` (and so
/// `--snorm`) with a study pipeline.
fn speaker_models(options: &VoiceEval) -> Result<(VoiceModels, Option<vouch_bio::Ge2e>), String> {
    let models = VoiceModels::load(&options.models).map_err(|e| e.to_string())?;
    if options.model != SpeakerModel::Campplus && options.calibrate.is_some() {
        return Err("--calibrate and --snorm are for the shipped model (campplus)".into());
    }
    let ge2e = match options.model {
        SpeakerModel::Ge2e => {
            Some(vouch_bio::Ge2e::load(&options.models).map_err(|e| e.to_string())?)
        }
        _ => None,
    };
    Ok((models, ge2e))
}

/// Every distinct recording the trials and the calibration labels name, each once, in order of
/// first appearance.
fn recording_names<'t>(trials: &'t [Trial], labels: &'t [(String, String)]) -> Vec<&'t str> {
    let mut names: Vec<&str> = Vec::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let files = trials
        .iter()
        .flat_map(|t| [t.enroll.as_str(), t.test.as_str()])
        .chain(labels.iter().map(|(path, _)| path.as_str()));
    for name in files {
        if !seen.contains_key(name) {
            seen.insert(name, names.len());
            names.push(name);
        }
    }
    names
}

/// What embedding every recording found, in the order of `names`.
struct Recordings<'n> {
    names: Vec<&'n str>,
    /// One per name; an unreadable file has neither template nor embedding and takes no time.
    results: Vec<Embedded>,
    /// The files that could not be read or decoded, and why.
    unreadable: Vec<UnreadableFile>,
    /// The time embedding all recordings took, seconds.
    wall_s: f64,
}

/// Embeds every recording once on `--threads` workers, with the shipped pipeline or, given
/// `study`, a study pipeline.
fn embed_recordings<'n>(
    models: &VoiceModels,
    study: Option<(SpeakerModel, Option<&vouch_bio::Ge2e>)>,
    options: &VoiceEval,
    names: Vec<&'n str>,
) -> Result<Recordings<'n>, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .build()
        .map_err(|e| e.to_string())?;
    let progress = Progress::new(names.len(), "recordings", options.output.json);
    let started = Instant::now();
    let attempts: Vec<Result<Embedded, String>> = pool.install(|| {
        names
            .par_iter()
            .map(|name| {
                let embedded = embed_file(
                    models,
                    study,
                    &options.audio.join(name),
                    options.max_seconds,
                );
                progress.tick();
                embedded
            })
            .collect()
    });
    drop(progress);
    let wall_s = started.elapsed().as_secs_f64();
    // A file that cannot be read or decoded is a failure to acquire: counted and listed, and its
    // trials scored as no match (like a file without speech); the run goes on.
    let mut unreadable: Vec<UnreadableFile> = Vec::new();
    let results: Vec<Embedded> = names
        .iter()
        .zip(attempts)
        .map(|(name, attempt)| {
            attempt.unwrap_or_else(|error| {
                unreadable.push(UnreadableFile {
                    file: (*name).to_owned(),
                    error,
                });
                Embedded {
                    template: None,
                    embedding: None,
                    too_little_speech: false,
                    processing_s: 0.0,
                    audio_s: 0.0,
                }
            })
        })
        .collect();
    Ok(Recordings {
        names,
        results,
        unreadable,
        wall_s,
    })
}

impl Recordings<'_> {
    /// The time spent embedding, summed over the recordings, seconds.
    fn processing_s(&self) -> f64 {
        self.results.iter().map(|r| r.processing_s).sum()
    }

    /// The length of all recordings (as far as they were used), seconds.
    fn audio_seconds(&self) -> f64 {
        self.results.iter().map(|r| r.audio_s).sum()
    }

    /// The real-time factor: processing time over audio time.
    fn real_time_factor(&self) -> f64 {
        let audio_seconds = self.audio_seconds();
        if audio_seconds > 0.0 {
            self.processing_s() / audio_seconds
        } else {
            0.0
        }
    }

    /// How many readable recordings have no speech to embed.
    fn no_speech(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.template.is_none() && r.embedding.is_none())
            .count()
            - self.unreadable.len()
    }

    /// The readable recordings with no speech to embed.
    fn no_speech_files(&self) -> Vec<&str> {
        let unreadable_names: Vec<&str> = self
            .unreadable
            .iter()
            .map(|entry| entry.file.as_str())
            .collect();
        self.names
            .iter()
            .zip(&self.results)
            .filter(|(name, r)| {
                r.template.is_none() && r.embedding.is_none() && !unreadable_names.contains(name)
            })
            .map(|(name, _)| *name)
            .collect()
    }

    /// How many recordings have too little speech (under 1 s).
    fn too_little_speech(&self) -> usize {
        self.results.iter().filter(|r| r.too_little_speech).count()
    }

    /// Each recording's template (the shipped pipeline), by name.
    fn templates(&self) -> HashMap<&str, Option<&VoiceTemplate>> {
        self.names
            .iter()
            .zip(&self.results)
            .map(|(name, r)| (*name, r.template.as_ref()))
            .collect()
    }

    /// Each recording's unit embedding (a study pipeline), by name.
    fn embeddings(&self) -> HashMap<&str, Option<&Vec<f32>>> {
        self.names
            .iter()
            .zip(&self.results)
            .map(|(name, r)| (*name, r.embedding.as_ref()))
            .collect()
    }
}

/// Scores every trial: the template distance, or one minus the cosine of the study embeddings;
/// +inf where a side has neither.
fn score_trials(
    trials: &[Trial],
    templates: &HashMap<&str, Option<&VoiceTemplate>>,
    embeddings: &HashMap<&str, Option<&Vec<f32>>>,
) -> PairScores {
    let mut scores = PairScores::with_capacity(trials.len());
    for trial in trials {
        let score = match (
            templates[trial.enroll.as_str()],
            templates[trial.test.as_str()],
            embeddings[trial.enroll.as_str()],
            embeddings[trial.test.as_str()],
        ) {
            (Some(a), Some(b), _, _) => f64::from(a.distance(b)),
            (_, _, Some(a), Some(b)) => {
                1.0 - f64::from(a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
            }
            _ => f64::INFINITY,
        };
        scores.push(&trial.enroll, &trial.test, trial.target, score);
    }
    scores
}

/// The speaker pipeline measured, as the report names it.
struct Pipeline {
    /// Its `--model` value.
    name: &'static str,
    model_id: &'static str,
    /// Its shipped threshold (a distance), if it has one.
    threshold: Option<f64>,
}

impl Pipeline {
    /// The pipeline of `--model`. The shipped threshold of each: the engine's for CAM++ on speech
    /// segments, the one Voice Recognition shipped with GE2E, none for the whole-recording study.
    fn of(model: SpeakerModel) -> Self {
        let rounded = |t: f32| (f64::from(t) * 1e4).round() / 1e4;
        match model {
            SpeakerModel::Campplus => Pipeline {
                name: "campplus",
                model_id: vouch_bio::VOICE_MODEL_ID,
                threshold: Some(rounded(vouch_bio::VOICE_CALIBRATION.threshold)),
            },
            SpeakerModel::CampplusWhole => Pipeline {
                name: "campplus-whole",
                model_id: "campplus on the whole recording (a study)",
                threshold: None,
            },
            SpeakerModel::Ge2e => Pipeline {
                name: "ge2e",
                model_id: vouch_bio::GE2E_MODEL_ID,
                threshold: Some(rounded(vouch_bio::GE2E_SHIPPED_THRESHOLD)),
            },
        }
    }
}

/// The figures of the trials scored with S-norm (`--snorm`).
fn snorm_figures(
    trials: &[Trial],
    labels: &[(String, String)],
    templates: &HashMap<&str, Option<&VoiceTemplate>>,
) -> SnormFigures {
    let (genuine, impostor) = snorm_scores(trials, labels, templates);
    let measured = metrics(&genuine, &impostor);
    SnormFigures {
        eer: measured.eer,
        min_dcf: min_dcf(&genuine, &impostor, 0.01),
        fnmr_at_fmr_1e2: measured.fnmr_at_fmr_1e2,
    }
}

/// The S-norm figures of report.json (`--snorm`).
#[derive(Serialize)]
struct SnormFigures {
    eer: Option<f64>,
    min_dcf: f64,
    fnmr_at_fmr_1e2: f64,
}

/// A recording that could not be read or decoded.
#[derive(Serialize)]
struct UnreadableFile {
    file: String,
    error: String,
}

/// report.json of `eval voices` (and `--json`'s output). Written through a JSON value, whose keys
/// serde_json sorts: the file keeps the order it always had.
#[derive(Serialize)]
struct VoiceReport<'a> {
    data_set: String,
    /// The `--model` value.
    model: &'static str,
    model_id: &'static str,
    threshold_distance: Option<f64>,
    fmr_at_threshold: Option<f64>,
    fnmr_at_threshold: Option<f64>,
    eer: Option<f64>,
    fnmr_at_fmr_1e2: f64,
    confidence: &'a Intervals,
    min_dcf: f64,
    /// Real-time factor.
    rtf: f64,
    trials: usize,
    target: usize,
    nontarget: usize,
    files: usize,
    files_without_speech: usize,
    no_speech: Vec<String>,
    files_with_too_little_speech: usize,
    files_unreadable: usize,
    unreadable: &'a [UnreadableFile],
    max_seconds: Option<f32>,
    audio_seconds: f64,
    eer_threshold_distance: Option<f64>,
    threads: usize,
    wall_s: f64,
    det_plot: Option<String>,
    /// With `--snorm` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    snorm: Option<SnormFigures>,
}

/// Everything `eval voices` found, for the DET plot, the report and the text.
struct VoiceFindings<'a> {
    data_set: String,
    pipeline: Pipeline,
    recordings: &'a Recordings<'a>,
    scores: &'a PairScores,
    metrics: &'a Metrics,
    intervals: &'a Intervals,
    /// minDCF at p_target 0.01.
    min_dcf: f64,
}

impl VoiceFindings<'_> {
    /// The DET plot of the trials, the pipeline's shipped threshold marked.
    fn det_plot(&self) -> DetPlot {
        DetPlot {
            title: format!(
                "Speaker verification DET: {} ({} target, {} non-target trials)",
                self.data_set, self.metrics.genuine, self.metrics.impostor
            ),
            systems: vec![System {
                label: format!("Vouch voices ({})", self.pipeline.model_id),
                genuine: self.scores.genuine.clone(),
                impostor: self.scores.impostor.clone(),
                threshold: self.pipeline.threshold.map(|t| (t, t.to_string())),
                eer_interval: interval_pair(self.intervals.eer_ci95),
            }],
        }
    }

    /// report.json (and `--json`'s output), without the S-norm figures.
    fn report(&self, options: &VoiceEval, det_plot: Option<String>) -> VoiceReport<'_> {
        let (measured, recordings, threshold) =
            (self.metrics, self.recordings, self.pipeline.threshold);
        VoiceReport {
            data_set: self.data_set.clone(),
            model: self.pipeline.name,
            model_id: self.pipeline.model_id,
            threshold_distance: threshold,
            fmr_at_threshold: threshold.map(|t| share_where(&self.scores.impostor, |s| s <= t)),
            fnmr_at_threshold: threshold.map(|t| share_where(&self.scores.genuine, |s| s > t)),
            eer: measured.eer,
            fnmr_at_fmr_1e2: measured.fnmr_at_fmr_1e2,
            confidence: self.intervals,
            min_dcf: self.min_dcf,
            rtf: recordings.real_time_factor(),
            trials: self.scores.labelled.len(),
            target: measured.genuine,
            nontarget: measured.impostor,
            files: recordings.names.len(),
            files_without_speech: recordings.no_speech(),
            no_speech: recordings
                .no_speech_files()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            files_with_too_little_speech: recordings.too_little_speech(),
            files_unreadable: recordings.unreadable.len(),
            unreadable: &recordings.unreadable,
            max_seconds: options.max_seconds,
            audio_seconds: recordings.audio_seconds(),
            eer_threshold_distance: measured.eer_threshold,
            threads: options.threads,
            wall_s: recordings.wall_s,
            det_plot,
            snorm: None,
        }
    }

    /// The text output of the figures.
    fn print(&self, report: &VoiceReport, options: &VoiceEval) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "trials           {} ({} target, {} non-target), {} files, {:.0} s of audio",
            report.trials,
            report.target,
            report.nontarget,
            report.files,
            self.recordings.audio_seconds()
        );
        let _ = writeln!(out, "EER              {}", percent_of(report.eer));
        let _ = writeln!(
            out,
            "FNMR @ FMR 1e-2  {}",
            percent_of(Some(report.fnmr_at_fmr_1e2))
        );
        print_confidence(&mut out, report.confidence, report.target);
        let _ = writeln!(out, "minDCF (p 0.01)  {:.4}", self.min_dcf);
        let _ = writeln!(
            out,
            "real-time factor {:.4} ({} thread(s))",
            finite(Some(report.rtf)).unwrap_or(0.0),
            options.threads
        );
        let _ = writeln!(
            out,
            "no speech found  {} files",
            self.recordings.no_speech()
        );
        let _ = writeln!(
            out,
            "too little speech {} files (under 1 s)",
            self.recordings.too_little_speech()
        );
        for entry in report.unreadable {
            let _ = writeln!(
                out,
                "unreadable       {}: {} (scored as no match)",
                entry.file, entry.error
            );
        }
        if let Some(path) = &report.det_plot {
            let _ = writeln!(out, "DET plot         {path}");
        }
        if options.snorm {
            let snorm = report.snorm.as_ref();
            let _ = writeln!(
                out,
                "S-norm           EER {}, minDCF {:.4}",
                percent_of(snorm.and_then(|s| s.eer)),
                finite(snorm.map(|s| s.min_dcf)).unwrap_or(f64::NAN)
            );
        }
    }
}

/// summary.md of `eval voices`.
fn voice_summary(r: &VoiceReport, options: &VoiceEval) -> String {
    let mut s = Summary::new(&format!("Speaker verification: {}", r.data_set));
    voice_summary_inputs(&mut s, r, options);
    voice_summary_accuracy(&mut s, r);
    voice_summary_failures_and_time(&mut s, r);
    s.text("Trials with a recording without speech, or that could not be read, score as no match (distance +inf) and stay in the rates.");
    s.text("![DET curve](det.png)");
    s.failed("No speech found", &r.no_speech, |name| {
        (name.as_str(), "no speech found")
    });
    s.failed("Unreadable recordings", r.unreadable, |entry| {
        (entry.file.as_str(), entry.error.as_str())
    });
    s.finish()
}

/// summary.md's rows on what was measured: the data set, the trials, the model, the speech used.
fn voice_summary_inputs(s: &mut Summary, r: &VoiceReport, options: &VoiceEval) {
    s.row(
        "data set",
        format!(
            "`{}`, audio in `{}`",
            options.trials.display(),
            options.audio.display()
        ),
    );
    s.row(
        "trials",
        format!(
            "{} ({} target, {} non-target) over {} recordings, {:.0} s of audio",
            r.trials,
            r.target,
            r.nontarget,
            r.files,
            finite(Some(r.audio_seconds)).unwrap_or(0.0)
        ),
    );
    s.row("model", format!("{} (`--model {}`)", r.model_id, r.model));
    if let Some(seconds) = finite(r.max_seconds.map(f64::from)) {
        s.row(
            "speech used",
            format!("the first {seconds} s of each recording"),
        );
    }
}

/// summary.md's accuracy rows: the error rates with their intervals, minDCF and the thresholds.
fn voice_summary_accuracy(s: &mut Summary, r: &VoiceReport) {
    s.row("EER", with_interval(r.eer, r.confidence.eer_ci95));
    s.row(
        "FNMR @ FMR 1e-2",
        with_interval(Some(r.fnmr_at_fmr_1e2), r.confidence.fnmr_at_fmr_1e2_ci95),
    );
    s.intervals(r.confidence, r.target);
    s.row(
        "minDCF (p_target 0.01)",
        format!("{:.4}", finite(Some(r.min_dcf)).unwrap_or(f64::NAN)),
    );
    s.row(
        "shipped threshold",
        match finite(r.threshold_distance) {
            Some(t) => format!(
                "distance {t}: FMR {}, FNMR {}",
                percent_of(r.fmr_at_threshold),
                percent_of(r.fnmr_at_threshold)
            ),
            None => "none for this model".to_owned(),
        },
    );
    s.row(
        "EER threshold",
        finite(r.eer_threshold_distance).map_or("n/a".into(), |t| format!("distance {t:.4}")),
    );
}

/// summary.md's rows on the recordings without usable speech, the time, and S-norm's EER.
fn voice_summary_failures_and_time(s: &mut Summary, r: &VoiceReport) {
    s.row(
        "no speech found",
        format!("{} recordings", r.files_without_speech),
    );
    s.row(
        "too little speech",
        format!("{} recordings (under 1 s)", r.files_with_too_little_speech),
    );
    s.row(
        "unreadable",
        format!("{} recordings (scored as no match)", r.files_unreadable),
    );
    s.row(
        "time",
        format!(
            "real-time factor {:.4} on {} thread(s), {:.1} s in all",
            finite(Some(r.rtf)).unwrap_or(0.0),
            r.threads,
            finite(Some(r.wall_s)).unwrap_or(0.0)
        ),
    );
    if let Some(eer) = finite(r.snorm.as_ref().and_then(|snorm| snorm.eer)) {
        s.row("S-norm EER", format!("{:.2} %", eer * 100.0));
    }
}

#[cfg(test)]
mod tests {
    use super::csv_fields;

    #[test]
    fn quoted_fields_keep_their_commas() {
        assert_eq!(
            csv_fields(r#"real/a.mp4,real,"Well, I'm ""14"" next year",en"#),
            ["real/a.mp4", "real", r#"Well, I'm "14" next year"#, "en"]
        );
        assert_eq!(csv_fields("a,,b"), ["a", "", "b"]);
        assert_eq!(csv_fields(""), [""]);
    }
}
