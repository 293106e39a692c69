//! Matrix Market files (`coordinate real general` or `coordinate real symmetric`), the format
//! SciPy (`scipy.io.mmread`), MATLAB (`mmread.m`), Julia and most sparse solvers read.
//!
//! Indices in the file are 1-based; a symmetric matrix stores its lower triangle only
//! (`row >= col`), as the format requires. Values are written in the shortest text that
//! parses back to exactly the same `f64`, so a file read back gives the matrix bit for bit.
//!
//! The writer takes a plain compressed-sparse-row view ([`Csr`]); callers convert from their
//! sparse type at this edge. The reader exists for tests and for tools that check an export.

use super::{format_f64, invalid_input, write_atomically};
use crate::Error;
use std::io::Write;
use std::path::Path;

/// A compressed-sparse-row view of a matrix: the entries of row `i` are
/// `col_idx[row_ptr[i]..row_ptr[i + 1]]` with values `val[..]` at the same positions.
#[derive(Debug, Clone, Copy)]
pub struct Csr<'a> {
    pub nrows: usize,
    pub ncols: usize,
    pub row_ptr: &'a [usize],
    pub col_idx: &'a [usize],
    pub val: &'a [f64],
}

impl Csr<'_> {
    /// Check that the arrays have the lengths and ranges the shape implies.
    pub fn check(&self) -> Result<(), String> {
        let nnz = self.col_idx.len();
        if self.row_ptr.len() != self.nrows + 1 {
            return Err(format!(
                "row_ptr has {} entries, expected {}",
                self.row_ptr.len(),
                self.nrows + 1
            ));
        }
        if self.val.len() != nnz || self.row_ptr[self.nrows] != nnz || self.row_ptr[0] != 0 {
            return Err(format!(
                "{} values and {nnz} column indices do not match row_ptr",
                self.val.len()
            ));
        }
        if self.row_ptr.windows(2).any(|w| w[0] > w[1]) {
            return Err("row_ptr decreases".into());
        }
        if let Some(&c) = self.col_idx.iter().find(|&&c| c >= self.ncols) {
            return Err(format!("column index {c} >= {} columns", self.ncols));
        }
        Ok(())
    }
}

/// Which entries a Matrix Market file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symmetry {
    /// Every stored entry.
    General,
    /// The lower triangle of a symmetric matrix (`row >= col`); the upper one is implied.
    Symmetric,
}

impl Symmetry {
    fn keyword(self) -> &'static str {
        match self {
            Symmetry::General => "general",
            Symmetry::Symmetric => "symmetric",
        }
    }
}

/// Write `matrix` to `path` as `coordinate real`. With [`Symmetry::Symmetric`] only the lower
/// triangle is written and the matrix must be square (its symmetry is the caller's promise).
/// `comments` become `%` lines after the header. Returns the number of entries written.
pub fn write_matrix_market(
    path: &Path,
    matrix: Csr,
    symmetry: Symmetry,
    comments: &[String],
) -> crate::Result<usize> {
    matrix.check().map_err(|m| invalid_input(path, m))?;
    if symmetry == Symmetry::Symmetric && matrix.nrows != matrix.ncols {
        return Err(invalid_input(
            path,
            format!(
                "a symmetric matrix must be square, not {} x {}",
                matrix.nrows, matrix.ncols
            ),
        ));
    }
    let keep = |i: usize, j: usize| symmetry == Symmetry::General || j <= i;
    let rows = |i: usize| matrix.row_ptr[i]..matrix.row_ptr[i + 1];
    let count = (0..matrix.nrows)
        .map(|i| rows(i).filter(|&k| keep(i, matrix.col_idx[k])).count())
        .sum::<usize>();
    write_atomically(path, |w| {
        writeln!(
            w,
            "%%MatrixMarket matrix coordinate real {}",
            symmetry.keyword()
        )?;
        for c in comments {
            for line in c.lines() {
                writeln!(w, "% {line}")?;
            }
        }
        writeln!(w, "{} {} {count}", matrix.nrows, matrix.ncols)?;
        for i in 0..matrix.nrows {
            for k in rows(i) {
                let j = matrix.col_idx[k];
                if keep(i, j) {
                    writeln!(w, "{} {} {}", i + 1, j + 1, format_f64(matrix.val[k]))?;
                }
            }
        }
        Ok(())
    })?;
    Ok(count)
}

/// Write the dense `rows x cols` matrix `values` (column-major) as a Matrix Market array
/// file (`real general`), each value with 17 significant digits, after `comments`.
pub fn write_matrix_market_array(
    path: &Path,
    (rows, cols): (usize, usize),
    values: &[f64],
    comments: &[String],
) -> crate::Result<()> {
    if values.len() != rows * cols {
        let message = format!("{} values for a {rows} x {cols} array", values.len());
        return Err(invalid_input(path, message));
    }
    write_atomically(path, |w| {
        writeln!(w, "%%MatrixMarket matrix array real general")?;
        for c in comments {
            for line in c.lines() {
                writeln!(w, "% {line}")?;
            }
        }
        writeln!(w, "{rows} {cols}")?;
        for v in values {
            writeln!(w, "{}", format_f64(*v))?;
        }
        Ok(())
    })
}

/// A Matrix Market file read back: its shape, symmetry and entries as stored (0-based; a
/// symmetric file's entries are its lower triangle).
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixMarket {
    pub nrows: usize,
    pub ncols: usize,
    pub symmetry: Symmetry,
    pub entries: Vec<(usize, usize, f64)>,
}

impl MatrixMarket {
    /// Every entry of the matrix, the implied upper triangle of a symmetric one included.
    pub fn expanded(&self) -> Vec<(usize, usize, f64)> {
        let mut all = self.entries.clone();
        if self.symmetry == Symmetry::Symmetric {
            all.extend(
                self.entries
                    .iter()
                    .filter(|e| e.0 != e.1)
                    .map(|&(i, j, v)| (j, i, v)),
            );
        }
        all
    }

    /// `y = A x` over [`MatrixMarket::expanded`] entries.
    pub fn multiply(&self, x: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; self.nrows];
        for (i, j, v) in self.expanded() {
            y[i] += v * x[j];
        }
        y
    }
}

/// Read a `coordinate real` Matrix Market file (general or symmetric). A malformed file is an
/// `InvalidData` error naming the file and the line.
pub fn read_matrix_market(path: &Path) -> crate::Result<MatrixMarket> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let bad = |line: usize, message: String| {
        Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("line {line}: {message}"),
            ),
        )
    };
    let mut lines = text.lines().enumerate().map(|(k, l)| (k + 1, l));
    let (_, header) = lines.next().ok_or_else(|| bad(1, "empty file".into()))?;
    let words: Vec<String> = header
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let symmetry = match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["%%matrixmarket", "matrix", "coordinate", "real", "general"] => Symmetry::General,
        ["%%matrixmarket", "matrix", "coordinate", "real", "symmetric"] => Symmetry::Symmetric,
        _ => {
            return Err(bad(
                1,
                format!("expected a coordinate real general or symmetric header, got {header:?}"),
            ))
        }
    };
    let mut data = lines.filter(|(_, l)| !l.trim_start().starts_with('%') && !l.trim().is_empty());
    let (n, size) = data
        .next()
        .ok_or_else(|| bad(2, "missing the size line".into()))?;
    let size: Vec<usize> = size
        .split_whitespace()
        .map(|w| w.parse().map_err(|e| bad(n, format!("{w:?}: {e}"))))
        .collect::<crate::Result<_>>()?;
    let [nrows, ncols, nnz] = size[..] else {
        return Err(bad(n, "the size line needs rows, columns, entries".into()));
    };
    let mut entries = Vec::with_capacity(nnz);
    for (n, line) in data {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() != 3 {
            return Err(bad(n, format!("expected `row col value`, got {line:?}")));
        }
        let index = |s: &str, len: usize| -> crate::Result<usize> {
            match s.parse::<usize>() {
                Ok(k) if (1..=len).contains(&k) => Ok(k - 1),
                _ => Err(bad(n, format!("index {s:?} outside 1..={len}"))),
            }
        };
        let (i, j) = (index(w[0], nrows)?, index(w[1], ncols)?);
        let v: f64 = w[2]
            .parse()
            .map_err(|e| bad(n, format!("value {:?}: {e}", w[2])))?;
        if symmetry == Symmetry::Symmetric && j > i {
            return Err(bad(
                n,
                "a symmetric file stores the lower triangle only".into(),
            ));
        }
        entries.push((i, j, v));
    }
    if entries.len() != nnz {
        return Err(bad(
            text.lines().count(),
            format!("{} entries, the size line says {nnz}", entries.len()),
        ));
    }
    Ok(MatrixMarket {
        nrows,
        ncols,
        symmetry,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // A 3 x 3 symmetric matrix round-trips bit for bit, storing only its lower triangle;
    // a general 2 x 3 one keeps every entry.
    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let (row_ptr, col_idx) = (vec![0, 2, 5, 7], vec![0, 1, 0, 1, 2, 1, 2]);
        let val = vec![4.0, -1.0 / 3.0, -1.0 / 3.0, 4.0, 1e-300, 1e-300, 2.5];
        let m = Csr {
            nrows: 3,
            ncols: 3,
            row_ptr: &row_ptr,
            col_idx: &col_idx,
            val: &val,
        };
        let path = dir.path().join("k.mtx");
        let n = write_matrix_market(&path, m, Symmetry::Symmetric, &["test".into()]).unwrap();
        assert_eq!(n, 5);
        let back = read_matrix_market(&path).unwrap();
        assert_eq!(back.symmetry, Symmetry::Symmetric);
        assert_eq!(back.multiply(&[1.0, 2.0, 3.0]), {
            let mut y = vec![0.0; 3];
            for i in 0..3 {
                for k in row_ptr[i]..row_ptr[i + 1] {
                    y[i] += val[k] * [1.0, 2.0, 3.0][col_idx[k]];
                }
            }
            y
        });
        let path = dir.path().join("b.mtx");
        let (rp, ci, v) = (vec![0, 1, 3], vec![2, 0, 1], vec![1.0, -0.5, 0.5]);
        let b = Csr {
            nrows: 2,
            ncols: 3,
            row_ptr: &rp,
            col_idx: &ci,
            val: &v,
        };
        assert_eq!(
            write_matrix_market(&path, b, Symmetry::General, &[]).unwrap(),
            3
        );
        let back = read_matrix_market(&path).unwrap();
        assert_eq!(back.entries, vec![(0, 2, 1.0), (1, 0, -0.5), (1, 1, 0.5)]);
    }

    // Inconsistent views and malformed files are errors, not panics.
    #[test]
    fn bad_input_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.mtx");
        let m = Csr {
            nrows: 2,
            ncols: 2,
            row_ptr: &[0, 1],
            col_idx: &[0],
            val: &[1.0],
        };
        assert!(write_matrix_market(&path, m, Symmetry::General, &[]).is_err());
        for text in [
            "",
            "%%MatrixMarket matrix array real general\n1 1\n1\n",
            "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n",
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n",
            "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1.0\n",
        ] {
            std::fs::write(&path, text).unwrap();
            let e = read_matrix_market(&path).unwrap_err().to_string();
            assert!(e.contains("x.mtx"), "{e}");
        }
    }
}
