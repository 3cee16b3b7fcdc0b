//! The engines the libraries load on demand, built from the command line: the planner's (or
//! BoN's) generator, retrievers, and the embedder that measures the planner
//! ([`prbench_eval::evaluation::Engines`]).

use std::sync::Arc;

use anyhow::{bail, Context, Result};

use prbench_data::hub::HubOptions;
use prbench_eval::cache::Cache;
use prbench_eval::evaluation::{EngineError, Engines};
use prbench_eval::retrieve::Retriever;
use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::spec::ModelSpec;
use prbench_models::{Embedder, Generator};
use prbench_remote::OpenAiChat;
use prbench_rm::embed::{default_embedder_dir, EmbedderOptions};
use prbench_rm::embedder::load_embedder;

use crate::flags::{GenBatchArgs, RemoteArgs};
use crate::retrieve::retriever_from_spec;

/// Checks a generator spec without loading anything: it parses, names a generator
/// (`gguf:PATH` or `openai:MODEL[@URL…]`), and a GGUF file is there. For commands that take
/// several models and must refuse a bad one before any of them loads; [`load_generator`] runs
/// the same checks.
pub fn check_generator_spec(spec: &str, role: &str, flag: &str) -> Result<ModelSpec> {
    let parsed = ModelSpec::parse(spec).with_context(|| {
        format!("{flag} `{spec}` names no generator; use gguf:PATH or openai:MODEL[@BASE_URL]")
    })?;
    match &parsed {
        ModelSpec::Gguf(path) if !path.is_file() => {
            bail!("{role} model file `{}` not found; run scripts/setup.sh, or pass {flag} gguf:PATH or {flag} openai:MODEL@URL", path.display())
        }
        ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. } => Ok(parsed),
        _ => bail!("{flag} `{spec}` is not a generator; use gguf:PATH or openai:MODEL[@BASE_URL]"),
    }
}

/// Loads a generator (the planner, the BoN policy, a rubric judge): `gguf:PATH`, decoding up
/// to `gen.gen_batch()` sequences together, or `openai:MODEL[@URL…]` with the given remote
/// settings; `role` names it in messages (e.g. `planner`, `--planner`).
///
/// # Errors
/// A spec that is not a generator or whose file is missing; `--gen-batch` given for an
/// `openai:` generator (a server batches on its own; `--concurrency` sets the requests in
/// flight); a load or connection failure.
pub fn load_generator(
    spec: &str,
    remote: &RemoteArgs,
    gen: GenBatchArgs,
    role: &str,
    flag: &str,
) -> Result<Box<dyn Generator>> {
    match check_generator_spec(spec, role, flag)? {
        ModelSpec::Gguf(path) => Ok(Box::new(
            GgufEngine::load(&path, GgufOptions { gen_batch: gen.gen_batch(), ..Default::default() })
                .with_context(|| format!("loading {role} `{spec}`"))?,
        )),
        ModelSpec::OpenAi { .. } if gen.gen_batch.is_some() => bail!(
            "--gen-batch applies to `gguf:` generators; the {role} `{spec}` is a server, which batches the requests it gets on its own (--concurrency sets how many are in flight)"
        ),
        ModelSpec::OpenAi { model, base_urls } => {
            let opts = crate::load::remote_options(remote)?;
            let chat = OpenAiChat::new(&model, base_urls, opts)?.with_spec(spec);
            // One test request checks URL, model and key before any generation (as for judges).
            chat.probe_logprobs().with_context(|| format!("connecting to {role} `{spec}`"))?;
            Ok(Box::new(chat))
        }
        _ => unreachable!("check_generator_spec lets only generators through"),
    }
}

/// The engines [`prbench_eval::evaluation`] loads on demand, built from specs: generators as
/// `--planner` names them (with the remote flags), retrievers as `--retriever` names them, and
/// the default MiniLM embedder.
pub struct SpecEngines<'a> {
    /// Remote engine flags, for an `openai:` planner.
    pub remote: &'a RemoteArgs,
    /// Sequences a `gguf:` planner decodes together.
    pub gen: GenBatchArgs,
}

impl Engines for SpecEngines<'_> {
    fn retriever<'c>(
        &self,
        spec: &str,
        cache: Option<&'c Cache>,
    ) -> Result<Box<dyn Retriever + 'c>, EngineError> {
        Ok(retriever_from_spec(spec, cache)?)
    }

    fn generator(&self, spec: &str) -> Result<Box<dyn Generator>, EngineError> {
        Ok(load_generator(spec, self.remote, self.gen, "planner", "--planner")?)
    }

    fn quality_embedder(&self) -> Result<Arc<dyn Embedder>, EngineError> {
        let dir = default_embedder_dir();
        if !dir.join("model.safetensors").is_file() {
            return Err(format!(
                "the MiniLM embedder is not at `{}` (run scripts/setup.sh)",
                dir.display()
            )
            .into());
        }
        Ok(Arc::new(load_embedder(
            &dir.display().to_string(),
            &EmbedderOptions::default(),
            &HubOptions::from_env(),
        )?))
    }
}
