//! A real HTTP/1.1 receiver on 127.0.0.1 and a transport that speaks HTTP/1.1 over a socket, for
//! the tests of the job pump (`tests/jobs_pump.rs`, `tests/schedules.rs`).

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use vouch::service::pump::{OutboundRequest, OutboundResponse, Transport};

/// One request the receiver saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: String,
}

/// A local HTTP/1.1 receiver: answers each path with its scripted statuses in turn (then 200).
/// A scripted status of [`HANG`] records the request and never answers (a worker killed
/// mid-attempt), one of [`HOLD`] records it and answers 200 once [`Receiver::release`] is called
/// (a slow receiver); a 3xx carries the path's `Location` (see [`Receiver::redirect`]).
pub struct Receiver {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<HashMap<String, VecDeque<u16>>>>,
    locations: Arc<Mutex<HashMap<String, String>>>,
    bodies: Arc<Mutex<HashMap<String, String>>>,
    held: Arc<(Mutex<bool>, Condvar)>,
}

/// The scripted "status" of a request that is never answered.
pub const HANG: u16 = 0;
/// The scripted "status" of a request answered 200 only after [`Receiver::release`].
pub const HOLD: u16 = 1;

impl Receiver {
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Mutex<HashMap<String, VecDeque<u16>>>> = Arc::default();
        let locations: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let bodies: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let held: Arc<(Mutex<bool>, Condvar)> = Arc::default();
        let (seen_in, script_in, locations_in, bodies_in, held_in) = (
            seen.clone(),
            script.clone(),
            locations.clone(),
            bodies.clone(),
            held.clone(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (seen, script, locations, bodies, held) = (
                    seen_in.clone(),
                    script_in.clone(),
                    locations_in.clone(),
                    bodies_in.clone(),
                    held_in.clone(),
                );
                std::thread::spawn(move || {
                    serve(stream, &seen, &script, &locations, &bodies, &held)
                });
            }
        });
        Receiver {
            port,
            seen,
            script,
            locations,
            bodies,
            held,
        }
    }

    /// Answers every request held by [`HOLD`], now and from now on.
    pub fn release(&self) {
        let (released, wake) = &*self.held;
        *released.lock().unwrap() = true;
        wake.notify_all();
    }

    /// Answers every request on `path` with `body` (JSON) from now on.
    pub fn reply_body(&self, path: &str, body: &str) {
        self.bodies
            .lock()
            .unwrap()
            .insert(path.to_owned(), body.to_owned());
    }

    /// Answers `path` with `status` (a 3xx) and `Location: location`, once.
    pub fn redirect(&self, path: &str, status: u16, location: &str) {
        self.answer(path, &[status]);
        self.locations
            .lock()
            .unwrap()
            .insert(path.to_owned(), location.to_owned());
    }

    /// Every request seen, on any path.
    pub fn all(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn answer(&self, path: &str, statuses: &[u16]) {
        self.script
            .lock()
            .unwrap()
            .insert(path.to_owned(), statuses.iter().copied().collect());
    }

    pub fn seen(&self, path: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|request| request.path == path)
            .cloned()
            .collect()
    }
}

fn serve(
    stream: TcpStream,
    seen: &Mutex<Vec<Seen>>,
    script: &Mutex<HashMap<String, VecDeque<u16>>>,
    locations: &Mutex<HashMap<String, String>>,
    bodies: &Mutex<HashMap<String, String>>,
    held: &(Mutex<bool>, Condvar),
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    let status = script
        .lock()
        .unwrap()
        .get_mut(&path)
        .and_then(VecDeque::pop_front)
        .unwrap_or(200);
    let location = locations
        .lock()
        .unwrap()
        .get(&path)
        .filter(|_| (300..400).contains(&status))
        .map(|location| format!("Location: {location}\r\n"))
        .unwrap_or_default();
    seen.lock().unwrap().push(Seen {
        method,
        path,
        headers,
        body: String::from_utf8(body).unwrap(),
    });
    if status == HANG {
        std::thread::sleep(Duration::from_secs(600));
        return;
    }
    let status = if status == HOLD {
        let (released, wake) = held;
        let mut released = released.lock().unwrap();
        while !*released {
            released = wake.wait(released).unwrap();
        }
        200
    } else {
        status
    };
    let reply = bodies
        .lock()
        .unwrap()
        .get(
            &line
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_owned(),
        )
        .cloned()
        .unwrap_or_default();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nRetry-After: 1\r\n{location}Connection: close\r\n\r\n{reply}",
        reply.len()
    );
}

/// HTTP/1.1 over a plain TCP socket, for `http://127.0.0.1:port/path` URLs.
pub struct SocketTransport;

impl Transport for SocketTransport {
    fn max_concurrent(&self) -> usize {
        vouch::service::pump::MAX_IN_FLIGHT
    }

    fn send(&self, request: &OutboundRequest) -> Result<OutboundResponse, String> {
        let rest = request
            .url
            .strip_prefix("http://")
            .ok_or("only http here")?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let mut stream = TcpStream::connect(authority).map_err(|error| error.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_millis(request.timeout_ms)))
            .unwrap();
        let body = request.body.clone().unwrap_or_default();
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\nConnection: close\r\n",
            request.method,
            if path.is_empty() { "/" } else { path },
            body.len()
        );
        for (name, value) in &request.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(&body))
            .map_err(|error| error.to_string())?;
        let mut reader = BufReader::new(stream);
        let mut status_line = String::new();
        reader
            .read_line(&mut status_line)
            .map_err(|error| error.to_string())?;
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or("no status line")?;
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader
                .read_line(&mut line)
                .map_err(|error| error.to_string())?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_owned(), value.trim().to_owned()));
            }
        }
        let length = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, value)| value.parse::<usize>().ok())
            .unwrap_or(0)
            .min(vouch::service::pump::MAX_RESPONSE_BODY);
        let mut body = vec![0u8; length];
        reader
            .read_exact(&mut body)
            .map_err(|error| error.to_string())?;
        Ok(OutboundResponse {
            status,
            headers,
            body,
        })
    }
}
