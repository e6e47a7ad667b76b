//! The evaluations' progress bars ([`Progress`], indicatif): drawn on stderr, and only when both
//! stdout and stderr are terminals and no JSON was asked for, so pipes, files and CI logs get
//! nothing but the report.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// One stage's bar: `what [#####.....] 12/40 eta 3s`; share it across threads (`&Progress`).
pub(crate) struct Progress(ProgressBar);

impl Progress {
    /// A bar over `total` items of one stage, hidden when `quiet` or not on a terminal.
    pub(crate) fn new(total: usize, what: &str, quiet: bool) -> Self {
        let shown = !quiet && std::io::stderr().is_terminal() && std::io::stdout().is_terminal();
        let target = if shown {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        bar.set_style(
            ProgressStyle::with_template("{msg:>18} [{bar:40}] {pos}/{len} {elapsed} eta {eta}")
                .expect("a valid template")
                .progress_chars("#>."),
        );
        bar.set_message(what.to_owned());
        Self(bar)
    }

    /// One item done.
    pub(crate) fn tick(&self) {
        self.0.inc(1);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // The report follows: leave no half line behind.
        self.0.finish_and_clear();
    }
}
