//! The indicatif progress bar behind the eval crate's `Reporter` trait (stderr only).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use prbench_eval::runner::Reporter;
use std::sync::Mutex;

/// A progress bar per stage with rate and ETA; hidden when quiet.
pub struct Bar {
    quiet: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Bar {
    /// A reporter that draws to stderr unless `quiet`.
    pub fn new(quiet: bool) -> Self {
        Self { quiet, bar: Mutex::new(None) }
    }

    /// Moves the bar to `done` items of the current stage (for callbacks that report a running
    /// total rather than increments).
    pub fn set_done(&self, done: u64) {
        if let Some(b) = &*self.bar.lock().expect("bar lock") {
            b.set_position(done);
        }
    }
}

impl Reporter for Bar {
    fn start(&self, stage: &str, total: u64) {
        let bar = ProgressBar::with_draw_target(
            Some(total),
            if self.quiet { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() },
        );
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({per_sec}, ETA {eta}) ")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_message(stage.to_string());
        *self.bar.lock().expect("bar lock") = Some(bar);
    }

    fn advance(&self, n: u64) {
        if let Some(b) = &*self.bar.lock().expect("bar lock") {
            b.inc(n);
        }
    }

    fn finish(&self) {
        if let Some(b) = self.bar.lock().expect("bar lock").take() {
            b.finish_and_clear();
        }
    }
}

impl prbench_eval::evaluation::EvaluationReporter for Bar {
    fn note(&self, message: &str) {
        eprintln!("prbench: {message}");
    }
}
