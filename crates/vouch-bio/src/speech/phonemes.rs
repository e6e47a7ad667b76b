//! What the mouth must be doing, heard from the sound: hama's phoneme recogniser
//! ([`PhonemeRecognizer`], a 2.3 M-parameter CTC model over IPA symbols, run by tract) gives each
//! 20 ms of audio a probability per phoneme, and [`VISEME_GROUPS`] sums them into groups of sounds
//! that look alike on the lips (visemes: lips closed for p/b/m, lower lip to teeth for f/v,
//! rounded for u/o/w, ...). Phoneme posteriors are the same whoever speaks, in whatever voice or
//! room, which is what lets a map from sound to mouth learned on a few speakers carry over to
//! others (`video::speaker`'s sync model). The symbols are IPA, so the groups hold for languages
//! other than English too.

use std::path::Path;

use crate::infer::{read_checked, Input, ModelError, ModelSpec, VariableModel, PHONEME_RECOGNIZER};

/// The recogniser's symbol table, one symbol a line in output order (190 the CTC blank).
pub const PHONEME_TOKENS: ModelSpec = ModelSpec {
    file: "hama_phoneme_tokens.txt",
    sha256: "df5403c8d6687eba9c2a1cea81b945498523c6ad90069868d316ec440f24690f",
    inputs: &[],
    ignore_value_info: false,
};

/// Output frame of the recogniser, ms.
pub const FRAME_MS: i64 = 20;

/// Samples at 16 kHz per output frame.
const FRAME_SAMPLES: usize = 320;

/// Longest audio run through the recogniser at once (20 s): its attention is quadratic in the
/// length, so longer audio is cut into pieces of this size.
const MAX_PIECE_SAMPLES: usize = 16_000 * 20;

/// The viseme groups, in the order of [`Visemes::frames`]' columns; the last is the CTC blank
/// (no new sound: silence, or a sound held).
pub const VISEME_GROUPS: [&str; VISEMES] = [
    "bilabial",
    "labiodental",
    "rounded",
    "postalveolar",
    "open",
    "mid",
    "dental",
    "other",
    "blank",
];

/// Number of [`VISEME_GROUPS`].
pub const VISEMES: usize = 9;

/// The viseme group of an IPA symbol of the recogniser's table; `None` for symbols that are not
/// sounds (padding, punctuation, the word boundary, tone and diacritic marks).
pub fn viseme_of(symbol: &str) -> Option<usize> {
    const AFFRICATES: [&str; 5] = ["t͡ʃ", "d͡ʒ", "t͡ɕ", "t͡ɕʰ", "t͡ɕ͈"];
    if symbol == "<blank>" {
        return Some(8);
    }
    if AFFRICATES.contains(&symbol) {
        return Some(3);
    }
    let first = symbol.chars().next()?;
    let group = |set: &str| set.contains(first);
    if symbol.starts_with('<') {
        return None;
    }
    Some(if group("pbmɓʙɸβ") {
        0
    } else if group("fvɱʋ") {
        1
    } else if group("wuʊoɔyøœɒɵʉʏɥõũ") {
        2
    } else if group("ʃʒɕʑʂʐ") {
        3
    } else if group("aɑæɐäàåã") {
        4
    } else if group("eɛiɪəɜɝʌɚɨɯɤɘìĩẽᵊjǐ") {
        5
    } else if group("θð") {
        6
    } else if first.is_alphabetic() {
        7
    } else {
        return None;
    })
}

/// Viseme probabilities per 20 ms frame of a clip's audio (frame `f` is centred on sample
/// `320 f`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Visemes {
    /// [frame][group] probabilities (each row sums to at most 1).
    pub frames: Vec<[f32; VISEMES]>,
}

/// hama's phoneme recogniser with its symbols' viseme groups.
#[derive(Debug, Clone)]
pub struct PhonemeRecognizer {
    model: VariableModel,
    /// The viseme group of each output class.
    groups: Vec<Option<usize>>,
}

impl PhonemeRecognizer {
    /// Checks that the model and its symbol table are in `dir`, without reading them.
    pub fn check_present(dir: &Path) -> Result<(), ModelError> {
        crate::infer::check_present(dir, PHONEME_TOKENS.file)?;
        crate::infer::check_present(dir, PHONEME_RECOGNIZER.file)
    }

    /// Loads the model and its symbol table from `dir`, checking both files' sha256.
    pub fn load(dir: &Path) -> Result<PhonemeRecognizer, ModelError> {
        let table = read_checked(dir, PHONEME_TOKENS)?;
        let table = String::from_utf8(table).map_err(|_| ModelError::Runtime {
            file: PHONEME_TOKENS.file,
            detail: "not UTF-8".into(),
        })?;
        let groups: Vec<Option<usize>> = table.lines().map(viseme_of).collect();
        let model = VariableModel::load(dir, PHONEME_RECOGNIZER)?;
        Ok(PhonemeRecognizer { model, groups })
    }

    /// The log-probabilities [frame][class] of 16 kHz mono `pcm` (at least one frame's worth).
    pub fn log_probs(&self, pcm: &[f32]) -> Result<(usize, Vec<f32>), ModelError> {
        let mut outputs = self.model.run(&[Input::F32(&[1, pcm.len()], pcm)])?;
        let (shape, values) = outputs.swap_remove(0);
        let classes = shape.get(2).copied().unwrap_or(0);
        if classes != self.groups.len() {
            return Err(ModelError::Runtime {
                file: PHONEME_RECOGNIZER.file,
                detail: format!("{classes} classes for {} symbols", self.groups.len()),
            });
        }
        Ok((classes, values))
    }

    /// Viseme probabilities of 16 kHz mono `pcm`, one row per [`FRAME_MS`]; audio longer than
    /// 20 s is recognised in pieces.
    pub fn visemes(&self, pcm: &[f32]) -> Result<Visemes, ModelError> {
        let mut frames = Vec::with_capacity(pcm.len() / FRAME_SAMPLES + 1);
        // Whole pieces are a whole number of frames, so every piece starts on the clip's grid; the
        // model gives N / 320 + 1 frames (its window is centred), so a whole piece drops its last.
        let pieces = pcm.len().div_ceil(MAX_PIECE_SAMPLES);
        for (index, piece) in pcm.chunks(MAX_PIECE_SAMPLES).enumerate() {
            // The model needs a few frames of input; a shorter tail is too short to say anything.
            if piece.len() < 2 * FRAME_SAMPLES {
                break;
            }
            let (classes, values) = self.log_probs(piece)?;
            let keep = if index + 1 < pieces {
                piece.len() / FRAME_SAMPLES
            } else {
                usize::MAX
            };
            for row in values.chunks_exact(classes).take(keep) {
                let mut groups = [0f32; VISEMES];
                for (log_prob, group) in row.iter().zip(&self.groups) {
                    if let Some(group) = group {
                        groups[*group] += log_prob.exp();
                    }
                }
                frames.push(groups);
            }
        }
        Ok(Visemes { frames })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_fall_into_their_groups() {
        assert_eq!(viseme_of("p"), Some(0));
        assert_eq!(viseme_of("m"), Some(0));
        assert_eq!(viseme_of("f"), Some(1));
        assert_eq!(viseme_of("oʊ"), Some(2));
        assert_eq!(viseme_of("t͡ʃ"), Some(3));
        assert_eq!(viseme_of("ʃ"), Some(3));
        assert_eq!(viseme_of("æ"), Some(4));
        assert_eq!(viseme_of("ɪ"), Some(5));
        assert_eq!(viseme_of("θ"), Some(6));
        assert_eq!(viseme_of("k"), Some(7));
        assert_eq!(viseme_of("<blank>"), Some(8));
        assert_eq!(viseme_of("<wb>"), None);
        assert_eq!(viseme_of("˥"), None);
        assert_eq!(viseme_of(","), None);
    }

    /// The converted model in tract against onnxruntime's output on real speech-like input,
    /// then grouped.
    #[test]
    fn recognises_in_tract() {
        let dir = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"));
        let recognizer = PhonemeRecognizer::load(&dir).expect("model");
        let pcm: Vec<f32> = (0..16_000 * 2)
            .map(|i| ((i as f32) * 0.05).sin() * 0.1 * ((i / 1600) % 2) as f32)
            .collect();
        let input = crate::infer::reference_f32("hama_phoneme/input.f32");
        let expected = crate::infer::reference_f32("hama_phoneme/output.f32");
        let (classes, got) = recognizer.log_probs(&input).expect("runs");
        assert_eq!((classes, got.len()), (191, 151 * 191));
        // Compared as probabilities, which is what the viseme groups sum: tract's float32 sums
        // and its Erf differ from onnxruntime's by up to 0.04 in log-probability on unlikely
        // symbols, where that moves a probability very little.
        let worst = got
            .iter()
            .zip(&expected)
            .map(|(g, e)| (g.exp() - e.exp()).abs())
            .fold(0.0, f32::max);
        assert!(worst < 5e-3, "tract vs onnxruntime, probability: {worst}");
        let visemes = recognizer.visemes(&pcm).expect("runs");
        assert_eq!(visemes.frames.len(), 101);
        for row in &visemes.frames {
            let total: f32 = row.iter().sum();
            assert!(total > 0.5 && total <= 1.0001, "{row:?}");
        }
    }
}
