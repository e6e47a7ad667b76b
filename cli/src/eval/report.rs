//! What every `vouch eval` writes besides its table: the shared options ([`Output`]: `--json`,
//! `--report DIR`), the report directory ([`Report`]: report.json, scores.csv, det.png, det.svg,
//! summary.md), the Markdown summary's builder ([`Summary`]), and `vouch eval compare`
//! ([`Compare`]), which draws saved score files on one DET plot.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::eval::plot::{write_det, DetPlot, System};

/// The output options every `vouch eval` shares.
#[derive(clap::Args)]
pub struct Output {
    /// Print one JSON object instead of the table (and draw no progress bar).
    #[arg(long)]
    pub json: bool,
    /// Also write DIR/report.json (the --json object), scores.csv (a,b,label,score per trial,
    /// where the evaluation has trials), det.png and det.svg (where there is a DET curve) and
    /// summary.md; DIR is created if missing.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

/// One scored trial of scores.csv.
pub(crate) struct Scored {
    pub a: String,
    pub b: String,
    /// Genuine (label 1) or impostor (label 0).
    pub genuine: bool,
    pub score: f64,
}

/// A run's report directory.
pub(crate) struct Report<'a> {
    /// report.json: the object `--json` prints.
    pub json: &'a Value,
    /// scores.csv; none written when empty.
    pub trials: &'a [Scored],
    /// det.png and det.svg.
    pub plot: Option<&'a DetPlot>,
    /// summary.md.
    pub summary: String,
}

impl Report<'_> {
    /// Writes the files into `dir` (created if missing); the plots last, so a missing font
    /// costs only the PNG.
    pub(crate) fn write(&self, dir: &Path) -> Result<(), String> {
        let write = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))
        };
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let json = serde_json::to_string_pretty(self.json).expect("plain JSON");
        write("report.json", format!("{json}\n").as_bytes())?;
        if !self.trials.is_empty() {
            write("scores.csv", scores_csv(self.trials).as_bytes())?;
        }
        write("summary.md", self.summary.as_bytes())?;
        if let Some(plot) = self.plot {
            write_det(&dir.join("det.svg"), plot)?;
            write_det(&dir.join("det.png"), plot)?;
        }
        Ok(())
    }
}

/// `a,b,label,score` lines with a header; a field with a comma or a quote is quoted.
pub(crate) fn scores_csv(trials: &[Scored]) -> String {
    let field = |text: &str| {
        if text.contains([',', '"', '\n']) {
            format!("\"{}\"", text.replace('"', "\"\""))
        } else {
            text.to_owned()
        }
    };
    let mut out = String::from("a,b,label,score\n");
    for trial in trials {
        let _ = writeln!(
            out,
            "{},{},{},{}",
            field(&trial.a),
            field(&trial.b),
            u8::from(trial.genuine),
            trial.score
        );
    }
    out
}

/// The fields of one CSV line, quotes undone.
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().expect("one field").push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().expect("one field").push(c),
        }
    }
    fields.into_iter().map(|f| f.trim().to_owned()).collect()
}

/// Genuine and impostor scores of a score CSV: `label,score` columns (scores.csv), or
/// `same,distance` (`--scores`, scripts/peer-face-recognition) or `target,score`.
pub(crate) fn read_scores(path: &Path) -> Result<(Vec<f64>, Vec<f64>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header = csv_fields(lines.next().unwrap_or_default());
    let column = |names: &[&str]| {
        header
            .iter()
            .position(|h| names.contains(&h.as_str()))
            .ok_or_else(|| format!("{}: no {} column", path.display(), names.join(" or ")))
    };
    let label = column(&["label", "same", "target"])?;
    let score = column(&["score", "distance"])?;
    let (mut genuine, mut impostor) = (Vec::new(), Vec::new());
    for (n, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fields = csv_fields(line);
        let bad = || format!("{}: line {} is not a scored trial", path.display(), n + 2);
        let value: f64 = fields
            .get(score)
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)?;
        match fields.get(label).map(String::as_str) {
            Some("1" | "true") => genuine.push(value),
            Some("0" | "false") => impostor.push(value),
            _ => return Err(bad()),
        }
    }
    Ok((genuine, impostor))
}

/// How a labelled file names its data set: its folder and its name (`faces-bbt/pairs.csv`).
pub(crate) fn data_set_name(path: &Path) -> String {
    let file = path.file_name().map_or_else(
        || path.display().to_string(),
        |f| f.to_string_lossy().into(),
    );
    let folder = path
        .canonicalize()
        .ok()
        .and_then(|p| Some(p.parent()?.file_name()?.to_string_lossy().into_owned()));
    match folder {
        Some(folder) => format!("{folder}/{file}"),
        None => file,
    }
}

/// A rate in % with two decimals, "n/a" for a missing or non-finite one (which JSON writes as
/// null).
pub(crate) fn percent_of(rate: Option<f64>) -> String {
    match rate {
        Some(rate) if rate.is_finite() => format!("{:.2} %", rate * 100.0),
        _ => "n/a".into(),
    }
}

/// A `[low, high]` interval as `low-high %`.
pub(crate) fn range_of(interval: Option<[f64; 2]>) -> Option<String> {
    let [low, high] = interval?;
    (low.is_finite() && high.is_finite())
        .then(|| format!("{:.2}-{:.2} %", low * 100.0, high * 100.0))
}

/// A number as report.json writes it (`1.0`, `0.52`, `null`): how the text output has always
/// shown the figures it read back from the JSON.
pub(crate) fn as_json(value: impl Serialize) -> String {
    // Through a JSON value, as the report holds it: an f32 widened to f64, not printed as f32.
    serde_json::to_value(value).map_or_else(|_| String::new(), |value| value.to_string())
}

/// A counted share: `count` of `of`, and its rate.
#[derive(Serialize, Clone, Copy)]
pub(crate) struct Share {
    pub count: usize,
    pub of: usize,
    pub rate: f64,
}

impl Share {
    /// `count` of `of`; the rate is 0 when `of` is.
    pub(crate) fn new(count: usize, of: usize) -> Self {
        Share {
            count,
            of,
            rate: if of == 0 {
                0.0
            } else {
                count as f64 / of as f64
            },
        }
    }

    /// `count of n (rate %)`.
    pub(crate) fn text(&self) -> String {
        format!(
            "{} of {} ({})",
            self.count,
            self.of,
            percent_of(Some(self.rate))
        )
    }
}

/// 95 % intervals of a report's EER and FNMR at FMR 1e-2 (`crate::eval::confidence`): the
/// `confidence` object of report.json.
#[derive(Serialize)]
pub(crate) struct Intervals {
    /// `subject` or `pair`.
    pub resampled_by: &'static str,
    pub groups: usize,
    pub resamples: usize,
    pub eer_ci95: Option<[f64; 2]>,
    pub fnmr_at_fmr_1e2_ci95: Option<[f64; 2]>,
    /// The rule of three's bound, where no genuine pair was missed at FMR 1e-2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fnmr_at_fmr_1e2_upper95: Option<f64>,
    /// The rule of three's bound, where some threshold made no error on either side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eer_upper95: Option<f64>,
}

/// summary.md, written as a table of figures, then paragraphs and lists.
pub(crate) struct Summary {
    text: String,
    in_table: bool,
}

impl Summary {
    /// A summary headed `title`.
    pub(crate) fn new(title: &str) -> Self {
        Self {
            text: format!("# {title}\n\n"),
            in_table: false,
        }
    }

    /// One row of the figures table.
    pub(crate) fn row(&mut self, name: &str, value: impl std::fmt::Display) {
        if !self.in_table {
            self.text.push_str("| figure | value |\n|---|---|\n");
            self.in_table = true;
        }
        let value = value.to_string().replace('|', "\\|");
        let _ = writeln!(self.text, "| {name} | {value} |");
    }

    /// A paragraph (or any Markdown block).
    pub(crate) fn text(&mut self, text: &str) {
        self.end_table();
        let _ = writeln!(self.text, "{text}\n");
    }

    /// The rows of the interval figures.
    pub(crate) fn intervals(&mut self, c: &Intervals, genuine: usize) {
        let by = c.resampled_by;
        self.row(
            "95 % intervals",
            format!(
                "bootstrap by {by}: {} resamples of {} {by}s",
                c.resamples, c.groups
            ),
        );
        if let Some(bound) = c.fnmr_at_fmr_1e2_upper95 {
            self.row(
                "FNMR @ FMR 1e-2, rule of three",
                format!(
                    "0 of {genuine} genuine missed: below {:.2} % at 95 %",
                    bound * 100.0
                ),
            );
        }
        if let Some(bound) = c.eer_upper95 {
            self.row(
                "EER, rule of three",
                format!("no error seen: below {:.2} % at 95 %", bound * 100.0),
            );
        }
    }

    /// A section listing what failed (`(name, error)` of each entry), if anything did.
    pub(crate) fn failed<'e, T>(
        &mut self,
        heading: &str,
        list: &'e [T],
        entry: impl Fn(&'e T) -> (&'e str, &'e str),
    ) {
        if list.is_empty() {
            return;
        }
        self.end_table();
        let _ = writeln!(self.text, "## {heading} ({})\n", list.len());
        for item in list {
            let (name, error) = entry(item);
            let _ = writeln!(self.text, "- `{name}`: {error}");
        }
        self.text.push('\n');
    }

    fn end_table(&mut self) {
        if self.in_table {
            self.text.push('\n');
            self.in_table = false;
        }
    }

    pub(crate) fn finish(mut self) -> String {
        self.end_table();
        let _ = writeln!(
            self.text,
            "Written by vouch {} (`vouch eval`); report.json holds every figure.",
            vouch::VERSION
        );
        self.text
    }
}

/// Options of `vouch eval compare`.
#[derive(clap::Args)]
pub struct Compare {
    /// Report directories written by `--report`, their report.json (scores.csv is read beside
    /// it), or score CSV files (`a,b,label,score`; also `img_a,img_b,same,distance` as `--scores`
    /// and scripts/peer-face-recognition write). Scores are distances: lower is more alike.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Where to write the plot: .svg for SVG, PNG otherwise.
    #[arg(long)]
    pub out: PathBuf,
    /// The plot's title.
    #[arg(long, default_value = "DET comparison")]
    pub title: String,
    /// A legend name for each FILE, in order (default: the report's data set and model, or the
    /// file's name).
    #[arg(long = "label")]
    pub labels: Vec<String>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// One FILE of `vouch eval compare` as a system to draw.
fn load_system(path: &Path) -> Result<System, String> {
    let (scores, report) = if path.is_dir() {
        (path.join("scores.csv"), Some(path.join("report.json")))
    } else if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        (path.with_file_name("scores.csv"), Some(path.to_owned()))
    } else {
        (path.to_owned(), None)
    };
    let report: Value = match &report {
        Some(file) => {
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?
        }
        None => Value::Null,
    };
    let (genuine, impostor) = read_scores(&scores)?;
    if genuine.is_empty() || impostor.is_empty() {
        return Err(format!(
            "{}: needs both genuine and impostor trials",
            scores.display()
        ));
    }
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into(),
    );
    let label = match (report["data_set"].as_str(), report["model_id"].as_str()) {
        (Some(set), Some(model)) => format!("{set} ({model})"),
        (Some(set), None) => set.to_owned(),
        _ => name,
    };
    let interval = &report["confidence"]["eer_ci95"];
    Ok(System {
        label,
        genuine,
        impostor,
        threshold: report["threshold"]
            .as_f64()
            .or_else(|| report["threshold_distance"].as_f64())
            .map(|t| (t, t.to_string())),
        eer_interval: interval[0].as_f64().zip(interval[1].as_f64()),
    })
}

/// `vouch eval compare --json`'s object. Printed through a JSON value, whose keys serde_json
/// sorts: the output keeps the order it always had.
#[derive(Serialize)]
struct CompareReport<'a> {
    systems: &'a [CompareRow],
    det_plot: String,
}

/// One system of `vouch eval compare`: its trials and error rates.
#[derive(Serialize)]
struct CompareRow {
    label: String,
    genuine: usize,
    impostor: usize,
    eer: Option<f64>,
    fnmr_at_fmr_1e2: f64,
    /// Its report's threshold, if it names one.
    threshold: Option<f64>,
}

/// `vouch eval compare`: several score files on one DET plot.
pub fn compare(options: &Compare) -> Result<(), String> {
    if !options.labels.is_empty() && options.labels.len() != options.files.len() {
        return Err(format!(
            "{} --label for {} files: give one per file or none",
            options.labels.len(),
            options.files.len()
        ));
    }
    let mut systems = Vec::new();
    for (index, path) in options.files.iter().enumerate() {
        let mut system = load_system(path)?;
        if let Some(label) = options.labels.get(index) {
            system.label.clone_from(label);
        }
        systems.push(system);
    }
    let rows: Vec<CompareRow> = systems
        .iter()
        .map(|s| {
            let m = vouch_bio::metrics(&s.genuine, &s.impostor);
            CompareRow {
                label: s.label.clone(),
                genuine: m.genuine,
                impostor: m.impostor,
                eer: m.eer,
                fnmr_at_fmr_1e2: m.fnmr_at_fmr_1e2,
                threshold: s.threshold.as_ref().map(|t| t.0),
            }
        })
        .collect();
    write_det(
        &options.out,
        &DetPlot {
            title: options.title.clone(),
            systems,
        },
    )?;
    if options.json {
        let report = CompareReport {
            systems: &rows,
            det_plot: options.out.display().to_string(),
        };
        let json = serde_json::to_value(&report).map_err(|error| error.to_string())?;
        println!("{json}");
    } else {
        for row in &rows {
            println!(
                "{}: {} genuine, {} impostor, EER {}, FNMR @ FMR 1e-2 {}",
                row.label,
                row.genuine,
                row.impostor,
                percent_of(row.eer),
                percent_of(Some(row.fnmr_at_fmr_1e2))
            );
        }
        println!("DET plot         {}", options.out.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_round_trip_through_the_csv() {
        let trials = [
            Scored {
                a: "x,1.png".into(),
                b: "say \"hi\"".into(),
                genuine: true,
                score: 0.25,
            },
            Scored {
                a: "y.png".into(),
                b: "z.png".into(),
                genuine: false,
                score: f64::INFINITY,
            },
        ];
        let text = scores_csv(&trials);
        assert!(text.starts_with("a,b,label,score\n\"x,1.png\",\"say \"\"hi\"\"\",1,0.25\n"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scores.csv");
        std::fs::write(&path, text).unwrap();
        let (genuine, impostor) = read_scores(&path).unwrap();
        assert_eq!(genuine, [0.25]);
        assert_eq!(impostor, [f64::INFINITY]);
    }

    #[test]
    fn the_summary_is_a_table_then_sections() {
        let mut summary = Summary::new("Faces");
        summary.row("EER", "1.25 %");
        let unreadable = [("a.png".to_owned(), "truncated".to_owned())];
        summary.failed("Unreadable", &unreadable, |(image, error)| (image, error));
        let text = summary.finish();
        assert!(text.contains("| EER | 1.25 % |\n\n## Unreadable (1)\n\n- `a.png`: truncated\n"));
    }
}
