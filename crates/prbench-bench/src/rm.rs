//! `bench rm`: scalar reward-model throughput, prbench (candle, f32 CPU) side by side
//! with PyTorch/transformers on the same token ids in the same run (tools/bench_rm.py).
//!
//! Two models: a 6-layer Qwen2-shaped sequence classifier (hidden 384, random weights that
//! tools/bench_rm.py writes once with transformers) and the all-MiniLM-L6-v2 encoder (the
//! Bradley-Terry RM's backbone). Inputs: `--batches` batches of `--batch` random token sequences
//! of `--seq-len` tokens (seeded). Both engines run every batch once to warm up, then
//! `--repeats` timed passes; tokens/s = tokens scored / wall seconds. This machine's timings
//! drift by tens of percent from minute to minute, so the two engines are measured in
//! alternation for `--rounds` rounds and the table gives each side's median and the median of
//! the per-round ratios. The outputs of the two engines are compared as a check that both
//! computed the same thing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use prbench_rm::embed::{default_embedder_dir, MiniLmEmbedder};
use prbench_rm::seqcls::SeqClsModel;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::child::median;

/// What `bench rm` measures and with what.
#[derive(Debug, Clone)]
pub struct RmOptions {
    /// Models to measure: `decoder` and/or `minilm`.
    pub models: Vec<String>,
    /// Sequences per forward pass.
    pub batch: usize,
    /// Tokens per sequence.
    pub seq_len: usize,
    /// Distinct batches.
    pub batches: usize,
    /// Timed passes over all batches (after one warm-up pass).
    pub repeats: usize,
    /// Alternating rounds (prbench, then transformers).
    pub rounds: usize,
    /// Seed of the random token ids.
    pub seed: u64,
    /// The reference's side of the comparison.
    pub reference: Reference,
    /// MiniLM directory (default: the one scripts/fetch-models.sh caches).
    pub embedder: Option<PathBuf>,
    /// The prbench version the rows name.
    pub code_version: String,
}

/// The PyTorch reference `bench rm` (and `bench all`) runs, and where it works.
#[derive(Debug, Clone)]
pub struct Reference {
    /// CPU threads of both sides (torch's, and prbench's once the command has called
    /// [`crate::use_threads`]); every engine's under `bench all`.
    pub threads: usize,
    /// Python interpreter with torch and transformers.
    pub python: String,
    /// The folder holding bench_rm.py (the repository's `tools/`).
    pub tools: PathBuf,
    /// Working folder for the bench model, inputs and logs.
    pub work: PathBuf,
}

/// One side of a measurement.
struct Side {
    engine: String,
    tokens: usize,
    seconds: f64,
    outputs: Vec<f64>,
}

impl Side {
    fn tokens_per_s(&self) -> f64 {
        self.tokens as f64 / self.seconds
    }
}

/// Random token ids: `[batches][batch][seq_len]`, from a seeded ChaCha8 stream, in `[lo, hi)`.
fn token_batches(args: &RmOptions, lo: u32, hi: u32) -> Vec<Vec<Vec<u32>>> {
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    (0..args.batches)
        .map(|_| {
            (0..args.batch)
                .map(|_| (0..args.seq_len).map(|_| rng.random_range(lo..hi)).collect())
                .collect()
        })
        .collect()
}

fn time_passes(
    args: &RmOptions,
    batches: &[Vec<Vec<u32>>],
    pass: &mut impl FnMut(&[Vec<u32>]) -> Result<Vec<f64>>,
) -> Result<(f64, Vec<f64>)> {
    let mut outputs = Vec::new();
    for b in batches {
        outputs.extend(pass(b)?);
    }
    let start = Instant::now();
    for _ in 0..args.repeats {
        for b in batches {
            pass(b)?;
        }
    }
    Ok((start.elapsed().as_secs_f64(), outputs))
}

/// Runs `tools/bench_rm.py` with `script_args` under the reference's interpreter and returns
/// the last JSON line it printed.
///
/// # Errors
/// The script or interpreter is missing, the script fails (its stderr is quoted: usually no
/// torch/transformers), or it printed no JSON line.
pub(crate) fn python(reference: &Reference, script_args: &[String]) -> Result<serde_json::Value> {
    let args = reference;
    let script = args.tools.join("bench_rm.py");
    if !script.is_file() {
        bail!("`{}` not found: run from the repository root or pass --tools DIR", script.display());
    }
    let out = match Command::new(&args.python).arg(&script).args(script_args).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("the Python interpreter `{}` was not found (--python): give one that has torch and transformers", args.python)
        }
        Err(e) => {
            return Err(e)
                .with_context(|| format!("running `{} {}`", args.python, script.display()))
        }
    };
    if !out.status.success() {
        bail!(
            "`{} {} {}` failed (needs `pip install torch transformers`):\n{}",
            args.python,
            script.display(),
            script_args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with('{')).with_context(|| {
        format!(
            "`{} {}` printed no JSON line: is --python a Python 3 interpreter?",
            args.python,
            script.display()
        )
    })?;
    Ok(serde_json::from_str(line)?)
}

fn reference(
    args: &RmOptions,
    kind: &str,
    model_dir: &Path,
    batches: &[Vec<Vec<u32>>],
) -> Result<Side> {
    let inputs = args.reference.work.join(format!("{kind}-ids.json"));
    std::fs::write(&inputs, serde_json::to_string(&serde_json::json!({ "batches": batches }))?)?;
    let v = python(
        &args.reference,
        &[
            "run".into(),
            "--kind".into(),
            kind.into(),
            "--model-dir".into(),
            model_dir.display().to_string(),
            "--inputs".into(),
            inputs.display().to_string(),
            "--threads".into(),
            args.reference.threads.to_string(),
            "--repeats".into(),
            args.repeats.to_string(),
        ],
    )?;
    Ok(Side {
        engine: v["engine"].as_str().unwrap_or("transformers").to_string(),
        tokens: v["tokens"].as_u64().context("tokens")? as usize,
        seconds: v["seconds"].as_f64().context("seconds")?,
        outputs: v["outputs"]
            .as_array()
            .context("outputs")?
            .iter()
            .filter_map(serde_json::Value::as_f64)
            .collect(),
    })
}

/// `--rounds` alternating measurements: prbench's timed passes (`pass` maps one batch to one
/// output per sequence), then the reference on the same batches.
fn rounds(
    args: &RmOptions,
    kind: &str,
    engine: &str,
    model_dir: &Path,
    batches: &[Vec<Vec<u32>>],
    mut pass: impl FnMut(&[Vec<u32>]) -> Result<Vec<f64>>,
) -> Result<Vec<(Side, Side)>> {
    let tokens = args.repeats * batches.iter().flatten().map(Vec::len).sum::<usize>();
    (0..args.rounds)
        .map(|_| {
            let (seconds, outputs) = time_passes(args, batches, &mut pass)?;
            let ours = Side {
                engine: format!("prbench {} ({engine})", args.code_version),
                tokens,
                seconds,
                outputs,
            };
            Ok((ours, reference(args, kind, model_dir, batches)?))
        })
        .collect()
}

fn decoder(args: &RmOptions) -> Result<Vec<(Side, Side)>> {
    let dir = args.reference.work.join("decoder-6l");
    if !dir.join("model.safetensors").is_file() {
        python(&args.reference, &["make-decoder".into(), dir.display().to_string()])?;
    }
    let model = SeqClsModel::load(&dir)?;
    let batches = token_batches(args, 3, model.vocab_size() as u32);
    rounds(args, "decoder", "candle f32 CPU", &dir, &batches, |b| {
        Ok(model.score_batch(b)?.into_iter().map(|l| f64::from(l[0])).collect())
    })
}

fn minilm(args: &RmOptions) -> Result<Vec<(Side, Side)>> {
    let dir = args.embedder.clone().unwrap_or_else(default_embedder_dir);
    let mut embedder = MiniLmEmbedder::load(&dir).with_context(|| {
        format!("loading the embedder `{}` (run scripts/setup.sh)", dir.display())
    })?;
    embedder.set_batch_size(args.batch);
    // Ids 1000..20000 are ordinary word pieces in the MiniLM vocabulary; [CLS]/[SEP] added by
    // neither side, so both see exactly these ids.
    let batches = token_batches(args, 1000, 20000);
    rounds(args, "bert", prbench_rm::encoder::ENGINE, &dir, &batches, |b| {
        Ok(embedder.embed_ids(b)?.into_iter().map(|v| f64::from(v[0])).collect())
    })
}

/// The command line equivalent to `args`, for tables.
pub fn command_line(args: &RmOptions) -> String {
    format!(
        "prbench bench rm --models {} --batch {} --seq-len {} --batches {} --repeats {} --rounds {} --threads {}",
        args.models.join(","),
        args.batch,
        args.seq_len,
        args.batches,
        args.repeats,
        args.rounds,
        args.reference.threads
    )
}

/// One row of `bench rm`: model, prbench and transformers tokens/s (medians), the median and
/// range of the per-round ratios, and the largest output difference.
pub struct RmRow {
    /// `decoder` or `minilm`.
    pub model: String,
    /// prbench tokens/s, median over rounds.
    pub ours: f64,
    /// transformers tokens/s, median over rounds.
    pub theirs: f64,
    /// Median of the per-round ratios.
    pub ratio: f64,
    /// Smallest and largest per-round ratio.
    pub range: (f64, f64),
    /// Largest absolute difference between the two engines' outputs.
    pub max_diff: f64,
}

/// Measures every model of `args.models` (see the module docs).
///
/// # Errors
/// The reference script failing (no torch), model loading, outputs of unequal length.
pub fn measure(args: &RmOptions, log: &dyn Fn(&str)) -> Result<Vec<RmRow>> {
    std::fs::create_dir_all(&args.reference.work)
        .with_context(|| format!("creating `{}`", args.reference.work.display()))?;
    let mut rows = Vec::new();
    for name in &args.models {
        let rounds = match name.as_str() {
            "decoder" => decoder(args)?,
            "minilm" => minilm(args)?,
            other => bail!("unknown bench model `{other}`; known: decoder, minilm"),
        };
        let (ours, theirs) = &rounds[0];
        if ours.outputs.len() != theirs.outputs.len() {
            bail!(
                "{name}: prbench gave {} outputs, transformers {}",
                ours.outputs.len(),
                theirs.outputs.len()
            );
        }
        let max_diff = ours
            .outputs
            .iter()
            .zip(&theirs.outputs)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        log(&format!(
            "bench rm {name}: {} vs {}; max |Δ output| = {max_diff:.2e}",
            ours.engine, theirs.engine
        ));
        for (i, (o, t)) in rounds.iter().enumerate() {
            log(&format!(
                "  round {}: prbench {:.0} tok/s, transformers {:.0} tok/s, ratio {:.2}",
                i + 1,
                o.tokens_per_s(),
                t.tokens_per_s(),
                o.tokens_per_s() / t.tokens_per_s()
            ));
        }
        let ours_med = median(rounds.iter().map(|(o, _)| o.tokens_per_s()).collect());
        let theirs_med = median(rounds.iter().map(|(_, t)| t.tokens_per_s()).collect());
        let ratio_med =
            median(rounds.iter().map(|(o, t)| o.tokens_per_s() / t.tokens_per_s()).collect());
        let (lo, hi) = rounds
            .iter()
            .map(|(o, t)| o.tokens_per_s() / t.tokens_per_s())
            .fold((f64::MAX, f64::MIN), |(l, h), r| (l.min(r), h.max(r)));
        rows.push(RmRow {
            model: name.clone(),
            ours: ours_med,
            theirs: theirs_med,
            ratio: ratio_med,
            range: (lo, hi),
            max_diff,
        });
    }
    Ok(rows)
}

/// The `bench rm` table of `rows` measured with `args`.
pub fn table(args: &RmOptions, rows: &[RmRow]) -> String {
    let mut s = String::from(
        "| model | batch × seq_len | batches × repeats × rounds | prbench tok/s (median) | transformers tok/s (median) | ratio (median of rounds) | ratio range | max abs Δ |\n|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} × {} | {} × {} × {} | {:.0} | {:.0} | {:.2}× | {:.2}–{:.2} | {:.1e} |\n",
            r.model,
            args.batch,
            args.seq_len,
            args.batches,
            args.repeats,
            args.rounds,
            r.ours,
            r.theirs,
            r.ratio,
            r.range.0,
            r.range.1,
            r.max_diff
        );
    }
    s
}
