//! A TCP listener whose connections a request handler can cut.
//!
//! [`Fault::DropConnection`](crate::Fault::DropConnection) must close the socket without sending
//! any HTTP response. axum/hyper own the connection's stream, so each accepted stream is paired
//! with a duplicate of its file descriptor ([`std::net::TcpStream::try_clone`]); the duplicate is
//! handed to the handler as [`ConnectInfo`](axum::extract::ConnectInfo). `shutdown(Both)` on it
//! sends FIN to the client at once and makes every later read/write of hyper's own handle fail,
//! so hyper drops the connection without writing the response it is handed afterwards.

use std::io;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Listener that wraps each accepted stream in a [`KillableStream`].
pub(crate) struct KillableListener {
    pub(crate) inner: TcpListener,
}

/// A handle on one accepted connection, available to handlers.
#[derive(Clone, Debug)]
pub(crate) struct ConnHandle {
    dup: Arc<std::net::TcpStream>,
}

impl ConnHandle {
    /// Shuts the socket down in both directions: the client sees the connection closed.
    pub(crate) fn kill(&self) {
        let _ = self.dup.shutdown(Shutdown::Both);
    }
}

/// The stream hyper serves, plus the handle given to handlers.
pub(crate) struct KillableStream {
    stream: TcpStream,
    handle: ConnHandle,
}

fn wrap(stream: TcpStream) -> io::Result<KillableStream> {
    stream.set_nodelay(true)?;
    let std_stream = stream.into_std()?;
    let dup = std_stream.try_clone()?;
    let stream = TcpStream::from_std(std_stream)?;
    Ok(KillableStream { stream, handle: ConnHandle { dup: Arc::new(dup) } })
}

impl Listener for KillableListener {
    type Io = KillableStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((stream, peer)) => match wrap(stream) {
                    Ok(io) => return (io, peer),
                    // The connection died between accept and wrap: nothing to serve.
                    Err(_) => continue,
                },
                // Accept errors are per-connection (ECONNABORTED) or resource limits (EMFILE):
                // back off briefly like axum's own listener does, never log on the hot path.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

impl Connected<IncomingStream<'_, KillableListener>> for ConnHandle {
    fn connect_info(stream: IncomingStream<'_, KillableListener>) -> Self {
        stream.io().handle.clone()
    }
}

impl AsyncRead for KillableStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
