//! The whole video path: `decode_video` on arbitrary bytes (MP4/MOV/WebM/Matroska demux, then
//! H.264 through rusty_h264, VP8/VP9 through libvpx, AAC and Opus, shrinking, YUV conversion,
//! rotation, resampling), with small limits so one input stays cheap. It must return `Ok` or
//! `Err`, never panic or abort, and the frames it returns must fit `max_side`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vouch_media::{decode_video, DecodeLimits, DecodeOptions, FrameSampler};

/// Small enough that the test clips (320x240 and up) are shrunk.
const MAX_SIDE: u32 = 160;

fuzz_target!(|data: &[u8]| {
    let options = DecodeOptions {
        sampler: FrameSampler::Evenly(3),
        max_side: MAX_SIDE,
        limits: DecodeLimits {
            max_dimension: 1024,
            max_pixels: 1024 * 768,
            max_video_packets: 2000,
            max_output_frames: 10,
            ..Default::default()
        },
        audio: true,
    };
    if let Ok(clip) = decode_video(data, &options) {
        assert!(clip.frames.len() <= 10);
        for frame in &clip.frames {
            assert!(frame.width.max(frame.height) <= MAX_SIDE, "{frame:?}");
            assert_eq!(frame.rgb.len(), frame.width as usize * frame.height as usize * 3);
        }
    }
});
