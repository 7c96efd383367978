//! Worker threads for independent items whose results must come out in
//! input order: `--jobs N` of `lab replay` and `lab sweep`.
//!
//! [`ordered`] reads items on one thread, works on them on `N` threads and
//! hands the results to the caller's thread in input order, so what a
//! command prints is the same bytes for every `N`. At most a window of items
//! is in flight (read but not yet handed on), which keeps a streamed corpus
//! in bounded memory however fast the reader is. With one job nothing is
//! spawned: each item is worked and handed on before the next is read.
//!
//! Built on `std::thread::scope` and `std::sync::mpsc`: the pool is a few
//! dozen lines and needs no borrowed data to be `'static`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

/// Items in flight per worker: enough that a worker finding its next item
/// waiting is the rule, few enough that memory stays a few sessions deep.
pub const WINDOW_PER_JOB: usize = 2;

/// The default number of jobs: every core this process may use.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Most `--jobs` accepted, 256: each job is a thread with its own stack
/// and a window of [`WINDOW_PER_JOB`] sessions in memory, so a mistyped
/// `--jobs 99999` would ask for more memory than a machine has; no machine
/// this runs on gains from more threads than that.
pub const MAX_JOBS: usize = 256;

/// `--jobs N`: a whole number of threads, 1 to [`MAX_JOBS`].
pub fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_JOBS).contains(&n) => Ok(n),
        Ok(n) if n > MAX_JOBS => Err(format!(
            "{n} threads is more than the {MAX_JOBS} allowed: each holds sessions in memory (default: every core, {})",
            default_jobs()
        )),
        _ => Err(format!(
            "{s:?} is not a number of threads: use a whole number, 1 or more (default: every core, {})",
            default_jobs()
        )),
    }
}

/// Run `work` on every item `produce` pushes, on `jobs` threads, and give
/// each result to `sink` on the calling thread in the order the items were
/// pushed. `push` returns false once the run stops (`sink` returned false);
/// `produce` should then stop reading. At most `jobs × WINDOW_PER_JOB` items
/// are in flight. Returns what `produce` returned; every item pushed before
/// it returned has been given to `sink` (unless `sink` stopped the run).
pub fn ordered<T, R, P>(
    jobs: usize,
    produce: impl FnOnce(&mut dyn FnMut(T) -> bool) -> P + Send,
    work: impl Fn(T) -> R + Sync,
    mut sink: impl FnMut(R) -> bool,
) -> P
where
    T: Send,
    R: Send,
    P: Send,
{
    if jobs <= 1 {
        let mut going = true;
        return produce(&mut |item| {
            going = going && sink(work(item));
            going
        });
    }
    let window = jobs * WINDOW_PER_JOB;
    let stop = AtomicBool::new(false);
    // Tasks never block their sender: the slots bound what is in flight.
    let (task_tx, task_rx) = mpsc::sync_channel::<(usize, T)>(window);
    let task_rx = Mutex::new(task_rx);
    let (done_tx, done_rx) = mpsc::channel::<(usize, R)>();
    let (slot_tx, slot_rx) = mpsc::sync_channel::<()>(window);
    for _ in 0..window {
        slot_tx.send(()).expect("the slot channel is open");
    }
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let (done_tx, task_rx, stop, work) = (done_tx.clone(), &task_rx, &stop, &work);
            scope.spawn(move || loop {
                let _stops_on_panic = StopOnPanic(stop);
                // The lock is held only while taking a task, never while working.
                let next = task_rx.lock().map(|rx| rx.recv());
                let Ok(Ok((i, item))) = next else { break };
                if stop.load(Ordering::Relaxed) || done_tx.send((i, work(item))).is_err() {
                    break;
                }
            });
        }
        drop(done_tx);
        let stop_ref = &stop;
        let reader = scope.spawn(move || {
            let mut i = 0;
            let out = produce(&mut |item| {
                if !wait_for_slot(&slot_rx, stop_ref) {
                    return false;
                }
                let sent = task_tx.send((i, item)).is_ok();
                i += 1;
                sent
            });
            drop(task_tx);
            out
        });
        let mut pending: BTreeMap<usize, R> = BTreeMap::new();
        let mut next = 0;
        'results: for (i, r) in done_rx.iter() {
            pending.insert(i, r);
            while let Some(r) = pending.remove(&next) {
                next += 1;
                if !sink(r) {
                    stop.store(true, Ordering::Relaxed);
                    break 'results;
                }
                // The reader may be gone already; a slot nobody takes is harmless.
                let _ = slot_tx.send(());
            }
        }
        // Free a reader waiting for a slot, then collect it.
        drop(slot_tx);
        drop(done_rx);
        match reader.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// [`ordered`] for fallible work whose every result is wanted: the results
/// in push order, or the first error (which stops the run).
pub fn try_collect<T, R, E>(
    jobs: usize,
    produce: impl FnOnce(&mut dyn FnMut(T) -> bool) -> bool + Send,
    work: impl Fn(T) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E>
where
    T: Send,
    R: Send,
    E: Send,
{
    let mut out = Vec::new();
    let mut failed = None;
    ordered(jobs, produce, work, |r| match r {
        Ok(v) => {
            out.push(v);
            true
        }
        Err(e) => {
            failed = Some(e);
            false
        }
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Sets the stop flag when a worker unwinds, so the reader stops waiting
/// for a slot its lost result would never free (the scope then re-raises
/// the panic).
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Take a slot, looking at the stop flag now and then; false when the run stopped.
fn wait_for_slot(slots: &mpsc::Receiver<()>, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        match slots.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(()) => return true,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Results come out in input order whatever the jobs and work times.
    #[test]
    fn results_keep_input_order() {
        for jobs in [1, 2, 3, 8] {
            let mut got = Vec::new();
            let n = ordered(
                jobs,
                |push| (0..200u64).take_while(|i| push(*i)).count(),
                |i| {
                    // Later items finish first often: uneven work.
                    std::thread::sleep(std::time::Duration::from_micros((200 - i) % 7 * 50));
                    i * i
                },
                |r| {
                    got.push(r);
                    true
                },
            );
            assert_eq!(n, 200);
            assert_eq!(
                got,
                (0..200u64).map(|i| i * i).collect::<Vec<_>>(),
                "{jobs}"
            );
        }
    }

    /// No more than the window is ever read ahead of what was handed on.
    #[test]
    fn at_most_a_window_is_in_flight() {
        let read = AtomicUsize::new(0);
        let sunk = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        ordered(
            3,
            |push| {
                for i in 0..100 {
                    let ahead =
                        read.fetch_add(1, Ordering::SeqCst) + 1 - sunk.load(Ordering::SeqCst);
                    most.fetch_max(ahead, Ordering::SeqCst);
                    if !push(i) {
                        break;
                    }
                }
            },
            |i| i,
            |_| {
                sunk.fetch_add(1, Ordering::SeqCst);
                true
            },
        );
        let most = most.load(Ordering::SeqCst);
        // The item being pushed waits for a slot, so it counts once more.
        assert!(most <= 3 * WINDOW_PER_JOB + 1, "{most}");
        assert!(most > 1, "the reader ran ahead at all: {most}");
    }

    /// A sink that stops ends the run: the reader stops reading.
    #[test]
    fn a_stopping_sink_stops_the_reader() {
        for jobs in [1, 2, 4] {
            let mut got = Vec::new();
            let pushed = ordered(
                jobs,
                |push| (0..1_000_000u64).take_while(|i| push(*i)).count(),
                |i| i,
                |r| {
                    got.push(r);
                    r < 10
                },
            );
            assert_eq!(got, (0..=10).collect::<Vec<_>>(), "{jobs}");
            assert!(pushed < 100, "{jobs}: read {pushed} items");
        }
    }

    /// A panicking worker ends the run with its panic instead of hanging it.
    #[test]
    fn a_panicking_worker_does_not_hang_the_run() {
        let r = std::panic::catch_unwind(|| {
            ordered(
                2,
                |push| (0..1000u64).take_while(|i| push(*i)).count(),
                |i| {
                    assert_ne!(i, 5, "planted panic");
                    i
                },
                |_| true,
            )
        });
        assert!(r.is_err());
    }

    #[test]
    fn jobs_parse() {
        assert_eq!(parse_jobs("3"), Ok(3));
        for bad in ["0", "-1", "x", ""] {
            assert!(parse_jobs(bad).unwrap_err().contains("1 or more"), "{bad}");
        }
        assert_eq!(parse_jobs("256"), Ok(MAX_JOBS));
        for big in ["257", "99999", "18446744073709551615"] {
            let e = parse_jobs(big).unwrap_err();
            assert!(e.contains("more than the 256 allowed"), "{big}: {e}");
        }
    }
}
