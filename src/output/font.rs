//! A tiny built-in bitmap font for the labels of the pictures: 5 x 7 pixel glyphs (the classic
//! HD44780 character shapes) for the digits, `.`, `-`, a space and the lower-case letters the
//! labels use. Each glyph is 7 rows, top first; bit 4 of a row is its leftmost pixel.

/// Glyph width in font pixels.
pub const WIDTH: u32 = 5;
/// Glyph height in font pixels.
pub const HEIGHT: u32 = 7;
/// Horizontal advance from one glyph to the next (one blank column between).
pub const ADVANCE: u32 = WIDTH + 1;

/// The rows of `c`, or `None` for a character the font lacks.
pub fn glyph(c: char) -> Option<[u8; 7]> {
    Some(match c {
        '0' => [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        '1' => [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        '2' => [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        '3' => [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        '4' => [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        '5' => [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        '6' => [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        '7' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        '9' => [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        '.' => [0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C],
        '-' => [0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00],
        ' ' => [0x00; 7],
        'a' => [0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F],
        'd' => [0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F],
        'e' => [0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E],
        'g' => [0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E],
        'm' => [0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11],
        _ => return None,
    })
}

/// Whether font pixel `(col, row)` of `c` is set (`false` outside the glyph or for a
/// character the font lacks).
pub fn is_set(c: char, col: u32, row: u32) -> bool {
    match glyph(c) {
        Some(rows) if col < WIDTH && row < HEIGHT => {
            rows[row as usize] >> (WIDTH - 1 - col) & 1 == 1
        }
        _ => false,
    }
}

/// Length of `text` in font pixels along its baseline (no blank column after the last glyph).
pub fn length(text: &str) -> u32 {
    (text.chars().count() as u32 * ADVANCE).saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every character the pictures write has a glyph, and each glyph but the space has ink.
    #[test]
    fn the_labels_have_glyphs() {
        for c in "0123456789.-damage".chars() {
            let rows = glyph(c).unwrap_or_else(|| panic!("no glyph for {c:?}"));
            assert!(rows.iter().any(|&r| r != 0), "{c:?} is blank");
            assert!(rows.iter().all(|&r| r < 1 << WIDTH), "{c:?} is too wide");
        }
        assert!(is_set('1', 2, 0) && !is_set('1', 0, 0));
        assert_eq!(length("0.5"), 17);
    }
}
