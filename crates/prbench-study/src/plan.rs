//! The plan file (`PLAN.toml`), one typed definition: what a study evaluates, trains, runs
//! downstream and correlates. Every table refuses keys it does not know, so a misspelt key is an
//! error naming its line, never a setting silently left at its default.
//!
//! ```toml
//! seed = 42
//!
//! [benchmarks.psoups]
//! data = "psoups:data/psoups"
//! conditions = ["none"]
//!
//! [models.bt]
//! spec = "bt"                        # trained by the study: see `train`
//! family = "personalized"
//! conditions = ["none", "oracle"]
//! train = { method = "bt", options = { pairs = "history" } }
//!
//! [models.longer]
//! spec = "baseline:longer"
//!
//! [downstream.bon]
//! kind = "best-of-n"
//! benchmark = "psoups"
//! n = 8
//! sample = { limit = 15, distinct-questions = true }
//!
//! [correlation]
//! bootstrap = 10000
//! ```
//!
//! `options` tables hold the flags of the verb a step runs (`prbench eval`, `train bt|pal`,
//! `bon sample|judge|score`) without their leading dashes: `both-orders = true`,
//! `verdict = "logprob"`, `subset = ["a", "b"]`. They are checked by the verb's own flag parser
//! when the plan is validated, before any model loads.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

/// A flag table (`options = { ... }`): flag name without dashes → value.
pub type Options = Spanned<toml::Table>;

/// A whole plan file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Seed of every step that draws (sampling, bootstrap); default 42.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Bootstrap resamples of each benchmark CI; default 10,000.
    #[serde(default)]
    pub bootstrap: Option<usize>,
    /// Steps that only call servers (remote models, baselines) run up to this many at once,
    /// beside at most one step that runs a local engine (GGUF, safetensors, BT, PAL); default 4.
    #[serde(default = "default_remote_steps", rename = "remote-steps")]
    pub remote_steps: usize,
    /// Study folder; `--out` overrides it. Default: `runs/study-<plan file name without .toml>`.
    #[serde(default)]
    pub out: Option<String>,
    /// Benchmarks by name, in plan order.
    #[serde(default)]
    pub benchmarks: IndexMap<String, Spanned<Benchmark>>,
    /// Reward models and judges by name, in plan order.
    #[serde(default)]
    pub models: IndexMap<String, Spanned<Model>>,
    /// Downstream legs by name.
    #[serde(default)]
    pub downstream: IndexMap<String, Spanned<Downstream>>,
    /// How benchmark rankings are compared with downstream ones.
    #[serde(default)]
    pub correlation: Option<Spanned<Correlation>>,
}

fn default_seed() -> u64 {
    42
}

fn default_remote_steps() -> usize {
    4
}

/// A benchmark: data, and the conditions its models are evaluated under by default.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Benchmark {
    /// `--data` spec (`psoups:DIR`, `prb:DIR`, a file). Relative paths here and everywhere in a
    /// plan are relative to the working folder, as the same flags' are.
    pub data: Spanned<String>,
    /// Its name in the tables (default: the benchmark's key).
    #[serde(default)]
    pub title: Option<String>,
    /// Subsets to keep (default: all).
    #[serde(default)]
    pub subsets: Vec<String>,
    /// Conditions every model is evaluated under unless it names its own; default `["none"]`.
    #[serde(default)]
    pub conditions: Option<Spanned<Vec<String>>>,
    /// Evaluate the first N examples of each subset (with `sample`, a seeded sample of N).
    #[serde(default)]
    pub limit: Option<usize>,
    /// With `limit`: a seeded random sample instead of the first N.
    #[serde(default)]
    pub sample: bool,
}

/// A model family: how the reward-model table groups its rows (the paper's grouping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// A sequence-classification reward model (`hf:`, `dir:`, the remote classifiers).
    Scalar,
    /// A generative judge (`gguf:`, `openai:`).
    Generative,
    /// A personalized reward model (`bt:`, `pal:`).
    Personalized,
    /// A control baseline (`baseline:`).
    Baseline,
}

impl Family {
    /// The family a spec belongs to when the plan names none.
    pub fn of_spec(spec: &str) -> Family {
        let scheme = spec.split_once(':').map_or(spec, |(s, _)| s);
        match scheme {
            "gguf" | "openai" => Family::Generative,
            "bt" | "pal" => Family::Personalized,
            "baseline" => Family::Baseline,
            _ => Family::Scalar,
        }
    }

    /// Its heading in the tables.
    pub fn heading(self) -> &'static str {
        match self {
            Family::Scalar => "Scalar reward models",
            Family::Generative => "Generative judges",
            Family::Personalized => "Personalized reward models",
            Family::Baseline => "Baselines",
        }
    }
}

/// A reward model or judge under test.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Its `--model` spec. With `train`, `bt` or `pal` alone: the study trains it and fills in
    /// the path.
    pub spec: Spanned<String>,
    /// Row group in the tables (default: from the spec).
    #[serde(default)]
    pub family: Option<Family>,
    /// Conditions it is evaluated under (default: each benchmark's).
    #[serde(default)]
    pub conditions: Option<Spanned<Vec<String>>>,
    /// Benchmarks it is evaluated on (default: all).
    #[serde(default)]
    pub benchmarks: Option<Spanned<Vec<String>>>,
    /// Further `prbench eval` flags.
    #[serde(default)]
    pub options: Option<Options>,
    /// Further `prbench bon score` flags, for the Best-of-N legs.
    #[serde(default, rename = "score-options")]
    pub score_options: Option<Options>,
    /// The training step the study runs first.
    #[serde(default)]
    pub train: Option<Spanned<Train>>,
}

/// A training step (`prbench train bt|pal`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Train {
    /// `bt` or `pal`.
    pub method: Spanned<String>,
    /// The benchmark whose data it trains on (default: the first benchmark).
    #[serde(default)]
    pub benchmark: Option<Spanned<String>>,
    /// Further `prbench train bt|pal` flags (`pairs`, `condition`, `epochs`, ...).
    #[serde(default)]
    pub options: Option<Options>,
}

/// A downstream leg: its kind and settings.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Downstream {
    /// `best-of-n` or `rl`.
    pub kind: Spanned<String>,
    /// Its name in the tables (default: the leg's key).
    #[serde(default)]
    pub title: Option<String>,
    /// The benchmark whose items it uses (the policy's questions).
    pub benchmark: Spanned<String>,
    /// The models it ranks (default: every model evaluated on `benchmark`; for `rl`, the
    /// models in `policies`).
    #[serde(default)]
    pub models: Option<Spanned<Vec<String>>>,
    /// best-of-n: the policy spec (default: the SmolLM2 GGUF).
    #[serde(default)]
    pub policy: Option<Spanned<String>>,
    /// best-of-n: samples per question; rl with `checkpoints`: answers per held-out question
    /// from each policy (default 4).
    #[serde(default)]
    pub n: Option<Spanned<usize>>,
    /// best-of-n: the k whose expected rubric score is the downstream score (default n).
    #[serde(default)]
    pub k: Option<Spanned<usize>>,
    /// The rubric judge spec (default: the SmolLM2 GGUF).
    #[serde(default)]
    pub judge: Option<Spanned<String>>,
    /// best-of-n, and rl with `checkpoints`: further `prbench bon sample` flags (`limit`,
    /// `distinct-questions`, ...).
    #[serde(default)]
    pub sample: Option<Options>,
    /// Further `prbench bon judge` flags (`mode`, ...).
    #[serde(default, rename = "judge-options")]
    pub judge_options: Option<Options>,
    /// rl: each model's policy answers on the held-out questions, a folder `prbench bon sample`
    /// wrote (as `examples/trl-grpo/sample.py` does).
    #[serde(default)]
    pub policies: IndexMap<String, Spanned<String>>,
    /// rl: each model's trained policy as a spec that generates (`gguf:PATH`, or
    /// `openai:MODEL@URL` for a checkpoint a server such as vLLM serves); the study samples its
    /// answers to `questions` (`n` per question, `sample` flags) and judges them.
    #[serde(default)]
    pub checkpoints: IndexMap<String, Spanned<String>>,
    /// rl with `checkpoints`: the held-out questions the policies answer, a `--data` spec
    /// whose items are all the benchmark's (default: the benchmark's data).
    #[serde(default)]
    pub questions: Option<Spanned<String>>,
}

/// The correlation settings (`prbench correlate --benchmark-set`'s).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Correlation {
    /// Bootstrap resamples over models (default 10,000).
    #[serde(default)]
    pub bootstrap: Option<usize>,
    /// Permutation resamples of rho's p-value (default 100,000).
    #[serde(default)]
    pub permutations: Option<usize>,
    /// RBO persistence in (0, 1) (default 0.9).
    #[serde(default, rename = "rbo-p")]
    pub rbo_p: Option<f64>,
    /// The benchmark figure: `auto`, `accuracy` or `debiased` (default auto).
    #[serde(default)]
    pub metric: Option<Spanned<String>>,
    /// The statistics shown (default all): `ndcg`, `weighted-tau`, `spearman`,
    /// `kendall-tau-b`, `rbo`.
    #[serde(default)]
    pub statistics: Option<Spanned<Vec<String>>>,
}

/// A plan file read and parsed, with its text (for line numbers) and folder (for relative
/// paths).
#[derive(Debug)]
pub struct PlanFile {
    /// The file.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// Its content.
    pub plan: Plan,
}

/// A plan that cannot be run: the file, the line and the key at fault, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The file cannot be read.
    #[error("reading plan `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The TOML does not parse or does not fit the plan's shape (an unknown key, a wrong type);
    /// toml's message names the line and column.
    #[error("plan `{}`: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// toml's message, with the line, the column and the key.
        message: String,
    },
    /// A semantic error: a key whose value cannot be run.
    #[error("plan `{}`, line {line}, `{key}`: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key's value.
        line: usize,
        /// The key, dotted (`models.bt.spec`).
        key: String,
        /// What is wrong and what to do.
        message: String,
    },
}

impl PlanFile {
    /// Reads and parses `path`.
    ///
    /// # Errors
    /// [`PlanError::Read`], [`PlanError::Syntax`] (with toml's line and column).
    pub fn read(path: &Path) -> Result<Self, PlanError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| PlanError::Read { path: path.to_path_buf(), source })?;
        Self::parse(path, text)
    }

    /// Parses `text` as the plan file `path`.
    ///
    /// # Errors
    /// [`PlanError::Syntax`].
    pub fn parse(path: &Path, text: String) -> Result<Self, PlanError> {
        let plan: Plan = toml::from_str(&text).map_err(|e| {
            let mut message = e.to_string().trim_end().to_string();
            if let Some(key) = e.span().and_then(|s| key_path_at(&text, s.start)) {
                message += &format!("\n(key `{key}`)");
            }
            if let Some(hint) = e.span().and_then(|s| dotted_name_hint(&text, s.start)) {
                message += &format!("\n{hint}");
            }
            PlanError::Syntax { path: path.to_path_buf(), message }
        })?;
        Ok(Self { path: path.to_path_buf(), text, plan })
    }

    /// The 1-based line of byte offset `at`.
    pub fn line(&self, at: usize) -> usize {
        self.text[..at.min(self.text.len())].bytes().filter(|&b| b == b'\n').count() + 1
    }

    /// A [`PlanError::Invalid`] at `span` for `key`.
    pub fn invalid(
        &self,
        span: std::ops::Range<usize>,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> PlanError {
        PlanError::Invalid {
            path: self.path.clone(),
            line: self.line(span.start),
            key: key.into(),
            message: message.into(),
        }
    }

    /// The study folder when `--out` is not given: `out`, else `runs/study-<file stem>`.
    pub fn default_out(&self) -> PathBuf {
        match &self.plan.out {
            Some(o) => PathBuf::from(o),
            None => {
                let stem = self.path.file_stem().map_or("plan".into(), |s| s.to_string_lossy());
                PathBuf::from("runs").join(format!("study-{stem}"))
            }
        }
    }
}

/// A hint for an error inside a table header like `[models.qwen2.5]`: TOML reads the dot as a
/// nested table (`5` inside model `qwen2`), so the error speaks of an unknown field `5`; names
/// hold no dots.
/// The dotted path of the key whose line holds byte offset `at`: the last `[table]` header
/// above it, then the key the line assigns (`downstream.bon.n`). `None` on a header line or a
/// line that assigns nothing (toml's own message then shows the line).
fn key_path_at(text: &str, at: usize) -> Option<String> {
    let at = at.min(text.len());
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?.trim();
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    if key.is_empty() || line.starts_with('[') || key.contains(['"', '\'', '#']) {
        return None;
    }
    let header = text[..start].lines().rev().map(str::trim).find_map(|l| {
        l.strip_prefix('[')
            .map(|h| h.trim_start_matches('[').split(']').next().unwrap_or("").trim().to_string())
    });
    Some(match header {
        Some(h) if !h.is_empty() => format!("{h}.{key}"),
        _ => key.to_string(),
    })
}

fn dotted_name_hint(text: &str, at: usize) -> Option<String> {
    let start = text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?.trim();
    let inner = line.strip_prefix('[')?.trim_start_matches('[').split(']').next()?;
    let parts: Vec<&str> = inner.split('.').map(str::trim).collect();
    let depth = match parts.first().copied()? {
        "benchmarks" | "models" => 2,
        "downstream" => {
            2 + usize::from(matches!(parts.get(2).copied(), Some("policies" | "checkpoints")))
        }
        _ => return None,
    };
    (parts.len() > depth && !matches!(parts.get(2).copied(), Some("policies" | "checkpoints"))).then(|| {
        format!(
            "hint: `[{inner}]` is read as table `{}` inside `{}` because a `.` splits a TOML key; names of benchmarks, models and legs hold letters, digits, `-` and `_` only (e.g. `{}`)",
            parts[2..].join("."),
            parts[..2].join("."),
            parts[1..].join("_")
        )
    })
}
