//! Remote engines through the real binary: against our loopback fault server (every fault,
//! retries, failure accounting, key redaction, SIGKILL and resume) and, when `.ci/run` started
//! one, against a real llama.cpp server (PRBENCH_LLAMA_SERVER_URL), compared with the
//! in-process engine on the same GGUF.

mod common;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::remote::*;
use common::*;
use prbench_fault_server::{Fault, FaultRule, FaultServer, ServerConfig};

/// An outcome without the fields that differ between two runs of the same items (wall time).
fn comparable(mut o: serde_json::Value) -> serde_json::Value {
    o.as_object_mut().unwrap().remove("latency_ms");
    o
}

/// `(example_id, verdict choice)` per outcome.
fn choices(outcomes: &[serde_json::Value]) -> Vec<(String, String)> {
    outcomes
        .iter()
        .map(|o| {
            (
                o["example_id"].as_str().unwrap().to_string(),
                o["verdict"]["choice"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

/// Chat requests the judge made (the construction probe asks for one token and is left out).
fn judge_requests(server: &FaultServer) -> Vec<prbench_fault_server::RequestRecord> {
    server
        .log()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions") && r.body["max_tokens"] != 1)
        .collect()
}

#[test]
fn openai_judge_survives_every_fault_with_the_same_verdicts_as_a_clean_server() {
    let tmp = tempfile::tempdir().unwrap();
    let clean = clean_server();
    // Every request body fails three times — 429 with Retry-After, a truncated JSON body, a
    // dropped connection — then gets its answer; one question's body also times out once.
    let faulty = FaultServer::start(
        ServerConfig::default()
            .with_rule(
                FaultRule::new("", Fault::RateLimited { retry_after: Some("0".into()) }).times(1),
            )
            .with_rule(FaultRule::new("", Fault::TruncatedJson).times(1))
            .with_rule(FaultRule::new("", Fault::DropConnection).times(1))
            .with_rule(
                FaultRule::new("indoor basketball", Fault::Slow(Duration::from_secs(3))).times(1),
            )
            .with_rule(FaultRule::new("silent k", Fault::ServerError).times(2)),
    )
    .unwrap();
    let run = |server: &FaultServer, id: &str, cache: &str| {
        let model = format!("openai:fault-model@{}", server.openai_base());
        let cache = tmp.path().join(cache).display().to_string();
        prbench(
            &[
                "eval",
                "--data",
                &sample(),
                "--model",
                &model,
                "--run-id",
                id,
                "--quiet",
                "--bootstrap",
                "200",
                "--timeout",
                "1",
                "--both-orders",
                "--cache",
                &cache,
            ],
            tmp.path(),
        )
    };
    let out = run(&clean, "clean", "clean.sqlite");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run(&faulty, "faulty", "faulty.sqlite");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let a = read_outcomes(&tmp.path().join("runs/clean"));
    let b = read_outcomes(&tmp.path().join("runs/faulty"));
    assert_eq!(a.len(), 12);
    assert_eq!(choices(&a), choices(&b));
    for o in &b {
        assert!(o["error"].is_null(), "{o}");
        // The fault server puts p(A) = 0.8 on the letter it answers with (logprobs detected).
        let p = o["verdict"]["p_a"].as_f64().unwrap();
        let expect = if o["verdict"]["choice"] == "A" { 0.8 } else { 0.2 };
        assert!((p - expect).abs() < 1e-4, "{o}");
    }
    // 24 judge requests (12 pairs, both orders): 3 faults each, plus one timeout for each order
    // of the basketball question and two 500s for each order of the silent-k question.
    let summary = read_json(&tmp.path().join("runs/faulty/summary.json"));
    assert_eq!(summary["remote"]["retries"], 24 * 3 + 2 + 2 * 2, "{}", summary["remote"]);
    assert_eq!(summary["remote"]["failures"], 0);
    let log = judge_requests(&faulty);
    assert_eq!(log.len(), 24 * 4 + 2 + 2 * 2);
    let faults: HashMap<String, usize> =
        log.iter().filter_map(|r| r.fault.clone()).fold(HashMap::new(), |mut m, f| {
            *m.entry(f).or_default() += 1;
            m
        });
    assert_eq!(faults["rate_limited"], 24);
    assert_eq!(faults["truncated_json"], 24);
    assert_eq!(faults["drop_connection"], 24);
    assert_eq!(faults["slow"], 2, "both orders of the basketball question time out once");
    assert_eq!(faults["server_error"], 4);
    assert!(stderr.contains("cache") && stderr.contains("0 hits, 24 calls"), "{stderr}");
}

#[test]
fn an_item_that_keeps_failing_is_an_error_and_the_error_rate_decides_the_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let server = FaultServer::start(
        ServerConfig::default().with_rule(FaultRule::new("security deposit", Fault::ServerError)),
    )
    .unwrap();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let data = sample();
    let args = |id: &'static str| {
        vec![
            "eval",
            "--data",
            &data,
            "--model",
            &model,
            "--run-id",
            id,
            "--quiet",
            "--bootstrap",
            "200",
            "--max-retries",
            "2",
        ]
    };
    let out = prbench(&args("strict"), tmp.path());
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "1 error in 12 items is above the default 1%: {stderr}");
    assert!(stderr.contains("--max-error-rate 0.01") && stderr.contains("1 of 12"), "{stderr}");
    let outcomes = read_outcomes(&tmp.path().join("runs/strict"));
    let errors: Vec<&serde_json::Value> =
        outcomes.iter().filter(|o| !o["error"].is_null()).collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["example_id"], "sample-soc-02");
    assert_eq!(errors[0]["result"], "error");
    assert!(errors[0]["verdict"].is_null(), "a failed call is never scored");
    let msg = errors[0]["error"].as_str().unwrap();
    assert!(msg.contains("3 attempts") && msg.contains("500"), "{msg}");
    let summary = read_json(&tmp.path().join("runs/strict/summary.json"));
    assert_eq!(summary["remote"]["failures"], 1);
    let micro =
        summary["rows"].as_array().unwrap().iter().find(|r| r["label"] == "micro").unwrap().clone();
    assert_eq!(micro["errors"], 1, "{micro}");
    // The same command with a looser limit succeeds; the 11 good verdicts come from the cache
    // and only the failing item is asked again (3 attempts).
    let before = server.requests();
    let mut b = args("loose");
    b.extend(["--max-error-rate", "0.1"]);
    let out = prbench(&b, tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("11 hits, 1 call"), "{}", text(&out.stderr));
    assert_eq!(
        server.requests() - before,
        1 + 3,
        "the probe plus three attempts of the failing item"
    );
}

#[test]
fn the_api_key_reaches_the_server_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let key = "sk-prbench-test-7f3a9c1e5b";
    let server = FaultServer::start(
        ServerConfig::default().with_rule(FaultRule::new("silent k", Fault::EchoAuthorization)),
    )
    .unwrap();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let out = Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args([
            "eval",
            "--data",
            &sample(),
            "--model",
            &model,
            "--run-id",
            "k",
            "--bootstrap",
            "200",
            "--max-retries",
            "1",
            "--api-key-env",
            "PRB_TEST_KEY",
            "--max-error-rate",
            "0.5",
        ])
        .env("PRB_TEST_KEY", key)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(server
        .log()
        .iter()
        .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {key}"))));
    let mut everything = text(&out.stdout) + &text(&out.stderr);
    for f in ["outcomes.jsonl", "summary.json", "summary.md", "manifest.json"] {
        everything += &std::fs::read_to_string(tmp.path().join("runs/k").join(f)).unwrap();
    }
    let echoed = read_outcomes(&tmp.path().join("runs/k"))
        .into_iter()
        .find(|o| !o["error"].is_null())
        .expect("the echo item failed");
    assert!(echoed["error"].as_str().unwrap().contains("[REDACTED]"), "{echoed}");
    assert!(!everything.contains(key), "the key leaked");
    assert!(!everything.contains("7f3a9c1e5b"));
}

#[test]
fn served_reward_models_score_every_pair_through_retries() {
    // Both servers score an answer by its length (characters / 100), so each item's result must
    // equal the `longer` control baseline's on the same item.
    let tmp = tempfile::tempdir().unwrap();
    let server = first_attempt_fails_server();
    for (id, model) in [
        ("vllm", format!("vllm-classify:rm@{}", server.base_url())),
        ("rs", format!("reward-server:{}", server.base_url())),
    ] {
        let out = prbench(
            &[
                "eval",
                "--data",
                &sample(),
                "--model",
                &model,
                "--run-id",
                id,
                "--quiet",
                "--bootstrap",
                "200",
            ],
            tmp.path(),
        );
        assert!(out.status.success(), "{model}: {}", text(&out.stderr));
        let longer = prbench(
            &[
                "eval",
                "--data",
                &sample(),
                "--model",
                "baseline:longer",
                "--run-id",
                &format!("{id}-longer"),
                "--quiet",
                "--bootstrap",
                "200",
            ],
            tmp.path(),
        );
        assert!(longer.status.success());
        let got = read_outcomes(&tmp.path().join("runs").join(id));
        let want = read_outcomes(&tmp.path().join("runs").join(format!("{id}-longer")));
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g["result"], w["result"], "{model}: {g}");
            let len = |s: &serde_json::Value| s.as_f64().unwrap();
            assert!(len(&g["score_chosen"]) > 0.0 && len(&g["score_rejected"]) > 0.0);
        }
        let summary = read_json(&tmp.path().join("runs").join(id).join("summary.json"));
        assert_eq!(
            summary["remote"]["retries"], 24,
            "{model}: every answer's first request got a 500"
        );
    }
}

#[test]
fn a_killed_run_resumes_with_cache_hits_and_no_repeated_call() {
    let tmp = tempfile::tempdir().unwrap();
    let data = write_dataset(tmp.path(), 40);
    let slow = ServerConfig::default().with_delay(Duration::from_millis(150));
    let server = FaultServer::start(slow.clone()).unwrap();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let args = [
        "eval",
        "--data",
        &data,
        "--model",
        &model,
        "--run-id",
        "r",
        "--quiet",
        "--bootstrap",
        "200",
        "--concurrency",
        "2",
        "--batch-size",
        "4",
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args(args)
        .current_dir(tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while judge_requests(&server).len() < 16 {
        assert!(started.elapsed() < Duration::from_secs(60), "the run never got going");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it was killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let manifest = read_json(&tmp.path().join("runs/r/manifest.json"));
    assert!(manifest["finished"].is_null(), "killed before the end");
    let cache = prbench_eval::cache::Cache::open(&tmp.path().join("runs/cache.sqlite")).unwrap();
    // Verdicts only: the control baselines' rows are an entry of their own.
    let stored: u64 =
        cache.stats().unwrap().iter().filter(|r| r.kind == "verdict").map(|r| r.entries).sum();
    drop(cache);
    assert!(stored >= 12, "about 16 answers came back before the kill; {stored} stored");

    let before = judge_requests(&server).len();
    let out = prbench(&args, tmp.path());
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("resuming unfinished run `r`"), "{stderr}");
    assert!(stderr.contains(&format!("{stored} hits, {} calls", 40 - stored)), "{stderr}");
    assert_eq!(
        judge_requests(&server).len() - before,
        40 - stored as usize,
        "no completed call was repeated"
    );

    // The same command uninterrupted, on a fresh cache and server, gives the same outcomes.
    let fresh = tempfile::tempdir().unwrap();
    let server2 = FaultServer::start(slow).unwrap();
    let model2 = format!("openai:fault-model@{}", server2.openai_base());
    let mut args2 = args;
    args2[4] = &model2;
    let out = prbench(&args2, fresh.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let resumed: Vec<_> =
        read_outcomes(&tmp.path().join("runs/r")).into_iter().map(comparable).collect();
    let mut whole: Vec<_> =
        read_outcomes(&fresh.path().join("runs/r")).into_iter().map(comparable).collect();
    for o in &mut whole {
        o["model"] = resumed[0]["model"].clone(); // the spec names the other server's port
    }
    assert_eq!(resumed.len(), 40);
    assert_eq!(resumed, whole);
    // A finished run with every item answered is reused: the same command makes no request.
    let before = judge_requests(&server).len();
    let out = prbench(&args, tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("run `r` finished already with these settings; reusing it"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(judge_requests(&server).len(), before);
}

/// The real llama.cpp server (`scripts/llama-server.sh start`, run by `.ci/run`) against the
/// in-process llama.cpp engine on the same GGUF, both decoding greedily.
#[test]
fn openai_judge_on_a_real_llama_server_matches_the_in_process_engine() {
    let Some(url) = std::env::var("PRBENCH_LLAMA_SERVER_URL").ok().filter(|u| !u.is_empty()) else {
        prbench_testkit::unavailable("PRBENCH_LLAMA_SERVER_URL is not set (scripts/llama-server.sh start prints it; .ci/run sets it)");
        return;
    };
    let Some(gguf) = prbench_testkit::smollm2() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let remote = format!("openai:smollm2@{url}");
    let local = format!("gguf:{}", gguf.display());
    // Some llama.cpp front-ends (llama-cpp-python) apply a repeat penalty of 1.1 unless told
    // otherwise; the in-process engine applies none, so the request says 1.0 explicitly.
    let common_args = [
        "--data",
        &sample(),
        "--verdict",
        "generate",
        "--max-new-tokens",
        "96",
        "--quiet",
        "--bootstrap",
        "200",
        "--no-cache",
    ];
    // `cache_prompt: false`: llama.cpp's server otherwise reuses the cached prefix of the previous
    // request and evaluates only the rest, in batches of another size, so the same prompt can
    // give another greedy reply depending on what was asked before (a prompt asked right after
    // itself re-evaluates one token alone). Evaluating every prompt whole makes each reply a
    // function of its prompt, so the re-asks below reproduce the run's replies.
    let mut a = vec![
        "eval",
        "--model",
        &remote,
        "--run-id",
        "remote",
        "--request-extra",
        r#"{"repeat_penalty":1.0,"cache_prompt":false}"#,
        "--concurrency",
        "1",
    ];
    a.extend(common_args);
    let out = prbench(&a, tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut b = vec!["eval", "--model", &local, "--run-id", "local"];
    b.extend(common_args);
    let out = prbench(&b, tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let remote_o = read_outcomes(&tmp.path().join("runs/remote"));
    let local_o = read_outcomes(&tmp.path().join("runs/local"));
    assert_eq!(remote_o.len(), 12);
    // Two llama.cpp builds (the server's and llama-cpp-2's) compute the same Q4_1 logits in a
    // different order, so greedy decoding may pick differently where two tokens are within
    // rounding of each other. Every reply that differs must differ at such a near-tie: ask the
    // server again for the same prompt with its top-3 log-probabilities, find the token where
    // the texts part, and require the in-process text to continue with the server's runner-up,
    // less than 0.25 nats behind its pick.
    let examples = prbench_data::load::load(&sample(), &[]).unwrap().examples;
    let slots = prbench_eval::slots::assign_slots(&examples, 42);
    let prompts = prbench_eval::prompt::Prompts::new();
    let mut extra = serde_json::Map::new();
    extra.insert("repeat_penalty".into(), 1.0.into());
    extra.insert("cache_prompt".into(), false.into());
    let chat = prbench_remote::OpenAiChat::new(
        "smollm2",
        vec![url.clone()],
        prbench_remote::RemoteOptions::default(),
    )
    .unwrap()
    .with_extra(extra)
    .unwrap();
    let (mut same_text, mut same_choice, mut gaps) = (0, 0, Vec::new());
    for ((r, l), ex) in remote_o.iter().zip(&local_o).zip(&examples) {
        let (rt, lt) =
            (r["verdict"]["raw"].as_str().unwrap(), l["verdict"]["raw"].as_str().unwrap());
        same_choice += usize::from(r["verdict"]["choice"] == l["verdict"]["choice"]);
        if rt == lt {
            same_text += 1;
            continue;
        }
        let (a, b) = match slots[&ex.id] {
            prbench_eval::slots::Slot::A => (&ex.chosen, &ex.rejected),
            prbench_eval::slots::Slot::B => (&ex.rejected, &ex.chosen),
        };
        let pair = prbench_models::PairInput {
            example_id: ex.id.clone(),
            question: ex.question.clone(),
            context: None,
            a: a.clone(),
            b: b.clone(),
        };
        let request = prbench_models::ChatRequest {
            prompt: prompts.judge(&pair).unwrap(),
            max_new_tokens: 96,
            temperature: 0.0,
            top_p: 1.0,
            seed: 0,
        };
        let reply = chat.chat_each(&[request], Some(3), &|_, _| {}).pop().unwrap().unwrap();
        assert_eq!(reply.text, rt, "{}: the server's greedy reply is reproducible", ex.id);
        let split = rt.bytes().zip(lt.bytes()).take_while(|(x, y)| x == y).count();
        let mut start = 0;
        let token = reply
            .logprobs
            .as_ref()
            .expect("llama.cpp returns log-probabilities")
            .iter()
            .find(|t| {
                start += t.token.len();
                start > split
            })
            .unwrap();
        let token_start = start - token.token.len();
        let local_rest = &lt[token_start..];
        let runner_up = token
            .top_logprobs
            .iter()
            .find(|alt| alt.token != token.token && local_rest.starts_with(&alt.token))
            .unwrap_or_else(|| panic!("{}: the in-process text {:?} continues with none of the server's top tokens {:?}", ex.id, &local_rest[..local_rest.len().min(20)], token.top_logprobs));
        let gap = token.logprob - runner_up.logprob;
        assert!(
            gap < 0.25,
            "{}: the texts part where the server's pick leads by {gap:.3} nats, not a near-tie",
            ex.id
        );
        gaps.push(format!("{}: {:?} vs {:?}, {gap:.3} nats", ex.id, token.token, runner_up.token));
    }
    eprintln!("llama server vs in-process: {same_text} of 12 replies identical, {same_choice} of 12 verdicts equal; where the texts part: {}", gaps.join("; "));
    assert!(same_text >= 3, "{same_text} of 12 identical replies");
    let summary = read_json(&tmp.path().join("runs/remote/summary.json"));
    assert_eq!(summary["remote"]["failures"], 0);
    assert!(summary["remote"]["completion_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn a_multi_condition_run_resumes_its_unfinished_condition_and_skips_the_finished_one() {
    let tmp = tempfile::tempdir().unwrap();
    let server = clean_server();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let args = [
        "eval",
        "--data",
        &sample(),
        "--model",
        &model,
        "--condition",
        "none,oracle",
        "--run-id",
        "mc",
        "--quiet",
        "--bootstrap",
        "200",
    ];
    let out = prbench(&args, tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let finished = read_outcomes(&tmp.path().join("runs/mc-oracle"));
    // Make `mc-oracle` look like a run killed before its end: no summary, no end time.
    let dir = tmp.path().join("runs/mc-oracle");
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    let mut manifest = read_json(&dir.join("manifest.json"));
    manifest["finished"] = serde_json::Value::Null;
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    let before = judge_requests(&server).len();
    let out = prbench(&args, tmp.path());
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("run `mc-none` finished already with these settings; reusing it"),
        "{stderr}"
    );
    assert!(
        stderr.contains("resuming unfinished run `mc-oracle`")
            && stderr.contains("12 hits, 0 calls"),
        "{stderr}"
    );
    assert_eq!(judge_requests(&server).len(), before);
    let resumed: Vec<_> = read_outcomes(&dir).into_iter().map(comparable).collect();
    assert_eq!(resumed, finished.into_iter().map(comparable).collect::<Vec<_>>());
    // Both finished now: the same command reuses both and only rewrites the matrix, without a
    // single request.
    let before = judge_requests(&server).len();
    let out = prbench(&args, tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(judge_requests(&server).len(), before);
    assert!(tmp.path().join("runs/mc-matrix.md").is_file());
}

#[test]
fn a_server_url_without_its_scheme_is_refused_before_any_request() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &["eval", "--data", &sample(), "--model", "openai:m@127.0.0.1:9/v1", "--quiet"],
        tmp.path(),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("is not an http:// or https:// URL"),
        "{}",
        text(&out.stderr)
    );
    assert!(!tmp.path().join("runs").exists());
}

#[test]
fn reward_server_is_probed_at_load_and_a_dead_url_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let server = clean_server();
    let dead = dead_url();
    let eval = |model: &str, id: &str| {
        prbench(
            &[
                "eval",
                "--data",
                &sample(),
                "--model",
                model,
                "--run-id",
                id,
                "--limit",
                "1",
                "--quiet",
                "--bootstrap",
                "200",
                "--max-retries",
                "0",
            ],
            tmp.path(),
        )
    };
    // A dead URL, alone or beside a live replica, stops the run at load, named, before any run file.
    for (id, model) in [
        ("dead", format!("reward-server:{dead}")),
        ("mixed", format!("reward-server:{},{dead}", server.base_url())),
    ] {
        let out = eval(&model, id);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{model}: {err}");
        assert!(
            err.contains(&format!("reward server `{dead}` did not answer a test request"))
                && err.contains("connection failed"),
            "{err}"
        );
        assert!(
            !tmp.path().join("runs").join(id).exists(),
            "{model}: no run folder for a refused model"
        );
    }
    // A live server gets exactly one probe (the fixed test item), then the run's own requests.
    server.clear_log();
    let out = eval(&format!("reward-server:{}", server.base_url()), "live");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = server.log();
    let probes: Vec<_> = log
        .iter()
        .filter(|r| r.body["query"] == prbench_remote::reward_server::PROBE_ITEM.0)
        .collect();
    assert_eq!(probes.len(), 1, "{log:?}");
    assert_eq!((probes[0].method.as_str(), probes[0].path.as_str()), ("POST", "/score"));
    assert_eq!(
        log.len(),
        1 + 3 * 2,
        "the probe, then chosen and rejected of 3 subsets × 1 example"
    );
}

#[test]
fn served_reward_models_are_probed_at_load_and_a_dead_url_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let template =
        template_dir(tmp.path(), "{% for m in messages %}{{ m['content'] }}\n{% endfor %}", None);
    let dead = dead_url();
    let data = sample();
    for (id, model, server) in [
        ("vllm", format!("vllm-classify:rm@{dead}"), "vLLM server"),
        ("sglang", format!("sglang-classify:test/rm@{dead}"), "`sglang-classify:` server"),
        ("tei", format!("tei:test/rm@{dead}"), "`tei:` server"),
        ("openrlhf", format!("openrlhf:test/rm@{dead}"), "`openrlhf:` server"),
    ] {
        let mut args = vec![
            "eval",
            "--data",
            &data,
            "--model",
            &model,
            "--run-id",
            id,
            "--limit",
            "1",
            "--quiet",
            "--max-retries",
            "1",
        ];
        if id != "vllm" {
            args.extend(["--chat-template", &template]);
        }
        let out = prbench(&args, tmp.path());
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{model}: {err}");
        assert!(
            err.contains(&format!("connecting to `{model}`"))
                && err.contains(&format!("{server} `{dead}` did not answer a test request")),
            "{err}"
        );
        assert!(
            err.contains("2 attempts, last: connection failed"),
            "retried like any request: {err}"
        );
        assert!(err.contains("Check that the server is up and reachable at that URL, that the host and port are right"), "{err}");
        assert!(
            !tmp.path().join("runs").join(id).exists(),
            "{model}: no run folder for a refused model"
        );
    }
}

#[test]
fn the_remote_summary_says_failed_without_claiming_retries_that_were_not_made() {
    let tmp = tempfile::tempdir().unwrap();
    // A 413 is not retried: the item fails at its first attempt.
    let server = FaultServer::start(
        ServerConfig::default().with_rule(FaultRule::new("silent k", Fault::Status(413))),
    )
    .unwrap();
    let model = format!("reward-server:{}", server.base_url());
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &model,
            "--run-id",
            "s",
            "--bootstrap",
            "200",
            "--max-retries",
            "3",
            "--max-error-rate",
            "0.5",
        ],
        tmp.path(),
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("runs/s/summary.json")).unwrap(),
    )
    .unwrap();
    let failures = summary["remote"]["failures"].as_u64().unwrap();
    assert!(failures >= 1, "{}", summary["remote"]);
    assert_eq!(summary["remote"]["retries"], 0, "{}", summary["remote"]);
    let calls = if failures == 1 { "call failed" } else { "calls failed" };
    assert!(
        err.contains(&format!("0 retries, {failures} {calls};")) && !err.contains("after retries"),
        "{err}"
    );
    let md = std::fs::read_to_string(tmp.path().join("runs/s/summary.md")).unwrap();
    assert!(
        md.contains(&format!("(0 retries), {failures} {calls};")) && !md.contains("after retries"),
        "{md}"
    );
}

#[test]
fn a_reward_server_root_given_with_v1_is_refused_before_any_request_with_the_spec_to_type() {
    let tmp = tempfile::tempdir().unwrap();
    let server = clean_server();
    let root = server.base_url();
    for kind in ["vllm-classify", "sglang-classify", "tei", "openrlhf"] {
        let model = format!("{kind}:org/rm@{root}/v1");
        let out = prbench(&["eval", "--data", &sample(), "--model", &model, "--quiet"], tmp.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{model}: {err}");
        assert!(
            err.contains(&format!(
                "`{root}/v1` ends in `/v1`, but `{kind}:` takes the server's root"
            )),
            "{model}: {err}"
        );
        assert!(err.contains(&format!("use `{kind}:org/rm@{root}`")), "{model}: {err}");
    }
    assert_eq!(server.requests(), 0, "refused before any request");
    assert!(!tmp.path().join("runs").exists());
}

#[test]
fn an_openai_judge_whose_server_is_down_says_to_check_that_it_is_up() {
    let tmp = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", dead_url());
    let model = format!("openai:m@{base}");
    let data = sample();
    // The logprob probe of the default verdict, and the test request a text-only judge now sends.
    for extra in [&[][..], &["--verdict", "generate"][..]] {
        let mut args = vec![
            "eval",
            "--data",
            &data,
            "--model",
            &model,
            "--run-id",
            "down",
            "--quiet",
            "--max-retries",
            "1",
        ];
        args.extend_from_slice(extra);
        let out = prbench(&args, tmp.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains(&format!("connecting to `{model}`")), "{extra:?}: {err}");
        assert!(
            err.contains(&format!(
                "OpenAI-compatible server `{base}` did not answer a test request"
            )) && err.contains("2 attempts, last: connection failed"),
            "{extra:?}: {err}"
        );
        // The reward models' wording, from the one place that words it.
        assert!(err.contains("Check that the server is up and reachable at that URL, that the host and port are right, and that the URL is the base URL where `/chat/completions` hangs"), "{extra:?}: {err}");
        assert!(
            !tmp.path().join("runs/down").exists(),
            "{extra:?}: no run folder for a server that is down"
        );
    }
}
