//! The `peridot` command line: `run`, `info`, `validate`, `export-matrix`, `solve-static`,
//! `bench`. User errors print one line on stderr and exit with status 1; nothing panics on bad
//! input. A `run` stopped by SIGINT or SIGTERM prints one line and exits with 130 or 143
//! (`cli/signals.rs`).

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    cli::mark_process_start();
    restore_sigpipe();
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<cli::signals::Interrupted>() {
            Some(stop) => {
                eprintln!("{stop}");
                ExitCode::from(stop.exit_code())
            }
            None => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Let a closed pipe end the process quietly, as for other command-line tools
/// (`peridot run MODEL | head -1`): Rust ignores `SIGPIPE`, which turns every later `println!`
/// into a panic.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any other thread exists; resetting a signal
    // disposition to its default has no other effect on the process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
