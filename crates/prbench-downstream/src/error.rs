//! The downstream crate's error type.

use std::net::SocketAddr;

/// Errors from starting or running the reward server and its load test. Request-level faults
/// (bad JSON, a full queue, a model failure) are not errors here: they are HTTP answers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A setting is out of range.
    #[error("invalid server setting: {0}")]
    Options(String),
    /// The listening socket could not be opened.
    #[error("cannot listen on `{addr}` (is another server using the port? pass another --port, or --port 0 for any free one)")]
    Bind {
        /// Address asked for.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The tokio runtime or a server thread could not start, or the server loop failed.
    #[error("reward server: starting its runtime or serving failed")]
    Io(#[from] std::io::Error),
    /// The load test's HTTP client could not be built.
    #[error("load test client: {0}")]
    Client(String),
}
