//! The agent host with its MCP endpoint and a simulated devices-console tab
//! in one process (docs/agents.md, "Try it: `devices_mcp`"). When ready it
//! prints one line on stdout, `{"mcp":"http://127.0.0.1:PORT/mcp",
//! "token":"…"}` — the endpoint and the bearer token it requires — and
//! serves until killed; everything else goes to stderr. With `--database
//! postgres://… --replica NAME` the process is one replica of several on
//! that database (docs/host.md, "Replicas"): either one's client, with
//! either token, acts in the tab of the token's replica.
#![allow(dead_code)]

#[path = "devices/app.rs"]
mod app;
#[path = "devices/backend.rs"]
mod backend;
#[path = "devices/embedded.rs"]
mod embedded;
#[path = "support/devices_mcp_host.rs"]
mod host;

use std::io::Write as _;
use std::time::Duration;

use backend::Backend;
use host::{Setup, UserDecision};
use surface_host::host::{Database, DEFAULT_REPLICA_NAME};

const USAGE: &str = "usage: devices_mcp [--port PORT] (--approve | --reject) [--orpc-url URL] [--decide-after-ms MS]
                   [--database memory | sqlite:PATH | postgres://…] [--replica NAME]

  --port PORT          listen port on 127.0.0.1 (default 0: an ephemeral port)
  --approve | --reject what the simulated user does with every confirmation
  --orpc-url URL       call a real oRPC server (e.g. the peer in tests/orpc-peer)
  --decide-after-ms MS how long the user looks at the dialog (default 200)
  --database DB        the host's runs, calls and tokens (default
                       sqlite:target/devices-mcp/host.db; memory keeps nothing)
  --replica NAME       this process's replica name on a shared database (default host)";

/// The port and the setup, or the problem (empty for `--help`).
fn parse_args() -> Result<(u16, Setup), String> {
    let (mut port, mut decision) = (0, None);
    let mut setup = Setup {
        backend: Backend::new(None),
        decision: UserDecision::Approve,
        decide_after: Duration::from_millis(200),
        database: Database::sqlite("target/devices-mcp/host.db"),
        replica: DEFAULT_REPLICA_NAME.to_string(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--port" => port = number(&arg, value()?)?,
            "--approve" | "--reject" => {
                let d =
                    [UserDecision::Reject, UserDecision::Approve][usize::from(arg == "--approve")];
                if decision.replace(d).is_some() {
                    return Err("give exactly one of --approve and --reject".into());
                }
            }
            "--orpc-url" => setup.backend = Backend::new(Some(value()?)),
            "--decide-after-ms" => {
                setup.decide_after = Duration::from_millis(number(&arg, value()?)?)
            }
            "--database" => {
                setup.database = value()?.parse().map_err(|e| format!("--database: {e}"))?
            }
            "--replica" => setup.replica = value()?,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    setup.decision = decision.ok_or("give one of --approve and --reject")?;
    Ok((port, setup))
}

fn number<T: std::str::FromStr>(arg: &str, value: String) -> Result<T, String> {
    let what = if arg == "--port" {
        "a port number"
    } else {
        "a number"
    };
    value
        .parse()
        .map_err(|_| format!("{arg} `{value}` is not {what}"))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let (port, setup) = parse_args().unwrap_or_else(|problem| {
        let problem = (!problem.is_empty()).then(|| format!("error: {problem}\n"));
        eprintln!("{}{USAGE}", problem.unwrap_or_default());
        std::process::exit(2)
    });
    if let Err(message) = run(port, setup).await {
        eprintln!("error: {message}");
        return std::process::ExitCode::from(1);
    }
    std::process::ExitCode::SUCCESS
}

async fn run(port: u16, setup: Setup) -> Result<(), String> {
    match &setup.backend {
        Backend::Embedded(_) => eprintln!("[host] backend: embedded in-process devices backend"),
        Backend::Orpc { url, .. } => eprintln!("[host] backend: real oRPC server at {url}"),
    }
    let decision = setup.decision;
    let state = format!("{} as replica {}", setup.database.describe(), setup.replica);
    let running = host::start(setup).await?;
    let routes = axum::Router::new();
    let served = running.host.serve(("127.0.0.1", port), routes).await;
    let served = served.map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    let mcp = format!("http://{}/mcp", served.addr());
    let ready = serde_json::json!({"mcp": mcp, "token": running.token});
    // One line, flushed (stdout is line-buffered).
    writeln!(std::io::stdout(), "{ready}").map_err(|e| e.to_string())?;
    eprintln!("[host] MCP endpoint {mcp} (Authorization: Bearer <token>); the user will {decision:?} every confirmation");
    eprintln!("[host] state in {state}");
    let stopped = served.wait().await;
    stopped.map_err(|e| format!("the server stopped: {e}"))
}
