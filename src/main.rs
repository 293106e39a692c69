//! The `peridot` command line: `run`, `info`, `validate`, `export-matrix`, `solve-static`,
//! `bench`. User errors print one line on stderr and exit with status 1; nothing panics on bad
//! input.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
