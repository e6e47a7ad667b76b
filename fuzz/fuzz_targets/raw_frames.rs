//! The host-frame path of the C ABI: `vouch_clip_from_raw` with fuzzer-chosen formats, sizes,
//! row and pixel strides (up to `usize::MAX`), plane lengths, rotations and audio parameters, the
//! planes pointing into the input. Every call must return a documented status (never the caught
//! panic, 100) and a clip that, when returned, has consistent frames.
#![no_main]

use std::ptr;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use vouch_ffi::{
    vouch_audio, vouch_clip, vouch_clip_frame, vouch_clip_frame_count, vouch_clip_free,
    vouch_clip_from_raw, vouch_engine, vouch_engine_new, vouch_frame, vouch_plane,
    vouch_rgb_frame, vouch_status,
};

struct Engine(*mut vouch_engine);
// SAFETY: the engine is thread-safe by its contract; libFuzzer runs one input at a time.
unsafe impl Send for Engine {}
unsafe impl Sync for Engine {}

fn engine() -> *const vouch_engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let options = c"{\"database\":\":memory:\",\"template_key\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\",\"threads\":1}";
            let mut engine = ptr::null_mut();
            // SAFETY: valid NUL-terminated options and a writable out pointer.
            let status = unsafe { vouch_engine_new(options.as_ptr(), &mut engine) };
            assert_eq!(status, vouch_status::Ok);
            Engine(engine)
        })
        .0
}

/// The audio sample rates drawn: the edges of the accepted range (4,000..=384,000 Hz) on both
/// sides, and the rates devices record at. Arbitrary rates are left to `audio_file` (whose headers
/// carry any rate) and the resampler's unit tests: a rate sharing no factor with 16 kHz plans
/// FFTs of hundreds of thousands of points, 14 ms an execution under coverage instrumentation,
/// which held this target to 70 executions a second.
const RATES: [u32; 16] = [
    0, 3_999, 4_000, 8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000,
    96_000, 192_000, 384_000, 384_001,
];

/// Reads fields from the front of the input; missing bytes read as zero.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let take = N.min(self.0.len());
        out[..take].copy_from_slice(&self.0[..take]);
        self.0 = &self.0[take..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.bytes::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.bytes())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes())
    }
    /// A stride: small most of the time, anything (up to `usize::MAX`) when the flag byte says so.
    fn stride(&mut self) -> usize {
        let flag = self.u8();
        if flag & 0x80 != 0 {
            u64::from_le_bytes(self.bytes()) as usize
        } else {
            usize::from(self.u16())
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut reader = Reader(data);
    let n_frames = usize::from(reader.u8() % 4);
    let mut frames = Vec::with_capacity(n_frames);
    for _ in 0..n_frames {
        let format = u32::from(reader.u8() % 8);
        let width = u32::from(reader.u16() % 256);
        let height = u32::from(reader.u16() % 256);
        let n_planes = u32::from(reader.u8() % 4);
        let rotation_degrees = u32::from(reader.u16());
        let limited_range = u32::from(reader.u8() & 1);
        let timestamp_ms = i64::from(reader.u32() as i32);
        let mut planes = [vouch_plane {
            data: ptr::null(),
            len: 0,
            row_stride: 0,
            pixel_stride: 0,
        }; 3];
        for plane in &mut planes {
            plane.row_stride = reader.stride();
            plane.pixel_stride = reader.stride();
            plane.len = reader.u32() as usize;
        }
        frames.push(vouch_frame {
            format,
            width,
            height,
            planes,
            n_planes,
            rotation_degrees,
            limited_range,
            timestamp_ms,
        });
    }
    let audio_header = (reader.u8(), reader.u32(), reader.u8(), reader.u16());
    // Every plane and the audio point into what is left, each no longer than it.
    let pixels = reader.0;
    for frame in &mut frames {
        for plane in &mut frame.planes {
            plane.len = plane.len.min(pixels.len());
            plane.data = if plane.len == 0 && audio_header.3 & 1 == 1 {
                ptr::null()
            } else {
                pixels.as_ptr()
            };
        }
    }
    let audio = vouch_audio {
        data: pixels.as_ptr(),
        len: usize::from(audio_header.3).min(pixels.len()),
        sample_format: u32::from(audio_header.0 % 4),
        sample_rate: RATES[audio_header.1 as usize % RATES.len()],
        channels: u32::from(audio_header.2 % 10),
        timestamp_ms: 0,
    };
    let with_audio = audio_header.0 & 0x80 != 0;
    let mut clip: *mut vouch_clip = ptr::null_mut();
    // SAFETY: every plane points into `pixels` and is no longer than it; the audio too.
    let status = unsafe {
        vouch_clip_from_raw(
            engine(),
            frames.as_ptr(),
            frames.len(),
            if with_audio { &audio } else { ptr::null() },
            &mut clip,
        )
    };
    assert_ne!(status, vouch_status::Panic, "a panic was caught");
    if status == vouch_status::Ok {
        assert!(!clip.is_null());
        // SAFETY: a live clip from the call above, freed once below.
        unsafe {
            let count = vouch_clip_frame_count(clip);
            assert_eq!(count, frames.len());
            for index in 0..count {
                let mut frame = vouch_rgb_frame {
                    width: 0,
                    height: 0,
                    timestamp_ms: 0,
                    rgb: ptr::null(),
                    len: 0,
                };
                assert_eq!(vouch_clip_frame(clip, index, &mut frame), vouch_status::Ok);
                assert_eq!(frame.len, frame.width as usize * frame.height as usize * 3);
            }
            vouch_clip_free(clip);
        }
    } else {
        assert!(clip.is_null());
    }
});
