//! A loopback port where nothing listens, held so nothing else can take
//! it: a TCP socket bound to an ephemeral port that never calls `listen`.
//! A connection to it is refused at once (the kernel answers RST), unlike
//! a port freed by dropping a listener, which another process may reuse
//! before the test connects, or port 9, which a machine may serve.
#![allow(dead_code)]

use std::net::SocketAddr;

/// The bound, non-listening socket; the port stays reserved while it lives.
pub struct RefusingPort {
    _socket: tokio::net::TcpSocket,
    /// `127.0.0.1:<port>`.
    pub addr: SocketAddr,
}

impl RefusingPort {
    /// Binds a fresh loopback port without listening on it.
    pub fn new() -> Self {
        let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
        socket
            .bind("127.0.0.1:0".parse().unwrap())
            .expect("bind an ephemeral loopback port");
        let addr = socket.local_addr().expect("the bound address");
        RefusingPort {
            _socket: socket,
            addr,
        }
    }
}
