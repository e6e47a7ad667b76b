//! `vouch eval documents`: how well the machine-readable zone is read from document images.
//!
//! Every image of a `image<TAB>mrz_type<TAB>mrz_lines(|-joined)<TAB>all_check_digits_valid` file is
//! read (decoding, finding the zone, recognition, parsing; one thread, timed per document) and its
//! fields are compared with the fields of the true lines parsed the same way. A row with empty
//! lines is a document without a zone: the right answer is "no zone found" (counted apart). An
//! image that cannot be read is counted and listed, and the run goes on.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};
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
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
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
    for truth in &truths {
        let lines: Vec<&str> = truth.lines.iter().map(String::as_str).collect();
        let expected = if lines.is_empty() {
            None
        } else {
            Some(parse(&lines, &today).map_err(|e| format!("{}: truth: {e}", truth.image))?)
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
        "results": rows,
    });
    if options.json {
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
    for entry in &unreadable {
        let _ = writeln!(
            out,
            "unreadable: {}: {}",
            entry["image"].as_str().unwrap_or(""),
            entry["error"].as_str().unwrap_or("")
        );
    }
    Ok(())
}
