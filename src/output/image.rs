//! PNG damage map: a quick look at where the body cracked, without ParaView.
//!
//! A 2D body is drawn whole; for a 3D body the mid-plane slice is drawn: the lattice layer
//! nearest `z = (z_min + z_max) / 2` (nodes with `|z - z_layer| <= dx / 2`). Positions are in
//! metres, `dx` is the lattice spacing in metres, damage is dimensionless (0..1).
//!
//! Raster: node `i` goes to cell `(round((x_i - x_min) / dx), round((y_i - y_min) / dx))`, so
//! lattices and irregular point clouds both work; where several nodes share a cell the
//! largest damage is shown (cracks stay visible). Each cell is a square of `s x s` pixels,
//! `s` chosen so the body is about 800 px along its long side. A body more than
//! [`MAX_CELLS`] cells long is coarsened (several cells per pixel, largest damage shown) so
//! the image stays under 2000 px. `y` points up. Cells without a node stay white.
//!
//! Colours: [`colormap`], a 9-entry table of matplotlib's *viridis* (perceptually uniform,
//! readable in grey scale and by colour-blind readers), interpolated linearly: dark purple
//! for intact (0), teal at 0.5, yellow for fully damaged (1). NaN damage is drawn as 1.
//!
//! Layout (pixels): a white margin of [`MARGIN_PX`] on every side; the body at the left,
//! vertically centred; then a gap of [`GAP_PX`], a vertical colour bar [`BAR_WIDTH_PX`] wide
//! and as tall as the drawing area (at least [`MIN_BAR_HEIGHT_PX`]), 0 at the bottom and 1
//! at the top, framed in black, with tick marks [`TICK_PX`] long at 0, 0.5 and 1 on its
//! right; right of the ticks the legend, [`LEGEND_PX`] wide: the labels `1`, `0.5`, `0`,
//! each centred on its tick, and the title `damage` written upwards, centred on the bar,
//! all in black in the built-in bitmap font (`font.rs`) at [`FONT_SCALE`] pixels per font
//! pixel.

use super::font;
use super::invalid_input;
use crate::Error;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// Target length of the body's long side in pixels.
pub const TARGET_PX: u64 = 800;
/// Longest body side in cells before it is coarsened.
pub const MAX_CELLS: u64 = 1900;
/// Largest cell index along an axis (far beyond anything drawn uncoarsened).
const LARGEST_INDEX: f64 = 1e15;
/// White margin around the picture.
pub const MARGIN_PX: u32 = 10;
/// Space between the body and the colour bar.
pub const GAP_PX: u32 = 20;
/// Width of the colour bar, frame included.
pub const BAR_WIDTH_PX: u32 = 20;
/// Length of the tick marks right of the colour bar.
pub const TICK_PX: u32 = 6;
/// Pixels per font pixel of the legend's text.
pub const FONT_SCALE: u32 = 2;
/// Space between a tick and its label, and between the labels and the title.
pub const LABEL_GAP_PX: u32 = 3;
/// Width of the tick labels' column: three glyphs (`0.5`).
pub const TICK_LABEL_PX: u32 = 3 * font::ADVANCE * FONT_SCALE;
/// Width of the legend right of the ticks: the tick labels, then the title written upwards.
pub const LEGEND_PX: u32 = LABEL_GAP_PX + TICK_LABEL_PX + LABEL_GAP_PX + font::HEIGHT * FONT_SCALE;
/// The title of the colour bar.
pub const BAR_TITLE: &str = "damage";
/// Smallest height of the colour bar (the image is at least this tall plus margins).
pub const MIN_BAR_HEIGHT_PX: u32 = 100;

/// Viridis at 0, 1/8, ..., 1 (matplotlib's table, 8-bit sRGB).
const VIRIDIS: [[u8; 3]; 9] = [
    [68, 1, 84],
    [71, 45, 123],
    [59, 82, 139],
    [44, 114, 142],
    [33, 145, 140],
    [40, 174, 128],
    [94, 201, 98],
    [173, 220, 48],
    [253, 231, 37],
];

const WHITE: [u8; 3] = [255, 255, 255];
pub(super) const BLACK: [u8; 3] = [0, 0, 0];

/// PNG of the damage field (0..1) of a 2D body; for 3D the mid-plane slice z ~ middle of the
/// body (the lattice layer nearest the mid-plane, |z - z_layer| <= dx/2). `dx` is the lattice
/// spacing. An empty body, mismatched lengths or a non-positive `dx` are errors.
pub fn write_damage_png(
    path: &Path,
    positions: &[[f64; 3]],
    dim: usize,
    dx: f64,
    damage: &[f64],
) -> crate::Result<()> {
    if positions.is_empty() {
        return Err(invalid_input(path, "no nodes to draw: the body is empty"));
    }
    if damage.len() != positions.len() {
        let message = format!(
            "damage has {} values for {} nodes",
            damage.len(),
            positions.len()
        );
        return Err(invalid_input(path, message));
    }
    if !(dx.is_finite() && dx > 0.0) {
        return Err(invalid_input(path, format!("dx is {dx}, expected > 0")));
    }
    if !(1..=3).contains(&dim) {
        return Err(invalid_input(
            path,
            format!("dim is {dim}, expected 1, 2 or 3"),
        ));
    }
    let nodes = plane_nodes(positions, dim, dx);
    if nodes.is_empty() {
        return Err(invalid_input(path, "no node has finite coordinates"));
    }
    let grid = Grid::bin(positions, &nodes, dx, damage);
    let image = render(&grid);
    encode(path, &image)
}

/// Colour of damage `value` (clamped to 0..1; NaN counts as 1) on the viridis table.
pub fn colormap(value: f64) -> [u8; 3] {
    let v = if value.is_nan() {
        1.0
    } else {
        value.clamp(0.0, 1.0)
    };
    let x = v * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let t = x - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |k: usize| (f64::from(a[k]) + t * (f64::from(b[k]) - f64::from(a[k]))).round() as u8;
    [mix(0), mix(1), mix(2)]
}

/// Indices of the nodes to draw: all finite ones in 1D and 2D, the mid-plane layer in 3D.
fn plane_nodes(positions: &[[f64; 3]], dim: usize, dx: f64) -> Vec<usize> {
    let finite = |p: &[f64; 3]| p.iter().all(|c| c.is_finite());
    let all = (0..positions.len()).filter(|&i| finite(&positions[i]));
    if dim < 3 {
        return all.collect();
    }
    let all: Vec<usize> = all.collect();
    let (z_min, z_max) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &i| {
            (lo.min(positions[i][2]), hi.max(positions[i][2]))
        });
    let z_mid = 0.5 * (z_min + z_max);
    let nearest = all.iter().map(|&i| positions[i][2]).min_by(|a, b| {
        let (da, db) = ((a - z_mid).abs(), (b - z_mid).abs());
        da.total_cmp(&db)
    });
    let Some(z_layer) = nearest else {
        return Vec::new();
    };
    all.into_iter()
        .filter(|&i| (positions[i][2] - z_layer).abs() <= 0.5 * dx)
        .collect()
}

/// Damage binned on a raster of cells; row 0 is the bottom (smallest y).
struct Grid {
    cols: usize,
    rows: usize,
    /// Largest damage per cell, `cols * rows`, row-major; negative where no node fell.
    cells: Vec<f64>,
}

impl Grid {
    /// Bin `nodes` (indices into `positions`) by `round((x - x_min) / dx)`, coarsened by an
    /// integer factor where the body is longer than [`MAX_CELLS`].
    fn bin(positions: &[[f64; 3]], nodes: &[usize], dx: f64, damage: &[f64]) -> Grid {
        let min = |k: usize| {
            nodes
                .iter()
                .map(|&i| positions[i][k])
                .fold(f64::INFINITY, f64::min)
        };
        let (x_min, y_min) = (min(0), min(1));
        // Capped so absurd extents (a wrong dx) cannot overflow the cell counts below.
        let index = |i: usize| {
            let p = positions[i];
            let ix = ((p[0] - x_min) / dx).round().min(LARGEST_INDEX) as u64;
            let iy = ((p[1] - y_min) / dx).round().min(LARGEST_INDEX) as u64;
            (ix, iy)
        };
        let (nx, ny) = nodes.iter().fold((1u64, 1u64), |(nx, ny), &i| {
            let (ix, iy) = index(i);
            (nx.max(ix.saturating_add(1)), ny.max(iy.saturating_add(1)))
        });
        let coarsen = nx.max(ny).div_ceil(MAX_CELLS);
        let cols = (nx - 1) / coarsen + 1;
        let rows = (ny - 1) / coarsen + 1;
        let (cols, rows) = (cols as usize, rows as usize);
        let mut cells = vec![-1.0f64; cols * rows];
        for &i in nodes {
            let (ix, iy) = index(i);
            let cell = (iy / coarsen) as usize * cols + (ix / coarsen) as usize;
            let d = if damage[i].is_nan() {
                1.0
            } else {
                damage[i].clamp(0.0, 1.0)
            };
            cells[cell] = cells[cell].max(d);
        }
        Grid { cols, rows, cells }
    }
}

/// An RGB8 raster.
pub(super) struct Canvas {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl Canvas {
    pub(super) fn new(width: u32, height: u32) -> Canvas {
        Canvas {
            width,
            height,
            pixels: WHITE.repeat(width as usize * height as usize),
        }
    }

    /// Fill the rectangle `[x, x + w) x [y, y + h)` (y down), clipped to the canvas.
    pub(super) fn fill(&mut self, x: u32, y: u32, w: u32, h: u32, colour: [u8; 3]) {
        let (x1, y1) = ((x + w).min(self.width), (y + h).min(self.height));
        for row in y.min(y1)..y1 {
            let start = (row as usize * self.width as usize + x.min(x1) as usize) * 3;
            let end = (row as usize * self.width as usize + x1 as usize) * 3;
            for pixel in self.pixels[start..end].chunks_exact_mut(3) {
                pixel.copy_from_slice(&colour);
            }
        }
    }
}

impl Canvas {
    /// Write `text` in black in the bitmap font at [`FONT_SCALE`], its box's top-left corner
    /// at `(x, y)`: left to right, or with `upwards` turned a quarter counter-clockwise (read
    /// from the bottom up, the tops of the letters to the left). Clipped to the canvas.
    fn text(&mut self, x: u32, y: u32, text: &str, upwards: bool) {
        let length = font::length(text);
        for (k, c) in text.chars().enumerate() {
            for row in 0..font::HEIGHT {
                for col in 0..font::WIDTH {
                    if !font::is_set(c, col, row) {
                        continue;
                    }
                    // (along, across): font pixels along the baseline and down from the top
                    let along = k as u32 * font::ADVANCE + col;
                    let (px, py) = match upwards {
                        false => (along, row),
                        true => (row, length - 1 - along),
                    };
                    let s = FONT_SCALE;
                    self.fill(x + px * s, y + py * s, s, s, BLACK);
                }
            }
        }
    }
}

/// Draw the grid and the colour bar.
fn render(grid: &Grid) -> Canvas {
    let long = grid.cols.max(grid.rows) as u64;
    let scale = ((TARGET_PX as f64 / long as f64).round() as u64).max(1);
    // Both sides are at most MAX_CELLS * max(1, TARGET_PX) pixels, far below u32::MAX.
    let body_w = (grid.cols as u64 * scale) as u32;
    let body_h = (grid.rows as u64 * scale) as u32;
    let s = scale as u32;
    let inner_h = body_h.max(MIN_BAR_HEIGHT_PX);
    let width = MARGIN_PX + body_w + GAP_PX + BAR_WIDTH_PX + TICK_PX + LEGEND_PX + MARGIN_PX;
    let height = inner_h + 2 * MARGIN_PX;
    let mut canvas = Canvas::new(width, height);
    let top = MARGIN_PX + (inner_h - body_h) / 2;
    for row in 0..grid.rows {
        for col in 0..grid.cols {
            let value = grid.cells[row * grid.cols + col];
            if value >= 0.0 {
                let y = top + (grid.rows - 1 - row) as u32 * s;
                canvas.fill(MARGIN_PX + col as u32 * s, y, s, s, colormap(value));
            }
        }
    }
    draw_colour_bar(&mut canvas, MARGIN_PX + body_w + GAP_PX, MARGIN_PX, inner_h);
    canvas
}

/// The colour bar with its left edge at `x`, top at `y`, `h` pixels tall: 1 at the top, 0 at
/// the bottom, a black frame, ticks at 0, 0.5 and 1 with their labels, and the title.
fn draw_colour_bar(canvas: &mut Canvas, x: u32, y: u32, h: u32) {
    draw_bar(canvas, x, y, h);
    let labels_x = x + BAR_WIDTH_PX + TICK_PX + LABEL_GAP_PX;
    let glyph_h = font::HEIGHT * FONT_SCALE;
    for (tick, label) in [(y, "1"), (y + (h - 1) / 2, "0.5"), (y + h - 1, "0")] {
        let top = tick.saturating_sub(glyph_h / 2);
        canvas.text(
            labels_x,
            top.min(canvas.height.saturating_sub(glyph_h)),
            label,
            false,
        );
    }
    let title_len = font::length(BAR_TITLE) * FONT_SCALE;
    let title_x = labels_x + TICK_LABEL_PX + LABEL_GAP_PX;
    canvas.text(
        title_x,
        y + h.saturating_sub(title_len) / 2,
        BAR_TITLE,
        true,
    );
}

/// The bar itself: colours, frame and ticks.
fn draw_bar(canvas: &mut Canvas, x: u32, y: u32, h: u32) {
    let span = f64::from(h.saturating_sub(3).max(1));
    for r in 1..h.saturating_sub(1) {
        let value = 1.0 - f64::from(r - 1) / span;
        canvas.fill(x + 1, y + r, BAR_WIDTH_PX - 2, 1, colormap(value));
    }
    canvas.fill(x, y, BAR_WIDTH_PX, 1, BLACK);
    canvas.fill(x, y + h - 1, BAR_WIDTH_PX, 1, BLACK);
    canvas.fill(x, y, 1, h, BLACK);
    canvas.fill(x + BAR_WIDTH_PX - 1, y, 1, h, BLACK);
    for tick in [y, y + (h - 1) / 2, y + h - 1] {
        canvas.fill(x + BAR_WIDTH_PX, tick, TICK_PX, 1, BLACK);
    }
}

/// Encode `canvas` as an 8-bit RGB PNG at `path`.
pub(super) fn encode(path: &Path, canvas: &Canvas) -> crate::Result<()> {
    let to_io = |e: png::EncodingError| match e {
        png::EncodingError::IoError(e) => e,
        other => std::io::Error::other(other),
    };
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    let mut encoder = png::Encoder::new(BufWriter::new(file), canvas.width, canvas.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let result = encoder.write_header().and_then(|mut writer| {
        writer.write_image_data(&canvas.pixels)?;
        writer.finish()
    });
    result.map_err(|e| Error::io(path, to_io(e)))
}

#[cfg(test)]
mod tests {
    use super::{colormap, VIRIDIS};

    // The colour map must hit its table at the ends and stay monotonic in brightness
    // (viridis is perceptually ordered: 0 dark, 1 light), so damage reads as brightness.
    #[test]
    fn colormap_is_viridis_and_brightens() {
        assert_eq!(colormap(0.0), VIRIDIS[0]);
        assert_eq!(colormap(1.0), VIRIDIS[8]);
        assert_eq!(colormap(0.5), VIRIDIS[4]);
        assert_eq!(colormap(-3.0), VIRIDIS[0]);
        assert_eq!(colormap(f64::NAN), VIRIDIS[8]);
        let luma = |c: [u8; 3]| 0.2126 * c[0] as f64 + 0.7152 * c[1] as f64 + 0.0722 * c[2] as f64;
        let mut last = -1.0;
        for k in 0..=100 {
            let l = luma(colormap(k as f64 / 100.0));
            assert!(l >= last, "brightness falls at {k}%");
            last = l;
        }
    }
}
