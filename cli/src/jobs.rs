//! `vouch jobs work`: the job pump driven by a real HTTP client. The library opens no socket; on
//! a kiosk or a backend this command is the transport (`HttpTransport`): reqwest over rustls,
//! guarded against server-side request forgery. A URL's host is checked as parsed (an IP literal
//! in any form the URL standard reads) and every address a name resolves to is checked before the
//! connection is made, to that checked address only (the resolver hands the connector nothing
//! else, so a second lookup cannot answer differently). Up to [`MAX_REDIRECTS`] redirects are
//! followed, each hop checked the same way (its scheme, its literal address here, its name's
//! addresses by the resolver); a hop that is refused fails the attempt with the reason, and a
//! `Location` that is not http(s) is not followed (the 3xx is the answer). No proxy is taken
//! from the environment.

use std::io::Read;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use vouch::service::pump::{OutboundRequest, OutboundResponse, Transport, MAX_RESPONSE_BODY};
use vouch::{AddressPolicy, Engine};

/// `vouch jobs work` options.
#[derive(Args)]
pub(crate) struct Work {
    /// Stop when no job is due (otherwise run until interrupted, waking for each due job).
    #[arg(long)]
    pub until_idle: bool,
    /// Also let calls reach this range although it is private or loopback, e.g. 192.168.1.0/24
    /// for a receiver on the kiosk's LAN (repeatable; adds to the configuration's allow_private,
    /// and means what it does there).
    #[arg(long = "allow-private", value_name = "CIDR")]
    pub allow_private: Vec<String>,
    /// Jobs claimed per pump.
    #[arg(long, default_value_t = 100)]
    pub batch: usize,
}

/// Runs the pump until idle (or forever), printing what each busy pump did.
pub(crate) fn work(engine: &Engine, options: &Work) -> Result<(), String> {
    // `--allow-private` was added to the engine's own policy when it opened, as for `vouch
    // serve`, so the engine and its transport open the same ranges.
    let transport = HttpTransport::new(AddressPolicy::new(
        engine.runtime().address_policy().allowed().to_vec(),
    ))?;
    let batch = options.batch.clamp(1, 1000);
    loop {
        let report = engine
            .pump()
            .run(&transport, batch)
            .map_err(|error| error.to_string())?;
        if let Some(error) = &report.analysis_error {
            eprintln!("forgery analysis failed (tried again later): {error}");
        }
        if report.analyses > 0 {
            println!("ended {} forgery analysis", report.analyses);
        }
        if report.attempts > 0 || report.interrupted > 0 {
            println!(
                "sent {} attempts: {} succeeded, {} failed for good, {} interrupted attempts closed",
                report.attempts, report.succeeded, report.failed, report.interrupted
            );
        }
        if report.attempts == batch || report.analyses > 0 {
            continue;
        }
        let wait_ms = report
            .next_due_ms
            .map(|due| due - engine.runtime().now_ms());
        if options.until_idle && wait_ms.is_none_or(|wait| wait > 0) {
            return Ok(());
        }
        // New jobs may arrive from other processes: look again within a second.
        let wait = wait_ms.unwrap_or(1000).clamp(10, 1000) as u64;
        std::thread::sleep(Duration::from_millis(wait));
    }
}

/// Most redirects one attempt follows; the next 3xx fails the attempt.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// The CLI's transport: HTTP/1.1 and HTTP/2 over TCP and rustls, SSRF-guarded.
pub(crate) struct HttpTransport {
    client: reqwest::blocking::Client,
    policy: Arc<AddressPolicy>,
}

impl HttpTransport {
    /// A client that refuses what `policy` refuses, on the first request and on every redirect
    /// (at most [`MAX_REDIRECTS`]), and uses no proxy.
    pub(crate) fn new(policy: AddressPolicy) -> Result<HttpTransport, String> {
        let policy = Arc::new(policy);
        let hops = policy.clone();
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            match refusal(attempt.url(), &hops) {
                Some(why) => {
                    let text = format!("redirect to {}: {why}", attempt.url());
                    attempt.error(text)
                }
                None => attempt.follow(),
            }
        });
        let client = reqwest::blocking::Client::builder()
            .redirect(redirects)
            .no_proxy()
            .dns_resolver(Arc::new(CheckedResolver {
                policy: policy.clone(),
            }))
            .user_agent(concat!("vouch/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|error| format!("cannot start the HTTP client: {error}"))?;
        Ok(HttpTransport { client, policy })
    }
}

impl Transport for HttpTransport {
    /// reqwest's blocking client is shared by threads; each send waits on its own.
    fn max_concurrent(&self) -> usize {
        vouch::service::pump::MAX_IN_FLIGHT
    }

    fn send(&self, request: &OutboundRequest) -> Result<OutboundResponse, String> {
        let url = reqwest::Url::parse(&request.url).map_err(|error| format!("bad URL: {error}"))?;
        if let Some(why) = refusal(&url, &self.policy) {
            return Err(why);
        }
        let method = reqwest::Method::from_bytes(request.method.as_bytes())
            .map_err(|_| format!("bad method {}", request.method))?;
        let mut builder = self
            .client
            .request(method, url)
            .timeout(Duration::from_millis(request.timeout_ms));
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Some(body) = &request.body {
            builder = builder.body(body.clone());
        }
        let response = builder.send().map_err(|error| describe(&error))?;
        let headers = response
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            })
            .collect();
        let status = response.status().as_u16();
        // Only the first MAX_RESPONSE_BODY bytes are read (a SIM-swap verdict is a few bytes);
        // a body cut short by the peer or the timeout leaves what arrived.
        let mut body = Vec::new();
        let _ = response
            .take(MAX_RESPONSE_BODY as u64)
            .read_to_end(&mut body);
        Ok(OutboundResponse {
            status,
            headers,
            body,
        })
    }
}

/// Why `url` may not be called before its name is resolved: a scheme other than http or https,
/// no host, or a literal address the policy refuses (a literal never reaches the resolver, so it
/// is checked as the URL parser read it). Names are checked by [`CheckedResolver`].
fn refusal(url: &reqwest::Url, policy: &AddressPolicy) -> Option<String> {
    if url.scheme() != "http" && url.scheme() != "https" {
        return Some(format!(
            "refused: the scheme {} is not http or https",
            url.scheme()
        ));
    }
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
        Some(url::Host::Domain(_)) => return None,
        None => return Some("bad URL: no host".to_owned()),
    };
    policy.refusal(literal).map(|why| format!("refused: {why}"))
}

/// The error and its causes on one line (reqwest's own text is "error sending request").
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Resolves a name with the system's resolver and refuses the whole answer when any address in
/// it is refused (a name that also resolves to a private address is a rebinding attempt).
struct CheckedResolver {
    policy: Arc<AddressPolicy>,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addresses = tokio::task::spawn_blocking(move || resolve_checked(&host, &policy))
                .await
                .map_err(|error| error.to_string())??;
            Ok(Box::new(addresses.into_iter()) as Addrs)
        })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn resolve_checked(host: &str, policy: &AddressPolicy) -> Result<Vec<SocketAddr>, BoxError> {
    let addresses: Vec<SocketAddr> = (host, 0).to_socket_addrs()?.collect();
    if addresses.is_empty() {
        return Err(format!("{host} has no address").into());
    }
    for address in &addresses {
        if let Some(refusal) = policy.refusal(address.ip()) {
            return Err(format!("refused: {host} resolves to {refusal}").into());
        }
    }
    Ok(addresses)
}

/// The library's test receiver: a real HTTP/1.1 server on 127.0.0.1.
#[cfg(test)]
#[path = "../../tests/common/http.rs"]
mod http;

#[cfg(test)]
mod tests {
    //! The SSRF matrix against a real receiver on 127.0.0.1: what is refused never reaches it.

    use super::*;
    use crate::jobs::http::{self, Receiver};

    fn request(url: &str) -> OutboundRequest {
        OutboundRequest {
            method: "POST".to_owned(),
            url: url.to_owned(),
            headers: vec![("X-Job-Id".to_owned(), "job_1".to_owned())],
            body: Some(b"{}".to_vec()),
            timeout_ms: 5_000,
        }
    }

    fn transport(allowed: &[&str]) -> HttpTransport {
        HttpTransport::new(AddressPolicy::parse(allowed).unwrap()).unwrap()
    }

    #[test]
    fn blocked_addresses_in_every_form_never_reach_the_receiver() {
        let receiver = Receiver::start();
        let port = receiver.port;
        let strict = transport(&[]);
        let loopback_open = transport(&["127.0.0.0/8"]);
        for url in [
            format!("http://127.0.0.1:{port}/a"),
            format!("http://2130706433:{port}/a"),
            format!("http://0x7f.1:{port}/a"),
            format!("http://0177.0.0.1:{port}/a"),
            format!("http://127%2E0.0.1:{port}/a"),
            format!("http://[::1]:{port}/a"),
            format!("http://[::ffff:127.0.0.1]:{port}/a"),
            format!("http://[64:ff9b::7f00:1]:{port}/a"),
            format!("http://[2002:7f00:1::1]:{port}/a"),
            // A name: refused after resolving, before any connection.
            format!("http://localhost:{port}/a"),
            format!("http://169.254.169.254:{port}/latest/meta-data/"),
            format!("http://10.0.0.1:{port}/a"),
            format!("http://100.64.0.1:{port}/a"),
        ] {
            let error = strict.send(&request(&url)).unwrap_err();
            assert!(error.contains("refused"), "{url}: {error}");
        }
        // Opening 127.0.0.0/8 opens neither the IPv6 forms that carry it nor other ranges.
        for url in [
            format!("http://[::ffff:127.0.0.1]:{port}/a"),
            format!("http://[64:ff9b::7f00:1]:{port}/a"),
            format!("http://10.0.0.1:{port}/a"),
        ] {
            let error = loopback_open.send(&request(&url)).unwrap_err();
            assert!(error.contains("refused"), "{url}: {error}");
        }
        assert!(
            receiver.all().is_empty(),
            "a refused call reached the receiver"
        );
        // What the range opens goes through, by literal and by name.
        for url in [
            format!("http://127.0.0.1:{port}/ok"),
            format!("http://localhost:{port}/ok"),
        ] {
            let response = loopback_open.send(&request(&url)).unwrap();
            assert_eq!(response.status, 200, "{url}");
        }
        let seen = receiver.seen("/ok");
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].headers["x-job-id"], "job_1");
        assert_eq!(seen[0].body, "{}");
    }

    #[test]
    fn redirects_are_followed_a_few_times_and_every_hop_is_checked() {
        let receiver = Receiver::start();
        let transport = transport(&["127.0.0.0/8"]);
        // 302 to an allowed address: followed (a POST becomes a GET, as browsers do).
        receiver.redirect("/moved", 302, &receiver.url("/inside"));
        let response = transport.send(&request(&receiver.url("/moved"))).unwrap();
        assert_eq!(response.status, 200);
        let inside = receiver.seen("/inside");
        assert_eq!(inside.len(), 1);
        assert_eq!(inside[0].method, "GET");
        // 307 keeps the method and the body.
        receiver.redirect("/kept", 307, &receiver.url("/inside"));
        transport.send(&request(&receiver.url("/kept"))).unwrap();
        let inside = receiver.seen("/inside");
        assert_eq!(
            (inside[1].method.as_str(), inside[1].body.as_str()),
            ("POST", "{}")
        );
        // A hop to a refused address (literal or by name) fails the attempt and is not made.
        receiver.redirect("/metadata", 307, "http://169.254.169.254/latest/meta-data/");
        let error = transport
            .send(&request(&receiver.url("/metadata")))
            .unwrap_err();
        assert!(
            error.contains("redirect to http://169.254.169.254/latest/meta-data/: refused"),
            "{error}"
        );
        receiver.redirect("/to-lan", 302, "http://[::ffff:10.0.0.1]:9/x");
        let error = transport
            .send(&request(&receiver.url("/to-lan")))
            .unwrap_err();
        assert!(error.contains(": refused: "), "{error}");
        // A Location that is not http(s) is not followed: the 3xx is the answer (a failure).
        receiver.redirect("/to-file", 302, "file:///etc/passwd");
        let response = transport.send(&request(&receiver.url("/to-file"))).unwrap();
        assert_eq!(response.status, 302);
        // A loop stops after MAX_REDIRECTS hops.
        receiver.redirect("/loop", 302, &receiver.url("/loop"));
        receiver.answer("/loop", &[302; 10]);
        let error = transport
            .send(&request(&receiver.url("/loop")))
            .unwrap_err();
        assert!(error.contains("more than 5 redirects"), "{error}");
        assert_eq!(receiver.seen("/loop").len(), MAX_REDIRECTS + 1);
    }

    #[test]
    fn a_silent_target_times_out_as_a_transport_error() {
        let receiver = Receiver::start();
        receiver.answer("/slow", &[http::HANG]);
        let transport = transport(&["127.0.0.0/8"]);
        let mut slow = request(&receiver.url("/slow"));
        slow.timeout_ms = 300;
        let error = transport.send(&slow).unwrap_err();
        assert!(
            error.contains("timed out") || error.contains("timeout"),
            "{error}"
        );
    }
}
