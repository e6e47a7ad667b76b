//! API keys: [`KeyVerifier`] checks `Authorization: Bearer <JWT>` offline and mints HS256 keys;
//! [`ApiKey`] is what a verified key grants; [`AuthError`] says why a key was refused, in the spec's
//! words where the spec has words (`missing authorization token`, `invalid api key format`,
//! `api key is not active`).
//!
//! jsonwebtoken stays inside this module. Tokens are HS256 (a secret shared with the customer's
//! backend) or EdDSA / ES256 (the backend keeps the private key; the device holds the public key).
//! The spec says keys do not expire; `exp` and `nbf` claims are still honoured when a backend sets them, and are
//! checked against the engine's clock rather than the system's.

mod claims;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};

pub use claims::KeyClaims;

pub use crate::error::AuthError;
use crate::error::{Error, Result};
use crate::options::ApiKeyOptions;
use crate::recognition::Service;

/// What a verified, active key grants to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// The key's `id` claim.
    pub key_id: String,
    /// The project the key belongs to.
    pub project_id: String,
    /// The recognition services the key enables.
    pub services: Vec<Service>,
    /// Custom scoring rules named by the key.
    pub scores_id: Option<String>,
}

/// Verification keys, built once at engine open. `Send + Sync`, immutable.
pub struct KeyVerifier {
    hs256: Option<(EncodingKey, DecodingKey)>,
    public_keys: Vec<PublicKey>,
}

struct PublicKey {
    kid: Option<String>,
    algorithm: Algorithm,
    key: DecodingKey,
}

impl std::fmt::Debug for KeyVerifier {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("KeyVerifier")
            .field("hs256", &self.hs256.is_some())
            .field("public_keys", &self.public_keys.len())
            .finish()
    }
}

/// Takes the token out of an `Authorization` header value.
pub fn bearer_token(header: Option<&str>) -> Result<&str, AuthError> {
    let value = header.ok_or(AuthError::MissingToken)?;
    let token = value
        .strip_prefix("Bearer ")
        .ok_or(AuthError::InvalidFormat)?
        .trim();
    if token.is_empty() {
        return Err(AuthError::InvalidFormat);
    }
    Ok(token)
}

impl KeyVerifier {
    /// Builds the verifier from validated options.
    pub fn new(options: &ApiKeyOptions) -> Result<KeyVerifier> {
        let hs256 = options.hs256_secret_bytes()?.map(|secret| {
            (
                EncodingKey::from_secret(&secret),
                DecodingKey::from_secret(&secret),
            )
        });
        let mut public_keys = Vec::with_capacity(options.public_keys.len());
        for (index, option) in options.public_keys.iter().enumerate() {
            let (algorithm, key) = match option.algorithm.as_str() {
                "EdDSA" => (
                    Algorithm::EdDSA,
                    DecodingKey::from_ed_pem(option.pem.as_bytes()),
                ),
                "ES256" => (
                    Algorithm::ES256,
                    DecodingKey::from_ec_pem(option.pem.as_bytes()),
                ),
                other => {
                    return Err(Error::InvalidOptions(format!(
                        "api_keys.public_keys[{index}].algorithm \"{other}\" is not supported"
                    )))
                }
            };
            let key = key.map_err(|error| {
                Error::InvalidOptions(format!(
                    "api_keys.public_keys[{index}].pem is not a usable key: {error}"
                ))
            })?;
            public_keys.push(PublicKey {
                kid: option.kid.clone(),
                algorithm,
                key,
            });
        }
        Ok(KeyVerifier { hs256, public_keys })
    }

    /// Whether keys can be minted here (an HS256 secret is configured).
    pub fn can_mint(&self) -> bool {
        self.hs256.is_some()
    }

    /// Signs `claims` as an HS256 token.
    pub fn mint(&self, claims: &KeyClaims) -> Result<String> {
        let (encoding, _) = self.hs256.as_ref().ok_or_else(|| {
            Error::InvalidArgument(
                "creating api keys needs api_keys.hs256_secret in the engine options".to_owned(),
            )
        })?;
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, encoding)
            .map_err(|error| Error::InvalidArgument(format!("cannot sign api key: {error}")))
    }

    /// Verifies the token's signature and claims at time `now_ms`. Revocation is the store's
    /// business and is checked by the caller.
    pub fn verify(&self, token: &str, now_ms: i64) -> Result<KeyClaims, AuthError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|error| AuthError::Invalid(describe(&error)))?;
        let candidates: Vec<&DecodingKey> = match header.alg {
            Algorithm::HS256 => match &self.hs256 {
                Some((_, decoding)) => vec![decoding],
                None => {
                    return Err(AuthError::Invalid(
                        "HS256 keys are not accepted by this engine".to_owned(),
                    ))
                }
            },
            Algorithm::EdDSA | Algorithm::ES256 => self
                .public_keys
                .iter()
                .filter(|key| key.algorithm == header.alg)
                .filter(|key| header.kid.is_none() || key.kid == header.kid)
                .map(|key| &key.key)
                .collect(),
            other => {
                return Err(AuthError::Invalid(format!(
                    "algorithm {other:?} is not accepted"
                )))
            }
        };
        if candidates.is_empty() {
            return Err(AuthError::Invalid(format!(
                "no verification key for algorithm {:?}{}",
                header.alg,
                header
                    .kid
                    .map(|kid| format!(" and kid \"{kid}\""))
                    .unwrap_or_default()
            )));
        }
        let mut validation = Validation::new(header.alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_aud = false;
        let mut last_error = None;
        for key in candidates {
            match jsonwebtoken::decode::<KeyClaims>(token, key, &validation) {
                Ok(data) => return check_claims(data.claims, now_ms),
                Err(error) => last_error = Some(error),
            }
        }
        Err(AuthError::Invalid(
            last_error.map(|error| describe(&error)).unwrap_or_default(),
        ))
    }
}

fn check_claims(claims: KeyClaims, now_ms: i64) -> Result<KeyClaims, AuthError> {
    claims.validate().map_err(AuthError::Invalid)?;
    let now = now_ms.div_euclid(1000);
    if claims.exp.is_some_and(|expires_at| now >= expires_at) {
        return Err(AuthError::Expired);
    }
    if claims.nbf.is_some_and(|not_before| now < not_before) {
        return Err(AuthError::NotYetValid);
    }
    Ok(claims)
}

fn describe(error: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::InvalidSignature => "signature does not verify".to_owned(),
        ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Utf8(_) => {
            "malformed token".to_owned()
        }
        ErrorKind::Json(detail) => format!("unusable claims: {detail}"),
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
            "algorithm not accepted".to_owned()
        }
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn verifier() -> KeyVerifier {
        let secret = base64::engine::general_purpose::STANDARD.encode([42u8; 32]);
        KeyVerifier::new(&ApiKeyOptions {
            hs256_secret: Some(secret),
            public_keys: vec![],
        })
        .unwrap()
    }

    fn claims() -> KeyClaims {
        KeyClaims {
            project_id: "p1".into(),
            selected_services: vec!["Face Recognition".into()],
            scores_id: None,
            id: "key_1".into(),
            iat: Some(1),
            exp: None,
            nbf: None,
        }
    }

    #[test]
    fn bearer_rules_match_the_spec() {
        assert_eq!(bearer_token(None), Err(AuthError::MissingToken));
        assert_eq!(
            bearer_token(Some("Token abc")),
            Err(AuthError::InvalidFormat)
        );
        assert_eq!(
            bearer_token(Some("bearer abc")),
            Err(AuthError::InvalidFormat)
        );
        assert_eq!(bearer_token(Some("Bearer ")), Err(AuthError::InvalidFormat));
        assert_eq!(bearer_token(Some("Bearer abc")), Ok("abc"));
        assert_eq!(
            AuthError::MissingToken.to_string(),
            "missing authorization token"
        );
        assert_eq!(
            AuthError::InvalidFormat.to_string(),
            "invalid api key format"
        );
        assert_eq!(AuthError::NotActive.to_string(), "api key is not active");
    }

    #[test]
    fn minted_keys_verify_and_tampering_is_caught() {
        let verifier = verifier();
        let token = verifier.mint(&claims()).unwrap();
        assert_eq!(verifier.verify(&token, 0).unwrap(), claims());
        let mut tampered = token.clone();
        tampered.pop();
        tampered.push(if token.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(
            verifier.verify(&tampered, 0),
            Err(AuthError::Invalid("signature does not verify".into()))
        );
        assert_eq!(
            verifier.verify("a.b", 0),
            Err(AuthError::Invalid("malformed token".into()))
        );
        let other = KeyVerifier::new(&ApiKeyOptions {
            hs256_secret: Some(base64::engine::general_purpose::STANDARD.encode([43u8; 32])),
            public_keys: vec![],
        })
        .unwrap();
        assert!(matches!(
            other.verify(&token, 0),
            Err(AuthError::Invalid(_))
        ));
    }

    #[test]
    fn expiry_uses_the_given_clock() {
        let verifier = verifier();
        let token = verifier
            .mint(&KeyClaims {
                exp: Some(100),
                ..claims()
            })
            .unwrap();
        assert!(verifier.verify(&token, 99_999).is_ok());
        assert_eq!(verifier.verify(&token, 100_000), Err(AuthError::Expired));
        // Not before: refused until then, by the same clock.
        let token = verifier
            .mint(&KeyClaims {
                nbf: Some(100),
                ..claims()
            })
            .unwrap();
        assert_eq!(verifier.verify(&token, 99_999), Err(AuthError::NotYetValid));
        assert!(verifier.verify(&token, 100_000).is_ok());
    }

    #[test]
    fn unknown_services_and_empty_ids_are_refused() {
        let verifier = verifier();
        let token = verifier
            .mint(&KeyClaims {
                selected_services: vec!["Palm Reading".into()],
                ..claims()
            })
            .unwrap();
        let error = verifier.verify(&token, 0).unwrap_err().to_string();
        assert!(
            error.contains("unknown service \"Palm Reading\""),
            "{error}"
        );
        let token = verifier
            .mint(&KeyClaims {
                project_id: String::new(),
                ..claims()
            })
            .unwrap();
        assert!(verifier
            .verify(&token, 0)
            .unwrap_err()
            .to_string()
            .contains("project_id"));
    }

    #[test]
    fn engine_without_secret_refuses_hs256() {
        let verifier = KeyVerifier::new(&ApiKeyOptions::default()).unwrap();
        let token = self::verifier().mint(&claims()).unwrap();
        assert_eq!(
            verifier.verify(&token, 0),
            Err(AuthError::Invalid(
                "HS256 keys are not accepted by this engine".into()
            ))
        );
        assert!(verifier.mint(&claims()).is_err());
    }
}
