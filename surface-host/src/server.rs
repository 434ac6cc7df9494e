//! Serving a host's routes with the connection limits `axum::serve` does
//! not set (docs/limits.md, "Host HTTP server"): a peer that opens a
//! connection and never finishes its request headers is disconnected
//! after [`ServeOptions::header_read_timeout`], and request headers are
//! bounded by [`ServeOptions::max_header_bytes`]. HTTP/1.1, with
//! upgrades (WebSockets).

use std::convert::Infallible;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;

/// Default [`ServeOptions::header_read_timeout`]: 10 seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`ServeOptions::max_header_bytes`]: 64 KiB.
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1024;

/// Connection limits of [`serve`].
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// How long a connection may take to send a request's headers, from
    /// its first byte (or the end of the previous request) to the blank
    /// line (default [`DEFAULT_HEADER_READ_TIMEOUT`]). At the bound the
    /// connection is closed (hyper answers `408` when it can).
    pub header_read_timeout: Duration,
    /// The read buffer, which bounds the request line and headers (default
    /// [`DEFAULT_MAX_HEADER_BYTES`]; hyper's minimum is 8,192). Longer
    /// headers get `431`.
    pub max_header_bytes: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
        }
    }
}

/// Accepts connections on `listener` until the task is dropped, serving
/// each with a clone of `service` (an `axum::Router`, an
/// [`McpHttpService`](crate::mcp::McpHttpService), any tower service of
/// `Request<hyper::body::Incoming>`) under `options`. Used as
/// `axum::serve` is: `serve(listener, app, ServeOptions::default()).await?`.
///
/// # Errors
/// An [`std::io::Error`] when the listener is not usable (it has no local
/// address). An accept error of one connection (e.g. too many open files)
/// is logged and retried after 100 ms: it never ends the server.
pub async fn serve<S, B>(
    listener: tokio::net::TcpListener,
    service: S,
    options: ServeOptions,
) -> std::io::Result<()>
where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    serve_with_shutdown(listener, service, options, std::future::pending()).await
}

/// [`serve`] until `shutdown` completes: then no new connection is
/// accepted, and the connections open go on until they end (their
/// requests are answered).
///
/// # Errors
/// As [`serve`].
pub async fn serve_with_shutdown<S, B, F>(
    listener: tokio::net::TcpListener,
    service: S,
    options: ServeOptions,
    shutdown: F,
) -> std::io::Result<()>
where
    S: tower_service::Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    F: std::future::Future<Output = ()> + Send,
{
    listener.local_addr()?;
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => return Ok(()),
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(?error, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(service.clone());
        let options = options.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(options.header_read_timeout)
                .max_buf_size(options.max_header_bytes.max(8192));
            let connection = builder
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            if let Err(error) = connection.await {
                tracing::debug!(?error, "connection ended with an error");
            }
        });
    }
}
