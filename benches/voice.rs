//! Voice pipeline speed, per stage and end to end, on `tests/media/speech.wav`
//! (7.0 s, about 5 s of it speech):
//!
//! - `vad/7s`: Silero speech probabilities over the whole recording;
//! - `fbank/3s`: the 80-band Kaldi filterbank of one encoder window;
//! - `embed/3s`: filterbank + CAM++ on one window (speech up to 3 s costs one window, and every
//!   further 1.5 s one more);
//! - `analyze/7s`: VAD, segments, windows, embedding (divide by 7 for a second of audio), on one
//!   thread and on two (the encoder windows run in parallel); `analyze/5s` the same on the first
//!   5 s (Voice Recognition's budget is 150 ms for 5 s of audio on 2 cores);
//! - `file_to_template/wav_7s`: WAV decoding included;
//! - `compare`: two templates;
//! - `spoof/4s`: the AASIST synthetic-speech detector on its one 4 s window (engine option
//!   `voice_spoof_check`), one thread.
//!
//! Run with `cargo bench --bench voice`. Models load once, outside the timing.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vouch_bio::KaldiFbank;
use vouch_bio::VoiceModels;
use vouch_media::{decode_audio, DecodeLimits};

fn voice(criterion: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let models = VoiceModels::load(&root.join("models")).expect("models");
    let bytes = std::fs::read(root.join("tests/media/speech.wav")).expect("speech");
    let (pcm, _) = decode_audio(&bytes, &DecodeLimits::default()).expect("decodes");
    let audio = pcm.samples;
    let seconds = audio.len() as f64 / 16_000.0;
    let window = &audio[16_000..16_000 + 48_000];
    let fbank = KaldiFbank::new();

    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let mut group = criterion.benchmark_group("voice");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function(format!("vad/{seconds:.0}s"), |b| {
        b.iter(|| black_box(models.vad().probabilities(black_box(&audio)).expect("vad")))
    });
    group.bench_function("fbank/3s", |b| {
        b.iter(|| black_box(fbank.features(black_box(window))))
    });
    group.bench_function("embed/3s", |b| {
        b.iter(|| one.install(|| black_box(models.embed_speech(black_box(window)).expect("embed"))))
    });
    // Throughput in samples: criterion's "elem/s" divided by 16,000 is seconds of audio per second.
    group.throughput(Throughput::Elements(audio.len() as u64));
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        group.bench_function(format!("analyze/{seconds:.0}s/{threads}_threads"), |b| {
            b.iter(|| {
                pool.install(|| black_box(models.analyze(black_box(&audio)).expect("speech")))
            })
        });
        // The budget: 5 s of audio (the first 5 s of the file, 4 s of it speech).
        let five = &audio[..80_000];
        group.bench_function(format!("analyze/5s/{threads}_threads"), |b| {
            b.iter(|| pool.install(|| black_box(models.analyze(black_box(five)).expect("speech"))))
        });
    }

    group.bench_function(format!("file_to_template/wav_{seconds:.0}s"), |b| {
        b.iter(|| {
            let (pcm, _) = decode_audio(black_box(&bytes), &DecodeLimits::default()).expect("wav");
            one.install(|| black_box(models.analyze(&pcm.samples).expect("speech")))
        })
    });
    let spoof = vouch_bio::SpoofDetector::load(&root.join("models")).expect("AASIST");
    group.bench_function("spoof/4s", |b| {
        b.iter(|| one.install(|| black_box(spoof.score(black_box(&audio)).expect("score"))))
    });
    group.throughput(Throughput::Elements(1));
    let a = models.analyze(&audio).expect("speech").template;
    let b = models
        .analyze(&audio[..audio.len() / 2])
        .expect("speech")
        .template;
    group.bench_function("compare", |bench| {
        bench.iter(|| black_box(black_box(&a).compare(black_box(&b))))
    });
    group.finish();
}

criterion_group!(benches, voice);
criterion_main!(benches);
