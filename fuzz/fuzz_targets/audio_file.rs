//! The audio-file reader (WAV PCM, FLAC, Ogg Vorbis/FLAC through symphonia; Ogg Opus page
//! demuxing) on arbitrary bytes. It must return `Ok` or `Err`, never panic or abort.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    vouch_media::fuzzing::decode_audio_file(data);
});
