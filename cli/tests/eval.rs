//! `vouch eval` as a user runs it: the built binary on files on disk. An unreadable file is
//! counted and listed, never the end of the run.

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Runs `vouch eval <args> --json --models <repo>/models`, which must succeed, and returns its
/// report.
fn run_eval(args: &[&std::ffi::OsStr]) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .arg("eval")
        .args(args)
        .arg("--json")
        .arg("--models")
        .arg(repo().join("models"))
        .output()
        .expect("runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("json")
}

#[test]
fn eval_faces_counts_an_unreadable_image_and_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let media = repo().join("tests/media");
    let face = std::fs::read(media.join("face_astronaut.png")).expect("face");
    std::fs::write(dir.path().join("a.png"), &face).unwrap();
    std::fs::write(dir.path().join("b.png"), &face).unwrap();
    // Cut short: the decoder refuses it.
    std::fs::write(dir.path().join("broken.png"), &face[..300]).unwrap();
    // A WebP under a .jpg name decodes (no face in it).
    std::fs::copy(media.join("marker.webp"), dir.path().join("photo.jpg")).unwrap();
    let pairs = dir.path().join("pairs.csv");
    std::fs::write(
        &pairs,
        "img_a,img_b,same\na.png,b.png,1\na.png,broken.png,1\nb.png,photo.jpg,0\n",
    )
    .unwrap();
    let report = run_eval(&[
        "faces".as_ref(),
        "--pairs".as_ref(),
        pairs.as_os_str(),
        "--images".as_ref(),
        dir.path().as_os_str(),
        "--det".as_ref(),
        dir.path().join("det.png").as_os_str(),
    ]);
    assert_eq!(report["images"], 4);
    assert_eq!(report["images_unreadable"], 1, "{report}");
    assert_eq!(report["images_no_face"], 1, "{report}");
    assert_eq!(report["unreadable"][0]["image"], "broken.png");
    assert!(report["unreadable"][0]["error"]
        .as_str()
        .is_some_and(|e| e.contains("truncated")));
    assert_eq!(report["pairs"], 3);
    // No id column: the bootstrap resamples pairs; the interval holds the estimate.
    let confidence = &report["confidence"];
    assert_eq!(confidence["resampled_by"], "pair", "{report}");
    assert_eq!(confidence["groups"], 3);
    let interval = confidence["fnmr_at_fmr_1e2_ci95"].as_array().unwrap();
    let fnmr = report["fnmr_at_fmr_1e2"].as_f64().unwrap();
    assert!(interval[0].as_f64().unwrap() <= fnmr && fnmr <= interval[1].as_f64().unwrap());
}

#[test]
fn eval_documents_counts_documents_without_a_zone_and_unreadable_images() {
    let dir = tempfile::tempdir().expect("temp dir");
    let media = repo().join("tests/media");
    std::fs::copy(media.join("doc_td3.png"), dir.path().join("passport.png")).unwrap();
    // A picture without a machine-readable zone: the truth row leaves the lines empty.
    std::fs::copy(
        media.join("face_astronaut.png"),
        dir.path().join("no_zone.png"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("broken.jpg"),
        [0xFF, 0xD8, 0xFF, 0xE0, 0, 16],
    )
    .unwrap();
    let truth = dir.path().join("truth.tsv");
    std::fs::write(
        &truth,
        "image\tmrz_type\tmrz_lines\tall_check_digits_valid\n\
         passport.png\tTD3\tP<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<|L898902C36UTO7408122F1204159ZE184226B<<<<<10\ttrue\n\
         no_zone.png\t\t\tfalse\n\
         broken.jpg\tTD3\tP<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<|L898902C36UTO7408122F1204159ZE184226B<<<<<10\ttrue\n",
    )
    .unwrap();
    let report = run_eval(&[
        "documents".as_ref(),
        "--truth".as_ref(),
        truth.as_os_str(),
        "--dir".as_ref(),
        dir.path().as_os_str(),
    ]);
    assert_eq!(report["documents"], 3);
    assert_eq!(report["documents_with_zone"], 1, "{report}");
    assert_eq!(report["all_fields_exact"], 1.0, "{report}");
    assert_eq!(report["documents_without_zone"], 1, "{report}");
    assert_eq!(report["no_zone_rightly_found"], 1, "{report}");
    assert_eq!(report["documents_unreadable"], 1, "{report}");
    assert_eq!(report["unreadable"][0]["image"], "broken.jpg");
}
