//! The spoken-phrase check behind the spec's Visual Speech Recognition: was the displayed phrase
//! said, and nothing else? Whisper tiny.en ([`crate::speech::whisper`]) listens to the speech
//! span and scores the expected phrase by teacher forcing: each expected token, and the end of the
//! text after it, against the best token that would write something else at that position (any
//! spelling of the same word counts as the expected one). A phrase that was not said (another
//! sentence, one word changed, the phrase plus other speech) leaves tokens the model would not have
//! chosen: the decision needs both the mean margin per token and every word's margin above their
//! floors (`ACCEPT_THRESHOLD`, `WORD_ACCEPT_THRESHOLD` in `bio::speech::whisper`). Unlike a
//! grammar made of the phrase's own words, the recogniser is open-vocabulary: it can hear other
//! words, so it can reject them. The lips are checked against the same speech by Active Speaker
//! Detection.
//!
//! `result` is what the model heard at each position given the expected words before it (the
//! argmax of the same pass), a readable account of where the speech and the phrase part.

use crate::infer::ModelError;
use crate::speech::whisper::{PhraseScore, Whisper, ACCEPT_THRESHOLD};

/// The service's `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhraseCode {
    /// 0: the expected phrase was spoken.
    Matched = 0,
    /// 1: something else was said.
    Differs = 1,
    /// 2: not enough speech.
    NoSpeech = 2,
    /// 3: the check is not available (an engine opened without `models_dir`, a phrase with no
    /// words, or a phrase written in a script the English recogniser cannot read).
    Unavailable = 3,
}

/// The outcome of the phrase check.
#[derive(Debug, Clone, PartialEq)]
pub struct PhraseCheck {
    /// What was found.
    pub code: PhraseCode,
    /// What the recogniser heard, in words (empty when nothing was heard).
    pub recognized: String,
    /// Word edits between the recognised words and the phrase.
    pub word_errors: usize,
    /// Why the check is unavailable (`unavailable`, `empty_phrase`, `unsupported_script`), when
    /// it is.
    pub reason: Option<&'static str>,
    /// The verifier's score minus the acceptance threshold: at least 0 for an accepted phrase
    /// (the smaller of the mean per-token margin and the scaled weakest word's margin, nats per
    /// token).
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

    /// No speech to check.
    pub fn no_speech() -> PhraseCheck {
        PhraseCheck {
            code: PhraseCode::NoSpeech,
            reason: None,
            ..PhraseCheck::unavailable("unavailable")
        }
    }

    /// The check's verdict from the verifier's score of the phrase.
    pub fn from_score(phrase: &str, score: &PhraseScore) -> PhraseCheck {
        let heard = words(&score.heard);
        PhraseCheck {
            code: if score.accepted() {
                PhraseCode::Matched
            } else {
                PhraseCode::Differs
            },
            word_errors: word_errors(&heard, &words(phrase)),
            recognized: heard.join(" "),
            reason: None,
            margin: score.score() - ACCEPT_THRESHOLD,
        }
    }
}

/// Checks that 16 kHz mono `speech` (the speech span of a clip) says `phrase`.
pub fn check(whisper: &Whisper, speech: &[f32], phrase: &str) -> Result<PhraseCheck, ModelError> {
    if words(phrase).is_empty() {
        return Ok(PhraseCheck::unavailable("empty_phrase"));
    }
    // tiny.en reads English: its byte-level tokens can spell any script, but it has never heard
    // one, so teacher forcing a Hindi or Chinese phrase gives tokens it cannot tell apart and the
    // phrase passed whatever was said. A phrase it cannot score fails closed instead.
    if !readable_script(phrase) {
        return Ok(PhraseCheck::unavailable(UNSUPPORTED_SCRIPT));
    }
    if speech.is_empty() {
        return Ok(PhraseCheck::no_speech());
    }
    // Whisper hears the first 30 s (its window); a phrase cannot hide in a longer recording
    // either, since the end of the text must follow it.
    let score = whisper.verify(speech, phrase)?;
    Ok(PhraseCheck::from_score(phrase, &score))
}

/// The reason of a phrase written in a script the recogniser cannot score (code 3).
pub const UNSUPPORTED_SCRIPT: &str = "unsupported_script";

/// Whether every character of `phrase` is one the English recogniser can score: the Latin
/// alphabet (with its accented letters), ASCII digits, spaces and punctuation. Letters of any
/// other script (Cyrillic, Greek, Devanagari, Han, Arabic, ...), their digits and marks are not.
pub fn readable_script(phrase: &str) -> bool {
    phrase.chars().all(|c| {
        c.is_ascii()
            || c.is_whitespace()
            // Latin-1 letters, Latin Extended-A and -B, Latin Extended Additional.
            || matches!(c, '\u{00C0}'..='\u{024F}' | '\u{1E00}'..='\u{1EFF}') && c.is_alphabetic()
            // Latin-1 punctuation and signs, general punctuation (dashes, curly quotes, ellipsis).
            || matches!(c, '\u{00A0}'..='\u{00BF}' | '\u{2000}'..='\u{206F}')
    })
}

/// The words of a phrase, for comparing what was said with what was expected: lower case, digits
/// spoken one by one, punctuation dropped (apostrophes inside words kept).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn list(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn words_are_normalised() {
        assert_eq!(words("Bin blue at F2 now."), list("bin blue at f two now"));
        assert_eq!(words("It's 4-5, OK?"), list("it's four five ok"));
        assert_eq!(words("'quoted'"), list("quoted"));
        assert!(words(" ... ").is_empty());
    }

    #[test]
    fn only_scripts_the_recogniser_reads_are_scored() {
        for readable in [
            "Bin blue at F2 now.",
            "Café naïve, Straße – “quoted” …",
            "Dziękuję, że przyszłaś",
            "",
        ] {
            assert!(readable_script(readable), "{readable}");
        }
        for foreign in [
            "मेरी आवाज़ मेरा पासवर्ड है",
            "我的声音就是我的密码",
            "мой голос мой пароль",
            "open the door 門",
            "φωνή",
            "٣ أبواب",
        ] {
            assert!(!readable_script(foreign), "{foreign}");
        }
    }

    #[test]
    fn word_errors_count_edits() {
        assert_eq!(word_errors(&list("a b c"), &list("a b c")), 0);
        assert_eq!(word_errors(&list("a x c"), &list("a b c")), 1);
        assert_eq!(word_errors(&list("a b"), &list("a b c")), 1);
        assert_eq!(word_errors(&[], &list("a b")), 2);
    }

    #[test]
    fn a_verdict_follows_the_threshold() {
        let score = |mean_margin: f32| PhraseScore {
            rendering: " open the door".to_owned(),
            tokens: Vec::new(),
            mean_margin,
            min_word_margin: mean_margin,
            mean_log_prob: mean_margin,
            heard: "Open the door.".to_owned(),
        };
        let passed = PhraseCheck::from_score("open the door", &score(ACCEPT_THRESHOLD));
        assert_eq!(passed.code, PhraseCode::Matched);
        assert_eq!(
            (passed.recognized.as_str(), passed.word_errors),
            ("open the door", 0)
        );
        assert!(passed.margin.abs() < 1e-6);
        let failed = PhraseCheck::from_score("open the window", &score(ACCEPT_THRESHOLD - 0.1));
        assert_eq!(failed.code, PhraseCode::Differs);
        assert_eq!(failed.word_errors, 1);
        assert!(failed.margin < 0.0);
    }
}
