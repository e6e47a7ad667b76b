//! Validation of the media endpoints' multipart parts against the spec: required parts, the 50 MB
//! and 100 MB limits, and accepted file formats (checked by content, and by name and type where the
//! client gave them), and the endpoints that take media.

use super::call::{Call, Handler, Reply};
use super::context::ACTION_TRIGGERS;
use super::endpoint::{Body, Endpoint, Format, Need, PartSpec};
use super::error::ApiError;
use super::Part;
use crate::service::avf::AvfUpload;
use crate::service::face::LiveFace;
use crate::service::process::VideoRequest;
use vouch_bio::Language;

/// Longest text part (`phrase`, `vocabulary`, `trigger`, `language`, `is_document`), in bytes.
const MAX_TEXT_PART_BYTES: usize = 4096;

/// The parts of a checked media request, read by the names its row in the endpoint table
/// declares.
struct Parts<'a> {
    found: Vec<(&'static str, &'a Part)>,
}

impl<'a> Parts<'a> {
    /// The part called `name`, if it was sent.
    fn file(&self, name: &str) -> Option<&'a Part> {
        self.found
            .iter()
            .find(|(declared, _)| *declared == name)
            .map(|(_, part)| *part)
    }

    /// The text of the part called `name` (empty when it was not sent; checked to be UTF-8).
    fn text(&self, name: &str) -> &'a str {
        self.file(name)
            .and_then(|part| std::str::from_utf8(&part.data).ok())
            .unwrap_or_default()
    }

    /// A required part (checked present by [`validate`]).
    fn required(&self, name: &str) -> Result<&'a Part, ApiError> {
        self.file(name)
            .ok_or_else(|| ApiError::bad_request(format!("{name} is required")))
    }
}

/// Checks the parts of a media request against its endpoint's declaration: no unknown or
/// repeated part, no file over the endpoint's limit, every required part there and each in its
/// format.
fn validate<'a>(call: &Call<'a>) -> Result<Parts<'a>, ApiError> {
    let Body::Multipart {
        parts: rules,
        max_file_bytes,
        too_large: (status, message),
    } = call.endpoint.declaration().body
    else {
        return Err(ApiError::new(500, "this endpoint takes no multipart body"));
    };
    let parts = &call.request.parts;
    for (index, part) in parts.iter().enumerate() {
        if !rules.iter().any(|rule| rule.name == part.name) {
            let expected: Vec<&str> = rules.iter().map(|rule| rule.name).collect();
            return Err(ApiError::bad_request(format!(
                "unknown part \"{}\"; expected: {}",
                part.name,
                expected.join(", ")
            )));
        }
        if parts[..index]
            .iter()
            .any(|earlier| earlier.name == part.name)
        {
            return Err(ApiError::bad_request(format!(
                "part \"{}\" is given more than once",
                part.name
            )));
        }
    }
    if parts.iter().any(|part| part.data.len() > max_file_bytes) {
        return Err(ApiError::new(status, message));
    }
    let mut found = Vec::with_capacity(rules.len());
    for rule in rules {
        let required = match rule.need {
            Need::Required => true,
            Need::Optional => false,
            Need::UnlessPrefilledVideo => !call.context.use_prefilled_video,
        };
        match parts.iter().find(|part| part.name == rule.name) {
            None if required => {
                return Err(ApiError::bad_request(format!("{} is required", rule.name)))
            }
            None => {}
            Some(part) => {
                check_part(call.endpoint, rule, required, part)?;
                found.push((rule.name, part));
            }
        }
    }
    Ok(Parts { found })
}

fn check_part(
    endpoint: Endpoint,
    rule: &PartSpec,
    required: bool,
    part: &Part,
) -> Result<(), ApiError> {
    let name = rule.name;
    match rule.format {
        Format::Text | Format::Boolean => {
            if part.data.len() > MAX_TEXT_PART_BYTES {
                return Err(ApiError::bad_request(format!(
                    "{name} is longer than {MAX_TEXT_PART_BYTES} bytes"
                )));
            }
            let text = std::str::from_utf8(&part.data)
                .map_err(|_| ApiError::bad_request(format!("{name} is not valid UTF-8")))?;
            if required && text.trim().is_empty() {
                return Err(ApiError::bad_request(format!("{name} is required")));
            }
            if rule.format == Format::Boolean && !matches!(text.trim(), "true" | "false") {
                return Err(ApiError::bad_request(format!(
                    "{name} must be true or false"
                )));
            }
            Ok(())
        }
        Format::Video | Format::Audio | Format::Image => {
            if part.data.is_empty() {
                return Err(ApiError::bad_request(format!("{name} is empty")));
            }
            let accepted = match rule.format {
                Format::Video => is_video(&part.data),
                Format::Audio => is_audio(&part.data),
                _ => is_image(part),
            };
            if accepted {
                return Ok(());
            }
            Err(ApiError::bad_request(match rule.format {
                Format::Video => format!(
                    "invalid file format: {name} must be an MP4, MOV, WebM or Matroska video"
                ),
                Format::Audio => {
                    format!("invalid file format: {name} must be WAV, FLAC, OGG, M4A or WebM audio")
                }
                _ if endpoint == Endpoint::DocauthCheck => {
                    "invalid file format: only jpg, jpeg and png documents are accepted".to_owned()
                }
                _ => format!("invalid file format: {name} must be a jpg, jpeg, png or webp image"),
            }))
        }
    }
}

/// A video container, by content (`media::is_video_container`).
fn is_video(data: &[u8]) -> bool {
    vouch_media::is_video_container(data)
}

/// An audio container (or a video one: its audio track is used), by content.
fn is_audio(data: &[u8]) -> bool {
    vouch_media::is_audio_container(data)
}

/// JPEG, PNG or WebP, by content (`media::is_image`); the file name and content type the client
/// gave are ignored: phones save WebP photos under a .jpg name.
fn is_image(part: &Part) -> bool {
    vouch_media::is_image(&part.data)
}

/// `POST /api-gateway/enroll/face`: enrolls the largest face of `face` for the user. Both consents
/// are required (403 `authorization consent is required` / `storage consent is required`, checked
/// before the image is processed); no usable face is a 400.
pub(super) fn enroll_face(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let fullname = &call.media_preamble()?;
    let parts = validate(call)?;
    let face = parts.required("face")?;
    let is_document = parts
        .file("is_document")
        .is_some_and(|part| part.data.trim_ascii() == b"true");
    let enrollment = call
        .engine
        .faces()
        .enroll(&call.key.project_id, fullname, &face.data, is_document)
        .map_err(|error| call.error(error))?;
    Ok(Reply::ok(serde_json::json!({
        "message": "face enrolled",
        "data": enrollment,
    })))
}

/// `POST /api-gateway/enroll/voice`: enrolls the speaker of `voice` for the user. Both consents
/// are required (403, checked before the audio is processed); silence, no or too little speech and
/// clipping are a 400 naming the reason. `phrase` is required (the spec's request shape); the
/// speaker model is text-independent, so the phrase is not compared with what was said.
pub(super) fn enroll_voice(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let fullname = &call.media_preamble()?;
    let parts = validate(call)?;
    let voice = parts.required("voice")?;
    let enrollment = call
        .engine
        .voices()
        .enroll(&call.key.project_id, fullname, &voice.data)
        .map_err(|error| call.error(error))?;
    Ok(Reply::ok(serde_json::json!({
        "message": "voice enrolled",
        "data": enrollment,
    })))
}

/// `POST /api-gateway/docauth/check`: the fields of the document's machine-readable zone, where
/// its portrait is, and (with `X-Inhouse-MRZ: true`) the zone's validation. `X-Inhouse-Docauth:
/// false` asks for an external document provider, which an on-device engine cannot reach: 501.
pub(super) fn docauth_check(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.media_preamble()?;
    let parts = validate(call)?;
    if !call.context.inhouse_docauth {
        return Err(ApiError::new(
            501,
            "external document authentication (X-Inhouse-Docauth: false) needs a provider on the \
             network, which an on-device engine does not reach: leave the header out or send true",
        ));
    }
    let document = parts.required("document")?;
    let check = call
        .engine
        .documents()
        .check(&document.data)
        .map_err(|error| call.error(error))?;
    // The portrait goes with the session for match-faces (sealed; needs authorization consent).
    if let (Some(session_id), Some(fullname)) = (&call.context.session_id, &call.context.fullname) {
        if check.portrait.is_some() {
            call.engine
                .faces()
                .keep_document_portrait(
                    &call.key.project_id,
                    (session_id, fullname),
                    &document.data,
                )
                .map_err(|error| call.error(error))?;
        }
    }
    Ok(Reply::ok(serde_json::json!({
        "message": "document checked",
        "data": super::body::document_json(&check, call.context.inhouse_mrz),
    })))
}

/// `POST /api-gateway/process-video`: the key's services on the video, scored by the key's rule
/// set. `X-Removed-Services: true` when Face or Voice Recognition was removed for missing
/// authorization consent; `X-Auto-Enroll: true` when the user was enrolled from this video.
pub(super) fn process_video(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let fullname = &call.media_preamble()?;
    let parts = validate(call)?;
    let video = parts.required("video")?;
    // `vocabulary` is accepted for the cloud API's sake and not needed: the recogniser
    // is open-vocabulary, and limiting what it may hear to the phrase's words is what let a
    // grammar-based check accept phrases never said.
    let phrase = parts.text("phrase").trim().to_owned();
    // `trigger` (the spec gives no values): one of X-Action-Trigger's values is recorded on the
    // transaction like the header, which wins when both are given; any other text is ignored.
    let trigger = parts.text("trigger").trim();
    if call.context.action_trigger.is_none() && ACTION_TRIGGERS.contains(&trigger) {
        call.context.action_trigger = Some(trigger.to_owned());
    }
    // `language` (Vouch's addition): the phrase's language as a BCP 47 tag (`pt-BR`, `hi`); left
    // out, the phrase check finds it from the phrase's script and the audio.
    let language = match parts.text("language").trim() {
        "" => None,
        tag => Some(Language::from_tag(tag).ok_or_else(|| {
            ApiError::bad_request(format!(
                "language: {tag:?} is not a language the phrase check knows; give a BCP 47 tag \
                 whose primary subtag is one of Whisper's 99 languages (en, pt-BR, zh, hi, ...)"
            ))
        })?),
    };
    let session_id = call.context.session_id.clone();
    let verification = call
        .engine
        .verification()
        .process_video(
            &VideoRequest {
                key: &call.key,
                fullname,
                session_id: session_id.as_deref(),
                request_id: Some(call.request_id),
                phrase: &phrase,
                language,
                registration: call.context.action_trigger.as_deref() == Some("registration"),
            },
            &video.data,
        )
        .map_err(|error| call.error(error))?;
    let mut reply = Reply::ok(super::body::verification_body(&verification, fullname));
    let flag = |set: bool| if set { "true" } else { "false" }.to_owned();
    reply
        .headers
        .push(("X-Auto-Enroll".to_owned(), flag(verification.auto_enrolled)));
    reply.headers.push((
        "X-Removed-Services".to_owned(),
        flag(verification.removed_services),
    ));
    // The attempt limit: a held-back user (or the failure that started the wait) learns when
    // the next attempt is allowed. The answer stays a 200 with a failed decision, which is what
    // a backend written for the cloud API reads (`docs/process-video.md`).
    if let Some(seconds) = verification.hold.and_then(|notice| notice.retry_after_s) {
        reply
            .headers
            .push(("Retry-After".to_owned(), seconds.to_string()));
    }
    Ok(reply)
}

/// `POST /api-gateway/match-faces`: the document photo (`image`, or the portrait kept from the
/// session's docauth/check) against the live face: the session's process-video faces with
/// `X-Use-Prefilled-Video: true`, otherwise a `video` or `live_image` part. Needs authorization
/// consent (403); a session without the faces asked for is a 400 that says what to send.
pub(super) fn match_faces(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let fullname = &call.media_preamble()?;
    let Some(session_id) = call.context.session_id.clone() else {
        return Err(ApiError::bad_request("X-Session-ID header is required"));
    };
    let parts = validate(call)?;
    let part = |name: &str| parts.file(name).map(|part| part.data.as_slice());
    let live = if call.context.use_prefilled_video {
        LiveFace::Session
    } else if let Some(video) = part("video") {
        LiveFace::Video(video)
    } else if let Some(image) = part("live_image") {
        LiveFace::Image(image)
    } else {
        return Err(ApiError::bad_request(
            "the live face is missing: send X-Use-Prefilled-Video: true after process-video in \
             this session, or a video or live_image part",
        ));
    };
    let result = call
        .engine
        .faces()
        .match_faces(&call.key, (&session_id, fullname), part("image"), live)
        .map_err(|error| call.error(error))?;
    Ok(Reply::ok(serde_json::json!({
        "message": if result.is_match { "faces match" } else { "faces do not match" },
        "data": result,
    })))
}

/// `POST /api-gateway/avf/infer`: stores the video sealed for a forgery analysis and answers 202
/// at once with the AVF record (result slots null); the host's pump analyses it later.
pub(super) fn avf_infer(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    // The spec lists only `Authorization` for avf/infer: a fullname is optional (kept with the
    // upload, and it locks the session as elsewhere when given).
    if call.context.fullname.is_some() {
        call.media_preamble()?;
    } else {
        call.query_value(&[], "")?;
    }
    let parts = validate(call)?;
    let file = parts.required("file")?;
    let source_filename = file
        .filename
        .as_deref()
        .map(|name| name.chars().take(255).collect::<String>())
        .unwrap_or_default();
    let record = call
        .engine
        .forgery()
        .submit(
            &call.key,
            &AvfUpload {
                request_id: call.request_id,
                fullname: call.context.fullname.as_deref(),
                session_id: call.context.session_id.as_deref(),
                source_filename: &source_filename,
                video: &file.data,
            },
        )
        .map_err(|error| call.error(error))?;
    Ok(Reply {
        status: 202,
        body: super::body::avf_body(&record, true),
        headers: Vec::new(),
    })
}

/// `GET /api-gateway/avf/status/{request_id}`: the analysis's status and, once completed, its
/// verdict; another project's request id is a 404 like an unknown one.
pub(super) fn avf_status(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let id = call.path_id.clone().unwrap_or_default();
    let record = call
        .engine
        .forgery()
        .get(&call.key, &id)
        .map_err(|error| call.error(error))?;
    Ok(Reply::ok(super::body::avf_body(&record, false)))
}

/// The endpoints this module answers, and how (read by the dispatch in `handle.rs`).
pub(super) const HANDLERS: &[(Endpoint, Handler)] = &[
    (Endpoint::ProcessVideo, process_video),
    (Endpoint::EnrollFace, enroll_face),
    (Endpoint::EnrollVoice, enroll_voice),
    (Endpoint::DocauthCheck, docauth_check),
    (Endpoint::MatchFaces, match_faces),
    (Endpoint::AvfInfer, avf_infer),
    (Endpoint::AvfStatus, avf_status),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn image(filename: Option<&str>, content_type: Option<&str>, data: &[u8]) -> Part {
        Part {
            name: "document".into(),
            filename: filename.map(Into::into),
            content_type: content_type.map(Into::into),
            data: data.to_vec(),
        }
    }

    const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0];
    const JPEG: &[u8] = &[0xFF, 0xD8, 0xFF, 0xE0, 0, 0];

    #[test]
    fn images_are_recognised_by_content_alone() {
        const WEBP: &[u8] = b"RIFF\x32\0\0\0WEBPVP8L";
        assert!(is_image(&image(Some("id.PNG"), Some("image/png"), PNG)));
        assert!(is_image(&image(Some("id.jpeg"), None, JPEG)));
        assert!(is_image(&image(None, None, JPEG)));
        // A WebP phone photo under a .jpg name and type, a JPEG called .gif: the bytes decide.
        assert!(is_image(&image(
            Some("photo.jpg"),
            Some("image/jpeg"),
            WEBP
        )));
        assert!(is_image(&image(Some("id.gif"), None, JPEG)));
        assert!(!is_image(&image(
            Some("id.png"),
            Some("image/png"),
            b"GIF89a"
        )));
        assert!(!is_image(&image(
            Some("id.heic"),
            None,
            b"\0\0\0\x18ftypheic"
        )));
    }

    #[test]
    fn containers_are_recognised_by_magic() {
        assert!(is_video(b"\0\0\0\x18ftypmp42"));
        assert!(is_video(&[0x1A, 0x45, 0xDF, 0xA3, 1]));
        assert!(!is_video(b"RIFF\0\0\0\0AVI "));
        assert!(is_audio(b"RIFF\0\0\0\0WAVEfmt "));
        assert!(is_audio(b"fLaC\0"));
        assert!(is_audio(b"OggS\0"));
        assert!(!is_audio(b"ID3\x03"));
    }
}
