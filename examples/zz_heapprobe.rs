fn main() {
    let cli = ctxlab::cli::Cli::parse_checked();
    let out = ctxlab::cli::run(cli).unwrap();
    print!("{out}");
}
