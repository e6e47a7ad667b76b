//! Media on the engine: decode files and convert host frames on the engine's own worker pool, so
//! that the video and audio branches of one decode run in parallel without touching rayon's
//! global pool.

use crate::error::Result;
use crate::service::Engine;
use vouch_media::raw::{frame_from_raw, pcm_from_raw, RawAudio, RawFrame};
use vouch_media::{
    decode_audio, decode_video, Clip, Container, DecodeLimits, DecodeOptions, MediaError,
    MediaInfo, Pcm, DEFAULT_MAX_FRAME_BYTES,
};

/// Prefixes a host-input error with which input it was about.
fn name_input(error: MediaError, input: &str) -> MediaError {
    match error {
        MediaError::InvalidRaw(message) => MediaError::InvalidRaw(format!("{input}: {message}")),
        other => other,
    }
}

/// Media: decoding video and audio files, and frames and audio the host decoded
/// ([`Engine::media`]).
#[derive(Debug, Clone, Copy)]
pub struct Media<'e>(pub(in crate::service) &'e Engine);

impl Engine {
    /// Media: decoding video and audio files, and frames and audio the host decoded.
    pub fn media(&self) -> Media<'_> {
        Media(self)
    }
}

impl Media<'_> {
    /// Decodes a video file (MP4, MOV, fragmented MP4, WebM, Matroska) into a [`Clip`].
    pub fn decode_video(&self, bytes: &[u8], options: &DecodeOptions) -> Result<Clip> {
        let engine = self.0;
        Ok(engine.install(|| decode_video(bytes, options))?)
    }

    /// Decodes an audio file (WAV, FLAC, Ogg Opus/Vorbis, M4A, WebM) into 16 kHz mono.
    pub fn decode_audio(&self, bytes: &[u8], limits: &DecodeLimits) -> Result<(Pcm, MediaInfo)> {
        let engine = self.0;
        Ok(engine.install(|| decode_audio(bytes, limits))?)
    }

    /// Builds a [`Clip`] from frames and audio the host decoded itself; the inputs are copied, at
    /// most [`DEFAULT_MAX_FRAME_BYTES`] of RGB.
    pub fn clip_from_raw(
        &self,
        frames: &[RawFrame<'_>],
        audio: Option<&RawAudio<'_>>,
    ) -> Result<Clip> {
        let engine = self.0;
        use rayon::prelude::*;
        // The copies must fit the same budget as a decoded clip's frames; checked before any is made.
        let bytes = frames.iter().fold(0u64, |total, frame| {
            total.saturating_add(
                u64::from(frame.width)
                    .saturating_mul(u64::from(frame.height))
                    .saturating_mul(3),
            )
        });
        let limit = DEFAULT_MAX_FRAME_BYTES as u64;
        if bytes > limit {
            return Err(MediaError::LimitExceeded {
                what: "bytes of frames",
                value: bytes,
                limit,
            }
            .into());
        }
        let converted = engine.install(|| {
            frames
                .par_iter()
                .enumerate()
                .map(|(index, frame)| {
                    frame_from_raw(frame)
                        .map_err(|error| name_input(error, &format!("frames[{index}]")))
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        let audio = audio
            .map(|audio| pcm_from_raw(audio).map_err(|error| name_input(error, "audio")))
            .transpose()?;
        let (coded_width, coded_height) = frames
            .first()
            .map_or((0, 0), |frame| (frame.width, frame.height));
        let last_ms = converted
            .iter()
            .map(|frame| frame.timestamp_ms)
            .max()
            .unwrap_or(0);
        let audio_end = audio
            .as_ref()
            .map_or(0, |pcm| pcm.start_ms + pcm.duration_ms());
        let info = MediaInfo {
            container: Container::Raw,
            video_codec: None,
            audio_codec: None,
            duration_ms: last_ms.max(audio_end),
            coded_width,
            coded_height,
            rotation: frames
                .first()
                .map(|frame| frame.rotation)
                .unwrap_or_default(),
            video_frame_count: converted.len(),
            audio_sample_rate: audio.as_ref().map(|_| vouch_media::PCM_SAMPLE_RATE),
            audio_channels: audio.as_ref().map(|_| 1),
        };
        let mut converted = converted;
        converted.sort_by_key(|frame| frame.timestamp_ms);
        Ok(Clip {
            frames: converted,
            audio,
            info,
        })
    }
}
