//! `prbench eval --verdict logprob` with `openai:` judges: the verdict read from the server's
//! next-token log-probabilities after `Result:` (prbench_remote::next_token), against the
//! loopback fault server and, when `scripts/llama-server.sh start` runs one
//! (PRBENCH_LLAMA_SERVER_URL), against llama.cpp's real server compared with the in-process
//! `gguf:` judge on the same GGUF.

mod common;

use common::remote::*;
use common::*;
use prbench_fault_server::{FaultServer, ServerConfig, VerdictRule};

fn eval_args<'a>(model: &'a str, run_id: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "eval",
        "--data",
        "DATA",
        "--model",
        model,
        "--run-id",
        run_id,
        "--quiet",
        "--bootstrap",
        "200",
    ];
    a.extend_from_slice(extra);
    a
}

/// The `micro` row of a summary (all items).
fn micro(summary: &serde_json::Value) -> &serde_json::Value {
    summary["rows"].as_array().unwrap().iter().find(|r| r["label"] == "micro").unwrap()
}

fn run(args: &[&str], cwd: &std::path::Path) -> std::process::Output {
    let data = sample();
    let args: Vec<&str> =
        args.iter().map(|a| if *a == "DATA" { data.as_str() } else { a }).collect();
    prbench(&args, cwd)
}

/// Requests the judges made to `path` for the pairs (the load-time probes are left out by
/// their questions).
fn item_requests(server: &FaultServer, path: &str) -> Vec<serde_json::Value> {
    server
        .log()
        .into_iter()
        .filter(|r| {
            let body = r.body.to_string();
            r.path == path
                && !body.contains("Which letter comes first")
                && !body.contains("Reply with the letter A.")
        })
        .map(|r| r.body)
        .collect()
}

#[test]
fn a_server_judge_gives_logprob_verdicts_in_both_orders_and_its_own_cache_entries() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let out = run(&eval_args(&model, "lp", &["--verdict", "logprob", "--both-orders"]), tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("logprob verdicts through the chat-prefill transport"),
        "{}",
        text(&out.stderr)
    );
    let outcomes = read_outcomes(&tmp.path().join("runs/lp"));
    assert_eq!(outcomes.len(), 12);
    for o in &outcomes {
        for key in ["verdict", "swapped_verdict"] {
            let v = &o[key];
            let want = if v["choice"] == "A" { 0.8 } else { 0.2 };
            assert!((v["p_a"].as_f64().unwrap() - want).abs() < 1e-5, "{o}");
        }
    }
    let requests = item_requests(&server, "/v1/chat/completions");
    assert_eq!(requests.len(), 24, "one request per pair and order");
    assert!(requests
        .iter()
        .all(|b| b["messages"].as_array().unwrap().last().unwrap()["content"] == "Result:"
            && b["max_tokens"] == 1));
    let summary = read_json(&tmp.path().join("runs/lp/summary.json"));
    assert!(
        summary["both_orders"]["debiased_rows"].is_array(),
        "a position-debiased figure: {summary}"
    );
    let manifest = read_json(&tmp.path().join("runs/lp/manifest.json"));
    assert_eq!(manifest["decoding"]["verdict"], "next-token-logprob");
    assert_eq!(manifest["decoding"]["transport"], "chat-prefill");

    // The generating judge on the same cache asks the server again: the modes share no entry.
    let out =
        run(&eval_args(&model, "gen", &["--verdict", "generate", "--both-orders"]), tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let generated: Vec<_> = item_requests(&server, "/v1/chat/completions")
        .into_iter()
        .filter(|b| b["messages"].as_array().unwrap().last().unwrap()["role"] == "user")
        .filter(|b| b["max_tokens"] != 1)
        .collect();
    assert_eq!(generated.len(), 24);
    // The logprob run again: answered from the cache, no request.
    let before = server.log().len();
    let out =
        run(&eval_args(&model, "lp2", &["--verdict", "logprob", "--both-orders"]), tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(item_requests(&server, "/v1/chat/completions").len(), 48);
    assert!(server.log().len() > before, "the transport probe still runs");
}

#[test]
fn missing_letters_are_unparsed_and_the_summary_says_why() {
    let server =
        FaultServer::start(ServerConfig::default().with_verdict(VerdictRule::Garbage)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let out = run(
        &eval_args(&model, "r", &["--verdict", "logprob", "--logprob-transport", "completions"]),
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(item_requests(&server, "/v1/completions").len(), 12);
    let outcomes = read_outcomes(&tmp.path().join("runs/r"));
    assert!(outcomes.iter().all(|o| o["verdict"]["choice"] == "Unparsed"
        && o["verdict"]["p_a"].is_null()
        && o["verdict"]["raw"].as_str().unwrap().starts_with("missing letter: A and B")));
    let summary = read_json(&tmp.path().join("runs/r/summary.json"));
    assert_eq!(micro(&summary)["unparsed"], 12, "{summary}");
    let md = std::fs::read_to_string(tmp.path().join("runs/r/summary.md")).unwrap();
    assert!(
        md.contains("a candidate letter missing from the server's top log-probabilities"),
        "{md}"
    );
}

#[test]
fn logprob_transport_and_sampling_flags_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let model = format!("openai:m@{}", dead_url());
    for (extra, want) in [
        (&["--logprob-transport", "completions"][..], "without it: add --verdict logprob"),
        (
            &["--verdict", "logprob", "--temperature", "0.5"][..],
            "--temperature: `--verdict logprob` reads one token",
        ),
        (
            &["--verdict", "logprob", "--max-new-tokens", "5"][..],
            "--max-new-tokens: `--verdict logprob`",
        ),
    ] {
        let out = run(&eval_args(&model, "x", extra), tmp.path());
        assert!(!out.status.success());
        assert!(text(&out.stderr).contains(want), "{extra:?}: {}", text(&out.stderr));
    }
}

/// llama.cpp's real server against the in-process `gguf:` judge on the same GGUF, both reading
/// the next-token log-probabilities after `Result:`, in both orders, through each transport.
/// Measured on the 12 sample pairs (24 verdicts): max |Δp_A| 0.0136, max |Δmargin| 0.321
/// nats, no verdict different, the same for both transports (which agree with each other
/// exactly); the bounds below leave a little room.
#[test]
fn logprob_verdicts_through_a_real_llama_server_match_the_in_process_judge() {
    let Some(url) = std::env::var("PRBENCH_LLAMA_SERVER_URL").ok().filter(|u| !u.is_empty()) else {
        prbench_testkit::unavailable("PRBENCH_LLAMA_SERVER_URL is not set (scripts/llama-server.sh start prints it; .ci/run sets it)");
        return;
    };
    let Some(gguf) = prbench_testkit::smollm2() else { return };
    const MAX_DP: f64 = 0.02;
    const MAX_DMARGIN: f64 = 0.4;
    let tmp = tempfile::tempdir().unwrap();
    let remote = format!("openai:smollm2@{url}");
    let local = format!("gguf:{}", gguf.display());
    let common = ["--both-orders", "--no-cache"];
    // cache_prompt: false, so each answer depends on its prompt alone (see remote.rs).
    for transport in ["chat-prefill", "completions"] {
        let mut extra = vec![
            "--verdict",
            "logprob",
            "--logprob-transport",
            transport,
            "--request-extra",
            r#"{"cache_prompt":false}"#,
            "--concurrency",
            "1",
        ];
        extra.extend(common);
        let out = run(&eval_args(&remote, transport, &extra), tmp.path());
        assert!(out.status.success(), "{transport}: {}", text(&out.stderr));
    }
    let out = run(&eval_args(&local, "local", &common), tmp.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let local_o = read_outcomes(&tmp.path().join("runs/local"));
    assert_eq!(local_o.len(), 12);
    let mut per_transport = Vec::new();
    for transport in ["chat-prefill", "completions"] {
        let remote_o = read_outcomes(&tmp.path().join(format!("runs/{transport}")));
        assert_eq!(remote_o.len(), 12);
        let (mut dp, mut dm) = (0f64, 0f64);
        for (r, l) in remote_o.iter().zip(&local_o) {
            assert_eq!(r["example_id"], l["example_id"]);
            for key in ["verdict", "swapped_verdict"] {
                let (rv, lv) = (&r[key], &l[key]);
                assert_eq!(
                    rv["choice"], lv["choice"],
                    "{transport} {} {key}: {rv} vs {lv}",
                    r["example_id"]
                );
                dp = dp.max((rv["p_a"].as_f64().unwrap() - lv["p_a"].as_f64().unwrap()).abs());
                dm =
                    dm.max((rv["margin"].as_f64().unwrap() - lv["margin"].as_f64().unwrap()).abs());
            }
        }
        eprintln!("llama server ({transport}) vs in-process: 24 of 24 verdicts equal, max |dp_A| {dp:.4}, max |dmargin| {dm:.3} nats");
        assert!(dp <= MAX_DP, "{transport}: max |dp_A| {dp}");
        assert!(dm <= MAX_DMARGIN, "{transport}: max |dmargin| {dm}");
        per_transport.push(remote_o);
    }
    // The two transports read the same position of the same prompt.
    for (c, p) in per_transport[0].iter().zip(&per_transport[1]) {
        for key in ["verdict", "swapped_verdict"] {
            let d = (c[key]["margin"].as_f64().unwrap() - p[key]["margin"].as_f64().unwrap()).abs();
            assert!(
                d < 1e-3,
                "{} {key}: chat-prefill and completions part by {d}",
                c["example_id"]
            );
        }
    }
    // The template the server reports (GET /props), which prbench rendered for the completions
    // transport, is the GGUF's, the one the in-process judge renders.
    let served = read_json(&tmp.path().join("runs/completions/manifest.json"));
    let inproc = read_json(&tmp.path().join("runs/local/manifest.json"));
    assert_eq!(served["model"]["chat_template_hash"], inproc["model"]["chat_template_hash"]);
    let summary = read_json(&tmp.path().join("runs/chat-prefill/summary.json"));
    assert_eq!(micro(&summary)["unparsed"], 0);
    assert!(summary["both_orders"]["debiased_rows"].is_array());
}
