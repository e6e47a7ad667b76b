//! Starting the built `vouch serve` in a test: shared by `serve.rs` and `fleet.rs`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Spawns `command` (a `vouch serve ... --listen 127.0.0.1:0`) with its stdout piped, reads the
/// first line it prints and returns the process and the base URL it listens on.
pub fn spawn_serve(mut command: Command) -> (Child, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("vouch serve: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    (child, address)
}
