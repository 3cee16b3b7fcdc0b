//! `prbench serve-reward`: a pointwise reward model behind the HTTP reward protocol for PPO
//! (PROTOCOL.md §7), until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;
use prbench_downstream::serve::run_until_signal;

use crate::cli::ServeRewardArgs;

/// Runs `prbench serve-reward`.
pub fn run(args: ServeRewardArgs) -> Result<()> {
    let model = args.model.load(&args.remote)?;
    let opts = args.serve.options(SocketAddr::new(args.host, args.port), !args.quiet);
    if !args.host.is_loopback() {
        eprintln!(
            "prbench: warning: listening on {}: the reward server has no authentication, so anyone who can reach this port can use it; keep it behind a firewall or on 127.0.0.1",
            args.host
        );
    }
    let id = model.identity();
    let file_hash = if id.file_hash.is_empty() { "none".to_string() } else { id.file_hash.clone() };
    let (normalize, batch, wait, queue) =
        (opts.normalize, opts.max_batch, args.serve.batch_wait_ms, opts.queue_capacity);
    run_until_signal(Arc::from(model), opts, |addr| {
        eprintln!(
            "prbench: serving `{}` (engine {}, file hash or revision {file_hash}) on http://{addr}; reward: {} (--normalize {normalize}); max batch {batch}, batch wait {wait} ms, queue {queue} items; Ctrl-C or SIGTERM stops after answering the requests in flight",
            id.spec,
            id.engine,
            if normalize == prbench_downstream::serve::Normalize::None { "the raw score" } else { "normalized" },
        );
    })?;
    eprintln!("prbench: reward server stopped");
    Ok(())
}
