//! The agent host with its MCP endpoint and a simulated devices-console tab
//! in the same process (docs/agents.md, "Try it: `devices_mcp`").
//!
//! When ready it prints exactly one line on stdout,
//! `{"mcp":"http://127.0.0.1:PORT/mcp","token":"…"}`: the streamable HTTP
//! MCP endpoint and the bearer token it requires (requests without it get
//! 401); everything else goes to stderr. The tab's devices table has
//! dev-1, dev-2, dev-3 and dev-locked, dev-1 and dev-2 selected; its tools
//! are devices.list, devices.disable (deviceIds bound to the selection and
//! locked, confirmation required), devices.purge, and the view
//! capabilities devices.table.select and devices.table.filter. The
//! simulated user approves (`--approve`) or rejects (`--reject`) every
//! confirmation. It serves until killed. With `--database postgres://…
//! --replica NAME` the process is one replica of several sharing that
//! database (docs/host.md, "Replicas"): an MCP client of either one, with
//! either token, acts in the tab of the token's replica.

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

use surface_host::host::{Database, DEFAULT_REPLICA_NAME};
use surface_host::mcp::McpServerOptions;

use host::{Backend, UserDecision};

const USAGE: &str = "usage: devices_mcp [--port PORT] (--approve | --reject) [--orpc-url URL] [--decide-after-ms MS]
                   [--database memory | sqlite:PATH | postgres://…] [--replica NAME]

  --port PORT          listen port on 127.0.0.1 (default 0: an ephemeral port)
  --approve | --reject what the simulated user does with every confirmation
  --orpc-url URL       call a real oRPC server (e.g. http://127.0.0.1:4000/rpc,
                       the peer in tests/orpc-peer) instead of the embedded backend
  --decide-after-ms MS how long the user looks at the dialog (default 200)
  --database DB        where the host keeps runs, calls and tokens (default
                       sqlite:target/devices-mcp/host.db; memory keeps nothing;
                       postgres://… can be shared by several replicas)
  --replica NAME       this process's replica name on a shared database, stable
                       across its restarts, distinct per replica (default host)";

struct Args {
    port: u16,
    decision: Option<UserDecision>,
    backend: Backend,
    decide_after: Duration,
    database: Database,
    replica: String,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        port: 0,
        decision: None,
        backend: Backend::embedded(),
        decide_after: Duration::from_millis(200),
        database: Database::sqlite("target/devices-mcp/host.db"),
        replica: DEFAULT_REPLICA_NAME.to_string(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--port" => a.port = number(&arg, value()?)?,
            "--approve" | "--reject" => {
                let d =
                    [UserDecision::Reject, UserDecision::Approve][usize::from(arg == "--approve")];
                if a.decision.replace(d).is_some() {
                    return Err("give exactly one of --approve and --reject".into());
                }
            }
            "--orpc-url" => a.backend = Backend::orpc(&value()?),
            "--decide-after-ms" => a.decide_after = Duration::from_millis(number(&arg, value()?)?),
            "--database" => {
                a.database = value()?.parse().map_err(|e| format!("--database: {e}"))?
            }
            "--replica" => a.replica = value()?,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(a)
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
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) if args.decision.is_some() => args,
        Ok(_) => usage("give one of --approve and --reject"),
        Err(message) => usage(&message),
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
    }
}

fn usage(problem: &str) -> ! {
    if !problem.is_empty() {
        eprintln!("error: {problem}");
    }
    eprintln!("{USAGE}");
    std::process::exit(2)
}

async fn run(args: Args) -> Result<(), String> {
    eprintln!("[host] backend: {}", args.backend.describe());
    let decision = args.decision.unwrap_or(UserDecision::Approve);
    let hosting = (args.database.clone(), args.replica.as_str());
    let options = McpServerOptions::default();
    let running = host::start(
        args.backend,
        (decision, args.decide_after),
        options,
        hosting,
    )
    .await?;
    let served = running
        .host
        .serve(("127.0.0.1", args.port), axum::Router::new())
        .await;
    let served = served.map_err(|e| format!("cannot listen on 127.0.0.1:{}: {e}", args.port))?;
    let mcp = format!("http://{}/mcp", served.addr());
    let ready = serde_json::json!({"mcp": mcp, "token": running.token});
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{ready}")
        .and_then(|()| stdout.flush())
        .map_err(|e| e.to_string())?;
    drop(stdout);
    eprintln!("[host] MCP endpoint {mcp} (Authorization: Bearer <token>); the user will {decision:?} every confirmation");
    eprintln!(
        "[host] state in {} as replica {}",
        args.database.describe(),
        args.replica
    );
    served
        .wait()
        .await
        .map_err(|e| format!("the server stopped: {e}"))
}
