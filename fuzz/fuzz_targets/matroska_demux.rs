//! The Matroska/WebM demuxer (EBML elements, tracks, clusters, lacing) on arbitrary bytes. It must
//! return `Ok` or `Err`, never panic, abort or run away with memory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    vouch_media::fuzzing::demux_matroska(data);
});
