//! `vouch eval documents`: how well the machine-readable zone is read from document images.
//!
//! Every image of a `image<TAB>mrz_type<TAB>mrz_lines(|-joined)<TAB>all_check_digits_valid` file is
//! read (decoding, finding the zone, recognition, parsing; one thread, timed per document) and its
//! fields are compared with the fields of the true lines parsed the same way. A row with empty
//! lines is a document without a zone: the right answer is "no zone found" (counted apart). An
//! image that cannot be read, or a truth row whose lines do not parse, is counted and listed, and
//! the run goes on. `--report DIR` writes report.json and summary.md (no trials, no curve).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::eval::progress::Progress;
use crate::eval::report::{as_json, data_set_name, percent_of, Output, Report, Summary};
use vouch_bio::RgbImage;
use vouch_bio::{parse_mrz as parse, MrzFields};
use vouch_bio::{DocumentModels, MrzRead};
use vouch_media::{decode_image, ImageLimits};

/// Options of `vouch eval documents`.
#[derive(clap::Args)]
pub struct DocumentEval {
    /// TSV with a header: image, mrz_type, mrz_lines (|-joined), all_check_digits_valid.
    #[arg(long)]
    pub truth: PathBuf,
    /// Folder the image paths are relative to.
    #[arg(long)]
    pub dir: PathBuf,
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    #[command(flatten)]
    pub output: Output,
}

/// The fields compared.
const FIELDS: [&str; 11] = [
    "document_type",
    "issuing_state",
    "surname",
    "given_names",
    "document_number",
    "nationality",
    "date_of_birth",
    "sex",
    "expiry_date",
    "personal_number",
    "optional_data_2",
];

/// The compared fields' values, in [`FIELDS`] order.
fn field_values(f: &MrzFields) -> [(&'static str, String); 11] {
    let values = [
        &f.document_type,
        &f.issuing_state,
        &f.surname,
        &f.given_names,
        &f.document_number,
        &f.nationality,
        &f.date_of_birth,
        &f.sex,
        &f.expiry_date,
        &f.personal_number,
        &f.optional_data_2,
    ];
    std::array::from_fn(|i| (FIELDS[i], values[i].clone()))
}

struct Truth {
    image: String,
    /// The true zone's lines; empty for a document without one.
    lines: Vec<String>,
    checks_valid: bool,
}

fn read_truth(path: &Path) -> Result<Vec<Truth>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(n, line)| {
            let fields: Vec<&str> = line.split('\t').collect();
            if fields.len() < 4 {
                return Err(format!("{}: line {} is short", path.display(), n + 2));
            }
            Ok(Truth {
                image: fields[0].to_owned(),
                lines: fields[2]
                    .split('|')
                    .map(str::trim)
                    .filter(|line| !line.is_empty())
                    .map(str::to_owned)
                    .collect(),
                checks_valid: fields[3].eq_ignore_ascii_case("true"),
            })
        })
        .collect()
}

/// Runs the evaluation and prints the report.
pub fn run(options: &DocumentEval) -> Result<(), String> {
    let truths = read_truth(&options.truth)?;
    if truths.is_empty() {
        return Err(format!("{}: no documents", options.truth.display()));
    }
    let models = DocumentModels::load(&options.models).map_err(|e| e.to_string())?;
    let tally = read_documents(&models, options, &truths, &today());
    let report = tally.report(options, truths.len());
    let json = serde_json::to_value(&report).map_err(|error| error.to_string())?;
    if let Some(dir) = &options.output.report {
        Report {
            json: &json,
            trials: &[],
            plot: None,
            summary: summary(&report, options),
        }
        .write(dir)?;
    }
    if options.output.json {
        println!("{json}");
        return Ok(());
    }
    tally.print(truths.len());
    Ok(())
}

/// Today's date, `YYYY-MM-DD`, which the zone parser judges expiry dates against.
fn today() -> String {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    vouch::format_timestamp(now_ms)[..10].to_owned()
}

/// What reading every document found: the counts the rates are made of, one row per document
/// read, and the documents left out.
#[derive(Default)]
struct Tally {
    /// Documents with a zone that could be read.
    with_zone: usize,
    /// Of those, the documents with every field exact.
    exact: usize,
    /// Of those, the documents where a zone was found.
    found: usize,
    /// Of those, the documents whose check-digit validity agrees with the truth's.
    checks_agree: usize,
    /// Of those, the documents with each field right, in [`FIELDS`] order.
    per_field: [usize; 11],
    /// Documents without a zone that could be read.
    without_zone: usize,
    /// Of those, the documents where no zone was found (the right answer).
    rightly_none: usize,
    /// Reading time of the documents read, ms, and how many they are.
    total_ms: f64,
    timed: usize,
    /// One row per document read.
    rows: Vec<DocumentRow>,
    /// The images that could not be read, and why.
    unreadable: Vec<Unreadable>,
    /// The truth rows whose lines do not parse, and why.
    bad_truth: Vec<Unreadable>,
    /// The time the whole step took, seconds.
    wall_s: f64,
}

/// Reads every document once (one thread, each timed) and compares what was read with its truth.
fn read_documents(
    models: &DocumentModels,
    options: &DocumentEval,
    truths: &[Truth],
    today: &str,
) -> Tally {
    let mut tally = Tally::default();
    let progress = Progress::new(truths.len(), "documents", options.output.json);
    let started = Instant::now();
    for truth in truths {
        progress.tick();
        let expected = match expected_fields(truth, today) {
            Ok(expected) => expected,
            Err(error) => {
                tally.bad_truth.push(Unreadable {
                    image: truth.image.clone(),
                    error,
                });
                continue;
            }
        };
        let start = Instant::now();
        let read = match read_zone(models, &options.dir.join(&truth.image), today) {
            Ok(read) => read,
            Err(error) => {
                tally.unreadable.push(Unreadable {
                    image: truth.image.clone(),
                    error,
                });
                continue;
            }
        };
        let ms = start.elapsed().as_secs_f64() * 1e3;
        tally.total_ms += ms;
        tally.timed += 1;
        match expected {
            None => tally.count_without_zone(truth, read.as_ref(), ms),
            Some(expected) => tally.count_with_zone(truth, &expected, read.as_ref(), ms),
        }
    }
    drop(progress);
    tally.wall_s = started.elapsed().as_secs_f64();
    tally
}

/// The fields of a truth row's lines, parsed as the reader parses them; `None` for a document
/// without a zone; an error when the lines do not parse.
fn expected_fields(truth: &Truth, today: &str) -> Result<Option<MrzFields>, String> {
    let lines: Vec<&str> = truth.lines.iter().map(String::as_str).collect();
    if lines.is_empty() {
        return Ok(None);
    }
    parse(&lines, today)
        .map(Some)
        .map_err(|error| format!("truth: {error}"))
}

/// Reads the image at `path` and the zone in it (`None` when none is found); an error when the
/// image cannot be read or decoded, or the models fail.
fn read_zone(models: &DocumentModels, path: &Path, today: &str) -> Result<Option<MrzRead>, String> {
    std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| decode_image(&bytes, &ImageLimits::default()).map_err(|e| e.to_string()))
        .and_then(|frame| RgbImage::from_frame(frame).ok_or_else(|| "empty image".to_owned()))
        .and_then(|image| models.read_mrz(&image, today).map_err(|e| e.to_string()))
}

/// A time in ms as a row shows it, to a tenth.
fn row_ms(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

impl Tally {
    /// Counts a document without a zone, where finding none is right, and keeps its row.
    fn count_without_zone(&mut self, truth: &Truth, read: Option<&MrzRead>, ms: f64) {
        self.without_zone += 1;
        self.rightly_none += usize::from(read.is_none());
        self.rows.push(DocumentRow {
            image: truth.image.clone(),
            zone_expected: false,
            all_fields_exact: read.is_none(),
            wrong_fields: if read.is_none() {
                vec![]
            } else {
                vec!["(a zone found where there is none)"]
            },
            read: read.map(|r| r.fields.lines.join("|")).unwrap_or_default(),
            ms: row_ms(ms),
        });
    }

    /// Counts a document with a zone, field by field against the truth's, and keeps its row.
    fn count_with_zone(
        &mut self,
        truth: &Truth,
        expected: &MrzFields,
        read: Option<&MrzRead>,
        ms: f64,
    ) {
        self.with_zone += 1;
        let want = field_values(expected);
        let (got, all_exact, agree, lines_read) = match read {
            Some(read) => {
                self.found += 1;
                let got = field_values(&read.fields);
                let all = got.iter().zip(&want).all(|(g, w)| g.1 == w.1);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    self.per_field[i] += usize::from(g.1 == w.1);
                }
                (
                    Some(got),
                    all,
                    read.fields.all_checks_valid == truth.checks_valid,
                    read.fields.lines.join("|"),
                )
            }
            None => (None, false, false, String::new()),
        };
        self.exact += usize::from(all_exact);
        self.checks_agree += usize::from(agree);
        let wrong: Vec<&'static str> = match &got {
            Some(got) => got
                .iter()
                .zip(&want)
                .filter(|(g, w)| g.1 != w.1)
                .map(|(g, _)| g.0)
                .collect(),
            None => vec!["(no zone found)"],
        };
        self.rows.push(DocumentRow {
            image: truth.image.clone(),
            zone_expected: true,
            all_fields_exact: all_exact,
            wrong_fields: wrong,
            read: lines_read,
            ms: row_ms(ms),
        });
    }

    /// The rates' denominator: the documents with a zone that could be read (at least one).
    fn rated(&self) -> f64 {
        self.with_zone.max(1) as f64
    }

    /// The mean reading time of the documents read, ms.
    fn ms_per_document(&self) -> f64 {
        self.total_ms / self.timed.max(1) as f64
    }

    /// report.json (and `--json`'s output) of `documents` truth rows.
    fn report(&self, options: &DocumentEval, documents: usize) -> DocumentReport<'_> {
        // Rates over the documents with a zone that could be read.
        let n = self.rated();
        DocumentReport {
            data_set: data_set_name(&options.truth),
            model: vouch_bio::infer::TEXT_RECOGNIZER.file,
            model_sha256: vouch_bio::infer::TEXT_RECOGNIZER.sha256,
            documents,
            documents_with_zone: self.with_zone,
            documents_without_zone: self.without_zone,
            documents_unreadable: self.unreadable.len(),
            all_fields_exact: self.exact as f64 / n,
            zone_found: self.found as f64 / n,
            check_digit_agreement: self.checks_agree as f64 / n,
            no_zone_rightly_found: self.rightly_none,
            per_field: FIELDS
                .iter()
                .zip(&self.per_field)
                .map(|(name, &right)| (*name, right as f64 / n))
                .collect(),
            ms_per_document: self.ms_per_document(),
            wall_s: self.wall_s,
            unreadable: &self.unreadable,
            truth_unparsable: &self.bad_truth,
            results: &self.rows,
        }
    }

    /// The text output: one line per document read, the figures, then the documents left out.
    fn print(&self, documents: usize) {
        let mut out = std::io::stdout().lock();
        for row in &self.rows {
            // The time unpadded: it was a JSON value, whose Display ignores widths, and the text
            // stays as it was.
            let _ = writeln!(
                out,
                "{:<40} {} ms  {}",
                row.image,
                as_json(row.ms),
                if row.all_fields_exact {
                    "exact".to_owned()
                } else {
                    format!("wrong: {}", as_json(&row.wrong_fields))
                }
            );
        }
        let _ = writeln!(
            out,
            "documents {documents}: with a zone {}: every field exact {} ({:.1} %), zone found {}, check-digit validity agrees {}; without a zone {}: none found {}; unreadable {}; {:.0} ms per document",
            self.with_zone,
            self.exact,
            100.0 * self.exact as f64 / self.rated(),
            self.found,
            self.checks_agree,
            self.without_zone,
            self.rightly_none,
            self.unreadable.len(),
            self.ms_per_document()
        );
        for entry in self.unreadable.iter().chain(&self.bad_truth) {
            let _ = writeln!(out, "unreadable: {}: {}", entry.image, entry.error);
        }
    }
}

/// report.json of `eval documents` (and `--json`'s output). Written through a JSON value, whose
/// keys serde_json sorts: the file keeps the order it always had.
#[derive(Serialize)]
struct DocumentReport<'a> {
    data_set: String,
    model: &'static str,
    model_sha256: &'static str,
    documents: usize,
    documents_with_zone: usize,
    documents_without_zone: usize,
    documents_unreadable: usize,
    /// Rates over the documents with a zone that could be read.
    all_fields_exact: f64,
    zone_found: f64,
    check_digit_agreement: f64,
    no_zone_rightly_found: usize,
    /// Each field's rate, by name.
    per_field: BTreeMap<&'static str, f64>,
    ms_per_document: f64,
    wall_s: f64,
    unreadable: &'a [Unreadable],
    truth_unparsable: &'a [Unreadable],
    results: &'a [DocumentRow],
}

/// One document read: whether every field was right, the wrong ones, the lines read.
#[derive(Serialize)]
struct DocumentRow {
    image: String,
    zone_expected: bool,
    all_fields_exact: bool,
    wrong_fields: Vec<&'static str>,
    read: String,
    ms: f64,
}

/// An image that could not be read, or a truth row that does not parse.
#[derive(Serialize)]
struct Unreadable {
    image: String,
    error: String,
}

/// summary.md of `eval documents`.
fn summary(r: &DocumentReport, options: &DocumentEval) -> String {
    let finite = |value: f64| if value.is_finite() { value } else { 0.0 };
    let mut s = Summary::new(&format!("Machine-readable zones: {}", r.data_set));
    s.row(
        "data set",
        format!(
            "`{}`, images in `{}`",
            options.truth.display(),
            options.dir.display()
        ),
    );
    s.row(
        "documents",
        format!(
            "{} ({} with a zone, {} without, {} unreadable)",
            r.documents, r.documents_with_zone, r.documents_without_zone, r.documents_unreadable
        ),
    );
    s.row(
        "model",
        format!("{} ({})", r.model, r.model_sha256.get(..12).unwrap_or("")),
    );
    s.row("every field exact", percent_of(Some(r.all_fields_exact)));
    s.row("zone found", percent_of(Some(r.zone_found)));
    s.row(
        "check-digit validity agrees",
        percent_of(Some(r.check_digit_agreement)),
    );
    s.row(
        "no zone rightly found",
        format!(
            "{} of {}",
            r.no_zone_rightly_found, r.documents_without_zone
        ),
    );
    for (field, rate) in &r.per_field {
        s.row(&format!("field `{field}`"), percent_of(Some(*rate)));
    }
    s.row(
        "time",
        format!(
            "{:.0} ms per document on one thread, {:.1} s in all",
            finite(r.ms_per_document),
            finite(r.wall_s)
        ),
    );
    s.text("Rates are over the documents with a zone that could be read.");
    let wrong: Vec<String> = r
        .results
        .iter()
        .filter(|row| !row.all_fields_exact)
        .map(|row| format!("- `{}`: {}", row.image, as_json(&row.wrong_fields)))
        .collect();
    if !wrong.is_empty() {
        s.text(&format!(
            "## Not every field exact ({})\n\n{}",
            wrong.len(),
            wrong.join("\n")
        ));
    }
    s.failed("Unreadable images", r.unreadable, |entry| {
        (entry.image.as_str(), entry.error.as_str())
    });
    s.failed(
        "Truth rows that do not parse",
        r.truth_unparsable,
        |entry| (entry.image.as_str(), entry.error.as_str()),
    );
    s.finish()
}
