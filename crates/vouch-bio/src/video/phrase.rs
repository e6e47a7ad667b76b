//! The spoken-phrase check behind the spec's Visual Speech Recognition: was the displayed phrase
//! said, and nothing else? Whisper ([`crate::speech::whisper`]; tiny.en for English, base for the
//! other 98 languages, see [`check`] for which language is scored) listens to the speech span and
//! scores the expected phrase by teacher forcing: each expected token, and the end of the
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
use crate::speech::language::{phrase_script, Language, Script};
use crate::speech::whisper::{Encoded, PhraseScore, Whisper, ACCEPT_THRESHOLD};

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
    /// words, a phrase written in a script no language of the recogniser uses, or in another
    /// script than the request's language tag says).
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
    /// Why the check is unavailable (`unavailable`, `empty_phrase`, `unsupported_script`,
    /// `language_mismatch`), when it is; or why a phrase heard in words failed
    /// (`spoken_in_another_language`, code 1).
    pub reason: Option<&'static str>,
    /// The language the phrase was scored in (none when it was not scored).
    pub language: Option<Language>,
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
            language: None,
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

    /// The check's verdict from the verifier's score of the phrase (in English).
    pub fn from_score(phrase: &str, score: &PhraseScore) -> PhraseCheck {
        PhraseCheck::from_score_in(phrase, score, Language::ENGLISH)
    }

    /// The check's verdict from the verifier's score of the phrase in `language`.
    pub fn from_score_in(phrase: &str, score: &PhraseScore, language: Language) -> PhraseCheck {
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
            language: Some(language),
            margin: score.score() - ACCEPT_THRESHOLD,
        }
    }
}

/// A displayed phrase and the language the request gives for it, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phrase<'a> {
    /// The phrase as displayed.
    pub text: &'a str,
    /// Its language (the request's tag); `None`: found from the phrase's script and the audio.
    pub language: Option<Language>,
}

impl<'a> Phrase<'a> {
    /// A phrase whose language is to be found.
    pub fn new(text: &'a str) -> Phrase<'a> {
        Phrase {
            text,
            language: None,
        }
    }
}

/// The recognisers the check chooses from, each loaded by the first call that needs it: a
/// check that scores nothing (no speech, a phrase it cannot score) loads neither, and one in
/// another language than English never loads tiny.en.
pub struct Recognizers<'a> {
    /// Whisper tiny.en, on first use.
    pub english: &'a (dyn Fn() -> Result<&'a Whisper, ModelError> + Sync),
    /// Whisper base, on first use.
    pub multilingual: &'a (dyn Fn() -> Result<&'a Whisper, ModelError> + Sync),
}

/// Checks that 16 kHz mono `speech` (the speech span of a clip) says `phrase`.
///
/// Which language is scored:
/// - the request's tag, when given: English with tiny.en, any other language with the
///   multilingual model; a phrase written in another script than the language's is refused
///   (code 3, `language_mismatch`);
/// - otherwise the phrase's script decides ([`phrase_script`]). A phrase in Latin letters is
///   scored in English by tiny.en first, as before (no cost for English speakers); when that
///   fails, the multilingual model names the Latin-script languages it hears: unless English is
///   the most probable (the English verdict then stands), the phrase is scored in the likely
///   ones other than English ([`LANGUAGE_CANDIDATES`], [`LANGUAGE_FLOOR`]) and the best score
///   decides. A phrase in
///   another script is scored by the multilingual model in the script's language, or, where
///   the script writes several (Cyrillic: Russian, Ukrainian, ...), in the likely ones the same
///   way.
///
/// A phrase in a script no language of the recogniser writes (or mixing two such scripts) fails
/// closed (code 3, `unsupported_script`): teacher forcing tokens the model cannot tell apart
/// would pass whatever was said.
pub fn check(
    recognizers: &Recognizers<'_>,
    speech: &[f32],
    phrase: Phrase<'_>,
) -> Result<PhraseCheck, ModelError> {
    let text = phrase.text;
    if words(text).is_empty() {
        return Ok(PhraseCheck::unavailable("empty_phrase"));
    }
    let Some(script) = phrase_script(text) else {
        return Ok(PhraseCheck::unavailable(UNSUPPORTED_SCRIPT));
    };
    // A phrase without letters (a PIN in digits) fits any language.
    let lettered = text.chars().any(char::is_alphabetic);
    if lettered
        && phrase
            .language
            .is_some_and(|language| !language.writes(script))
    {
        return Ok(PhraseCheck::unavailable(LANGUAGE_MISMATCH));
    }
    if speech.is_empty() {
        return Ok(PhraseCheck::no_speech());
    }
    // Whisper hears the first 30 s (its window); a phrase cannot hide in a longer recording
    // either, since the end of the text must follow it.
    let english_first = match phrase.language {
        Some(language) => language == Language::ENGLISH,
        None => script == Script::Latin,
    };
    // A tagged phrase without letters is scored in its language's way of writing words.
    let script = match phrase.language {
        Some(language) if !lettered => language.script(),
        _ => script,
    };
    if english_first {
        let score = (recognizers.english)()?.verify(speech, text)?;
        let english = PhraseCheck::from_score(text, &score);
        if english.code == PhraseCode::Matched || phrase.language.is_some() {
            return Ok(english);
        }
        let multilingual = (recognizers.multilingual)()?;
        let encoded = multilingual.encode(speech)?;
        let heard = multilingual.detect_language(&encoded, &script.languages())?;
        // The English verdict stands when the audio sounds English (scoring English speech in
        // other languages too gave replays of wrong English words more chances: measured, one
        // more wrong-word accept in 500 on the English sets).
        if heard
            .first()
            .is_none_or(|&(language, _)| language == Language::ENGLISH)
        {
            return Ok(english);
        }
        let candidates = likely(&heard);
        let check = best_language(multilingual, &encoded, text, &candidates, false)?;
        return spoken_in_the_phrase_script(multilingual, &encoded, script, lettered, check);
    }
    let multilingual = (recognizers.multilingual)()?;
    let encoded = multilingual.encode(speech)?;
    let candidates = match phrase.language {
        Some(language) => vec![language],
        None => {
            let written = script.languages();
            if written.len() == 1 {
                written
            } else {
                likely(&multilingual.detect_language(&encoded, &written)?)
            }
        }
    };
    let check = best_language(multilingual, &encoded, text, &candidates, script.unspaced())?;
    spoken_in_the_phrase_script(multilingual, &encoded, script, lettered, check)
}

/// The audio's language as a check on a phrase the multilingual model accepted: when the most
/// probable of all its languages, at [`OTHER_LANGUAGE_FLOOR`] or more, does not write the
/// phrase's script, the phrase was said in another language and fails (code 1,
/// [`SPOKEN_IN_ANOTHER_LANGUAGE`]). Forced to a language it does not hear, Whisper translates:
/// measured, a Japanese sentence scored in Portuguese came out as the displayed English
/// sentence of the same meaning and passed, as did a German one scored as its Russian
/// translation. Within one script (Spanish heard as Portuguese) the words must still be the
/// phrase's, so only another script counts. A phrase without letters (a PIN in digits) may be
/// said in any language, and one spoken language written in two scripts ([`ONE_SPEECH`]: Hindi
/// and Urdu) counts as writing both.
fn spoken_in_the_phrase_script(
    multilingual: &Whisper,
    encoded: &Encoded,
    script: Script,
    lettered: bool,
    check: PhraseCheck,
) -> Result<PhraseCheck, ModelError> {
    if check.code != PhraseCode::Matched || !lettered {
        return Ok(check);
    }
    let writes = |language: Language| {
        language.writes(script)
            || ONE_SPEECH
                .iter()
                .filter(|pair| pair.contains(&language.code()))
                .flat_map(|pair| pair.iter().filter_map(|tag| Language::from_tag(tag)))
                .any(|speech| speech.writes(script))
    };
    let all: Vec<Language> = Language::all().collect();
    let heard = multilingual.detect_language(encoded, &all)?;
    Ok(match heard.first() {
        Some(&(language, p)) if p >= OTHER_LANGUAGE_FLOOR && !writes(language) => PhraseCheck {
            code: PhraseCode::Differs,
            reason: Some(SPOKEN_IN_ANOTHER_LANGUAGE),
            ..check
        },
        _ => check,
    })
}

/// Languages that are one speech in two scripts: the audio cannot tell them apart (Whisper base
/// often writes Hindi speech in Urdu's script, docs/process-video.md), so either counts as
/// writing the other's script.
pub const ONE_SPEECH: [[&str; 2]; 1] = [["hi", "ur"]];

/// The probability the audio's most probable language needs for [`spoken_in_the_phrase_script`]
/// to refuse a phrase its language does not write: a majority of the model's belief.
pub const OTHER_LANGUAGE_FLOOR: f32 = 0.5;

/// The reason of a phrase the recogniser accepted in words but heard spoken in a language that
/// does not write the phrase's script (code 1).
pub const SPOKEN_IN_ANOTHER_LANGUAGE: &str = "spoken_in_another_language";

/// The languages worth scoring a phrase in, from the audio's language probabilities (most
/// probable first): the most probable whatever its probability, and up to
/// [`LANGUAGE_CANDIDATES`] in all of those at [`LANGUAGE_FLOOR`] or more; English is left out
/// (tiny.en has judged it).
fn likely(heard: &[(Language, f32)]) -> Vec<Language> {
    heard
        .iter()
        .enumerate()
        .filter(|&(rank, &(language, p))| {
            language != Language::ENGLISH && (rank == 0 || p >= LANGUAGE_FLOOR)
        })
        .map(|(_, &(language, _))| language)
        .take(LANGUAGE_CANDIDATES)
        .collect()
}

/// Most languages a phrase without a tag is scored in (one decoder pass each).
pub const LANGUAGE_CANDIDATES: usize = 3;
/// The audio's probability a language needs, beside the most probable, to be scored too.
pub const LANGUAGE_FLOOR: f32 = 0.05;

/// The phrase scored in each candidate language; the best score decides. Each language writes
/// the same words only with its own spelling, so the phrase's words (not the language token)
/// carry the decision: another language cannot make unsaid words pass.
fn best_language(
    multilingual: &Whisper,
    encoded: &Encoded,
    text: &str,
    candidates: &[Language],
    unspaced: bool,
) -> Result<PhraseCheck, ModelError> {
    let mut best: Option<(PhraseScore, Language)> = None;
    for &language in candidates {
        let score = multilingual.verify_encoded_in(encoded, text, Some(language), unspaced)?;
        if best.as_ref().is_none_or(|(b, _)| score.score() > b.score()) {
            best = Some((score, language));
        }
    }
    Ok(match best {
        Some((score, language)) => PhraseCheck::from_score_in(text, &score, language),
        None => PhraseCheck::unavailable("unavailable"),
    })
}

/// The reason of a phrase written in a script the recogniser cannot score (code 3).
pub const UNSUPPORTED_SCRIPT: &str = "unsupported_script";

/// The reason of a phrase written in another script than its language tag's (code 3).
pub const LANGUAGE_MISMATCH: &str = "language_mismatch";

/// The words of a phrase, for comparing what was said with what was expected: lower case, digits
/// spoken one by one, punctuation dropped (apostrophes inside words, and the vowel signs and
/// viramas of Indic scripts, kept).
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
            } else if c.is_alphabetic()
                || crate::speech::language::is_mark(c)
                || (c == '\'' && !word.is_empty())
            {
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
        assert_eq!(words("नमस्ते, दोस्त।"), list("नमस्ते दोस्त"));
    }

    #[test]
    fn only_scripts_the_recogniser_reads_are_scored() {
        for readable in [
            "Bin blue at F2 now.",
            "Café naïve, Straße – “quoted” …",
            "Dziękuję, że przyszłaś",
            "",
            "मेरी आवाज़ मेरा पासवर्ड है",
            "我的声音就是我的密码",
            "мой голос мой пароль",
            "open the door 門",
            "φωνή",
            "٣ أبواب",
        ] {
            assert!(phrase_script(readable).is_some(), "{readable}");
        }
        for foreign in ["ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ", "мой 門", "ଓଡ଼ିଆ ଭାଷା"]
        {
            assert!(phrase_script(foreign).is_none(), "{foreign}");
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
