//! The PNG side of the DET plots: [`PngBackend`], plotters' bitmap backend with its text drawn
//! by ab_glyph from a TrueType font read at run time ([`load_font`]: DejaVu Sans from the Debian
//! package fonts-dejavu-core, or `VOUCH_FONT`), so no C font library is linked. plotters' own
//! ab_glyph glue places each glyph by its outline's left edge instead of the pen position, which
//! spaces digits unevenly ("2.5 0"); here every glyph sits at its advance.

use std::error::Error;
use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

use ab_glyph::{point, Font, FontRef, OutlinedGlyph, PxScale, ScaleFont};
use plotters::prelude::{BitMapBackend, DrawingBackend};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// Where the font is looked for when `VOUCH_FONT` is not set.
const FONT_PATH: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// The font, read once; the error says what to install.
pub(crate) fn load_font() -> Result<&'static FontRef<'static>, String> {
    static LOADED: OnceLock<Result<FontRef<'static>, String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let path = std::env::var_os("VOUCH_FONT").unwrap_or_else(|| FONT_PATH.into());
            let shown = Path::new(&path).display().to_string();
            let bytes = std::fs::read(&path).map_err(|e| {
                format!(
                    "a PNG plot needs the DejaVu Sans font, {shown} ({e}): install the Debian \
                     package fonts-dejavu-core (scripts/setup does), set VOUCH_FONT to another \
                     TrueType file, or write the plot as .svg"
                )
            })?;
            // Kept for the life of the program, as the glyphs borrow it.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            FontRef::try_from_slice(bytes).map_err(|_| format!("{shown}: not a TrueType font"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A text that could not be drawn.
#[derive(Debug)]
struct TextError(String);

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for TextError {}

/// plotters' bitmap backend, with text drawn by [`layout`].
pub(crate) struct PngBackend<'a> {
    inner: BitMapBackend<'a>,
    font: &'static FontRef<'static>,
}

impl<'a> PngBackend<'a> {
    /// Draws into `pixels` (RGB, `size.0 * size.1 * 3` bytes).
    pub(crate) fn new(pixels: &'a mut [u8], size: (u32, u32)) -> Result<Self, String> {
        Ok(Self {
            inner: BitMapBackend::with_buffer(pixels, size),
            font: load_font()?,
        })
    }
}

/// The outlined glyphs of `text` on one line from the pen at (0, 0) (the line's top left), with
/// the line's width and height. `size` is plotters' text size: an em is `size / 1.24` pixels, as
/// plotters' SVG backend writes it.
fn layout(font: &FontRef<'static>, size: f64, text: &str) -> (Vec<OutlinedGlyph>, f32, f32) {
    let em = size / 1.24;
    let units = f64::from(font.units_per_em().unwrap_or(2048.0));
    let scale = PxScale::from((em * f64::from(font.height_unscaled()) / units) as f32);
    let scaled = font.as_scaled(scale);
    let (mut caret, mut previous) = (0.0f32, None);
    let mut glyphs = Vec::new();
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(previous) = previous {
            caret += scaled.kern(previous, id);
        }
        let glyph = id.with_scale_and_position(scale, point(caret, scaled.ascent()));
        caret += scaled.h_advance(id);
        previous = Some(id);
        glyphs.extend(font.outline_glyph(glyph));
    }
    (glyphs, caret, scaled.ascent() - scaled.descent())
}

type BackendError<'a> = DrawingErrorKind<<BitMapBackend<'a> as DrawingBackend>::ErrorType>;

impl<'a> DrawingBackend for PngBackend<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), BackendError<'a>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), BackendError<'a>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), BackendError<'a>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), BackendError<'a>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), BackendError<'a>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), BackendError<'a>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), BackendError<'a>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), BackendError<'a>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), BackendError<'a>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn draw_text<T: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &T,
        pos: BackendCoord,
    ) -> Result<(), BackendError<'a>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let (glyphs, width, height) = layout(self.font, style.size(), text);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -width / 2.0,
            HPos::Right => -width,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -height / 2.0,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let mut result = Ok(());
        for glyph in glyphs {
            let bounds = glyph.px_bounds();
            glyph.draw(|x, y, coverage| {
                if coverage <= 0.0 || result.is_err() {
                    return;
                }
                let x = (bounds.min.x + x as f32 + dx).round() as i32;
                let y = (bounds.min.y + y as f32 + dy).round() as i32;
                let (x, y) = transform.transform(x, y);
                result = self.inner.draw_pixel(
                    (pos.0 + x, pos.1 + y),
                    BackendColor {
                        alpha: color.alpha * f64::from(coverage.min(1.0)),
                        rgb: color.rgb,
                    },
                );
            });
        }
        result
    }

    fn estimate_text_size<T: BackendTextStyle>(
        &self,
        text: &str,
        style: &T,
    ) -> Result<(u32, u32), BackendError<'a>> {
        let (_, width, height) = layout(self.font, style.size(), text);
        if !width.is_finite() {
            return Err(DrawingErrorKind::FontError(Box::new(TextError(format!(
                "cannot lay out {text:?}"
            )))));
        }
        Ok((width.ceil() as u32, height.ceil() as u32))
    }
}
