//! `prbench serve-reward`: a pointwise reward model behind the HTTP reward protocol for PPO
//! (PROTOCOL.md §7), until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use prbench_downstream::serve::{run_until_signal, stderr_writer, ServeOptions};
use prbench_models::spec::ModelSpec;
use prbench_models::RewardModel;

use crate::cli::{RemoteArgs, RmModelArgs, ServeRewardArgs, ServeTuningArgs};
use prbench_engines::load::{load_model, not_pointwise, LoadSettings};

/// Loads `--model` as a pointwise reward model (judges are refused before anything loads).
pub(crate) fn load_reward_model(
    m: &RmModelArgs,
    remote: &RemoteArgs,
) -> Result<Box<dyn RewardModel>> {
    let spec = ModelSpec::parse(&m.model)?;
    if spec.is_judge() {
        return Err(not_pointwise(&m.model));
    }
    if !spec.is_remote() {
        if let Some(flag) = remote.given().first() {
            bail!(
                "{flag} applies to remote engines (`vllm-classify:`, `reward-server:`), not `{}`",
                m.model
            );
        }
    }
    for (flag, given) in [
        ("--temperature", remote.temperature.is_some()),
        ("--top-p", remote.top_p.is_some()),
        ("--request-extra", remote.request_extra.is_some()),
    ] {
        if given {
            bail!(
                "{flag} applies to `openai:` judges only, which cannot be served as reward models"
            );
        }
    }
    load_model(
        &spec,
        &m.model,
        &LoadSettings::for_reward_model(m.seed, Vec::new(), remote, &m.scalar),
    )?
    .into_reward_model()
}

/// The library's server settings from the flags.
pub(crate) fn serve_options(t: &ServeTuningArgs, addr: SocketAddr, log: bool) -> ServeOptions {
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

/// Runs `prbench serve-reward`.
pub fn run(args: ServeRewardArgs) -> Result<()> {
    let model = load_reward_model(&args.model, &args.remote)?;
    let opts = serve_options(&args.serve, SocketAddr::new(args.host, args.port), !args.quiet);
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
