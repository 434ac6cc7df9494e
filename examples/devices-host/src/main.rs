//! `cargo run -p devices-host`: builds the page, starts the oRPC peer and
//! the host on 127.0.0.1, prints the URL.

use std::process::ExitCode;

use devices_host::{page, peer::Peer, serve, Database, HostConfig};

const USAGE: &str = "usage: devices-host [--port N] [--backend URL] [--database DB] [--approver-secret S] [--replica NAME] [--ag-ui-agent | --ag-ui URL] [--no-build]

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
  --ag-ui-agent   also start the AG-UI test agent of tests/agui-agent (the
                  official @ag-ui/mastra adapter with a scripted model: no
                  model provider, no network) and show the page's \"Agent
                  chat\" panel over it (try \"disable the selected devices\")
  --ag-ui URL     the same with a running AG-UI agent endpoint instead
                  (e.g. http://127.0.0.1:4111/agent); the host forwards the
                  page's runs to it at /app/agent
  --no-build      serve the page built last time";

/// The command line, parsed.
struct Options {
    config: HostConfig,
    /// `--backend`.
    backend: Option<String>,
    /// Not `--no-build`.
    build: bool,
    /// `--ag-ui-agent`.
    start_agent: bool,
}

fn parse() -> Result<Options, String> {
    let (mut port, mut backend, mut build) = (8080u16, None, true);
    let (mut start_agent, mut ag_ui) = (false, None);
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
            "--ag-ui-agent" => start_agent = true,
            "--ag-ui" => ag_ui = Some(value()?),
            "--no-build" => build = false,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let mut config = HostConfig::new(([127, 0, 0, 1], port).into(), "", page::pkg_dir());
    config.database = database;
    config.approver_secret = secret.unwrap_or(config.approver_secret);
    config.owner = replica.unwrap_or(config.owner);
    if start_agent && ag_ui.is_some() {
        return Err("--ag-ui-agent and --ag-ui exclude each other".into());
    }
    config.ag_ui = ag_ui;
    Ok(Options {
        config,
        backend,
        build,
        start_agent,
    })
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
    let mut options = match parse() {
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
    match run(&mut options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("devices-host: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: &mut Options) -> Result<(), String> {
    if options.build {
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
    let config = &mut options.config;
    // The peer (and the agent) live until the host stops.
    let peer = match options.backend.take() {
        Some(backend) => {
            config.backend_rpc = backend;
            None
        }
        None => Some(Peer::start()?),
    };
    if let Some(peer) = &peer {
        config.backend_rpc = peer.rpc_url();
    }
    let agent = options
        .start_agent
        .then(Peer::start_ag_ui_agent)
        .transpose()?;
    if let Some(agent) = &agent {
        config.ag_ui = Some(agent.agent_url());
    }
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
        if let Some(agent) = &config.ag_ui {
            println!("agent chat:      the page's \"Agent chat\" panel, AG-UI agent {agent}");
        }
        tracing::info!(backend = ?config.backend_rpc, "Ctrl-C stops host and peer");
        let _ = tokio::signal::ctrl_c().await;
        Ok(())
    })
}
