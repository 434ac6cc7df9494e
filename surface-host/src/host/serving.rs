//! A [`Host`]'s routes served (feature `axum`): [`Host::serve`] binds,
//! mounts the MCP endpoint next to the application's routes and serves
//! them under [`server::serve`](crate::server::serve)'s connection limits;
//! the [`Served`] handle stops the server when dropped.

use std::io;
use std::net::SocketAddr;

use axum::Router;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::task::JoinHandle;

use super::Host;
use crate::server::{serve, ServeOptions};

/// A host's routes being served ([`Host::serve`]). Dropping it stops the
/// server: the listener closes, connections in progress end.
#[derive(Debug)]
pub struct Served {
    addr: SocketAddr,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl Served {
    /// The address it listens on (the port chosen for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until the server stops.
    ///
    /// # Errors
    /// The listener's error, or the server task's panic (as
    /// [`io::Error::other`]).
    pub async fn wait(mut self) -> io::Result<()> {
        match self.task.take() {
            Some(task) => task.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl Host {
    /// Binds `addr` and serves [`serve_on`](Self::serve_on) there.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn serve(&self, addr: impl ToSocketAddrs, routes: Router) -> io::Result<Served> {
        self.serve_on(TcpListener::bind(addr).await?, routes)
    }

    /// Serves `routes` and the MCP endpoint at `/mcp` ([`Self::mcp_service`];
    /// outside the application's page guard: it checks its own
    /// `Host`/`Origin` rules and bearer tokens) on `listener`, on a task of
    /// the current tokio runtime, under [`ServeOptions::default`] (a
    /// connection whose request headers take more than 10 s is closed,
    /// headers are bounded by 64 KiB).
    ///
    /// # Errors
    /// The listener has no local address.
    pub fn serve_on(&self, listener: TcpListener, routes: Router) -> io::Result<Served> {
        let addr = listener.local_addr()?;
        let app = routes.route_service("/mcp", self.mcp_service());
        let task = tokio::spawn(serve(listener, app, ServeOptions::default()));
        Ok(Served {
            addr,
            task: Some(task),
        })
    }
}
