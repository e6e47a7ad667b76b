//! Identity documents: finding the machine-readable zone ([`locate`]), reading its lines with the
//! PP-OCRv6 recogniser restricted to the MRZ alphabet, and parsing and validating it ([`mrz`]).
//!
//! [`DocumentModels::read_mrz`] tries the lines it finds as they stand and turned half a turn, in
//! the image and in the image turned a quarter (so upside-down and sideways documents read), and
//! keeps the reading whose check digits hold best.

pub mod locate;
pub mod mrz;

use std::path::Path;

use self::locate::{cut_line, line_groups, Grey, LineBlob};
use self::mrz::{MrzFields, ALPHABET};
use crate::face::RgbImage;
use crate::infer::{Model, ModelError, TEXT_RECOGNIZER};

/// Recogniser input height.
const LINE_HEIGHT: usize = 48;
/// Recogniser input width (lines are squeezed to it, or padded).
const LINE_WIDTH: usize = 800;
/// Output columns per time step.
const CLASSES: usize = 18_710;
/// Output columns of `<`, `0`-`9`, `A`-`Z` (in [`ALPHABET`] order); column 0 is the CTC blank.
const MRZ_COLUMNS: [usize; 37] = {
    let mut columns = [0; 37];
    columns[0] = 18;
    let mut k = 1;
    while k < 37 {
        // '0'-'9' are columns 33-42 and 'A'-'Z' 43-68: the alphabet's order.
        columns[k] = 32 + k;
        k += 1;
    }
    columns
};

/// A recognised line.
#[derive(Debug, Clone, PartialEq)]
pub struct LineText {
    /// The characters, from [`ALPHABET`].
    pub text: String,
    /// Mean probability of the characters read.
    pub confidence: f32,
}

/// A machine-readable zone read from an image.
#[derive(Debug, Clone, PartialEq)]
pub struct MrzRead {
    /// The parsed and validated fields.
    pub fields: MrzFields,
    /// The lines as the recogniser read them (before length and position repair).
    pub raw_lines: Vec<String>,
    /// Quarter turns clockwise the image needed (0-3).
    pub quarter_turns: u8,
}

/// The document models, loaded once.
#[derive(Debug)]
pub struct DocumentModels {
    recognizer: Model,
}

impl DocumentModels {
    /// Checks that the document models' files are in `dir`, without reading them (their sha256
    /// is checked when they load).
    pub fn check_present(dir: &Path) -> Result<(), ModelError> {
        crate::infer::check_present(dir, TEXT_RECOGNIZER.file)
    }

    /// Loads and checks the document models from `dir`.
    pub fn load(dir: &Path) -> Result<DocumentModels, ModelError> {
        Ok(DocumentModels {
            recognizer: Model::load(dir, TEXT_RECOGNIZER)?,
        })
    }

    /// The recogniser's input for a grey line image: height 48 keeping the aspect ratio, squeezed
    /// to 800 when wider, padded on the right with 0 (mid grey) after `(v / 255 - 0.5) / 0.5`.
    pub fn line_input(line: &Grey) -> Vec<f32> {
        let width = ((LINE_HEIGHT as f32 * line.width as f32 / line.height.max(1) as f32).ceil()
            as usize)
            .clamp(1, LINE_WIDTH);
        let resized = line.resize(width, LINE_HEIGHT);
        let mut plane = vec![0f32; LINE_HEIGHT * LINE_WIDTH];
        for y in 0..LINE_HEIGHT {
            for x in 0..width {
                plane[y * LINE_WIDTH + x] = (resized.data[y * width + x] / 255.0 - 0.5) / 0.5;
            }
        }
        let mut input = Vec::with_capacity(3 * plane.len());
        for _ in 0..3 {
            input.extend_from_slice(&plane);
        }
        input
    }

    /// Reads one line, restricted to the MRZ alphabet (greedy CTC over the blank and its 37
    /// characters).
    pub fn read_line(&self, line: &Grey) -> Result<LineText, ModelError> {
        let input = Self::line_input(line);
        let outputs = self.recognizer.run(&[&input])?;
        let probs = outputs
            .first()
            .filter(|p| p.len() % CLASSES == 0)
            .ok_or_else(|| ModelError::Runtime {
                file: TEXT_RECOGNIZER.file,
                detail: "unexpected output size".into(),
            })?;
        Ok(ctc_decode(probs))
    }

    /// Finds, reads and parses the machine-readable zone of a document image on the date `today`
    /// (`YYYY-MM-DD`); `None` when no candidate lines read as one.
    pub fn read_mrz(&self, image: &RgbImage, today: &str) -> Result<Option<MrzRead>, ModelError> {
        let grey = Grey::from_rgb(image.width, image.height, &image.rgb);
        let mut best: Option<(Score, MrzRead)> = None;
        let mut turned = grey;
        for quarter in 0..2u8 {
            if quarter == 1 {
                turned = turned.rotate90();
            }
            for group in line_groups(&turned).iter().take(3) {
                for flip in [false, true] {
                    let Some((score, read)) = self.read_group(&turned, group, flip, today)? else {
                        continue;
                    };
                    let read = MrzRead {
                        quarter_turns: quarter + if flip { 2 } else { 0 },
                        ..read
                    };
                    if best.as_ref().is_none_or(|(s, _)| score.beats(s)) {
                        best = Some((score, read));
                    }
                    // A reading whose checks all hold is the zone: nothing else is read.
                    if best
                        .as_ref()
                        .is_some_and(|(_, r)| r.fields.all_checks_valid)
                    {
                        return Ok(best.map(|(_, r)| r));
                    }
                }
            }
        }
        Ok(best.map(|(_, r)| r))
    }

    /// Reads a group's lines (in reverse order, each turned half a turn, when `flip`) and parses
    /// the best-fitting window of them; the score counts valid checks.
    fn read_group(
        &self,
        image: &Grey,
        group: &[LineBlob],
        flip: bool,
        today: &str,
    ) -> Result<Option<(Score, MrzRead)>, ModelError> {
        let ordered: Vec<&LineBlob> = if flip {
            group.iter().rev().collect()
        } else {
            group.iter().collect()
        };
        let mut texts = Vec::with_capacity(group.len());
        for line in &ordered {
            let strip = cut_line(image, line, LINE_HEIGHT, BAND, flip);
            texts.push(self.read_line(&strip)?);
        }
        let mut best: Option<(Score, MrzRead)> = None;
        for window in windows(texts.len()) {
            let lines = &texts[window.clone()];
            let raw: Vec<String> = lines.iter().map(|l| l.text.clone()).collect();
            let confidence = lines.iter().map(|l| l.confidence).sum::<f32>() / lines.len() as f32;
            for fitted in fit_lengths(&raw) {
                let refs: Vec<&str> = fitted.iter().map(String::as_str).collect();
                let Ok(fields) = mrz::parse(&refs, today) else {
                    continue;
                };
                let score = Score {
                    checks: fields.checks.iter().filter(|c| c.valid).count()
                        + usize::from(fields.all_checks_valid) * 10,
                    confidence,
                };
                if best.as_ref().is_none_or(|(s, _)| score.beats(s)) {
                    best = Some((
                        score,
                        MrzRead {
                            fields,
                            raw_lines: raw.clone(),
                            quarter_turns: 0,
                        },
                    ));
                }
            }
        }
        Ok(best)
    }
}

/// The margin lines are cut with, as a multiple of their blob's thickness (which is about the
/// capital height plus the gradient's spread): 1.3 gives about 1.6 capital heights, what the
/// recogniser reads best on hand-cut lines (`models/README.md`). The development documents' one
/// doubtful character (a D read as O on a 250-pixel-wide card) comes and goes between 1.2 and 1.6
/// (`docs/documents.md`).
const BAND: f32 = 1.3;

/// How good a reading is: valid check digits first (all of them weigh 10 more), then the
/// recogniser's mean confidence.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score {
    checks: usize,
    confidence: f32,
}

impl Score {
    fn beats(&self, other: &Score) -> bool {
        self.checks > other.checks
            || (self.checks == other.checks && self.confidence > other.confidence)
    }
}

/// The consecutive runs of 2 or 3 of `n` lines.
fn windows(n: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    for len in [3, 2] {
        if n >= len {
            out.extend((0..=n - len).map(|start| start..start + len));
        }
    }
    out
}

/// The lines brought to each MRZ length they are near (3 x 30; 2 x 36 or 44): the recogniser's
/// usual mistake is one `<` too many or too few in a run of fillers, so the longest run of `<` is
/// stretched or shortened (at most 3 characters).
fn fit_lengths(lines: &[String]) -> Vec<Vec<String>> {
    let targets: &[usize] = if lines.len() == 3 { &[30] } else { &[36, 44] };
    let mut out = Vec::new();
    for &target in targets {
        let fitted: Option<Vec<String>> = lines.iter().map(|l| fit(l, target)).collect();
        if let Some(fitted) = fitted {
            out.push(fitted);
        }
    }
    out
}

fn fit(line: &str, target: usize) -> Option<String> {
    let diff = target as isize - line.len() as isize;
    if diff == 0 {
        return Some(line.to_owned());
    }
    if diff.abs() > 3 {
        return None;
    }
    // The longest run of '<' (the last one on a tie: trailing fillers).
    let bytes = line.as_bytes();
    let (mut best_start, mut best_len, mut i) = (0, 0, 0);
    while i < bytes.len() {
        if bytes[i] == b'<' {
            let start = i;
            while i < bytes.len() && bytes[i] == b'<' {
                i += 1;
            }
            if i - start >= best_len {
                best_start = start;
                best_len = i - start;
            }
        } else {
            i += 1;
        }
    }
    if best_len == 0 || (diff < 0 && best_len < diff.unsigned_abs() + 1) {
        return None;
    }
    let mut out = line.to_owned();
    if diff > 0 {
        out.insert_str(best_start, &"<".repeat(diff as usize));
    } else {
        out.replace_range(best_start..best_start + diff.unsigned_abs(), "");
    }
    Some(out)
}

/// Greedy CTC over the blank and the MRZ columns of `probs` ([T, CLASSES]).
fn ctc_decode(probs: &[f32]) -> LineText {
    let alphabet = ALPHABET.as_bytes();
    let (mut text, mut confidence, mut previous) = (String::new(), 0f32, usize::MAX);
    for step in probs.chunks_exact(CLASSES) {
        let (mut best, mut best_p) = (0usize, step[0]);
        for (k, &column) in MRZ_COLUMNS.iter().enumerate() {
            if step[column] > best_p {
                best = k + 1;
                best_p = step[column];
            }
        }
        if best != 0 && best != previous {
            text.push(char::from(alphabet[best - 1]));
            confidence += best_p;
        }
        previous = best;
    }
    let n = text.len().max(1) as f32;
    LineText {
        text,
        confidence: confidence / n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::reference_f32;

    #[test]
    fn mrz_columns_match_the_dictionary() {
        let listed = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/reference/ppocrv6_rec_small/mrz_columns.txt"
        ))
        .expect("mrz_columns.txt");
        for (line, (c, column)) in listed.lines().zip(ALPHABET.chars().zip(MRZ_COLUMNS)) {
            assert_eq!(line, format!("{c} {column}"));
        }
    }

    #[test]
    fn recogniser_matches_onnxruntime_and_reads_the_rendered_line() {
        let dir = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
        let models = DocumentModels::load(&dir).expect("models");
        let input = reference_f32("ppocrv6_rec_small/input.f32");
        let probs = models.recognizer.run(&[&input]).expect("runs").remove(0);
        let expected = reference_f32("ppocrv6_rec_small/logits_mrz.f32");
        let mut worst = 0f32;
        for (t, row) in expected.chunks_exact(38).enumerate() {
            let step = &probs[t * CLASSES..(t + 1) * CLASSES];
            worst = worst.max((step[0] - row[0]).abs());
            for (k, &column) in MRZ_COLUMNS.iter().enumerate() {
                worst = worst.max((step[column] - row[k + 1]).abs());
            }
        }
        assert!(worst < 2e-3, "max diff {worst}");
        let text = "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<";
        assert_eq!(ctc_decode(&probs).text, text);
        // Our own preprocessing of the rendered line reads the same.
        let raw = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/reference/ppocrv6_rec_small/line_u8.bin"
        ))
        .expect("line_u8.bin");
        let line = Grey {
            width: 1484,
            height: 56,
            data: raw.iter().map(|&v| f32::from(v)).collect(),
        };
        assert_eq!(models.read_line(&line).expect("reads").text, text);
    }

    #[test]
    fn lengths_are_fitted_in_filler_runs() {
        assert_eq!(fit("AB<<<C", 7).as_deref(), Some("AB<<<<C"));
        assert_eq!(fit("AB<<<C<<<", 7).as_deref(), Some("AB<<<C<"));
        assert_eq!(fit("ABC", 5), None);
        assert_eq!(fit("ABCDEFG", 3), None);
        assert_eq!(windows(3), [0..3, 0..2, 1..3]);
        assert_eq!(windows(2), vec![0..2]);
    }
}
