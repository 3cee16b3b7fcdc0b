//! `prbench eval`: load and validate the data, load the model, run each condition, print the
//! summary and where the run files are.

use anyhow::{bail, Context, Result};
use prbench_data::{load::load, Dataset, Example};
use prbench_eval::condition::Condition;
use prbench_eval::run::{run as run_eval, RunConfig};
use prbench_eval::runner::{Backend, ContextSource, EvalOptions};
use prbench_models::baselines::{Baseline, SlotA};
use prbench_models::gguf::{default_model_path, GgufEngine, GgufOptions};
use prbench_models::judge::{GenerateJudge, LogprobJudge};
use prbench_models::spec::ModelSpec;
use prbench_models::{Judge, RewardModel};
use prbench_stats::bootstrap::BootstrapConfig;

use crate::cli::{EvalArgs, VerdictMode};
use crate::progress::Bar;

/// The model under test, owned.
enum Loaded {
    Judge(Box<dyn Judge>),
    RewardModel(Box<dyn RewardModel>),
}

impl Loaded {
    fn backend(&self) -> Backend<'_> {
        match self {
            Loaded::Judge(j) => Backend::Judge(j.as_ref()),
            Loaded::RewardModel(r) => Backend::RewardModel(r.as_ref()),
        }
    }
}

fn load_model(spec: &str, args: &EvalArgs) -> Result<Loaded> {
    match ModelSpec::parse(spec)? {
        ModelSpec::Gguf(path) => {
            if !path.is_file() {
                bail!(
                    "model file `{}` not found; run `scripts/fetch-models.sh` to fetch the default model, or pass --model gguf:PATH",
                    path.display()
                );
            }
            let engine = GgufEngine::load(&path, GgufOptions::default())
                .with_context(|| format!("loading `{}`", path.display()))?;
            Ok(Loaded::Judge(match args.verdict {
                VerdictMode::Logprob => Box::new(LogprobJudge::new(engine)),
                VerdictMode::Generate => Box::new(GenerateJudge::new(engine, args.max_new_tokens)),
            }))
        }
        ModelSpec::Baseline(name) if name == "slot-a" => Ok(Loaded::Judge(Box::new(SlotA))),
        ModelSpec::Baseline(name) => Ok(Loaded::RewardModel(Box::new(Baseline::from_name(&name, args.seed)?))),
    }
}

/// Keeps the first `limit` examples of each subset, in order.
fn limit_per_subset(data: &mut Dataset, limit: usize) {
    let mut counts: std::collections::HashMap<String, usize> = Default::default();
    data.examples.retain(|ex: &Example| {
        let c = counts.entry(ex.subset.clone()).or_default();
        *c += 1;
        *c <= limit
    });
}

fn slug(s: &str) -> String {
    let tail = s.rsplit(['/', ':']).next().unwrap_or(s);
    let tail = tail.strip_suffix(".gguf").unwrap_or(tail);
    tail.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

/// Runs `prbench eval`.
pub fn run(args: EvalArgs) -> Result<()> {
    let conditions: Vec<Condition> = args.condition.iter().map(|c| Condition::parse(c)).collect::<Result<_, _>>()?;
    if conditions.is_empty() {
        bail!("--condition needs at least one of `none`, `oracle`");
    }
    let mut data = load(&args.data.data, &args.data.subset).with_context(|| format!("loading dataset `{}`", args.data.data))?;
    if let Some(limit) = args.limit {
        limit_per_subset(&mut data, limit);
        data.source = format!("{} (first {limit} per subset)", data.source);
    }
    let spec = args.model.clone().unwrap_or_else(|| format!("gguf:{}", default_model_path().display()));
    eprintln!("prbench: {} examples from `{}`; loading model `{spec}`", data.examples.len(), data.source);
    let model = load_model(&spec, &args)?;
    let reporter = Bar::new(args.quiet);
    let stamp = chrono_stamp();
    for condition in conditions {
        let run_id = match &args.run_id {
            Some(id) if args.condition.len() == 1 => id.clone(),
            Some(id) => format!("{id}-{condition}"),
            None => format!("{stamp}-{}-{condition}", slug(&spec)),
        };
        let cfg = RunConfig {
            run_id,
            out_dir: args.out.clone(),
            options: EvalOptions {
                condition,
                seed: args.seed,
                both_orders: args.both_orders,
                batch_size: args.batch_size,
                context: ContextSource::Condition,
            },
            bootstrap: BootstrapConfig { resamples: args.bootstrap, seed: args.seed, ..BootstrapConfig::default() },
            code_version: crate::code_version().to_string(),
        };
        let result = run_eval(&data, model.backend(), &cfg, &reporter)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&result.summary)?);
        } else {
            println!("{}", prbench_report::markdown::render(&result.summary));
        }
        eprintln!("prbench: run files in {}/ (summary.md, summary.json, outcomes.jsonl, manifest.json)", result.dir.display());
    }
    Ok(())
}

fn chrono_stamp() -> String {
    chrono::Utc::now().format("%Y%m%d-%H%M%S").to_string()
}
