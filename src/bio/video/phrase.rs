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

/// The finite-state grammar (PocketSphinx's FSG text format) of exactly the phrase: one state
/// per word boundary, each word a transition of probability 1.
pub fn phrase_grammar(phrase: &[String]) -> String {
    let mut fsg = format!(
        "FSG_BEGIN vouch\nNUM_STATES {}\nSTART_STATE 0\nFINAL_STATE {}\n",
        phrase.len() + 1,
        phrase.len()
    );
    for (state, word) in phrase.iter().enumerate() {
        fsg += &format!("TRANSITION {state} {} 1.0 {word}\n", state + 1);
    }
    fsg + "FSG_END\n"
}

/// The finite-state grammar of any sequence of the phrase's and the vocabulary's words (each word
/// once): from the start, any word ends the utterance or leads to a state that returns to the start
/// without a word. It is the grammar PocketSphinx's JSGF compiler builds from `<word>+`, written
/// directly because that compiler leaks memory on every grammar (Debian's sphinxbase 0.8).
pub fn free_grammar(phrase: &[String], vocabulary: &[String]) -> String {
    let mut known: Vec<&str> = Vec::new();
    for word in phrase.iter().chain(vocabulary) {
        if !known.contains(&word.as_str()) {
            known.push(word);
        }
    }
    let mut fsg = String::from("FSG_BEGIN vouch\nNUM_STATES 3\nSTART_STATE 0\nFINAL_STATE 1\n");
    for to in [1, 2] {
        for word in &known {
            fsg += &format!("TRANSITION 0 {to} 1.0 {word}\n");
        }
    }
    fsg + "TRANSITION 2 0 1.0\nFSG_END\n"
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

/// The few libpocketsphinx/libsphinxbase 0.8 functions the check needs, declared from the
/// installed headers (`pocketsphinx.h`, `ps_search.h`, `cmd_ln.h`, `fsg_model.h`); `build.rs`
/// links the libraries through pkg-config. Grammars go in as FSG text through
/// `fsg_model_read`, not through the JSGF compiler, which leaks on every grammar.
/// They are not part of vouch's C ABI:
/// cbindgen:ignore
#[cfg(feature = "phrase")]
mod decoder {
    use std::ffi::{c_char, c_double, c_int, c_void, CStr, CString};
    use std::path::Path;
    use std::ptr;

    #[repr(C)]
    struct PsDecoder {
        _opaque: [u8; 0],
    }
    #[repr(C)]
    struct CmdLn {
        _opaque: [u8; 0],
    }
    #[repr(C)]
    struct FsgModel {
        _opaque: [u8; 0],
    }

    extern "C" {
        fn ps_args() -> *const c_void;
        fn cmd_ln_parse_r(
            inout: *mut CmdLn,
            defn: *const c_void,
            argc: i32,
            argv: *const *const c_char,
            strict: i32,
        ) -> *mut CmdLn;
        fn cmd_ln_free_r(config: *mut CmdLn) -> c_int;
        fn cmd_ln_float_r(config: *mut CmdLn, name: *const c_char) -> c_double;
        fn ps_init(config: *mut CmdLn) -> *mut PsDecoder;
        fn ps_free(ps: *mut PsDecoder) -> c_int;
        fn ps_get_config(ps: *mut PsDecoder) -> *mut CmdLn;
        fn ps_get_logmath(ps: *mut PsDecoder) -> *mut c_void;
        fn ps_set_fsg(ps: *mut PsDecoder, name: *const c_char, fsg: *mut FsgModel) -> c_int;
        fn ps_set_search(ps: *mut PsDecoder, name: *const c_char) -> c_int;
        fn ps_start_utt(ps: *mut PsDecoder) -> c_int;
        fn ps_process_raw(
            ps: *mut PsDecoder,
            data: *const i16,
            n_samples: usize,
            no_search: c_int,
            full_utt: c_int,
        ) -> c_int;
        fn ps_end_utt(ps: *mut PsDecoder) -> c_int;
        fn ps_get_hyp(ps: *mut PsDecoder, out_best_score: *mut i32) -> *const c_char;
        fn ps_get_n_frames(ps: *mut PsDecoder) -> c_int;
        fn fsg_model_read(fp: *mut libc::FILE, lmath: *mut c_void, lw: f32) -> *mut FsgModel;
        fn fsg_model_free(fsg: *mut FsgModel) -> c_int;
    }

    /// One PocketSphinx decoder (not thread-safe: the model keeps it behind a mutex).
    pub(super) struct Decoder(*mut PsDecoder);

    // SAFETY: a PocketSphinx decoder has no thread affinity; it must only not be used from two
    // threads at once, which the mutex in `PhraseModel` guarantees.
    unsafe impl Send for Decoder {}

    impl std::fmt::Debug for Decoder {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Decoder")
        }
    }

    impl Drop for Decoder {
        fn drop(&mut self) {
            // SAFETY: the decoder was made by ps_init and is freed once; it holds the config.
            unsafe { ps_free(self.0) };
        }
    }

    /// The search name the grammars are set under.
    const SEARCH: &CStr = c"vouch";

    impl Decoder {
        pub(super) fn new(acoustic: &Path, dictionary: &Path) -> Option<Decoder> {
            let args = [
                "-hmm",
                acoustic.to_str()?,
                "-dict",
                dictionary.to_str()?,
                "-logfn",
                "/dev/null",
            ];
            let args: Vec<CString> = args
                .iter()
                .map(|arg| CString::new(*arg).ok())
                .collect::<Option<_>>()?;
            let argv: Vec<*const c_char> = args.iter().map(|arg| arg.as_ptr()).collect();
            // SAFETY: argv holds argc valid C strings that outlive the call; cmd_ln_parse_r copies
            // what it keeps. ps_init takes its own reference to the config, so ours is released.
            unsafe {
                let config = cmd_ln_parse_r(
                    ptr::null_mut(),
                    ps_args(),
                    argv.len() as i32,
                    argv.as_ptr(),
                    1,
                );
                if config.is_null() {
                    return None;
                }
                let decoder = ps_init(config);
                cmd_ln_free_r(config);
                (!decoder.is_null()).then_some(Decoder(decoder))
            }
        }

        /// Makes `fsg` (FSG text) the decoder's search.
        fn set_grammar(&mut self, fsg: &str) -> Option<()> {
            let mut text = fsg.as_bytes().to_vec();
            // SAFETY: fmemopen reads `text`, which outlives the stream (closed below);
            // fsg_model_read only reads the stream. ps_set_fsg takes its own reference to the
            // model, so ours is released whatever it returns.
            unsafe {
                let stream = libc::fmemopen(text.as_mut_ptr().cast(), text.len(), c"r".as_ptr());
                if stream.is_null() {
                    return None;
                }
                let lw = cmd_ln_float_r(ps_get_config(self.0), c"-lw".as_ptr()) as f32;
                let model = fsg_model_read(stream, ps_get_logmath(self.0), lw);
                libc::fclose(stream);
                if model.is_null() {
                    return None;
                }
                let set = ps_set_fsg(self.0, SEARCH.as_ptr(), model);
                fsg_model_free(model);
                (set == 0 && ps_set_search(self.0, SEARCH.as_ptr()) == 0).then_some(())
            }
        }

        pub(super) fn decode(&mut self, pcm: &[f32], fsg: &str) -> Option<super::Decoding> {
            self.set_grammar(fsg)?;
            let samples: Vec<i16> = pcm
                .iter()
                .map(|&s| (s.clamp(-1.0, 1.0) * 32767.0) as i16)
                .collect();
            // SAFETY: the decoder is valid and ours alone (&mut self); `samples` outlives the
            // call; the hypothesis string is owned by the decoder and copied before the next call.
            unsafe {
                if ps_start_utt(self.0) < 0
                    || ps_process_raw(self.0, samples.as_ptr(), samples.len(), 0, 1) < 0
                    || ps_end_utt(self.0) < 0
                {
                    return None;
                }
                let mut score = 0i32;
                let hyp = ps_get_hyp(self.0, &mut score);
                let text = if hyp.is_null() {
                    score = 0;
                    String::new()
                } else {
                    CStr::from_ptr(hyp).to_string_lossy().into_owned()
                };
                Some(super::Decoding {
                    text,
                    score,
                    frames: ps_get_n_frames(self.0),
                })
            }
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
        assert_eq!(
            g,
            "FSG_BEGIN vouch\nNUM_STATES 3\nSTART_STATE 0\nFINAL_STATE 1\n\
             TRANSITION 0 1 1.0 set\nTRANSITION 0 1 1.0 blue\nTRANSITION 0 1 1.0 red\n\
             TRANSITION 0 2 1.0 set\nTRANSITION 0 2 1.0 blue\nTRANSITION 0 2 1.0 red\n\
             TRANSITION 2 0 1.0\nFSG_END\n"
        );
        assert_eq!(
            phrase_grammar(&words("set blue")),
            "FSG_BEGIN vouch\nNUM_STATES 3\nSTART_STATE 0\nFINAL_STATE 2\n\
             TRANSITION 0 1 1.0 set\nTRANSITION 1 2 1.0 blue\nFSG_END\n"
        );
    }
}
