//! Media ingest speed on the 5 s 640x480 30 fps bench clips (`tests/media/README.md`), one criterion
//! group per format:
//!
//! - `all_frames`: every picture to RGB plus the audio track to 16 kHz mono (the baseline, the same
//!   work as `ffmpeg -threads 1` writing rgb24 and 16 kHz mono PCM);
//! - `fps10`: what the product does, `FrameSampler::MaxFps(10.0)` plus audio;
//! - `video_only`: every picture to RGB, no audio;
//! - `audio_only`: `decode_audio` on the same file (demux + audio decode + resample).
//!
//! Everything runs on a one-thread rayon pool, so the video and audio branches of `decode_video`
//! run one after the other and the numbers compare with `ffmpeg -threads 1`.
//! Run with `cargo bench --bench media`; `scripts/bench-media-vs-ffmpeg` puts the medians next to
//! ffmpeg's (see `docs/media-speed.md`).

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use vouch_media::{
    decode_audio, decode_video, DecodeLimits, DecodeOptions, FrameSampler, DEFAULT_MAX_SIDE,
};

const CLIPS: [(&str, &str); 3] = [
    ("h264_aac_mp4", "bench_h264_aac.mp4"),
    ("vp8_opus_webm", "bench_vp8_opus.webm"),
    ("vp9_opus_webm", "bench_vp9_opus.webm"),
];

fn read_clip(file: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/media")
        .join(file);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn media(criterion: &mut Criterion) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("one-thread pool");
    let options = |sampler, audio| DecodeOptions {
        sampler,
        max_side: DEFAULT_MAX_SIDE,
        limits: DecodeLimits::default(),
        audio,
    };
    let variants = [
        ("all_frames", options(FrameSampler::All, true), 150),
        ("fps10", options(FrameSampler::MaxFps(10.0), true), 50),
        ("video_only", options(FrameSampler::All, false), 150),
    ];
    for (group_name, file) in CLIPS {
        let bytes = read_clip(file);
        let mut group = criterion.benchmark_group(group_name);
        group
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(5));
        for (label, options, frames) in variants {
            // Check once, outside the timing, that the variant does the work it claims.
            let clip = pool
                .install(|| decode_video(&bytes, &options))
                .expect("decodes");
            assert_eq!(clip.frames.len(), frames, "{group_name}/{label}");
            assert_eq!(clip.audio.is_some(), options.audio, "{group_name}/{label}");
            group.bench_function(label, |bench| {
                bench.iter(|| pool.install(|| decode_video(black_box(&bytes), &options).unwrap()))
            });
        }
        let limits = DecodeLimits::default();
        group.bench_function("audio_only", |bench| {
            bench.iter(|| pool.install(|| decode_audio(black_box(&bytes), &limits).unwrap()))
        });
        group.finish();
    }
}

criterion_group!(benches, media);
criterion_main!(benches);
