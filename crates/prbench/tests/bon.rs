//! `prbench bon` and `prbench correlate` with the real binary: sampling with the default
//! SmolLM2 GGUF on the bundled sample, the rubric judge, a baseline as the reward model, the
//! best-of-k table checked against a brute force over all k-subsets, and correlate on CSVs.

mod common;

use common::*;
use std::collections::HashMap;
use std::path::Path;

fn model_present() -> bool {
    prbench_testkit::smollm2().is_some()
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ok(out: &std::process::Output) {
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
}

/// The expected best-of-k by brute force: every k-subset, the top RM score's samples averaged.
fn brute_force(rm: &[f64], judge: &[f64], k: usize) -> f64 {
    let n = rm.len();
    let (mut total, mut count) = (0.0, 0usize);
    for mask in 0u32..(1 << n) {
        if mask.count_ones() as usize != k {
            continue;
        }
        let idx: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
        let top = idx.iter().map(|&i| rm[i]).fold(f64::NEG_INFINITY, f64::max);
        let tied: Vec<f64> = idx.iter().filter(|&&i| rm[i] == top).map(|&i| judge[i]).collect();
        total += tied.iter().sum::<f64>() / tied.len() as f64;
        count += 1;
    }
    total / count as f64
}

#[test]
fn sample_judge_score_report_on_the_sample() {
    if !model_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let common =
        ["--data", &sample(), "--n", "3", "--limit", "1", "--max-new-tokens", "24", "--quiet"];
    // One at a time, whatever the default `--gen-batch` is.
    let mut a: Vec<&str> =
        vec!["bon", "sample", "--out", "b1", "--no-cache", "--batch-size", "1", "--gen-batch", "1"];
    a.extend(common);
    ok(&prbench(&a, tmp.path()));
    // Another batch size and the cache: the same samples (seeded per example and index).
    let mut b: Vec<&str> = vec![
        "bon",
        "sample",
        "--out",
        "b2",
        "--cache",
        "c.sqlite",
        "--batch-size",
        "4",
        "--gen-batch",
        "1",
    ];
    b.extend(common);
    ok(&prbench(&b, tmp.path()));
    let s1 = jsonl(&tmp.path().join("b1/samples.jsonl"));
    let s2 = jsonl(&tmp.path().join("b2/samples.jsonl"));
    assert_eq!(s1.len(), 9, "3 subsets × 1 example × 3 samples");
    assert_eq!(s1, s2);
    let seeds: std::collections::HashSet<u64> =
        s1.iter().map(|s| s["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds.len(), 9);
    // A second run into a new folder answers from the cache.
    let mut c: Vec<&str> =
        vec!["bon", "sample", "--out", "b3", "--cache", "c.sqlite", "--gen-batch", "1"];
    c.extend(common);
    let out = prbench(&c, tmp.path());
    ok(&out);
    assert!(text(&out.stderr).contains("9 hits, 0 calls"), "{}", text(&out.stderr));
    // Four sequences per decode step (`--gen-batch 4`): the same samples as one at a time on
    // SmolLM2 (the engine decodes them alike), but another generator identity (the batch size
    // is in it: Q4_K weights round a step by its row count, docs/perf.md), so no cache hit.
    let mut b4: Vec<&str> = vec!["bon", "sample", "--gen-batch", "4"];
    b4.extend(common);
    let with = |more: &[&'static str]| -> Vec<String> {
        b4.iter().chain(more).map(|a| a.to_string()).collect()
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        prbench(&args, tmp.path())
    };
    let out = run(with(&["--out", "b4", "--cache", "c.sqlite"]));
    ok(&out);
    assert!(text(&out.stderr).contains("0 hits, 9 calls"), "{}", text(&out.stderr));
    let s4 = jsonl(&tmp.path().join("b4/samples.jsonl"));
    let texts = |s: &[serde_json::Value]| -> Vec<String> {
        s.iter().map(|x| x["text"].as_str().unwrap().to_string()).collect()
    };
    let manifest = std::fs::read_to_string(tmp.path().join("b4/manifest.json")).unwrap();
    assert!(manifest.contains("batched decoding of up to 4 sequences"), "{manifest}");
    assert_eq!(texts(&s4), texts(&s1), "decoded four at a time: the one-at-a-time samples");
    // Uncached again: reproducible, each in its own (example, index) row.
    ok(&run(with(&["--out", "b4again", "--no-cache"])));
    let again = jsonl(&tmp.path().join("b4again/samples.jsonl"));
    assert_eq!(texts(&again), texts(&s1));
    let keys = |s: &[serde_json::Value]| -> Vec<(String, u64)> {
        s.iter()
            .map(|x| {
                (x["example_id"].as_str().unwrap().to_string(), x["sample_index"].as_u64().unwrap())
            })
            .collect()
    };
    assert_eq!(keys(&s4), keys(&s1));
    // The rubric judge generating its scores, 4 at a time: reproducible, one judgement per
    // sample in the samples' order, as many as one at a time gives.
    for (name, batch) in [("gen1", "1"), ("gen4", "4"), ("gen4again", "4")] {
        ok(&prbench(
            &[
                "bon",
                "judge",
                "--samples",
                "b4",
                "--name",
                name,
                "--mode",
                "generate",
                "--max-new-tokens",
                "24",
                "--gen-batch",
                batch,
                "--quiet",
                "--no-cache",
            ],
            tmp.path(),
        ));
    }
    let judged = |name: &str| jsonl(&tmp.path().join(format!("b4/judgements/{name}.jsonl")));
    let raw = |name: &str| -> Vec<String> {
        judged(name).iter().map(|j| j["raw"].as_str().unwrap_or_default().to_string()).collect()
    };
    assert_eq!(raw("gen4again"), raw("gen4"));
    assert_eq!(keys(&judged("gen4")), keys(&s4));
    assert_eq!(keys(&judged("gen1")), keys(&s4));
    assert!(raw("gen4").iter().all(|r| !r.is_empty()), "{:?}", raw("gen4"));
    // --gen-batch where nothing is generated is refused, naming what it applies to.
    let refused = prbench(
        &["bon", "judge", "--samples", "b4", "--name", "lp", "--gen-batch", "2", "--no-cache"],
        tmp.path(),
    );
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("--gen-batch applies to --mode generate"));
    // An existing folder is refused.
    let again = prbench(&a, tmp.path());
    assert!(!again.status.success() && text(&again.stderr).contains("already holds samples"));

    ok(&prbench(
        &["bon", "judge", "--samples", "b1", "--name", "smol", "--quiet", "--no-cache"],
        tmp.path(),
    ));
    let judgements = jsonl(&tmp.path().join("b1/judgements/smol.jsonl"));
    assert_eq!(judgements.len(), 9);
    for j in &judgements {
        let scores = j["scores"].as_array().expect("logprob judgements always have scores");
        let probs = j["probabilities"].as_array().unwrap();
        assert_eq!(scores.len(), probs.len());
        for (score, p) in scores.iter().zip(probs) {
            let p: Vec<f64> = p.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            // The score is the most probable of 0, 1, 2 (greedy decoding restricted to them).
            let best = (0..3).fold(0, |b, i| if p[i] > p[b] { i } else { b });
            assert_eq!(score.as_u64().unwrap() as usize, best, "{j}");
        }
    }

    let out = prbench(
        &["bon", "score", "--samples", "b1", "--model", "baseline:longer", "--quiet", "--no-cache"],
        tmp.path(),
    );
    ok(&out);
    let scores = jsonl(&tmp.path().join("b1/scores/baseline-longer.jsonl"));
    for (s, sc) in s1.iter().zip(&scores) {
        // The longer baseline scores the answer's length in characters.
        assert_eq!(
            sc["score"].as_f64().unwrap(),
            s["text"].as_str().unwrap().chars().count() as f64,
            "{sc}"
        );
    }
    // The table printed after scoring, checked against a brute force from the files.
    let table: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("b1/bon-smol.json")).unwrap(),
    )
    .unwrap();
    let mut rm: HashMap<String, Vec<f64>> = HashMap::new();
    let mut judge: HashMap<String, Vec<f64>> = HashMap::new();
    for (sc, j) in scores.iter().zip(&judgements) {
        let id = sc["example_id"].as_str().unwrap().to_string();
        rm.entry(id.clone()).or_default().push(sc["score"].as_f64().unwrap());
        let js: Vec<f64> =
            j["scores"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        judge.entry(id).or_default().push(js.iter().sum::<f64>() / js.len() as f64);
    }
    let row =
        table["rows"].as_array().unwrap().iter().find(|r| r["name"] == "baseline-longer").unwrap();
    assert_eq!(row["spec"], "baseline:longer");
    for point in row["curve"].as_array().unwrap() {
        let k = point["k"].as_u64().unwrap() as usize;
        let expected: f64 =
            rm.keys().map(|id| brute_force(&rm[id], &judge[id], k)).sum::<f64>() / rm.len() as f64;
        assert!(
            (point["overall"].as_f64().unwrap() - expected).abs() < 1e-9,
            "k={k}: {point} vs {expected}"
        );
    }
    assert_eq!(table["ks"], serde_json::json!([1, 2, 3]));
    let md = std::fs::read_to_string(tmp.path().join("b1/bon-smol.md")).unwrap();
    assert!(md.contains("| `baseline-longer` | 3 |"), "{md}");
}

#[test]
fn correlate_on_csvs_by_hand_and_refuses_unmatched_models() {
    let tmp = tempfile::tempdir().unwrap();
    // Ranks: benchmark 1 2 3 4, downstream 1 3 2 4. rho = 1 − 6·2/(4·15) = 0.8; tau-b: 5
    // concordant, 1 discordant pair → 4/6 = 0.6667.
    std::fs::write(tmp.path().join("bench.csv"), "model,score\na,0.5\nb,0.6\nc,0.7\nd,0.8\n")
        .unwrap();
    std::fs::write(tmp.path().join("down.csv"), "model,score\nd,1.5\nc,1.1\nb,1.2\na,1.0\n")
        .unwrap();
    let out = prbench(
        &[
            "correlate",
            "--benchmark",
            "bench.csv",
            "--downstream",
            "down.csv",
            "--bootstrap",
            "1000",
            "--out",
            "corr.md",
        ],
        tmp.path(),
    );
    ok(&out);
    let md = text(&out.stdout);
    assert!(md.contains("| Spearman rho | 0.8000 |"), "{md}");
    assert!(md.contains("| Kendall tau-b | 0.6667 |"), "{md}");
    assert!(md.contains("exact over all 24 pairings"), "{md}");
    assert!(tmp.path().join("corr.json").is_file());
    // A report is never overwritten.
    let again = prbench(
        &["correlate", "--benchmark", "bench.csv", "--downstream", "down.csv", "--out", "corr.md"],
        tmp.path(),
    );
    assert!(
        !again.status.success() && text(&again.stderr).contains("exists"),
        "{}",
        text(&again.stderr)
    );
    std::fs::write(tmp.path().join("down2.csv"), "model,score\nd,1.5\nc,1.1\nb,1.2\ne,1.0\n")
        .unwrap();
    let out = prbench(
        &["correlate", "--benchmark", "bench.csv", "--downstream", "down2.csv"],
        tmp.path(),
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("Only benchmark: a") && err.contains("Only downstream: e"), "{err}");
    // Flags that only apply to run summaries or BoN tables are refused on CSVs, not ignored.
    for (flag, value, says) in [
        ("--k", Some("2"), "--k picks a column"),
        ("--metric", Some("debiased"), "--metric picks"),
        ("--with-baselines", None, "--with-baselines reads"),
    ] {
        let mut cmd =
            vec!["correlate", "--benchmark", "bench.csv", "--downstream", "down.csv", flag];
        cmd.extend(value);
        let out = prbench(&cmd, tmp.path());
        assert!(
            !out.status.success() && text(&out.stderr).contains(says),
            "{flag}: {}",
            text(&out.stderr)
        );
    }
}

/// Writes a BoN folder by hand, as `bon sample` would have: for each `(example id, answers)`
/// of the dataset at `data`, one sample per answer, and the folder's manifest (with `data` as
/// its dataset spec and the dataset's real hash).
fn write_bon_folder(dir: &Path, data: &str, answers: &[(&str, &[&str])]) {
    use prbench_downstream::bon::folder::SamplesManifest;
    use prbench_downstream::bon::sample::{BonSample, SampleSettings};
    let loaded = prbench_data::load::load(data, &[]).unwrap();
    let mut samples = Vec::new();
    for (id, texts) in answers {
        let ex = loaded.examples.iter().find(|e| e.id == *id).unwrap();
        for (i, t) in texts.iter().enumerate() {
            samples.push(BonSample {
                example_id: ex.id.clone(),
                subset: ex.subset.clone(),
                sample_index: i,
                seed: i as u64,
                text: (*t).into(),
                posts_shown: 0,
                posts_dropped: 0,
                tokens: Default::default(),
                hit_max_new_tokens: false,
                error: None,
            });
        }
    }
    let manifest = SamplesManifest {
        code_version: "test".into(),
        created: "2026-01-01T00:00:00Z".into(),
        dataset: data.into(),
        subsets: vec![],
        dataset_kind: loaded.kind.clone(),
        dataset_hash: loaded.hash.clone(),
        policy: prbench_models::ModelIdentity { spec: "hand-written".into(), ..Default::default() },
        template_hash: "none".into(),
        retriever: "bm25".into(),
        settings: SampleSettings { n: answers[0].1.len(), ..SampleSettings::default() },
        per_subset: None,
        distinct_questions: false,
        example_ids: answers.iter().map(|(id, _)| (*id).to_string()).collect(),
    };
    std::fs::create_dir_all(dir).unwrap();
    prbench_downstream::bon::files::write_json(&dir.join("manifest.json"), &manifest).unwrap();
    prbench_downstream::bon::files::write_jsonl(&dir.join("samples.jsonl"), &samples).unwrap();
}

/// Rubric aspects of the bundled sample's example `id`.
fn aspects(id: &str) -> usize {
    prbench_data::load::load(&sample(), &[])
        .unwrap()
        .examples
        .iter()
        .find(|e| e.id == id)
        .unwrap()
        .rubric_aspects
        .len()
}

#[test]
fn bon_judge_logprob_caches_every_call_and_a_killed_run_resumes() {
    if !model_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let answers: [(&str, &[&str]); 2] = [
        (
            "sample-art-01",
            &[
                "Try a short film course first.",
                "Watch the classics and take notes.",
                "Make one film a month.",
            ],
        ),
        (
            "sample-art-02",
            &[
                "Start with watercolour postcards.",
                "Join a local sketching group.",
                "Paint what you see every day.",
            ],
        ),
    ];
    write_bon_folder(&tmp.path().join("b"), &sample(), &answers);
    // One next-token call per (sample, rubric aspect).
    let calls = 3 * (aspects("sample-art-01") + aspects("sample-art-02"));
    let judge = |name: &str, cache: &str| {
        prbench(
            &["bon", "judge", "--samples", "b", "--name", name, "--cache", cache, "--quiet"],
            tmp.path(),
        )
    };
    let out = judge("first", "c1.sqlite");
    ok(&out);
    assert!(text(&out.stderr).contains(&format!("0 hits, {calls} calls")), "{}", text(&out.stderr));
    let first = jsonl(&tmp.path().join("b/judgements/first.jsonl"));
    assert_eq!(first.len(), 6);
    // Again on the same cache: no model call, the same judgements.
    let out = judge("again", "c1.sqlite");
    ok(&out);
    assert!(text(&out.stderr).contains(&format!("{calls} hits, 0 calls")), "{}", text(&out.stderr));
    assert_eq!(jsonl(&tmp.path().join("b/judgements/again.jsonl")), first);

    // Killed halfway on a fresh cache, then the same command again: what was stored is not
    // called again, and the judgements equal the uninterrupted run's.
    let c2 = tmp.path().join("c2.sqlite");
    let args =
        ["bon", "judge", "--samples", "b", "--name", "killed", "--cache", "c2.sqlite", "--quiet"];
    let kept = common::kill_once_cached(&args, tmp.path(), &c2, 2);
    assert!(!tmp.path().join("b/judgements/killed.jsonl").exists(), "killed before the end");
    assert!(kept < calls, "killed before the last call");
    let out = prbench(&args, tmp.path());
    ok(&out);
    assert!(
        text(&out.stderr).contains(&format!("{kept} hits, {} calls", calls - kept)),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(jsonl(&tmp.path().join("b/judgements/killed.jsonl")), first);
}

#[test]
fn bon_judge_refuses_examples_without_rubric_before_loading_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    // The sample's Art file with the rubric of its second example emptied.
    let rows: Vec<String> =
        std::fs::read_to_string(repo().join("data/sample/Art_and_Entertainment.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
                if r["id"] == "sample-art-02" {
                    r["rubric_aspects"] = serde_json::json!([]);
                }
                r.to_string()
            })
            .collect();
    let data = tmp.path().join("art.jsonl");
    std::fs::write(&data, rows.join("\n") + "\n").unwrap();
    write_bon_folder(
        &tmp.path().join("b"),
        data.to_str().unwrap(),
        &[("sample-art-01", &["a", "b"]), ("sample-art-02", &["c", "d"])],
    );
    // A judge file that does not exist: the rubric check must come first.
    let out = prbench(
        &[
            "bon",
            "judge",
            "--samples",
            "b",
            "--judge",
            "gguf:/nonexistent/judge.gguf",
            "--no-cache",
        ],
        tmp.path(),
    );
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "1 example without rubric aspects: `sample-art-02` (Art_and_Entertainment, 2 samples)"
        ),
        "{err}"
    );
    assert!(
        !err.contains("rubric judge `"),
        "refused before announcing or loading the judge: {err}"
    );
    assert!(!tmp.path().join("b/judgements").exists());
}

#[test]
fn bon_paths_cache_next_to_the_folder_absolute_dataset_and_clear_errors() {
    use prbench_fault_server::{FaultServer, ServerConfig};
    let tmp = tempfile::tempdir().unwrap();
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let policy = format!("openai:fault-model@{}", server.openai_base());
    // The dataset by a relative path, as a user types it.
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::copy(
        repo().join("data/sample/Art_and_Entertainment.jsonl"),
        data.join("Art_and_Entertainment.jsonl"),
    )
    .unwrap();
    std::fs::create_dir(tmp.path().join("work")).unwrap();
    let sample_args = |out: &str| -> Vec<String> {
        [
            "bon", "sample", "--data", "data", "--policy", &policy, "--out", out, "--n", "2",
            "--limit", "1", "--quiet",
        ]
        .map(String::from)
        .to_vec()
    };
    let run = |args: &[String], cwd: &Path| {
        prbench(&args.iter().map(String::as_str).collect::<Vec<_>>(), cwd)
    };
    ok(&run(&sample_args("work/b"), tmp.path()));
    // The default cache sits in the folder's parent, not under the working folder.
    assert!(tmp.path().join("work/cache.sqlite").is_file());
    assert!(!tmp.path().join("runs").exists() && !tmp.path().join("cache.sqlite").exists());
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("work/b/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["dataset"].as_str().unwrap(),
        std::fs::canonicalize(&data).unwrap().to_str().unwrap()
    );
    // Judged from another folder: the stored absolute path finds the data.
    let judge =
        ["bon", "judge", "--samples", "b", "--judge", &policy, "--mode", "generate", "--quiet"]
            .map(String::from)
            .to_vec();
    ok(&run(&judge, &tmp.path().join("work")));
    assert!(tmp.path().join("work/b/judgements").is_dir());
    // The data moved: the error says to pass --data.
    std::fs::rename(&data, tmp.path().join("moved")).unwrap();
    let mut again = judge.clone();
    again.extend(["--name", "second"].map(String::from));
    let out = run(&again, &tmp.path().join("work"));
    assert!(
        !out.status.success()
            && text(&out.stderr).contains("if it has moved, pass --data with its path now"),
        "{}",
        text(&out.stderr)
    );
    again.extend(["--data".to_string(), tmp.path().join("moved").display().to_string()]);
    ok(&run(&again, &tmp.path().join("work")));
    // --out (or --samples) naming a file: said plainly, before anything runs.
    std::fs::rename(tmp.path().join("moved"), &data).unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "x").unwrap();
    for out in ["notes.txt", "notes.txt/b"] {
        let o = run(&sample_args(out), tmp.path());
        let err = text(&o.stderr);
        assert!(
            !o.status.success()
                && err.contains(&format!("--out `{out}` "))
                && err.contains("pass a new folder path"),
            "{err}"
        );
        assert!(
            err.contains(if out == "notes.txt" {
                "is a file"
            } else {
                "lies under `notes.txt`, which is a file"
            }),
            "{err}"
        );
    }
    let o = prbench(&["bon", "judge", "--samples", "notes.txt"], tmp.path());
    assert!(
        !o.status.success() && text(&o.stderr).contains("a file, not a folder"),
        "{}",
        text(&o.stderr)
    );
}

/// `bon score --model pal:DIR` scores each sample for its example's user: a sample id
/// (`{example}#{i}`) is not a dataset row, so without the mapping every sample would be refused
/// as an unknown user. The scores must equal the PAL model's own scores of the same answers
/// for each example's user (computed here through the library).
#[test]
fn bon_score_with_pal_scores_each_sample_for_its_user() {
    let emb = prbench_rm::embed::default_embedder_dir();
    if !emb.join("model.safetensors").is_file() {
        prbench_testkit::unavailable(format!(
            "MiniLM not found at {} (run scripts/setup.sh --tests)",
            emb.display()
        ));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/psoups-mini");
    let data = format!("psoups:{}", dir.display());
    let train = [
        "train",
        "pal",
        "--variant",
        "a",
        "--k",
        "2",
        "--data",
        &data,
        "--pairs",
        "history",
        "--out",
        "pal",
        "--epochs",
        "3",
    ];
    ok(&prbench(&train, tmp.path()));
    let answers: [(&str, &[&str]); 3] = [
        ("friendly_unfriendly-0000", &["Sure thing, buddy!", "Request acknowledged."]),
        ("student_phd-0000", &["Think of it like a recipe.", "Consider the Hamiltonian."]),
        ("student_phd-0001", &["Short answer: yes.", "It depends on the boundary conditions."]),
    ];
    write_bon_folder(&tmp.path().join("bon"), &data, &answers);
    ok(&prbench(
        &["bon", "score", "--samples", "bon", "--model", "pal:pal", "--name", "pal-a"],
        tmp.path(),
    ));
    let scores = jsonl(&tmp.path().join("bon/scores/pal-a.jsonl"));
    assert_eq!(scores.len(), 6);

    use prbench_models::{ChatPrompt, RewardModel, RmInput, RmRequest};
    let model = prbench_train::pal::PalRewardModel::load(&tmp.path().join("pal"), &emb).unwrap();
    let loaded = prbench_data::load::load(&data, &[]).unwrap();
    for s in &scores {
        let id = s["example_id"].as_str().unwrap();
        let i = s["sample_index"].as_u64().unwrap() as usize;
        let ex = loaded.examples.iter().find(|e| e.id == id).unwrap();
        let answer = answers.iter().find(|(e, _)| *e == id).unwrap().1[i];
        // Under `none` the context is the question alone, as bon score composes it.
        let req = RmRequest {
            input: RmInput {
                example_id: id.into(),
                question: ex.question.clone(),
                context: None,
                answer: answer.into(),
            },
            prompt: ChatPrompt::default(),
        };
        let want = f64::from(model.score(&[req]).unwrap()[0].value);
        let got = s["score"].as_f64().unwrap_or_else(|| panic!("no score: {s}"));
        assert!((got - want).abs() < 1e-5, "{id}#{i}: bon score {got}, the model's own {want}");
    }
}
