//! Temporary entry (the CLI replaces it).
fn main() -> std::process::ExitCode {
    if let Some(code) = switchboard::demo::main_from_env() {
        return code;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("demo-server") {
        return match switchboard::demo::Options::from_args(args.into_iter().skip(1)) {
            Ok(o) => switchboard::demo::run_stdio(o),
            Err(e) => {
                eprintln!("{e}");
                std::process::ExitCode::from(2)
            }
        };
    }
    std::process::ExitCode::from(2)
}
