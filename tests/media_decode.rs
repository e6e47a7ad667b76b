//! Media ingest through the public Rust API on the generated media in `tests/media` (see its
//! README for how each file was made and the expected values), plus the real talking clips of
//! `../shared/data/talking-grid` when that folder is present.

use std::path::{Path, PathBuf};

use vouch_media::{
    decode_audio, decode_image, decode_video, AudioCodec, Clip, Container, DecodeLimits,
    DecodeOptions, Frame, FrameSampler, ImageLimits, MediaError, Rotation, VideoCodec,
    PCM_SAMPLE_RATE,
};

fn media(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/media")
        .join(name);
    std::fs::read(&path)
        .unwrap_or_else(|error| panic!("{}: {error} (run scripts/make-test-media)", path.display()))
}

fn all_frames() -> DecodeOptions {
    DecodeOptions {
        sampler: FrameSampler::All,
        ..DecodeOptions::default()
    }
}

fn mean(frame: &Frame) -> f64 {
    frame.rgb.iter().map(|&value| f64::from(value)).sum::<f64>() / frame.rgb.len() as f64
}

/// Presentation time of the white frame.
fn flash_ms(clip: &Clip) -> i64 {
    let flashes: Vec<&Frame> = clip
        .frames
        .iter()
        .filter(|frame| mean(frame) > 200.0)
        .collect();
    assert_eq!(flashes.len(), 1, "exactly one white frame");
    flashes[0].timestamp_ms
}

/// Presentation time where the 1 kHz beep starts: first 5 ms window with RMS over 0.1.
fn beep_ms(clip: &Clip) -> i64 {
    let pcm = clip.audio.as_ref().expect("audio");
    let window = (PCM_SAMPLE_RATE / 200) as usize;
    let start = pcm
        .samples
        .chunks(window)
        .position(|chunk| {
            (chunk.iter().map(|x| x * x).sum::<f32>() / chunk.len() as f32).sqrt() > 0.1
        })
        .expect("a beep");
    pcm.start_ms + (start * window) as i64 * 1000 / i64::from(PCM_SAMPLE_RATE)
}

fn red(pixel: &[u8]) -> bool {
    pixel[0] > 200 && pixel[1] < 60 && pixel[2] < 60
}

fn pixel(frame: &Frame, x: u32, y: u32) -> &[u8] {
    let start = 3 * (y * frame.width + x) as usize;
    &frame.rgb[start..start + 3]
}

#[test]
fn every_container_and_codec_decodes_with_frames_audio_and_alignment() {
    // (file, container, video codec, audio codec, flash ms, beep ms)
    let cases = [
        (
            "h264_aac.mp4",
            Container::Mp4,
            VideoCodec::H264,
            AudioCodec::Aac,
            1000,
            1000,
        ),
        (
            "h264_aac.mov",
            Container::QuickTime,
            VideoCodec::H264,
            AudioCodec::Aac,
            1000,
            1000,
        ),
        (
            "h264_aac_fragmented.mp4",
            Container::Mp4,
            VideoCodec::H264,
            AudioCodec::Aac,
            1000,
            1023,
        ),
        (
            "h264_baseline_aac.mp4",
            Container::Mp4,
            VideoCodec::H264,
            AudioCodec::Aac,
            1000,
            1000,
        ),
        (
            "vp8_opus.webm",
            Container::WebM,
            VideoCodec::Vp8,
            AudioCodec::Opus,
            1007,
            1000,
        ),
        (
            "vp9_opus.webm",
            Container::WebM,
            VideoCodec::Vp9,
            AudioCodec::Opus,
            1007,
            1000,
        ),
        (
            "vp8_opus_live.webm",
            Container::WebM,
            VideoCodec::Vp8,
            AudioCodec::Opus,
            1007,
            1000,
        ),
        (
            "vp9_opus.mkv",
            Container::Matroska,
            VideoCodec::Vp9,
            AudioCodec::Opus,
            1007,
            1000,
        ),
        (
            "h264_aac.mkv",
            Container::Matroska,
            VideoCodec::H264,
            AudioCodec::Aac,
            1000,
            1023,
        ),
    ];
    for (name, container, video, audio, flash, beep) in cases {
        let clip = decode_video(&media(name), &all_frames())
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(clip.info.container, container, "{name}");
        assert_eq!(clip.info.video_codec, Some(video), "{name}");
        assert_eq!(clip.info.audio_codec, Some(audio), "{name}");
        assert_eq!(clip.frames.len(), 50, "{name}: frames");
        assert!(
            clip.frames
                .iter()
                .all(|frame| (frame.width, frame.height) == (320, 240)),
            "{name}"
        );
        assert!(
            red(pixel(&clip.frames[0], 4, 4)),
            "{name}: red square top-left {:?}",
            pixel(&clip.frames[0], 4, 4)
        );
        assert!(
            clip.frames
                .windows(2)
                .all(|pair| pair[0].timestamp_ms < pair[1].timestamp_ms),
            "{name}: order"
        );
        assert!(
            (flash_ms(&clip) - flash).abs() <= 1,
            "{name}: flash at {} ms, expected {flash}",
            flash_ms(&clip)
        );
        assert!(
            (beep_ms(&clip) - beep).abs() <= 10,
            "{name}: beep at {} ms, expected {beep}",
            beep_ms(&clip)
        );
        let pcm = clip.audio.as_ref().unwrap();
        let seconds = pcm.samples.len() as f64 / f64::from(PCM_SAMPLE_RATE);
        assert!(
            (1.9..2.1).contains(&seconds),
            "{name}: {seconds} s of audio"
        );
    }
}

#[test]
fn iphone_portrait_rotation_is_applied() {
    let clip = decode_video(&media("h264_aac_rotated90.mp4"), &all_frames()).unwrap();
    assert_eq!(clip.info.rotation, Rotation::Clockwise90);
    let frame = &clip.frames[0];
    assert_eq!((frame.width, frame.height), (240, 320));
    // The coded top-left red square shows at the top-right once upright.
    assert!(red(pixel(frame, 235, 4)), "{:?}", pixel(frame, 235, 4));
    assert!(!red(pixel(frame, 4, 4)));
}

#[test]
fn samplers_choose_frames_without_converting_the_rest() {
    let bytes = media("h264_aac.mp4");
    let evenly = decode_video(
        &bytes,
        &DecodeOptions {
            sampler: FrameSampler::Evenly(5),
            ..DecodeOptions::default()
        },
    )
    .unwrap();
    let times: Vec<i64> = evenly
        .frames
        .iter()
        .map(|frame| frame.timestamp_ms)
        .collect();
    assert_eq!(times, vec![0, 480, 1000, 1480, 1960]);
    let five_fps = decode_video(
        &bytes,
        &DecodeOptions {
            sampler: FrameSampler::MaxFps(5.0),
            ..DecodeOptions::default()
        },
    )
    .unwrap();
    assert_eq!(five_fps.frames.len(), 10);
    assert_eq!(five_fps.frames[5].timestamp_ms, 1000);
    let no_audio = decode_video(
        &bytes,
        &DecodeOptions {
            audio: false,
            ..DecodeOptions::default()
        },
    )
    .unwrap();
    assert!(no_audio.audio.is_none());
}

#[test]
fn a_video_without_audio_decodes_with_audio_missing() {
    let clip = decode_video(&media("h264_noaudio.mp4"), &all_frames()).unwrap();
    assert_eq!(clip.frames.len(), 50);
    assert!(clip.audio.is_none());
    assert_eq!(clip.info.audio_codec, None);
    assert!(matches!(
        decode_audio(&media("h264_noaudio.mp4"), &DecodeLimits::default()),
        Err(MediaError::NoAudioTrack)
    ));
}

#[test]
#[cfg(not(feature = "hevc"))]
fn hevc_names_the_feature_that_adds_it() {
    let error = decode_video(&media("hevc_aac.mp4"), &all_frames()).unwrap_err();
    assert_eq!(
        error,
        MediaError::UnsupportedCodec {
            codec: "HEVC".into(),
            feature: Some("hevc")
        }
    );
    assert_eq!(
        error.to_string(),
        "unsupported codec HEVC (enable the cargo feature \"hevc\")"
    );
}

#[test]
fn audio_files_decode_to_16k_mono() {
    for (name, codec) in [
        ("tone.wav", AudioCodec::Pcm),
        ("tone.flac", AudioCodec::Flac),
        ("tone_opus.ogg", AudioCodec::Opus),
        ("tone_vorbis.ogg", AudioCodec::Vorbis),
        ("tone.m4a", AudioCodec::Aac),
        ("tone_opus.webm", AudioCodec::Opus),
    ] {
        let (pcm, info) = decode_audio(&media(name), &DecodeLimits::default())
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(info.audio_codec, Some(codec), "{name}");
        let seconds = pcm.samples.len() as f64 / f64::from(PCM_SAMPLE_RATE);
        assert!((seconds - 1.0).abs() < 0.03, "{name}: {seconds} s");
        let rms = |range: std::ops::Range<usize>| {
            let part = &pcm.samples[range];
            (part.iter().map(|x| x * x).sum::<f32>() / part.len() as f32).sqrt()
        };
        assert!(
            (rms(1_000..7_000) - 0.354).abs() < 0.03,
            "{name}: tone rms {}",
            rms(1_000..7_000)
        );
        assert!(
            rms(9_000..15_000) < 0.01,
            "{name}: silence rms {}",
            rms(9_000..15_000)
        );
    }
}

#[test]
fn images_come_out_upright_in_rgb() {
    for name in [
        "marker.jpg",
        "marker.png",
        "marker_16bit.png",
        "marker_rgba.png",
        "marker_cmyk.jpg",
        "marker_exif6.jpg",
    ] {
        let frame = decode_image(&media(name), &ImageLimits::default())
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!((frame.width, frame.height), (64, 48), "{name}");
        assert!(
            red(pixel(&frame, 3, 3)),
            "{name}: top-left {:?}",
            pixel(&frame, 3, 3)
        );
        let blue = pixel(&frame, 60, 44);
        assert!(
            blue[2] > 200 && blue[0] < 60,
            "{name}: bottom-right {blue:?}"
        );
        assert!(
            pixel(&frame, 20, 10).iter().all(|&value| value > 240),
            "{name}: white {:?}",
            pixel(&frame, 20, 10)
        );
    }
    let grey = decode_image(&media("marker_grey.png"), &ImageLimits::default()).unwrap();
    assert_eq!(pixel(&grey, 3, 3), &[76, 76, 76]);
}

#[test]
fn bad_media_is_a_clear_error_never_a_panic() {
    let options = DecodeOptions::default();
    assert_eq!(decode_video(&[], &options), Err(MediaError::Empty));
    assert!(matches!(
        decode_video(b"just some text, not a video", &options),
        Err(MediaError::UnknownFormat { .. })
    ));
    assert!(matches!(
        decode_video(&media("tone.wav"), &options),
        Err(MediaError::UnknownFormat { .. })
    ));
    assert!(matches!(
        decode_video(&media("tone.m4a"), &options),
        Err(MediaError::NoVideoTrack)
    ));
    for name in [
        "h264_aac.mp4",
        "h264_aac_fragmented.mp4",
        "h264_aac.mov",
        "vp8_opus.webm",
        "vp9_opus.mkv",
        "h264_aac.mkv",
    ] {
        let bytes = media(name);
        for cut in [8, 64, bytes.len() / 3, bytes.len() / 2, bytes.len() - 7] {
            // A cut file is an error or a shorter clip; it must not panic.
            if let Ok(clip) = decode_video(&bytes[..cut], &all_frames()) {
                assert!(clip.frames.len() <= 50, "{name} cut at {cut}");
            }
        }
        let mut flipped = bytes.clone();
        for index in (100..flipped.len()).step_by(97) {
            flipped[index] ^= 0x5A;
        }
        let _ = decode_video(&flipped, &all_frames());
    }
    let small = DecodeOptions {
        limits: DecodeLimits {
            max_dimension: 200,
            ..DecodeLimits::default()
        },
        ..options
    };
    assert!(matches!(
        decode_video(&media("h264_aac.mp4"), &small),
        Err(MediaError::LimitExceeded {
            what: "frame width",
            ..
        })
    ));
    let few = DecodeOptions {
        sampler: FrameSampler::All,
        limits: DecodeLimits {
            max_output_frames: 10,
            ..DecodeLimits::default()
        },
        ..options
    };
    assert!(matches!(
        decode_video(&media("h264_aac.mp4"), &few),
        Err(MediaError::LimitExceeded { .. })
    ));
}

/// Large pictures are shrunk as they decode, a clip's frames have a byte budget checked before
/// decoding, and pictures larger than any phone records are refused before decoding: a
/// decompression bomb (30 s of 4096x4096 in 227 KB) cannot make decoding allocate gigabytes.
#[test]
fn large_pictures_are_shrunk_budgeted_or_refused_before_decoding() {
    let uhd = media("uhd_4k.mp4");
    let clip = decode_video(&uhd, &DecodeOptions::default()).expect("4K decodes");
    assert_eq!(clip.info.coded_width, 3840);
    // 3840 / 1280 = 3: every frame is 1280x720, each pixel the mean of a 3x3 block.
    assert!(!clip.frames.is_empty());
    assert!(clip
        .frames
        .iter()
        .all(|frame| (frame.width, frame.height) == (1280, 720)));
    // Kept whole, five seconds at 10 fps would hold 1.2 GB: refused before decoding.
    let whole = DecodeOptions {
        max_side: 0,
        ..DecodeOptions::default()
    };
    match decode_video(&uhd, &whole) {
        Err(MediaError::LimitExceeded { what, value, limit }) => {
            assert_eq!(what, "bytes of decoded frames");
            assert_eq!(value, 50 * 3840 * 2160 * 3);
            assert_eq!(limit, 512 * 1024 * 1024);
        }
        other => panic!("{other:?}"),
    }
    let bomb = media("bomb_4096.mp4");
    assert_eq!(
        decode_video(&bomb, &DecodeOptions::default()).map(|_| ()),
        Err(MediaError::LimitExceeded {
            what: "picture size in pixels",
            value: 4096 * 4096,
            limit: 4096 * 2304,
        })
    );
    // Without the container's limit, the H.264 decoder refuses the sequence parameter set:
    // 65536 macroblocks is over level 5.2's largest frame.
    let unlimited = DecodeOptions {
        limits: DecodeLimits {
            max_pixels: u64::MAX,
            max_frame_bytes: usize::MAX,
            ..DecodeLimits::default()
        },
        ..DecodeOptions::default()
    };
    match decode_video(&bomb, &unlimited) {
        Err(MediaError::LimitExceeded { what, value, .. }) => {
            assert_eq!(what, "H.264 picture size in macroblocks");
            assert_eq!(value, 65_536);
        }
        other => panic!("{:?}", other.map(|clip| clip.frames.len())),
    }
}

fn talking_grid() -> Option<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/talking-grid");
    if folder.is_dir() {
        Some(folder)
    } else {
        // Written to stderr directly: the test harness captures eprintln! of passing tests.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "\n*** NOTE: {} not found: the real-clip decode test did not run ***\n",
            folder.display()
        );
        None
    }
}

#[test]
fn real_talking_clips_decode_in_both_formats() {
    let Some(folder) = talking_grid() else { return };
    let list = std::fs::read_to_string(folder.join("clips.csv")).unwrap();
    let mut clips = 0;
    for line in list.lines().skip(1) {
        let mut fields = line.split(',');
        let (mp4, webm) = (fields.next().unwrap(), fields.next().unwrap());
        let options = DecodeOptions {
            sampler: FrameSampler::MaxFps(10.0),
            ..DecodeOptions::default()
        };
        let a = decode_video(&std::fs::read(folder.join(mp4)).unwrap(), &options)
            .unwrap_or_else(|error| panic!("{mp4}: {error}"));
        let b = decode_video(&std::fs::read(folder.join(webm)).unwrap(), &options)
            .unwrap_or_else(|error| panic!("{webm}: {error}"));
        for (name, clip) in [(mp4, &a), (webm, &b)] {
            assert!(
                clip.frames.len() >= 20,
                "{name}: {} frames",
                clip.frames.len()
            );
            let audio = clip
                .audio
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: no audio"));
            let seconds = audio.samples.len() as f64 / 16_000.0;
            assert!(
                (2.0..4.5).contains(&seconds),
                "{name}: {seconds} s of audio"
            );
            let loudest = audio.samples.iter().fold(0.0f32, |max, x| max.max(x.abs()));
            assert!(loudest > 0.05, "{name}: speech is missing (peak {loudest})");
        }
        assert_eq!(
            (a.frames[0].width, a.frames[0].height),
            (b.frames[0].width, b.frames[0].height)
        );
        assert!(
            (a.info.duration_ms - b.info.duration_ms).abs() < 150,
            "{mp4}: {} vs {} ms",
            a.info.duration_ms,
            b.info.duration_ms
        );
        clips += 1;
    }
    assert_eq!(clips, 11);
}
