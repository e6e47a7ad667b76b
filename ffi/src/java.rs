//! The JNI layer of the Kotlin binding (`bindings/kotlin`), behind the `jni` feature: the native
//! methods of `io.vouch.Native`, each a thin marshalling shell over the C ABI function of the same
//! name, so Kotlin sees exactly the statuses, messages and panic safety C callers see.
//!
//! Why Rust and the `jni` crate rather than a C shim: the layer ships inside `libvouch.so` (one
//! library per Android ABI, `System.loadLibrary("vouch")`), it builds with `cargo ndk` like the rest,
//! and `jni` turns JNI errors and panics into Java exceptions instead of undefined behaviour.
//!
//! Conventions: handles are the C pointers as `long`; a failed call throws
//! `io.vouch.VouchException(status, message)`; `byte[]` arguments are read through
//! `GetByteArrayElements` (the JVM copies or pins, no further copy here) and direct `ByteBuffer`s
//! are read in place. The Kotlin side guarantees a handle is never freed while a call on it runs.

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use jni::elements::ReleaseMode;
use jni::errors::ThrowRuntimeExAndDefault;
use jni::objects::{JByteArray, JByteBuffer, JClass, JFloatArray, JObject, JObjectArray, JString};
use jni::sys::{jint, jlong};
use jni::{jni_sig, jni_str, Env, EnvUnowned, JValue};

use super::*;

/// Why a native method failed: a library status to throw as `VouchException`, or a JNI error
/// (already a pending Java exception, or turned into a `RuntimeException`).
enum Failure {
    Vouch(u32, String),
    Jni(jni::errors::Error),
}

impl From<jni::errors::Error> for Failure {
    fn from(error: jni::errors::Error) -> Self {
        Failure::Jni(error)
    }
}

impl Failure {
    /// The status a C call returned, with this thread's last error message.
    fn last(status: vouch_status) -> Self {
        // SAFETY: the message is a NUL-terminated string valid until the next call on this thread.
        let message = unsafe { CStr::from_ptr(vouch_last_error_message()) };
        Failure::Vouch(status as u32, message.to_string_lossy().into_owned())
    }

    fn argument(message: &str) -> Self {
        Failure::Vouch(vouch_status::InvalidArgument as u32, message.to_owned())
    }
}

type Outcome<T> = Result<T, Failure>;

/// Turns a C status into an outcome.
fn check(status: vouch_status) -> Outcome<()> {
    match status {
        vouch_status::Ok => Ok(()),
        other => Err(Failure::last(other)),
    }
}

/// Runs a native method's body: a library failure becomes a thrown `VouchException`, a JNI error
/// or a panic a `RuntimeException`; in both cases Java receives the default value and the
/// pending exception.
fn native<'local, T: Default>(
    unowned: &mut EnvUnowned<'local>,
    body: impl FnOnce(&mut Env<'local>) -> Outcome<T>,
) -> T {
    unowned
        .with_env(|env| -> jni::errors::Result<T> {
            match body(env) {
                Ok(value) => Ok(value),
                Err(Failure::Jni(error)) => Err(error),
                Err(Failure::Vouch(status, message)) => {
                    let class = env.find_class(jni_str!("io/vouch/VouchException"))?;
                    let message = env.new_string(&message)?;
                    let exception = env.new_object(
                        &class,
                        jni_sig!((status: jint, message: java.lang.String) -> void),
                        &[JValue::Int(status as jint), JValue::Object(&message)],
                    )?;
                    let exception = env.cast_local::<jni::objects::JThrowable>(exception)?;
                    env.throw(&exception)?;
                    Ok(T::default())
                }
            }
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// A Java string as a C string; a NUL inside is an invalid argument naming `what`.
fn c_string(env: &Env<'_>, value: &JString<'_>, what: &str) -> Outcome<CString> {
    let text = value.try_to_string(env)?;
    CString::new(text).map_err(|_| Failure::argument(&format!("{what} contains a NUL character")))
}

/// A Java string or null as an optional C string.
fn optional_c_string(env: &Env<'_>, value: &JString<'_>, what: &str) -> Outcome<Option<CString>> {
    if value.is_null() {
        Ok(None)
    } else {
        c_string(env, value, what).map(Some)
    }
}

/// The pointer of an optional C string (NULL for none).
fn c_ptr(value: &Option<CString>) -> *const c_char {
    value.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

/// Takes a string the library returned through `char **`, and frees it.
fn take_string(raw: *mut c_char) -> String {
    if raw.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string this library returned, freed exactly once here.
    let text = unsafe { CStr::from_ptr(raw) }
        .to_string_lossy()
        .into_owned();
    unsafe { vouch_string_free(raw) };
    text
}

/// Runs `f` over the bytes of a `byte[]` (null is an invalid argument naming `what`).
fn with_bytes<T>(
    env: &Env<'_>,
    array: &JByteArray<'_>,
    what: &str,
    f: impl FnOnce(&[u8]) -> Outcome<T>,
) -> Outcome<T> {
    if array.is_null() {
        return Err(Failure::argument(&format!("{what} is null")));
    }
    // SAFETY: no other JNI call on this array while the elements are held; released unchanged.
    let elements = unsafe { array.get_elements(env, ReleaseMode::NoCopyBack) }?;
    let bytes: &[i8] = &elements;
    // SAFETY: i8 and u8 have the same size and alignment.
    let bytes = unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<u8>(), bytes.len()) };
    f(bytes)
}

/// Runs `f` over the remaining bytes of a direct `ByteBuffer` (`position` and `limit` from Kotlin),
/// in place.
fn with_direct_buffer<T>(
    env: &Env<'_>,
    buffer: &JByteBuffer<'_>,
    position: jint,
    limit: jint,
    f: impl FnOnce(&[u8]) -> Outcome<T>,
) -> Outcome<T> {
    if buffer.is_null() {
        return Err(Failure::argument("buffer is null"));
    }
    let address = env.get_direct_buffer_address(buffer)?;
    let capacity = env.get_direct_buffer_capacity(buffer)?;
    let (Ok(position), Ok(limit)) = (usize::try_from(position), usize::try_from(limit)) else {
        return Err(Failure::argument(
            "buffer position and limit must not be negative",
        ));
    };
    if address.is_null() || position > limit || limit > capacity {
        return Err(Failure::argument(
            "buffer is not a direct buffer with position <= limit <= capacity",
        ));
    }
    // SAFETY: the JVM keeps a direct buffer's memory for as long as the caller holds the buffer,
    // and [position, limit) lies inside its capacity.
    let bytes = unsafe { std::slice::from_raw_parts(address.add(position), limit - position) };
    f(bytes)
}

/// `[template, info JSON]` as an `Object[]` for the Kotlin side to unpack.
fn template_pair<'local>(
    env: &mut Env<'local>,
    template: &[u8],
    info: *mut c_char,
) -> Outcome<JObjectArray<'local>> {
    let info = take_string(info);
    let template = env.byte_array_from_slice(template)?;
    let info = env.new_string(&info)?;
    let pair = JObjectArray::<JObject>::new(env, 2, JObject::null())?;
    pair.set_element(env, 0, &template)?;
    pair.set_element(env, 1, &info)?;
    Ok(pair)
}

/// `float[]{distance, probability, isMatch ? 1 : 0}`.
fn match_array<'local>(env: &mut Env<'local>, m: vouch_match) -> Outcome<JFloatArray<'local>> {
    let array = env.new_float_array(3)?;
    array.set_region(env, 0, &[m.distance, m.probability, f32::from(m.is_match)])?;
    Ok(array)
}

/// The engine behind a handle (0 is refused before the C call sees it).
fn engine_ptr(handle: jlong) -> Outcome<*const vouch_engine> {
    if handle == 0 {
        return Err(Failure::Vouch(
            vouch_status::NullArgument as u32,
            "engine is closed".into(),
        ));
    }
    Ok(handle as usize as *const vouch_engine)
}

#[no_mangle]
pub extern "system" fn Java_io_vouch_Native_version<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> JString<'local> {
    native(&mut unowned, |env| {
        // SAFETY: a static NUL-terminated string.
        let version = unsafe { CStr::from_ptr(vouch_version()) };
        Ok(env.new_string(version.to_string_lossy())?)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_vouch_Native_engineNew<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    options: JString<'local>,
) -> jlong {
    native(&mut unowned, |env| {
        if options.is_null() {
            return Err(Failure::Vouch(
                vouch_status::NullArgument as u32,
                "options is null".into(),
            ));
        }
        let options = c_string(env, &options, "options")?;
        let mut engine: *mut vouch_engine = ptr::null_mut();
        // SAFETY: a NUL-terminated string and a writable out-pointer.
        check(unsafe { vouch_engine_new(options.as_ptr(), &mut engine) })?;
        Ok(engine as usize as jlong)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_vouch_Native_engineFree<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    engine: jlong,
) {
    native(&mut unowned, |_| {
        // SAFETY: the Kotlin handle frees each engine once, after every call on it has returned.
        unsafe { vouch_engine_free(engine as usize as *mut vouch_engine) };
        Ok(())
    })
}

/// `vouch_request`; answers `String[]{status, body, name1, value1, ...}`.
#[allow(clippy::too_many_arguments)]
#[no_mangle]
pub extern "system" fn Java_io_vouch_Native_request<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    engine: jlong,
    method: JString<'local>,
    path: JString<'local>,
    headers_json: JString<'local>,
    part_names: JObjectArray<'local, JString<'local>>,
    part_filenames: JObjectArray<'local, JString<'local>>,
    part_content_types: JObjectArray<'local, JString<'local>>,
    part_data: JObjectArray<'local, JByteArray<'local>>,
    body: JByteArray<'local>,
) -> JObjectArray<'local, JString<'local>> {
    native(&mut unowned, |env| {
        let engine = engine_ptr(engine)?;
        let method = c_string(env, &method, "method")?;
        let path = c_string(env, &path, "path")?;
        let headers = optional_c_string(env, &headers_json, "headers")?;
        // The parts' strings and bytes, held until the call returns.
        let count = if part_names.is_null() {
            0
        } else {
            part_names.len(env)?
        };
        let mut names = Vec::with_capacity(count);
        let mut filenames = Vec::with_capacity(count);
        let mut types = Vec::with_capacity(count);
        let mut data = Vec::with_capacity(count);
        for i in 0..count {
            let name: JString = part_names.get_element(env, i)?;
            names.push(c_string(env, &name, "part name")?);
            let filename: JString = part_filenames.get_element(env, i)?;
            filenames.push(optional_c_string(env, &filename, "part filename")?);
            let content_type: JString = part_content_types.get_element(env, i)?;
            types.push(optional_c_string(env, &content_type, "part content type")?);
            let bytes: JByteArray = part_data.get_element(env, i)?;
            data.push(with_bytes(env, &bytes, "part data", |b| Ok(b.to_vec()))?);
        }
        let parts: Vec<vouch_part> = (0..count)
            .map(|i| vouch_part {
                name: names[i].as_ptr(),
                filename: c_ptr(&filenames[i]),
                content_type: c_ptr(&types[i]),
                data: data[i].as_ptr(),
                len: data[i].len(),
            })
            .collect();
        let body = if body.is_null() {
            None
        } else {
            Some(with_bytes(env, &body, "body", |b| Ok(b.to_vec()))?)
        };
        let (body_ptr, body_len) = body
            .as_ref()
            .map_or((ptr::null(), 0), |b| (b.as_ptr(), b.len()));
        let mut response: *mut vouch_response = ptr::null_mut();
        // SAFETY: every pointer is valid for the call (owned above); `response` is writable.
        check(unsafe {
            vouch_request(
                engine,
                method.as_ptr(),
                path.as_ptr(),
                c_ptr(&headers),
                if parts.is_empty() {
                    ptr::null()
                } else {
                    parts.as_ptr()
                },
                parts.len(),
                body_ptr,
                body_len,
                &mut response,
            )
        })?;
        // SAFETY: a live response; its strings live until it is freed below.
        let (status, body, headers) = unsafe {
            let status = vouch_response_status(response);
            let body = CStr::from_ptr(vouch_response_body_json(response))
                .to_string_lossy()
                .into_owned();
            let headers = CStr::from_ptr(vouch_response_headers_json(response))
                .to_string_lossy()
                .into_owned();
            vouch_response_free(response);
            (status, body, headers)
        };
        let headers: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&headers).unwrap_or_default();
        let mut fields = vec![status.to_string(), body];
        for (name, value) in headers {
            fields.push(name);
            fields.push(value.as_str().unwrap_or_default().to_owned());
        }
        let empty = env.new_string("")?;
        let answer = JObjectArray::<JString>::new(env, fields.len(), &empty)?;
        for (i, field) in fields.iter().enumerate() {
            let field = env.new_string(field)?;
            answer.set_element(env, i, &field)?;
        }
        Ok(answer)
    })
}

/// `vouch_api_key_create`: the key JSON.
#[no_mangle]
pub extern "system" fn Java_io_vouch_Native_apiKeyCreate<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    engine: jlong,
    request_json: JString<'local>,
) -> JString<'local> {
    native(&mut unowned, |env| {
        let engine = engine_ptr(engine)?;
        let request = c_string(env, &request_json, "request")?;
        let mut out: *mut c_char = ptr::null_mut();
        // SAFETY: valid engine and string; writable out-pointer.
        check(unsafe { vouch_api_key_create(engine, request.as_ptr(), &mut out) })?;
        Ok(env.new_string(take_string(out))?)
    })
}

/// Face or voice template from a media file: the shared body of the template methods, with the
/// template bytes and the info JSON string (to free) it wrote.
fn template_from_media(
    engine: jlong,
    bytes: &[u8],
    voice: bool,
) -> Outcome<(Vec<u8>, *mut c_char)> {
    let engine = engine_ptr(engine)?;
    let size = if voice {
        VOUCH_VOICE_TEMPLATE_BYTES
    } else {
        VOUCH_FACE_TEMPLATE_BYTES
    };
    let mut template = vec![0u8; size];
    let mut info: *mut c_char = ptr::null_mut();
    let (data, len, out) = (bytes.as_ptr(), bytes.len(), template.as_mut_ptr());
    // SAFETY: `bytes` valid for its length, `template` sized for the kind, `info` writable.
    check(unsafe {
        if voice {
            vouch_voice_template_from_audio(engine, data, len, out, &mut info)
        } else {
            vouch_face_template_from_image(engine, data, len, out, &mut info)
        }
    })?;
    Ok((template, info))
}

/// `vouch_face_template_from_image` or `vouch_voice_template_from_audio` over a `byte[]`:
/// `Object[]{template, infoJson}`.
#[no_mangle]
pub extern "system" fn Java_io_vouch_Native_templateFromBytes<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    engine: jlong,
    voice: bool,
    data: JByteArray<'local>,
) -> JObjectArray<'local> {
    native(&mut unowned, |env| {
        let (template, info) = with_bytes(env, &data, "data", |bytes| {
            template_from_media(engine, bytes, voice)
        })?;
        template_pair(env, &template, info)
    })
}

/// As `templateFromBytes`, over the remaining bytes of a direct `ByteBuffer`, read in place.
#[no_mangle]
pub extern "system" fn Java_io_vouch_Native_templateFromBuffer<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    engine: jlong,
    voice: bool,
    buffer: JByteBuffer<'local>,
    position: jint,
    limit: jint,
) -> JObjectArray<'local> {
    native(&mut unowned, |env| {
        let (template, info) = with_direct_buffer(env, &buffer, position, limit, |bytes| {
            template_from_media(engine, bytes, voice)
        })?;
        template_pair(env, &template, info)
    })
}

/// `vouch_face_compare` or `vouch_voice_compare`: `float[]{distance, probability, isMatch}`.
#[no_mangle]
pub extern "system" fn Java_io_vouch_Native_compare<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    voice: bool,
    a: JByteArray<'local>,
    b: JByteArray<'local>,
) -> JFloatArray<'local> {
    native(&mut unowned, |env| {
        let m = with_bytes(env, &a, "a", |a| {
            with_bytes(env, &b, "b", |b| {
                let mut m = vouch_match::default();
                // SAFETY: both buffers valid for their lengths; `m` writable.
                check(unsafe {
                    if voice {
                        vouch_voice_compare(a.as_ptr(), a.len(), b.as_ptr(), b.len(), &mut m)
                    } else {
                        vouch_face_compare(a.as_ptr(), a.len(), b.as_ptr(), b.len(), &mut m)
                    }
                })?;
                Ok(m)
            })
        })?;
        match_array(env, m)
    })
}

/// `vouch_status_text`.
#[no_mangle]
pub extern "system" fn Java_io_vouch_Native_statusText<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    status: jint,
) -> JString<'local> {
    native(&mut unowned, |env| {
        // SAFETY: a static NUL-terminated string for any value.
        let text = unsafe { CStr::from_ptr(vouch_status_text(status as u32)) };
        Ok(env.new_string(text.to_string_lossy())?)
    })
}
