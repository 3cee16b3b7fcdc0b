//! `prbench eval` run again with the same `--run-id`, through the real binary. One rule holds for
//! an existing run folder (docs/guide/src/eval-runs.md, "Rerunning with the same `--run-id`"):
//! other settings are refused by name; a finished run with every item answered is reused (its table
//! printed, no model call), with one condition as with several; a killed run, one whose backend
//! failed on items, or one missing a file is resumed from the cache; run files that cannot be read
//! or disagree are refused, naming the file. Also the slot-balance warning of limited runs, which
//! counts every evaluated item. Models are control baselines and the loopback fault server, so
//! every test takes a few seconds.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use prbench_fault_server::{Fault, FaultRule, FaultServer, ServerConfig};

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn read_outcomes(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("outcomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// An outcome without its wall time, the one field two runs of the same item differ in.
fn comparable(mut o: serde_json::Value) -> serde_json::Value {
    o.as_object_mut().unwrap().remove("latency_ms");
    o
}

/// Chat requests the judge made (the load-time probe asks for one token and is left out).
fn judge_requests(server: &FaultServer) -> usize {
    server
        .log()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions") && r.body["max_tokens"] != 1)
        .count()
}

/// `eval` of `model` on the bundled sample with 100 resamples, plus `extra` flags.
fn eval(dir: &Path, model: &str, extra: &[&str]) -> Output {
    let data = sample();
    let mut args = vec!["eval", "--data", &data, "--model", model, "--quiet", "--bootstrap", "100"];
    args.extend_from_slice(extra);
    prbench(&args, dir)
}

fn ok(out: &Output) {
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn rerunning_a_finished_run_reuses_it_and_prints_its_table_with_one_condition_as_with_several() {
    let tmp = tempfile::tempdir().unwrap();
    let first = eval(tmp.path(), "baseline:longer", &["--run-id", "one"]);
    ok(&first);
    let manifest = std::fs::read_to_string(tmp.path().join("runs/one/manifest.json")).unwrap();
    let again = eval(tmp.path(), "baseline:longer", &["--run-id", "one"]);
    ok(&again);
    let err = text(&again.stderr);
    assert!(err.contains("condition `none`: run `one` finished already with these settings; reusing it (no item scored again)"), "{err}");
    assert!(text(&again.stdout).contains("| micro |"), "{}", text(&again.stdout));
    assert_eq!(
        text(&again.stdout),
        text(&first.stdout),
        "the reused run prints the table it printed when it ran"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("runs/one/manifest.json")).unwrap(),
        manifest,
        "a reused run is not written to"
    );

    // Several conditions: each reused run prints its table, then the matrix as before.
    let multi = ["--condition", "none,oracle", "--run-id", "m"];
    let first = eval(tmp.path(), "baseline:longer", &multi);
    ok(&first);
    let again = eval(tmp.path(), "baseline:longer", &multi);
    ok(&again);
    let err = text(&again.stderr);
    assert!(
        err.contains("run `m-none` finished already with these settings; reusing it")
            && err.contains("run `m-oracle` finished already"),
        "{err}"
    );
    assert_eq!(text(&again.stdout), text(&first.stdout), "the same tables, matrix and guide");

    // The same id with another setting is refused, naming it, for one condition as for several.
    let out = eval(tmp.path(), "baseline:longer", &["--run-id", "one", "--seed", "7"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .contains("it is a finished run with another `seed` (--seed 42 there, --seed 7 now)"),
        "{}",
        text(&out.stderr)
    );
    let out = eval(tmp.path(), "baseline:longer", &["--run-id", "one", "--limit", "2"]);
    assert!(
        text(&out.stderr).contains("another `limit_per_subset` (no --limit there, --limit 2 now)"),
        "{}",
        text(&out.stderr)
    );
    let out = eval(tmp.path(), "baseline:shorter", &["--run-id", "one"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("it is a finished run with another `model`"),
        "{}",
        text(&out.stderr)
    );
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "baseline:longer", "--quiet", "--run-id", "one"],
        tmp.path(),
    );
    assert!(
        text(&out.stderr).contains(
            "another `bootstrap_resamples` (--bootstrap 100 there, --bootstrap 10000 now)"
        ),
        "{}",
        text(&out.stderr)
    );
    let out = eval(
        tmp.path(),
        "baseline:longer",
        &["--condition", "none,oracle", "--run-id", "m", "--seed", "3"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("run folder `runs/m-none`: it is a finished run with another `seed` (--seed 42 there, --seed 3 now)"), "{}", text(&out.stderr));
}

#[test]
fn a_run_cut_short_by_a_dead_server_is_finished_by_rerunning_the_same_command() {
    let tmp = tempfile::tempdir().unwrap();
    let data = write_dataset(tmp.path(), 40);
    let slow = ServerConfig::default().with_delay(Duration::from_millis(150));
    let server = FaultServer::start(slow.clone()).unwrap();
    let addr = server.addr();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let args = [
        "eval",
        "--data",
        &data,
        "--model",
        &model,
        "--run-id",
        "big",
        "--quiet",
        "--bootstrap",
        "200",
        "--concurrency",
        "2",
        "--batch-size",
        "4",
        "--max-retries",
        "0",
    ];
    let child = Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args(args)
        .current_dir(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while judge_requests(&server) < 12 {
        assert!(started.elapsed() < Duration::from_secs(60), "the run never got going");
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(server); // the server dies: every item still to come fails
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "more errors than the default 1%: {err}");
    let dir = tmp.path().join("runs/big");
    let before = read_outcomes(&dir);
    assert_eq!(before.len(), 40, "the run went to its end");
    let failed = before.iter().filter(|o| !o["error"].is_null()).count();
    assert!(failed > 0 && failed < 40, "{failed} failed");
    assert!(
        err.contains(&format!("Rerun the same command to retry exactly the {failed} failed items in the same run folder: the items that succeeded come from the cache.")),
        "{err}"
    );

    // The server is back on its address: the same command retries exactly the failed items.
    let server = FaultServer::start_on(addr, slow).unwrap();
    let out = prbench(&args, tmp.path());
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("run `big` finished with the backend failing on {failed} of its 40 items; running it again in its folder retries those items, the other {} come from the cache", 40 - failed)), "{err}");
    assert!(err.contains(&format!("{} hits, {failed} calls", 40 - failed)), "{err}");
    assert_eq!(judge_requests(&server), failed, "one request per failed item, none for the others");
    let after = read_outcomes(&dir);
    assert_eq!(after.len(), 40);
    assert!(after.iter().all(|o| o["error"].is_null()), "every item answered now");
    for (b, a) in before.iter().zip(&after) {
        if b["error"].is_null() {
            assert_eq!(
                comparable(a.clone()),
                comparable(b.clone()),
                "an item answered before keeps its outcome"
            );
        }
    }
    let manifest = read_json(&dir.join("manifest.json"));
    assert_eq!(manifest["resumed"].as_array().map(Vec::len), Some(1), "{manifest}");
    assert!(manifest["finished"].is_string());

    // Finished with every item answered: the same command reuses it, prints its table and
    // calls nothing.
    let out = prbench(&args, tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "run `big` finished already with these settings; reusing it (no item scored again)"
        ),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(judge_requests(&server), failed, "no request");
    let summary: prbench_report::Summary =
        serde_json::from_value(read_json(&dir.join("summary.json"))).unwrap();
    assert_eq!(text(&out.stdout), format!("{}\n", prbench_report::markdown::render(&summary)));
}

#[test]
fn a_damaged_run_file_is_named_instead_of_the_run_being_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |id: &str| eval(tmp.path(), "baseline:longer", &["--run-id", id]);
    ok(&run("r"));
    let dir = tmp.path().join("runs/r");
    let summary = read_json(&dir.join("summary.json"));
    let outcomes = std::fs::read_to_string(dir.join("outcomes.jsonl")).unwrap();

    // What `prbench report --out runs/r/summary.json` used to leave: an HTML page.
    std::fs::write(
        dir.join("summary.json"),
        "<!DOCTYPE html>\n<html><head><title>prbench report</title></head></html>\n",
    )
    .unwrap();
    let out = run("r");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("run folder `runs/r`: its summary.json holds an HTML page, not a run summary (a report written over it?), so the run can be neither reused nor resumed"), "{err}");
    assert!(err.contains("move the file out of the folder and rerun this command"), "{err}");
    assert!(
        err.contains("caused by: expected value at line 1 column 1"),
        "the parse error is kept as the cause: {err}"
    );
    assert!(!err.contains("reusing"), "{err}");

    // Doing what it says: the run is redone into its folder and its summary is back.
    std::fs::rename(dir.join("summary.json"), tmp.path().join("summary.html")).unwrap();
    let out = run("r");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(
            "run `r`: a finished run whose summary.json is missing; running it again in its folder"
        ),
        "{}",
        text(&out.stderr)
    );
    let redone = read_json(&dir.join("summary.json"));
    assert_eq!(redone["rows"], summary["rows"]);
    assert_eq!(redone["baselines"], summary["baselines"]);

    // Another run's summary in its place.
    ok(&run("s"));
    std::fs::copy(tmp.path().join("runs/s/summary.json"), dir.join("summary.json")).unwrap();
    let err = text(&run("r").stderr);
    assert!(err.contains("its summary.json is the summary of run `s`"), "{err}");
    std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(&redone).unwrap())
        .unwrap();
    ok(&run("r"));

    // An outcome lost.
    let short: String = outcomes.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("outcomes.jsonl"), short).unwrap();
    let err = text(&run("r").stderr);
    assert!(
        err.contains("its outcomes.jsonl holds 11 outcomes where the manifest records 12 examples"),
        "{err}"
    );
    std::fs::write(dir.join("outcomes.jsonl"), &outcomes).unwrap();

    // A manifest that does not parse: the run's settings are unknown.
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    std::fs::write(dir.join("manifest.json"), &manifest[..manifest.len() / 2]).unwrap();
    let out = run("r");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("its manifest.json does not parse as a run manifest")
            && err.contains("remove the folder and rerun this command"),
        "{err}"
    );
    std::fs::write(dir.join("manifest.json"), &manifest).unwrap();
    ok(&run("r"));

    // Several conditions: a damaged summary stops the rerun instead of being reused in the matrix.
    let multi = ["--condition", "none,oracle", "--run-id", "m"];
    ok(&eval(tmp.path(), "baseline:longer", &multi));
    std::fs::write(tmp.path().join("runs/m-oracle/summary.json"), "{}").unwrap();
    let out = eval(tmp.path(), "baseline:longer", &multi);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            "run folder `runs/m-oracle`: its summary.json does not parse as a run summary"
        ),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn slot_warning_of_a_sampled_run_does_not_suggest_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let out = eval(tmp.path(), "baseline:slot-a", &["--limit", "1", "--sample", "--run-id", "s"]);
    ok(&out);
    let err = text(&out.stderr);
    // With seed 42 each subset's smallest sha256(seed, id) key is the first of its slot order,
    // which holds chosen in A (the table in prbench-eval's slots test, computed with hashlib):
    // the sample is art-02, life-03 and soc-04, all three in A.
    assert!(err.contains("the 3 evaluated items (errored ones included) hold `chosen` in slot A 3 times and in slot B 0 times"), "{err}");
    assert!(
        err.contains("a --sample balances the slots only to within one item per subset")
            && err.contains("a larger --limit"),
        "{err}"
    );
    assert!(!err.contains("--limit N --sample"), "{err}");
}

#[test]
fn slot_warning_counts_the_items_the_backend_failed_on() {
    let tmp = tempfile::tempdir().unwrap();
    // With seed 42, `--limit 2 --sample` takes art-02 (A), art-01 (B), life-03 (A), life-01 (B),
    // soc-04 (A), soc-03 (B): balanced. The server fails on art-02 and life-03, so the items
    // scored hold chosen in A once and in B three times.
    let server = FaultServer::start(
        ServerConfig::default()
            .with_rule(FaultRule::new("acoustic guitar", Fault::ServerError))
            .with_rule(FaultRule::new("retirement plan", Fault::ServerError)),
    )
    .unwrap();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let out = eval(
        tmp.path(),
        &model,
        &[
            "--limit",
            "2",
            "--sample",
            "--run-id",
            "f",
            "--max-retries",
            "0",
            "--max-error-rate",
            "1",
        ],
    );
    ok(&out);
    let err = text(&out.stderr);
    let failed: Vec<String> = read_outcomes(&tmp.path().join("runs/f"))
        .into_iter()
        .filter(|o| !o["error"].is_null())
        .map(|o| o["example_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(failed, ["sample-art-02", "sample-life-03"]);
    let position = &read_json(&tmp.path().join("runs/f/summary.json"))["position_bias"];
    assert_eq!(
        (position["n_chosen_in_a"].as_u64(), position["n_chosen_in_b"].as_u64()),
        (Some(1), Some(3)),
        "the scored items lean"
    );
    assert!(
        !err.contains("hold `chosen` in slot A"),
        "the six evaluated items are balanced: {err}"
    );
    assert!(
        err.contains(
            "Rerun the same command to retry exactly the 2 failed items in the same run folder"
        ),
        "{err}"
    );
}

#[test]
fn a_summary_whose_figures_were_edited_is_refused_not_shown_as_the_runs_result() {
    let tmp = tempfile::tempdir().unwrap();
    let run = || eval(tmp.path(), "baseline:longer", &["--run-id", "e"]);
    ok(&run());
    let path = tmp.path().join("runs/e/summary.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let mut summary: serde_json::Value = serde_json::from_str(&original).unwrap();
    let micro =
        summary["rows"].as_array_mut().unwrap().iter_mut().find(|r| r["label"] == "micro").unwrap();
    let n = micro["n"].as_u64().unwrap();
    let correct = micro["correct"].as_u64().unwrap();
    // The counts edited (one wrong item made correct, or one correct made wrong): they no longer
    // match outcomes.jsonl.
    let wrong = micro["wrong"].as_u64().unwrap();
    let (edited_correct, edited_wrong) =
        if wrong > 0 { (correct + 1, wrong - 1) } else { (correct - 1, wrong + 1) };
    micro["correct"] = edited_correct.into();
    micro["wrong"] = edited_wrong.into();
    std::fs::write(&path, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    let out = run();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("summary.json")
            && err.contains(&format!("{n} items: {edited_correct} correct"))
            && err.contains(&format!("{n} items: {correct} correct")),
        "{err}"
    );
    assert!(!err.contains("reusing"), "{err}");
    // Only the accuracy edited, the counts left as they were.
    let mut summary: serde_json::Value = serde_json::from_str(&original).unwrap();
    let micro =
        summary["rows"].as_array_mut().unwrap().iter_mut().find(|r| r["label"] == "micro").unwrap();
    micro["strict"] = 0.99.into();
    std::fs::write(&path, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    let err = text(&run().stderr);
    assert!(err.contains("gives micro accuracy Some(0.99)") && !err.contains("reusing"), "{err}");
    // The untouched summary is reused again.
    std::fs::write(&path, &original).unwrap();
    let out = run();
    assert!(
        out.status.success() && text(&out.stderr).contains("reusing it"),
        "{}",
        text(&out.stderr)
    );
}
