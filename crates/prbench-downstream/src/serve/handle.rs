//! A reward server on its own thread and tokio runtime, for synchronous callers: tests, the
//! load bench, and clients such as `prbench_remote::RewardServer` that must not run inside
//! another runtime.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use prbench_models::RewardModel;
use tokio::sync::oneshot;

use super::{ServeOptions, Server};
use crate::error::ServeError;

/// A running server. [`ServerHandle::shutdown`] (or dropping the handle) stops it gracefully:
/// requests already accepted are answered first.
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), ServeError>>>,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl ServerHandle {
    /// Starts serving `model` with `opts` (port 0 = any free port) on a new thread; returns once
    /// the socket listens.
    ///
    /// # Errors
    /// As [`Server::bind`]; [`ServeError::Io`] if the thread or runtime cannot start.
    pub fn start(
        model: Arc<dyn RewardModel>,
        opts: ServeOptions,
    ) -> Result<ServerHandle, ServeError> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<SocketAddr, ServeError>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4);
        let thread = std::thread::Builder::new().name("reward-server".into()).spawn(move || {
            // Held here so the model is dropped outside the runtime whatever happens (an engine
            // may own a runtime of its own, which cannot be dropped inside another).
            let _keep = Arc::clone(&model);
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_all()
                .build();
            let rt = match rt {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(ServeError::Io(e)));
                    return Ok(());
                }
            };
            rt.block_on(async move {
                let server = match Server::bind(model, opts).await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return Ok(());
                    }
                };
                let _ = ready_tx.send(Ok(server.local_addr()));
                server
                    .run(async move {
                        let _ = stop_rx.await;
                    })
                    .await
            })
        })?;
        match ready_rx.recv() {
            Ok(Ok(addr)) => Ok(ServerHandle { addr, stop: Some(stop_tx), thread: Some(thread) }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(ServeError::Io(std::io::Error::other(
                    "the reward server thread exited during start-up",
                )))
            }
        }
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, the base URL clients append `/score` to.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting connections, answers every accepted request, and waits for the server
    /// thread.
    ///
    /// # Errors
    /// What the server loop returned; [`ServeError::Io`] if its thread panicked.
    pub fn shutdown(mut self) -> Result<(), ServeError> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<(), ServeError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| {
                ServeError::Io(std::io::Error::other("the reward server thread panicked"))
            })?,
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}
