//! `bon sample`: N answers per question from a policy that sees the user's top-k posts.

use std::path::Path;

use prbench_data::load::load;
use prbench_data::{Dataset, Example};
use prbench_engines::generators::{load_generator, SpecEngines};
use prbench_eval::cache::CacheCounters;
use prbench_eval::condition::ConditionInputs;
use prbench_eval::evaluation::rank_profiles;
use prbench_eval::planner::CachedGenerator;
use prbench_models::Generator;

use super::{cache_note, default_gguf, engine, io, now, BonReporter};
use crate::bon::error::BonError;
use crate::bon::files::{write_json, write_jsonl};
use crate::bon::folder::{BonFolder, SamplesManifest};
use crate::bon::options::SampleOptions;
use crate::bon::prompts::policy_hash;
use crate::bon::sample::{sample_all, select, BonSample, SampleSettings};

/// A `bon sample` run whose settings, folder and examples are checked ([`Sampling::plan`]).
pub struct Sampling {
    opts: SampleOptions,
    code_version: String,
    settings: SampleSettings,
    folder: BonFolder,
    data: Dataset,
    examples: Vec<Example>,
}

impl Sampling {
    /// Checks the sampling settings and the `out` folder, loads the dataset (its warnings are
    /// notes) and selects the examples. Loads no model and writes nothing. The policy samples
    /// with `--temperature` (default 1.0) and `--top-p` (default 0.9), the defaults of
    /// PROTOCOL.md §6 rather than the remote flags' own (which are for judges).
    ///
    /// # Errors
    /// [`BonError::Refused`]: a temperature that is not finite and above 0, a top-p outside
    /// (0, 1], an `out` that is or lies under a file or already holds samples, no example
    /// selected; [`BonError::Dataset`]: the dataset does not load.
    pub fn plan(
        opts: SampleOptions,
        code_version: &str,
        reporter: &dyn BonReporter,
    ) -> Result<Self, BonError> {
        let temperature = opts.stage.remote.temperature.unwrap_or(1.0);
        let top_p = opts.stage.remote.top_p.unwrap_or(0.9);
        if !(temperature > 0.0 && temperature.is_finite()) {
            return Err(BonError::Refused(format!("--temperature must be a finite number above 0 for sampling (got {temperature}); Best-of-N needs N different answers")));
        }
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(BonError::Refused(format!("--top-p must be in (0, 1] (got {top_p})")));
        }
        check_out_folder(&opts.out)?;
        let folder = BonFolder::new(&opts.out);
        if folder.samples().exists() {
            return Err(BonError::Refused(format!("`{}` already holds samples; choose a new --out folder (judge and score it with `prbench bon judge/score --samples {}`)", folder.samples().display(), opts.out.display())));
        }
        let data =
            load(&opts.data.data, &opts.data.subset).map_err(|source| BonError::Dataset {
                context: format!("loading dataset `{}`", opts.data.data),
                source: Box::new(source),
            })?;
        for w in prbench_data::dataset_warnings(&data) {
            reporter.note(&w);
        }
        let examples: Vec<Example> = select(&data.examples, opts.limit, opts.distinct_questions)
            .into_iter()
            .cloned()
            .collect();
        if examples.is_empty() {
            return Err(BonError::Refused(format!("no examples selected from `{}`", data.source)));
        }
        let settings = SampleSettings {
            n: opts.n,
            k_posts: opts.k_posts,
            temperature,
            top_p,
            max_new_tokens: opts.max_new_tokens,
            seed: opts.seed,
        };
        Ok(Self { opts, code_version: code_version.into(), settings, folder, data, examples })
    }

    /// The selected examples, in order.
    pub fn examples(&self) -> &[Example] {
        &self.examples
    }

    /// Opens the cache, ranks the profiles, loads the policy, writes the manifest, samples every
    /// example N times and writes `samples.jsonl`; notes the cache use and the failed, cut and
    /// post-dropping samples. Returns the samples.
    ///
    /// # Errors
    /// The cache, the retriever or the policy failing to open or load; the folder or its files
    /// not writable; a prompt that cannot be rendered.
    pub fn run(&self, reporter: &dyn BonReporter) -> Result<Vec<BonSample>, BonError> {
        let (opts, folder, examples) = (&self.opts, &self.folder, &self.examples);
        let spec = opts.policy.clone().unwrap_or_else(default_gguf);
        let cache = opts.stage.cache.open(&opts.out)?;
        let (ranked, retriever) = rank_profiles(
            opts.retriever.as_deref(),
            &self.data,
            examples,
            cache.as_ref(),
            &SpecEngines { remote: &opts.stage.remote, gen: opts.stage.gen },
            reporter,
        )?;
        let inputs = ConditionInputs {
            ranked,
            retriever: Some(retriever.clone()),
            ..ConditionInputs::default()
        };
        reporter.note(&format!(
            "{} examples × {} samples from `{}`; loading policy `{spec}`",
            examples.len(),
            opts.n,
            self.data.source
        ));
        let policy =
            load_generator(&spec, &opts.stage.remote, opts.stage.gen, "policy", "--policy")
                .map_err(engine)?;
        let manifest = SamplesManifest {
            code_version: self.code_version.clone(),
            created: now(),
            // Paths absolute, so later stages find the data from any working folder.
            dataset: prbench_data::spec::absolute(&opts.data.data),
            subsets: opts.data.subset.clone(),
            dataset_kind: self.data.kind.clone(),
            dataset_hash: self.data.hash.clone(),
            policy: policy.identity(),
            template_hash: policy_hash(),
            retriever,
            settings: self.settings.clone(),
            per_subset: opts.limit,
            distinct_questions: opts.distinct_questions,
            example_ids: examples.iter().map(|e| e.id.clone()).collect(),
        };
        std::fs::create_dir_all(&opts.out)
            .map_err(io(format!("creating `{}`", opts.out.display())))?;
        write_json(&folder.manifest(), &manifest)?;
        let counters = CacheCounters::default();
        let cached;
        let generator: &dyn Generator = match &cache {
            Some(c) => {
                cached = CachedGenerator::new(policy.as_ref(), c, &counters);
                &cached
            }
            None => policy.as_ref(),
        };
        let refs: Vec<&Example> = examples.iter().collect();
        reporter.start("bon sample", (refs.len() * opts.n) as u64);
        let samples =
            sample_all(&refs, &inputs, &self.settings, generator, opts.batch_size, &|done| {
                reporter.set_done(done as u64)
            })?;
        reporter.finish();
        write_jsonl(&folder.samples(), &samples)?;
        let failed = samples.iter().filter(|s| s.error.is_some()).count();
        let cut = samples.iter().filter(|s| s.hit_max_new_tokens).count();
        let dropped = samples.iter().filter(|s| s.sample_index == 0 && s.posts_dropped > 0).count();
        cache_note(cache.as_ref(), &counters, reporter);
        reporter.note(&format!(
            "{} samples in {}; {failed} failed, {cut} used all {} new tokens, {dropped} examples lost posts to fit the policy's context",
            samples.len(),
            folder.samples().display(),
            opts.max_new_tokens
        ));
        if failed > 0 {
            reporter.note("warning: examples with a failed sample are left out of best-of-k tables (rerun the same command into a new folder: finished samples come from the cache)");
        }
        Ok(samples)
    }
}

/// Refuses an `out` that is, or lies under, a file: a BoN folder must be a folder.
fn check_out_folder(out: &Path) -> Result<(), BonError> {
    if let Some(file) = out
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| a.exists())
        .filter(|a| !a.is_dir())
    {
        let what = if file == out {
            "is a file".to_string()
        } else {
            format!("lies under `{}`, which is a file", file.display())
        };
        return Err(BonError::Refused(format!("--out `{}` {what}; `bon sample` writes a folder of files (manifest.json, samples.jsonl, …): pass a new folder path", out.display())));
    }
    Ok(())
}
