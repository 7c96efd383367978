//! Progress on stderr for long work (replays of large files, reports),
//! drawn by indicatif and only when stderr is a terminal: a log, a pipe or a
//! test sees nothing, so outputs stay byte-for-byte repeatable.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar or spinner; hidden when stderr is not a terminal.
#[derive(Debug)]
pub struct Progress(ProgressBar);

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

impl Progress {
    /// A bar over `total` steps, labelled `what`.
    pub fn bar(total: u64, what: &str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), target());
        if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(what.to_string());
        Progress(bar)
    }

    /// A spinner for work of unknown length, labelled `what`.
    pub fn spinner(what: &str) -> Self {
        let bar = ProgressBar::with_draw_target(None, target());
        bar.set_message(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress(bar)
    }

    /// Change the label (e.g. to the file being worked on).
    pub fn label(&self, what: &str) {
        self.0.set_message(what.to_string());
    }

    /// One step done.
    pub fn step(&self) {
        self.0.inc(1);
    }

    /// Whether anything is drawn (false when stderr is not a terminal).
    pub fn visible(&self) -> bool {
        !self.0.is_hidden()
    }
}

impl Drop for Progress {
    /// The bar is cleared when the work ends, however it ends, so an error
    /// message is never printed over half a bar.
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_when_stderr_is_not_a_terminal() {
        // Test harnesses capture stderr; a bar must then draw nothing.
        if std::io::stderr().is_terminal() {
            println!("skipped: stderr is a terminal here");
            return;
        }
        let p = Progress::bar(3, "x");
        p.step();
        p.label("y");
        assert!(!p.visible());
        assert!(!Progress::spinner("z").visible());
    }
}
