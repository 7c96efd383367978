//! The `lab` binary: parse, dispatch, print, exit with the documented code.

use std::io::Write;

// mimalloc instead of glibc's malloc: runs allocate many small strings, and
// the allocator was a fifth of a sweep cell (GUIDE.md "Benchmarks"; lab/alloc.rs).
#[global_allocator]
static ALLOC: ctxlab::alloc::Mimalloc = ctxlab::alloc::Mimalloc;

fn main() {
    ctxlab::alloc::tune();
    let cli = ctxlab::cli::Cli::parse_checked();
    match ctxlab::cli::run(cli) {
        Ok(out) => {
            // A reader that closed the pipe (`lab list | head`) is not an
            // error of ours: stop quietly instead of panicking in `print!`.
            let mut stdout = std::io::stdout().lock();
            if let Err(e) = stdout
                .write_all(out.as_bytes())
                .and_then(|()| stdout.flush())
            {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    eprintln!("error: writing the output: {e}");
                    std::process::exit(4);
                }
            }
        }
        // A streamed output (`--format jsonl | head`) whose reader closed
        // the pipe: stop quietly, as the final print above does.
        Err(e) if e.is_broken_pipe() => {}
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(e.exit_code());
        }
    }
}
