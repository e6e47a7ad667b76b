//! Whisper's text tokenizer: [`Tokenizer`] is GPT-2's byte-level BPE (the tables in
//! `models/whisper_tokenizer.txt` for tiny.en, written by `models/convert_whisper.py` from the
//! model package's `tokenizer.json`, and `models/whisper_multilingual_tokenizer.txt` for the
//! multilingual model, from Whisper's own `multilingual.tiktoken`). Special tokens are read from
//! the table by their text, so one reader serves both vocabularies. Text is split by GPT-2's pre-tokenisation pattern
//! (`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`, written out by
//! hand below), each piece's UTF-8 bytes are mapped to printable characters and merged by rank.

use std::collections::HashMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::infer::ModelError;

/// The tables' file inside `models_dir`.
pub const TOKENIZER_FILE: &str = "whisper_tokenizer.txt";
/// Its sha256, as in `models/SHA256SUMS`.
pub const TOKENIZER_SHA256: &str =
    "defadb724967ec72b4d4b15b65618eb8a09a305acfd1ae1f463862697550eadc";

/// The multilingual table's file inside `models_dir` (`models/convert-whisper-base.sh`).
pub const MULTILINGUAL_TOKENIZER_FILE: &str = "whisper_multilingual_tokenizer.txt";
/// Its sha256, as in `models/SHA256SUMS`.
pub const MULTILINGUAL_TOKENIZER_SHA256: &str =
    "7606e92fe9711315b70f16e1173824f52f69596ed6056ded98963ca1423044b6";

/// Byte-level BPE over the Whisper (GPT-2) vocabulary.
pub struct Tokenizer {
    /// Token text (byte-to-unicode form) by id.
    tokens: Vec<String>,
    ids: HashMap<String, u32>,
    /// Merge rank by (left, right) token text.
    ranks: HashMap<(String, String), usize>,
    /// GPT-2's byte -> printable character table, and its inverse.
    byte_char: [char; 256],
    char_byte: HashMap<char, u8>,
    /// The first special id (`<|endoftext|>`): every id from here on is a special token or a
    /// timestamp.
    first_special: u32,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("tokens", &self.tokens.len())
            .field("merges", &self.ranks.len())
            .finish_non_exhaustive()
    }
}

/// GPT-2's `bytes_to_unicode`: printable Latin-1 bytes map to themselves, the others to
/// U+0100 upwards in byte order.
fn byte_to_char() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut next = 256u32;
    for byte in 0..=255u8 {
        let printable = matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        table[usize::from(byte)] = if printable {
            char::from(byte)
        } else {
            let c = char::from_u32(next).unwrap_or('\u{FFFD}');
            next += 1;
            c
        };
    }
    table
}

impl Tokenizer {
    /// Reads tiny.en's `whisper_tokenizer.txt` from `models_dir` and checks its sha256.
    pub fn load(models_dir: &Path) -> Result<Tokenizer, ModelError> {
        Tokenizer::load_file(models_dir, TOKENIZER_FILE, TOKENIZER_SHA256)
    }

    /// Reads the tables `file` from `models_dir` and checks them against `sha256`.
    pub fn load_file(
        models_dir: &Path,
        file: &'static str,
        sha256: &'static str,
    ) -> Result<Tokenizer, ModelError> {
        let path = models_dir.join(file);
        let bytes = std::fs::read(&path).map_err(|error| ModelError::Missing {
            file,
            detail: format!("{}: {error}", path.display()),
        })?;
        let digest = Sha256::digest(&bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        if hex != sha256 {
            return Err(ModelError::Checksum { file });
        }
        let text = String::from_utf8(bytes).map_err(|_| ModelError::Runtime {
            file,
            detail: "not UTF-8".into(),
        })?;
        Tokenizer::parse(&text).map_err(|detail| ModelError::Runtime { file, detail })
    }

    fn parse(text: &str) -> Result<Tokenizer, String> {
        // Comment lines come only before the tables ('#' is also a token).
        let mut lines = text.lines().skip_while(|line| line.starts_with('#'));
        let count = |lines: &mut dyn Iterator<Item = &str>, key: &str| -> Result<usize, String> {
            lines
                .next()
                .and_then(|line| line.strip_prefix(key))
                .and_then(|n| n.trim().parse().ok())
                .ok_or_else(|| format!("expected '{key} N'"))
        };
        let n_tokens = count(&mut lines, "tokens ")?;
        let tokens: Vec<String> = lines.by_ref().take(n_tokens).map(str::to_owned).collect();
        if tokens.len() != n_tokens {
            return Err("truncated token list".into());
        }
        let n_merges = count(&mut lines, "merges ")?;
        let mut ranks = HashMap::with_capacity(n_merges);
        for (rank, line) in lines.by_ref().take(n_merges).enumerate() {
            let (left, right) = line
                .split_once(' ')
                .ok_or_else(|| format!("bad merge line {line:?}"))?;
            ranks.insert((left.to_owned(), right.to_owned()), rank);
        }
        if ranks.len() != n_merges {
            return Err("truncated merge list".into());
        }
        let ids: HashMap<String, u32> = tokens
            .iter()
            .enumerate()
            .map(|(id, token)| (token.clone(), id as u32))
            .collect();
        let first_special = *ids.get("<|endoftext|>").ok_or("no <|endoftext|> token")?;
        let byte_char = byte_to_char();
        let char_byte = byte_char
            .iter()
            .enumerate()
            .map(|(byte, &c)| (c, byte as u8))
            .collect();
        Ok(Tokenizer {
            tokens,
            ids,
            ranks,
            byte_char,
            char_byte,
            first_special,
        })
    }

    /// Vocabulary size (text tokens, special tokens and timestamps).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the vocabulary is empty (never, once loaded).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The ids of `text` (no special tokens are added; Whisper's transcripts start with a space).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        for piece in pre_tokenize(text) {
            let symbols: Vec<String> = piece
                .bytes()
                .map(|b| self.byte_char[usize::from(b)].to_string())
                .collect();
            for symbol in self.bpe(symbols) {
                // Every single byte is in the vocabulary and every merge result too.
                if let Some(&id) = self.ids.get(&symbol) {
                    out.push(id);
                }
            }
        }
        out
    }

    fn bpe(&self, mut symbols: Vec<String>) -> Vec<String> {
        loop {
            let best = symbols
                .windows(2)
                .enumerate()
                .filter_map(|(i, pair)| {
                    self.ranks
                        .get(&(pair[0].clone(), pair[1].clone()))
                        .map(|&rank| (rank, i))
                })
                .min();
            let Some((rank, _)) = best else {
                return symbols;
            };
            // Merge every occurrence of the best pair, left to right.
            let mut merged = Vec::with_capacity(symbols.len());
            let mut i = 0;
            while i < symbols.len() {
                if i + 1 < symbols.len()
                    && self
                        .ranks
                        .get(&(symbols[i].clone(), symbols[i + 1].clone()))
                        == Some(&rank)
                {
                    merged.push(format!("{}{}", symbols[i], symbols[i + 1]));
                    i += 2;
                } else {
                    merged.push(symbols[i].clone());
                    i += 1;
                }
            }
            symbols = merged;
        }
    }

    /// The text of `ids`, special tokens and timestamps left out; invalid UTF-8 (a character
    /// cut between tokens) becomes U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::new();
        for &id in ids {
            if id >= self.first_special {
                continue;
            }
            if let Some(token) = self.tokens.get(id as usize) {
                bytes.extend(token.chars().filter_map(|c| self.char_byte.get(&c)));
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The id of a token given in its table form (special tokens such as `<|pt|>` are written
    /// as themselves).
    pub fn id_of(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }

    /// The first special id (`<|endoftext|>`).
    pub fn first_special(&self) -> u32 {
        self.first_special
    }

    /// The UTF-8 bytes one text token stands for (empty for special tokens).
    pub fn bytes_of(&self, id: u32) -> Vec<u8> {
        if id >= self.first_special {
            return Vec::new();
        }
        self.tokens.get(id as usize).map_or_else(Vec::new, |token| {
            token
                .chars()
                .filter_map(|c| self.char_byte.get(&c).copied())
                .collect()
        })
    }

    /// The token text of one id (byte-to-unicode form), for diagnostics.
    pub fn token(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Class {
    Letter,
    Number,
    Other,
    Space,
}

fn class(c: char) -> Class {
    if c.is_whitespace() {
        Class::Space
    } else if c.is_alphabetic() && !crate::speech::language::is_mark(c) {
        // `\p{L}`: Rust's alphabetic also takes the vowel signs of Indic scripts (general
        // category M), which the pattern leaves to the punctuation alternative.
        Class::Letter
    } else if c.is_numeric() {
        Class::Number
    } else {
        Class::Other
    }
}

/// GPT-2's pre-tokenisation pattern, alternative by alternative.
fn pre_tokenize(text: &str) -> Vec<&str> {
    const CONTRACTIONS: [&str; 7] = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let offset = |i: usize| chars.get(i).map_or(text.len(), |&(at, _)| at);
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let start = offset(i);
        if let Some(c) = CONTRACTIONS.iter().find(|c| text[start..].starts_with(**c)) {
            pieces.push(&text[start..start + c.len()]);
            i += c.chars().count();
            continue;
        }
        // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
        let body = if chars[i].1 == ' ' { i + 1 } else { i };
        if let Some(&(_, c)) = chars.get(body) {
            let kind = class(c);
            if kind != Class::Space {
                let mut end = body + 1;
                while end < chars.len() && class(chars[end].1) == kind {
                    end += 1;
                }
                pieces.push(&text[start..offset(end)]);
                i = end;
                continue;
            }
        }
        // `\s+(?!\S)` then `\s+`: a run of whitespace, leaving its last character to the next
        // piece when a non-space follows (unless the run is that one character).
        let mut end = i;
        while end < chars.len() && chars[end].1.is_whitespace() {
            end += 1;
        }
        if end < chars.len() && end - i > 1 {
            end -= 1;
        }
        pieces.push(&text[start..offset(end)]);
        i = end;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn models_dir() -> std::path::PathBuf {
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"))
    }

    /// Encodes and decodes every case of `models/reference/<folder>/tokenizer_cases.txt` (a
    /// JSON string, a tab, the reference ids) against the reference; returns how many.
    fn check_cases(tokenizer: &Tokenizer, folder: &str) -> usize {
        let path = models_dir().join(format!("reference/{folder}/tokenizer_cases.txt"));
        let cases = std::fs::read_to_string(path).expect("cases");
        let mut checked = 0;
        for line in cases.lines() {
            let (quoted, ids) = line.split_once('\t').expect("tab");
            let text: String = serde_json::from_str(quoted).expect("json string");
            let expected: Vec<u32> = ids.split(' ').map(|id| id.parse().unwrap()).collect();
            assert_eq!(tokenizer.encode(&text), expected, "{text:?}");
            assert_eq!(tokenizer.decode(&expected), text);
            checked += 1;
        }
        checked
    }

    #[test]
    fn pre_tokenizer_follows_gpt2() {
        assert_eq!(
            pre_tokenize(" I don't  know,\n it's 42!"),
            vec![" I", " don", "'t", " ", " know", ",", "\n", " it", "'s", " 42", "!"]
        );
        assert_eq!(pre_tokenize("a  "), vec!["a", "  "]);
    }

    /// Ids from the `tokenizers` package on the model's tokenizer.json
    /// (models/reference/whisper_tiny_en/tokenizer_cases.txt).
    #[test]
    fn encode_and_decode_match_the_reference_tokenizer() {
        let tokenizer = Tokenizer::load(&models_dir()).expect("load");
        assert_eq!(tokenizer.len(), 51864);
        assert_eq!(tokenizer.token(50256), Some("<|endoftext|>"));
        assert_eq!(tokenizer.token(50257), Some("<|startoftranscript|>"));
        assert_eq!(tokenizer.token(50362), Some("<|notimestamps|>"));
        assert!(check_cases(&tokenizer, "whisper_tiny_en") >= 10);
    }

    /// The multilingual table against openai-whisper's own tokenizer (tiktoken), in nine
    /// languages and six scripts (models/reference/whisper_base/tokenizer_cases.txt).
    #[test]
    fn the_multilingual_table_matches_whispers_tokenizer() {
        let tokenizer = Tokenizer::load_file(
            &models_dir(),
            MULTILINGUAL_TOKENIZER_FILE,
            MULTILINGUAL_TOKENIZER_SHA256,
        )
        .expect("load");
        assert_eq!(tokenizer.len(), 51865);
        assert_eq!(tokenizer.first_special(), 50257);
        assert_eq!(tokenizer.id_of("<|startoftranscript|>"), Some(50258));
        assert_eq!(tokenizer.id_of("<|en|>"), Some(50259));
        assert_eq!(tokenizer.id_of("<|su|>"), Some(50357));
        assert_eq!(tokenizer.id_of("<|transcribe|>"), Some(50359));
        assert_eq!(tokenizer.id_of("<|notimestamps|>"), Some(50363));
        assert!(check_cases(&tokenizer, "whisper_base") >= 13);
    }
}
