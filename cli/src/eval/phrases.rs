//! `vouch eval phrases`: the spoken-phrase check (Visual Speech Recognition) on real speech, the
//! way process-video runs it (speech detection, then Whisper on the speech span).
//!
//! Sets, each reported on its own: LibriSpeech test-other utterances of at most 3.6 s and of 8 to
//! 12.5 s (`utterances.csv`; the set has no transcripts, so the own phrase is what the recogniser
//! transcribes on its 30 s window, which favours the positives, though names come back spelt in
//! ways the check does not hear again), the FSDD six-digit PINs (true digits) and, when
//! given, the GRID clips (true sentences). Per clip: the own phrase must pass; three other
//! clips' phrases, two phrases with one word substituted (a word of the set's vocabulary; a digit
//! for PINs), the phrase with one word dropped (the speech then has a word the phrase lacks), the
//! phrase with one word added, and a random phrase of the set's words must each fail. The random
//! choices come from a fixed seed, so every run makes the same trials. `false_accept_wrong_words`
//! pools the kinds whose speech says other words (another phrase, one word changed, random words:
//! what a replayed recording says); an extra or a missing word is counted in `false_accept` and
//! per kind.
//!
//! With `--languages DIR` (`scripts/make-phrase-speech`: espeak-ng speech of sentences written
//! for this project, `phrases.csv`), one set per language is added, scored as process-video
//! scores a phrase without a language tag (found from the script and the audio); its words are
//! characters in scripts written without spaces (Chinese). Each of its clips is also claimed with
//! another language's sentence (`other_language`), and the language the check chose for the own
//! phrase is counted (`language_found`).
//!
//! A recording that cannot be read, decoded or transcribed is counted and listed (`unreadable`),
//! and the run goes on without it. `--report DIR` writes report.json, scores.csv (clip, claimed
//! phrase, 1 for the own phrase, the check's margin: higher is more like the phrase) and
//! summary.md.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use vouch::service::video::decode_options;
use vouch::Engine;
use vouch_bio::{phrase_script, Language, Script};
use vouch_bio::{words, Phrase, PhraseCheck, PhraseCode};
use vouch_media::DecodeLimits;

use crate::eval::progress::Progress;
use crate::eval::report::{Output, Report, Scored, Share, Summary};
use crate::eval::{eval_engine, read_columns, Sequence};

/// Options of `vouch eval phrases`.
#[derive(clap::Args)]
pub struct PhraseEval {
    /// The speech folder (`utterances.csv`, `librispeech_test_other/`,
    /// `fsdd_pin_phrases_derived/`).
    #[arg(long)]
    pub speech: PathBuf,
    /// The GRID folder (`clips.csv` and its MP4 clips), to add its sentences.
    #[arg(long)]
    pub grid: Option<PathBuf>,
    /// A folder made by `scripts/make-phrase-speech`, `scripts/make-phrase-speech-ja` or
    /// `scripts/make-phrase-speech-festival` (`phrases.csv`: file, language, voice, text), to add
    /// one set per language and synthesiser; may be given
    /// more than once (every set's clips are then claimed with the other sets' sentences too).
    #[arg(long)]
    pub languages: Vec<PathBuf>,
    /// Leave out the English sets (LibriSpeech, FSDD, GRID): only the `--languages` sets.
    #[arg(long)]
    pub languages_only: bool,
    /// Give the `--languages` sets' language as the request's tag, instead of leaving the check
    /// to find it.
    #[arg(long)]
    pub tagged: bool,
    /// Claim each clip with its own phrase only (false rejects, for quick comparisons).
    #[arg(long)]
    pub own_only: bool,
    /// Folder with the ONNX models.
    #[arg(long, default_value = "models")]
    pub models: PathBuf,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    #[command(flatten)]
    pub output: Output,
}

const DIGITS: [&str; 10] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
];

struct Utterance {
    file: String,
    samples: Vec<f32>,
    /// The phrase's words.
    phrase: Vec<String>,
    /// The phrase as displayed (punctuation and case kept), where the set has one.
    display: Option<String>,
}

struct Set {
    name: String,
    utterances: Vec<Utterance>,
    /// Words a substitution may use at each position (one list for every position but GRID's).
    slots: Vec<Vec<String>>,
    /// What joins the words of a claimed phrase: a space, or nothing for scripts written
    /// without spaces.
    joiner: &'static str,
    /// The language of a `--languages` set.
    language: Option<Language>,
}

fn read_audio(engine: &Engine, path: &Path) -> Result<Vec<f32>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (pcm, _) = engine
        .media()
        .decode_audio(&bytes, &DecodeLimits::default())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(pcm.samples)
}

fn vocabulary(utterances: &[Utterance]) -> Vec<String> {
    let mut all: Vec<String> = utterances
        .iter()
        .flat_map(|u| u.phrase.iter().cloned())
        .collect();
    all.sort();
    all.dedup();
    all
}

/// Reads every set; a recording that fails is listed in `unreadable` and left out.
fn load_sets(
    engine: &Engine,
    options: &PhraseEval,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Vec<Set>, String> {
    let mut sets = librispeech_sets(engine, options, unreadable)?;
    sets.push(pin_set(engine, options, unreadable)?);
    if let Some(grid) = &options.grid {
        sets.push(grid_set(engine, grid, unreadable)?);
    }
    Ok(sets)
}

/// A set of `utterances` whose words are drawn from one pool (their own vocabulary).
fn english_set(name: &str, utterances: Vec<Utterance>, slots: Vec<Vec<String>>) -> Set {
    Set {
        name: name.to_owned(),
        utterances,
        slots,
        joiner: " ",
        language: None,
    }
}

/// LibriSpeech's short and long utterances, each claimed with what the recogniser transcribes.
fn librispeech_sets(
    engine: &Engine,
    options: &PhraseEval,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Vec<Set>, String> {
    let rows = read_columns(
        &options.speech.join("utterances.csv"),
        &["path", "corpus", "duration_s"],
    )?;
    let mut sets = Vec::new();
    for (name, shortest, longest) in [
        ("librispeech_up_to_3.6s", 0.0, 3.6),
        ("librispeech_8_to_12.5s", 8.0, 12.5),
    ] {
        let mut utterances = Vec::new();
        let chosen: Vec<&Vec<String>> = rows
            .iter()
            .filter(|row| {
                let seconds: f64 = row[2].parse().unwrap_or(f64::NAN);
                row[1].contains("LibriSpeech") && (shortest..=longest).contains(&seconds)
            })
            .collect();
        let progress = Progress::new(chosen.len(), "transcribing", options.output.json);
        for row in chosen {
            progress.tick();
            let transcribed =
                read_audio(engine, &options.speech.join(&row[0])).and_then(|samples| {
                    let text = engine
                        .analysis()
                        .transcribe(&samples)
                        .map_err(|e| format!("{}: {e}", row[0]))?;
                    Ok((samples, text))
                });
            match transcribed {
                Ok((samples, text)) => utterances.push(Utterance {
                    file: row[0].clone(),
                    samples,
                    phrase: words(&text),
                    display: None,
                }),
                Err(error) => unreadable.push(Unreadable::new(&row[0], error)),
            }
        }
        let slots = vec![vocabulary(&utterances)];
        sets.push(english_set(name, utterances, slots));
    }
    Ok(sets)
}

/// The spoken PIN phrases derived from FSDD digits.
fn pin_set(
    engine: &Engine,
    options: &PhraseEval,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Set, String> {
    let pins = options.speech.join("fsdd_pin_phrases_derived/phrases.csv");
    let mut utterances = Vec::new();
    for row in read_columns(&pins, &["path", "digits"])? {
        let phrase = row[1]
            .bytes()
            .filter(u8::is_ascii_digit)
            .map(|b| DIGITS[usize::from(b - b'0')].to_owned())
            .collect();
        match read_audio(engine, &options.speech.join(&row[0])) {
            Ok(samples) => utterances.push(Utterance {
                samples,
                file: row[0].clone(),
                phrase,
                display: None,
            }),
            Err(error) => unreadable.push(Unreadable::new(&row[0], error)),
        }
    }
    let slots = vec![DIGITS.iter().map(|d| (*d).to_owned()).collect()];
    Ok(english_set("fsdd_pins", utterances, slots))
}

/// GRID's clips with their transcripts; impostor words are drawn per position of GRID's grammar.
fn grid_set(engine: &Engine, grid: &Path, unreadable: &mut Vec<Unreadable>) -> Result<Set, String> {
    let mut utterances = Vec::new();
    for row in read_columns(&grid.join("clips.csv"), &["mp4", "transcript"])? {
        let path = grid.join(&row[0]);
        let decoded = std::fs::read(&path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|bytes| {
                engine
                    .media()
                    .decode_video(&bytes, &decode_options())
                    .map_err(|e| format!("{}: {e}", row[0]))
            });
        let clip = match decoded {
            Ok(clip) => clip,
            Err(error) => {
                unreadable.push(Unreadable::new(&row[0], error));
                continue;
            }
        };
        utterances.push(Utterance {
            file: row[0].clone(),
            samples: clip.audio.map(|a| a.samples).unwrap_or_default(),
            phrase: words(&row[1]),
            display: None,
        });
    }
    // GRID's grammar: each position has its own words (command, colour, preposition, ...).
    let width = utterances.iter().map(|u| u.phrase.len()).max().unwrap_or(0);
    let slots = (0..width)
        .map(|k| {
            let mut at: Vec<String> = utterances
                .iter()
                .filter_map(|u| u.phrase.get(k).cloned())
                .collect();
            at.sort();
            at.dedup();
            at
        })
        .collect();
    Ok(english_set("grid", utterances, slots))
}

/// The `--languages` sets: one per language of `phrases.csv`, in the file's order.
fn load_language_sets(
    engine: &Engine,
    dir: &Path,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Vec<Set>, String> {
    let mut sets: Vec<Set> = Vec::new();
    for row in read_columns(
        &dir.join("phrases.csv"),
        &["file", "language", "text", "voice"],
    )? {
        let language = Language::from_tag(&row[1])
            .ok_or_else(|| format!("phrases.csv: unknown language {:?}", row[1]))?;
        let unspaced = phrase_script(&row[2]).is_some_and(Script::unspaced);
        let phrase: Vec<String> = if unspaced {
            row[2]
                .chars()
                .filter(|c| c.is_alphanumeric())
                .map(String::from)
                .collect()
        } else {
            words(&row[2])
        };
        let samples = match read_audio(engine, &dir.join(&row[0])) {
            Ok(samples) => samples,
            Err(error) => {
                unreadable.push(Unreadable::new(&row[0], error));
                continue;
            }
        };
        // The set is named after its synthesiser: `scripts/make-phrase-speech-ja`'s voices are
        // Kokoro's ("kokoro jf_alpha ..."), `scripts/make-phrase-speech-festival`'s Festival's
        // ("festival lp_diphone"), `scripts/make-phrase-speech`'s espeak-ng's.
        let first = row[3].split(' ').next().unwrap_or_default();
        let synthesiser = if matches!(first, "kokoro" | "festival") {
            first
        } else {
            "espeak"
        };
        let name = format!("{synthesiser}_{}", language.code());
        if sets.last().is_none_or(|set| set.name != name) {
            sets.push(Set {
                name,
                utterances: Vec::new(),
                slots: Vec::new(),
                joiner: if unspaced { "" } else { " " },
                language: Some(language),
            });
        }
        if let Some(set) = sets.last_mut() {
            set.utterances.push(Utterance {
                file: row[0].clone(),
                samples,
                phrase,
                display: Some(row[2].clone()),
            });
        }
    }
    for set in &mut sets {
        set.slots = vec![vocabulary(&set.utterances)];
    }
    Ok(sets)
}

/// The phrases a clip is claimed with: the own one first, then the impostors.
fn trials(set: &Set, index: usize, sequence: &mut Sequence) -> Vec<(&'static str, Vec<String>)> {
    let own = &set.utterances[index].phrase;
    let n = set.utterances.len();
    let slot = |position: usize| &set.slots[position.min(set.slots.len() - 1)];
    let mut out = vec![("own", own.clone())];
    for k in 0..3 {
        let other = (index + 1 + 3 * k + sequence.below(2)) % n;
        if other != index {
            out.push(("other", set.utterances[other].phrase.clone()));
        }
    }
    if own.is_empty() {
        return out;
    }
    for _ in 0..2 {
        let mut changed = own.clone();
        let at = sequence.below(own.len());
        let pool = slot(at);
        if pool.iter().any(|w| *w != own[at]) {
            while changed[at] == own[at] {
                changed[at] = pool[sequence.below(pool.len())].clone();
            }
            out.push(("one_word_changed", changed));
        }
    }
    if own.len() > 1 {
        let mut dropped = own.clone();
        dropped.remove(sequence.below(own.len()));
        out.push(("word_dropped", dropped));
    }
    let mut added = own.clone();
    let at = sequence.below(own.len() + 1);
    let pool = slot(at);
    added.insert(at, pool[sequence.below(pool.len())].clone());
    out.push(("word_added", added));
    let random = (0..own.len())
        .map(|k| {
            let pool = slot(k);
            pool[sequence.below(pool.len())].clone()
        })
        .collect();
    out.push(("random_words", random));
    out
}

pub fn run(options: &PhraseEval) -> Result<(), String> {
    let engine = eval_engine(&options.models, options.threads)?;
    let mut unreadable = Vec::new();
    let mut sets = if options.languages_only {
        Vec::new()
    } else {
        load_sets(&engine, options, &mut unreadable)?
    };
    for dir in &options.languages {
        sets.extend(load_language_sets(&engine, dir, &mut unreadable)?);
    }
    let checked = check_phrases(&engine, options, &sets, &mut unreadable);
    let report = report_json(&sets, &checked, unreadable);
    let json = serde_json::to_value(&report).map_err(|error| error.to_string())?;
    if let Some(dir) = &options.output.report {
        Report {
            json: &json,
            trials: &checked.scored,
            plot: None,
            summary: summary(&report, options),
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

/// What checking every claim found.
struct Checked<'s> {
    /// (set, kind) -> (errors, trials): a rejected own phrase or an accepted impostor is an error.
    counts: BTreeMap<(&'s str, &'static str), (usize, usize)>,
    /// Per `--languages` set: own phrases scored in the set's language, of own phrases scored.
    language_found: BTreeMap<&'s str, (usize, usize)>,
    scored: Vec<Scored>,
    rows: Vec<TrialRow>,
}

/// The claims an utterance is checked with: its own phrase, the impostors of [`trials`], and
/// another language's sentence (the next language set's, same position).
fn claims(
    sets: &[Set],
    set: &Set,
    index: usize,
    sequence: &mut Sequence,
) -> Vec<(&'static str, String)> {
    let utterance = &set.utterances[index];
    let mut claims: Vec<(&'static str, String)> = trials(set, index, sequence)
        .into_iter()
        .map(|(kind, phrase)| match (&utterance.display, kind) {
            (Some(display), "own") => (kind, display.clone()),
            _ => (kind, phrase.join(set.joiner)),
        })
        .collect();
    let language_sets: Vec<&Set> = sets.iter().filter(|s| s.language.is_some()).collect();
    if let Some(at) = language_sets.iter().position(|s| s.name == set.name) {
        let other = language_sets[(at + 1) % language_sets.len()];
        if let Some(u) = other.utterances.get(index % other.utterances.len().max(1)) {
            if other.name != set.name {
                let text = u.display.clone().unwrap_or_else(|| u.phrase.join(" "));
                claims.push(("other_language", text));
            }
        }
    }
    claims
}

/// Checks every utterance of every set against its claims; a check that fails is listed in
/// `unreadable`.
fn check_phrases<'s>(
    engine: &Engine,
    options: &PhraseEval,
    sets: &'s [Set],
    unreadable: &mut Vec<Unreadable>,
) -> Checked<'s> {
    let mut sequence = Sequence(20_261_123);
    let mut checked = Checked {
        counts: BTreeMap::new(),
        language_found: BTreeMap::new(),
        scored: Vec::new(),
        rows: Vec::new(),
    };
    let progress = Progress::new(
        sets.iter().map(|set| set.utterances.len()).sum(),
        "checking phrases",
        options.output.json,
    );
    for set in sets {
        for (index, utterance) in set.utterances.iter().enumerate() {
            progress.tick();
            let own_words = utterance.phrase.join(set.joiner);
            let mut claims = claims(sets, set, index, &mut sequence);
            if options.own_only {
                claims.truncate(1);
            }
            for (kind, text) in claims {
                if kind != "own" && text == own_words {
                    continue;
                }
                let phrase = Phrase {
                    text: &text,
                    language: set.language.filter(|_| options.tagged),
                };
                let check = match engine
                    .analysis()
                    .phrase_in_audio(&utterance.samples, phrase)
                {
                    Ok(check) => check,
                    Err(error) => {
                        unreadable.push(Unreadable::new(
                            &utterance.file,
                            format!("checking {text:?}: {error}"),
                        ));
                        continue;
                    }
                };
                checked.record(set, utterance, kind, text, &check);
            }
        }
    }
    drop(progress);
    checked
}

impl<'s> Checked<'s> {
    /// Counts one check of `utterance` claimed with `text` and keeps its row.
    fn record(
        &mut self,
        set: &'s Set,
        utterance: &Utterance,
        kind: &'static str,
        text: String,
        check: &PhraseCheck,
    ) {
        let accepted = check.code == PhraseCode::Matched;
        let error = if kind == "own" { !accepted } else { accepted };
        if let (Some(language), "own") = (set.language, kind) {
            let found = self.language_found.entry(set.name.as_str()).or_default();
            found.0 += usize::from(check.language == Some(language));
            found.1 += 1;
        }
        let entry = self.counts.entry((set.name.as_str(), kind)).or_default();
        entry.0 += usize::from(error);
        entry.1 += 1;
        self.rows.push(TrialRow {
            set: set.name.clone(),
            file: utterance.file.clone(),
            kind,
            claimed: text.clone(),
            accepted,
            margin: (check.margin * 1000.0).round() / 1000.0,
            recognized: check.recognized.clone(),
            language: check.language.map(Language::code),
        });
        self.scored.push(Scored {
            a: utterance.file.clone(),
            b: text,
            genuine: kind == "own",
            score: f64::from(check.margin),
        });
    }
}

/// `{"count", "of", "rate"}` of errors.
fn share((errors, of): (usize, usize)) -> Share {
    Share::new(errors, of)
}

/// report.json of `eval phrases` (and `--json`'s output). Written through a JSON value, whose keys
/// serde_json sorts: the file keeps the order it always had.
#[derive(Serialize)]
struct PhraseReport<'c> {
    speech_model: &'static str,
    false_reject: Share,
    false_accept: Share,
    false_accept_wrong_words: Share,
    /// By set name.
    sets: BTreeMap<String, SetFigures>,
    files_unreadable: usize,
    unreadable: Vec<Unreadable>,
    trials: &'c [TrialRow],
}

/// One set's errors.
#[derive(Serialize)]
struct SetFigures {
    clips: usize,
    /// `--languages` sets: own phrases scored in the set's language.
    language_found: Option<Share>,
    false_reject: Share,
    false_accept: Share,
    false_accept_wrong_words: Share,
    false_accept_by_kind: BTreeMap<&'static str, Share>,
}

/// One check: the claim, the verdict and what was recognised.
#[derive(Serialize)]
struct TrialRow {
    set: String,
    file: String,
    kind: &'static str,
    claimed: String,
    accepted: bool,
    margin: f32,
    recognized: String,
    language: Option<&'static str>,
}

/// A recording that could not be read, or a check that failed.
#[derive(Serialize)]
struct Unreadable {
    file: String,
    error: String,
}

impl Unreadable {
    fn new(file: &str, error: String) -> Self {
        Unreadable {
            file: file.to_owned(),
            error,
        }
    }
}

/// Wrong words (another phrase, one word changed, random words, another language): what a replay
/// of another recording says, the kinds issue 14's target names; an extra or a missing word is
/// reported apart.
fn wrong_words(kind: &str) -> bool {
    matches!(
        kind,
        "other" | "one_word_changed" | "random_words" | "other_language"
    )
}

/// report.json (and `--json`'s output): per set and pooled.
fn report_json<'c>(
    sets: &[Set],
    checked: &'c Checked<'_>,
    unreadable: Vec<Unreadable>,
) -> PhraseReport<'c> {
    let add = |a: (usize, usize), b: (usize, usize)| (a.0 + b.0, a.1 + b.1);
    let mut per_set = BTreeMap::new();
    let (mut own_total, mut impostor_total, mut wrong_total) = ((0, 0), (0, 0), (0, 0));
    for set in sets {
        let mut by_kind = BTreeMap::new();
        let (mut impostors, mut wrong) = ((0, 0), (0, 0));
        for ((name, kind), value) in &checked.counts {
            if *name != set.name.as_str() {
                continue;
            }
            if *kind == "own" {
                own_total = add(own_total, *value);
                continue;
            }
            by_kind.insert(*kind, share(*value));
            impostors = add(impostors, *value);
            if wrong_words(kind) {
                wrong = add(wrong, *value);
            }
        }
        impostor_total = add(impostor_total, impostors);
        wrong_total = add(wrong_total, wrong);
        let own = checked
            .counts
            .get(&(set.name.as_str(), "own"))
            .copied()
            .unwrap_or_default();
        per_set.insert(
            set.name.clone(),
            SetFigures {
                clips: set.utterances.len(),
                language_found: checked
                    .language_found
                    .get(set.name.as_str())
                    .copied()
                    .map(share),
                false_reject: share(own),
                false_accept: share(impostors),
                false_accept_wrong_words: share(wrong),
                false_accept_by_kind: by_kind,
            },
        );
    }
    PhraseReport {
        files_unreadable: unreadable.len(),
        unreadable,
        speech_model: vouch_bio::infer::WHISPER_DECODER.file,
        false_reject: share(own_total),
        false_accept: share(impostor_total),
        false_accept_wrong_words: share(wrong_total),
        sets: per_set,
        trials: &checked.rows,
    }
}

/// The text output, from the report.
fn print_text(report: &PhraseReport) {
    let mut out = std::io::stdout().lock();
    let text = |share: &Share| format!("{}/{}", share.count, share.of);
    for (name, set) in &report.sets {
        let kinds: Vec<String> = set
            .false_accept_by_kind
            .iter()
            .map(|(kind, share)| format!("{kind} {}", text(share)))
            .collect();
        let _ = writeln!(
            out,
            "{name} ({} clips): false reject {}, false accept {} ({})",
            set.clips,
            text(&set.false_reject),
            text(&set.false_accept),
            kinds.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "pooled: false reject {}, false accept {} (wrong words: another phrase, one word changed or random words {})",
        text(&report.false_reject),
        text(&report.false_accept),
        text(&report.false_accept_wrong_words)
    );
    for entry in &report.unreadable {
        let _ = writeln!(out, "unreadable: {}: {}", entry.file, entry.error);
    }
}

/// summary.md of `eval phrases`.
fn summary(r: &PhraseReport, options: &PhraseEval) -> String {
    let mut s = Summary::new("Spoken-phrase check");
    s.row(
        "data",
        format!(
            "`{}`{}",
            options.speech.display(),
            options
                .grid
                .as_ref()
                .map_or(String::new(), |g| format!(", GRID `{}`", g.display()))
        ),
    );
    s.row(
        "model",
        format!(
            "{} with {}",
            r.speech_model,
            vouch_bio::infer::WHISPER_ENCODER.file
        ),
    );
    s.row("false reject (own phrase)", r.false_reject.text());
    s.row("false accept (every impostor kind)", r.false_accept.text());
    s.row(
        "false accept, wrong words",
        r.false_accept_wrong_words.text(),
    );
    s.row("unreadable", format!("{} recordings", r.files_unreadable));
    let mut table = String::from(
        "| set | clips | false reject | false accept | wrong words |\n|---|---|---|---|---|\n",
    );
    for (name, set) in &r.sets {
        table.push_str(&format!(
            "| {name} | {} | {} | {} | {} |\n",
            set.clips,
            set.false_reject.text(),
            set.false_accept.text(),
            set.false_accept_wrong_words.text()
        ));
    }
    s.text(&table);
    s.failed("Unreadable recordings", &r.unreadable, |entry| {
        (entry.file.as_str(), entry.error.as_str())
    });
    s.finish()
}
