//! The MP4/MOV demuxer (`ftyp`/`moov`/`moof` box trees, sample tables, fragments) on arbitrary
//! bytes. It must return `Ok` or `Err`, never panic, abort or run away with memory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    vouch_media::fuzzing::demux_mp4(data);
});
