//! The `serve` section of `vouch.json`: what only `vouch serve` reads (TLS, CORS, upload
//! concurrency). Every command that opens the file checks the section, only `vouch serve` uses
//! it, and the engine never sees it, so one file configures the library and its server.
//!
//! ```json
//! "serve": {
//!   "tls": { "cert_file": "/etc/vouch/cert.pem", "key_file": "/etc/vouch/key.pem" },
//!   "cors": { "allowed_origins": ["https://kiosk.example"], "max_age_s": 600 },
//!   "max_concurrent_uploads": 4,
//!   "max_concurrent_processing": 2
//! }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

/// The `serve` section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServeConfig {
    /// HTTPS with this certificate chain and key; plain HTTP without it.
    #[serde(default)]
    pub tls: Option<TlsFiles>,
    /// Cross-origin requests from these web origins; none without it.
    #[serde(default)]
    pub cors: Option<Cors>,
    /// Requests with a multipart body that are read and processed at once; more wait (unread,
    /// so the kernel holds them back) for up to `UPLOAD_QUEUE_TIMEOUT`. Bounds the memory
    /// uploads take: each holds at most its file (50 MB; 100 MB for AVF) and its processing.
    #[serde(default = "default_uploads")]
    pub max_concurrent_uploads: usize,
    /// Uploads processed by the engine at once, in the order they finished arriving; the
    /// engine already spreads one across every core, so more at once only makes some wait
    /// longer. Default: the number of cores.
    #[serde(default)]
    pub max_concurrent_processing: Option<usize>,
}

/// Most uploads the server reads and processes at once, unless configured.
pub(crate) const DEFAULT_CONCURRENT_UPLOADS: usize = 4;

fn default_uploads() -> usize {
    DEFAULT_CONCURRENT_UPLOADS
}

/// PEM files of the server's certificate chain and private key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TlsFiles {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

/// Which web origins may call the server from a browser.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Cors {
    /// Exact origins (`scheme://host[:port]`), compared case-insensitively; `"*"` allows any
    /// origin (never with credentials: browsers send none to a wildcard).
    pub allowed_origins: Vec<String>,
    /// Seconds a browser may cache a preflight answer.
    #[serde(default = "default_max_age")]
    pub max_age_s: u32,
}

fn default_max_age() -> u32 {
    600
}

/// The request headers a browser may send cross-origin: the ones the two services read.
pub(crate) const CORS_ALLOWED_HEADERS: &str = "authorization, content-type, x-user-fullname, \
    x-session-id, x-action-trigger, x-device-info, x-geo-location, x-request-tags, \
    x-inhouse-docauth, x-inhouse-mrz, x-use-prefilled-video";
/// The methods the two services answer.
pub(crate) const CORS_ALLOWED_METHODS: &str = "GET, POST, PUT, PATCH, DELETE";

impl Cors {
    /// The `Access-Control-Allow-Origin` value for a request from `origin`, if it is allowed.
    pub(crate) fn allow(&self, origin: &str) -> Option<String> {
        if self.allowed_origins.iter().any(|allowed| allowed == "*") {
            return Some("*".to_owned());
        }
        self.allowed_origins
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(origin))
            .then(|| origin.to_owned())
    }
}

/// Splits `vouch.json` into the engine's options and the `serve` section.
pub(crate) fn split(text: &str) -> Result<(String, ServeConfig), String> {
    let Ok(Value::Object(mut options)) = serde_json::from_str::<Value>(text) else {
        // Not an object: the engine says what is wrong with it.
        return Ok((text.to_owned(), ServeConfig::default_config()));
    };
    let serve = match options.remove("serve") {
        None => ServeConfig::default_config(),
        Some(section) => serde_json::from_value::<ServeConfig>(section)
            .map_err(|error| format!("\"serve\": {error}"))?,
    };
    if serve.max_concurrent_uploads == 0 || serve.max_concurrent_processing == Some(0) {
        return Err(
            "\"serve\": max_concurrent_uploads and max_concurrent_processing must be at least 1"
                .to_owned(),
        );
    }
    if let Some(cors) = &serve.cors {
        for origin in &cors.allowed_origins {
            let valid = origin == "*"
                || url::Url::parse(origin).is_ok_and(|url| {
                    matches!(url.scheme(), "http" | "https")
                        && url.path() == "/"
                        && !origin.ends_with('/')
                        && url.query().is_none()
                });
            if !valid {
                return Err(format!(
                    "\"serve\": cors origin \"{origin}\" is not a scheme://host[:port] origin or \"*\""
                ));
            }
        }
    }
    Ok((Value::Object(options).to_string(), serve))
}

impl ServeConfig {
    fn default_config() -> Self {
        Self {
            tls: None,
            cors: None,
            max_concurrent_uploads: DEFAULT_CONCURRENT_UPLOADS,
            max_concurrent_processing: None,
        }
    }

    /// `max_concurrent_processing`, or the number of cores.
    pub(crate) fn processing(&self) -> usize {
        self.max_concurrent_processing.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        })
    }
}

/// The rustls server configuration for the certificate chain and key in `files`.
pub(crate) fn tls_acceptor(files: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read_error = |path: &Path, error: rustls::pki_types::pem::Error| {
        format!("tls: cannot read {}: {error}", path.display())
    };
    let chain = CertificateDer::pem_file_iter(&files.cert_file)
        .map_err(|error| read_error(&files.cert_file, error))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| read_error(&files.cert_file, error))?;
    if chain.is_empty() {
        return Err(format!(
            "tls: {} holds no certificate",
            files.cert_file.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key_file)
        .map_err(|error| read_error(&files.key_file, error))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("tls: {error}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|error| format!("tls: the certificate and key do not fit together: {error}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_taken_out_of_the_engine_options() {
        let (engine, serve) = split(
            r#"{"database": ":memory:", "serve": {"cors": {"allowed_origins": ["https://kiosk.example"]}}}"#,
        )
        .unwrap();
        assert_eq!(engine, r#"{"database":":memory:"}"#);
        let cors = serve.cors.unwrap();
        assert_eq!(
            cors.allow("https://KIOSK.example").as_deref(),
            Some("https://KIOSK.example")
        );
        assert_eq!(cors.allow("https://evil.example"), None);
        assert_eq!(serve.max_concurrent_uploads, DEFAULT_CONCURRENT_UPLOADS);
        let (_, plain) = split(r#"{"database": ":memory:"}"#).unwrap();
        assert!(plain.tls.is_none() && plain.cors.is_none());
    }

    #[test]
    fn a_wrong_section_is_refused_with_its_reason() {
        for (text, reason) in [
            (r#"{"serve": {"tsl": {}}}"#, "unknown field `tsl`"),
            (
                r#"{"serve": {"cors": {"allowed_origins": ["https://a.example/"]}}}"#,
                "is not a scheme://host[:port] origin",
            ),
            (r#"{"serve": {"max_concurrent_uploads": 0}}"#, "at least 1"),
        ] {
            let error = split(text).unwrap_err();
            assert!(error.contains(reason), "{error}");
        }
    }
}
