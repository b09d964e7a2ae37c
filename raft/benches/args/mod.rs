//! The benches' command line: `--name value` pairs after cargo's `--`.

/// The value after `name` on the command line, or `default` when it is missing or does not
/// parse.
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
