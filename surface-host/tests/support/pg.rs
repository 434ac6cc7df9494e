//! A throwaway PostgreSQL cluster for tests and benches: `initdb` in a
//! temporary directory, `pg_ctl start` on a free loopback port, stopped
//! (`-m immediate`) and deleted on drop. `initdb` refuses to run as root,
//! so as root the cluster runs as the system user `surface-pg`, created
//! when missing (`useradd`), through `runuser`.
//!
//! [`PgCluster::require`] returns `None` with a notice when PostgreSQL is
//! not installed, and panics instead when `CI=true`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const PG_USER: &str = "surface-pg";

/// A running cluster.
pub struct PgCluster {
    dir: PathBuf,
    bin: PathBuf,
    run_as: Option<&'static str>,
    /// The loopback port it listens on.
    pub port: u16,
    databases: AtomicUsize,
}

fn find_bin() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn run(what: &str, command: &mut Command) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: could not start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl PgCluster {
    /// A started cluster, or `None` (with a notice on stderr) when
    /// PostgreSQL is not installed; under `CI=true` a missing PostgreSQL
    /// panics.
    pub fn require(test: &str) -> Option<Self> {
        match find_bin() {
            Some(bin) => Some(Self::start(bin)),
            None if std::env::var("CI").as_deref() == Ok("true") => panic!(
                "{test}: PostgreSQL (initdb, pg_ctl under /usr/lib/postgresql/*/bin or $PG_BIN) \
                 is not installed, and CI=true requires it (apt-get install -y postgresql)"
            ),
            None => {
                eprintln!(
                    "SKIPPED {test}: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); \
                     apt-get install -y postgresql to run it"
                );
                None
            }
        }
    }

    fn command(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        let mut c = match self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        };
        // The cluster's user may not be able to read the caller's directory.
        c.current_dir(&self.dir);
        c
    }

    fn start(bin: PathBuf) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "surface-store-pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cluster directory");
        let run_as = is_root().then_some(PG_USER);
        if let Some(user) = run_as {
            let known = Command::new("id").arg("-u").arg(user).output();
            if !known.map(|o| o.status.success()).unwrap_or(false) {
                run(
                    "useradd",
                    Command::new("useradd").args([
                        "--system",
                        "--no-create-home",
                        "--shell",
                        "/usr/sbin/nologin",
                        user,
                    ]),
                );
            }
            run("chown", Command::new("chown").arg(user).arg(&dir));
        }
        let cluster = Self {
            port: free_port(),
            dir,
            bin,
            run_as,
            databases: AtomicUsize::new(0),
        };
        let data = cluster.dir.join("data");
        run(
            "initdb",
            cluster.command("initdb").arg("-D").arg(&data).args([
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ]),
        );
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            cluster.port,
            cluster.dir.display()
        );
        run(
            "pg_ctl start",
            cluster
                .command("pg_ctl")
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(cluster.dir.join("log"))
                .args(["-w", "-t", "60", "-o", &options, "start"]),
        );
        cluster
    }

    /// A fresh, empty database; returns its URL.
    pub fn database(&self, prefix: &str) -> String {
        let name = format!("{prefix}_{}", self.databases.fetch_add(1, Ordering::SeqCst));
        run(
            "createdb",
            self.command("createdb")
                .args([
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    "postgres",
                ])
                .arg(&name),
        );
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// The cluster directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "-t", "30", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
