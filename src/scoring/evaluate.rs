//! [`RuleSet::evaluate`]: per-service [`Outcome`]s in, one [`Decision`] out. The semantics are
//! described in the documentation of the `scoring` module.

use std::collections::BTreeMap;

use super::{Policy, RuleSet};
use crate::recognition::Service;

/// Added once, after the per-service reasons, when any service was removed for missing consent.
const REMOVED_FOR_CONSENT_REASON: &str = "services_removed_missing_consent";
/// Added when neither Face nor Voice Recognition passed and the rule set requires identity.
const NO_IDENTITY_REASON: &str = "no_identity_evidence";
/// Added when no service with a positive weight produced a score.
const NO_SERVICES_SCORED_REASON: &str = "no_services_scored";
/// Added when the score is the only reason the decision fails.
const SCORE_BELOW_MINIMUM_REASON: &str = "score_below_minimum";
/// The generic unavailability code; it is already carried by `<prefix>_unavailable`.
const GENERIC_UNAVAILABLE_CODE: &str = "unavailable";

/// What one service produced for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The service ran and produced a confidence in 0..=1 (probability of a face match, voice score,
    /// liveness probability, active speaker score, 1.0/0.0 for the phrase check).
    Score(f64),
    /// A recognition service had no enrolled template for the user.
    NotEnrolled,
    /// The service could not produce a result.
    Unavailable {
        /// Machine-readable snake_case code such as `"no_face_detected"`, `"not_enough_speech"` or
        /// `"unavailable"`; it is appended to the decision reasons as given.
        reason: String,
    },
    /// Removed because authorization consent is missing (spec rule: Face and Voice Recognition are
    /// removed).
    RemovedForConsent,
}

/// The spec's `scoring_result` for one verification, and the rule set that produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Whether the verification passed.
    pub passed: bool,
    /// Weighted score in 0..=100, rounded to 2 decimals.
    pub score: f64,
    /// Why the decision came out as it did, in a deterministic order.
    pub decision_reasons: Vec<String>,
    /// `id` of the rule set that decided.
    pub rule_set_id: String,
    /// `version` of the rule set that decided.
    pub rule_set_version: u32,
}

impl Decision {
    /// The spec's `scoring_result.status`: `"pass"` or `"fail"`.
    pub fn status(&self) -> &'static str {
        if self.passed {
            "pass"
        } else {
            "fail"
        }
    }

    /// The human-readable message: `"verification passed"` or `"verification failed"`.
    pub fn message(&self) -> &'static str {
        if self.passed {
            "verification passed"
        } else {
            "verification failed"
        }
    }
}

impl RuleSet {
    /// Decides one verification from the outcome of each service; see the `scoring` module
    /// documentation for the exact rules. If a service appears more than once, its last outcome is
    /// used. Never panics, even for a rule set that does not validate; such a rule set fails closed
    /// where a value is unusable (a NaN `pass_at` or `min_score` fails, an unusable weight counts as
    /// 0).
    pub fn evaluate(&self, outcomes: &[(Service, Outcome)]) -> Decision {
        let mut latest_outcomes = BTreeMap::new();
        for (service, outcome) in outcomes {
            latest_outcomes.insert(*service, outcome);
        }

        let mut decision_reasons = Vec::new();
        let mut failed = false;
        let mut any_removed_for_consent = false;
        let mut identity_passed = false;
        // (weight, confidence) of every service that produced a score.
        let mut scored = Vec::new();

        // Walking Service::ALL rather than the input keeps the reasons in the same order whatever
        // order the services reported in.
        for service in Service::ALL {
            let (Some(outcome), Some(rule)) =
                (latest_outcomes.get(&service), self.services.get(&service))
            else {
                continue;
            };
            let prefix = reason_prefix(service);
            match outcome {
                Outcome::Score(confidence) => {
                    let confidence = usable_confidence(*confidence);
                    let service_passed = confidence >= rule.pass_at;
                    let verdict = if service_passed { "passed" } else { "failed" };
                    decision_reasons.push(format!("{prefix}_{verdict}"));
                    scored.push((usable_weight(rule.weight), confidence));
                    failed |= rule.required && !service_passed;
                    identity_passed |= service_passed && service.is_identity();
                }
                Outcome::NotEnrolled => {
                    decision_reasons.push(format!("{prefix}_not_enrolled"));
                    failed |= rule.required && self.not_enrolled == Policy::Fail;
                }
                Outcome::Unavailable { reason } => {
                    decision_reasons.push(format!("{prefix}_unavailable"));
                    if !reason.is_empty() && reason != GENERIC_UNAVAILABLE_CODE {
                        decision_reasons.push(format!("{prefix}_{reason}"));
                    }
                    failed |= rule.required && self.unavailable == Policy::Fail;
                }
                Outcome::RemovedForConsent => {
                    any_removed_for_consent = true;
                    // Consent is about the whole request, not one check, so `required` does not
                    // soften a "fail" policy here.
                    failed |= self.removed_for_consent == Policy::Fail;
                }
            }
        }
        if any_removed_for_consent {
            decision_reasons.push(REMOVED_FOR_CONSENT_REASON.to_owned());
        }
        if !identity_passed && self.no_identity == Policy::Fail {
            decision_reasons.push(NO_IDENTITY_REASON.to_owned());
            failed = true;
        }

        let score = match weighted_score(&scored) {
            Some(score) => {
                // The rounded score is compared so the reported number and the verdict agree: a
                // reported 60 never fails a minimum of 60.
                let meets_minimum = score >= self.min_score;
                if !failed && !meets_minimum {
                    decision_reasons.push(SCORE_BELOW_MINIMUM_REASON.to_owned());
                }
                failed |= !meets_minimum;
                score
            }
            None => {
                decision_reasons.push(NO_SERVICES_SCORED_REASON.to_owned());
                failed = true;
                0.0
            }
        };

        Decision {
            passed: !failed,
            score,
            decision_reasons,
            rule_set_id: self.id.clone(),
            rule_set_version: self.version,
        }
    }
}

/// The stem of a service's decision reasons.
fn reason_prefix(service: Service) -> &'static str {
    match service {
        Service::FaceRecognition => "face_match",
        Service::VoiceRecognition => "voice_match",
        Service::FaceLivenessDetection => "liveness",
        Service::ActiveSpeakerDetection => "active_speaker",
        Service::VisualSpeechRecognition => "phrase",
    }
}

/// A confidence clamped into 0..=1; a non-finite one counts as 0 so a broken model output can never
/// pass a check.
fn usable_confidence(confidence: f64) -> f64 {
    if confidence.is_finite() {
        confidence.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// A weight as scoring uses it; validation rejects unusable weights, this only keeps an unvalidated
/// rule set from producing a NaN score.
fn usable_weight(weight: f64) -> f64 {
    if weight.is_finite() && weight > 0.0 {
        weight
    } else {
        0.0
    }
}

/// Weighted mean of `confidence * 100` over the entries with a positive weight, clamped into 0..=100
/// and rounded to 2 decimals; `None` if no entry has a positive weight.
fn weighted_score(scored: &[(f64, f64)]) -> Option<f64> {
    let largest_weight = scored.iter().map(|(weight, _)| *weight).fold(0.0, f64::max);
    if largest_weight <= 0.0 {
        return None;
    }
    // Weights are relative; dividing by the largest keeps huge (but finite) weights from
    // overflowing the sums.
    let (weighted_sum, total_weight) = scored
        .iter()
        .map(|(weight, confidence)| (weight / largest_weight, confidence))
        .fold((0.0, 0.0), |(sum, total), (weight, confidence)| {
            (sum + weight * confidence, total + weight)
        });
    let score = (weighted_sum / total_weight * 100.0).clamp(0.0, 100.0);
    Some((score * 100.0).round() / 100.0)
}

#[cfg(test)]
mod tests {
    use super::super::ServiceRule;
    use super::*;

    use Service::{
        ActiveSpeakerDetection as ActiveSpeaker, FaceLivenessDetection as Liveness,
        FaceRecognition as Face, VisualSpeechRecognition as Phrase, VoiceRecognition as Voice,
    };

    fn rule(required: bool, weight: f64, pass_at: f64) -> ServiceRule {
        ServiceRule {
            required,
            weight,
            pass_at,
        }
    }

    /// A rule set with the default policies but `no_identity` skipped (the identity rule has tests
    /// of its own), `min_score` 0 and only the given services.
    fn rules_with(services: &[(Service, ServiceRule)]) -> RuleSet {
        let mut rules = RuleSet::default_rules();
        rules.no_identity = Policy::Skip;
        rules.id = "test".to_owned();
        rules.version = 3;
        rules.min_score = 0.0;
        rules.services = services.iter().cloned().collect();
        rules.validate().expect("test rule sets are valid");
        rules
    }

    fn scores(confidences: &[(Service, f64)]) -> Vec<(Service, Outcome)> {
        confidences
            .iter()
            .map(|(service, confidence)| (*service, Outcome::Score(*confidence)))
            .collect()
    }

    fn unavailable(reason: &str) -> Outcome {
        Outcome::Unavailable {
            reason: reason.to_owned(),
        }
    }

    fn assert_decision(decision: &Decision, passed: bool, score: f64, reasons: &[&str]) {
        assert_eq!(
            (
                decision.passed,
                decision.score,
                decision.decision_reasons.as_slice()
            ),
            (
                passed,
                score,
                reasons
                    .iter()
                    .map(|reason| reason.to_string())
                    .collect::<Vec<_>>()
                    .as_slice()
            ),
            "{decision:?}"
        );
    }

    #[test]
    fn confidence_equal_to_pass_at_passes() {
        let rules = rules_with(&[(Face, rule(true, 1.0, 0.8))]);
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 0.8)])),
            true,
            80.0,
            &["face_match_passed"],
        );
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 0.79)])),
            false,
            79.0,
            &["face_match_failed"],
        );
    }

    #[test]
    fn a_failed_required_service_fails_despite_a_high_score() {
        let outcomes = scores(&[
            (Face, 1.0),
            (Voice, 1.0),
            (Liveness, 1.0),
            (ActiveSpeaker, 0.4),
            (Phrase, 1.0),
        ]);
        // 35 + 25 + 20 + 0.1 * 40 + 10 = 94
        assert_decision(
            &RuleSet::default_rules().evaluate(&outcomes),
            false,
            94.0,
            &[
                "active_speaker_failed",
                "phrase_passed",
                "liveness_passed",
                "voice_match_passed",
                "face_match_passed",
            ],
        );
    }

    #[test]
    fn a_failed_optional_service_does_not_fail_the_decision() {
        let outcomes = scores(&[
            (Face, 1.0),
            (Voice, 1.0),
            (Liveness, 1.0),
            (ActiveSpeaker, 1.0),
            (Phrase, 0.0),
        ]);
        let mut rules = RuleSet::default_rules();
        rules.services.get_mut(&Phrase).expect("phrase").required = false;
        assert_decision(
            &rules.evaluate(&outcomes),
            true,
            90.0,
            &[
                "active_speaker_passed",
                "phrase_failed",
                "liveness_passed",
                "voice_match_passed",
                "face_match_passed",
            ],
        );
    }

    #[test]
    fn default_weights_give_the_weighted_mean() {
        let outcomes = scores(&[
            (Face, 0.9),
            (Voice, 0.7),
            (Liveness, 0.8),
            (ActiveSpeaker, 0.6),
            (Phrase, 1.0),
        ]);
        // 0.35 * 90 + 0.25 * 70 + 0.2 * 80 + 0.1 * 60 + 0.1 * 100 = 31.5 + 17.5 + 16 + 6 + 10 = 81
        let decision = RuleSet::default_rules().evaluate(&outcomes);
        assert_decision(
            &decision,
            true,
            81.0,
            &[
                "active_speaker_passed",
                "phrase_passed",
                "liveness_passed",
                "voice_match_passed",
                "face_match_passed",
            ],
        );
        assert_eq!(
            (decision.rule_set_id.as_str(), decision.rule_set_version),
            ("default", 1)
        );
    }

    #[test]
    fn weights_are_relative() {
        let rules = rules_with(&[(Face, rule(true, 3.0, 0.5)), (Voice, rule(true, 1.0, 0.5))]);
        // (3 * 50 + 1 * 90) / 4 = 60
        let decision = rules.evaluate(&scores(&[(Face, 0.5), (Voice, 0.9)]));
        assert_decision(
            &decision,
            true,
            60.0,
            &["voice_match_passed", "face_match_passed"],
        );
        assert_eq!(
            (decision.rule_set_id.as_str(), decision.rule_set_version),
            ("test", 3)
        );
    }

    #[test]
    fn huge_weights_do_not_overflow() {
        let rules = rules_with(&[
            (Face, rule(true, f64::MAX, 0.5)),
            (Voice, rule(true, f64::MAX, 0.5)),
        ]);
        assert_eq!(
            rules.evaluate(&scores(&[(Face, 0.5), (Voice, 0.9)])).score,
            70.0
        );
    }

    #[test]
    fn score_is_rounded_to_two_decimals() {
        let rules = rules_with(&[
            (Face, rule(false, 1.0, 0.5)),
            (Voice, rule(false, 1.0, 0.5)),
            (Liveness, rule(false, 1.0, 0.5)),
        ]);
        // (10 + 20 + 20) / 3 = 16.666...
        let decision = rules.evaluate(&scores(&[(Face, 0.1), (Voice, 0.2), (Liveness, 0.2)]));
        assert_eq!(decision.score, 16.67);
    }

    #[test]
    fn a_zero_weight_service_checks_but_does_not_score() {
        let rules = rules_with(&[(Face, rule(true, 0.0, 0.5)), (Voice, rule(true, 1.0, 0.5))]);
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 0.2), (Voice, 0.9)])),
            false,
            90.0,
            &["voice_match_passed", "face_match_failed"],
        );
    }

    #[test]
    fn score_equal_to_min_score_passes() {
        let mut rules = rules_with(&[(Face, rule(false, 1.0, 0.5))]);
        rules.min_score = 60.0;
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 0.6)])),
            true,
            60.0,
            &["face_match_passed"],
        );
        rules.min_score = 60.01;
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 0.6)])),
            false,
            60.0,
            &["face_match_passed", "score_below_minimum"],
        );
    }

    #[test]
    fn min_score_is_compared_with_the_rounded_score() {
        let mut rules = rules_with(&[(Face, rule(false, 1.0, 0.5))]);
        rules.min_score = 60.0;
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 0.59996)])),
            true,
            60.0,
            &["face_match_passed"],
        );
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 0.59994)])),
            false,
            59.99,
            &["face_match_passed", "score_below_minimum"],
        );
    }

    #[test]
    fn score_below_minimum_is_only_added_when_it_is_the_sole_failure() {
        let mut rules = rules_with(&[(Face, rule(true, 1.0, 0.5))]);
        rules.min_score = 60.0;
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 0.4)])),
            false,
            40.0,
            &["face_match_failed"],
        );
    }

    fn all_scores_but(service: Service, outcome: Outcome) -> Vec<(Service, Outcome)> {
        Service::ALL
            .into_iter()
            .map(|each| {
                let each_outcome = if each == service {
                    outcome.clone()
                } else {
                    Outcome::Score(1.0)
                };
                (each, each_outcome)
            })
            .collect()
    }

    const ALL_PASSED_BUT_FACE: [&str; 4] = [
        "active_speaker_passed",
        "phrase_passed",
        "liveness_passed",
        "voice_match_passed",
    ];

    fn with_face_reason(reason: &str) -> Vec<&str> {
        let mut reasons = ALL_PASSED_BUT_FACE.to_vec();
        reasons.push(reason);
        reasons
    }

    #[test]
    fn not_enrolled_fail_policy_fails_a_required_service() {
        let decision =
            RuleSet::default_rules().evaluate(&all_scores_but(Face, Outcome::NotEnrolled));
        assert_decision(
            &decision,
            false,
            100.0,
            &with_face_reason("face_match_not_enrolled"),
        );
    }

    #[test]
    fn not_enrolled_fail_policy_spares_an_optional_service() {
        let mut rules = RuleSet::default_rules();
        rules.services.get_mut(&Face).unwrap().required = false;
        let decision = rules.evaluate(&all_scores_but(Face, Outcome::NotEnrolled));
        assert_decision(
            &decision,
            true,
            100.0,
            &with_face_reason("face_match_not_enrolled"),
        );
    }

    #[test]
    fn not_enrolled_skip_policy_leaves_the_service_out_of_requirement_and_score() {
        let mut rules = RuleSet::default_rules();
        rules.not_enrolled = Policy::Skip;
        let outcomes = vec![
            (Face, Outcome::NotEnrolled),
            (Voice, Outcome::Score(0.6)),
            (Liveness, Outcome::Score(0.8)),
            (ActiveSpeaker, Outcome::Score(1.0)),
            (Phrase, Outcome::Score(1.0)),
        ];
        // (0.25 * 60 + 0.2 * 80 + 0.1 * 100 + 0.1 * 100) / 0.65 = 51 / 0.65 = 78.4615...
        assert_decision(
            &rules.evaluate(&outcomes),
            true,
            78.46,
            &with_face_reason("face_match_not_enrolled"),
        );
    }

    #[test]
    fn unavailable_fail_policy_fails_a_required_service_with_both_reasons() {
        let decision = RuleSet::default_rules()
            .evaluate(&all_scores_but(Liveness, unavailable("no_face_detected")));
        assert_decision(
            &decision,
            false,
            100.0,
            &[
                "active_speaker_passed",
                "phrase_passed",
                "liveness_unavailable",
                "liveness_no_face_detected",
                "voice_match_passed",
                "face_match_passed",
            ],
        );
    }

    #[test]
    fn generic_or_empty_unavailable_codes_are_not_repeated() {
        for code in ["unavailable", ""] {
            let decision =
                RuleSet::default_rules().evaluate(&all_scores_but(Face, unavailable(code)));
            assert_decision(
                &decision,
                false,
                100.0,
                &with_face_reason("face_match_unavailable"),
            );
        }
    }

    #[test]
    fn unavailable_fail_policy_spares_an_optional_service() {
        let mut rules = RuleSet::default_rules();
        rules.services.get_mut(&Phrase).expect("phrase").required = false;
        let decision = rules.evaluate(&all_scores_but(Phrase, unavailable("not_enough_speech")));
        assert_decision(
            &decision,
            true,
            100.0,
            &[
                "active_speaker_passed",
                "phrase_unavailable",
                "phrase_not_enough_speech",
                "liveness_passed",
                "voice_match_passed",
                "face_match_passed",
            ],
        );
    }

    #[test]
    fn the_phrase_is_required_by_default() {
        let decision =
            RuleSet::default_rules().evaluate(&all_scores_but(Phrase, Outcome::Score(0.0)));
        assert!(!decision.passed, "{decision:?}");
        assert!(decision
            .decision_reasons
            .contains(&"phrase_failed".to_owned()));
    }

    #[test]
    fn unavailable_skip_policy_leaves_the_service_out_of_requirement_and_score() {
        let mut rules = RuleSet::default_rules();
        rules.unavailable = Policy::Skip;
        let mut outcomes = all_scores_but(Face, unavailable("no_face_detected"));
        outcomes.push((Voice, Outcome::Score(0.5)));
        // (0.25 * 50 + 0.2 * 100 + 0.1 * 100 + 0.1 * 100) / 0.65 = 52.5 / 0.65 = 80.769...
        assert_decision(
            &rules.evaluate(&outcomes),
            true,
            80.77,
            &[
                "active_speaker_passed",
                "phrase_passed",
                "liveness_passed",
                "voice_match_passed",
                "face_match_unavailable",
                "face_match_no_face_detected",
            ],
        );
    }

    fn consent_removed_outcomes() -> Vec<(Service, Outcome)> {
        vec![
            (Face, Outcome::RemovedForConsent),
            (Voice, Outcome::RemovedForConsent),
            (Liveness, Outcome::Score(0.7)),
            (ActiveSpeaker, Outcome::Score(1.0)),
            (Phrase, Outcome::Score(1.0)),
        ]
    }

    #[test]
    fn removal_for_consent_fails_by_default_for_want_of_identity() {
        // (0.2 * 70 + 0.1 * 100 + 0.1 * 100) / 0.4 = 34 / 0.4 = 85: a high score, but nobody was
        // identified, so the default rules fail it.
        assert_decision(
            &RuleSet::default_rules().evaluate(&consent_removed_outcomes()),
            false,
            85.0,
            &[
                "active_speaker_passed",
                "phrase_passed",
                "liveness_passed",
                "services_removed_missing_consent",
                "no_identity_evidence",
            ],
        );
    }

    #[test]
    fn removal_for_consent_is_skipped_with_one_reason_when_identity_is_optional() {
        let mut rules = RuleSet::default_rules();
        rules.no_identity = Policy::Skip;
        assert_decision(
            &rules.evaluate(&consent_removed_outcomes()),
            true,
            85.0,
            &[
                "active_speaker_passed",
                "phrase_passed",
                "liveness_passed",
                "services_removed_missing_consent",
            ],
        );
    }

    #[test]
    fn one_passing_identity_check_is_identity_evidence() {
        let mut rules = RuleSet::default_rules();
        rules.unavailable = Policy::Skip;
        let mut outcomes = all_scores_but(Face, unavailable("no_face_detected"));
        outcomes.push((Voice, Outcome::Score(0.9)));
        assert!(rules.evaluate(&outcomes).passed);
        let mut outcomes = all_scores_but(Voice, unavailable("not_enough_speech"));
        outcomes.push((Face, Outcome::Score(0.9)));
        assert!(rules.evaluate(&outcomes).passed);
    }

    #[test]
    fn unavailable_or_failed_identity_is_no_evidence_even_when_skipped() {
        let mut rules = RuleSet::default_rules();
        rules.unavailable = Policy::Skip;
        rules.not_enrolled = Policy::Skip;
        let outcomes = vec![
            (Face, unavailable("no_face_detected")),
            (Voice, Outcome::NotEnrolled),
            (Liveness, Outcome::Score(1.0)),
            (ActiveSpeaker, Outcome::Score(1.0)),
            (Phrase, Outcome::Score(1.0)),
        ];
        let decision = rules.evaluate(&outcomes);
        assert!(!decision.passed);
        assert_eq!(
            decision.decision_reasons.last().map(String::as_str),
            Some("no_identity_evidence")
        );
        // A failing optional identity check is no evidence either.
        rules.services.get_mut(&Face).unwrap().required = false;
        let mut outcomes = outcomes;
        outcomes[0] = (Face, Outcome::Score(0.1));
        assert!(!rules.evaluate(&outcomes).passed);
        // Without identity services in the rule set there can be no evidence.
        rules.services.remove(&Face);
        rules.services.remove(&Voice);
        assert!(!rules.evaluate(&outcomes).passed);
        rules.no_identity = Policy::Skip;
        assert!(rules.evaluate(&outcomes).passed);
    }

    #[test]
    fn removal_for_consent_fail_policy_fails_even_optional_services() {
        let mut rules = RuleSet::default_rules();
        rules.removed_for_consent = Policy::Fail;
        rules.no_identity = Policy::Skip;
        for rule in rules.services.values_mut() {
            rule.required = false;
        }
        assert_decision(
            &rules.evaluate(&consent_removed_outcomes()),
            false,
            85.0,
            &[
                "active_speaker_passed",
                "phrase_passed",
                "liveness_passed",
                "services_removed_missing_consent",
            ],
        );
    }

    #[test]
    fn nothing_scored_fails_with_score_zero() {
        let mut rules = rules_with(&[(Face, rule(true, 1.0, 0.5)), (Voice, rule(true, 0.0, 0.5))]);
        rules.not_enrolled = Policy::Skip;
        assert_decision(&rules.evaluate(&[]), false, 0.0, &["no_services_scored"]);
        assert_decision(
            &rules.evaluate(&[(Face, Outcome::NotEnrolled)]),
            false,
            0.0,
            &["face_match_not_enrolled", "no_services_scored"],
        );
        assert_decision(
            &rules.evaluate(&scores(&[(Voice, 0.9)])),
            false,
            0.0,
            &["voice_match_passed", "no_services_scored"],
        );
    }

    #[test]
    fn services_missing_from_the_rule_set_are_ignored() {
        let rules = rules_with(&[(Face, rule(true, 1.0, 0.5))]);
        let outcomes = vec![
            (Voice, Outcome::NotEnrolled),
            (Liveness, unavailable("no_face_detected")),
            (ActiveSpeaker, Outcome::RemovedForConsent),
            (Phrase, Outcome::Score(0.0)),
            (Face, Outcome::Score(0.7)),
        ];
        assert_decision(
            &rules.evaluate(&outcomes),
            true,
            70.0,
            &["face_match_passed"],
        );
    }

    #[test]
    fn out_of_range_confidences_are_clamped() {
        let rules = rules_with(&[(Face, rule(true, 1.0, 0.5)), (Voice, rule(false, 1.0, 0.0))]);
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 1.7), (Voice, -0.3)])),
            true,
            50.0,
            &["voice_match_passed", "face_match_passed"],
        );
    }

    #[test]
    fn non_finite_confidences_count_as_zero() {
        let rules = rules_with(&[(Face, rule(true, 1.0, 0.5)), (Voice, rule(false, 1.0, 0.5))]);
        for broken in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_decision(
                &rules.evaluate(&scores(&[(Face, broken), (Voice, 1.0)])),
                false,
                50.0,
                &["voice_match_passed", "face_match_failed"],
            );
        }
    }

    #[test]
    fn reasons_do_not_depend_on_input_order() {
        let outcomes = vec![
            (Face, Outcome::Score(0.9)),
            (Voice, Outcome::NotEnrolled),
            (Liveness, unavailable("no_face_detected")),
            (ActiveSpeaker, Outcome::Score(0.3)),
            (Phrase, Outcome::RemovedForConsent),
        ];
        let rules = RuleSet::default_rules();
        let expected = rules.evaluate(&outcomes);
        assert_decision(
            &expected,
            false,
            // (0.35 * 90 + 0.1 * 30) / 0.45 = 34.5 / 0.45 = 76.666...
            76.67,
            &[
                "active_speaker_failed",
                "liveness_unavailable",
                "liveness_no_face_detected",
                "voice_match_not_enrolled",
                "face_match_passed",
                "services_removed_missing_consent",
            ],
        );
        let mut reversed = outcomes.clone();
        reversed.reverse();
        assert_eq!(rules.evaluate(&reversed), expected);
        let mut rotated = outcomes;
        rotated.rotate_left(2);
        assert_eq!(rules.evaluate(&rotated), expected);
    }

    #[test]
    fn the_last_outcome_for_a_service_wins() {
        let rules = rules_with(&[(Face, rule(true, 1.0, 0.5))]);
        let outcomes = vec![
            (Face, Outcome::Score(0.1)),
            (Face, Outcome::NotEnrolled),
            (Face, Outcome::Score(0.9)),
        ];
        assert_decision(
            &rules.evaluate(&outcomes),
            true,
            90.0,
            &["face_match_passed"],
        );
    }

    #[test]
    fn unvalidated_nan_thresholds_fail_closed() {
        let mut rules = rules_with(&[(Face, rule(false, 1.0, 0.5))]);
        rules.min_score = f64::NAN;
        assert!(!rules.evaluate(&scores(&[(Face, 1.0)])).passed);
        let mut rules = rules_with(&[(Face, rule(true, 1.0, 0.5))]);
        rules.services.get_mut(&Face).unwrap().pass_at = f64::NAN;
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 1.0)])),
            false,
            100.0,
            &["face_match_failed"],
        );
        rules.services.get_mut(&Face).unwrap().weight = f64::NAN;
        assert_decision(
            &rules.evaluate(&scores(&[(Face, 1.0)])),
            false,
            0.0,
            &["face_match_failed", "no_services_scored"],
        );
    }

    #[test]
    fn status_and_message_follow_passed() {
        let rules = rules_with(&[(Face, rule(true, 1.0, 0.5))]);
        let passed = rules.evaluate(&scores(&[(Face, 0.9)]));
        assert_eq!(
            (passed.status(), passed.message()),
            ("pass", "verification passed")
        );
        let failed = rules.evaluate(&scores(&[(Face, 0.1)]));
        assert_eq!(
            (failed.status(), failed.message()),
            ("fail", "verification failed")
        );
    }
}
