//! `vouch serve`: both services over HTTP/1.1 with the cloud's paths, for a kiosk, an on-premises
//! backend or a developer with curl (`docs/http.md`). The library stays socket-free: this command
//! is the listener (hyper on tokio, in the CLI only). Every request goes through
//! `vouch::api::handle`, the same call as `vouch_request`, so the answers are the library's.
//!
//! What the server itself enforces, before the engine sees anything:
//! - **Host**: a request whose `Host` is not the listen address (or `localhost` on a loopback
//!   listener) or a name given with `--host` is refused with 421, so a web page cannot reach the
//!   server through DNS rebinding.
//! - **Sizes, while reading**: multipart bodies are parsed as they stream in and a file part stops
//!   being read one byte past the spec's limit (50 MB, 100 MB for AVF): a 60 MB upload is refused
//!   without being held; other bodies stop at the engine's 64 KiB JSON limit; request heads at
//!   64 KiB.
//! - **Time**: the request head must arrive within 10 s, and each piece of a body within 30 s
//!   (a slow-body client is cut off; the whole upload may take as long as it keeps moving).
//! - **Errors** are JSON in the shape of the path's service (`{"error": "..."}`, or
//!   `{"error": {"code", "message"}}` on the job paths), with `X-Request-Id`.
//!
//! The job worker of `vouch jobs work` runs beside the listener. Ctrl-C or SIGTERM stops
//! accepting, lets requests in flight finish (up to 30 s) and lets the worker finish the attempts
//! it holds, so nothing is lost (an attempt cut short by a kill is recovered as interrupted).

pub(crate) mod admin;
pub(crate) mod config;
pub(crate) mod openapi;
pub(crate) mod openapi_schemas;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use futures_util::stream::{self, Stream, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use vouch::api::{ApiError, Part, Request};
use vouch::{AddressPolicy, Engine};

use crate::jobs::HttpTransport;
use crate::serve::config::{Cors, ServeConfig, CORS_ALLOWED_HEADERS, CORS_ALLOWED_METHODS};

/// How long a client may take to send a request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request head.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// How long shutdown waits for requests in flight.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// Most parts a multipart body may have.
const MAX_PARTS: usize = 16;
/// Largest non-file part (text fields such as `phrase`).
const MAX_TEXT_PART: usize = 64 * 1024;
/// Most bytes read and dropped after a body was refused, so the client still gets the answer.
const DRAIN_BYTES: usize = 256 * 1024 * 1024;
/// How long an upload waits for its turn (`serve.max_concurrent_uploads`) before a 503.
const UPLOAD_QUEUE_TIMEOUT: Duration = Duration::from_secs(120);
/// What the file parts of one body may hold together beyond one file's limit (e.g. a document
/// photo beside a 50 MB video on match-faces).
const FILES_HEADROOM: usize = 20 * 1024 * 1024;

/// `vouch serve` options.
#[derive(Args)]
pub(crate) struct Serve {
    /// Address to listen on; loopback unless you mean otherwise (port 0 picks a free port; the
    /// first line printed names it).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Another name clients may use in `Host` (e.g. the kiosk's DNS name); repeatable.
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,
    /// Let job calls, webhooks and alerts reach this private range too (repeatable): accepted
    /// when they are created and reached when they are delivered, as `allow_private` in the
    /// configuration file.
    #[arg(long = "allow-private", value_name = "CIDR")]
    pub allow_private: Vec<String>,
    /// The database, instead of the configuration file's `database`: a SQLite file, or a
    /// `postgres://user@host:port/db` URL that any number of servers share (docs/http.md "A
    /// fleet"). A URL with a password is visible to other users in the process list: keep it in
    /// the file (readable by the server's user only) or in VOUCH_DATABASE instead.
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "VOUCH_DATABASE",
        hide_env_values = true
    )]
    pub database: Option<String>,
    /// Most connections this server opens to a PostgreSQL database (1 to 256), instead of the
    /// file's `database_pool_size` (default 8).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    pub database_pool_size: Option<u64>,
    /// Do not run the job worker (another process runs `vouch jobs work`).
    #[arg(long)]
    pub no_worker: bool,
    /// A file holding the admin token (32 characters or more) that `/api-projects/api-keys`
    /// requires; without it key administration over HTTP is off.
    #[arg(long, value_name = "PATH")]
    pub admin_token_file: Option<std::path::PathBuf>,
    /// Seconds a client may pause inside a request body before it is cut off.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub body_idle_timeout_s: u64,
}

/// What every connection shares.
struct Shared {
    engine: Arc<Engine>,
    hosts: Vec<String>,
    body_idle: Duration,
    admin_token: Option<String>,
    openapi: Bytes,
    cors: Option<Cors>,
    /// One permit per upload being read and processed (`serve.max_concurrent_uploads`).
    uploads: Arc<tokio::sync::Semaphore>,
    /// One permit per upload in the engine (`serve.max_concurrent_processing`); handed out in
    /// arrival order, so no upload starves behind later ones.
    processing: Arc<tokio::sync::Semaphore>,
}

pub(crate) fn serve(engine: Engine, serving: &ServeConfig, options: &Serve) -> Result<(), String> {
    // The worker's blocking HTTP client is made (and later dropped) outside the async runtime.
    let transport = if options.no_worker {
        None
    } else {
        // `--allow-private` was added to the engine's own policy when it opened
        // (`open_with_serve`), so create-time checks and delivery open the same ranges.
        Some(HttpTransport::new(AddressPolicy::new(
            engine.runtime().address_policy().allowed().to_vec(),
        ))?)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the server's runtime: {error}"))?;
    runtime.block_on(run(Arc::new(engine), serving, options, transport))
}

/// The `Host` values served: the listen address, `localhost` forms on a loopback listener, and
/// the names given. Compared case-insensitively.
fn allowed_hosts(local: SocketAddr, extra: &[String]) -> Vec<String> {
    let port = local.port();
    let mut hosts = vec![local.to_string()];
    if local.ip().is_loopback() {
        hosts.push(format!("localhost:{port}"));
        hosts.push(format!("127.0.0.1:{port}"));
        hosts.push(format!("[::1]:{port}"));
    }
    for name in extra {
        hosts.push(name.clone());
        hosts.push(format!("{name}:{port}"));
    }
    hosts.iter().map(|host| host.to_ascii_lowercase()).collect()
}

async fn run(
    engine: Arc<Engine>,
    serving: &ServeConfig,
    options: &Serve,
    transport: Option<HttpTransport>,
) -> Result<(), String> {
    let tls = serving
        .tls
        .as_ref()
        .map(crate::serve::config::tls_acceptor)
        .transpose()?;
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", options.listen))?;
    let local = listener
        .local_addr()
        .map_err(|error| format!("listener: {error}"))?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    println!("vouch serve: listening on {scheme}://{local}");
    if !local.ip().is_loopback() {
        println!("vouch serve: not a loopback address; reachable from the network");
    }
    let shared = Arc::new(Shared {
        engine: engine.clone(),
        hosts: allowed_hosts(local, &options.hosts),
        body_idle: Duration::from_secs(options.body_idle_timeout_s),
        openapi: Bytes::from(crate::serve::openapi::document().to_string()),
        admin_token: options
            .admin_token_file
            .as_deref()
            .map(crate::serve::admin::read_token)
            .transpose()?,
        cors: serving.cors.as_ref().map(|cors| Cors {
            allowed_origins: cors.allowed_origins.clone(),
            max_age_s: cors.max_age_s,
        }),
        uploads: Arc::new(tokio::sync::Semaphore::new(serving.max_concurrent_uploads)),
        processing: Arc::new(tokio::sync::Semaphore::new(serving.processing())),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let worker = transport.map(|transport| {
        let (engine, stop) = (engine.clone(), stop.clone());
        std::thread::spawn(move || work(&engine, &transport, &stop))
    });
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut signal = std::pin::pin!(shutdown_signal());
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors, say: wait instead of spinning on the error.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let (shared, watcher, tls) = (shared.clone(), graceful.watcher(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        None => serve_connection(shared, watcher, stream).await,
                        Some(acceptor) => {
                            // The handshake has the request head's time limit.
                            let handshake = tokio::time::timeout(HEAD_TIMEOUT, acceptor.accept(stream));
                            if let Ok(Ok(stream)) = handshake.await {
                                serve_connection(shared, watcher, stream).await;
                            }
                        }
                    }
                });
            }
            () = &mut signal => break,
        }
    }
    drop(listener);
    // Uploads still waiting for a turn are answered 503 at once instead of cut off at the end
    // of the drain.
    shared.uploads.close();
    println!("vouch serve: stopping; finishing the requests in flight");
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        println!("vouch serve: some requests did not finish within {DRAIN_TIMEOUT:?}");
    }
    stop.store(true, Ordering::SeqCst);
    if let Some(worker) = worker {
        let _ = tokio::task::spawn_blocking(move || worker.join()).await;
    }
    println!("vouch serve: stopped");
    Ok(())
}

/// Serves HTTP/1.1 on one connection (plain or TLS) until it closes or shutdown drains it.
async fn serve_connection<S>(
    shared: Arc<Shared>,
    watcher: hyper_util::server::graceful::Watcher,
    stream: S,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(answer(&shared, request).await) }
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .serve_connection(TokioIo::new(stream), service);
    let _ = watcher.watch(connection).await;
}

/// Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("a SIGTERM handler can be installed");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Delivery loops of the job worker: more than a project may have deliveries in flight, so that a
/// project whose receivers hold every slot it has still leaves loops free for the others.
const DELIVERY_LOOPS: usize = 2 * vouch::service::pump::MAX_IN_FLIGHT_PER_PROJECT;

/// The job worker: [`DELIVERY_LOOPS`] loops that pump while jobs are due, otherwise look again
/// within a second, until told to stop (each finishes the pump it is in: the attempts it claimed
/// are recorded). The first loop also runs the forgery analyses, one at a time (CPU work); the
/// others only deliver (`engine.pump().deliver`), so that calls waiting on a slow receiver never
/// hold up the jobs that come due meanwhile.
fn work(engine: &Engine, transport: &HttpTransport, stop: &AtomicBool) {
    std::thread::scope(|scope| {
        for index in 0..DELIVERY_LOOPS {
            scope.spawn(move || pump_loop(engine, transport, stop, index == 0));
        }
    });
}

fn pump_loop(engine: &Engine, transport: &HttpTransport, stop: &AtomicBool, analyses: bool) {
    const BATCH: usize = 100;
    while !stop.load(Ordering::SeqCst) {
        let pumped = if analyses {
            engine.pump().run(transport, BATCH)
        } else {
            engine.pump().deliver(transport, BATCH)
        };
        match pumped {
            Ok(report) if report.analysis_error.is_some() => {
                let error = report.analysis_error.unwrap_or_default();
                eprintln!("vouch serve: forgery analysis: {error}");
                std::thread::sleep(Duration::from_secs(1));
            }
            // Busy: more may be due at once (an analysis done, attempts sent).
            Ok(report) if report.attempts > 0 || report.analyses > 0 => continue,
            Ok(report) => {
                // Due but not claimed (its project or destination at its limit, or another
                // pump's): look again in 100 ms, not at once, so that the loops do not spin.
                let wait_ms = match report
                    .next_due_ms
                    .map(|due| due - engine.runtime().now_ms())
                {
                    None => 1000,
                    Some(wait) if wait <= 0 => 100,
                    Some(wait) => wait.clamp(10, 1000),
                };
                // Sleep in small steps so a stop is seen quickly.
                let mut left = wait_ms;
                while left > 0 && !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(left.min(50) as u64));
                    left -= 50;
                }
            }
            Err(error) => {
                eprintln!("vouch serve: job worker: {error}");
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

fn new_request_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).expect("the operating system provides randomness");
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("req_{hex}")
}

/// An error the server answers itself, in the path's shape.
fn refuse(path: &str, status: u16, message: &str) -> hyper::Response<Full<Bytes>> {
    let error = ApiError::new(status, message).for_path(path);
    respond(
        status,
        &[("X-Request-Id".to_owned(), new_request_id())],
        error.body().to_string().into_bytes(),
    )
}

fn respond(
    status: u16,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> hyper::Response<Full<Bytes>> {
    let mut builder = hyper::Response::builder().status(status);
    let mut typed = false;
    for (name, value) in headers {
        typed |= name.eq_ignore_ascii_case("content-type");
        builder = builder.header(name.as_str(), value.as_str());
    }
    if !typed {
        builder = builder.header("Content-Type", "application/json");
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new())))
}

/// A body's frames, each of which must arrive within `idle`.
fn frames(body: Incoming, idle: Duration) -> impl Stream<Item = Result<Bytes, std::io::Error>> {
    stream::unfold(Some(body), move |state| async move {
        let mut body = state?;
        loop {
            match tokio::time::timeout(idle, body.frame()).await {
                Err(_) => {
                    let error = std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("the body stalled for more than {} s", idle.as_secs()),
                    );
                    return Some((Err(error), None));
                }
                Ok(None) => return None,
                Ok(Some(Err(error))) => {
                    return Some((Err(std::io::Error::other(error.to_string())), None))
                }
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        return Some((Ok(data), Some(body)));
                    }
                }
            }
        }
    })
}

/// Why a body could not be read.
enum BodyError {
    /// Answer with this status and text.
    Refuse(u16, String),
}

/// Reads a non-multipart body up to one byte past the engine's JSON limit for the path,
/// `limit` (the engine refuses it then, in its own words).
async fn read_plain(
    body: Incoming,
    idle: Duration,
    limit: usize,
) -> Result<Option<Vec<u8>>, BodyError> {
    let mut frames = std::pin::pin!(frames(body, idle));
    let mut data = Vec::new();
    while let Some(frame) = frames.next().await {
        let frame =
            frame.map_err(|error| BodyError::Refuse(400, format!("request body: {error}")))?;
        let room = (limit + 1).saturating_sub(data.len());
        data.extend_from_slice(&frame[..frame.len().min(room)]);
        if data.len() > limit {
            break;
        }
    }
    Ok((!data.is_empty()).then_some(data))
}

/// Parses a multipart body as it streams in. A file part stops at one byte past `limit`; the
/// answer is then the engine's own for an oversize file (`oversize`).
async fn read_multipart(
    body: Incoming,
    idle: Duration,
    boundary: &str,
    limit: usize,
    oversize: (u16, &str),
) -> Result<Vec<Part>, BodyError> {
    let malformed =
        |error: multer::Error| BodyError::Refuse(400, format!("malformed multipart body: {error}"));
    let mut multipart = multer::Multipart::new(frames(body, idle), boundary);
    let mut parts = Vec::new();
    // Once the body is refused, the rest is read and dropped (up to DRAIN_BYTES), so that the
    // client, still sending, gets the answer instead of a reset connection.
    let mut refused: Option<BodyError> = None;
    let mut drained = 0usize;
    // All file parts together, so sixteen parts cannot hold sixteen files' worth.
    let mut files_total = 0usize;
    while let Some(mut field) = multipart.next_field().await.map_err(malformed)? {
        if refused.is_none() && parts.len() == MAX_PARTS {
            refused = Some(BodyError::Refuse(
                400,
                format!("a multipart body may have at most {MAX_PARTS} parts"),
            ));
        }
        let name = field.name().unwrap_or_default().to_owned();
        let filename = field.file_name().map(str::to_owned);
        let content_type = field.content_type().map(ToString::to_string);
        let cap = if filename.is_some() {
            limit
        } else {
            MAX_TEXT_PART
        };
        let mut data = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(malformed)? {
            if let Some(error) = refused.take() {
                drained += chunk.len();
                if drained > DRAIN_BYTES {
                    return Err(error);
                }
                refused = Some(error);
                continue;
            }
            if data.len() + chunk.len() > cap {
                refused = Some(if filename.is_some() {
                    BodyError::Refuse(oversize.0, oversize.1.to_owned())
                } else {
                    BodyError::Refuse(400, format!("part \"{name}\" is larger than 64 KiB"))
                });
                data = Vec::new();
                continue;
            }
            if filename.is_some() {
                files_total += chunk.len();
                if files_total > limit + FILES_HEADROOM {
                    refused = Some(BodyError::Refuse(
                        413,
                        format!(
                            "the files of one request may hold at most {} MB in all",
                            (limit + FILES_HEADROOM) / (1024 * 1024)
                        ),
                    ));
                    data = Vec::new();
                    continue;
                }
            }
            data.extend_from_slice(&chunk);
        }
        if refused.is_none() {
            parts.push(Part {
                name,
                filename,
                content_type,
                data,
            });
        }
    }
    match refused {
        Some(error) => Err(error),
        None => Ok(parts),
    }
}

/// Answers a request, with the CORS headers when its `Origin` is allowed.
async fn answer(
    shared: &Shared,
    request: hyper::Request<Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let allowed = match (&shared.cors, request.headers().get(hyper::header::ORIGIN)) {
        (Some(cors), Some(origin)) => origin.to_str().ok().and_then(|origin| cors.allow(origin)),
        _ => None,
    };
    let mut response = answer_request(shared, request).await;
    if let Some(allowed) =
        allowed.and_then(|value| hyper::header::HeaderValue::from_str(&value).ok())
    {
        let headers = response.headers_mut();
        headers.insert(hyper::header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
        headers.insert(
            hyper::header::ACCESS_CONTROL_EXPOSE_HEADERS,
            hyper::header::HeaderValue::from_static("x-request-id"),
        );
    }
    if shared.cors.is_some() {
        // The answer depends on the origin, so caches must key on it.
        response.headers_mut().append(
            hyper::header::VARY,
            hyper::header::HeaderValue::from_static("Origin"),
        );
    }
    response
}

/// A CORS preflight (`OPTIONS` with `Access-Control-Request-Method`), answered by the server
/// when CORS is configured: 204 for an allowed origin, 403 for another.
fn preflight(
    cors: &Cors,
    path: &str,
    head: &hyper::http::request::Parts,
) -> Option<hyper::Response<Full<Bytes>>> {
    if head.method != hyper::Method::OPTIONS
        || !head
            .headers
            .contains_key(hyper::header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        return None;
    }
    let origin = head
        .headers
        .get(hyper::header::ORIGIN)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if cors.allow(origin).is_none() {
        return Some(refuse(
            path,
            403,
            &format!("origin \"{origin}\" may not call this server (serve.cors.allowed_origins)"),
        ));
    }
    Some(respond(
        204,
        &[
            ("X-Request-Id".to_owned(), new_request_id()),
            (
                "Access-Control-Allow-Methods".to_owned(),
                CORS_ALLOWED_METHODS.to_owned(),
            ),
            (
                "Access-Control-Allow-Headers".to_owned(),
                CORS_ALLOWED_HEADERS.to_owned(),
            ),
            (
                "Access-Control-Max-Age".to_owned(),
                cors.max_age_s.to_string(),
            ),
        ],
        Vec::new(),
    ))
}

type HttpResponse = hyper::Response<Full<Bytes>>;

/// A refusal made before the engine sees the request (boxed: a response is large).
type Refused = Box<HttpResponse>;

async fn answer_request(shared: &Shared, request: hyper::Request<Incoming>) -> HttpResponse {
    let (head, body) = request.into_parts();
    let path = head.uri.path_and_query().map_or_else(
        || head.uri.path().to_owned(),
        |value| value.as_str().to_owned(),
    );
    if let Some(refused) = check_host(shared, &path, &head) {
        return refused;
    }
    if let Some(response) = shared
        .cors
        .as_ref()
        .and_then(|cors| preflight(cors, &path, &head))
    {
        return response;
    }
    if head.method == hyper::Method::GET && path == "/openapi.json" {
        return respond(
            200,
            &[("X-Request-Id".to_owned(), new_request_id())],
            shared.openapi.to_vec(),
        );
    }
    let mut library_request = Request::new(head.method.as_str(), &path);
    library_request.headers = match visible_headers(&path, &head) {
        Ok(headers) => headers,
        Err(refused) => return *refused,
    };
    let content_type = head
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let is_multipart = content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("multipart/form-data");
    let permit = if is_multipart {
        if !authenticated(shared, &library_request).await {
            // The engine refuses it in its own words (401, or the spec's 500 for a key that
            // fails validation) before looking at the body, which is never read: a client
            // without a valid key cannot hold an upload's turn.
            return engine_answer(shared, &path, library_request, Vec::new()).await;
        }
        match upload_permit(shared, &path).await {
            Ok(permit) => Some(permit),
            Err(refused) => return *refused,
        }
    } else {
        None
    };
    if let Err(refused) = read_body(shared, &path, content_type, body, &mut library_request).await {
        return *refused;
    }
    let bare = path
        .split('?')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/');
    if crate::serve::admin::is_admin_path(bare) {
        return answer_admin(shared, &path, library_request).await;
    }
    let turn = if is_multipart {
        shared.processing.clone().acquire_owned().await.ok()
    } else {
        None
    };
    engine_answer(shared, &path, library_request, vec![permit, turn]).await
}

/// The `Host` check against DNS rebinding: a refusal unless the request names a served host.
fn check_host(
    shared: &Shared,
    path: &str,
    head: &hyper::http::request::Parts,
) -> Option<HttpResponse> {
    let host = head
        .headers
        .get(hyper::header::HOST)
        .and_then(|value| value.to_str().ok())
        .map(str::to_ascii_lowercase);
    match host {
        Some(host) if shared.hosts.contains(&host) => None,
        Some(host) => Some(refuse(
            path,
            421,
            &format!("Host \"{host}\" is not served here (start vouch serve with --host {host} to allow it)"),
        )),
        None => Some(refuse(path, 400, "the Host header is required")),
    }
}

/// The request's headers as text; a value that is not visible ASCII is refused.
fn visible_headers(
    path: &str,
    head: &hyper::http::request::Parts,
) -> Result<Vec<(String, String)>, Refused> {
    let mut headers = Vec::with_capacity(head.headers.len());
    for (name, value) in &head.headers {
        let Ok(value) = value.to_str() else {
            return Err(Box::new(refuse(
                path,
                400,
                &format!("the value of header {name} is not visible ASCII"),
            )));
        };
        headers.push((name.as_str().to_owned(), value.to_owned()));
    }
    Ok(headers)
}

/// An upload's permit: an upload is read and processed only with one, so memory stays bounded
/// however many arrive; the others wait unread (the kernel holds their bytes back) or get a 503.
async fn upload_permit(
    shared: &Shared,
    path: &str,
) -> Result<tokio::sync::OwnedSemaphorePermit, Refused> {
    match tokio::time::timeout(UPLOAD_QUEUE_TIMEOUT, shared.uploads.clone().acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => {
            let mut response = refuse(
                path,
                503,
                "the server is busy with other uploads; try again shortly",
            );
            response.headers_mut().insert(
                hyper::header::RETRY_AFTER,
                hyper::header::HeaderValue::from_static("5"),
            );
            Err(Box::new(response))
        }
    }
}

/// Reads the body into `request`: multipart parts within the endpoint table's upload limit, or
/// a plain body within its JSON limit; past a limit, the refusal.
async fn read_body(
    shared: &Shared,
    path: &str,
    content_type: &str,
    body: Incoming,
    request: &mut Request,
) -> Result<(), Refused> {
    let read = if content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        let Ok(boundary) = multer::parse_boundary(content_type) else {
            return Err(Box::new(refuse(
                path,
                400,
                "multipart/form-data needs a boundary parameter",
            )));
        };
        // The endpoint table says how large a file may be and how a larger one is refused.
        let (limit, status, message) = vouch::api::upload_limit(path);
        read_multipart(body, shared.body_idle, &boundary, limit, (status, message))
            .await
            .map(|parts| request.parts = parts)
    } else {
        let limit = vouch::api::json_body_limit(&request.method, path);
        read_plain(body, shared.body_idle, limit)
            .await
            .map(|data| request.body = data)
    };
    match read {
        Err(BodyError::Refuse(status, message)) => Err(Box::new(refuse(path, status, &message))),
        _ => Ok(()),
    }
}

/// An administration request (`serve/admin.rs`), answered on a blocking thread.
async fn answer_admin(shared: &Shared, path: &str, request: Request) -> HttpResponse {
    let engine = shared.engine.clone();
    let admin_token = shared.admin_token.clone();
    let bare = path
        .split('?')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_owned();
    let answered = tokio::task::spawn_blocking(move || {
        crate::serve::admin::answer(
            &engine,
            admin_token.as_deref(),
            &request.method,
            &request.path,
            request.header_value("Authorization"),
            request.body.as_deref(),
        )
    })
    .await;
    match answered {
        Ok(Some((status, body))) => {
            let mut headers = vec![("X-Request-Id".to_owned(), new_request_id())];
            if status == 405 {
                // RFC 9110: a 405 names the methods the resource answers.
                let allow = crate::serve::admin::allowed_methods(&bare);
                headers.push(("Allow".to_owned(), allow));
            }
            respond(status, &headers, body.to_string().into_bytes())
        }
        _ => refuse(path, 500, "the request failed inside the server"),
    }
}

/// Whether the request's key is valid (a cheap check before an upload is read).
async fn authenticated(shared: &Shared, request: &Request) -> bool {
    let engine = shared.engine.clone();
    let authorization = request.header_value("Authorization").map(str::to_owned);
    tokio::task::spawn_blocking(move || {
        engine
            .api_keys()
            .authenticate(authorization.as_deref())
            .is_ok()
    })
    .await
    .unwrap_or(false)
}

/// The engine's answer. `held` (upload and processing permits) moves into the blocking task
/// and is released when the engine is done, even if the client has gone away meanwhile.
async fn engine_answer(
    shared: &Shared,
    path: &str,
    request: Request,
    held: Vec<Option<tokio::sync::OwnedSemaphorePermit>>,
) -> hyper::Response<Full<Bytes>> {
    let engine = shared.engine.clone();
    let handled = tokio::task::spawn_blocking(move || {
        let response = vouch::api::handle(&engine, request);
        drop(held);
        response
    })
    .await;
    match handled {
        Ok(response) => respond(
            response.status,
            &response.headers,
            response.body.to_string().into_bytes(),
        ),
        Err(_) => refuse(path, 500, "the request failed inside the server"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listen_address_and_named_hosts_are_served() {
        let loopback: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let hosts = allowed_hosts(loopback, &["Kiosk.Local".to_owned()]);
        for host in [
            "127.0.0.1:8080",
            "localhost:8080",
            "kiosk.local",
            "kiosk.local:8080",
        ] {
            assert!(hosts.contains(&host.to_owned()), "{host}");
        }
        for host in ["evil.example", "127.0.0.1:9090", "localhost"] {
            assert!(!hosts.contains(&host.to_owned()), "{host}");
        }
        let public: SocketAddr = "192.0.2.7:80".parse().unwrap();
        assert!(!allowed_hosts(public, &[]).contains(&"localhost:80".to_owned()));
    }

    #[test]
    fn job_paths_get_the_job_error_shape() {
        let response = refuse("/jobs/x", 421, "no");
        assert_eq!(response.status(), 421);
        assert!(!refuse("/api-gateway/sessions/start", 400, "no")
            .headers()
            .get("X-Request-Id")
            .unwrap()
            .is_empty());
    }
}
