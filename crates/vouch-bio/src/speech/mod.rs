//! Spoken-phrase verification with Whisper (tiny.en for English, base for the other languages,
//! [`language`]): [`Whisper`] (encoder and decoder run by
//! tract through [`crate::infer::VariableModel`]) scores how well a clip supports an expected
//! phrase with one teacher-forced decoder pass ([`Whisper::verify`] -> [`PhraseScore`], decided
//! by [`PhraseScore::accepted`]) and transcribes greedily ([`Whisper::transcribe`]);
//! [`LogMel`] is Whisper's log-mel front end and [`Tokenizer`] its byte-level BPE.
//!
//! Unlike a recogniser constrained to a grammar of the phrase's words, the teacher-forced score
//! compares each expected token with the model's best alternative at that position and ends
//! with `<|endoftext|>`, so other words, missing words and extra speech all lower it.

mod han;
mod japanese;
pub mod language;
pub mod mel;
pub mod phonemes;
pub mod tokenizer;
pub mod whisper;

pub use language::{phrase_script, Language, Script};
pub use mel::LogMel;
pub use tokenizer::Tokenizer;
pub use whisper::{Encoded, PhraseScore, TokenScore, Whisper};
