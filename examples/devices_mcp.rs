//! The agent host with its MCP endpoint and a simulated devices-console tab
//! in the same process (docs/agents.md, "Try it: `devices_mcp`").
//!
//! ```text
//! cargo run --example devices_mcp -- --port 0 --approve
//! cargo run --example devices_mcp -- --port 0 --reject --orpc-url http://127.0.0.1:4000/rpc
//! ```
//!
//! When ready it prints exactly one line on stdout,
//! `{"mcp":"http://127.0.0.1:PORT/mcp","token":"…"}`: the streamable HTTP
//! MCP endpoint and the bearer token it requires
//! (`Authorization: Bearer …`; requests without it get 401). Everything
//! else goes to stderr. The tab's devices table has dev-1, dev-2, dev-3 and
//! dev-locked, with dev-1 and dev-2 selected; its tools are devices.list,
//! devices.disable (deviceIds bound to the selection and locked,
//! confirmation required), devices.purge, and the view capabilities
//! devices.table.select and devices.table.filter. The simulated user
//! approves (`--approve`) or rejects (`--reject`) every confirmation the
//! tab shows, after `--decide-after-ms` (default 200). It serves until
//! killed.
//!
//! The host keeps its state in a SQLite file by default
//! (`--database sqlite:target/devices-mcp/host.db`; `memory` keeps
//! nothing). With `--database postgres://… --replica NAME` the process is
//! one replica of several sharing that database (docs/host.md,
//! "Replicas"): start two with different names and ports, and an MCP
//! client of either one, with either token, acts in the tab of the token's
//! replica — the call is routed through the database to the replica
//! holding the tab.
//!
//! ```text
//! cargo run --example devices_mcp -- --approve --port 8091 --database postgres://… --replica r1
//! cargo run --example devices_mcp -- --approve --port 8092 --database postgres://… --replica r2
//! ```

#[allow(dead_code)]
#[path = "devices/app.rs"]
mod app;
#[allow(dead_code)]
#[path = "devices/embedded.rs"]
mod embedded;
#[allow(dead_code)]
#[path = "support/devices_mcp_host.rs"]
mod host;

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

// `agent_surface::mcp` and `agent_surface::TokioTimer` need the facade's
// `mcp`/`tokio` features. An application enables them on `agent-surface`;
// a cargo example cannot enable its own package's features, so the examples
// name the same items through the runtime crate (a dev-dependency with `mcp`).
use surface_host::host::Database;
use surface_host::mcp::McpServerOptions;

use host::{Backend, Hosting, UserDecision};

const USAGE: &str = "usage: devices_mcp [--port PORT] (--approve | --reject) [--orpc-url URL] [--decide-after-ms MS]
                   [--database memory | sqlite:PATH | postgres://…] [--replica NAME]

Serves the agent host's MCP endpoint on 127.0.0.1 with a simulated devices
console tab; prints {\"mcp\":URL,\"token\":TOKEN} on stdout when ready.

  --port PORT          listen port (default 0: an ephemeral port)
  --approve            the simulated user approves every confirmation
  --reject             the simulated user rejects every confirmation
  --orpc-url URL       call a real oRPC server (e.g. http://127.0.0.1:4000/rpc,
                       the peer in tests/orpc-peer) instead of the embedded backend
  --decide-after-ms MS how long the user looks at the dialog (default 200)
  --database DB        where the host keeps runs, calls and tokens (default
                       sqlite:target/devices-mcp/host.db; memory keeps nothing;
                       postgres://… can be shared by several replicas)
  --replica NAME       this process's replica name on a shared database
                       (letters, digits, . _ -), stable across its restarts,
                       distinct per replica (default host)";

struct Args {
    port: u16,
    decision: UserDecision,
    orpc_url: Option<String>,
    decide_after: Duration,
    hosting: Hosting,
}

fn parse_args() -> Result<Args, String> {
    let mut port = 0u16;
    let mut decision = None;
    let mut orpc_url = None;
    let mut decide_after = Duration::from_millis(200);
    let mut database = Database::sqlite("target/devices-mcp/host.db");
    let mut replica = surface_host::host::DEFAULT_REPLICA_NAME.to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                let value = args.next().ok_or("--port needs a value")?;
                port = value
                    .parse()
                    .map_err(|_| format!("--port `{value}` is not a port number"))?;
            }
            "--approve" | "--reject" => {
                let d = if arg == "--approve" {
                    UserDecision::Approve
                } else {
                    UserDecision::Reject
                };
                if decision.replace(d).is_some() {
                    return Err("give exactly one of --approve and --reject".into());
                }
            }
            "--orpc-url" => orpc_url = Some(args.next().ok_or("--orpc-url needs a value")?),
            "--decide-after-ms" => {
                let value = args.next().ok_or("--decide-after-ms needs a value")?;
                decide_after = Duration::from_millis(
                    value
                        .parse()
                        .map_err(|_| format!("--decide-after-ms `{value}` is not a number"))?,
                );
            }
            "--database" => {
                let value = args.next().ok_or("--database needs a value")?;
                database = value.parse().map_err(|e| format!("--database: {e}"))?;
            }
            "--replica" => replica = args.next().ok_or("--replica needs a value")?,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let decision = decision.ok_or("give one of --approve and --reject")?;
    Ok(Args {
        port,
        decision,
        orpc_url,
        decide_after,
        hosting: Hosting { database, replica },
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("error: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let backend = match &args.orpc_url {
        Some(url) => Backend::orpc(url),
        None => Backend::embedded(),
    };
    eprintln!("[host] backend: {}", backend.describe());
    let running = match host::start(
        backend,
        args.decision,
        args.decide_after,
        McpServerOptions::default(),
        args.hosting.clone(),
    )
    .await
    {
        Ok(running) => running,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(1);
        }
    };
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on 127.0.0.1:{}: {e}", args.port);
            return ExitCode::from(1);
        }
    };
    let port = match listener.local_addr() {
        Ok(a) => a.port(),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let app = axum::Router::new().route_service("/mcp", running.host.mcp_service());
    let ready = serde_json::json!({
        "mcp": format!("http://127.0.0.1:{port}/mcp"),
        "token": running.token,
    });
    {
        let mut stdout = std::io::stdout().lock();
        if writeln!(stdout, "{ready}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return ExitCode::from(1);
        }
    }
    eprintln!(
        "[host] MCP endpoint http://127.0.0.1:{port}/mcp (Authorization: Bearer <token>); \
         the user will {:?} every confirmation",
        args.decision
    );
    eprintln!(
        "[host] state in {} as replica {}",
        args.hosting.database.describe(),
        args.hosting.replica
    );
    // Unlike `axum::serve`, a connection whose headers never complete is
    // closed after the header-read timeout (docs/limits.md).
    match surface_host::server::serve(listener, app, surface_host::server::ServeOptions::default())
        .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: the server stopped: {e}");
            ExitCode::from(1)
        }
    }
}
