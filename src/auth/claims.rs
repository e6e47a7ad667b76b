//! The claims of an API key, [`KeyClaims`]: `project_id`, `selected_services`, `scores_id`, `id`.

use serde::{Deserialize, Deserializer, Serialize};

use crate::recognition::Service;

/// Longest identifier accepted in a claim.
const MAX_ID_LEN: usize = 128;

/// An API key's claims. Other claims a backend adds are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyClaims {
    /// Project the key belongs to.
    pub project_id: String,
    /// Enabled recognition services, by their spec names. A comma-separated string is accepted too.
    #[serde(deserialize_with = "list_or_comma_string")]
    pub selected_services: Vec<String>,
    /// Custom scoring rules, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scores_id: Option<String>,
    /// Unique key identifier.
    pub id: String,
    /// Issued-at, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    /// Expiry, Unix seconds; cloud keys have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    /// Not before, Unix seconds: the key is refused until then (RFC 7519 `nbf`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
}

impl KeyClaims {
    /// Checks identifiers and service names; the text says which claim is wrong.
    pub fn validate(&self) -> Result<(), String> {
        for (name, value) in [
            ("project_id", Some(&self.project_id)),
            ("id", Some(&self.id)),
            ("scores_id", self.scores_id.as_ref()),
        ] {
            if let Some(value) = value {
                if value.is_empty()
                    || value.len() > MAX_ID_LEN
                    || value.chars().any(char::is_control)
                {
                    return Err(format!(
                        "claim {name} must be 1 to {MAX_ID_LEN} printable characters"
                    ));
                }
            }
        }
        self.services().map(|_| ())
    }

    /// The services as [`Service`] values, in the order given, without duplicates.
    pub fn services(&self) -> Result<Vec<Service>, String> {
        let mut services = Vec::with_capacity(self.selected_services.len());
        for name in &self.selected_services {
            let service = Service::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = Service::ALL.iter().map(|s| s.name()).collect();
                format!(
                    "unknown service \"{name}\" in selected_services; known services: {}",
                    known.join(", ")
                )
            })?;
            if !services.contains(&service) {
                services.push(service);
            }
        }
        Ok(services)
    }
}

fn list_or_comma_string<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrString {
        List(Vec<String>),
        Text(String),
    }
    Ok(match ListOrString::deserialize(deserializer)? {
        ListOrString::List(list) => list,
        ListOrString::Text(text) => text
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_accept_a_list_or_a_comma_string() {
        let from_list: KeyClaims = serde_json::from_str(
            r#"{"project_id":"p","id":"k","selected_services":["Face Recognition","Voice Recognition"]}"#,
        )
        .unwrap();
        let from_text: KeyClaims = serde_json::from_str(
            r#"{"project_id":"p","id":"k","selected_services":"Face Recognition, Voice Recognition","scores_id":null}"#,
        )
        .unwrap();
        assert_eq!(from_list.selected_services, from_text.selected_services);
        assert_eq!(
            from_list.services().unwrap(),
            vec![Service::FaceRecognition, Service::VoiceRecognition]
        );
    }

    #[test]
    fn claims_are_checked() {
        let claims = KeyClaims {
            project_id: "p".into(),
            selected_services: vec![],
            scores_id: Some(String::new()),
            id: "k".into(),
            iat: None,
            exp: None,
            nbf: None,
        };
        assert!(claims.validate().unwrap_err().contains("scores_id"));
    }
}
