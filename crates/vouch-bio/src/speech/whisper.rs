//! Whisper in tract: [`Whisper`] encodes a clip (the encoder trimmed to the clip's length
//! instead of Whisper's 30 s window), scores an expected phrase by one teacher-forced decoder pass
//! ([`Whisper::verify`] -> [`PhraseScore`]) and transcribes greedily ([`Whisper::transcribe`]).
//! Two models ([`Variant`]): tiny.en ([`TINY_EN`]), English only, and base ([`BASE`]),
//! multilingual, which also names the language it hears ([`Whisper::detect_language`]).
//!
//! tiny.en's prompt is `<|startoftranscript|><|notimestamps|>`: it is English-only, so there are
//! no language or task tokens (its `config.json` has no `lang_ids` in use, and CTranslate2's
//! reference run with this prompt gives the same text as Whisper's own). The multilingual
//! model's is `<|startoftranscript|><|xx|><|transcribe|><|notimestamps|>`, `xx` the phrase's
//! language.

use std::path::Path;

use super::language::{is_mark, Language};
use super::mel::{LogMel, HOP, MAX_FRAMES, N_MELS, SAMPLE_RATE};
use super::tokenizer::{
    Tokenizer, MULTILINGUAL_TOKENIZER_FILE, MULTILINGUAL_TOKENIZER_SHA256, TOKENIZER_FILE,
    TOKENIZER_SHA256,
};
use crate::infer::{
    Input, ModelError, ModelSpec, TiedEmbedding, VariableModel, WHISPER_BASE_DECODER,
    WHISPER_BASE_ENCODER, WHISPER_DECODER, WHISPER_ENCODER,
};

/// One Whisper model: its files and sizes.
#[derive(Debug)]
pub struct Variant {
    /// Its name in evaluations and errors (`tiny.en`, `base`).
    pub name: &'static str,
    /// The encoder graph.
    pub encoder: ModelSpec,
    /// The decoder graph.
    pub decoder: ModelSpec,
    /// The tokenizer tables' file and sha256.
    pub tokenizer: (&'static str, &'static str),
    /// Width of the encoder's output and the decoder's states.
    pub d_model: usize,
    /// Vocabulary size (text, special and timestamp tokens).
    pub vocabulary: usize,
    /// Whether the prompt names a language (and the model can name the one it hears).
    pub multilingual: bool,
}

/// Whisper tiny.en (`models/convert-whisper.sh`): English only.
pub const TINY_EN: Variant = Variant {
    name: "tiny.en",
    encoder: WHISPER_ENCODER,
    decoder: WHISPER_DECODER,
    tokenizer: (TOKENIZER_FILE, TOKENIZER_SHA256),
    d_model: D_MODEL,
    vocabulary: VOCABULARY,
    multilingual: false,
};

/// Whisper base (`models/convert-whisper-base.sh`): 99 languages.
pub const BASE: Variant = Variant {
    name: "base",
    encoder: WHISPER_BASE_ENCODER,
    decoder: WHISPER_BASE_DECODER,
    tokenizer: (MULTILINGUAL_TOKENIZER_FILE, MULTILINGUAL_TOKENIZER_SHA256),
    d_model: 512,
    vocabulary: 51865,
    multilingual: true,
};

/// Width of tiny.en's encoder output.
pub const D_MODEL: usize = 384;
/// tiny.en's vocabulary size (text, special and timestamp tokens).
pub const VOCABULARY: usize = 51864;
/// Most text tokens the decoder takes (its positional table).
pub const MAX_TEXT_TOKENS: usize = 448;
/// The decoder's token embedding, `[d_model, vocabulary]`, tied to its output projection.
const TOKEN_EMBEDDING: &str = "decoder.embeddings.weight.T";
/// The decoder's token-id input.
const TOKEN_IDS_INPUT: &str = "tokens";
/// Silence appended after the clip before the encoder (frames of 10 ms): the model was trained
/// on speech followed by padding, and sees the end of the utterance more reliably with some.
pub const TAIL_FRAMES: usize = 50;
/// The encoder runs on a whole number of these frames (1 s): a few distinct shapes.
pub const FRAME_STEP: usize = 100;
/// The expected phrase is accepted when [`PhraseScore::score`] is at least this, that is when
/// both [`PhraseScore::mean_margin`] >= `ACCEPT_THRESHOLD` (nats per token) and
/// [`PhraseScore::min_word_margin`] >= [`WORD_ACCEPT_THRESHOLD`] (nats per word). The pair is the
/// one with the fewest pooled false accepts among those keeping pooled false rejects at or under
/// 5 % in the second study (LibriSpeech test-other <= 3.6 s and 8-12.5 s with Whisper's own
/// 30 s-window transcripts as the spoken phrases, FSDD six-digit PINs, GRID; own phrase against
/// other utterances' phrases, one word changed, dropped or added, and random phrases): pooled
/// false reject 4.7 %, false accept 1.9 %; per set in the models README. The mean alone dilutes
/// one wrong word in a long phrase; the word floor does not depend on the phrase's length.
/// The multilingual model uses the same pair (`docs/process-video.md` has its figures per
/// language).
pub const ACCEPT_THRESHOLD: f32 = -0.40;
/// The per-word floor of the decision (see [`ACCEPT_THRESHOLD`]): a word the model would
/// not have written costs several nats whatever the phrase's length.
pub const WORD_ACCEPT_THRESHOLD: f32 = -5.75;

/// Token ids never produced by [`Whisper::transcribe`] with tiny.en (the model's
/// `suppress_ids`; the multilingual model suppresses only special tokens).
const SUPPRESS: [u32; 84] = [
    1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93, 357,
    366, 438, 532, 685, 705, 796, 930, 1058, 1220, 1267, 1279, 1303, 1343, 1377, 1391, 1635, 1782,
    1875, 2162, 2361, 2488, 3467, 4008, 4211, 4600, 4808, 5299, 5855, 6329, 7203, 9609, 9959,
    10563, 10786, 11420, 11709, 11907, 13163, 13697, 13700, 14808, 15306, 16410, 16791, 17992,
    19203, 19510, 20724, 22305, 22935, 27007, 30109, 30420, 33409, 34949, 40283, 40493, 40549,
    47282, 49146,
];

/// A clip run through the encoder.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// [frames][D_MODEL], row-major.
    features: Vec<f32>,
    /// Encoder output frames (20 ms each).
    frames: usize,
}

impl Encoded {
    /// Encoder output frames (20 ms each).
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The encoder's states, [frames][D_MODEL] row-major (frame t covers 20 t to 20 t + 20 ms).
    pub fn states(&self) -> &[f32] {
        &self.features
    }
}

/// One expected token's score in a teacher-forced pass.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenScore {
    /// The expected token (the last one of a phrase is `<|endoftext|>`).
    pub id: u32,
    /// Its log-probability given the audio and the expected tokens before it.
    pub log_prob: f32,
    /// The most probable token at that position.
    pub best_id: u32,
    /// That token's log-probability.
    pub best_log_prob: f32,
    /// Log of the probability of every token that writes the expected text from here on
    /// differently (see [`spoken_form`]: case, leading space, digits as numerals or words, a
    /// longer or shorter piece of the same letters), the expected token included; at a
    /// punctuation token also every punctuation token and the next words' pieces. In Japanese
    /// also the likeliest token that writes the same sounds (`japanese.rs`: a homophone).
    pub class_log_prob: f32,
    /// The most probable token that does not write the expected text (another word, or
    /// `<|endoftext|>` before the phrase's end, or text after it); punctuation is no rival of a
    /// word.
    pub rival_id: u32,
    /// That token's log-probability (at most [`RIVAL_FLOOR`] below the best token's).
    pub rival_log_prob: f32,
    /// The most probable punctuation-only token's log-probability (same floor).
    pub punct_log_prob: f32,
}

/// How far below the best token of a position rivals and punctuation are still looked for,
/// nats: a rival further down cannot matter.
pub const RIVAL_FLOOR: f32 = 16.0;

impl TokenScore {
    /// `class_log_prob - rival_log_prob`, at most 0: 0 when the model prefers a token that
    /// writes the expected text (in any case, spacing or digit form) to every token that does
    /// not; punctuation is neither for a word.
    pub fn margin(&self) -> f32 {
        (self.class_log_prob - self.rival_log_prob).min(0.0)
    }
}

/// How well the audio supports one written form of the expected phrase.
#[derive(Debug, Clone, PartialEq)]
pub struct PhraseScore {
    /// The written form scored (see [`renderings_in`]).
    pub rendering: String,
    /// One entry per expected token, `<|endoftext|>` last: extra speech after the phrase
    /// lowers its score.
    pub tokens: Vec<TokenScore>,
    /// Mean over the tokens of [`TokenScore::margin`] (nats per token).
    pub mean_margin: f32,
    /// The smallest per-word sum of margins (a word is a token starting with a space and the
    /// tokens continuing it; `<|endoftext|>` is a word of its own).
    pub min_word_margin: f32,
    /// Mean over the tokens of the expected token's log-probability.
    pub mean_log_prob: f32,
    /// What the model heard given the expected prefix: the decoded argmax tokens up to the
    /// first `<|endoftext|>`.
    pub heard: String,
}

impl PhraseScore {
    /// The decision statistic, on the mean margin's scale: the smaller of
    /// [`PhraseScore::mean_margin`] and [`PhraseScore::min_word_margin`] scaled by
    /// `ACCEPT_THRESHOLD / WORD_ACCEPT_THRESHOLD`, so that it reaches [`ACCEPT_THRESHOLD`]
    /// exactly when both reach their thresholds.
    pub fn score(&self) -> f32 {
        self.mean_margin
            .min(self.min_word_margin * (ACCEPT_THRESHOLD / WORD_ACCEPT_THRESHOLD))
    }

    /// Whether the phrase is accepted ([`PhraseScore::score`] >= [`ACCEPT_THRESHOLD`]).
    pub fn accepted(&self) -> bool {
        self.score() >= ACCEPT_THRESHOLD
    }
}

/// A Whisper model ([`Variant`]): encoder, decoder, tokenizer and front end.
#[derive(Debug)]
pub struct Whisper {
    variant: &'static Variant,
    encoder: VariableModel,
    /// The decoder without its token embedding and output projection, which share one matrix
    /// (`embedding`, kept in float16 outside the graph: 40 MB instead of 160 for tiny.en).
    decoder: VariableModel,
    embedding: TiedEmbedding,
    tokenizer: Tokenizer,
    mel: LogMel,
    /// What every text token (ids below `<|endoftext|>`) says, as bytes: its [`spoken_form`]
    /// when it decodes to whole characters, its raw bytes when it holds part of one (a Chinese
    /// character is often two tokens), so that a piece of a character is never mistaken for
    /// punctuation.
    forms: Vec<Box<[u8]>>,
    specials: Specials,
}

/// The special tokens a prompt and a decision need, read from the tokenizer's table.
#[derive(Debug, Clone)]
struct Specials {
    end_of_text: u32,
    start_of_transcript: u32,
    no_timestamps: u32,
    /// `<|transcribe|>` (multilingual only).
    transcribe: Option<u32>,
    /// The language tokens in [`super::language::LANGUAGES`] order (multilingual only).
    languages: Vec<u32>,
}

/// What a piece of text says, for comparing written forms: lower case, letters and digits
/// only, each digit spelled as its English word ("Seven", " 7" and "7." all give "seven"; ","
/// gives "").
pub fn spoken_form(text: &str) -> String {
    spoken_form_in(text, true)
}

/// [`spoken_form`], with digits spelled as English words or kept as digits (other languages:
/// " 7" and " sete" are then two different things, and a phrase's numerals must be said as
/// written).
pub fn spoken_form_in(text: &str, english_digits: bool) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if let Some(d) = c
            .to_digit(10)
            .filter(|_| english_digits && c.is_ascii_digit())
        {
            out.push_str(DIGIT_WORDS[d as usize]);
        } else if c.is_alphanumeric() {
            // A Chinese character in its Simplified form: Whisper writes Mandarin in either.
            out.extend(super::han::simplified(c).to_lowercase());
        } else if is_mark(c) {
            // Vowel signs and viramas of Indic scripts, Arabic harakat: part of the letters.
            out.push(c);
        }
    }
    out
}

/// The encoder's input length for a clip of `samples`: the clip plus [`TAIL_FRAMES`], rounded
/// up to [`FRAME_STEP`], at most Whisper's 30 s window.
pub fn encoder_frames(samples: usize) -> usize {
    let frames = samples.div_ceil(HOP) + TAIL_FRAMES;
    (frames.div_ceil(FRAME_STEP) * FRAME_STEP).min(MAX_FRAMES)
}

/// The written form of `phrase` that tiny.en scores (one decoder pass): its words in sentence
/// case (single letters as capitals, GRID's "f" -> "F"), numerals of three digits or more
/// spelled out digit by digit ("787789" -> "seven eight seven seven eight nine"; "10" and years
/// such as "2012" stay), ending with a period, after a space.
/// Other writings of the same words need no pass of their own: each position's score counts
/// every token that says the same thing ([`spoken_form`]: case, punctuation, " 7" for
/// " seven"). Scoring other forms too (lower case without punctuation, numerals joined, spaced
/// or comma-separated) and keeping the best raised false accepts in the second study (see the
/// models README). Hesitation sounds ([`FILLERS`]: "um", "uh", ...) are left out: Whisper was
/// trained on transcripts without them and does not write them, while transcripts made by other
/// recognisers (and people) often do. Empty for a phrase without words.
///
/// `language` `None` means English, as tiny.en scores it. In other
/// languages numerals are kept as written (their words are the language's, not English
/// ones); the sentence still starts with a capital where the script has them and ends with a
/// period unless it ends with its own sentence mark (`。`, `।`, `؟`, ...); a phrase in a script
/// written without spaces is scored without a leading space, as Whisper writes it.
pub fn renderings_in(phrase: &str, language: Option<Language>) -> Vec<String> {
    let english = language.is_none_or(|l| l == Language::ENGLISH);
    let words: Vec<String> = phrase
        .split_whitespace()
        .filter(|word| !FILLERS.contains(&spoken_form(word).as_str()))
        .flat_map(|word| {
            // A code of three digits or more is read digit by digit; "10" stays a number, and so
            // does a year (Whisper writes "twenty twelve" as " 2012").
            if english
                && word.len() >= 3
                && word.chars().all(|c| c.is_ascii_digit())
                && !is_year(word)
            {
                word.bytes()
                    .map(|b| DIGIT_WORDS[usize::from(b - b'0')].to_string())
                    .collect::<Vec<_>>()
            } else {
                vec![word.to_string()]
            }
        })
        .collect();
    if words.is_empty() {
        return Vec::new();
    }
    let mut text = String::new();
    for (i, word) in words.iter().enumerate() {
        text.push(' ');
        // Single letters (GRID's "f", spelled initials) are written as capitals.
        let single = english && word.chars().count() == 1 && word.chars().all(char::is_alphabetic);
        if i == 0 || single {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                text.extend(first.to_uppercase());
                text.push_str(chars.as_str());
            }
        } else {
            text.push_str(word);
        }
    }
    if !text.ends_with(['.', '!', '?', '。', '！', '？', '।', '॥', '؟', '۔', '…']) {
        text.push('.');
    }
    vec![text]
}

/// Hesitation sounds, as [`spoken_form`] writes them, that [`renderings_in`] leaves out of a phrase.
pub const FILLERS: [&str; 9] = ["um", "umm", "uh", "uhh", "uhm", "erm", "er", "hmm", "mm"];

/// Whether a word is a year as people write them in a sentence (1100 to 2099): read as a number
/// ("nineteen eighty-four"), not digit by digit.
fn is_year(word: &str) -> bool {
    word.len() == 4
        && !word.starts_with('0')
        && word.parse::<u32>().is_ok_and(|y| (1100..2100).contains(&y))
}

const DIGIT_WORDS: [&str; 10] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
];

fn log_softmax_row(row: &[f32]) -> (f32, usize) {
    let (best, max) = row
        .iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &v)| {
            if v > bv {
                (i, v)
            } else {
                (bi, bv)
            }
        });
    let sum: f64 = row.iter().map(|&v| f64::from(v - max).exp()).sum();
    (max + sum.ln() as f32, best)
}

impl Whisper {
    /// Loads and checks tiny.en's two models and tokenizer from `models_dir`.
    pub fn load(models_dir: &Path) -> Result<Whisper, ModelError> {
        Whisper::load_variant(models_dir, &TINY_EN)
    }

    /// Loads and checks one [`Variant`] from `models_dir`.
    pub fn load_variant(
        models_dir: &Path,
        variant: &'static Variant,
    ) -> Result<Whisper, ModelError> {
        let (file, sha256) = variant.tokenizer;
        let tokenizer = Tokenizer::load_file(models_dir, file, sha256)?;
        let special = |token: &str| {
            tokenizer.id_of(token).ok_or_else(|| ModelError::Runtime {
                file,
                detail: format!("no {token} token"),
            })
        };
        let specials = Specials {
            end_of_text: special("<|endoftext|>")?,
            start_of_transcript: special("<|startoftranscript|>")?,
            no_timestamps: special("<|notimestamps|>")?,
            transcribe: if variant.multilingual {
                Some(special("<|transcribe|>")?)
            } else {
                None
            },
            languages: if variant.multilingual {
                Language::all()
                    .map(|language| special(&format!("<|{}|>", language.code())))
                    .collect::<Result<_, _>>()?
            } else {
                Vec::new()
            },
        };
        if tokenizer.len() != variant.vocabulary {
            return Err(ModelError::Runtime {
                file,
                detail: format!(
                    "{} tokens, the model has {}",
                    tokenizer.len(),
                    variant.vocabulary
                ),
            });
        }
        let english = !variant.multilingual;
        let forms = (0..specials.end_of_text)
            .map(|id| {
                let bytes = tokenizer.bytes_of(id);
                match std::str::from_utf8(&bytes) {
                    Ok(text) => spoken_form_in(text, english)
                        .into_bytes()
                        .into_boxed_slice(),
                    Err(_) => bytes.into_boxed_slice(),
                }
            })
            .collect();
        // The decoder first: the larger one, loaded while nothing else is held.
        let (decoder, embedding) = VariableModel::load_tied(
            models_dir,
            variant.decoder,
            TOKEN_EMBEDDING,
            TOKEN_IDS_INPUT,
        )?;
        let encoder = VariableModel::load(models_dir, variant.encoder)?;
        Ok(Whisper {
            variant,
            encoder,
            decoder,
            embedding,
            tokenizer,
            mel: LogMel::new(),
            forms,
            specials,
        })
    }

    /// Checks that a variant's files are in `models_dir`, without reading them (their sha256
    /// is checked when the variant loads).
    pub fn check_present(models_dir: &Path, variant: &Variant) -> Result<(), ModelError> {
        for file in [
            variant.encoder.file,
            variant.decoder.file,
            variant.tokenizer.0,
        ] {
            let path = models_dir.join(file);
            if !path.is_file() {
                return Err(ModelError::Missing {
                    file,
                    detail: format!("{}: not a file", path.display()),
                });
            }
        }
        Ok(())
    }

    /// Which model this is.
    pub fn variant(&self) -> &'static Variant {
        self.variant
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Runs the encoder on 16 kHz mono `pcm` (at most the first 30 s), trimmed to
    /// [`encoder_frames`].
    pub fn encode(&self, pcm: &[f32]) -> Result<Encoded, ModelError> {
        let pcm = &pcm[..pcm.len().min(SAMPLE_RATE * 30)];
        let frames = encoder_frames(pcm.len());
        let mel = self.mel.compute(pcm, frames);
        self.encode_mel(&mel, frames)
    }

    /// Runs the encoder on a log-mel [N_MELS][frames] (frames even, at most 3000).
    pub fn encode_mel(&self, mel: &[f32], frames: usize) -> Result<Encoded, ModelError> {
        let mut outputs = self.encoder.run(&[Input::F32(&[1, N_MELS, frames], mel)])?;
        let (shape, features) = outputs.swap_remove(0);
        Ok(Encoded {
            features,
            frames: shape.get(1).copied().unwrap_or(0),
        })
    }

    /// Decoder logits [tokens.len()][vocabulary] for `tokens` (teacher forcing).
    pub fn logits(&self, encoded: &Encoded, tokens: &[u32]) -> Result<Vec<f32>, ModelError> {
        let d_model = self.variant.d_model;
        let wrong = |detail: String| ModelError::Runtime {
            file: self.variant.decoder.file,
            detail,
        };
        let embedded = self.embedding.lookup(tokens).ok_or_else(|| {
            wrong(format!(
                "a token id is not below {}",
                self.variant.vocabulary
            ))
        })?;
        let mut outputs = self.decoder.run(&[
            Input::F32(&[1, tokens.len(), d_model], &embedded),
            Input::F32(&[1, encoded.frames, d_model], &encoded.features),
        ])?;
        let hidden = outputs.swap_remove(0).1;
        self.embedding
            .project(&hidden)
            .ok_or_else(|| wrong(format!("hidden states of {} values", hidden.len())))
    }

    /// The prompt before the text: `<|startoftranscript|>`, for the multilingual model the
    /// language and `<|transcribe|>`, then `<|notimestamps|>`.
    fn prompt(&self, language: Option<Language>) -> Vec<u32> {
        let s = &self.specials;
        let mut prompt = vec![s.start_of_transcript];
        if let Some(transcribe) = s.transcribe {
            let language = language.unwrap_or(Language::ENGLISH);
            prompt.push(s.languages[language.index()]);
            prompt.push(transcribe);
        }
        prompt.push(s.no_timestamps);
        prompt
    }

    /// The probability of each of `candidates` being the language spoken, from the
    /// multilingual model's first decoder step (Whisper's own language detection, restricted
    /// to the candidates and renormalised over them), most probable first. Empty for tiny.en or
    /// no candidates.
    pub fn detect_language(
        &self,
        encoded: &Encoded,
        candidates: &[Language],
    ) -> Result<Vec<(Language, f32)>, ModelError> {
        if self.specials.languages.is_empty() || candidates.is_empty() {
            return Ok(Vec::new());
        }
        let logits = self.logits(encoded, &[self.specials.start_of_transcript])?;
        let logit =
            |language: &Language| logits[self.specials.languages[language.index()] as usize];
        let max = candidates
            .iter()
            .map(logit)
            .fold(f32::NEG_INFINITY, f32::max);
        let total: f32 = candidates.iter().map(|l| (logit(l) - max).exp()).sum();
        let mut out: Vec<(Language, f32)> = candidates
            .iter()
            .map(|l| (*l, (logit(l) - max).exp() / total))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        Ok(out)
    }

    /// Teacher-forced scores of `text_ids` followed by `<|endoftext|>` (tiny.en's prompt, or the
    /// multilingual model's in English).
    pub fn score_tokens(
        &self,
        encoded: &Encoded,
        text_ids: &[u32],
    ) -> Result<Vec<TokenScore>, ModelError> {
        self.score_tokens_in(encoded, text_ids, None)
    }

    /// [`Whisper::score_tokens`] with the multilingual model's prompt naming `language`.
    pub fn score_tokens_in(
        &self,
        encoded: &Encoded,
        text_ids: &[u32],
        language: Option<Language>,
    ) -> Result<Vec<TokenScore>, ModelError> {
        let vocabulary = self.variant.vocabulary;
        let end_of_text = self.specials.end_of_text;
        let mut input = self.prompt(language);
        let prompt = input.len();
        let text_ids = &text_ids[..text_ids.len().min(MAX_TEXT_TOKENS - prompt - 1)];
        input.extend_from_slice(text_ids);
        let logits = self.logits(encoded, &input)?;
        let targets: Vec<u32> = text_ids.iter().copied().chain([end_of_text]).collect();
        let form = |id: u32| self.forms.get(id as usize).map_or(&[][..], |f| &**f);
        // Japanese is compared by sound: a homophone is the displayed word said aloud.
        let japanese = language.is_some_and(|l| l.code() == "ja");
        // What the expected text says from each position on.
        let mut rest = vec![Vec::new(); targets.len()];
        for k in (0..text_ids.len()).rev() {
            let mut said = form(targets[k]).to_vec();
            said.extend_from_slice(&rest[k + 1]);
            rest[k] = said;
        }
        // The same as characters, once per position, for the comparison by sound.
        let expected: Vec<Vec<char>> = if japanese {
            rest.iter()
                .map(|said| super::japanese::expected_chars(said))
                .collect()
        } else {
            Vec::new()
        };
        Ok(targets
            .iter()
            .enumerate()
            .map(|(k, &id)| {
                // The prompt's last row predicts the first text token.
                let at = prompt - 1 + k;
                let row = &logits[at * vocabulary..(at + 1) * vocabulary];
                let (lse, best) = log_softmax_row(row);
                let floor = row[best] - RIVAL_FLOOR;
                let at_punctuation = id != end_of_text && form(id).is_empty();
                let (mut class, mut rival, mut rival_id, mut punct) =
                    (0f64, floor, end_of_text, floor);
                // The likeliest token that only sounds like the expected text (Japanese).
                let mut alike = 0f64;
                for (token, &logit) in row.iter().enumerate().take(end_of_text as usize + 1) {
                    if logit < floor {
                        continue;
                    }
                    let token = token as u32;
                    let piece = form(token);
                    let consistent = if token == end_of_text {
                        rest[k].is_empty()
                    } else if piece.is_empty() {
                        punct = punct.max(logit);
                        if !at_punctuation {
                            continue;
                        }
                        true
                    } else {
                        rest[k].starts_with(piece)
                    };
                    if consistent || token == id {
                        class += f64::from(logit - lse).exp();
                    } else if japanese && super::japanese::sounds_alike(piece, &expected[k]) {
                        alike = alike.max(f64::from(logit - lse).exp());
                    } else if logit > rival {
                        (rival, rival_id) = (logit, token);
                    }
                }
                TokenScore {
                    id,
                    log_prob: row[id as usize] - lse,
                    best_id: best as u32,
                    best_log_prob: row[best] - lse,
                    class_log_prob: ((class + alike).ln() as f32).max(row[id as usize] - lse),
                    rival_id,
                    rival_log_prob: rival - lse,
                    punct_log_prob: punct - lse,
                }
            })
            .collect())
    }

    /// Scores one written form of a phrase (English with tiny.en).
    pub fn score_rendering(
        &self,
        encoded: &Encoded,
        rendering: &str,
    ) -> Result<PhraseScore, ModelError> {
        self.score_rendering_in(encoded, rendering, None, false)
    }

    /// Scores one written form of a phrase in `language`. A word, for the per-word margin, is a
    /// token starting with a space and the tokens continuing it; where the script writes no
    /// spaces (`unspaced`: Chinese, Japanese, Thai, ...), each token that starts on a character
    /// boundary starts a word, so a word is one character or the few a token writes together.
    /// `<|endoftext|>` is a word of its own.
    pub fn score_rendering_in(
        &self,
        encoded: &Encoded,
        rendering: &str,
        language: Option<Language>,
        unspaced: bool,
    ) -> Result<PhraseScore, ModelError> {
        let end_of_text = self.specials.end_of_text;
        let ids = self.tokenizer.encode(rendering);
        let tokens = self.score_tokens_in(encoded, &ids, language)?;
        let n = tokens.len().max(1) as f32;
        let mean_margin = tokens.iter().map(TokenScore::margin).sum::<f32>() / n;
        let mean_log_prob = tokens.iter().map(|t| t.log_prob).sum::<f32>() / n;
        let mut words: Vec<f32> = Vec::new();
        // Bytes of the text so far: a token starts on a character boundary when they are whole
        // UTF-8.
        let mut written: Vec<u8> = Vec::new();
        for token in &tokens {
            let on_boundary = std::str::from_utf8(&written).is_ok();
            let bytes = self.tokenizer.bytes_of(token.id);
            let starts_word = token.id == end_of_text
                || words.is_empty()
                || bytes.first() == Some(&b' ')
                || (unspaced && on_boundary);
            written.extend_from_slice(&bytes);
            match words.last_mut() {
                Some(sum) if !starts_word => *sum += token.margin(),
                _ => words.push(token.margin()),
            }
        }
        let min_word_margin = words.iter().copied().fold(f32::INFINITY, f32::min);
        let heard_ids: Vec<u32> = tokens
            .iter()
            .map(|t| t.best_id)
            .take_while(|&id| id != end_of_text)
            .collect();
        Ok(PhraseScore {
            rendering: rendering.to_string(),
            heard: self.tokenizer.decode(&heard_ids).trim().to_string(),
            tokens,
            mean_margin,
            min_word_margin,
            mean_log_prob,
        })
    }

    /// How well 16 kHz mono `pcm` supports `phrase`: its written form ([`renderings_in`]) is scored
    /// in one teacher-forced decoder pass.
    pub fn verify(&self, pcm: &[f32], phrase: &str) -> Result<PhraseScore, ModelError> {
        let encoded = self.encode(pcm)?;
        self.verify_encoded(&encoded, phrase)
    }

    /// [`Whisper::verify`] on an encoded clip.
    pub fn verify_encoded(
        &self,
        encoded: &Encoded,
        phrase: &str,
    ) -> Result<PhraseScore, ModelError> {
        self.verify_encoded_in(encoded, phrase, None, false)
    }

    /// [`Whisper::verify_encoded`] in `language` (the multilingual model's prompt names it;
    /// `unspaced`: the phrase's script writes no spaces between words, see
    /// [`Whisper::score_rendering_in`]).
    pub fn verify_encoded_in(
        &self,
        encoded: &Encoded,
        phrase: &str,
        language: Option<Language>,
        unspaced: bool,
    ) -> Result<PhraseScore, ModelError> {
        let mut best: Option<PhraseScore> = None;
        for rendering in renderings_in(phrase, language) {
            let rendering = if unspaced {
                rendering.trim_start().to_owned()
            } else {
                rendering
            };
            let score = self.score_rendering_in(encoded, &rendering, language, unspaced)?;
            if best.as_ref().is_none_or(|b| score.score() > b.score()) {
                best = Some(score);
            }
        }
        Ok(best.unwrap_or_else(|| PhraseScore {
            rendering: String::new(),
            tokens: Vec::new(),
            mean_margin: f32::NEG_INFINITY,
            min_word_margin: f32::NEG_INFINITY,
            mean_log_prob: f32::NEG_INFINITY,
            heard: String::new(),
        }))
    }

    /// Greedy transcript of 16 kHz mono `pcm` (its first 30 s), at most `max_tokens` text
    /// tokens. Unlike the phrase check, it runs the encoder on Whisper's whole 30 s window (the
    /// clip padded with silence, as the model was trained): free greedy decoding on the trimmed
    /// window falls into repetition loops on short clips ("so silly you don't mean that you
    /// thought me so silly ..."). About 0.8 s of encoder; for evaluations, not process-video.
    pub fn transcribe(&self, pcm: &[f32], max_tokens: usize) -> Result<String, ModelError> {
        self.transcribe_in(pcm, max_tokens, None)
    }

    /// [`Whisper::transcribe`] in `language` (the multilingual model; `None`: English).
    pub fn transcribe_in(
        &self,
        pcm: &[f32],
        max_tokens: usize,
        language: Option<Language>,
    ) -> Result<String, ModelError> {
        let pcm = &pcm[..pcm.len().min(SAMPLE_RATE * 30)];
        let mel = self.mel.compute(pcm, MAX_FRAMES);
        let encoded = self.encode_mel(&mel, MAX_FRAMES)?;
        self.transcribe_encoded_in(&encoded, max_tokens, language)
    }

    /// Greedy decoding without a key/value cache (the decoder re-reads the prefix each step;
    /// fine for the few tokens of a spoken phrase).
    pub fn transcribe_encoded(
        &self,
        encoded: &Encoded,
        max_tokens: usize,
    ) -> Result<String, ModelError> {
        self.transcribe_encoded_in(encoded, max_tokens, None)
    }

    /// [`Whisper::transcribe_encoded`] in `language`.
    pub fn transcribe_encoded_in(
        &self,
        encoded: &Encoded,
        max_tokens: usize,
        language: Option<Language>,
    ) -> Result<String, ModelError> {
        let vocabulary = self.variant.vocabulary;
        let end_of_text = self.specials.end_of_text;
        let suppress: &[u32] = if self.variant.multilingual {
            &[]
        } else {
            &SUPPRESS
        };
        let mut tokens = self.prompt(language);
        let prompt = tokens.len();
        let limit = max_tokens.min(MAX_TEXT_TOKENS - tokens.len());
        for step in 0..limit {
            let logits = self.logits(encoded, &tokens)?;
            let row = &logits[(tokens.len() - 1) * vocabulary..tokens.len() * vocabulary];
            let next = row
                .iter()
                .enumerate()
                .filter(|&(id, _)| {
                    let id = id as u32;
                    // No special tokens but the end; no blank or end as the first token.
                    (id < end_of_text || (id == end_of_text && step > 0))
                        && !(step == 0 && id == 220)
                        && !suppress.contains(&id)
                })
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map_or(end_of_text, |(id, _)| id as u32);
            if next == end_of_text {
                break;
            }
            tokens.push(next);
        }
        Ok(self.tokenizer.decode(&tokens[prompt..]).trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::{max_abs_diff, reference_f32};

    fn models_dir() -> std::path::PathBuf {
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"))
    }

    fn reference_i64(path: &str) -> Vec<i64> {
        let path = if path.contains('/') {
            format!(
                "{}/../../models/reference/{path}",
                env!("CARGO_MANIFEST_DIR")
            )
        } else {
            format!(
                "{}/../../models/reference/whisper_tiny_en/{path}",
                env!("CARGO_MANIFEST_DIR")
            )
        };
        std::fs::read(&path)
            .unwrap_or_else(|error| panic!("{path}: {error}"))
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn renderings_cover_case_punctuation_and_digits() {
        assert_eq!(
            renderings_in("please open the door now", None),
            vec![" Please open the door now."]
        );
        assert_eq!(
            renderings_in("bin blue at f two now", None),
            vec![" Bin blue at F two now."]
        );
        assert_eq!(
            renderings_in("787789", None),
            vec![" Seven eight seven seven eight nine."]
        );
        assert_eq!(
            renderings_in("wait 10 minutes", None),
            vec![" Wait 10 minutes."]
        );
        assert_eq!(renderings_in("back in 2012", None), vec![" Back in 2012."]);
        assert_eq!(
            renderings_in("code 0912", None),
            vec![" Code zero nine one two."]
        );
        assert!(renderings_in("  ", None).is_empty());
        // Hesitations are not scored: Whisper does not write them.
        assert_eq!(
            renderings_in("Um, well, look, uh, however we spin it", None),
            vec![" Well, look, however we spin it."]
        );
        assert!(renderings_in("Um, uh...", None).is_empty());
        assert_eq!(spoken_form(" 7,"), "seven");
        assert_eq!(spoken_form("Seven."), "seven");
        assert_eq!(spoken_form("'t"), "t");
        // Other languages: numerals as written, their own sentence marks kept.
        let pt = Language::from_tag("pt");
        assert_eq!(
            renderings_in("abra a porta 123", pt),
            vec![" Abra a porta 123."]
        );
        assert_eq!(
            renderings_in("मेरा नाम राज है।", Language::from_tag("hi")),
            vec![" मेरा नाम राज है।"]
        );
        assert_eq!(
            renderings_in("请开门。", Language::from_tag("zh")),
            vec![" 请开门。"]
        );
        // A Traditional character says what its Simplified form says.
        assert_eq!(spoken_form_in("從來", false), "从来");
        assert_eq!(spoken_form_in("从来", false), "从来");
        assert_eq!(spoken_form_in(" 7,", false), "7");
        assert_eq!(spoken_form_in(" नमस्ते", false), "नमस्ते");
        assert_eq!(encoder_frames(16_000), 200);
        assert_eq!(encoder_frames(16_000 * 40), MAX_FRAMES);
    }

    /// Encoder and decoder in tract against CTranslate2's outputs (models/convert_whisper.py).
    #[test]
    fn whisper_matches_ctranslate2() {
        let whisper = Whisper::load(&models_dir()).expect("load");
        let mel = reference_f32("whisper_tiny_en/mel.f32");
        let frames = mel.len() / N_MELS;
        let encoded = whisper.encode_mel(&mel, frames).expect("encode");
        let expected = reference_f32("whisper_tiny_en/encoder.f32");
        let diff = max_abs_diff(&encoded.features, &expected);
        assert!(diff <= 1e-3, "encoder: max diff {diff}");

        let tokens: Vec<u32> = reference_i64("decoder_tokens.i64")
            .iter()
            .map(|&t| t as u32)
            .collect();
        let columns = reference_i64("decoder_columns.i64");
        let expected = reference_f32("whisper_tiny_en/decoder_logits.f32");
        let lse = reference_f32("whisper_tiny_en/decoder_lse.f32");
        let argmax = reference_i64("decoder_argmax.i64");
        let logits = whisper.logits(&encoded, &tokens).expect("decode");
        assert_eq!(logits.len(), tokens.len() * VOCABULARY);
        let mut worst = 0f32;
        for (row, position) in (1..tokens.len()).enumerate() {
            let got = &logits[position * VOCABULARY..(position + 1) * VOCABULARY];
            for (k, &column) in columns.iter().enumerate() {
                let e = expected[row * columns.len() + k];
                worst = worst.max((got[column as usize] - e).abs());
            }
            let (got_lse, got_best) = log_softmax_row(got);
            worst = worst.max((got_lse - lse[row]).abs());
            assert_eq!(
                got_best as i64, argmax[row],
                "argmax at position {position}"
            );
        }
        assert!(worst <= 1e-3, "decoder: max diff {worst}");

        // The reference utterance (espeak-ng) and its own phrase.
        let pcm = reference_f32("whisper_tiny_en/pcm.f32");
        let score = whisper.verify(&pcm, "please open the door now").unwrap();
        assert_eq!(score.heard, "Please open the door now.");
        assert!(score.accepted(), "{score:?}");
        let other = whisper.verify(&pcm, "please close the window now").unwrap();
        assert!(!other.accepted(), "{other:?}");
        assert_eq!(
            whisper.transcribe(&pcm, 32).unwrap(),
            "Please open the door now."
        );
    }

    /// The multilingual model in tract against CTranslate2 (models/convert_whisper_base.py):
    /// a Spanish utterance with the prompt naming Spanish; CTranslate2's logits start at the
    /// prompt's last position (3).
    #[test]
    fn whisper_base_matches_ctranslate2() {
        let whisper = Whisper::load_variant(&models_dir(), &BASE).expect("load");
        let mel = reference_f32("whisper_base/mel.f32");
        let frames = mel.len() / N_MELS;
        let encoded = whisper.encode_mel(&mel, frames).expect("encode");
        let expected = reference_f32("whisper_base/encoder.f32");
        let diff = max_abs_diff(&encoded.features, &expected);
        assert!(diff <= 2e-3, "encoder: max diff {diff}");

        let tokens: Vec<u32> = reference_i64("whisper_base/decoder_tokens.i64")
            .iter()
            .map(|&t| t as u32)
            .collect();
        let columns = reference_i64("whisper_base/decoder_columns.i64");
        let expected = reference_f32("whisper_base/decoder_logits.f32");
        let lse = reference_f32("whisper_base/decoder_lse.f32");
        let argmax = reference_i64("whisper_base/decoder_argmax.i64");
        let logits = whisper.logits(&encoded, &tokens).expect("decode");
        let vocabulary = BASE.vocabulary;
        assert_eq!(logits.len(), tokens.len() * vocabulary);
        let mut worst = 0f32;
        for (row, position) in (3..tokens.len()).enumerate() {
            let got = &logits[position * vocabulary..(position + 1) * vocabulary];
            for (k, &column) in columns.iter().enumerate() {
                let e = expected[row * columns.len() + k];
                worst = worst.max((got[column as usize] - e).abs());
            }
            let (got_lse, got_best) = log_softmax_row(got);
            worst = worst.max((got_lse - lse[row]).abs());
            assert_eq!(
                got_best as i64, argmax[row],
                "argmax at position {position}"
            );
        }
        assert!(worst <= 2e-3, "decoder: max diff {worst}");

        // The prompt the phrase check builds is CTranslate2's.
        let spanish = Language::from_tag("es").unwrap();
        assert_eq!(whisper.prompt(Some(spanish)), tokens[..4]);
        let heard = whisper.detect_language(&encoded, &crate::speech::Script::Latin.languages());
        assert_eq!(heard.unwrap()[0].0, spanish);
        // The reference utterance and its own phrase; another phrase fails.
        let pcm = reference_f32("whisper_base/pcm.f32");
        let encoded = whisper.encode(&pcm).unwrap();
        let own = "Buenos días. Por favor, abre la puerta ahora.";
        let score = whisper
            .verify_encoded_in(&encoded, own, Some(spanish), false)
            .unwrap();
        assert!(score.accepted(), "{score:?}");
        let other = whisper
            .verify_encoded_in(
                &encoded,
                "Buenas noches, cierra la ventana.",
                Some(spanish),
                false,
            )
            .unwrap();
        assert!(!other.accepted(), "{other:?}");
    }
}
