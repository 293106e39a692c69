//! Progress reporting on stderr: a live bar with steps/s and ETA when stderr is a terminal,
//! otherwise (logs, CI, pipes) a plain line about every 10% of the run:
//!
//! ```text
//! run: step 100/1000 (10%), 1234 steps/s, eta 3 s
//! ```
//!
//! Rates are steps per wall-clock second since the reporter was created; the ETA assumes the
//! remaining steps go at the same rate.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Template of the terminal bar.
const BAR_TEMPLATE: &str =
    "{prefix}: [{elapsed_precise}] {wide_bar} {pos}/{len} ({percent}%) {per_sec:0} eta {eta} {msg}";

/// How many plain lines a run prints at most (one every 10%).
const PLAIN_REPORTS: u64 = 10;

/// A progress reporter for a loop of `total` steps.
pub struct Progress {
    mode: Mode,
    total: u64,
    position: u64,
    finished: bool,
}

enum Mode {
    /// A terminal bar drawn by indicatif.
    Bar(ProgressBar),
    /// Plain lines into `sink` when the position reaches `next_report`.
    Plain(PlainLines),
    /// Nothing at all.
    Hidden,
}

struct PlainLines {
    sink: Box<dyn Write + Send>,
    label: String,
    message: String,
    start: Instant,
    /// Number of 10% marks already reported.
    reported: u64,
    /// Position at which the next line is due.
    next_report: u64,
    /// Position of the last line printed (to avoid repeating it at `finish`).
    last_printed: Option<u64>,
}

impl Progress {
    /// A progress bar with steps/s and ETA on a terminal (stderr is a tty), plain lines
    /// (`label: step 100/1000 (10%), 1234 steps/s, eta 3 s`) about every 10% otherwise.
    pub fn new(total: u64, label: &str) -> Self {
        if std::io::stderr().is_terminal() {
            Self::bar(total, label)
        } else {
            Self::plain(total, label, Box::new(std::io::stderr()))
        }
    }

    /// Plain lines into `sink` (about every 10%) whatever the terminal is; for logs and tests.
    pub fn plain(total: u64, label: &str, sink: Box<dyn Write + Send>) -> Self {
        let lines = PlainLines {
            sink,
            label: label.to_string(),
            message: String::new(),
            start: Instant::now(),
            reported: 0,
            next_report: mark(1, total),
            last_printed: None,
        };
        Self::with_mode(Mode::Plain(lines), total)
    }

    /// A reporter that prints nothing (quiet runs, benchmarks).
    pub fn hidden(total: u64) -> Self {
        Self::with_mode(Mode::Hidden, total)
    }

    fn bar(total: u64, label: &str) -> Self {
        let style = ProgressStyle::with_template(BAR_TEMPLATE)
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
            .with_style(style)
            .with_prefix(label.to_string());
        Self::with_mode(Mode::Bar(bar), total)
    }

    fn with_mode(mode: Mode, total: u64) -> Self {
        Progress {
            mode,
            total,
            position: 0,
            finished: false,
        }
    }

    /// Move to `position` (steps done). Cheap: callable every step.
    pub fn set(&mut self, position: u64) {
        if position == self.position || self.finished {
            return;
        }
        self.position = position;
        match &mut self.mode {
            Mode::Bar(bar) => bar.set_position(position),
            Mode::Plain(lines) => {
                if position >= lines.next_report {
                    lines.report(position, self.total);
                }
            }
            Mode::Hidden => {}
        }
    }

    /// A short status shown after the bar (or at the end of the next plain line), e.g. the
    /// current maximum damage.
    pub fn set_message(&mut self, msg: &str) {
        match &mut self.mode {
            Mode::Bar(bar) => bar.set_message(msg.to_string()),
            Mode::Plain(lines) => msg.clone_into(&mut lines.message),
            Mode::Hidden => {}
        }
    }

    /// Finish: the bar stays on screen at its final position; plain mode prints a final line
    /// unless the last line already showed this position. Calling it again does nothing.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        match &mut self.mode {
            Mode::Bar(bar) => bar.finish(),
            Mode::Plain(lines) => {
                if lines.last_printed != Some(self.position) {
                    lines.print(self.position, self.total);
                }
            }
            Mode::Hidden => {}
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Mode::Bar(bar) = &self.mode {
            if !bar.is_finished() {
                bar.abandon();
            }
        }
    }
}

impl PlainLines {
    /// Print a line for `position` and schedule the next one after the marks it passed.
    fn report(&mut self, position: u64, total: u64) {
        self.print(position, total);
        while self.reported < PLAIN_REPORTS && mark(self.reported + 1, total) <= position {
            self.reported += 1;
        }
        self.next_report = if self.reported < PLAIN_REPORTS {
            mark(self.reported + 1, total)
        } else {
            u64::MAX
        };
    }

    /// `label: step 100/1000 (10%), 1234 steps/s, eta 3 s[; message]`. Write errors are
    /// ignored: progress is never worth failing a run for.
    fn print(&mut self, position: u64, total: u64) {
        let elapsed = self.start.elapsed().as_secs_f64();
        let rate = if elapsed > 0.0 {
            position as f64 / elapsed
        } else {
            0.0
        };
        let percent = if total > 0 {
            100 * u128::from(position) / u128::from(total)
        } else {
            100
        };
        let mut line = format!(
            "{}: step {position}/{total} ({percent}%), {} steps/s",
            self.label,
            format_rate(rate)
        );
        if position < total && rate > 0.0 {
            let eta = (total - position) as f64 / rate;
            line.push_str(&format!(", eta {}", format_duration(eta)));
        } else if position >= total {
            line.push_str(&format!(", done in {}", format_elapsed(elapsed)));
        }
        if !self.message.is_empty() {
            line.push_str("; ");
            line.push_str(&self.message);
        }
        line.push('\n');
        let _ = self.sink.write_all(line.as_bytes());
        let _ = self.sink.flush();
        self.last_printed = Some(position);
    }
}

/// Position of the `k`-th 10% mark of `total` (rounded up, at least 1).
fn mark(k: u64, total: u64) -> u64 {
    let exact = (u128::from(total) * u128::from(k)).div_ceil(u128::from(PLAIN_REPORTS));
    u64::try_from(exact).unwrap_or(u64::MAX).max(1)
}

/// Steps per second with a precision that suits its size (`1234`, `12.5`, `0.125`).
fn format_rate(rate: f64) -> String {
    if rate >= 100.0 {
        format!("{rate:.0}")
    } else if rate >= 1.0 {
        format!("{rate:.1}")
    } else {
        format!("{rate:.3}")
    }
}

/// Elapsed seconds: `0.42 s` below a minute, else as [`format_duration`].
fn format_elapsed(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.2} s")
    } else {
        format_duration(seconds)
    }
}

/// Seconds as `3 s`, `2 min 05 s` or `1 h 02 min`.
fn format_duration(seconds: f64) -> String {
    // `as` saturates and maps NaN to 0.
    let seconds = seconds.clamp(0.0, 1e9) as u64;
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min {:02} s", s / 60, s % 60),
        s => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::format_duration;

    // ETAs must read naturally at every scale, and never panic on odd inputs.
    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(3.4), "3 s");
        assert_eq!(format_duration(125.0), "2 min 05 s");
        assert_eq!(format_duration(3720.0), "1 h 02 min");
        assert_eq!(format_duration(f64::NAN), "0 s");
        assert_eq!(format_duration(-1.0), "0 s");
    }
}
