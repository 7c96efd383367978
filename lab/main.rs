//! The `lab` binary: parse, dispatch, print, exit with the documented code.

use clap::Parser;

fn main() {
    let cli = ctxlab::cli::Cli::parse();
    match ctxlab::cli::run(cli) {
        Ok(out) => print!("{out}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(e.exit_code());
        }
    }
}
