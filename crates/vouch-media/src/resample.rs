//! Audio to the engine's format: [`to_mono_16k`] downmixes interleaved samples and resamples them to
//! [`PCM_SAMPLE_RATE`] with rubato's synchronous FFT resampler (anti-aliased; the ratio between
//! two fixed rates never changes within a file).

use rubato::audioadapter_buffers::owned::InterleavedOwned;
use rubato::{Fft, FixedSync, Resampler};

use super::error::MediaError;
use super::types::PCM_SAMPLE_RATE;

/// Frames per FFT chunk: large enough for good frequency resolution, small enough to keep the
/// trimmed start-up delay negligible on short clips.
const CHUNK_FRAMES: usize = 1024;

/// Averages `channels` interleaved channels into one.
pub(crate) fn downmix(interleaved: &[f32], channels: u16) -> Vec<f32> {
    let channels = usize::from(channels.max(1));
    if channels == 1 {
        return interleaved.to_vec();
    }
    let scale = 1.0 / channels as f32;
    interleaved
        .chunks_exact(channels)
        .map(|frame| frame.iter().sum::<f32>() * scale)
        .collect()
}

/// Converts interleaved audio at `sample_rate` with `channels` channels into 16 kHz mono. The
/// output length is the input duration at 16 kHz (rounded), with the resampler's delay removed so
/// that sample times line up with the source.
pub(crate) fn to_mono_16k(
    interleaved: &[f32],
    sample_rate: u32,
    channels: u16,
) -> Result<Vec<f32>, MediaError> {
    if sample_rate == 0 || channels == 0 {
        return Err(MediaError::Malformed(format!(
            "audio with {sample_rate} Hz and {channels} channels"
        )));
    }
    let mono = downmix(interleaved, channels);
    if sample_rate == PCM_SAMPLE_RATE || mono.is_empty() {
        return Ok(mono);
    }
    let mut resampler = Fft::<f32>::new(
        sample_rate as usize,
        PCM_SAMPLE_RATE as usize,
        CHUNK_FRAMES,
        1,
        FixedSync::Input,
    )
    .map_err(|error| {
        MediaError::Malformed(format!("cannot resample from {sample_rate} Hz: {error}"))
    })?;
    let frames = mono.len();
    let input = InterleavedOwned::new_from(mono, 1, frames)
        .map_err(|error| MediaError::Malformed(format!("audio buffer: {error}")))?;
    let output = resampler
        .process_all(&input, frames, None)
        .map_err(|error| MediaError::Malformed(format!("resampling failed: {error}")))?;
    Ok(output.take_data())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sine(frequency: f32, rate: u32, seconds: f32) -> Vec<f32> {
        (0..(rate as f32 * seconds) as usize)
            .map(|index| {
                (2.0 * std::f32::consts::PI * frequency * index as f32 / rate as f32).sin() * 0.5
            })
            .collect()
    }

    fn rms(samples: &[f32]) -> f32 {
        (samples.iter().map(|x| x * x).sum::<f32>() / samples.len().max(1) as f32).sqrt()
    }

    #[test]
    fn common_rates_keep_duration_and_a_passband_tone() {
        for rate in [8_000, 22_050, 44_100, 48_000] {
            let output = to_mono_16k(&sine(1_000.0, rate, 1.0), rate, 1).unwrap();
            let expected = 16_000i64;
            assert!(
                (output.len() as i64 - expected).abs() <= 2,
                "{rate}: {} samples",
                output.len()
            );
            // A 1 kHz tone at amplitude 0.5 keeps its RMS (0.354) away from the edges.
            let middle = &output[2_000..14_000];
            assert!(
                (rms(middle) - 0.3536).abs() < 0.01,
                "{rate}: rms {}",
                rms(middle)
            );
        }
    }

    #[test]
    fn tones_above_8_khz_are_filtered_out() {
        let output = to_mono_16k(&sine(11_000.0, 48_000, 1.0), 48_000, 1).unwrap();
        assert!(
            rms(&output[2_000..14_000]) < 0.01,
            "aliasing: rms {}",
            rms(&output[2_000..14_000])
        );
    }

    #[test]
    fn onsets_stay_in_place() {
        // Silence, then a tone from exactly 0.5 s: the onset must stay at 8000 samples (+- 1 ms).
        let rate = 44_100;
        let mut input = vec![0.0; rate as usize / 2];
        input.extend(sine(1_000.0, rate, 0.5));
        let output = to_mono_16k(&input, rate, 1).unwrap();
        let onset = output
            .windows(16)
            .position(|window| rms(window) > 0.1)
            .unwrap();
        assert!((onset as i64 - 8_000).abs() <= 16, "onset at {onset}");
    }

    #[test]
    fn stereo_is_averaged_and_bad_formats_are_errors() {
        assert_eq!(downmix(&[1.0, 0.0, 0.5, 0.5], 2), vec![0.5, 0.5]);
        assert!(to_mono_16k(&[0.0], 0, 1).is_err());
        assert!(to_mono_16k(&[0.0], 16_000, 0).is_err());
        assert_eq!(to_mono_16k(&[], 48_000, 2).unwrap(), Vec::<f32>::new());
    }
}
