//! Verification accuracy figures from genuine and impostor scores, and the DET curve (the CLI
//! draws it: `cli/src/eval/plot.rs`).
//!
//! Scores are distances (lower = more alike); a pair where a face (or voice) could not be found
//! scores `+inf`, stays in the denominators and never matches. A pair matches at threshold `t` when
//! its score is `<= t`. The definitions match `scripts/peer_face_recognition.py`, so both sides
//! of `docs/peer-comparison.md` are computed the same way:
//!
//! - thresholds: `-inf`, then every distinct finite score in ascending order;
//!   FMR(t) = impostors `<= t` / impostors, FNMR(t) = genuines `> t` / genuines;
//! - EER: at the first threshold k where FMR >= FNMR, linear interpolation of the crossing between
//!   k-1 and k; `None` if the curves never cross;
//! - FNMR at FMR 1/D: the lowest FNMR over thresholds whose false-match count fm has `fm * D <=
//!   impostors` (so with 300 impostors, FMR 1e-3 allows no false match at all).

use serde::Serialize;

/// Accuracy figures for one set of pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// Equal error rate, 0..1.
    pub eer: Option<f64>,
    /// The threshold at the EER crossing (interpolated).
    pub eer_threshold: Option<f64>,
    /// FNMR at FMR <= 1e-2.
    pub fnmr_at_fmr_1e2: f64,
    /// FNMR at FMR <= 1e-3.
    pub fnmr_at_fmr_1e3: f64,
    /// Genuine pairs.
    pub genuine: usize,
    /// Impostor pairs.
    pub impostor: usize,
}

/// One point of the trade-off curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetPoint {
    /// Threshold (`-inf` for the first point).
    pub threshold: f64,
    /// False-match rate.
    pub fmr: f64,
    /// False non-match rate.
    pub fnmr: f64,
    /// False matches (count).
    pub false_matches: usize,
}

/// The DET curve: one point per threshold, from `-inf` up.
pub fn det_curve(genuine: &[f64], impostor: &[f64]) -> Vec<DetPoint> {
    let mut thresholds: Vec<f64> = genuine
        .iter()
        .chain(impostor)
        .copied()
        .filter(|s| s.is_finite())
        .collect();
    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    let mut genuine: Vec<f64> = genuine.to_vec();
    let mut impostor: Vec<f64> = impostor.to_vec();
    genuine.sort_by(f64::total_cmp);
    impostor.sort_by(f64::total_cmp);
    let (g, i) = (genuine.len().max(1) as f64, impostor.len().max(1) as f64);
    let mut points = Vec::with_capacity(thresholds.len() + 1);
    points.push(DetPoint {
        threshold: f64::NEG_INFINITY,
        fmr: 0.0,
        fnmr: if genuine.is_empty() { 0.0 } else { 1.0 },
        false_matches: 0,
    });
    let (mut gi, mut ii) = (0, 0);
    for t in thresholds {
        while gi < genuine.len() && genuine[gi] <= t {
            gi += 1;
        }
        while ii < impostor.len() && impostor[ii] <= t {
            ii += 1;
        }
        points.push(DetPoint {
            threshold: t,
            fmr: ii as f64 / i,
            fnmr: (genuine.len() - gi) as f64 / g,
            false_matches: ii,
        });
    }
    points
}

/// EER, FNMR at FMR 1e-2 and 1e-3 (see the module documentation).
pub fn metrics(genuine: &[f64], impostor: &[f64]) -> Metrics {
    let curve = det_curve(genuine, impostor);
    let mut eer = None;
    let mut eer_threshold = None;
    if let Some(k) = curve.iter().position(|p| p.fmr >= p.fnmr) {
        if k == 0 {
            eer = Some(curve[0].fmr);
        } else {
            let (a, b) = (&curve[k - 1], &curve[k]);
            let (da, db) = (a.fnmr - a.fmr, b.fnmr - b.fmr);
            let w = if da - db != 0.0 { da / (da - db) } else { 0.0 };
            eer = Some(a.fmr + w * (b.fmr - a.fmr));
            eer_threshold = Some(if a.threshold.is_finite() {
                a.threshold + w * (b.threshold - a.threshold)
            } else {
                b.threshold
            });
        }
    }
    let fnmr_at = |denominator: usize| {
        curve
            .iter()
            .filter(|p| p.false_matches * denominator <= impostor.len())
            .map(|p| p.fnmr)
            .fold(1.0f64, f64::min)
    };
    Metrics {
        eer,
        eer_threshold,
        fnmr_at_fmr_1e2: fnmr_at(100),
        fnmr_at_fmr_1e3: fnmr_at(1000),
        genuine: genuine.len(),
        impostor: impostor.len(),
    }
}

/// The normalised minimum detection cost (NIST SRE style, miss and false-alarm costs 1):
/// `min over t of (P_miss(t) p + P_fa(t) (1 - p)) / min(p, 1 - p)` with `p = p_target`, over the
/// same thresholds as [`det_curve`].
pub fn min_dcf(genuine: &[f64], impostor: &[f64], p_target: f64) -> f64 {
    let norm = p_target.min(1.0 - p_target);
    det_curve(genuine, impostor)
        .iter()
        .map(|p| (p.fnmr * p_target + p.fmr * (1.0 - p_target)) / norm)
        .fold(f64::INFINITY, f64::min)
        .min(1.0)
}

/// A two-sided 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// 95 % bootstrap intervals of the EER and the FNMR at FMR 1e-2 ([`bootstrap`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Confidence {
    /// The EER's interval; `None` when too few resamples had a crossing.
    pub eer: Option<Interval>,
    /// The interval of the FNMR at FMR <= 1e-2.
    pub fnmr_at_fmr_1e2: Interval,
    /// Resamples drawn.
    pub resamples: usize,
    /// Groups resampled (subjects, or pairs when subjects are unknown).
    pub groups: usize,
}

/// One scored pair for [`bootstrap`]: the group it is resampled with (e.g. the subject of its
/// first sample), whether it is genuine, and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupedScore {
    /// Index of the pair's group.
    pub group: usize,
    /// Genuine (same subject) or impostor.
    pub genuine: bool,
    /// The distance.
    pub score: f64,
}

/// Percentile bootstrap of the EER and the FNMR at FMR 1e-2, resampling whole groups with
/// replacement (the "subsets bootstrap" of Bolle, Ratha and Pankanti): pairs that share a subject
/// are correlated, so ISO/IEC 19795-1 resamples subjects, not pairs; with every pair its own group
/// it is the plain bootstrap. Each resample draws as many groups as there are and keeps every pair
/// of each drawn group (a group drawn twice counts twice); the interval is the 2.5th to 97.5th
/// percentile. Deterministic for a given `seed`.
pub fn bootstrap(pairs: &[GroupedScore], resamples: usize, seed: u64) -> Confidence {
    let groups = pairs.iter().map(|p| p.group + 1).max().unwrap_or(0);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups];
    for (index, pair) in pairs.iter().enumerate() {
        members[pair.group].push(index);
    }
    let mut state = seed;
    let mut next = |n: usize| {
        // PCG's LCG step, the high bits taken: plenty for drawing group indices.
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % n.max(1)
    };
    let (mut eers, mut fnmrs) = (Vec::with_capacity(resamples), Vec::with_capacity(resamples));
    let (mut genuine, mut impostor) = (Vec::new(), Vec::new());
    for _ in 0..resamples {
        genuine.clear();
        impostor.clear();
        for _ in 0..groups {
            for &index in &members[next(groups)] {
                let pair = pairs[index];
                if pair.genuine {
                    genuine.push(pair.score);
                } else {
                    impostor.push(pair.score);
                }
            }
        }
        if genuine.is_empty() || impostor.is_empty() {
            continue;
        }
        let m = metrics(&genuine, &impostor);
        if let Some(eer) = m.eer {
            eers.push(eer);
        }
        fnmrs.push(m.fnmr_at_fmr_1e2);
    }
    let interval = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        let last = values.len().saturating_sub(1) as f64;
        Interval {
            low: values[(0.025 * last).floor() as usize],
            high: values[(0.975 * last).ceil() as usize],
        }
    };
    Confidence {
        // An interval from fewer than half the resamples would say more than the data do.
        eer: (eers.len() * 2 >= resamples.max(1)).then(|| interval(&mut eers)),
        fnmr_at_fmr_1e2: if fnmrs.is_empty() {
            Interval {
                low: 0.0,
                high: 1.0,
            }
        } else {
            interval(&mut fnmrs)
        },
        resamples,
        groups,
    }
}

/// The rule of three: when none of `trials` independent trials erred, the error rate is below
/// `3 / trials` with 95 % confidence (`1.0` for no trials).
pub fn rule_of_three(trials: usize) -> f64 {
    if trials == 0 {
        1.0
    } else {
        (3.0 / trials as f64).min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_brackets_the_estimate_and_narrows_with_more_groups() {
        // Genuine scores around 0.3, impostors around 0.7, overlapping a little: per group (a
        // subject) four genuine and four impostor pairs.
        let make = |groups: usize| -> Vec<GroupedScore> {
            let mut pairs = Vec::new();
            for group in 0..groups {
                for k in 0..4 {
                    let jitter = ((group * 7 + k * 13) % 29) as f64 / 29.0;
                    pairs.push(GroupedScore {
                        group,
                        genuine: true,
                        score: 0.1 + 0.4 * jitter,
                    });
                    pairs.push(GroupedScore {
                        group,
                        genuine: false,
                        score: 0.45 + 0.4 * jitter,
                    });
                }
            }
            pairs
        };
        let small = make(20);
        let (genuine, impostor): (Vec<_>, Vec<_>) = small.iter().partition(|p| p.genuine);
        let scores = |v: &[&GroupedScore]| v.iter().map(|p| p.score).collect::<Vec<_>>();
        let eer = metrics(&scores(&genuine), &scores(&impostor)).eer.unwrap();
        let narrow = bootstrap(&make(200), 400, 1).eer.unwrap();
        let wide = bootstrap(&small, 400, 1).eer.unwrap();
        assert!(wide.low <= eer && eer <= wide.high, "{wide:?} {eer}");
        assert!(
            narrow.high - narrow.low < wide.high - wide.low,
            "{narrow:?} {wide:?}"
        );
        assert_eq!(bootstrap(&small, 400, 1), bootstrap(&small, 400, 1));
        assert_eq!(bootstrap(&small, 400, 1).groups, 20);
    }

    #[test]
    fn no_error_in_n_trials_bounds_the_rate_by_three_over_n() {
        assert!((rule_of_three(280) - 0.010_714).abs() < 1e-6);
        assert_eq!(rule_of_three(0), 1.0);
        assert_eq!(rule_of_three(2), 1.0);
    }

    #[test]
    fn min_dcf_is_normalised() {
        assert_eq!(min_dcf(&[0.1, 0.2], &[0.5, 0.6], 0.01), 0.0);
        // Fully overlapping: the best is to reject everything (cost p, normalised to 1).
        assert_eq!(min_dcf(&[0.5], &[0.1], 0.01), 1.0);
        // One of 100 impostors below every genuine: accepting costs 0.99 * 0.01 / 0.01 = 0.99.
        let impostor: Vec<f64> = (0..100).map(|i| if i == 0 { 0.05 } else { 0.9 }).collect();
        let d = min_dcf(&[0.1, 0.2], &impostor, 0.01);
        assert!((d - 0.99).abs() < 1e-12, "{d}");
    }

    #[test]
    fn perfect_separation() {
        let m = metrics(&[0.1, 0.2, 0.3], &[0.7, 0.8, 0.9]);
        assert_eq!(m.eer, Some(0.0));
        assert_eq!((m.fnmr_at_fmr_1e2, m.fnmr_at_fmr_1e3), (0.0, 0.0));
    }

    #[test]
    fn overlap_interpolates_and_missed_faces_count_against_genuines() {
        // Genuine 0.1 0.5 inf; impostor 0.4 0.9. Thresholds: -inf, 0.1, 0.4, 0.5, 0.9.
        let m = metrics(&[0.1, 0.5, f64::INFINITY], &[0.4, 0.9]);
        // At 0.1: FMR 0, FNMR 2/3; at 0.4: FMR 1/2, FNMR 2/3; at 0.5: FMR 1/2, FNMR 1/3 -> cross.
        // d(0.4) = 1/6, d(0.5) = -1/6: halfway, EER = 1/2.
        let eer = m.eer.unwrap();
        assert!((eer - 0.5).abs() < 1e-12, "{eer}");
        assert!((m.eer_threshold.unwrap() - 0.45).abs() < 1e-12);
        // No false match allowed with 2 impostors: best is threshold 0.1, FNMR 2/3.
        assert!((m.fnmr_at_fmr_1e2 - 2.0 / 3.0).abs() < 1e-12);
        // Ties move together.
        let tied = metrics(&[0.5, 0.5], &[0.5, 0.9]);
        assert_eq!(tied.fnmr_at_fmr_1e3, 1.0);
    }

    #[test]
    fn fmr_limit_is_an_integer_test() {
        // 300 impostors from 0.200 up in steps of 0.001: FMR 1e-2 allows 3 false matches (up to
        // 0.202), 1e-3 none (below 0.200).
        let impostor: Vec<f64> = (0..300).map(|i| 0.2 + f64::from(i) * 0.001).collect();
        let genuine = [0.19, 0.2015, 0.2025, 0.5];
        let m = metrics(&genuine, &impostor);
        assert_eq!(m.fnmr_at_fmr_1e3, 0.75);
        assert_eq!(m.fnmr_at_fmr_1e2, 0.25);
        let separated = metrics(&[0.1, 0.15], &impostor);
        assert_eq!(
            (separated.fnmr_at_fmr_1e2, separated.fnmr_at_fmr_1e3),
            (0.0, 0.0)
        );
    }
}
