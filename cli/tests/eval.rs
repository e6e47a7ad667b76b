//! `vouch eval` as a user runs it: the built binary on files on disk. An unreadable file is
//! counted and listed, never the end of the run; `--report DIR` writes report.json, scores.csv,
//! the DET plots and summary.md; `vouch eval compare` draws score files on one plot.

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
    let report_dir = dir.path().join("report");
    let report = run_eval(&[
        "faces".as_ref(),
        "--pairs".as_ref(),
        pairs.as_os_str(),
        "--images".as_ref(),
        dir.path().as_os_str(),
        "--det".as_ref(),
        dir.path().join("det.svg").as_os_str(),
        "--report".as_ref(),
        report_dir.as_os_str(),
    ]);
    assert!(std::fs::read_to_string(dir.path().join("det.svg"))
        .unwrap()
        .contains("<svg"));
    check_report(&report_dir, &report, 3);
    let summary = std::fs::read_to_string(report_dir.join("summary.md")).unwrap();
    assert!(summary.contains("| EER |"), "{summary}");
    assert!(summary.contains("## Unreadable images (1)"), "{summary}");
    assert!(summary.contains("- `broken.png`:"), "{summary}");
    assert!(summary.contains("## Failure to detect (1)"), "{summary}");
    assert!(
        summary.contains("- `photo.jpg`: no face found"),
        "{summary}"
    );
    assert!(
        summary.contains("shipped threshold | distance 0.52"),
        "{summary}"
    );
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
        "--report".as_ref(),
        dir.path().join("report").as_os_str(),
    ]);
    assert_eq!(report["documents"], 3);
    assert_eq!(report["documents_with_zone"], 1, "{report}");
    assert_eq!(report["all_fields_exact"], 1.0, "{report}");
    assert_eq!(report["documents_without_zone"], 1, "{report}");
    assert_eq!(report["no_zone_rightly_found"], 1, "{report}");
    assert_eq!(report["documents_unreadable"], 1, "{report}");
    assert_eq!(report["unreadable"][0]["image"], "broken.jpg");
    let summary = std::fs::read_to_string(dir.path().join("report/summary.md")).unwrap();
    assert!(
        summary.contains("| every field exact | 100.00 % |"),
        "{summary}"
    );
    assert!(summary.contains("- `broken.jpg`:"), "{summary}");
    assert!(!dir.path().join("report/scores.csv").exists());
    assert!(dir.path().join("report/report.json").exists());
}

/// A report directory holds report.json (the printed JSON), scores.csv with `trials` rows, a
/// labelled SVG and a drawn PNG.
fn check_report(dir: &Path, printed: &serde_json::Value, trials: usize) {
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    // Timings differ between runs of nothing; everything else is the same object.
    let without_time = |value: &serde_json::Value| {
        let mut value = value.clone();
        value["wall_s"] = serde_json::Value::Null;
        value
    };
    assert_eq!(without_time(&written), without_time(printed));
    let scores = std::fs::read_to_string(dir.join("scores.csv")).unwrap();
    let mut lines = scores.lines();
    assert_eq!(lines.next(), Some("a,b,label,score"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), trials, "{scores}");
    for row in &rows {
        assert_eq!(row.len(), 4, "{scores}");
        assert!(row[2] == "1" || row[2] == "0", "{scores}");
        assert!(row[3].parse::<f64>().is_ok(), "{scores}");
    }
    check_plots(dir);
}

/// det.svg has its axis labels and legend; det.png decodes and has a drawn curve.
fn check_plots(dir: &Path) {
    let svg = std::fs::read_to_string(dir.join("det.svg")).unwrap();
    for text in [
        "False match rate, FMR (%)",
        "False non-match rate, FNMR (%)",
        "EER: where FMR = FNMR",
        "the engine&apos;s shipped threshold",
    ] {
        assert!(
            svg.contains(text) || svg.contains(&text.replace("&apos;", "'")),
            "{text}"
        );
    }
    let png = image::open(dir.join("det.png")).expect("decodes").to_rgb8();
    assert!(png.width() >= 600 && png.height() >= 600);
    let colours: std::collections::HashSet<[u8; 3]> = png.pixels().map(|p| p.0).collect();
    // Text, grid, curve and markers: far from a blank page.
    assert!(colours.len() > 20, "{} colours", colours.len());
    let dark = png.pixels().filter(|p| p.0.iter().all(|&c| c < 80)).count();
    assert!(dark > 2_000, "{dark} dark pixels");
}

#[test]
fn eval_compare_draws_two_score_files_on_one_plot() {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, header: &str, shift: f64| {
        let mut text = format!("{header}\n");
        for i in 0..40 {
            let genuine = 0.2 + f64::from(i) * 0.005 + shift;
            let impostor = 0.5 + f64::from(i) * 0.01 - shift;
            text.push_str(&format!("g{i}.png,h{i}.png,1,{genuine}\n"));
            text.push_str(&format!("g{i}.png,x{i}.png,0,{impostor}\n"));
        }
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let ours = write("ours.csv", "a,b,label,score", 0.0);
    let peer = write("peer.csv", "img_a,img_b,same,distance", 0.1);
    for out in ["compare.svg", "compare.png"] {
        let output = Command::new(env!("CARGO_BIN_EXE_vouch"))
            .args(["eval", "compare", "--json", "--title", "Two systems"])
            .arg("--out")
            .arg(dir.path().join(out))
            .arg(&ours)
            .arg(&peer)
            .args(["--label", "Vouch", "--label", "peer"])
            .output()
            .expect("runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
        let systems = report["systems"].as_array().unwrap();
        assert_eq!(systems.len(), 2);
        assert_eq!(systems[0]["label"], "Vouch");
        assert_eq!(systems[0]["genuine"], 40);
        // Separated: no error for ours; the peer's scores overlap.
        assert_eq!(systems[0]["eer"], 0.0);
        assert!(systems[1]["eer"].as_f64().unwrap() > 0.05, "{report}");
    }
    let svg = std::fs::read_to_string(dir.path().join("compare.svg")).unwrap();
    assert!(svg.contains("Two systems"));
    assert!(svg.contains("Vouch: EER 0"), "legend");
    assert!(svg.contains("peer: EER"), "legend");
    let png = image::open(dir.path().join("compare.png"))
        .unwrap()
        .to_rgb8();
    assert!(
        png.pixels().any(|p| p.0 == [213, 94, 0]),
        "the second curve's colour"
    );
}

#[test]
fn eval_voices_counts_an_unreadable_recording_and_writes_the_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    let media = repo().join("tests/media");
    for name in ["speech.wav", "speech_8k.wav", "speech_clipped.wav"] {
        std::fs::copy(media.join(name), dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join("broken.wav"), b"RIFF\x10\0\0\0WAVEfmt ").unwrap();
    let trials = dir.path().join("trials.csv");
    std::fs::write(
        &trials,
        "enroll,test,target\nspeech.wav,speech_clipped.wav,1\nspeech.wav,broken.wav,1\n\
         speech_8k.wav,speech_clipped.wav,0\nspeech.wav,speech_8k.wav,0\n",
    )
    .unwrap();
    let report_dir = dir.path().join("report");
    let report = run_eval(&[
        "voices".as_ref(),
        "--trials".as_ref(),
        trials.as_os_str(),
        "--audio".as_ref(),
        dir.path().as_os_str(),
        "--report".as_ref(),
        report_dir.as_os_str(),
    ]);
    assert_eq!(report["files"], 4);
    assert_eq!(report["files_unreadable"], 1, "{report}");
    assert_eq!(report["unreadable"][0]["file"], "broken.wav");
    assert_eq!(report["trials"], 4);
    check_report(&report_dir, &report, 4);
    let summary = std::fs::read_to_string(report_dir.join("summary.md")).unwrap();
    assert!(summary.contains("- `broken.wav`:"), "{summary}");
}

#[test]
fn eval_phrases_lists_unreadable_recordings_and_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let media = repo().join("tests/media");
    std::fs::copy(media.join("speech_short.wav"), dir.path().join("short.wav")).unwrap();
    std::fs::write(dir.path().join("broken.wav"), b"not audio").unwrap();
    std::fs::write(
        dir.path().join("utterances.csv"),
        "path,corpus,duration_s\nshort.wav,LibriSpeech test-other,2.0\nbroken.wav,LibriSpeech test-other,3.0\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("fsdd_pin_phrases_derived")).unwrap();
    std::fs::write(
        dir.path().join("fsdd_pin_phrases_derived/phrases.csv"),
        "path,digits\nmissing.wav,123456\n",
    )
    .unwrap();
    let report_dir = dir.path().join("report");
    let report = run_eval(&[
        "phrases".as_ref(),
        "--speech".as_ref(),
        dir.path().as_os_str(),
        "--report".as_ref(),
        report_dir.as_os_str(),
    ]);
    assert_eq!(report["files_unreadable"], 2, "{report}");
    let files: Vec<&str> = report["unreadable"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["file"].as_str())
        .collect();
    assert_eq!(files, ["broken.wav", "missing.wav"]);
    assert_eq!(report["sets"]["librispeech_up_to_3.6s"]["clips"], 1);
    assert!(report["false_reject"]["of"].as_u64().unwrap() >= 1);
    let scores = std::fs::read_to_string(report_dir.join("scores.csv")).unwrap();
    assert!(
        scores.starts_with("a,b,label,score\nshort.wav,"),
        "{scores}"
    );
    let summary = std::fs::read_to_string(report_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("## Unreadable recordings (2)"),
        "{summary}"
    );
}

#[test]
fn eval_videos_lists_an_unreadable_clip_and_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let media = repo().join("tests/media");
    std::fs::copy(media.join("photo_speaking.mp4"), dir.path().join("a.mp4")).unwrap();
    std::fs::write(dir.path().join("broken.mp4"), b"\0\0\0\x18ftypmp42").unwrap();
    let clips = dir.path().join("clips.csv");
    std::fs::write(
        &clips,
        "mp4,webm,identity,transcript\na.mp4,,p1,\nbroken.mp4,,p2,\n",
    )
    .unwrap();
    let report_dir = dir.path().join("report");
    let report = run_eval(&[
        "videos".as_ref(),
        "--clips".as_ref(),
        clips.as_os_str(),
        "--dir".as_ref(),
        dir.path().as_os_str(),
        "--threads".as_ref(),
        "2".as_ref(),
        "--report".as_ref(),
        report_dir.as_os_str(),
    ]);
    assert_eq!(report["clips"], 1, "{report}");
    assert_eq!(report["clips_unreadable"], 1, "{report}");
    assert_eq!(report["unreadable"][0]["clip"], "broken.mp4");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report_dir.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(written["unreadable"], report["unreadable"]);
    let scores = std::fs::read_to_string(report_dir.join("scores.csv")).unwrap();
    assert!(
        scores.starts_with("a,b,label,score\na.mp4,a.mp4,1,"),
        "{scores}"
    );
    let summary = std::fs::read_to_string(report_dir.join("summary.md")).unwrap();
    assert!(summary.contains("- `broken.mp4`:"), "{summary}");
}

#[test]
fn eval_spoof_reports_per_kind_and_counts_an_unreadable_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let media = repo().join("tests/media");
    // espeak-ng's voice (the test media's) is a machine's; a cut file cannot be decoded.
    let speech = std::fs::read(media.join("speech.wav")).expect("speech");
    std::fs::write(dir.path().join("espeak.wav"), &speech).unwrap();
    std::fs::write(dir.path().join("cut.wav"), &speech[..40]).unwrap();
    std::fs::copy(
        media.join("speech_8k.wav"),
        dir.path().join("espeak_8k.wav"),
    )
    .unwrap();
    let clips = dir.path().join("clips.csv");
    std::fs::write(
        &clips,
        "file,label,kind\nespeak.wav,spoof,espeak-ng\ncut.wav,spoof,espeak-ng\nespeak_8k.wav,bona_fide,phone\n",
    )
    .unwrap();
    let out = dir.path().join("report");
    let report = run_eval(&[
        "spoof".as_ref(),
        "--clips".as_ref(),
        clips.as_os_str(),
        "--dir".as_ref(),
        dir.path().as_os_str(),
        "--report".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(report["recordings"], 3, "{report}");
    assert_eq!(report["recordings_unreadable"], 1, "{report}");
    assert_eq!(report["unreadable"][0]["file"], "cut.wav");
    let kinds = report["per_kind"].as_array().expect("kinds");
    assert_eq!(kinds.len(), 2, "{report}");
    let espeak = kinds
        .iter()
        .find(|k| k["kind"] == "espeak-ng")
        .expect("espeak");
    assert_eq!(espeak["recordings"], 1);
    assert_eq!(espeak["label"], "spoof");
    // The engine's espeak speech is judged a machine's at the shipped band.
    assert!(espeak["max"].as_f64().expect("score") < -6.0, "{espeak}");
    assert_eq!(espeak["apcer"], 0.0, "{espeak}");
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary");
    assert!(summary.contains("APCER"), "{summary}");
    let scores = std::fs::read_to_string(out.join("scores.csv")).expect("scores");
    assert_eq!(scores.lines().count(), 3, "{scores}");
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    // The demo prints a long conversation; the reader takes one line and leaves.
    let mut child = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .arg("demo")
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .expect("a line");
    assert!(!first.is_empty());
    let output = child.wait_with_output().expect("ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(141), "{stderr}");
}
