//! The output folder of a run: created if missing, and removed again after an early failure
//! when this run created it and left it empty.
//!
//! `OutputFolder::create` remembers which folders of the path did not exist (the folder itself
//! and any missing parents, `out/` of the default `out/<name>`); `remove_if_empty` removes
//! those, deepest first, each only while it is empty. A folder that existed before the run is
//! never removed, nor one holding a file.

use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// An output folder and the part of its path this run created.
#[derive(Debug)]
pub struct OutputFolder {
    /// The folders this run created, deepest first.
    created: Vec<PathBuf>,
}

impl OutputFolder {
    /// Create `dir` and its missing parents, remembering which ones were missing.
    pub fn create(dir: &Path) -> Result<Self> {
        let created: Vec<PathBuf> = dir
            .ancestors()
            .filter(|p| !p.as_os_str().is_empty())
            .take_while(|p| std::fs::symlink_metadata(p).is_err())
            .map(Path::to_path_buf)
            .collect();
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        Ok(OutputFolder { created })
    }

    /// `work` with the folder `dir` created first (where there is one): an error of `work`
    /// that leaves it empty removes what this run created of it ([`remove_if_empty`]).
    ///
    /// [`remove_if_empty`]: OutputFolder::remove_if_empty
    pub fn around<R>(dir: Option<&Path>, work: impl FnOnce() -> Result<R>) -> Result<R> {
        let folder = dir.map(OutputFolder::create).transpose()?;
        let outcome = work();
        if let (Err(_), Some(folder)) = (&outcome, folder) {
            folder.remove_if_empty();
        }
        outcome
    }

    /// Remove the folders this run created that are still empty, deepest first; stop at the
    /// first that is not (it holds something, or is gone). Failures are ignored: this runs
    /// after an error, which is the one to report.
    pub fn remove_if_empty(self) {
        for dir in &self.created {
            // `remove_dir` refuses a folder that is not empty: never a file is lost
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}
