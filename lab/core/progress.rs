//! Progress on stderr for long work (corpus replays, horizons, sweeps,
//! reports). On a terminal indicatif draws a bar; off a terminal (a CI log,
//! `nohup`, a pipe) one plain line is printed every few seconds, so a long
//! job is never silent; `--quiet` turns both off. Progress never touches
//! stdout, so outputs stay byte-for-byte repeatable.
//!
//! Off a terminal the first line comes only after one interval
//! ([`DEFAULT_EVERY`], or `CTXLAB_PROGRESS_SECS`): a command that ends
//! sooner prints nothing on stderr, as before.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Seconds between two progress lines off a terminal when
/// `CTXLAB_PROGRESS_SECS` is not set.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(5);

/// The environment variable that sets the interval of the plain lines, in
/// seconds (a decimal such as `0.5` is allowed; `0` or a value that does not
/// parse keeps the default).
pub const EVERY_VAR: &str = "CTXLAB_PROGRESS_SECS";

// Process-wide because `--quiet` is a property of the invocation, read by
// every long command wherever it draws; set once by the CLI before dispatch.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Turn all progress off (`--quiet`), or back on.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// The interval of the plain lines: `CTXLAB_PROGRESS_SECS` when it parses
/// to a positive number of seconds, else [`DEFAULT_EVERY`].
pub fn every() -> Duration {
    std::env::var(EVERY_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e6)
        .map(Duration::from_secs_f64)
        .unwrap_or(DEFAULT_EVERY)
}

/// What the plain-line printer reads: shared with the ticker thread.
#[derive(Debug)]
struct State {
    what: Mutex<String>,
    pos: AtomicU64,
    len: Option<u64>,
    started: Instant,
}

impl State {
    /// One progress line: `what: pos/len (elapsed)`, or `what: elapsed` for
    /// work of unknown length.
    fn line(&self) -> String {
        let what = self.what.lock().map(|w| w.clone()).unwrap_or_default();
        let elapsed = clock(self.started.elapsed());
        match self.len {
            Some(len) => {
                let pos = self.pos.load(Ordering::Relaxed);
                format!("{what}: {pos}/{len} ({elapsed} elapsed)")
            }
            None => match self.pos.load(Ordering::Relaxed) {
                0 => format!("{what}: still working ({elapsed} elapsed)"),
                done => format!("{what}: {done} done ({elapsed} elapsed)"),
            },
        }
    }
}

/// `h:mm:ss` or `m:ss`: whole seconds, as a log reader wants them.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The thread that prints a plain line every interval until it is told to
/// stop (the sender dropped).
#[derive(Debug)]
struct Ticker {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    fn start(state: Arc<State>, every: Duration) -> Option<Ticker> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let mut printed = false;
                loop {
                    match stopped.recv_timeout(every) {
                        Err(RecvTimeoutError::Timeout) => {
                            eprintln!("{}", state.line());
                            printed = true;
                        }
                        // A message or a dropped sender: the work is over.
                        // Work that outlasted an interval reports at least
                        // once even when this thread was not scheduled in
                        // time (a loaded machine), so the promise "a long
                        // job is never silent" does not depend on timing.
                        _ => {
                            if !printed && state.started.elapsed() >= every {
                                eprintln!("{}", state.line());
                            }
                            return;
                        }
                    }
                }
            })
            // No thread (the system refused one): the work goes on without
            // plain lines rather than failing for want of progress.
            .ok()?;
        Some(Ticker {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            // The thread only prints; if it panicked there is nothing to save.
            let _ = t.join();
        }
    }
}

/// A progress bar or spinner: indicatif on a terminal, a plain line every
/// interval off one, nothing under `--quiet`.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    state: Arc<State>,
    ticker: Option<Ticker>,
}

/// Where the progress goes for this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Terminal,
    Lines,
    Off,
}

fn mode() -> Mode {
    if quiet() {
        Mode::Off
    } else if std::io::stderr().is_terminal() {
        Mode::Terminal
    } else {
        Mode::Lines
    }
}

impl Progress {
    /// A bar over `total` steps, labelled `what`.
    pub fn bar(total: u64, what: &str) -> Self {
        Self::new(Some(total), what, mode(), every())
    }

    /// A spinner for work of unknown length, labelled `what`.
    pub fn spinner(what: &str) -> Self {
        Self::new(None, what, mode(), every())
    }

    fn new(len: Option<u64>, what: &str, mode: Mode, every: Duration) -> Self {
        let target = if mode == Mode::Terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(len, target);
        if len.is_some() {
            if let Ok(style) =
                ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
        } else if mode == Mode::Terminal {
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        bar.set_message(what.to_string());
        let state = Arc::new(State {
            what: Mutex::new(what.to_string()),
            pos: AtomicU64::new(0),
            len,
            started: Instant::now(),
        });
        let ticker = if mode == Mode::Lines {
            Ticker::start(state.clone(), every)
        } else {
            None
        };
        Progress { bar, state, ticker }
    }

    /// Change the label (e.g. to the file being worked on).
    pub fn label(&self, what: &str) {
        self.bar.set_message(what.to_string());
        if let Ok(mut w) = self.state.what.lock() {
            *w = what.to_string();
        }
    }

    /// One step done.
    pub fn step(&self) {
        self.steps(1);
    }

    /// `n` steps done.
    pub fn steps(&self, n: u64) {
        self.bar.inc(n);
        self.state.pos.fetch_add(n, Ordering::Relaxed);
    }

    /// Whether anything is drawn on a terminal (false off one, where the
    /// plain lines come from [`Progress::prints_lines`]).
    pub fn visible(&self) -> bool {
        !self.bar.is_hidden()
    }

    /// Whether plain lines are printed (off a terminal, not `--quiet`).
    pub fn prints_lines(&self) -> bool {
        self.ticker.is_some()
    }
}

impl Drop for Progress {
    /// The bar is cleared and the line printer stopped when the work ends,
    /// however it ends, so an error message is never printed over half a bar.
    fn drop(&mut self) {
        self.ticker.take();
        self.bar.finish_and_clear();
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

    #[test]
    fn quiet_and_terminal_modes_start_no_line_printer() {
        let off = Progress::new(Some(3), "x", Mode::Off, Duration::from_millis(1));
        assert!(!off.prints_lines());
        let lines = Progress::new(Some(3), "x", Mode::Lines, Duration::from_secs(60));
        assert!(lines.prints_lines());
        // Dropping stops the printer at once, not after its interval.
        let t = Instant::now();
        drop(lines);
        assert!(t.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn a_line_names_the_work_its_position_and_the_time() {
        let p = Progress::new(Some(39), "horizon: policies", Mode::Off, DEFAULT_EVERY);
        p.steps(12);
        assert_eq!(p.state.line(), "horizon: policies: 12/39 (0:00 elapsed)");
        p.label("replay a.jsonl");
        assert!(p.state.line().starts_with("replay a.jsonl: 12/39"));
        let s = Progress::new(None, "reports", Mode::Off, DEFAULT_EVERY);
        assert_eq!(s.state.line(), "reports: still working (0:00 elapsed)");
        s.steps(4);
        assert_eq!(s.state.line(), "reports: 4 done (0:00 elapsed)");
    }

    #[test]
    fn clock_reads_minutes_and_hours() {
        assert_eq!(clock(Duration::from_secs(5)), "0:05");
        assert_eq!(clock(Duration::from_secs(125)), "2:05");
        assert_eq!(clock(Duration::from_secs(3725)), "1:02:05");
    }
}
