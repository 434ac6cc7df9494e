//! `cargo run -p devices-host`: builds the page, starts the oRPC peer and
//! the host on 127.0.0.1, prints the URL.

use std::process::ExitCode;

use devices_host::{page, peer::Peer, serve, Database, HostConfig};

const USAGE: &str = "usage: devices-host [--port N] [--backend URL] [--database DB] [--approver-secret S] [--replica NAME] [--no-build]

Builds the devices page (wasm32, Leptos), starts the oRPC peer of
tests/orpc-peer and the agent host on 127.0.0.1, and prints the URL.

  --port N        listen on port N (default 8080; 0 = any free port)
  --backend URL   use a running oRPC backend (e.g. http://127.0.0.1:4000/rpc;
                  its capability gateway is the sibling /gateway, its
                  decision endpoint /approvals/decide) instead of starting
                  the peer
  --database DB   the host store: sqlite:PATH (default
                  sqlite:target/devices-host/host.db), postgres://… or memory
  --approver-secret S
                  what the approver types on /approver (default: random,
                  printed at start-up)
  --replica NAME  this host's name in the store (default devices-host): start
                  several hosts on one postgres:// database with distinct
                  names and any of them serves any agent (docs/host.md,
                  \"Replicas\")
  --no-build      serve the page built last time";

/// The command line, parsed: the host's config, the backend (if given),
/// whether to build the page.
fn parse() -> Result<(HostConfig, Option<String>, bool), String> {
    let (mut port, mut backend, mut build) = (8080u16, None, true);
    let default_db = page::target_dir().join("devices-host").join("host.db");
    let (mut database, mut secret, mut replica) = (Database::Sqlite(default_db), None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .filter(|v| !v.is_empty())
                .ok_or(format!("{arg} needs a value"))
        };
        match arg.as_str() {
            "--port" => {
                port = value()?
                    .parse()
                    .map_err(|_| "--port needs a number 0..65535")?
            }
            "--backend" => backend = Some(value()?),
            "--database" => database = value()?.parse().map_err(|e| format!("--database: {e}"))?,
            "--approver-secret" => secret = Some(value()?),
            "--replica" => replica = Some(value()?),
            "--no-build" => build = false,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let mut config = HostConfig::new(([127, 0, 0, 1], port).into(), "", page::pkg_dir());
    config.database = database;
    config.approver_secret = secret.unwrap_or(config.approver_secret);
    config.owner = replica.unwrap_or(config.owner);
    Ok((config, backend, build))
}

fn main() -> ExitCode {
    // Every event on stderr, one line each; what another party sent is
    // logged as a `?` field (escaped), never as the message.
    // rmcp's own INFO events carry what a client sent at `initialize`
    // (up to the body bound): warnings only, so a token holder cannot
    // grow the log by megabytes a request.
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::INFO)
        .with_target("rmcp", tracing::Level::WARN);
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(filter)
        .init();
    let (mut config, backend, build) = match parse() {
        Ok(parsed) => parsed,
        Err(problem) if problem.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(problem) => {
            eprintln!("devices-host: {problem}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&mut config, backend, build) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("devices-host: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(config: &mut HostConfig, backend: Option<String>, build: bool) -> Result<(), String> {
    if build {
        let built = page::build()?;
        let opt = if built.optimized {
            ", wasm-opt -Oz"
        } else {
            ""
        };
        eprintln!(
            "devices-host: page built{opt}: {:.1} KiB as a browser downloads it (gzip; the wasm is {:.1} KiB uncompressed)",
            built.served_gzip_bytes as f64 / 1024.0,
            built.wasm_bytes as f64 / 1024.0
        );
    }
    // The peer lives until the host stops.
    let peer = match backend {
        Some(_) => None,
        None => Some(Peer::start()?),
    };
    config.backend_rpc =
        backend.unwrap_or_else(|| peer.as_ref().map(Peer::rpc_url).unwrap_or_default());
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let running = serve(config.clone())
            .await
            .map_err(|e| format!("cannot start on {}: {e}", config.bind))?;
        let url = running.url();
        println!("devices console: {url}");
        println!(
            "MCP endpoint:    {url}mcp (replica {}; a run and its bearer token: the page's \"Connect an MCP agent\")",
            running.replica_name()
        );
        println!("approver page:   {url}approver (approver secret: {})", config.approver_secret);
        tracing::info!(backend = ?config.backend_rpc, "Ctrl-C stops host and peer");
        let _ = tokio::signal::ctrl_c().await;
        Ok(())
    })
}
