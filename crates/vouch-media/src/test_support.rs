//! Test helpers shared by the media modules' unit tests: [`media`] reads a generated test file and
//! [`decode_damaged_packets`] feeds a decoder packets with random bytes overwritten.

use super::demux::{Packet, VideoDecoder, YuvView};

/// The bytes of `tests/media/<name>` (see `tests/media/README.md`).
pub(crate) fn media(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/media/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Decodes `packets` in 4 rounds, each with a fresh decoder and `round + 1` bytes past the first
/// `keep` of every packet overwritten (xorshift, fixed seed: the same damage every run). Decoders
/// must return errors or nothing, never crash.
pub(crate) fn decode_damaged_packets(
    packets: &[Packet<'_>],
    keep: usize,
    mut new_decoder: impl FnMut() -> Box<dyn VideoDecoder>,
) {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for round in 0..4 {
        let mut decoder = new_decoder();
        let mut ignore = |_: YuvView<'_>| Ok(());
        for packet in packets {
            let mut data = packet.data.to_vec();
            for _ in 0..=round {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if data.len() > keep {
                    let index = keep + (state % (data.len() - keep) as u64) as usize;
                    data[index] = (state >> 32) as u8;
                }
            }
            let _ = decoder.decode(&data, &mut ignore);
        }
        let _ = decoder.flush(&mut ignore);
    }
}
