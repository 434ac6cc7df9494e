//! `cargo run -p devices-host`: builds the page, starts the oRPC peer and
//! the host on 127.0.0.1, prints the URL.
//!
//! ```text
//! devices-host [--port N] [--backend URL] [--database DB] [--approver-secret S] [--replica NAME] [--no-build]
//! ```

use std::net::SocketAddr;
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

fn main() -> ExitCode {
    let mut port = 8080u16;
    let mut backend = None;
    let mut build = true;
    let mut database = Database::Sqlite(page::target_dir().join("devices-host").join("host.db"));
    let mut approver_secret = None;
    let mut replica = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => match args.next().and_then(|p| p.parse().ok()) {
                Some(p) => port = p,
                None => return usage("--port needs a number 0..65535"),
            },
            "--backend" => match args.next() {
                Some(url) => backend = Some(url),
                None => return usage("--backend needs a URL"),
            },
            "--database" => match args.next().map(|d| d.parse::<Database>()) {
                Some(Ok(d)) => database = d,
                Some(Err(e)) => return usage(&format!("--database: {e}")),
                None => return usage("--database needs a value"),
            },
            "--approver-secret" => match args.next() {
                Some(secret) if !secret.is_empty() => approver_secret = Some(secret),
                _ => return usage("--approver-secret needs a non-empty value"),
            },
            "--replica" => match args.next() {
                Some(name) if !name.is_empty() => replica = Some(name),
                _ => return usage("--replica needs a name"),
            },
            "--no-build" => build = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage(&format!("unknown argument {other:?}")),
        }
    }
    if build {
        match page::build() {
            Ok(built) => eprintln!(
                "devices-host: page built in {} ({} bytes of wasm{})",
                built.dir.display(),
                built.wasm_bytes,
                if built.optimized {
                    ", wasm-opt -Oz"
                } else {
                    ""
                }
            ),
            Err(e) => {
                eprintln!("devices-host: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let peer = match backend {
        Some(url) => Err(url),
        None => match Peer::start() {
            Ok(peer) => Ok(peer),
            Err(e) => {
                eprintln!("devices-host: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    let backend_rpc = match &peer {
        Ok(peer) => peer.rpc_url(),
        Err(url) => url.clone(),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("devices-host: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let mut config = HostConfig::new(
            SocketAddr::from(([127, 0, 0, 1], port)),
            backend_rpc.clone(),
            page::pkg_dir(),
        );
        config.database = database;
        if let Some(secret) = approver_secret {
            config.approver_secret = secret;
        }
        if let Some(name) = replica {
            config.owner = name;
        }
        let secret = config.approver_secret.clone();
        let running = match serve(config).await {
            Ok(running) => running,
            Err(e) => {
                eprintln!("devices-host: cannot listen on 127.0.0.1:{port}: {e}");
                return ExitCode::FAILURE;
            }
        };
        println!("devices console: {}", running.url());
        println!(
            "MCP endpoint:    {}mcp (replica {}; a run and its bearer token: the page's \"Connect an MCP agent\")",
            running.url(),
            running.replica().name()
        );
        println!(
            "approver page:   {}approver (approver secret: {secret})",
            running.url()
        );
        eprintln!("devices-host: backend {backend_rpc}; Ctrl-C stops host and peer");
        let _ = tokio::signal::ctrl_c().await;
        drop(running);
        ExitCode::SUCCESS
    })
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("devices-host: {problem}\n\n{USAGE}");
    ExitCode::from(2)
}
