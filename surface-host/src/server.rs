//! Serving a host's routes with the connection limits `axum::serve` does
//! not set (docs/limits.md, "Host HTTP server"): a peer that opens a
//! connection and never finishes its request headers is disconnected
//! after [`ServeOptions::header_read_timeout`], a request body not
//! received within [`ServeOptions::body_read_timeout`] ends in an error
//! ([`RequestBody`]), request headers are bounded by
//! [`ServeOptions::max_header_bytes`], and at most
//! [`ServeOptions::max_connections`] connections are open at once (the
//! next waits in the listener's backlog). HTTP/1.1, with upgrades
//! (WebSockets).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;

/// Default [`ServeOptions::header_read_timeout`]: 10 seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`ServeOptions::max_header_bytes`]: 64 KiB.
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1024;
/// Default [`ServeOptions::body_read_timeout`]: 30 seconds.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default [`ServeOptions::max_connections`]: 1,024.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1_024;

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
    /// How long a request's body may take to arrive, from the end of its
    /// headers (default [`DEFAULT_BODY_READ_TIMEOUT`]): past it the body
    /// ends in [`BodyError::TimedOut`] (the route answers 400) and the
    /// connection closes.
    pub body_read_timeout: Duration,
    /// Connections open at once (default [`DEFAULT_MAX_CONNECTIONS`]; at
    /// least 1). At the bound no connection is accepted until one ends:
    /// peers wait in the listener's backlog, the process keeps its file
    /// descriptors.
    pub max_connections: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Why a request body ended early.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The connection failed while the body was read.
    #[error("the request body could not be read: {0}")]
    Read(#[from] hyper::Error),
    /// The body did not arrive within [`ServeOptions::body_read_timeout`].
    #[error("the request body did not arrive in time")]
    TimedOut,
}

/// A request body under [`ServeOptions::body_read_timeout`]: the body
/// [`serve`] hands to the service.
pub struct RequestBody {
    inner: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl RequestBody {
    fn new(inner: Incoming, timeout: Duration) -> Self {
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep(timeout)),
        }
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(BodyError::Read))),
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(BodyError::TimedOut))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// `service` with each request's body under the body deadline.
#[derive(Clone)]
struct Deadlined<S> {
    service: S,
    timeout: Duration,
}

impl<S> tower_service::Service<Request<Incoming>> for Deadlined<S>
where
    S: tower_service::Service<Request<RequestBody>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.service.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Incoming>) -> S::Future {
        let timeout = self.timeout;
        self.service
            .call(request.map(|body| RequestBody::new(body, timeout)))
    }
}

/// Accepts connections on `listener` until the task is dropped, serving
/// each with a clone of `service` (an `axum::Router`, an
/// [`McpHttpService`](crate::mcp::McpHttpService), any tower service of
/// `Request<RequestBody>`) under `options`. Used as
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
    S: tower_service::Service<Request<RequestBody>, Response = Response<B>, Error = Infallible>
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
    S: tower_service::Service<Request<RequestBody>, Response = Response<B>, Error = Infallible>
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
    let open = Arc::new(tokio::sync::Semaphore::new(options.max_connections.max(1)));
    loop {
        let permit = tokio::select! {
            permit = open.clone().acquire_owned() => permit,
            () = &mut shutdown => return Ok(()),
        };
        let Ok(permit) = permit else {
            return Ok(());
        };
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
        let service = TowerToHyperService::new(Deadlined {
            service: service.clone(),
            timeout: options.body_read_timeout,
        });
        let options = options.clone();
        tokio::spawn(async move {
            let _permit = permit;
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
