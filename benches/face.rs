//! Face pipeline speed, per stage and end to end, on one thread (`tests/media/face_astronaut.png`,
//! 260x260, and the same scaled into a 1280x720 frame as a phone selfie video would give):
//!
//! - `detect`: BlazeFace short range (letterbox + model + decoding);
//! - `landmarks`: FaceMesh on the detection's ROI;
//! - `align`: the dlib chip (similarity fit, pyramid, bilinear);
//! - `embed`: the ResNet on the chip;
//! - `compare`: two templates (the bound is 0.1 ms);
//! - `verify_pair`: two image files to a decision, decoding included.
//!
//! Run with `cargo bench --bench face`. Models load once, outside the timing.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use vouch_bio::{FaceModels, RgbImage};
use vouch_media::{decode_image, ImageLimits};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn face(criterion: &mut Criterion) {
    let models = FaceModels::load(&root().join("models")).expect("models");
    let bytes = std::fs::read(root().join("tests/media/face_astronaut.png")).expect("image");
    let frame = decode_image(&bytes, &ImageLimits::default()).expect("decodes");
    let portrait = RgbImage::from_frame(frame).expect("image");
    // A 1280x720 frame with the face at about a third of the height.
    let big = image::imageops::resize(
        &image::RgbImage::from_raw(260, 260, portrait.rgb.clone()).expect("buffer"),
        520,
        520,
        image::imageops::FilterType::Triangle,
    );
    let mut canvas = image::RgbImage::from_pixel(1280, 720, image::Rgb([90, 90, 90]));
    image::imageops::replace(&mut canvas, &big, 380, 100);
    let hd = RgbImage::new(1280, 720, canvas.into_raw()).expect("frame");

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let mut group = criterion.benchmark_group("face");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (name, image) in [("portrait_260", &portrait), ("frame_1280x720", &hd)] {
        let detection = models.detect(image).expect("detect")[0].clone();
        let landmarks = models.landmarks_for(image, &detection).expect("landmarks");
        let chip = FaceModels::chip_for(image, &landmarks);
        group.bench_function(format!("detect/{name}"), |b| {
            b.iter(|| pool.install(|| black_box(models.detect(black_box(image)).expect("detect"))))
        });
        group.bench_function(format!("landmarks/{name}"), |b| {
            b.iter(|| black_box(models.landmarks_for(image, &detection).expect("landmarks")))
        });
        group.bench_function(format!("align/{name}"), |b| {
            b.iter(|| black_box(FaceModels::chip_for(black_box(image), &landmarks)))
        });
        group.bench_function(format!("analyze/{name}"), |b| {
            b.iter(|| pool.install(|| black_box(models.analyze(black_box(image)).expect("face"))))
        });
        if name == "portrait_260" {
            group.bench_function("embed", |b| {
                b.iter(|| black_box(models.embed_chip(black_box(&chip)).expect("embed")))
            });
        }
    }
    let a = models.analyze(&portrait).expect("face").template;
    let b = models.analyze(&hd).expect("face").template;
    group.bench_function("compare", |bench| {
        bench.iter(|| black_box(black_box(&a).compare(black_box(&b))))
    });
    group.bench_function("verify_pair/png_files", |bench| {
        bench.iter(|| {
            pool.install(|| {
                let analyze = |bytes: &[u8]| {
                    let frame = decode_image(bytes, &ImageLimits::default()).expect("decodes");
                    models
                        .analyze(&RgbImage::from_frame(frame).expect("image"))
                        .expect("face")
                        .template
                };
                black_box(analyze(&bytes).compare(&analyze(&bytes)))
            })
        })
    });
    group.finish();
}

criterion_group!(benches, face);
criterion_main!(benches);
