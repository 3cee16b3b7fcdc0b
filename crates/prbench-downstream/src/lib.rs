//! Downstream validation for prbench (Best-of-N, reward serving for PPO, the rubric judge):
//! uses of a reward model beyond the benchmark, whose results the benchmark's accuracy
//! should predict (PROTOCOL.md §6–8).
//!
//! - [`bon`]: Best-of-N (PROTOCOL.md §6): policy sampling, the rubric judge, scoring samples
//!   with the reward models under test, and the exact expected best-of-k tables.
//! - [`serve`]: the HTTP reward server a PPO trainer (verl) calls for rewards (PROTOCOL.md §7),
//!   with internal batching, a bounded queue, JSON errors instead of default rewards, request
//!   logs without payloads, graceful shutdown, and a loopback load test.
//!
//! ```no_run
//! use std::sync::Arc;
//! use prbench_downstream::serve::{ServerHandle, ServeOptions};
//! use prbench_models::baselines::Baseline;
//!
//! let opts = ServeOptions { addr: "127.0.0.1:0".parse().unwrap(), log: None, ..ServeOptions::default() };
//! let server = ServerHandle::start(Arc::new(Baseline::Longer), opts)?;
//! println!("POST {}/score", server.base_url());
//! server.shutdown()?;
//! # Ok::<(), prbench_downstream::ServeError>(())
//! ```
#![deny(missing_docs)]

pub mod bon;
pub mod error;
pub mod serve;

pub use error::ServeError;
