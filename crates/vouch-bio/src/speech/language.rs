//! The languages the multilingual recogniser knows ([`Language`], Whisper's 99 in its token
//! order) and the writing systems of a displayed phrase ([`Script`], [`phrase_script`]): which
//! languages can be scored, which script writes each of them, and where a phrase's words begin in
//! scripts that write none of the spaces between them.
//!
//! A phrase's language comes from the request's tag when there is one ([`Language::from_tag`],
//! a BCP 47 tag whose primary subtag Whisper knows); otherwise from its script
//! ([`Script::languages`]), with the audio's language probabilities choosing among the script's
//! languages (Cyrillic alone writes eleven of them).

/// Whisper's language codes in the order of its language tokens (`<|en|>` is the first,
/// `<|su|>` the 99th; Whisper base has no `<|yue|>`).
pub const LANGUAGES: [&str; 99] = [
    "en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it",
    "id", "hi", "fi", "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur",
    "hr", "bg", "lt", "la", "mi", "ml", "cy", "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn",
    "et", "mk", "br", "eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw", "gl", "mr", "pa", "si",
    "km", "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu", "am", "yi", "lo", "uz", "fo",
    "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw", "ln",
    "ha", "ba", "jw", "su",
];

/// One of [`LANGUAGES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Language(u8);

impl Language {
    /// English.
    pub const ENGLISH: Language = Language(0);

    /// The language of a BCP 47 tag (`pt`, `pt-BR`, `zh-Hans-CN`, `sr-Latn`; case-insensitive),
    /// by its primary subtag; the three-letter codes of the few languages Whisper names that way
    /// (`haw`), and the retired codes Whisper still uses (`jw` for Javanese, also `jv`; `iw` for
    /// Hebrew; `nb` is Norwegian's `no`) are accepted. `None` when Whisper does not know it.
    pub fn from_tag(tag: &str) -> Option<Language> {
        let primary = tag.trim().split(['-', '_']).next()?.to_ascii_lowercase();
        let code = match primary.as_str() {
            "jv" => "jw",
            "iw" => "he",
            "nb" => "no",
            "in" => "id",
            "ji" => "yi",
            "fil" => "tl",
            other => other,
        };
        LANGUAGES
            .iter()
            .position(|&known| known == code)
            .map(|index| Language(index as u8))
    }

    /// Its code as Whisper writes it (`pt`).
    pub fn code(self) -> &'static str {
        LANGUAGES[usize::from(self.0)]
    }

    /// Its position in [`LANGUAGES`] (the language token is `<|startoftranscript|>` + 1 + this).
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// Every language, in token order.
    pub fn all() -> impl Iterator<Item = Language> {
        (0..LANGUAGES.len()).map(|index| Language(index as u8))
    }

    /// The script it is written in (Serbian is written in two: Cyrillic here, Latin through
    /// [`Language::writes`]).
    pub fn script(self) -> Script {
        use Script::*;
        match self.code() {
            "zh" => Han,
            "ja" => Kana,
            "ko" => Hangul,
            "ru" | "uk" | "bg" | "sr" | "mk" | "be" | "kk" | "mn" | "tg" | "tt" | "ba" => Cyrillic,
            "el" => Greek,
            "hy" => Armenian,
            "he" | "yi" => Hebrew,
            "ar" | "fa" | "ur" | "ps" | "sd" => Arabic,
            "hi" | "mr" | "ne" | "sa" => Devanagari,
            "bn" | "as" => Bengali,
            "pa" => Gurmukhi,
            "gu" => Gujarati,
            "ta" => Tamil,
            "te" => Telugu,
            "kn" => Kannada,
            "ml" => Malayalam,
            "si" => Sinhala,
            "th" => Thai,
            "lo" => Lao,
            "bo" => Tibetan,
            "my" => Myanmar,
            "ka" => Georgian,
            "am" => Ethiopic,
            "km" => Khmer,
            _ => Latin,
        }
    }

    /// Whether a phrase in `script` can be in this language: its own script, Latin for Serbian
    /// (written in both), and Han for Japanese (kanji without kana).
    pub fn writes(self, script: Script) -> bool {
        self.script() == script
            || (self.code() == "sr" && script == Script::Latin)
            || (self.code() == "ja" && script == Script::Han)
    }
}

/// A writing system of a displayed phrase, as far as the recogniser's languages need telling
/// apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Script {
    Latin,
    Greek,
    Cyrillic,
    Armenian,
    Hebrew,
    Arabic,
    Devanagari,
    Bengali,
    Gurmukhi,
    Gujarati,
    Tamil,
    Telugu,
    Kannada,
    Malayalam,
    Sinhala,
    Thai,
    Lao,
    Tibetan,
    Myanmar,
    Georgian,
    Hangul,
    Ethiopic,
    Khmer,
    /// Chinese characters (also Japanese kanji).
    Han,
    /// Japanese kana, with or without kanji.
    Kana,
}

impl Script {
    /// Whether words are written without spaces between them: a word is then one character (or
    /// the run of characters one token writes) for the per-word margin.
    pub fn unspaced(self) -> bool {
        matches!(
            self,
            Script::Han
                | Script::Kana
                | Script::Thai
                | Script::Lao
                | Script::Khmer
                | Script::Myanmar
                | Script::Tibetan
        )
    }

    /// The languages written in it, in token order.
    pub fn languages(self) -> Vec<Language> {
        Language::all()
            .filter(|language| language.writes(self))
            .collect()
    }
}

/// What one character says about the script: a letter (or a script's own mark or digit) of a
/// known script, a letter of a script no language of the recogniser writes, or nothing (spaces,
/// ASCII digits, punctuation, symbols, combining accents).
enum CharScript {
    Known(Script),
    Unknown,
    Neutral,
}

fn char_script(c: char) -> CharScript {
    use CharScript::{Known, Neutral, Unknown};
    use Script::*;
    let script = match u32::from(c) {
        0x41..=0x5A | 0x61..=0x7A | 0xAA | 0xBA | 0xC0..=0x24F | 0x1E00..=0x1EFF => Latin,
        0x370..=0x3FF | 0x1F00..=0x1FFF => Greek,
        0x400..=0x52F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F => Cyrillic,
        0x530..=0x58F => Armenian,
        0x591..=0x5F4 => Hebrew,
        0x600..=0x6FF | 0x750..=0x77F | 0x8A0..=0x8FF | 0xFB50..=0xFDFF | 0xFE70..=0xFEFF => {
            // Arabic punctuation (comma, semicolon, question mark) says nothing on its own.
            if matches!(c, '\u{60C}' | '\u{61B}' | '\u{61F}' | '\u{6D4}') {
                return Neutral;
            }
            Arabic
        }
        0x900..=0x97F | 0xA8E0..=0xA8FF => {
            // The danda and double danda end sentences in several Indic scripts.
            if matches!(c, '\u{964}' | '\u{965}') {
                return Neutral;
            }
            Devanagari
        }
        0x980..=0x9FF => Bengali,
        0xA00..=0xA7F => Gurmukhi,
        0xA80..=0xAFF => Gujarati,
        0xB80..=0xBFF => Tamil,
        0xC00..=0xC7F => Telugu,
        0xC80..=0xCFF => Kannada,
        0xD00..=0xD7F => Malayalam,
        0xD80..=0xDFF => Sinhala,
        0xE00..=0xE7F => Thai,
        0xE80..=0xEFF => Lao,
        0xF00..=0xFFF => Tibetan,
        0x1000..=0x109F => Myanmar,
        0x10A0..=0x10FF | 0x2D00..=0x2D2F | 0x1C90..=0x1CBF => Georgian,
        0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => Hangul,
        0x1200..=0x139F | 0x2D80..=0x2DDF => Ethiopic,
        0x1780..=0x17FF | 0x19E0..=0x19FF => Khmer,
        0x3040..=0x309F | 0x30A0..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9D => Kana,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3134F => Han,
        // CJK punctuation and full-width forms (full-width Latin letters and digits included)
        // are punctuation here.
        0x3000..=0x303F | 0xFF00..=0xFF65 => return Neutral,
        _ if c.is_alphabetic() => return Unknown,
        _ => return Neutral,
    };
    Known(script)
}

/// The script a phrase is written in, or `None` when it cannot be scored: a letter of a script
/// none of the recogniser's languages writes (Cherokee, Ol Chiki, Odia, ...), or letters of two
/// scripts other than Latin (kanji with kana is Japanese; Latin words, such as a brand name,
/// may stand in a phrase of any script). A phrase with no letters at all (digits only) is Latin.
pub fn phrase_script(phrase: &str) -> Option<Script> {
    let mut found: Option<Script> = None;
    for c in phrase.chars() {
        let script = match char_script(c) {
            CharScript::Known(Script::Latin) | CharScript::Neutral => continue,
            CharScript::Known(script) => script,
            CharScript::Unknown => return None,
        };
        found = match (found, script) {
            (None, script) => Some(script),
            (Some(a), b) if a == b => Some(a),
            (Some(Script::Han), Script::Kana) | (Some(Script::Kana), Script::Han) => {
                Some(Script::Kana)
            }
            _ => return None,
        };
    }
    Some(found.unwrap_or(Script::Latin))
}

/// A combining mark (general categories Mn and Mc, for the scripts the recogniser writes):
/// part of a word, not punctuation.
pub(crate) fn is_mark(c: char) -> bool {
    matches!(u32::from(c),
        0x300..=0x36F | 0x483..=0x489 | 0x591..=0x5C7 | 0x610..=0x61A | 0x64B..=0x65F | 0x670
        | 0x6D6..=0x6ED | 0x900..=0x903 | 0x93A..=0x94F | 0x951..=0x957 | 0x962..=0x963
        | 0x981..=0x983 | 0x9BC..=0x9D7 | 0x9E2..=0x9E3 | 0xA01..=0xA03 | 0xA3C..=0xA51
        | 0xA70..=0xA71 | 0xA75 | 0xA81..=0xA83 | 0xABC..=0xACD | 0xAE2..=0xAE3
        | 0xB82 | 0xBBE..=0xBCD | 0xBD7 | 0xC00..=0xC04 | 0xC3C..=0xC56 | 0xC62..=0xC63
        | 0xC81..=0xC83 | 0xCBC..=0xCD6 | 0xCE2..=0xCE3 | 0xD00..=0xD03 | 0xD3B..=0xD57
        | 0xD62..=0xD63 | 0xD81..=0xD83 | 0xDCA..=0xDDF | 0xDF2..=0xDF3 | 0xE31 | 0xE34..=0xE3A
        | 0xE47..=0xE4E | 0xEB1 | 0xEB4..=0xEBC | 0xEC8..=0xECD | 0xF18..=0xF19 | 0xF35 | 0xF37
        | 0xF39 | 0xF3E..=0xF3F | 0xF71..=0xF84 | 0xF86..=0xF87 | 0xF8D..=0xFBC
        | 0x102B..=0x103E | 0x1056..=0x1059 | 0x105E..=0x1060 | 0x1062..=0x1064
        | 0x1067..=0x106D | 0x1071..=0x1074 | 0x1082..=0x108D | 0x108F | 0x109A..=0x109D
        | 0x17B4..=0x17D3 | 0x17DD | 0x200C..=0x200D | 0x3099..=0x309A)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_whispers_languages() {
        assert_eq!(Language::from_tag("pt-BR").map(Language::code), Some("pt"));
        assert_eq!(
            Language::from_tag("zh-Hans-CN").map(Language::code),
            Some("zh")
        );
        assert_eq!(Language::from_tag(" RU ").map(Language::code), Some("ru"));
        assert_eq!(Language::from_tag("haw").map(Language::code), Some("haw"));
        assert_eq!(Language::from_tag("jv").map(Language::code), Some("jw"));
        assert_eq!(Language::from_tag("nb-NO").map(Language::code), Some("no"));
        assert_eq!(Language::from_tag("en_US"), Some(Language::ENGLISH));
        for unknown in ["", "xx", "yue", "chr", "-", "english"] {
            assert_eq!(Language::from_tag(unknown), None, "{unknown}");
        }
        assert_eq!(Language::all().count(), 99);
        assert_eq!(Language::from_tag("su").map(Language::index), Some(98));
    }

    #[test]
    fn a_phrases_script_is_found_or_refused() {
        let script = |text| phrase_script(text);
        assert_eq!(script("Por favor, abra a porta."), Some(Script::Latin));
        assert_eq!(script("Dziękuję, że przyszłaś 42"), Some(Script::Latin));
        assert_eq!(script("123 456"), Some(Script::Latin));
        assert_eq!(script("мой голос мой пароль"), Some(Script::Cyrillic));
        assert_eq!(script("मेरी आवाज़ मेरा पासवर्ड है।"), Some(Script::Devanagari));
        assert_eq!(script("我的声音就是我的密码。"), Some(Script::Han));
        assert_eq!(script("私の声はパスワードです"), Some(Script::Kana));
        assert_eq!(script("నా గొంతు నా పాస్‌వర్డ్"), Some(Script::Telugu));
        assert_eq!(script("صوتي هو كلمة المرور؟"), Some(Script::Arabic));
        assert_eq!(script("open the door 門"), Some(Script::Han));
        assert_eq!(script("φωνή"), Some(Script::Greek));
        // Two scripts, or one no language of the recogniser writes.
        assert_eq!(script("мой 門"), None);
        assert_eq!(script("ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ"), None);
        assert_eq!(script("ଓଡ଼ିଆ"), None);
    }

    #[test]
    fn scripts_know_their_languages() {
        let codes = |script: Script| -> Vec<&str> {
            script.languages().into_iter().map(Language::code).collect()
        };
        assert_eq!(codes(Script::Telugu), ["te"]);
        assert_eq!(codes(Script::Han), ["zh", "ja"]);
        assert!(codes(Script::Cyrillic).contains(&"uk"));
        assert!(codes(Script::Latin).contains(&"en"));
        assert!(codes(Script::Latin).contains(&"sr"));
        assert!(!codes(Script::Latin).contains(&"ru"));
        // Every language is written in some script.
        for language in Language::all() {
            assert!(language.writes(language.script()));
        }
        assert!(Script::Han.unspaced() && Script::Thai.unspaced());
        assert!(!Script::Devanagari.unspaced() && !Script::Latin.unspaced());
    }
}
