//! Training exports (`prbench export`): the benchmark's own rendered inputs as JSONL for the
//! trainers people already use, so a personalized reward model or planner is trained on exactly
//! what `prbench eval` later shows it.
//!
//! Every row starts with `id`, `user_id` (when the example has one) and `subset`; reward rows
//! add `condition` (the one they were rendered under). Planner rows have no `condition`: their
//! input is the planner's prompt whatever the condition (the manifest's `condition` is null).
//!
//! | format | one row | trainer |
//! |---|---|---|
//! | `trl-reward` | `chosen` and `rejected`, each `[{role: user, content: U}, {role: assistant, content: answer}]` | TRL `RewardTrainer` (conversational preference, implicit prompt) |
//! | `openrlhf-reward` | `prompt` = `[{role: user, content: U}]`, `chosen` / `rejected` = `[{role: assistant, content: answer}]` | OpenRLHF `train_rm` with `--data.apply_chat_template --data.prompt_key prompt --data.chosen_key chosen --data.rejected_key rejected` |
//! | `trl-sft-planner` | `prompt` = the planner's system + user turns, `completion` = `[{role: assistant, content: "- aspect\n- aspect…"}]` | TRL `SFTTrainer` (conversational prompt-completion) |
//!
//! **U** is the user turn eval renders for a pointwise reward model under the condition
//! ([`crate::runner::rm_request`]: [`Prompts::reward_model`] over the context
//! [`Condition::context`] builds, with profiles ranked by the same retriever as eval and the
//! planner's aspects from the same cached planner path). No model is loaded, so no input is
//! fitted to a context window: `profile:k` rows hold all k posts, as eval gives them to a remote
//! model that cannot count tokens (a trainer truncates by its own `max_length`).
//!
//! The planner rows hold the prompt eval's `planner` condition sends ([`Prompts::planner`] with
//! the top `planner_k` posts) and, as target, the example's ground-truth rubric aspect titles as
//! the planner is asked to write them (`- ` items, one per line); each target is checked to
//! parse back ([`crate::planner::parse_plan`]) to exactly those titles, so a planner trained on
//! it and served as `--planner openai:MODEL@URL` is read as it was taught.
//!
//! Leakage: every string of every reward row passes [`leakage::check_with`] under the export's
//! condition (hidden text may appear only under `oracle`); a planner row's prompt passes it as a
//! `none` input, and only its target holds rubric text.
//!
//! Schemas checked against (read, not copied): TRL v1.9.0 `docs/source/dataset_formats.md`
//! (preference with implicit prompt, prompt-completion), `trl/data_utils.py`
//! (`is_conversational`, `apply_chat_template`'s accepted key sets: metadata keys must avoid
//! `prompt`, `completion`, `messages`, `label`) and `trl/trainer/reward_trainer.py` (a `margin`
//! column is read as a margin, so none is written); OpenRLHF v0.11.0
//! `openrlhf/datasets/reward_dataset.py` (`preprocess_data`: with `apply_chat_template` and a
//! prompt key it concatenates `data[prompt_key] + data[chosen_key]`, so all three are message
//! lists; a `margin` key is read as a margin) and `openrlhf/cli/train_rm.py` (flags are
//! `--data.prompt_key` etc. from v0.10.2 on, `--prompt_key` etc. before).
//!
//! [`leakage::check_with`]: crate::leakage::check_with

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use serde::Serialize;
use sha2::{Digest, Sha256};

use prbench_data::Dataset;

use crate::cache::Cache;
use crate::condition::Condition;
use crate::evaluation::{
    prepare_inputs, rank_profiles, Engines, EvaluationReporter, PlannerOptions,
};
use crate::prompt::Prompts;
use crate::runner::{ContextSource, EvalOptions};
use crate::EvalError;

mod rows;

pub use rows::{all_strings, planner_target, Message};
use rows::{planner_row, reward_row};

/// What a training export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// TRL reward modelling: conversational preference rows with an implicit prompt.
    TrlReward,
    /// OpenRLHF reward modelling: `prompt`, `chosen`, `rejected` message lists.
    OpenrlhfReward,
    /// Planner SFT in TRL's conversational prompt-completion form.
    TrlSftPlanner,
}

impl Format {
    /// Every format, in the order help texts list them.
    pub const ALL: [Format; 3] = [Format::TrlReward, Format::OpenrlhfReward, Format::TrlSftPlanner];

    /// The format's name on the command line (`trl-reward`, `openrlhf-reward`, `trl-sft-planner`).
    pub fn name(self) -> &'static str {
        match self {
            Format::TrlReward => "trl-reward",
            Format::OpenrlhfReward => "openrlhf-reward",
            Format::TrlSftPlanner => "trl-sft-planner",
        }
    }

    /// Whether rows are reward-model preference pairs (rendered under a condition).
    pub fn is_reward(self) -> bool {
        !matches!(self, Format::TrlSftPlanner)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s.trim())
            .ok_or_else(|| format!("unknown export format `{s}`; expected trl-reward, openrlhf-reward or trl-sft-planner"))
    }
}

/// How an export is rendered (the `prbench export` flags, resolved).
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Row format.
    pub format: Format,
    /// The condition reward rows are rendered under (ignored by `trl-sft-planner`, whose input
    /// is the planner's prompt).
    pub condition: Condition,
    /// How profiles are ranked: `None` = a ranked dataset file's own order, else
    /// [`crate::evaluation::DEFAULT_RETRIEVER`] (as eval).
    pub retriever: Option<String>,
    /// The planner: its `k` is the posts a planner prompt shows (the `planner` condition and
    /// `trl-sft-planner`); its model and token budget serve the `planner` condition only.
    pub planner: PlannerOptions,
    /// Seed of the planner's sampling and of `sample`.
    pub seed: u64,
    /// Only the first N examples of each subset (or a seeded sample of N with `sample`).
    pub limit: Option<usize>,
    /// With `limit`: a seeded random sample instead of the first N (as `eval --sample`).
    pub sample: bool,
    /// The run cache the planner's replies (and dense embeddings) are read from and stored in.
    pub cache: Option<PathBuf>,
    /// prbench version and git commit, for the manifest.
    pub code_version: String,
}

/// Examples an export left out or rendered without their condition's material, by reason.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// Rows written.
    pub rows: usize,
    /// `trl-sft-planner`: examples without rubric aspects (no target), left out.
    pub skipped_empty_rubric: usize,
    /// `planner`: examples the planner's generator failed on, left out (eval makes them error
    /// outcomes).
    pub skipped_planner_error: usize,
    /// `planner`: rows whose planner reply held no usable list, rendered with no context (as
    /// eval scores them).
    pub planner_failed: usize,
    /// `profile:k`: rows of examples with an empty profile, rendered with no context.
    pub empty_profile: usize,
    /// `oracle`: rows of examples without rubric aspects, rendered with no context.
    pub empty_rubric: usize,
}

/// A rendered export: JSONL lines and what the manifest records.
#[derive(Debug, Clone)]
pub struct Export {
    /// One JSON object per line, without the newline.
    pub lines: Vec<String>,
    /// The manifest written beside the file ([`manifest_path`]).
    pub manifest: serde_json::Value,
    /// Row and skip counts (also in the manifest).
    pub counts: Counts,
}

/// The manifest file of export `out`: `FILE.jsonl` → `FILE.manifest.json`.
pub fn manifest_path(out: &Path) -> PathBuf {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    out.with_file_name(format!("{stem}.manifest.json"))
}

/// Renders the export of `data` as `opts` says (see the module docs): selects the examples,
/// ranks profiles and runs the planner when the condition needs them (through `engines`, the
/// cache and `reporter`, exactly as `eval` prepares them), renders each row, and runs the
/// leakage guard on every row.
///
/// # Errors
/// `oracle` or `trl-sft-planner` on data without any rubric; retriever, planner or cache
/// failures; a rubric that does not round-trip ([`planner_target`]); a leak (a bug).
pub fn render(
    data: &Dataset,
    opts: &ExportOptions,
    engines: &dyn Engines,
    reporter: &dyn EvaluationReporter,
) -> Result<Export, EvalError> {
    let examples =
        crate::run::select_examples(&data.examples, opts.limit, opts.sample.then_some(opts.seed));
    let cache = opts.cache.as_deref().map(Cache::open).transpose()?.map(Arc::new);
    let prompts = Prompts::new();
    let mut counts = Counts::default();
    let mut lines = Vec::with_capacity(examples.len());
    let (condition_inputs, retriever) = if opts.format.is_reward() {
        crate::condition::check_oracle_material(&[opts.condition], &examples, &data.kind)?;
        let inputs = prepare_inputs(
            opts.retriever.as_deref(),
            &opts.planner,
            opts.seed,
            data,
            &examples,
            &[opts.condition],
            cache.as_ref(),
            engines,
            reporter,
        )?;
        let entry = inputs.manifest_entry(opts.condition);
        let retriever = inputs.retriever.clone();
        let eval_opts = EvalOptions {
            condition: opts.condition,
            seed: opts.seed,
            both_orders: false,
            batch_size: 1,
            context: ContextSource::Condition,
            inputs: Arc::new(inputs),
        };
        for ex in &examples {
            if let Some(line) = reward_row(ex, opts.format, &eval_opts, &prompts, &mut counts)? {
                lines.push(line);
            }
        }
        (entry, retriever)
    } else {
        if examples.iter().all(|e| e.rubric_aspects.is_empty()) {
            return Err(EvalError::evaluation(format!(
                "none of the {} examples has rubric aspects (dataset kind `{}`), so there is no planner target to train on; trl-sft-planner needs data with rubric aspects (Personalized-RewardBench, or a `prbench build` export)",
                examples.len(),
                data.kind
            )));
        }
        let (ranked, by) = rank_profiles(
            opts.retriever.as_deref(),
            data,
            &examples,
            cache.as_ref(),
            engines,
            reporter,
        )?;
        for ex in &examples {
            let posts = ranked.get(&ex.id).map(Vec::as_slice).unwrap_or_default();
            if let Some(line) = planner_row(ex, posts, opts.planner.k, &prompts)? {
                lines.push(line);
            } else {
                counts.skipped_empty_rubric += 1;
            }
        }
        (serde_json::json!({ "planner_k": opts.planner.k, "retriever": by }), Some(by))
    };
    counts.rows = lines.len();
    let mut h = Sha256::new();
    for l in &lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    let mut subsets: Vec<&str> = Vec::new();
    for ex in &examples {
        if !subsets.contains(&ex.subset.as_str()) {
            subsets.push(&ex.subset);
        }
    }
    let manifest = serde_json::json!({
        "kind": "prbench training export",
        "format": opts.format.name(),
        "code_version": opts.code_version,
        "created": chrono::Utc::now(),
        "template_hash": prompts.hash(),
        "dataset": data.source,
        "dataset_kind": data.kind,
        "dataset_hash": data.hash,
        "dataset_examples": data.examples.len(),
        "subsets": subsets,
        "limit_per_subset": if opts.sample { None } else { opts.limit },
        "sample_per_subset": if opts.sample { opts.limit } else { None },
        "seed": opts.seed,
        "condition": if opts.format.is_reward() { Some(opts.condition.to_string()) } else { None },
        "oracle": opts.format.is_reward() && opts.condition.is_oracle(),
        "retriever": retriever,
        "condition_inputs": condition_inputs,
        "rows_sha256": hex::encode(h.finalize()),
        "counts": counts,
    });
    Ok(Export { lines, manifest, counts })
}

/// Writes `export` to `out` (one row per line) and its manifest to [`manifest_path`]`(out)`;
/// refuses to overwrite either, and creates no folder (nothing is written then). Returns the
/// manifest's path.
///
/// # Errors
/// [`EvalError::Evaluation`] when a file exists, `out`'s folder does not, or a file cannot be
/// written, naming it.
pub fn write(out: &Path, export: &Export) -> Result<PathBuf, EvalError> {
    let manifest = manifest_path(out);
    for p in [out, manifest.as_path()] {
        if p.exists() {
            return Err(EvalError::evaluation(format!(
                "`{}` already exists; remove it or choose another --out (exports are never overwritten)",
                p.display()
            )));
        }
    }
    // No folder is created: a missing one is more likely a typo than a wish.
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
        return Err(EvalError::evaluation(format!(
            "folder `{}` of `{}` does not exist; create it or write to an existing folder",
            dir.display(),
            out.display()
        )));
    }
    let put = |path: &Path, text: &str| -> Result<(), EvalError> {
        let mut f =
            OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
                EvalError::evaluation_with(format!("creating `{}`", path.display()), e)
            })?;
        f.write_all(text.as_bytes())
            .map_err(|e| EvalError::evaluation_with(format!("writing `{}`", path.display()), e))
    };
    let mut text = String::new();
    for l in &export.lines {
        text.push_str(l);
        text.push('\n');
    }
    put(out, &text)?;
    put(
        &manifest,
        &(serde_json::to_string_pretty(&export.manifest).expect("manifest serializes") + "\n"),
    )?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prbench_data::{Example, RubricAspect};

    fn ex(aspects: &[&str]) -> Example {
        Example {
            id: "e1".into(),
            subset: "Art_and_Entertainment".into(),
            question: "Q?".into(),
            profile: vec![],
            rubric_aspects: aspects
                .iter()
                .map(|a| RubricAspect {
                    aspect: a.to_string(),
                    evidence: String::new(),
                    reason: String::new(),
                })
                .collect(),
            narrative: String::new(),
            category: "c".into(),
            chosen: "a".into(),
            rejected: "b".into(),
            user_id: None,
        }
    }

    #[test]
    fn planner_target_is_a_dash_list_that_parses_back() {
        assert_eq!(
            planner_target(&ex(&[" Budget focus ", "Step-by-step tone"])).unwrap().unwrap(),
            "- Budget focus\n- Step-by-step tone"
        );
        assert_eq!(planner_target(&ex(&[])).unwrap(), None);
        for bad in [&["Budget:"][..], &["Budget", "budget"], &["**Bold**"]] {
            let e = planner_target(&ex(bad)).unwrap_err().to_string();
            assert!(e.contains("do not read back"), "{e}");
        }
    }

    struct NoEngines;
    impl Engines for NoEngines {
        fn retriever<'c>(
            &self,
            _: &str,
            _: Option<&'c Cache>,
        ) -> Result<Box<dyn crate::retrieve::Retriever + 'c>, crate::evaluation::EngineError>
        {
            Ok(Box::new(crate::retrieve::bm25::Bm25Retriever::default()))
        }
        fn generator(
            &self,
            spec: &str,
        ) -> Result<Box<dyn prbench_models::Generator>, crate::evaluation::EngineError> {
            Err(format!("no generator `{spec}` here").into())
        }
        fn quality_embedder(
            &self,
        ) -> Result<Arc<dyn prbench_models::Embedder>, crate::evaluation::EngineError> {
            Err("no embedder".into())
        }
    }
    struct Quiet;
    impl crate::runner::Reporter for Quiet {
        fn start(&self, _: &str, _: u64) {}
        fn advance(&self, _: u64) {}
        fn finish(&self) {}
    }
    impl EvaluationReporter for Quiet {
        fn note(&self, _: &str) {}
    }

    fn options(format: Format, condition: Condition) -> ExportOptions {
        ExportOptions {
            format,
            condition,
            retriever: None,
            planner: PlannerOptions { model: "gguf:none".into(), k: 10, max_new_tokens: 128 },
            seed: 42,
            limit: None,
            sample: false,
            cache: None,
            code_version: "test".into(),
        }
    }

    #[test]
    fn rows_carry_id_and_user_id_first_and_nothing_trainers_misread() {
        let mut e = ex(&["Budget focus"]);
        e.user_id = Some("u7".into());
        e.narrative = "A frugal user who wants budget advice.".into();
        let data = Dataset {
            examples: vec![e, ex(&[])],
            source: "mem".into(),
            kind: "prb".into(),
            hash: "h".into(),
            profile_ranking: None,
        };
        let out = render(&data, &options(Format::TrlReward, Condition::None), &NoEngines, &Quiet)
            .unwrap();
        assert_eq!(out.lines.len(), 2);
        assert_eq!(
            out.lines[0],
            r#"{"id":"e1","user_id":"u7","subset":"Art_and_Entertainment","condition":"none","chosen":[{"role":"user","content":"Q?"},{"role":"assistant","content":"a"}],"rejected":[{"role":"user","content":"Q?"},{"role":"assistant","content":"b"}]}"#
        );
        assert!(!out.lines[1].contains("user_id"));
        let o =
            render(&data, &options(Format::OpenrlhfReward, Condition::Oracle), &NoEngines, &Quiet)
                .unwrap();
        assert_eq!(
            o.lines[0],
            r####"{"id":"e1","user_id":"u7","subset":"Art_and_Entertainment","condition":"oracle","prompt":[{"role":"user","content":"### About me\nThis user expects an answer with these qualities:\n- Budget focus\n\n### My question\nQ?"}],"chosen":[{"role":"assistant","content":"a"}],"rejected":[{"role":"assistant","content":"b"}]}"####
        );
        assert_eq!((o.counts.rows, o.counts.empty_rubric), (2, 1));
        assert_eq!(o.manifest["oracle"], true);
        // The planner SFT export leaves out the example without a rubric.
        let p = render(&data, &options(Format::TrlSftPlanner, Condition::None), &NoEngines, &Quiet)
            .unwrap();
        assert_eq!((p.counts.rows, p.counts.skipped_empty_rubric), (1, 1));
        assert!(
            p.lines[0]
                .ends_with(r#""completion":[{"role":"assistant","content":"- Budget focus"}]}"#),
            "{}",
            p.lines[0]
        );
        // Planner rows carry no `condition` (reward rows do, see above); the manifest's is null.
        let mut keys: Vec<String> = serde_json::from_str::<serde_json::Value>(&p.lines[0])
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        assert_eq!(keys, ["completion", "id", "prompt", "subset", "user_id"]);
        assert!(p.manifest["condition"].is_null());
        // `planner` needs the planner's generator; it is loaded through the engines.
        let err =
            render(&data, &options(Format::TrlReward, Condition::Planner), &NoEngines, &Quiet)
                .unwrap_err()
                .to_string();
        assert!(err.contains("no generator"), "{err}");
    }

    #[test]
    fn formats_parse_and_manifest_sits_beside_the_file() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert!("trl".parse::<Format>().is_err());
        assert_eq!(
            manifest_path(Path::new("out/train.jsonl")),
            PathBuf::from("out/train.manifest.json")
        );
    }

    #[test]
    fn write_creates_no_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let export = Export {
            lines: vec!["{}".into()],
            manifest: serde_json::json!({}),
            counts: Counts::default(),
        };
        let missing = tmp.path().join("typo");
        let err = write(&missing.join("x.jsonl"), &export).unwrap_err().to_string();
        assert!(
            err.contains(&format!("folder `{}`", missing.display()))
                && err.contains("does not exist"),
            "{err}"
        );
        assert!(!missing.exists());
        assert_eq!(
            write(&tmp.path().join("x.jsonl"), &export).unwrap(),
            tmp.path().join("x.manifest.json")
        );
    }
}
