//! `crack_tips.csv`: one row per tip per sample, header first:
//! `time,tip_id,x,y[,z],speed` (s, -, m, m/s; `speed` empty on a tip's first row). Numbers in
//! the shortest form that parses back to the same `f64`; every sample is flushed, so the file
//! is complete up to the last sample if the run stops.

use super::tracker::TipRow;
use crate::output::{create_starting_with, format_f64, invalid_input};
use crate::Error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes `crack_tips.csv` sample by sample.
#[derive(Debug)]
pub struct TipCsv {
    path: PathBuf,
    writer: BufWriter<File>,
    dim: usize,
}

impl TipCsv {
    /// The file at `path` with its header, for positions of `dim` (2 or 3) components.
    pub fn create(path: &Path, dim: usize) -> crate::Result<TipCsv> {
        let header = Self::header(dim).map_err(|m| invalid_input(path, m))?;
        Ok(TipCsv {
            path: path.to_path_buf(),
            writer: create_starting_with(path, header.as_bytes())?,
            dim,
        })
    }

    /// The file at `path` written again with `text` (the rows of an earlier run up to its
    /// checkpoint, header first), to go on from there.
    pub fn resume(path: &Path, text: &[u8], dim: usize) -> crate::Result<TipCsv> {
        let header = Self::header(dim).map_err(|m| invalid_input(path, m))?;
        if !text.starts_with(header.as_bytes()) {
            return Err(invalid_input(
                path,
                "the restart's crack-tip rows do not start with the header of this dimension",
            ));
        }
        Ok(TipCsv {
            path: path.to_path_buf(),
            writer: create_starting_with(path, text)?,
            dim,
        })
    }

    /// The path written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn header(dim: usize) -> Result<&'static str, String> {
        match dim {
            2 => Ok("time,tip_id,x,y,speed\n"),
            3 => Ok("time,tip_id,x,y,z,speed\n"),
            _ => Err(format!("dim is {dim}, expected 2 or 3")),
        }
    }

    /// The rows of one sample, flushed.
    pub fn write(&mut self, rows: &[TipRow]) -> crate::Result<()> {
        let mut text = String::new();
        for r in rows {
            text.push_str(&format_f64(r.time));
            text.push(',');
            text.push_str(&r.id.to_string());
            for x in &r.position[..self.dim] {
                text.push(',');
                text.push_str(&format_f64(*x));
            }
            text.push(',');
            if let Some(v) = r.speed {
                text.push_str(&format_f64(v));
            }
            text.push('\n');
        }
        self.writer
            .write_all(text.as_bytes())
            .and_then(|()| self.writer.flush())
            .map_err(|e| Error::io(&self.path, e))
    }
}
