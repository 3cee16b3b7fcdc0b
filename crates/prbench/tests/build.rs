//! `prbench build` end to end against the fault server as generator and judge: the output
//! loads with `prbench eval`, a killed build resumes with no call repeated (counted at the
//! server), and bad input is refused naming file, row and field before anything is lost.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::{prbench, sample, text};
use prbench_fault_server::{FaultServer, ServerConfig};

const CHOSEN: &str = "A tailored answer that fits this user well.";
const REJECTED: &str = "A general answer that suits anyone at all.";

fn audit(chosen_first: bool) -> String {
    let (one, two) =
        if chosen_first { ([5, 5, 5, 5], [5, 5, 4, 1]) } else { ([5, 5, 4, 1], [5, 5, 5, 5]) };
    let dims = ["factuality", "relevance", "helpfulness", "rubric fit"];
    let mut out = String::new();
    for (n, s) in [(1, one), (2, two)] {
        for (d, score) in dims.iter().zip(s) {
            out.push_str(&format!("Answer {n} {d}: {score} - ok\n"));
        }
    }
    out + &format!("Better fit: {}", if chosen_first { 1 } else { 2 })
}

/// A server that writes the pairs and audits them; `delay_ms` per answer.
fn server(delay_ms: u64) -> FaultServer {
    FaultServer::start(
        ServerConfig::default()
            .with_delay(std::time::Duration::from_millis(delay_ms))
            .with_reply(format!("Answer 1:\n{CHOSEN}"), audit(true))
            .with_reply(format!("Answer 1:\n{REJECTED}"), audit(false))
            .with_reply("meets every expectation above", CHOSEN)
            .with_reply("does not address or cater", REJECTED),
    )
    .unwrap()
}

/// Requests the build made (the generator's start-up probe, a logprobs request, left out),
/// by body hash.
fn build_calls(server: &FaultServer) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for r in server
        .log()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions") && r.body["logprobs"] != true)
    {
        *out.entry(r.body_sha256).or_insert(0) += 1;
    }
    out
}

fn build_args<'a>(model: &'a str, out: &'a str, cache: &'a str) -> Vec<&'a str> {
    vec![
        "build",
        "--data",
        "DATA",
        "--generator",
        model,
        "--out",
        out,
        "--cache",
        cache,
        "--concurrency",
        "1",
        "--quiet",
    ]
}

#[test]
fn a_build_exports_pairs_that_eval_loads_and_a_killed_build_resumes_without_repeating_a_call() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(0);
    let model = format!("openai:fault-model@{}", server.openai_base());
    let data = sample();
    let mut args = build_args(&model, "built", "cache.sqlite");
    args[2] = &data;
    let out = prbench(&args, tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    // 12 chosen + 12 rejected + 2 × 12 audits, each once.
    assert!(err.contains("cache.sqlite`: 0 hits, 48 calls"), "{err}");
    assert!(err.contains("all: 12 built, 12 kept"), "{err}");
    assert_eq!(build_calls(&server).values().sum::<usize>(), 48);
    let built = tmp.path().join("built");
    for config in
        ["Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture"]
    {
        assert!(built.join(config).join("test-00000-of-00001.parquet").is_file(), "{config}");
    }
    assert!(text(&out.stdout).contains("# Build report"));
    // eval reads the folder unchanged (the metadata lives in build/, never read as a config).
    let eval = prbench(
        &["eval", "--data", "built", "--model", "baseline:longer", "--out", "runs", "--quiet"],
        tmp.path(),
    );
    assert!(eval.status.success(), "{}", text(&eval.stderr));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(glob_summary(&tmp.path().join("runs"))).unwrap(),
    )
    .unwrap();
    let all = summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "micro")
        .expect("a `micro` row");
    assert_eq!(all["n"], 12, "{summary}");

    // Killed partway on a fresh cache, then resumed: what was stored is never asked again.
    let slow = self::server(40);
    let model = format!("openai:fault-model@{}", slow.openai_base());
    let mut args = build_args(&model, "again", "c2.sqlite");
    args[2] = &data;
    let kept = common::kill_once_cached(&args, tmp.path(), &tmp.path().join("c2.sqlite"), 15);
    assert!(kept < 48);
    let resumed = prbench(&args, tmp.path());
    assert!(resumed.status.success(), "{}", text(&resumed.stderr));
    let err = text(&resumed.stderr);
    assert!(err.contains(&format!("c2.sqlite`: {kept} hits, {} calls", 48 - kept)), "{err}");
    let calls = build_calls(&slow);
    // Each distinct request once; at most the one in flight at the kill was sent twice.
    assert_eq!(calls.len(), 48);
    assert!(calls.values().sum::<usize>() <= 49, "{calls:?}");
    // A third run calls nothing, and exports the same bytes.
    let before = calls.values().sum::<usize>();
    let third = prbench(&args, tmp.path());
    assert!(third.status.success(), "{}", text(&third.stderr));
    assert_eq!(build_calls(&slow).values().sum::<usize>(), before);
    for config in ["Art_and_Entertainment", "Society_and_Culture"] {
        let f = |dir: &str| {
            std::fs::read(tmp.path().join(dir).join(config).join("test-00000-of-00001.parquet"))
                .unwrap()
        };
        assert_eq!(f("again"), f("built"), "{config}: the same pairs as the uninterrupted build");
    }
}

fn glob_summary(runs: &Path) -> std::path::PathBuf {
    std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path().join("summary.json"))
        .find(|p| p.is_file())
        .expect("a run folder")
}

#[test]
fn bad_input_is_refused_naming_file_row_and_field_and_a_previous_build_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(0);
    let model = format!("openai:fault-model@{}", server.openai_base());
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(Path::new(&sample()).join("Art_and_Entertainment.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
                let o = r.as_object_mut().unwrap();
                o.remove("chosen");
                o.remove("rejected");
                r
            })
            .collect();
    let write = |name: &str, rows: &[serde_json::Value]| {
        let body: String = rows.iter().map(|r| r.to_string() + "\n").collect();
        std::fs::write(tmp.path().join(name), body).unwrap();
    };
    write("Art.jsonl", &rows);
    let out = prbench(
        &["build", "--data", "Art.jsonl", "--generator", &model, "--out", "built", "--quiet"],
        tmp.path(),
    );
    assert!(
        out.status.success(),
        "rows without chosen/rejected are a build's input: {}",
        text(&out.stderr)
    );
    let parquet = tmp.path().join("built/Art_and_Entertainment/test-00000-of-00001.parquet");
    let before = std::fs::read(&parquet).unwrap();
    let requests = server.requests();

    type RowEdit = Box<dyn Fn(&mut Vec<serde_json::Value>)>;
    let cases: [(&str, RowEdit, &str); 3] = [
        ("no-aspects.jsonl", Box::new(|r| r[1]["rubric_aspects"] = serde_json::json!([])), "row 2"),
        ("empty-question.jsonl", Box::new(|r| r[2]["question"] = serde_json::json!("  ")), "row 3"),
        ("dup.jsonl", Box::new(|r| r[3]["id"] = r[0]["id"].clone()), "row 4"),
    ];
    for (name, edit, row) in cases {
        let mut bad = rows.clone();
        edit(&mut bad);
        write(name, &bad);
        let out = prbench(
            &["build", "--data", name, "--generator", &model, "--out", "built", "--quiet"],
            tmp.path(),
        );
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{name}");
        assert!(err.contains(name) && err.contains(row), "{name}: {err}");
        let field = match name {
            "no-aspects.jsonl" => "rubric_aspects",
            "empty-question.jsonl" => "question",
            _ => "id",
        };
        assert!(err.contains(field), "{name}: {err}");
    }
    assert_eq!(server.requests(), requests, "refused before any call");
    assert_eq!(std::fs::read(&parquet).unwrap(), before, "the previous build is untouched");
}

#[test]
fn a_bad_generator_judge_or_retriever_is_refused_before_any_folder_is_made_or_model_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(0);
    let model = format!("openai:fault-model@{}", server.openai_base());
    let data = sample();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--generator", "foo"], "--generator `foo` names no generator"),
        (
            vec!["--generator", "gguf:/no/such/model.gguf"],
            "generator model file `/no/such/model.gguf` not found",
        ),
        (
            vec!["--generator", "baseline:longer"],
            "--generator `baseline:longer` is not a generator",
        ),
        // The judge and the retriever are checked before the generator loads: the fault server
        // (the generator) sees no request, not even its start-up probe.
        (
            vec!["--generator", &model, "--judge", "gguf:/no/such/judge.gguf"],
            "audit judge model file `/no/such/judge.gguf` not found",
        ),
        (vec!["--generator", &model, "--judge", "bogus"], "--judge `bogus` names no generator"),
        (vec!["--generator", &model, "--retriever", "bogus"], "unknown retriever `bogus`"),
        (
            vec!["--generator", &model, "--retriever", "dense:/no/such/embedder"],
            "--retriever dense:/no/such/embedder",
        ),
    ];
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (flags, says) in &cases {
        for out in ["fresh", "empty"] {
            let mut args = vec!["build", "--data", &data, "--out", out, "--quiet"];
            args.extend_from_slice(flags);
            let o = prbench(&args, tmp.path());
            let e = text(&o.stderr);
            assert!(!o.status.success(), "{args:?} succeeded");
            assert!(e.contains(says), "{flags:?}: {e}");
            assert!(
                !e.contains("loading generator"),
                "{flags:?}: the generator was loaded first: {e}"
            );
        }
        assert!(!tmp.path().join("fresh").exists(), "{flags:?} made the --out folder");
        assert_eq!(
            std::fs::read_dir(&empty).unwrap().count(),
            0,
            "{flags:?} wrote into the empty --out folder"
        );
    }
    assert_eq!(server.requests(), 0, "no model was loaded or probed");
}

#[test]
fn a_generator_whose_server_does_not_answer_leaves_no_build_folder() {
    let tmp = tempfile::tempdir().unwrap();
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let model = format!("openai:m@http://127.0.0.1:{port}/v1");
    let o = prbench(
        &["build", "--data", &sample(), "--generator", &model, "--out", "b5", "--quiet"],
        tmp.path(),
    );
    assert!(!o.status.success(), "{}", text(&o.stderr));
    assert!(
        !tmp.path().join("b5").exists(),
        "the failed load left {:?}",
        std::fs::read_dir(tmp.path().join("b5")).map(|d| d.count())
    );
}

#[test]
fn data_validate_for_build_checks_question_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rows: Vec<serde_json::Value> =
        std::fs::read_to_string(Path::new(&sample()).join("Art_and_Entertainment.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    for r in &mut rows {
        let o = r.as_object_mut().unwrap();
        o.remove("chosen");
        o.remove("rejected");
    }
    let write = |name: &str, rows: &[serde_json::Value]| {
        std::fs::write(
            tmp.path().join(name),
            rows.iter().map(|r| r.to_string() + "\n").collect::<String>(),
        )
        .unwrap();
    };
    write("Art.jsonl", &rows);
    // As benchmark pairs (the default) the rows fail on `chosen`, and the message says how to
    // check them as build input.
    let o = prbench(&["data", "validate", "--data", "Art.jsonl"], tmp.path());
    let e = text(&o.stderr);
    assert!(!o.status.success());
    assert!(
        e.contains("Art.jsonl")
            && e.contains("row 1")
            && e.contains("`chosen`")
            && e.contains("--for build"),
        "{e}"
    );
    // As build input they are fine: 4 questions, the count of the sample's Art file.
    let o = prbench(&["data", "validate", "--for", "build", "--data", "Art.jsonl"], tmp.path());
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).starts_with("ok: 4 questions (Art_and_Entertainment: 4); sha256 "),
        "{}",
        text(&o.stdout)
    );
    // What build refuses, validate --for build refuses, naming file, row and field.
    rows[2]["rubric_aspects"] = serde_json::json!([]);
    write("Art.jsonl", &rows);
    let o = prbench(&["data", "validate", "--for", "build", "--data", "Art.jsonl"], tmp.path());
    let e = text(&o.stderr);
    assert!(!o.status.success());
    assert!(e.contains("Art.jsonl") && e.contains("row 3") && e.contains("rubric_aspects"), "{e}");
}

#[test]
fn skip_audit_is_described_in_the_help_as_in_the_readme() {
    let tmp = tempfile::tempdir().unwrap();
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let rule = prbench_build::settings::SKIP_AUDIT_RULE;
    let o = prbench(&["build", "--help"], tmp.path());
    assert!(words(&text(&o.stdout)).contains(rule), "{}", text(&o.stdout));
    let guide = std::fs::read_to_string(common::repo().join("docs/guide/src/build.md")).unwrap();
    assert!(
        words(&guide).contains(&format!("`--skip-audit`: {rule}")),
        "the user guide's build page (docs/guide/src/build.md) does not say `--skip-audit`: {rule}"
    );
}

#[test]
fn a_build_into_a_folder_another_build_holds_is_refused_before_any_model_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(0);
    let model = format!("openai:fault-model@{}", server.openai_base());
    let out = tmp.path().join("built");
    let held =
        prbench_build::stages::export::prepare_folder(&out, &["Art_and_Entertainment"]).unwrap();
    let o = prbench(
        &["build", "--data", &sample(), "--generator", &model, "--out", "built", "--quiet"],
        tmp.path(),
    );
    let e = text(&o.stderr);
    assert!(!o.status.success());
    assert!(e.contains("another `prbench build` is writing"), "{e}");
    assert!(!e.contains("loading generator"), "{e}");
    assert_eq!(server.requests(), 0, "the generator was probed before the lock was checked");
    assert!(
        !out.join("build/cache.sqlite").exists() && !tmp.path().join("cache.sqlite").exists(),
        "a cache was made for a folder another build holds"
    );
    drop(held);
}

/// A build on the SmolLM2 GGUF decoding 4 sequences together (`--gen-batch 4`), killed once
/// answers are stored, resumes asking only for what was not stored: every stored call is a hit,
/// and a third run finds every call of the build in the cache. The batch size is in the
/// generator's identity: the manifest names it, and a one-at-a-time build finds none of the
/// batched build's answers in the shared cache (batched and one-at-a-time decoding can give
/// different tokens, docs/perf.md). At 40 new tokens SmolLM2's answers run out of budget, so
/// the pairs are dropped as truncated and no dataset is exported; the calls are what is tested.
#[test]
fn a_killed_batched_build_on_a_gguf_generator_resumes_without_repeating_a_call() {
    let Some(gguf) = prbench_testkit::smollm2() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (model, data) = (format!("gguf:{}", gguf.display()), sample());
    let args = |out: &'static str, cache: &'static str, batch: &'static str| -> Vec<String> {
        [
            "build",
            "--data",
            &data,
            "--generator",
            &model,
            "--gen-batch",
            batch,
            "--limit",
            "2",
            "--max-new-tokens",
            "40",
            "--audit-max-new-tokens",
            "24",
            "--out",
            out,
            "--cache",
            cache,
            "--quiet",
        ]
        .map(String::from)
        .to_vec()
    };
    // `CACHE`: N hits, M calls` from a build's closing notes.
    let counts = |stderr: &str, cache: &str| -> (usize, usize) {
        let line = stderr
            .lines()
            .find(|l| l.contains(&format!("cache `{cache}`: ")))
            .unwrap_or_else(|| panic!("no cache line for {cache}: {stderr}"));
        let nums: Vec<usize> = line
            .rsplit(": ")
            .next()
            .unwrap()
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect();
        (nums[0], nums[1])
    };
    let run = |a: &[String]| -> String {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = prbench(&a, tmp.path());
        let err = text(&out.stderr).to_string();
        // Every pair is dropped as truncated (see above): the build says so and exits 1.
        assert!(err.contains("no pair survived the filter"), "{err}");
        err
    };
    let err = run(&args("whole", "whole.sqlite", "4"));
    let (hits, calls) = counts(&err, "whole.sqlite");
    // 2 examples in each of 3 subsets: 6 chosen and 6 rejected answers at least.
    assert_eq!(hits, 0, "{err}");
    assert!(calls >= 12, "{err}");
    let manifest = std::fs::read_to_string(tmp.path().join("whole/build/build.json")).unwrap();
    assert!(manifest.contains(prbench_llm::GENERATION), "{manifest}");
    assert!(manifest.contains("batched decoding of up to 4 sequences"), "{manifest}");

    let killed = args("again", "again.sqlite", "4");
    let killed_ref: Vec<&str> = killed.iter().map(String::as_str).collect();
    let kept =
        common::kill_once_cached(&killed_ref, tmp.path(), &tmp.path().join("again.sqlite"), 3);
    assert!(kept < calls, "the build finished before it was killed");
    let err = run(&killed);
    let (hits, new_calls) = counts(&err, "again.sqlite");
    assert_eq!(hits, kept, "every call stored before the kill is reused: {err}");
    assert!(new_calls > 0, "{err}");
    let err = run(&killed);
    assert_eq!(counts(&err, "again.sqlite"), (kept + new_calls, 0), "{err}");

    // One at a time on the batched build's cache: another generator identity (the batch size
    // is in it), so no hit.
    let err = run(&args("single", "whole.sqlite", "1"));
    assert_eq!(counts(&err, "whole.sqlite").0, 0, "{err}");
}
