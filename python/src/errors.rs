//! The engine's errors as Python exceptions, carrying the engine's message: bad input
//! (model fields, files that do not parse, option values) is `ValueError`; the memory
//! guard's refusal `MemoryError`; a file that cannot be read or written `OSError`; an
//! unstable run `peridot.UnstableError` (a `RuntimeError`); a backend this machine cannot
//! give, a GPU failure or a kernel that does not compile `RuntimeError`.

use peridot::Error;
use pyo3::exceptions::{PyMemoryError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    peridot,
    UnstableError,
    PyRuntimeError,
    "The run became unstable (NaN or blow-up); the outputs written so far are kept."
);

/// Add the package's own exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("UnstableError", m.py().get_type::<UnstableError>())
}

/// The Python exception of an engine error.
pub fn to_py(e: Error) -> PyErr {
    let text = e.to_string();
    match &e {
        // the memory guard's refusal names `host memory` or `device memory`
        Error::Usage { option, .. } if option.ends_with(" memory") => PyMemoryError::new_err(text),
        Error::Model { .. } | Error::Parse { .. } | Error::Usage { .. } => {
            PyValueError::new_err(text)
        }
        Error::Io { .. } => PyOSError::new_err(text),
        Error::Unstable { .. } => UnstableError::new_err(text),
        Error::Backend { .. } | Error::Kernel { .. } => PyRuntimeError::new_err(text),
    }
}

/// `?` on an engine result inside a Python call.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for peridot::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
