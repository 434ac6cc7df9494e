//! Child processes with a deadline: a test waits for a tool (Node.js, the
//! MCP client) at most as long as it says, then kills it and fails with
//! what it printed so far, instead of hanging the suite.
#![allow(dead_code)]

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `command` to completion like [`Command::output`], but for at most
/// `within`: past it the child is killed and the test panics naming
/// `what` and the time, with the output it had written.
pub fn output_within(command: &mut Command, within: Duration, what: &str) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {what}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + within;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                let out = String::from_utf8_lossy(&stdout.join().unwrap_or_default()).into_owned();
                let err = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
                panic!(
                    "{what} did not finish within {} s; killed it\n--- stdout\n{out}\n--- stderr\n{err}",
                    within.as_secs()
                );
            }
            Err(e) => panic!("could not wait for {what}: {e}"),
        }
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}
