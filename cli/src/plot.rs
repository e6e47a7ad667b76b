//! The DET plot the evaluations write, as PNG: drawn here, in the tool, because only the tool
//! writes pictures (the library computes the curve, `vouch::bio::eval::det_curve`).

use vouch::bio::eval::DetPoint;

/// A DET plot as PNG bytes: FNMR (vertical) against FMR (horizontal), both on log scales from
/// 1e-4 (FMR) and 1e-3 (FNMR) to 1, grid lines at every decade, the diagonal FMR = FNMR in grey and
/// the EER point as a red square. Rates of 0 sit on the axis.
pub(crate) fn det_plot_png(curve: &[DetPoint], eer: Option<f64>) -> Vec<u8> {
    const W: u32 = 640;
    const H: u32 = 480;
    const MARGIN: f64 = 40.0;
    let (x_min, y_min) = (1e-4f64, 1e-3f64);
    let to_px = |fmr: f64, fnmr: f64| {
        let fx = (fmr.max(x_min).log10() - x_min.log10()) / -x_min.log10();
        let fy = (fnmr.max(y_min).log10() - y_min.log10()) / -y_min.log10();
        (
            MARGIN + fx * (f64::from(W) - 2.0 * MARGIN),
            f64::from(H) - MARGIN - fy * (f64::from(H) - 2.0 * MARGIN),
        )
    };
    let mut canvas = ::image::RgbImage::from_pixel(W, H, ::image::Rgb([255, 255, 255]));
    let line = |a: (f64, f64), b: (f64, f64), colour: [u8; 3], canvas: &mut ::image::RgbImage| {
        let steps = ((b.0 - a.0).abs().max((b.1 - a.1).abs()).ceil() as usize).max(1);
        for s in 0..=steps {
            let t = s as f64 / steps as f64;
            let (x, y) = (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
            if x >= 0.0 && y >= 0.0 && (x as u32) < W && (y as u32) < H {
                canvas.put_pixel(x as u32, y as u32, ::image::Rgb(colour));
            }
        }
    };
    let grid = [220, 220, 220];
    for decade in 0..=4 {
        let v = 10f64.powi(-decade);
        if v >= x_min {
            line(to_px(v, y_min), to_px(v, 1.0), grid, &mut canvas);
        }
        if v >= y_min {
            line(to_px(x_min, v), to_px(1.0, v), grid, &mut canvas);
        }
    }
    let axis = [0, 0, 0];
    line(to_px(x_min, y_min), to_px(1.0, y_min), axis, &mut canvas);
    line(to_px(x_min, y_min), to_px(x_min, 1.0), axis, &mut canvas);
    line(
        to_px(y_min, y_min),
        to_px(1.0, 1.0),
        [160, 160, 160],
        &mut canvas,
    );
    let blue = [20, 60, 200];
    for pair in curve.windows(2) {
        let (a, b) = (
            to_px(pair[0].fmr, pair[0].fnmr),
            to_px(pair[1].fmr, pair[1].fnmr),
        );
        // Steps of the empirical curve: across, then down.
        line(a, (b.0, a.1), blue, &mut canvas);
        line((b.0, a.1), b, blue, &mut canvas);
    }
    if let Some(eer) = eer {
        let (x, y) = to_px(eer, eer);
        for dy in -3..=3 {
            for dx in -3..=3 {
                let (px, py) = (x as i64 + dx, y as i64 + dy);
                if px >= 0 && py >= 0 && (px as u32) < W && (py as u32) < H {
                    canvas.put_pixel(px as u32, py as u32, ::image::Rgb([220, 30, 30]));
                }
            }
        }
    }
    let mut png = Vec::new();
    let encoded = ::image::DynamicImage::ImageRgb8(canvas).write_to(
        &mut std::io::Cursor::new(&mut png),
        ::image::ImageFormat::Png,
    );
    debug_assert!(encoded.is_ok());
    png
}

#[cfg(test)]
mod tests {
    use super::*;
    use vouch::bio::eval::{det_curve, metrics};

    #[test]
    fn the_plot_is_a_png() {
        let impostor: Vec<f64> = (0..300).map(|i| 0.2 + f64::from(i) * 0.001).collect();
        let genuine = [0.19, 0.2015, 0.2025, 0.5];
        let m = metrics(&genuine, &impostor);
        let png = det_plot_png(&det_curve(&genuine, &impostor), m.eer);
        assert!(png.starts_with(b"\x89PNG"));
        let decoded = image::load_from_memory(&png).expect("decodes").to_rgb8();
        assert_eq!(decoded.dimensions(), (640, 480));
        // The EER point is drawn in red.
        assert!(decoded.pixels().any(|p| p.0 == [220, 30, 30]));
    }
}
