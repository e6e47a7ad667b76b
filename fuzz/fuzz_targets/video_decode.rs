//! The whole video path: `decode_video` on arbitrary bytes (MP4/MOV/WebM/Matroska demux, then
//! H.264 through rusty_h264, VP8/VP9 through libvpx, AAC and Opus, YUV conversion, resampling), with
//! small limits so one input stays cheap. It must return `Ok` or `Err`, never panic or abort.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vouch::media::{decode_video, DecodeLimits, DecodeOptions, FrameSampler};

fuzz_target!(|data: &[u8]| {
    let options = DecodeOptions {
        sampler: FrameSampler::Evenly(3),
        limits: DecodeLimits {
            max_dimension: 1024,
            max_video_packets: 2000,
            max_output_frames: 10,
            ..Default::default()
        },
        audio: true,
    };
    if let Ok(clip) = decode_video(data, &options) {
        assert!(clip.frames.len() <= 10);
    }
});
