//! What a new user hit, through the real binary: flag ranges, negative seeds, inapplicable flags,
//! the RM preflight under --quiet, help text, broken pipes, messages, resumed-run manifests,
//! default paths and --out files. Every run is a control baseline on the bundled sample with few
//! bootstrap resamples, so each test takes well under a second.

mod common;

use common::*;
use std::path::Path;

/// `manifest.json` of `runs/<id>` in `dir`.
fn manifest(dir: &Path, id: &str) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(dir.join("runs").join(id).join("manifest.json")).unwrap(),
    )
    .unwrap()
}

/// Makes the finished run `runs/<id>` look killed: no summary, no end time; `edit` changes the
/// manifest further.
fn unfinish(dir: &Path, id: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let run = dir.join("runs").join(id);
    std::fs::remove_file(run.join("summary.json")).unwrap();
    let mut m = manifest(dir, id);
    m["finished"] = serde_json::Value::Null;
    edit(&mut m);
    std::fs::write(run.join("manifest.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

/// An eval of `model` on the sample with 100 resamples, plus `extra` flags.
fn eval_model(dir: &Path, model: &str, extra: &[&str]) -> std::process::Output {
    let sample = sample();
    let mut args =
        vec!["eval", "--data", &sample, "--model", model, "--quiet", "--bootstrap", "100"];
    args.extend_from_slice(extra);
    prbench(&args, dir)
}

/// A baseline eval on the sample with 100 resamples, plus `extra` flags.
fn eval(dir: &Path, extra: &[&str]) -> std::process::Output {
    eval_model(dir, "baseline:longer", extra)
}

#[test]
fn oversized_bootstrap_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:longer", "--bootstrap", "4294967295"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let e = text(&out.stderr);
    assert!(e.contains("--bootstrap") && e.contains("from 100 to 1000000"), "{e}");
    assert!(!tmp.path().join("runs").exists());
    let help = text(&prbench(&["eval", "--help"], tmp.path()).stdout);
    assert!(help.contains("100 to 1,000,000"), "{help}");
}

#[test]
fn resumed_run_whose_manifest_is_out_of_range_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(eval(tmp.path(), &["--run-id", "r"]).status.success());
    unfinish(tmp.path(), "r", |m| m["bootstrap_resamples"] = 4_294_967_295u64.into());
    let out = eval(tmp.path(), &["--run-id", "r"]);
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(
        e.contains("`bootstrap_resamples` 4294967295, more than the 1000000 prbench allows"),
        "{e}"
    );
    assert!(!tmp.path().join("runs/r/summary.json").exists(), "refused, not re-run");
}

#[test]
fn resumed_run_manifest_says_when_it_was_resumed_and_keeps_its_start() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(eval(tmp.path(), &["--run-id", "r"]).status.success());
    let first = manifest(tmp.path(), "r");
    assert!(first.get("resumed").is_none(), "a run never resumed has no `resumed`");
    unfinish(tmp.path(), "r", |_| {});
    let out = eval(tmp.path(), &["--run-id", "r"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("(12 outcomes were written before it stopped)"),
        "{}",
        text(&out.stderr)
    );
    let m = manifest(tmp.path(), "r");
    assert_eq!(m["started"], first["started"]);
    let resumed = m["resumed"].as_array().expect("resumed list");
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0]["code_version"], first["code_version"]);
    let at = chrono::DateTime::parse_from_rfc3339(resumed[0]["at"].as_str().unwrap()).unwrap();
    let started = chrono::DateTime::parse_from_rfc3339(first["started"].as_str().unwrap()).unwrap();
    assert!(at >= started);
    assert!(m["finished"].is_string());
}

#[test]
fn resume_mismatch_prints_values_as_flags() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(eval(tmp.path(), &["--run-id", "r", "--limit", "2"]).status.success());
    unfinish(tmp.path(), "r", |_| {});
    let e = text(&eval(tmp.path(), &["--run-id", "r"]).stderr);
    assert!(e.contains("another `limit_per_subset` (--limit 2 there, no --limit now)"), "{e}");
    assert!(!e.contains("Some(") && !e.contains("None"), "{e}");
    let e = text(&eval(tmp.path(), &["--run-id", "r", "--limit", "2", "--seed", "7"]).stderr);
    assert!(e.contains("(--seed 42 there, --seed 7 now)"), "{e}");
}

#[test]
fn negative_seed_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:longer", "--seed", "-5"],
        tmp.path(),
    );
    let e = text(&out.stderr);
    assert!(!out.status.success());
    assert!(e.contains("--seed") && e.contains("takes a non-negative integer"), "{e}");
    assert!(!e.contains("unexpected argument"), "{e}");
}

#[test]
fn max_new_tokens_and_rm_batch_are_refused_where_they_do_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let e = text(&eval(tmp.path(), &["--max-new-tokens", "10"]).stderr);
    assert!(e.contains("--max-new-tokens applies to generated verdicts"), "{e}");
    // A gguf judge with the (default) logprob verdict; the flags are checked before the file is
    // looked for, so a missing file shows which check spoke.
    let gguf = "gguf:/no/such/model.gguf";
    let e = text(&eval_model(tmp.path(), gguf, &["--max-new-tokens", "10"]).stderr);
    assert!(e.contains("--max-new-tokens applies") && e.contains("logprob verdict"), "{e}");
    let e = text(&eval_model(tmp.path(), gguf, &["--rm-batch", "4"]).stderr);
    assert!(e.contains("--rm-batch applies to sequence-classification reward models"), "{e}");
    // Where it applies, the flag passes the check and the run goes on to load the model.
    let e = text(
        &eval_model(tmp.path(), gguf, &["--verdict", "generate", "--max-new-tokens", "10"]).stderr,
    );
    assert!(e.contains("model file `/no/such/model.gguf` not found"), "{e}");
    assert!(!tmp.path().join("runs").exists());
}

#[test]
fn quiet_still_prints_the_rm_preflight() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = common::seqcls_model(tmp.path());
    let out = eval_model(tmp.path(), &spec, &["--limit", "1", "--run-id", "q"]);
    let e = text(&out.stderr);
    assert!(out.status.success(), "{e}");
    assert!(e.contains("prbench preflight: condition `none`, example `sample-art-01`"), "{e}");
    assert!(e.lines().any(|l| l.starts_with("tokens: ") && l.contains("BOS tokens: 0")), "{e}");
}

#[test]
fn bon_mode_help_describes_rubric_and_rating_scores() {
    let tmp = tempfile::tempdir().unwrap();
    let judge = text(&prbench(&["bon", "judge", "--help"], tmp.path()).stdout);
    assert!(judge.contains("0/1/2") && judge.contains("0 (absent), 1 (partly)"), "{judge}");
    assert!(!judge.contains("Result: A") && !judge.contains("A vs B"), "{judge}");
    let score = text(&prbench(&["bon", "score", "--help"], tmp.path()).stdout);
    assert!(score.contains("1–9") && score.contains("Rating: <1-9>"), "{score}");
    assert!(!score.contains("Result: A") && !score.contains("A vs B"), "{score}");
}

#[test]
fn broken_pipe_on_stdout_is_a_quiet_exit() {
    let tmp = tempfile::tempdir().unwrap();
    // The reading end is closed before the child starts, so its first write fails.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args(["data", "stats", "--data", &sample()])
        .current_dir(tmp.path())
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let e = text(&out.stderr);
    assert!(!e.contains("panicked") && !e.contains("backtrace"), "{e}");
    assert_ne!(out.status.code(), Some(101), "{e}");
    assert_eq!(out.status.code(), Some(141), "128 + SIGPIPE, as a shell reports it: {e}");
}

#[test]
fn limit_is_labelled_a_quick_look_only_when_it_cut_and_counts_agree() {
    let tmp = tempfile::tempdir().unwrap();
    // 4 examples per subset: --limit 1 cuts, --limit 100 does not.
    let out = eval(tmp.path(), &["--run-id", "one", "--limit", "1"]);
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("3 of 12 examples from"), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(tmp.path().join("runs/one/summary.md")).unwrap();
    assert!(md.contains("limited to the first 1 example of each subset (a quick look"), "{md}");
    let out = eval(tmp.path(), &["--run-id", "all", "--limit", "100"]);
    assert!(out.status.success());
    let md = std::fs::read_to_string(tmp.path().join("runs/all/summary.md")).unwrap();
    assert!(!md.contains("quick look") && !md.contains("limited to"), "{md}");
    assert_eq!(
        manifest(tmp.path(), "all")["limit_per_subset"],
        100,
        "the manifest still records the flag"
    );
    let art =
        std::fs::read_to_string(repo().join("data/sample/Art_and_Entertainment.jsonl")).unwrap();
    std::fs::write(tmp.path().join("one.jsonl"), format!("{}\n", art.lines().next().unwrap()))
        .unwrap();
    let out = prbench(&["data", "validate", "--data", "one.jsonl"], tmp.path());
    assert!(
        text(&out.stdout).starts_with("ok: 1 example ("),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn default_data_works_from_any_folder_and_says_which_it_used() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(&["data", "validate"], tmp.path());
    let e = text(&out.stderr);
    assert!(out.status.success(), "{e}");
    assert!(text(&out.stdout).starts_with("ok: 12 examples"), "{}", text(&out.stdout));
    assert!(e.contains("no `data/sample` in the current folder; using the bundled sample"), "{e}");
    // From the repository root the folder there is used, silently.
    let out = prbench(&["data", "validate"], &repo());
    assert!(
        out.status.success() && !text(&out.stderr).contains("bundled sample"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn cache_stats_never_creates_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(&["cache", "stats"], tmp.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no cache file at `runs/cache.sqlite`"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing created");
    // On a real cache it only reads: the folder holds the same files afterwards.
    std::fs::create_dir_all(tmp.path().join("c")).unwrap();
    let cache = tmp.path().join("c/cache.sqlite");
    drop(prbench_eval::cache::Cache::open(&cache).unwrap());
    let listing = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = listing(&tmp.path().join("c"));
    let out = prbench(&["cache", "stats", "--cache", "c/cache.sqlite"], tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("0 entries"), "{}", text(&out.stdout));
    assert_eq!(listing(&tmp.path().join("c")), before);
}

#[test]
fn out_that_is_a_file_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("x"), "").unwrap();
    let e = text(&eval(tmp.path(), &["--out", "x"]).stderr);
    assert!(e.contains("--out `x` is a file; pass a folder for run folders"), "{e}");
    let out = prbench(
        &["train", "bt", "--data", &sample(), "--pairs", "target", "--out", "x"],
        tmp.path(),
    );
    let e = text(&out.stderr);
    assert!(!out.status.success());
    assert!(e.contains("--out `x` is a file; pass a folder for the BT model"), "{e}");
}

#[test]
fn dense_retrieve_puts_its_default_cache_next_to_out() {
    let dir = prbench_rm::embed::default_embedder_dir();
    if !dir.join("model.safetensors").is_file() {
        prbench_testkit::unavailable(format!(
            "MiniLM not found at {} (run scripts/setup.sh --tests)",
            dir.display()
        ));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("sub")).unwrap();
    let spec = format!("dense:{}", dir.display());
    let out = prbench(
        &[
            "retrieve",
            "--data",
            &sample(),
            "--subset",
            "art",
            "--retriever",
            &spec,
            "--out",
            "sub/ranked.jsonl",
            "--quiet",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("(sub/cache.sqlite)"), "{}", text(&out.stdout));
    assert!(tmp.path().join("sub/cache.sqlite").is_file());
    assert!(!tmp.path().join("runs").exists(), "no cache where the command was run");
}
