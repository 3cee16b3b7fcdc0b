//! The reward server's flags as clap groups ([`ServeRewardArgs`], [`ServeTuningArgs`]), for
//! `prbench serve-reward` and the load test of `prbench bench serve`; the model flags are
//! [`prbench_engines::flags::RmModelArgs`].

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;
use prbench_engines::flags::{RemoteArgs, RmModelArgs};

use super::{stderr_writer, ServeOptions};

/// How the reward server batches, queues and turns scores into rewards.
#[derive(Args, Debug, Clone)]
pub struct ServeTuningArgs {
    /// Most items per model call.
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 65_536))]
    pub max_batch: usize,
    /// Milliseconds the server waits for a batch to fill once an item has arrived (0 = never
    /// wait); a lone request waits at most this long.
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<u64>(0, 60_000))]
    pub batch_wait_ms: u64,
    /// Items that may wait in the queue. A request that does not fit is answered 503 with
    /// `Retry-After: 1`; a batch request with more items than this, 413.
    #[arg(long, default_value_t = 1024, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 1_000_000))]
    pub queue: usize,
    /// Largest request body in bytes (default 1 MiB); larger bodies are answered 413.
    #[arg(long, default_value_t = 1_048_576, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<usize>(1, 1 << 30))]
    pub max_body_bytes: usize,
    /// How the raw score becomes the reward: `none` (the reward model's raw score), `sigmoid`
    /// (1 / (1 + e^-score)) or `affine:SCALE,SHIFT` (score × SCALE + SHIFT). Shown by /health.
    #[arg(long, default_value = "none", value_parser = |s: &str| s.parse::<super::Normalize>())]
    pub normalize: super::Normalize,
}

/// `serve-reward` arguments.
#[derive(Args, Debug)]
pub struct ServeRewardArgs {
    /// The model.
    #[command(flatten)]
    pub model: RmModelArgs,
    /// Address to listen on. The server has no authentication: anything but a loopback
    /// address (e.g. `0.0.0.0`) prints a warning.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// TCP port; 0 = any free port (the address is printed on stderr either way).
    #[arg(long, default_value_t = 8000, allow_negative_numbers = true, value_parser = prbench_flags::bounds::whole::<u16>(0, 65_535))]
    pub port: u16,
    /// Batching, queue, body limit, normalization.
    #[command(flatten)]
    pub serve: ServeTuningArgs,
    /// No request log (one JSON line per request on stderr, without request text); the start
    /// line and errors still print.
    #[arg(long)]
    pub quiet: bool,
    /// Remote engines (`vllm-classify:`, `sglang-classify:`, `tei:`, `openrlhf:`, `reward-server:`).
    #[command(flatten)]
    pub remote: RemoteArgs,
}

impl ServeTuningArgs {
    /// The server settings from the flags: `addr` to listen on, `log` one JSON line per request
    /// on stderr.
    pub fn options(&self, addr: SocketAddr, log: bool) -> ServeOptions {
        let t = self;
        ServeOptions {
            addr,
            max_batch: t.max_batch,
            batch_wait: Duration::from_millis(t.batch_wait_ms),
            queue_capacity: t.queue,
            max_body_bytes: t.max_body_bytes,
            normalize: t.normalize,
            log: log.then(stderr_writer),
        }
    }
}
