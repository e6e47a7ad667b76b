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

use serde_json::{json, Value};

use crate::eval::progress::Progress;
use crate::eval::report::{data_set_name, percent, Output, Report, Summary};
use vouch::bio::document::mrz::{parse, MrzFields};
use vouch::bio::document::DocumentModels;
use vouch::bio::face::RgbImage;
use vouch::media::{decode_image, ImageLimits};

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
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let today = vouch::format_timestamp(now_ms)[..10].to_owned();
    let (mut exact, mut checks_agree, mut found, mut total_ms) = (0usize, 0usize, 0usize, 0f64);
    let (mut with_zone, mut without_zone, mut rightly_none, mut timed) = (0usize, 0, 0, 0usize);
    let mut per_field = vec![0usize; 11];
    let mut rows = Vec::new();
    let mut unreadable = Vec::new();
    let mut bad_truth = Vec::new();
    let progress = Progress::new(truths.len(), "documents", options.output.json);
    let started = Instant::now();
    for truth in &truths {
        progress.tick();
        let lines: Vec<&str> = truth.lines.iter().map(String::as_str).collect();
        let expected = if lines.is_empty() {
            None
        } else {
            match parse(&lines, &today) {
                Ok(fields) => Some(fields),
                Err(error) => {
                    bad_truth
                        .push(json!({ "image": truth.image, "error": format!("truth: {error}") }));
                    continue;
                }
            }
        };
        let path = options.dir.join(&truth.image);
        let start = Instant::now();
        let read = std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                decode_image(&bytes, &ImageLimits::default()).map_err(|e| e.to_string())
            })
            .and_then(|frame| RgbImage::from_frame(frame).ok_or_else(|| "empty image".to_owned()))
            .and_then(|image| models.read_mrz(&image, &today).map_err(|e| e.to_string()));
        let read = match read {
            Ok(read) => read,
            Err(error) => {
                unreadable.push(json!({ "image": truth.image, "error": error }));
                continue;
            }
        };
        let ms = start.elapsed().as_secs_f64() * 1e3;
        total_ms += ms;
        timed += 1;
        let Some(expected) = expected else {
            // A document without a zone: finding none is right.
            without_zone += 1;
            rightly_none += usize::from(read.is_none());
            rows.push(json!({
                "image": truth.image,
                "zone_expected": false,
                "all_fields_exact": read.is_none(),
                "wrong_fields": if read.is_none() { vec![] } else { vec!["(a zone found where there is none)"] },
                "read": read.map(|r| r.fields.lines.join("|")).unwrap_or_default(),
                "ms": (ms * 10.0).round() / 10.0,
            }));
            continue;
        };
        with_zone += 1;
        let want = field_values(&expected);
        let (got, all_exact, agree, lines_read) = match &read {
            Some(read) => {
                found += 1;
                let got = field_values(&read.fields);
                let all = got.iter().zip(&want).all(|(g, w)| g.1 == w.1);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    per_field[i] += usize::from(g.1 == w.1);
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
        exact += usize::from(all_exact);
        checks_agree += usize::from(agree);
        let wrong: Vec<&str> = match &got {
            Some(got) => got
                .iter()
                .zip(&want)
                .filter(|(g, w)| g.1 != w.1)
                .map(|(g, _)| g.0)
                .collect(),
            None => vec!["(no zone found)"],
        };
        rows.push(json!({
            "image": truth.image,
            "zone_expected": true,
            "all_fields_exact": all_exact,
            "wrong_fields": wrong,
            "read": lines_read,
            "ms": (ms * 10.0).round() / 10.0,
        }));
    }
    drop(progress);
    let wall_s = started.elapsed().as_secs_f64();
    // Rates over the documents with a zone that could be read.
    let n = with_zone.max(1) as f64;
    let per_field: serde_json::Map<String, Value> = FIELDS
        .iter()
        .zip(&per_field)
        .map(|(name, &right)| ((*name).to_owned(), json!(right as f64 / n)))
        .collect();
    let report = json!({
        "all_fields_exact": exact as f64 / n,
        "per_field": per_field,
        "check_digit_agreement": checks_agree as f64 / n,
        "zone_found": found as f64 / n,
        "ms_per_document": total_ms / timed.max(1) as f64,
        "documents": truths.len(),
        "documents_with_zone": with_zone,
        "documents_without_zone": without_zone,
        "no_zone_rightly_found": rightly_none,
        "documents_unreadable": unreadable.len(),
        "unreadable": unreadable,
        "truth_unparsable": bad_truth,
        "data_set": data_set_name(&options.truth),
        "model": vouch::infer::TEXT_RECOGNIZER.file,
        "model_sha256": vouch::infer::TEXT_RECOGNIZER.sha256,
        "wall_s": wall_s,
        "results": rows,
    });
    if let Some(dir) = &options.output.report {
        Report {
            json: &report,
            trials: &[],
            plot: None,
            summary: summary(&report, options),
        }
        .write(dir)?;
    }
    if options.output.json {
        println!("{report}");
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    for row in &rows {
        let _ = writeln!(
            out,
            "{:<40} {:>8} ms  {}",
            row["image"].as_str().unwrap_or(""),
            row["ms"],
            if row["all_fields_exact"] == true {
                "exact".to_owned()
            } else {
                format!("wrong: {}", row["wrong_fields"])
            }
        );
    }
    let _ = writeln!(
        out,
        "documents {}: with a zone {with_zone}: every field exact {exact} ({:.1} %), zone found {found}, check-digit validity agrees {checks_agree}; without a zone {without_zone}: none found {rightly_none}; unreadable {}; {:.0} ms per document",
        truths.len(),
        100.0 * exact as f64 / n,
        unreadable.len(),
        total_ms / timed.max(1) as f64
    );
    for entry in unreadable.iter().chain(&bad_truth) {
        let _ = writeln!(
            out,
            "unreadable: {}: {}",
            entry["image"].as_str().unwrap_or(""),
            entry["error"].as_str().unwrap_or("")
        );
    }
    Ok(())
}

/// summary.md of `eval documents`.
fn summary(r: &Value, options: &DocumentEval) -> String {
    let mut s = Summary::new(&format!(
        "Machine-readable zones: {}",
        r["data_set"].as_str().unwrap_or("")
    ));
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
            r["documents"],
            r["documents_with_zone"],
            r["documents_without_zone"],
            r["documents_unreadable"]
        ),
    );
    s.row(
        "model",
        format!(
            "{} ({})",
            r["model"].as_str().unwrap_or(""),
            r["model_sha256"]
                .as_str()
                .unwrap_or("")
                .get(..12)
                .unwrap_or("")
        ),
    );
    s.row("every field exact", percent(&r["all_fields_exact"]));
    s.row("zone found", percent(&r["zone_found"]));
    s.row(
        "check-digit validity agrees",
        percent(&r["check_digit_agreement"]),
    );
    s.row(
        "no zone rightly found",
        format!(
            "{} of {}",
            r["no_zone_rightly_found"], r["documents_without_zone"]
        ),
    );
    for (field, rate) in r["per_field"].as_object().into_iter().flatten() {
        s.row(&format!("field `{field}`"), percent(rate));
    }
    s.row(
        "time",
        format!(
            "{:.0} ms per document on one thread, {:.1} s in all",
            r["ms_per_document"].as_f64().unwrap_or(0.0),
            r["wall_s"].as_f64().unwrap_or(0.0)
        ),
    );
    s.text("Rates are over the documents with a zone that could be read.");
    let wrong: Vec<String> = r["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|row| row["all_fields_exact"] != true)
        .map(|row| {
            format!(
                "- `{}`: {}",
                row["image"].as_str().unwrap_or(""),
                row["wrong_fields"]
            )
        })
        .collect();
    if !wrong.is_empty() {
        s.text(&format!(
            "## Not every field exact ({})\n\n{}",
            wrong.len(),
            wrong.join("\n")
        ));
    }
    s.failures("Unreadable images", &r["unreadable"], "image");
    s.failures(
        "Truth rows that do not parse",
        &r["truth_unparsable"],
        "image",
    );
    s.finish()
}
