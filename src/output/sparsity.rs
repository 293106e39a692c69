//! PNG of sparsity patterns: where the non-zeros of one or more sparse matrices lie, drawn side
//! by side (for example the stiffness of a bond-based model next to a state-based one).
//!
//! Each matrix is a panel whose longer side is [`PANEL_PX`] pixels and whose aspect follows
//! rows x columns (row 0 at the top, like a printed matrix). A pixel covers a block of entries;
//! its grey level is the fraction of that block that is non-zero, with any non-zero at least
//! [`MIN_INK`] dark, so isolated entries stay visible. Panels are framed in black and separated
//! by [`GAP_PX`] pixels. The picture carries no text: say in the caption which panel is which.

use super::image::{encode, Canvas, BLACK};
use num_traits::AsPrimitive;
use std::path::Path;

/// Longer side of one panel, frame excluded.
pub const PANEL_PX: u32 = 400;
/// White space around and between panels.
pub const GAP_PX: u32 = 16;
/// Darkness (0..1) of a pixel whose block holds a single non-zero.
pub const MIN_INK: f64 = 0.35;

/// The pattern of a CSR matrix: `row_ptr` of length `rows + 1`, `col_idx` of length `nnz`.
pub struct Pattern<'a, I> {
    pub rows: usize,
    pub cols: usize,
    pub row_ptr: &'a [I],
    pub col_idx: &'a [I],
}

impl<I: AsPrimitive<usize>> Pattern<'_, I> {
    fn check(&self) -> std::result::Result<(), String> {
        if self.rows == 0 || self.cols == 0 {
            return Err(format!("empty matrix ({} x {})", self.rows, self.cols));
        }
        if self.row_ptr.len() != self.rows + 1 {
            let n = self.row_ptr.len();
            return Err(format!("row_ptr has {n} entries for {} rows", self.rows));
        }
        let nnz: usize = self.row_ptr[self.rows].as_();
        if nnz != self.col_idx.len() || self.col_idx.iter().any(|c| c.as_() >= self.cols) {
            return Err("column indices do not match row_ptr or exceed the column count".into());
        }
        Ok(())
    }

    /// Panel size in pixels (width, height).
    fn size(&self) -> (u32, u32) {
        let long = self.rows.max(self.cols) as f64;
        let side = |n: usize| ((PANEL_PX as f64 * n as f64 / long).round() as u32).max(1);
        (side(self.cols), side(self.rows))
    }

    /// Non-zero count per pixel of a `w x h` panel, row-major from the top.
    fn counts(&self, w: u32, h: u32) -> Vec<u64> {
        let mut counts = vec![0u64; w as usize * h as usize];
        for r in 0..self.rows {
            let py = (r as u64 * h as u64 / self.rows as u64) as usize;
            let (start, end) = (self.row_ptr[r].as_(), self.row_ptr[r + 1].as_());
            for c in &self.col_idx[start..end] {
                let px = (c.as_() as u64 * w as u64 / self.cols as u64) as usize;
                counts[py * w as usize + px] += 1;
            }
        }
        counts
    }
}

/// Write the patterns side by side as a PNG at `path`. An empty or inconsistent pattern is an
/// error naming the file and the panel.
pub fn write_sparsity_png<I: AsPrimitive<usize>>(
    path: &Path,
    patterns: &[Pattern<'_, I>],
) -> crate::Result<()> {
    if patterns.is_empty() {
        return Err(super::invalid_input(path, "no matrix to draw"));
    }
    for (k, p) in patterns.iter().enumerate() {
        p.check()
            .map_err(|e| super::invalid_input(path, format!("panel {k}: {e}")))?;
    }
    let sizes: Vec<(u32, u32)> = patterns.iter().map(|p| p.size()).collect();
    let width = GAP_PX + sizes.iter().map(|s| s.0 + 2 + GAP_PX).sum::<u32>();
    let height = 2 * GAP_PX + 2 + sizes.iter().map(|s| s.1).max().unwrap_or(1);
    let mut canvas = Canvas::new(width, height);
    let mut x = GAP_PX;
    for (p, &(w, h)) in patterns.iter().zip(&sizes) {
        draw_panel(&mut canvas, p, x, GAP_PX, w, h);
        x += w + 2 + GAP_PX;
    }
    encode(path, &canvas)
}

/// One framed panel with its top-left frame corner at `(x, y)`.
fn draw_panel<I: AsPrimitive<usize>>(
    canvas: &mut Canvas,
    p: &Pattern<'_, I>,
    x: u32,
    y: u32,
    w: u32,
    h: u32,
) {
    let block = (p.rows as f64 / h as f64).max(1.0) * (p.cols as f64 / w as f64).max(1.0);
    for (k, &count) in p.counts(w, h).iter().enumerate() {
        if count == 0 {
            continue;
        }
        let ink = MIN_INK + (1.0 - MIN_INK) * (count as f64 / block).min(1.0);
        let grey = (255.0 * (1.0 - ink)).round() as u8;
        let (px, py) = (k as u32 % w, k as u32 / w);
        canvas.fill(x + 1 + px, y + 1 + py, 1, 1, [grey; 3]);
    }
    canvas.fill(x, y, w + 2, 1, BLACK);
    canvas.fill(x, y + h + 1, w + 2, 1, BLACK);
    canvas.fill(x, y, 1, h + 2, BLACK);
    canvas.fill(x + w + 1, y, 1, h + 2, BLACK);
}

#[cfg(test)]
mod tests {
    use super::*;

    // A diagonal matrix draws a diagonal: the pixel on the diagonal is inked, one far from it
    // is white. This fixes the orientation (row 0 at the top, column 0 at the left).
    #[test]
    fn a_diagonal_draws_a_diagonal() {
        let n = 800usize;
        let row_ptr: Vec<usize> = (0..=n).collect();
        let col_idx: Vec<usize> = (0..n).collect();
        let p = Pattern {
            rows: n,
            cols: n,
            row_ptr: &row_ptr,
            col_idx: &col_idx,
        };
        let counts = p.counts(PANEL_PX, PANEL_PX);
        let at = |px: u32, py: u32| counts[(py * PANEL_PX + px) as usize];
        assert_eq!(at(0, 0), 2, "two diagonal entries per pixel at 800 -> 400");
        assert_eq!(at(PANEL_PX - 1, PANEL_PX - 1), 2);
        assert_eq!(at(PANEL_PX - 1, 0), 0, "top-right corner is empty");
        assert_eq!(
            counts.iter().sum::<u64>(),
            n as u64,
            "every entry lands somewhere"
        );
    }

    #[test]
    fn inconsistent_patterns_are_errors() {
        let row_ptr = [0usize, 1, 3];
        let col_idx = [0usize, 5, 1];
        let p = Pattern {
            rows: 2,
            cols: 2,
            row_ptr: &row_ptr,
            col_idx: &col_idx,
        };
        let dir = std::env::temp_dir().join("peridot_sparsity_test.png");
        let err = write_sparsity_png(&dir, &[p]).unwrap_err().to_string();
        assert!(err.contains("panel 0"), "{err}");
    }
}
