//! Asynchronous video-forgery analysis (`avf/infer`): an upload is stored sealed and answered at
//! once ([`Forgery::submit`]); the host's pump analyses it later ([`Forgery::run`], called
//! by [`crate::service::pump::Pump::run`] before the outbound jobs), records the verdict, drops the video and
//! queues `avf.completed`; [`Forgery::get`] reads where it stands. The analysis itself is
//! [`Forgery::analyze`]: one decoding pass gives the face track and the audio, then the
//! signals of `bio::video::forgery` are measured and fused. `docs/avf.md` has the rules and the
//! measurements.

use crate::auth::ApiKey;
use crate::error::{Error, Result};
use crate::service::events::{self, AvfCompleted, Event};
use crate::service::pump::LEASE_MS;
pub use crate::service::store::AvfStatus;
use crate::service::store::{AvfRow, Tx};
use crate::service::video::{bad_frame, decode_options, model_error, no_frames, speech_span};
use crate::service::Engine;
use vouch_bio::{
    face_crop, judge_forgery, FaceCrop, FaceModels, FaceTrack, FaceTracker, ForgeryEvidence,
    ForgeryVerdict, GrayFrame, RgbImage, Signals, Visemes,
};
use vouch_media::{open_video, VideoFile};

/// Longest an upload waits for its analysis: 24 hours.
pub const AVF_UPLOAD_RETENTION_MS: i64 = 24 * 3_600_000;
/// How long a record (status and verdict) is kept: 30 days.
pub const AVF_RECORD_RETENTION_MS: i64 = 30 * 24 * 3_600_000;
/// Most uploads of one project waiting for their analysis (stored and not yet analysed).
pub const AVF_MAX_WAITING: i64 = 32;
/// Most bytes of one project's waiting uploads (1 GiB: ten of the largest the spec allows), so a
/// client that uploads faster than the pump analyses cannot fill the device's storage.
pub const AVF_MAX_WAITING_BYTES: i64 = 1 << 30;
/// Claims of one analysis before it fails (the analysis itself never retries a verdict: only a
/// pump that died mid-way makes another claim).
pub const AVF_MAX_ATTEMPTS: i64 = 3;

/// An analysis claimed by a pump: its row and the opened upload.
#[derive(Debug)]
struct AvfClaim {
    /// The row, as claimed (status `processing`).
    row: AvfRow,
    /// The video.
    video: Vec<u8>,
}

/// Most frames kept for the mouth-detail signal and the face crops, spread over the clip.
const DETAIL_FRAMES: usize = 24;

/// An upload for analysis.
#[derive(Debug, Clone, Copy)]
pub struct AvfUpload<'a> {
    /// The request id the record will have (`data.metadata.request_id`).
    pub request_id: &'a str,
    /// `X-User-Fullname`, if given (a consent withdrawal of this user drops the upload).
    pub fullname: Option<&'a str>,
    /// `X-Session-ID`, if given.
    pub session_id: Option<&'a str>,
    /// The file name the client gave (empty when none).
    pub source_filename: &'a str,
    /// The video.
    pub video: &'a [u8],
}

/// An analysis: where it stands and, once completed, its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct AvfRecord {
    /// The request id.
    pub request_id: String,
    /// `pending`, `processing`, `completed` or `failed`.
    pub status: AvfStatus,
    /// The upload's file name.
    pub source_filename: String,
    /// `X-Session-ID` of the upload.
    pub session_id: Option<String>,
    /// When the upload was received, ms since the Unix epoch.
    pub received_at_ms: i64,
    /// When the (last) analysis began.
    pub started_at_ms: Option<i64>,
    /// When it completed or failed.
    pub completed_at_ms: Option<i64>,
    /// The verdict, once completed.
    pub verdict: Option<ForgeryVerdict>,
    /// Why it failed.
    pub error: Option<String>,
}

impl From<AvfRow> for AvfRecord {
    fn from(row: AvfRow) -> AvfRecord {
        AvfRecord {
            request_id: row.id,
            status: row.status,
            source_filename: row.source_filename,
            session_id: row.session_id,
            received_at_ms: row.received_at,
            started_at_ms: row.started_at,
            completed_at_ms: row.completed_at,
            verdict: row
                .result
                .as_deref()
                .and_then(|text| serde_json::from_str(text).ok()),
            error: row.error,
        }
    }
}

/// The `avf.completed` event: the request, how it ended and the verdict's summary (no media, no
/// per-signal values).
fn completed_event(row: &AvfRow) -> Event {
    let record = AvfRecord::from(row.clone());
    let verdict = record.verdict.as_ref();
    Event::AvfCompleted(AvfCompleted {
        request_id: record.request_id.clone(),
        session_id: record.session_id.clone(),
        user_fullname: row.user_fullname.clone(),
        status: record.status.as_str(),
        prediction: verdict.map(|v| v.prediction),
        confidence: verdict.map(|v| f64::from(v.confidence)),
        score: verdict.map(|v| f64::from(v.score)),
        reasons: verdict.map(|v| v.reasons.clone()),
        error: record.error.clone(),
    })
}

/// Ends an analysis still waiting or running, in the caller's transaction: `completed` with
/// `result`, or `failed` with `error`; its upload is dropped and `avf.completed` queued. Returns
/// whether it ended here (an analysis ended by housekeeping or a consent withdrawal is left).
fn end_analysis(
    tx: &Tx<'_>,
    id: &str,
    result: Option<&str>,
    error: Option<&str>,
    now_ms: i64,
) -> Result<bool> {
    let Some(row) = tx.end_analysis(id, result, error, now_ms)? else {
        return Ok(false);
    };
    events::queue(tx, &row.project_id, &completed_event(&row), now_ms)?;
    Ok(true)
}

impl Engine {
    /// Housekeeping, then the oldest analysis due: `pending`, or `processing` with its lease
    /// run out. It becomes `processing` with a lease until `now_ms + lease_ms` and one more
    /// attempt. First, in the same transaction: analyses whose leases ran out
    /// [`AVF_MAX_ATTEMPTS`] times fail, uploads older than [`AVF_UPLOAD_RETENTION_MS`] are
    /// dropped and their analyses fail (`avf.completed` is queued for each), and records older
    /// than [`AVF_RECORD_RETENTION_MS`] go. An upload that no longer opens (another key) fails.
    fn claim_avf(&self, now_ms: i64, lease_ms: i64) -> Result<Option<AvfClaim>> {
        let claimed = self.store.atomically(|tx| {
            let received_before = now_ms - AVF_UPLOAD_RETENTION_MS;
            for (id, attempts) in tx.doomed_analyses(now_ms, received_before, AVF_MAX_ATTEMPTS)? {
                let why = if attempts >= AVF_MAX_ATTEMPTS {
                    "the analysis was interrupted repeatedly and was given up"
                } else {
                    "the upload was not analysed within 24 hours and was deleted"
                };
                end_analysis(tx, &id, None, Some(why), now_ms)?;
            }
            tx.delete_analyses_ended_before(now_ms - AVF_RECORD_RETENTION_MS)?;
            let Some((row, sealed)) = tx.next_analysis(now_ms)? else {
                return Ok(None);
            };
            let started = tx.start_analysis(row, now_ms + lease_ms, now_ms)?;
            Ok(started.map(|row| (row, sealed)))
        })?;
        let Some((row, sealed)) = claimed else {
            return Ok(None);
        };
        match self.store.open_upload(&row, &sealed) {
            Ok(video) => Ok(Some(AvfClaim { row, video })),
            Err(Error::TemplateUnreadable) => {
                let why = "the upload cannot be opened with this engine's key";
                self.store
                    .atomically(|tx| end_analysis(tx, &row.id, None, Some(why), now_ms))?;
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }
}

/// What the decoding pass of a forgery analysis keeps: the face track, every frame's time, and
/// what `keep` made of up to [`DETAIL_FRAMES`] frames (with their index), evenly spread.
struct Pictures<T> {
    track: FaceTrack,
    timestamps: Vec<i64>,
    kept: Vec<(usize, T)>,
}

/// Decodes the frames of `file`, tracking the face in each and keeping a few as `keep` makes
/// them (the analysis keeps luma only, a third of the frame).
fn pictures<T>(
    faces: &FaceModels,
    file: &VideoFile,
    mut keep: impl FnMut(&RgbImage) -> Result<T>,
) -> Result<Pictures<T>> {
    let expected = file.frame_count();
    if expected == 0 {
        return Err(no_frames());
    }
    let keep_every = expected.div_ceil(DETAIL_FRAMES).max(1);
    let mut tracker = FaceTracker::new(faces, expected, true);
    let mut timestamps = Vec::with_capacity(expected);
    let mut kept = Vec::new();
    file.decode_frames(|frame| {
        let index = timestamps.len();
        timestamps.push(frame.timestamp_ms);
        let image = RgbImage::from_frame(frame).ok_or_else(bad_frame)?;
        if index % keep_every == 0 {
            kept.push((index, keep(&image)?));
        }
        tracker.push(image).map_err(model_error)
    })?;
    Ok(Pictures {
        track: tracker.finish().map_err(model_error)?,
        timestamps,
        kept,
    })
}

/// The aligned crops of the kept frames that have a tracked face.
fn face_crops(track: &FaceTrack, kept: &[(usize, RgbImage)]) -> Vec<FaceCrop> {
    kept.iter()
        .filter_map(|(index, image)| {
            let face = track.faces.get(*index)?.as_ref()?;
            face_crop(image, &face.landmarks)
        })
        .collect()
}

/// Asynchronous video-forgery analysis: uploads, their analyses, verdicts ([`Engine::forgery`]).
#[derive(Debug, Clone, Copy)]
pub struct Forgery<'e>(pub(super) &'e Engine);

impl Engine {
    /// Asynchronous video-forgery analysis: uploads, their analyses, verdicts.
    pub fn forgery(&self) -> Forgery<'_> {
        Forgery(self)
    }
}

impl Forgery<'_> {
    /// Stores `upload` sealed as a `pending` analysis and returns its record, without analysing
    /// it: the host's pump does that ([`Forgery::run`]). The engine needs its models
    /// ([`Error::Model`]), the video must be a video container ([`Error::InvalidArgument`]), and
    /// the project may have at most [`AVF_MAX_WAITING`] uploads or [`AVF_MAX_WAITING_BYTES`]
    /// waiting ([`Error::Conflict`], 409); it is kept at most
    /// [`AVF_UPLOAD_RETENTION_MS`] and dropped when its analysis ends.
    pub fn submit(&self, key: &ApiKey, upload: &AvfUpload<'_>) -> Result<AvfRecord> {
        let engine = self.0;
        // Refused now rather than failed later: an engine without models can never analyse it.
        if engine.models_dir().is_none() {
            return Err(Error::Model(
                "video forgery analysis needs models: open the engine with models_dir".to_owned(),
            ));
        }
        if !vouch_media::is_video_container(upload.video) {
            return Err(Error::InvalidArgument(
                "invalid file format: file must be an MP4, MOV, WebM or Matroska video".to_owned(),
            ));
        }
        let row = AvfRow {
            id: upload.request_id.to_owned(),
            project_id: key.project_id.clone(),
            user_fullname: upload.fullname.map(str::to_owned),
            session_id: upload.session_id.map(str::to_owned),
            source_filename: upload.source_filename.to_owned(),
            status: AvfStatus::Pending,
            upload_bytes: upload.video.len() as i64,
            attempts: 0,
            result: None,
            error: None,
            received_at: engine.now_ms(),
            started_at: None,
            completed_at: None,
        };
        engine
            .store
            .insert_avf(&row, upload.video, AVF_MAX_WAITING, AVF_MAX_WAITING_BYTES)?;
        Ok(row.into())
    }

    /// The analysis `request_id` of the key's project ([`Error::NotFound`] for an unknown id or
    /// another project's).
    pub fn get(&self, key: &ApiKey, request_id: &str) -> Result<AvfRecord> {
        let engine = self.0;
        engine
            .store
            .avf(&key.project_id, request_id)?
            .map(AvfRecord::from)
            .ok_or_else(|| Error::NotFound("avf request not found".to_owned()))
    }

    /// Analyses up to `max` uploads that are due, oldest first, one at a time (each analysis uses
    /// the whole pool), recording each verdict (or why it failed) and queueing `avf.completed`.
    /// Safe to call from several threads or processes: an analysis is claimed by one at a time.
    /// Returns how many were analysed.
    pub fn run(&self, max: usize) -> Result<usize> {
        let engine = self.0;
        let mut done = 0;
        while done < max {
            let Some(claim) = engine.claim_avf(engine.now_ms(), LEASE_MS)? else {
                break;
            };
            let (result, error) = match engine.forgery().analyze(&claim.video) {
                Ok(verdict) => (
                    Some(serde_json::to_string(&verdict).map_err(|error| {
                        Error::Storage(format!("the verdict did not serialise: {error}"))
                    })?),
                    None,
                ),
                // The video cannot be analysed (not decodable, no frames, too long): the request
                // fails with the reason; retrying would give the same answer.
                Err(error @ (Error::InvalidArgument(_) | Error::Media(_))) => {
                    (None, Some(error.to_string()))
                }
                // Anything else (a model failure, storage) is the engine's: left to the lease, so
                // the next pump tries again, up to AVF_MAX_ATTEMPTS claims.
                Err(error) => return Err(error),
            };
            drop(claim.video);
            let now = engine.now_ms();
            engine.store.atomically(|tx| {
                end_analysis(tx, &claim.row.id, result.as_deref(), error.as_deref(), now)
            })?;
            done += 1;
        }
        Ok(done)
    }

    /// The forgery verdict of a video file: one decoding pass (the face track with a few
    /// embeddings, up to [`DETAIL_FRAMES`] frames kept, the audio), then the synthetic-voice
    /// detector on the speech, lip sync, mouth detail, the streams' timing and the face's
    /// identity over the clip, fused by `vouch_bio::judge_forgery`. Memory stays bounded like
    /// process-video's analysis: frames are analysed as they decode.
    pub fn analyze(&self, video: &[u8]) -> Result<ForgeryVerdict> {
        let engine = self.0;
        let faces = engine.face_models()?;
        let voices = engine.voice_models()?;
        let detector = engine.spoof_detector()?;
        engine.install(|| {
            let file = open_video(video, &decode_options())?;
            if file.frame_count() == 0 {
                return Err(no_frames());
            }
            let pcm = file.decode_audio()?;
            let samples: &[f32] = pcm.as_ref().map_or(&[], |pcm| &pcm.samples);
            let (pictures, audio) = rayon::join(
                || {
                    pictures(faces, &file, |image| {
                        GrayFrame::from_rgb(image.width, image.height, &image.rgb)
                            .ok_or_else(bad_frame)
                    })
                },
                || {
                    if samples.is_empty() {
                        return Ok((Vec::new(), None, Visemes::default()));
                    }
                    let (speech, visemes) =
                        rayon::join(|| voices.speech(samples), || engine.visemes_of(samples));
                    let ((segments, _), visemes) = (speech?, visemes?);
                    let synthetic = match speech_span(&segments, samples.len()) {
                        Some((start, _)) => Some(detector.check(&samples[start..])?),
                        None => None,
                    };
                    Ok((segments, synthetic, visemes))
                },
            );
            let Pictures {
                track,
                timestamps,
                kept,
            } = pictures?;
            let (segments, synthetic, visemes) = audio.map_err(model_error)?;
            let signals =
                Signals::new(&track, &timestamps, pcm.as_ref(), &segments, Some(&visemes));
            Ok(judge_forgery(&ForgeryEvidence {
                signals: &signals,
                track: &track,
                timestamps: &timestamps,
                details: &kept,
                audio_samples: samples.len(),
                synthetic: synthetic.as_ref(),
            }))
        })
    }

    /// The eye-aligned face crops (`bio::face::crop`) of the frames the forgery analysis keeps
    /// (up to [`DETAIL_FRAMES`], spread over the clip) that have a tracked face: what
    /// `vouch eval face-crops` writes for training studies (`models/blend-study`), so that a
    /// detector learns from exactly the pictures an analysis has.
    pub fn face_crops(&self, video: &[u8]) -> Result<Vec<FaceCrop>> {
        let engine = self.0;
        let faces = engine.face_models()?;
        engine.install(|| {
            let file = open_video(video, &decode_options())?;
            let Pictures { track, kept, .. } = pictures(faces, &file, |image| Ok(image.clone()))?;
            Ok(face_crops(&track, &kept))
        })
    }
}
