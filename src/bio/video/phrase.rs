//! The spoken-phrase check behind the spec's Visual Speech Recognition: was the displayed phrase
//! said? PocketSphinx's en-us acoustic model decodes the speech through a grammar built from the
//! expected phrase and the request's `vocabulary`: the phrase itself, preferred, or any sequence of
//! the known words. A different sentence therefore comes out as other words instead of being
//! forced onto the phrase. The phrase passes when the recognised words are within
//! [`allowed_errors`] word edits of it. The lips are checked against the same speech by Active
//! Speaker Detection.
//!
//! The decoder is the system's libpocketsphinx (Debian `libpocketsphinx-dev`), built with the
//! cargo feature `phrase` (on by default); a build without it, or an engine opened without
//! `speech_model_dir`, reports the check as unavailable.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Least per-frame log-likelihood margin of the phrase against the free decoding (PocketSphinx
/// score units per 10 ms frame) for a phrase the free decoding did not reproduce to still pass.
pub const MIN_MARGIN: f32 = 2.5;

/// A decoding: the words, the path score and the frames decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoding {
    /// Recognised words.
    pub text: String,
    /// Path score (log domain, PocketSphinx units).
    pub score: i32,
    /// 10 ms frames decoded.
    pub frames: i32,
}

/// The service's `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhraseCode {
    /// 0: the expected phrase was spoken.
    Matched = 0,
    /// 1: something else was said.
    Differs = 1,
    /// 2: not enough speech.
    NoSpeech = 2,
    /// 3: the check is not available (no decoder in this build, no speech model given, or the
    /// phrase has words the dictionary lacks).
    Unavailable = 3,
}

/// The outcome of the phrase check.
#[derive(Debug, Clone, PartialEq)]
pub struct PhraseCheck {
    /// What was found.
    pub code: PhraseCode,
    /// The recognised words, space-separated (empty when nothing was recognised).
    pub recognized: String,
    /// Word edits between the recognised words and the phrase.
    pub word_errors: usize,
    /// Why the check is unavailable (`unavailable`, `unknown_words`), when it is.
    pub reason: Option<&'static str>,
    /// Per-frame score of the phrase minus that of the free decoding (0 when the free decoding
    /// already matched).
    pub margin: f32,
}

impl PhraseCheck {
    /// A check that could not run.
    pub fn unavailable(reason: &'static str) -> PhraseCheck {
        PhraseCheck {
            code: PhraseCode::Unavailable,
            recognized: String::new(),
            word_errors: 0,
            reason: Some(reason),
            margin: 0.0,
        }
    }
}

/// The words of a phrase as the dictionary spells them: lower case, digits spoken one by one,
/// punctuation dropped (apostrophes inside words kept).
pub fn words(text: &str) -> Vec<String> {
    const DIGITS: [&str; 10] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    let mut out = Vec::new();
    for raw in text.split(|c: char| c.is_whitespace() || c == '-' || c == ',') {
        let mut word = String::new();
        for c in raw.chars() {
            if let Some(digit) = c.to_digit(10) {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                out.push(DIGITS[digit as usize].to_owned());
            } else if c.is_alphabetic() || (c == '\'' && !word.is_empty()) {
                word.extend(c.to_lowercase());
            }
        }
        let word = word.trim_end_matches('\'').to_owned();
        if !word.is_empty() {
            out.push(word);
        }
    }
    out
}

/// Word edits allowed for a phrase of `len` words: one per six words (none under six).
pub fn allowed_errors(len: usize) -> usize {
    len / 6
}

/// Word-level edit distance.
pub fn word_errors(a: &[String], b: &[String]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, y) in b.iter().enumerate() {
            current[j + 1] = (previous[j] + usize::from(x != y))
                .min(previous[j + 1] + 1)
                .min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The JSGF grammar of exactly the phrase.
pub fn phrase_grammar(phrase: &[String]) -> String {
    format!(
        "#JSGF V1.0;\ngrammar vouch;\npublic <utterance> = {};\n",
        phrase.join(" ")
    )
}

/// The JSGF grammar of any sequence of the phrase's and the vocabulary's words.
pub fn free_grammar(phrase: &[String], vocabulary: &[String]) -> String {
    let mut known: Vec<&str> = Vec::new();
    for word in phrase.iter().chain(vocabulary) {
        if !known.contains(&word.as_str()) {
            known.push(word);
        }
    }
    format!(
        "#JSGF V1.0;\ngrammar vouch;\npublic <utterance> = <word>+;\n<word> = {};\n",
        known.join(" | ")
    )
}

/// The PocketSphinx acoustic model and dictionary.
#[derive(Debug)]
pub struct PhraseModel {
    acoustic: PathBuf,
    dictionary: PathBuf,
    known: HashSet<String>,
    #[cfg(feature = "phrase")]
    decoder: std::sync::Mutex<Option<decoder::Decoder>>,
}

/// Why the speech model could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhraseModelError(pub String);

impl std::fmt::Display for PhraseModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PhraseModel {
    /// Opens the model folder: `en-us/` (the acoustic model) and `cmudict-en-us.dict`, as Debian's
    /// `pocketsphinx-en-us` installs them under `/usr/share/pocketsphinx/model/en-us`.
    pub fn load(dir: &Path) -> Result<PhraseModel, PhraseModelError> {
        let acoustic = dir.join("en-us");
        let dictionary = dir.join("cmudict-en-us.dict");
        if !acoustic.join("mdef").is_file() {
            return Err(PhraseModelError(format!(
                "speech_model_dir {} has no en-us/mdef acoustic model",
                dir.display()
            )));
        }
        let text = std::fs::read_to_string(&dictionary).map_err(|error| {
            PhraseModelError(format!("cannot read {}: {error}", dictionary.display()))
        })?;
        let known = text
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .map(|word| word.split('(').next().unwrap_or(word).to_owned())
            .collect();
        Ok(PhraseModel {
            acoustic,
            dictionary,
            known,
            #[cfg(feature = "phrase")]
            decoder: std::sync::Mutex::new(None),
        })
    }

    /// Whether the dictionary has `word`.
    pub fn knows(&self, word: &str) -> bool {
        self.known.contains(word)
    }

    /// Checks that `phrase` was spoken in 16 kHz mono `pcm`.
    pub fn check(&self, pcm: &[f32], phrase: &str, vocabulary: &str) -> PhraseCheck {
        let expected = words(phrase);
        if expected.is_empty() || expected.iter().any(|word| !self.knows(word)) {
            return PhraseCheck::unavailable("unknown_words");
        }
        let extra: Vec<String> = words(vocabulary)
            .into_iter()
            .filter(|word| self.knows(word))
            .collect();
        let Some(free) = self.decode(pcm, &free_grammar(&expected, &extra)) else {
            return PhraseCheck::unavailable("unavailable");
        };
        let heard = words(&free.text);
        let errors = word_errors(&heard, &expected);
        let mut check = PhraseCheck {
            code: PhraseCode::Matched,
            recognized: heard.join(" "),
            word_errors: errors,
            reason: None,
            margin: 0.0,
        };
        if heard.is_empty() {
            check.code = PhraseCode::NoSpeech;
        } else if errors > allowed_errors(expected.len()) {
            // The free decoding heard other words: does the phrase explain the sound almost as well?
            let Some(forced) = self.decode(pcm, &phrase_grammar(&expected)) else {
                return PhraseCheck::unavailable("unavailable");
            };
            check.margin = if forced.text.is_empty() {
                f32::NEG_INFINITY
            } else {
                (forced.score - free.score) as f32 / free.frames.max(1) as f32
            };
            if check.margin < MIN_MARGIN {
                check.code = PhraseCode::Differs;
            }
        }
        check
    }

    #[cfg(feature = "phrase")]
    fn decode(&self, pcm: &[f32], grammar: &str) -> Option<Decoding> {
        let mut slot = self
            .decoder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.is_none() {
            *slot = decoder::Decoder::new(&self.acoustic, &self.dictionary);
        }
        let decoder = slot.as_mut()?;
        let result = decoder.decode(pcm, grammar);
        if result.is_none() {
            // A failed decoder may be in any state: start afresh next time.
            *slot = None;
        }
        result
    }

    #[cfg(not(feature = "phrase"))]
    fn decode(&self, _pcm: &[f32], _grammar: &str) -> Option<Decoding> {
        let _ = (&self.acoustic, &self.dictionary);
        None
    }
}

#[cfg(feature = "phrase")]
mod decoder {
    use std::path::Path;

    use pocketsphinx::{CmdLn, PsDecoder, PsDecoderSearchExt};

    /// One PocketSphinx decoder (not thread-safe: the model keeps it behind a mutex).
    pub(super) struct Decoder(PsDecoder);

    // SAFETY: a PocketSphinx decoder has no thread affinity; it must only not be used from two
    // threads at once, which the mutex in `PhraseModel` guarantees.
    unsafe impl Send for Decoder {}

    impl std::fmt::Debug for Decoder {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Decoder")
        }
    }

    impl Decoder {
        pub(super) fn new(acoustic: &Path, dictionary: &Path) -> Option<Decoder> {
            let config = CmdLn::init(
                true,
                &[
                    "-hmm",
                    acoustic.to_str()?,
                    "-dict",
                    dictionary.to_str()?,
                    "-logfn",
                    "/dev/null",
                ],
            )
            .ok()?;
            Some(Decoder(PsDecoder::init(config)))
        }

        pub(super) fn decode(&mut self, pcm: &[f32], grammar: &str) -> Option<super::Decoding> {
            let decoder = &mut self.0;
            decoder.set_jsgf_string("vouch", grammar).ok()?;
            decoder.set_search("vouch").ok()?;
            let samples: Vec<i16> = pcm
                .iter()
                .map(|&s| (s.clamp(-1.0, 1.0) * 32767.0) as i16)
                .collect();
            decoder.start_utt(None).ok()?;
            decoder.process_raw(&samples, false, true).ok()?;
            decoder.end_utt().ok()?;
            let (text, score) = decoder
                .get_hyp()
                .map(|(text, _, score)| (text, score))
                .unwrap_or_default();
            Some(super::Decoding {
                text,
                score,
                frames: decoder.get_n_frames(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_spelled_as_spoken() {
        assert_eq!(
            words("Bin blue at F2, now!"),
            vec!["bin", "blue", "at", "f", "two", "now"]
        );
        assert_eq!(words("it's 10"), vec!["it's", "one", "zero"]);
        assert!(words(" ,- ").is_empty());
    }

    #[test]
    fn edits_are_counted_by_word() {
        let w = |s: &str| words(s);
        assert_eq!(word_errors(&w("a b c"), &w("a b c")), 0);
        assert_eq!(word_errors(&w("a x c"), &w("a b c")), 1);
        assert_eq!(word_errors(&w("a c"), &w("a b c")), 1);
        assert_eq!(word_errors(&[], &w("a b")), 2);
        assert_eq!(allowed_errors(5), 0);
        assert_eq!(allowed_errors(6), 1);
    }

    #[test]
    fn grammars_list_each_word_once() {
        let g = free_grammar(&words("set blue"), &words("blue red"));
        assert!(g.contains("<utterance> = <word>+;"));
        assert!(g.contains("<word> = set | blue | red;"));
        assert!(phrase_grammar(&words("set blue")).contains("<utterance> = set blue;"));
    }
}
