//! The five recognition services of the verification spec, [`Service`], and their spec names.

use std::fmt;

/// One recognition service of process-video, named as the spec names it in `selected_services` and in
/// the `data` object of the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Service {
    /// `Active Speaker Detection`: the visible person is the one speaking.
    ActiveSpeakerDetection,
    /// `Visual Speech Recognition`: the spoken phrase matches the displayed phrase.
    VisualSpeechRecognition,
    /// `Face Liveness Detection`: the face is live, not a photo or a replay.
    FaceLivenessDetection,
    /// `Voice Recognition`: the speaker's voice matches the enrolled voice.
    VoiceRecognition,
    /// `Face Recognition`: the face matches the enrolled face.
    FaceRecognition,
}

impl Service {
    /// Every service, in the order results are reported.
    pub const ALL: [Service; 5] = [
        Service::ActiveSpeakerDetection,
        Service::VisualSpeechRecognition,
        Service::FaceLivenessDetection,
        Service::VoiceRecognition,
        Service::FaceRecognition,
    ];

    /// The spec's name, e.g. `"Face Recognition"`.
    pub fn name(self) -> &'static str {
        match self {
            Service::ActiveSpeakerDetection => "Active Speaker Detection",
            Service::VisualSpeechRecognition => "Visual Speech Recognition",
            Service::FaceLivenessDetection => "Face Liveness Detection",
            Service::VoiceRecognition => "Voice Recognition",
            Service::FaceRecognition => "Face Recognition",
        }
    }

    /// Parses the spec's name exactly (case-sensitive, as the cloud service writes it).
    pub fn from_name(name: &str) -> Option<Service> {
        Service::ALL
            .into_iter()
            .find(|service| service.name() == name)
    }

    /// Whether the spec removes this service when authorization consent is missing.
    pub fn needs_authorization_consent(self) -> bool {
        matches!(self, Service::VoiceRecognition | Service::FaceRecognition)
    }

    /// Whether a passing result says who the person is (Face or Voice Recognition): the evidence
    /// a decision needs under the `no_identity` policy of the scoring rules.
    pub fn is_identity(self) -> bool {
        matches!(self, Service::VoiceRecognition | Service::FaceRecognition)
    }

    /// Whether the service compares against enrolled templates.
    pub fn needs_enrollment(self) -> bool {
        self.needs_authorization_consent()
    }
}

impl fmt::Display for Service {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_exact() {
        for service in Service::ALL {
            assert_eq!(Service::from_name(service.name()), Some(service));
        }
        assert_eq!(Service::from_name("face recognition"), None);
        assert_eq!(Service::from_name("Face Recognition "), None);
    }

    #[test]
    fn only_recognition_services_need_consent() {
        let gated: Vec<_> = Service::ALL
            .into_iter()
            .filter(|s| s.needs_authorization_consent())
            .collect();
        assert_eq!(
            gated,
            vec![Service::VoiceRecognition, Service::FaceRecognition]
        );
    }
}
