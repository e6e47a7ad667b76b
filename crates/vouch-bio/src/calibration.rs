//! Score calibration shared by the face and voice templates: a template distance (lower is more
//! alike) becomes a probability of the same person by a logistic curve, and a match decision by a
//! threshold chosen for a false-match rate. [`fit`] finds both from genuine and impostor distances;
//! `vouch eval faces --calibrate` and `vouch eval voices --calibrate` run it on development data.

use serde::Serialize;

/// Logistic calibration `p = 1 / (1 + exp(slope * (distance - midpoint)))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// Distance at which p = 0.5.
    pub midpoint: f32,
    /// Steepness (per unit distance).
    pub slope: f32,
    /// Default same-person threshold on distance (FMR <= 1e-3 on the fitting impostors).
    pub threshold: f32,
}

/// The comparison of two templates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Match {
    /// Template distance (0 identical; lower is more alike).
    pub distance: f32,
    /// Calibrated probability of the same person, 0..1.
    pub probability: f32,
    /// Whether the distance is under the default threshold.
    pub is_match: bool,
}

/// A distance turned into a [`Match`] with `calibration`.
pub fn compare_distance(distance: f32, calibration: &Calibration) -> Match {
    let z = (calibration.slope * (distance - calibration.midpoint)).clamp(-80.0, 80.0);
    Match {
        distance,
        probability: 1.0 / (1.0 + z.exp()),
        is_match: distance < calibration.threshold,
    }
}

/// What [`fit`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// Distance at which the fitted probability is 0.5.
    pub midpoint: f64,
    /// Fitted steepness.
    pub slope: f64,
    /// The largest distance that lets at most 1e-3 of the impostors through (the default
    /// threshold is a value just above it).
    pub threshold_fmr_1e3: f64,
    /// Genuine pairs at or above that distance.
    pub fnmr_at_that_threshold: f64,
    /// Genuine pairs fitted.
    pub genuine_pairs: usize,
    /// Impostor pairs fitted.
    pub impostor_pairs: usize,
}

/// Fits `p = 1 / (1 + exp(slope (d - midpoint)))` by logistic regression (Newton's method, the two
/// classes weighted equally so the midpoint does not depend on how many impostors there are) and
/// finds the FMR 1e-3 distance. `None` without both genuine and impostor distances, or when they
/// are not finite.
pub fn fit(genuine: &[f64], impostor: &[f64]) -> Option<Fit> {
    if genuine.is_empty()
        || impostor.is_empty()
        || !genuine.iter().chain(impostor).all(|d| d.is_finite())
    {
        return None;
    }
    let (wg, wi) = (0.5 / genuine.len() as f64, 0.5 / impostor.len() as f64);
    let samples: Vec<(f64, f64, f64)> = genuine
        .iter()
        .map(|&d| (d, 1.0, wg))
        .chain(impostor.iter().map(|&d| (d, 0.0, wi)))
        .collect();
    // Model p = sigmoid(a + b d); slope = -b, midpoint = -a / b. Start from the class means.
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mg, mi) = (mean(genuine), mean(impostor));
    let mut b = if mi > mg { -4.0 / (mi - mg) } else { -1.0 };
    let mut a = -b * (mg + mi) / 2.0;
    for _ in 0..100 {
        let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(d, y, w) in &samples {
            let p = 1.0 / (1.0 + (-(a + b * d)).exp());
            let r = w * (y - p);
            ga += r;
            gb += r * d;
            let s = w * p * (1.0 - p);
            haa += s;
            hab += s * d;
            hbb += s * d * d;
        }
        let det = haa * hbb - hab * hab;
        if det.abs() < 1e-18 {
            break;
        }
        let (da, db) = ((hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det);
        a += da;
        b += db;
        if da.abs() + db.abs() < 1e-10 {
            break;
        }
    }
    let mut sorted = impostor.to_vec();
    sorted.sort_by(f64::total_cmp);
    // The largest threshold with at most 1e-3 of impostors at or below it.
    let threshold = sorted[sorted.len() / 1000];
    let fnmr = genuine.iter().filter(|&&d| d >= threshold).count() as f64 / genuine.len() as f64;
    Some(Fit {
        midpoint: -a / b,
        slope: -b,
        threshold_fmr_1e3: threshold,
        fnmr_at_that_threshold: fnmr,
        genuine_pairs: genuine.len(),
        impostor_pairs: impostor.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAL: Calibration = Calibration {
        midpoint: 0.5,
        slope: 20.0,
        threshold: 0.45,
    };

    #[test]
    fn probability_is_monotone_and_decision_uses_the_threshold() {
        let mut last = 1.0;
        for step in 0..=200 {
            let m = compare_distance(step as f32 * 0.01, &CAL);
            assert!(m.probability <= last);
            assert_eq!(m.is_match, (step as f32 * 0.01) < 0.45);
            last = m.probability;
        }
        assert!((compare_distance(0.5, &CAL).probability - 0.5).abs() < 1e-6);
    }

    #[test]
    fn fit_recovers_a_known_logistic_curve() {
        // Distances drawn on a grid with the class shares a logistic curve (midpoint 0.4, slope 25)
        // predicts: the fit must find that curve again.
        let (mut genuine, mut impostor) = (Vec::new(), Vec::new());
        for step in 0..=80 {
            let d = step as f64 * 0.01;
            let p = 1.0 / (1.0 + (25.0 * (d - 0.4)).exp());
            let same = (p * 1000.0).round() as usize;
            genuine.extend(std::iter::repeat_n(d, same));
            impostor.extend(std::iter::repeat_n(d, 1000 - same));
        }
        let fit = fit(&genuine, &impostor).expect("fit");
        assert!((fit.midpoint - 0.4).abs() < 0.005, "{fit:?}");
        assert!((fit.slope - 25.0).abs() < 0.5, "{fit:?}");
        assert!(fit.threshold_fmr_1e3 < fit.midpoint);
        assert!(super::fit(&genuine, &[]).is_none());
        assert!(super::fit(&[f64::INFINITY], &impostor).is_none());
    }
}
