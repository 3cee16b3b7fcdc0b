//! Normal answers: shapes and values of every endpoint, the request log, the binary.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use prbench_fault_server::{
    FaultServer, Letter, ServerConfig, VerdictRule, GARBAGE_REPLY, MODEL_ID,
};
use serde_json::{json, Value};

async fn post(server: &FaultServer, path: &str, body: &Value) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{}{path}", server.base_url()))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

fn chat(prompt: &str) -> Value {
    json!({"model": "judge-x", "messages": [
        {"role": "system", "content": "You are a judge."},
        {"role": "user", "content": prompt}
    ]})
}

#[tokio::test]
async fn models_list() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    assert_eq!(server.openai_base(), format!("{}/v1", server.base_url()));
    let v: Value = reqwest::get(format!("{}/models", server.openai_base()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], MODEL_ID);
    assert_eq!(v["data"][0]["object"], "model");
}

#[tokio::test]
async fn chat_completion_shape_and_usage() {
    let server =
        FaultServer::start(ServerConfig::default().with_verdict(VerdictRule::Always(Letter::B)))
            .unwrap();
    let (status, v) = post(&server, "/v1/chat/completions", &chat("pick one please")).await;
    assert_eq!(status, 200);
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(v["object"], "chat.completion");
    assert!(v["created"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(v["model"], "judge-x");
    let choice = &v["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Looks fine.\nResult: B");
    assert_eq!(choice["logprobs"], Value::Null);
    assert_eq!(choice["finish_reason"], "stop");
    // "You are a judge." = 4 words, "pick one please" = 3; reply "Looks fine.\nResult: B" = 4.
    assert_eq!(v["usage"]["prompt_tokens"], 7);
    assert_eq!(v["usage"]["completion_tokens"], 4);
    assert_eq!(v["usage"]["total_tokens"], 11);

    // Content parts are read as text too.
    let parts = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "one two"}, {"type": "text", "text": " three"}
    ]}]});
    let (_, v) = post(&server, "/v1/chat/completions", &parts).await;
    assert_eq!(v["usage"]["prompt_tokens"], 3);
    assert_eq!(v["model"], MODEL_ID);

    // Malformed requests are 400s.
    let (status, v) = post(&server, "/v1/chat/completions", &json!({"model": "m"})).await;
    assert_eq!(status, 400);
    assert!(v["error"]["message"].is_string());
}

#[tokio::test]
async fn hash_verdict_is_deterministic_and_uses_both_letters() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let mut letters = HashSet::new();
    for i in 0..40 {
        let prompt = format!("prompt number {i}");
        let (_, a) = post(&server, "/v1/chat/completions", &chat(&prompt)).await;
        let (_, b) = post(&server, "/v1/chat/completions", &chat(&prompt)).await;
        let content = a["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
        assert_eq!(content, b["choices"][0]["message"]["content"]);
        let letter = content.strip_prefix("Looks fine.\nResult: ").unwrap().to_owned();
        let expected = VerdictRule::Hash.letter_for(&format!("You are a judge.{prompt}")).unwrap();
        assert_eq!(letter, expected.as_str());
        letters.insert(letter);
    }
    assert_eq!(letters.len(), 2, "both letters over 40 prompts");
}

#[tokio::test]
async fn garbage_verdict_has_no_result_line() {
    let server =
        FaultServer::start(ServerConfig::default().with_verdict(VerdictRule::Garbage)).unwrap();
    let mut req = chat("x");
    req["logprobs"] = json!(true);
    req["top_logprobs"] = json!(3);
    let (_, v) = post(&server, "/v1/chat/completions", &req).await;
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(content, GARBAGE_REPLY);
    assert!(!content.to_lowercase().contains("result"));
    let tokens: String = v["choices"][0]["logprobs"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["token"].as_str().unwrap())
        .collect();
    assert_eq!(tokens, content);
}

#[tokio::test]
async fn logprobs_content_is_well_formed() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    for i in 0..6 {
        let mut req = chat(&format!("logprob prompt {i}"));
        req["logprobs"] = json!(true);
        req["top_logprobs"] = json!(5);
        let (status, v) = post(&server, "/v1/chat/completions", &req).await;
        assert_eq!(status, 200);
        let content = v["choices"][0]["message"]["content"].as_str().unwrap();
        let chosen = &content[content.len() - 1..];
        let other = if chosen == "A" { "B" } else { "A" };
        let entries = v["choices"][0]["logprobs"]["content"].as_array().unwrap();

        let joined: String = entries.iter().map(|e| e["token"].as_str().unwrap()).collect();
        assert_eq!(joined, content);
        let tokens: Vec<&str> = entries.iter().map(|e| e["token"].as_str().unwrap()).collect();
        assert_eq!(tokens, vec!["Looks", " fine", ".", "\n", "Result", ":", &format!(" {chosen}")]);

        for e in entries {
            assert_eq!(e["bytes"], Value::Null);
            assert!(e["logprob"].as_f64().unwrap() <= 0.0);
            let top = e["top_logprobs"].as_array().unwrap();
            assert_eq!(top.len(), 5);
            assert_eq!(top[0]["token"], e["token"]);
            let lps: Vec<f64> = top.iter().map(|t| t["logprob"].as_f64().unwrap()).collect();
            assert!(lps.windows(2).all(|w| w[0] >= w[1]), "sorted best first: {lps:?}");
        }
        let verdict = entries.last().unwrap();
        let top = verdict["top_logprobs"].as_array().unwrap();
        assert_eq!(top[0]["token"].as_str().unwrap(), format!(" {chosen}"));
        assert_eq!(top[1]["token"].as_str().unwrap(), format!(" {other}"));
        assert!((top[0]["logprob"].as_f64().unwrap() - 0.8f64.ln()).abs() < 1e-9);
        assert!((top[1]["logprob"].as_f64().unwrap() - 0.2f64.ln()).abs() < 1e-9);
        assert!((verdict["logprob"].as_f64().unwrap() - 0.8f64.ln()).abs() < 1e-9);
        let others = &entries[0]["top_logprobs"];
        assert!((others[0]["logprob"].as_f64().unwrap() + 0.01).abs() < 1e-9);
    }

    // logprobs off in the config: like a server that ignores the parameter.
    let server = FaultServer::start(ServerConfig::default().with_logprobs(false)).unwrap();
    let mut req = chat("x");
    req["logprobs"] = json!(true);
    req["top_logprobs"] = json!(2);
    let (_, v) = post(&server, "/v1/chat/completions", &req).await;
    assert_eq!(v["choices"][0]["logprobs"], Value::Null);
}

#[tokio::test]
async fn reward_protocol_scores_length() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let text = "x".repeat(250);
    let (status, v) = post(
        &server,
        "/score",
        &json!({"query": "q", "profile": ["post one", "post two"], "response_text": text}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(v, json!({"score": 2.5}));

    // Characters, not bytes.
    let (_, v) = post(
        &server,
        "/score",
        &json!({"query": "q", "profile": "p", "response_text": "é".repeat(10)}),
    )
    .await;
    assert_eq!(v["score"], 0.1);

    let (status, v) = post(
        &server,
        "/score/batch",
        &json!({"items": [
            {"query": "q", "profile": "p", "response_text": "abcd"},
            {"query": "q", "profile": "p", "response_text": ""},
            {"query": "q", "profile": "p", "response_text": "x".repeat(100)}
        ]}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(v, json!({"scores": [0.04, 0.0, 1.0]}));

    // A failure is an HTTP error, never a default score.
    let (status, v) = post(&server, "/score", &json!({"query": "q", "profile": "p"})).await;
    assert_eq!(status, 400);
    assert!(v.get("score").is_none());
}

#[tokio::test]
async fn vllm_classify_and_pooling_shapes() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let (status, v) = post(
        &server,
        "/classify",
        &json!({"model": "rm", "input": ["abcdefghij", "one two three"]}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(v["id"].as_str().unwrap().starts_with("classify-"));
    assert_eq!(v["object"], "list");
    assert_eq!(v["model"], "rm");
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    assert_eq!(
        v["data"][0],
        json!({"index": 0, "label": "LABEL_0", "probs": [0.1], "num_classes": 1})
    );
    assert_eq!(v["data"][1]["index"], 1);
    assert_eq!(v["data"][1]["probs"], json!([0.13]));
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 4, "total_tokens": 4, "completion_tokens": 0, "prompt_tokens_details": null})
    );

    // Chat-style: the last message is scored.
    let (_, v) = post(
        &server,
        "/classify",
        &json!({"model": "rm", "messages": [
            {"role": "user", "content": "a long long question"},
            {"role": "assistant", "content": "12345"}
        ]}),
    )
    .await;
    assert_eq!(v["data"][0]["probs"], json!([0.05]));

    let (status, v) =
        post(&server, "/pooling", &json!({"model": "rm", "input": "x".repeat(42)})).await;
    assert_eq!(status, 200);
    assert!(v["id"].as_str().unwrap().starts_with("pool-"));
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"], json!([{"index": 0, "object": "pooling", "data": [0.42]}]));
    assert_eq!(v["usage"]["completion_tokens"], 0);

    let (status, _) = post(&server, "/classify", &json!({"model": "rm", "input": ""})).await;
    assert_eq!(status, 400);
    let (status, _) = post(&server, "/pooling", &json!({"model": "rm"})).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn log_records_bodies_and_authorization() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let client = reqwest::Client::new();
    let body = chat("logged prompt");
    client
        .post(format!("{}/v1/chat/completions", server.base_url()))
        .bearer_auth("sk-log-test")
        .json(&body)
        .send()
        .await
        .unwrap();
    client.get(format!("{}/v1/models", server.base_url())).send().await.unwrap();
    let resp =
        client.post(format!("{}/nope", server.base_url())).body("not json").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 404);

    assert_eq!(server.requests(), 3);
    let log = server.log();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].method, "POST");
    assert_eq!(log[0].path, "/v1/chat/completions");
    assert_eq!(log[0].body, body);
    assert_eq!(log[0].authorization.as_deref(), Some("Bearer sk-log-test"));
    assert_eq!(log[0].fault, None);
    let raw = serde_json::to_vec(&body).unwrap();
    use sha2::Digest;
    assert_eq!(log[0].body_sha256, hex::encode(sha2::Sha256::digest(&raw)));
    assert_eq!(log[1].path, "/v1/models");
    assert_eq!(log[1].body, Value::Null);
    assert_eq!(log[1].authorization, None);
    assert_eq!(log[2].body, Value::String("not json".into()));

    server.clear_log();
    assert!(server.log().is_empty());
    assert_eq!(server.requests(), 3);

    let quiet = FaultServer::start(ServerConfig::default().with_record(false)).unwrap();
    let (status, _) = post(&quiet, "/v1/chat/completions", &chat("x")).await;
    assert_eq!(status, 200);
    assert_eq!(quiet.requests(), 1);
    assert!(quiet.log().is_empty());
}

#[tokio::test]
async fn delay_applies_to_successful_posts() {
    let server =
        FaultServer::start(ServerConfig::default().with_delay(Duration::from_millis(150))).unwrap();
    let t0 = Instant::now();
    let (status, _) =
        post(&server, "/score", &json!({"query": "q", "profile": "p", "response_text": "r"})).await;
    assert_eq!(status, 200);
    assert!(t0.elapsed() >= Duration::from_millis(150));
    let t0 = Instant::now();
    reqwest::get(format!("{}/v1/models", server.base_url())).await.unwrap();
    assert!(t0.elapsed() < Duration::from_millis(150));
}

#[test]
fn binary_serves_until_killed() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_prbench-fault-server"))
        .args(["--port", "0", "--mode", "slow-ms=60", "--verdict", "a"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let base = line.trim().strip_prefix("listening ").expect(&line).to_owned();
    assert!(base.starts_with("http://127.0.0.1:"));

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (elapsed, v) = rt.block_on(async {
        let t0 = Instant::now();
        let v: Value = reqwest::Client::new()
            .post(format!("{base}/v1/chat/completions"))
            .json(&chat("hello"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (t0.elapsed(), v)
    });
    assert!(elapsed >= Duration::from_millis(60));
    assert_eq!(v["choices"][0]["message"]["content"], "Looks fine.\nResult: A");
    child.kill().unwrap();
    child.wait().unwrap();

    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_prbench-fault-server"))
        .args(["--mode", "sometimes"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

async fn post_raw(url: &str, body: &Value) -> (u16, String) {
    let resp = reqwest::Client::new().post(url).json(body).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

#[tokio::test]
async fn sglang_classify_takes_text_and_answers_embedding_and_meta_info() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let url = format!("{}/classify", server.sglang_base());
    let (status, body) = post_raw(&url, &json!({"text": "<|user|>hi there"})).await;
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["embedding"], json!([0.16]));
    assert_eq!(v["meta_info"]["prompt_tokens"], 2);
    let (status, body) = post_raw(&url, &json!({"text": ["ab", "abcd"]})).await;
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (v[0]["embedding"].clone(), v[1]["embedding"].clone()),
        (json!([0.02]), json!([0.04]))
    );
    // vLLM's shape is not SGLang's: refused like SGLang refuses it.
    for bad in [
        json!({"input": "x"}),
        json!({"messages": [{"role": "user", "content": "x"}]}),
        json!({"text": 3}),
        json!([1]),
    ] {
        let (status, body) = post_raw(&url, &bad).await;
        assert_eq!(status, 400, "{bad}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!((v["object"].as_str(), v["code"].as_u64()), (Some("error"), Some(400)), "{v}");
    }
    // vLLM's /classify at the root is untouched.
    let (status, v) = post(&server, "/classify", &json!({"model": "m", "input": "abc"})).await;
    assert_eq!((status, v["data"][0]["probs"].clone()), (200, json!([0.03])));
}

#[tokio::test]
async fn tei_predict_applies_the_sigmoid_unless_raw_scores_and_validates_with_422() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let url = format!("{}/predict", server.base_url());
    let text = "x".repeat(250);
    let (status, body) =
        post_raw(&url, &json!({"inputs": text, "raw_scores": true, "truncate": false})).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!([{"score": 2.5, "label": "LABEL_0"}])
    );
    let (_, body) = post_raw(&url, &json!({"inputs": text})).await;
    let score = serde_json::from_str::<Value>(&body).unwrap()[0]["score"].as_f64().unwrap();
    assert!((score - 1.0 / (1.0 + (-2.5f64).exp())).abs() < 1e-12, "{score}");
    let (_, body) = post_raw(&url, &json!({"inputs": ["ab", "abc"], "raw_scores": true})).await;
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!([[{"score": 0.02, "label": "LABEL_0"}], [{"score": 0.03, "label": "LABEL_0"}]])
    );
    for bad in [
        json!({"text": "x"}),
        json!({"inputs": ""}),
        json!({"inputs": "x", "raw_scores": "yes"}),
        json!({"inputs": "x", "truncate": 1}),
    ] {
        let (status, body) = post_raw(&url, &bad).await;
        assert_eq!(status, 422, "{bad}");
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap()["error_type"],
            "Validation",
            "{bad}"
        );
    }
    // GET /info names the one label of the head, as TEI's does (a one-label classifier is a
    // "reranker" there).
    let info: Value =
        reqwest::get(format!("{}/info", server.base_url())).await.unwrap().json().await.unwrap();
    assert_eq!(info["model_type"]["reranker"]["id2label"], json!({"0": "LABEL_0"}));
}

#[tokio::test]
async fn openrlhf_get_reward_scores_each_query_and_500s_without_one() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let url = format!("{}/get_reward", server.base_url());
    let (status, body) = post_raw(&url, &json!({"query": ["abcd", "ab"]})).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"rewards": [0.04, 0.02], "scores": [0.04, 0.02], "extra_logs": {"dummy_scores": [0.04, 0.02]}})
    );
    for bad in [json!({"queries": ["x"]}), json!({"query": "x"}), json!({"query": [1]})] {
        let (status, body) = post_raw(&url, &bad).await;
        assert_eq!((status, body.as_str()), (500, "Internal Server Error"), "{bad}");
    }
    let (status, _) = post_raw(
        &format!("{}/get_reward", server.base_url()).replace("/get_reward", "/get_rewards"),
        &json!({}),
    )
    .await;
    assert_eq!(status, 404);
}
