//! SIGINT and SIGTERM for `peridot run`: the first signal sets the run's cancel flag
//! (`peridot::solver::Cancel`), so the run stops after the step it is in, writes that step's
//! outputs and a summary with `"status": "interrupted"`, and the program exits with 128 plus
//! the signal's number (130 for SIGINT, 143 for SIGTERM). A second signal exits at once with
//! the same rule, writing nothing more.
//!
//! The handler only stores to atomics and calls `_exit`, both async-signal-safe. Only `run`
//! installs it; the other commands keep the default disposition (the signal ends them).

use peridot::solver::Cancel;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};
use std::sync::Arc;

/// The flag the handler sets: a leaked clone of the run's [`Cancel`] flag (it lives as long
/// as the process).
static FLAG: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());
/// The first signal received, 0 before any.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Install the handlers for SIGINT and SIGTERM; returns the flag they set.
pub fn install() -> anyhow::Result<Cancel> {
    let cancel = Cancel::new();
    let flag = Arc::into_raw(cancel.flag().clone()).cast_mut();
    FLAG.store(flag, Ordering::SeqCst);
    #[cfg(unix)]
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed `sigaction` is a valid value to fill in; the handler has the
        // signature `sa_sigaction` takes without SA_SIGINFO and does only async-signal-safe
        // work (atomics, `_exit`).
        let done = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if done != 0 {
            anyhow::bail!(
                "cannot install a handler for signal {signal}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(cancel)
}

#[cfg(unix)]
extern "C" fn on_signal(signal: libc::c_int) {
    if SIGNAL
        .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // SAFETY: `_exit` is async-signal-safe and ends the process without unwinding.
        unsafe { libc::_exit(128 + signal) };
    }
    let flag = FLAG.load(Ordering::SeqCst);
    if !flag.is_null() {
        // SAFETY: `FLAG` holds a leaked `Arc<AtomicBool>`, never freed.
        unsafe { (*flag).store(true, Ordering::SeqCst) };
    }
}

/// The first signal received, if any.
fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// A run stopped by a signal: `main` prints it and exits with [`Interrupted::exit_code`].
#[derive(Debug)]
pub struct Interrupted {
    /// The signal's number (SIGINT when the flag was set otherwise).
    pub signal: i32,
    /// The step the run stopped at.
    pub step: usize,
    /// Where that step's outputs are.
    pub out_dir: PathBuf,
    /// A rank of a distributed run (the signal may have reached another rank).
    pub ranked: bool,
    /// Whether a checkpoint of the step was written (across ranks where the backend writes
    /// them: `solver::checkpoints_across_ranks`).
    pub resumable: bool,
}

impl Interrupted {
    /// For the run that stopped at `step`, writing into `out_dir`.
    pub fn new(step: usize, out_dir: PathBuf) -> Self {
        Interrupted {
            signal: received().unwrap_or(libc::SIGINT),
            step,
            out_dir,
            ranked: false,
            resumable: true,
        }
    }

    /// For a rank of a distributed run that stopped at `step` with the others (`resumable`:
    /// with a checkpoint of the step written).
    pub fn ranked(step: usize, out_dir: PathBuf, resumable: bool) -> Self {
        Interrupted {
            ranked: true,
            resumable,
            ..Interrupted::new(step, out_dir)
        }
    }

    /// 128 plus the signal's number, as shells report a process a signal ended.
    pub fn exit_code(&self) -> u8 {
        (128 + self.signal).clamp(0, 255) as u8
    }

    fn signal_name(&self) -> String {
        match self.signal {
            libc::SIGINT => "SIGINT".into(),
            libc::SIGTERM => "SIGTERM".into(),
            s => format!("signal {s}"),
        }
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ranked {
            let by = match received() {
                Some(_) => format!("by {}", self.signal_name()),
                None => "with the other ranks (a signal reached one of them)".into(),
            };
            let resume = match self.resumable {
                true => format!(
                    " (resume with mpirun -n P peridot run MODEL --restart {}, any P)",
                    self.out_dir.display()
                ),
                false => String::new(),
            };
            return write!(
                f,
                "interrupted {by} at step {}; the outputs of that step and summary.json are \
                 in {}{resume}",
                self.step,
                self.out_dir.display()
            );
        }
        write!(
            f,
            "interrupted by {} at step {}; the outputs of that step and summary.json are in {} \
             (resume with --restart {})",
            self.signal_name(),
            self.step,
            self.out_dir.display(),
            self.out_dir.display()
        )
    }
}

impl std::error::Error for Interrupted {}
