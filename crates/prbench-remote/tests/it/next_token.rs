//! ServerLogprobJudge (logprob verdicts through a server) against the fault server: the request
//! shape of each transport, the transport choice, verdicts and the missing-letter count.

use prbench_fault_server::{FaultServer, Letter, ServerConfig, VerdictRule, PROPS_TEMPLATE};
use prbench_models::{Choice, Judge, JudgeRequest};
use prbench_remote::{
    LogprobTransport, NextTokenConfig, OpenAiChat, RemoteOptions, ServerLogprobJudge,
};
use serde_json::{json, Value};

use crate::support::*;

fn judge(server: &FaultServer, transport: Option<LogprobTransport>) -> ServerLogprobJudge {
    let mut extra = serde_json::Map::new();
    extra.insert("cache_prompt".into(), json!(false));
    let chat = OpenAiChat::new("fault-model", vec![server.openai_base()], fast_opts(4))
        .unwrap()
        .with_extra(extra)
        .unwrap();
    ServerLogprobJudge::new(chat, NextTokenConfig { transport, ..NextTokenConfig::default() })
        .unwrap()
}

/// The letter the fault server gives an item: its rule over the message contents.
fn letter_of(item: &JudgeRequest) -> Choice {
    let contents: String = item.prompt.messages.iter().map(|m| m.content.as_str()).collect();
    match VerdictRule::Hash.letter_for(&contents) {
        Some(Letter::A) => Choice::A,
        Some(Letter::B) => Choice::B,
        None => unreachable!("the hash rule always decides"),
    }
}

fn posts(server: &FaultServer, path: &str) -> Vec<Value> {
    server.log().into_iter().filter(|r| r.path == path).map(|r| r.body).collect()
}

#[test]
fn chat_prefill_is_tried_first_and_sends_the_prefix_as_an_assistant_turn() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let j = judge(&server, None);
    assert_eq!(j.transport(), LogprobTransport::ChatPrefill);
    assert!(j.detected());
    let items: Vec<_> = (0..12).map(judge_req).collect();
    let verdicts = j.judge(&items).unwrap();
    let ln = |p: f64| p.ln();
    for (item, v) in items.iter().zip(&verdicts) {
        let want = letter_of(item);
        assert_eq!(v.choice, want, "{}", item.pair.example_id);
        // The chosen letter has ln 0.8, the other ln 0.2: margin ±ln 4, p_A 0.8 or 0.2.
        let m = if want == Choice::A { ln(0.8) - ln(0.2) } else { ln(0.2) - ln(0.8) };
        assert!((v.margin.unwrap() as f64 - m).abs() < 1e-5);
        assert!((v.p_a.unwrap() as f64 - 1.0 / (1.0 + (-m).exp())).abs() < 1e-5);
    }
    assert!(verdicts.iter().any(|v| v.choice == Choice::A));
    assert!(verdicts.iter().any(|v| v.choice == Choice::B));
    let bodies = posts(&server, "/v1/chat/completions");
    assert_eq!(bodies.len(), 13, "one probe and one request per item");
    for b in &bodies {
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(msgs.last().unwrap(), &json!({"role": "assistant", "content": "Result:"}));
        assert_eq!(b["continue_final_message"], json!(true));
        assert_eq!(b["add_generation_prompt"], json!(false));
        assert_eq!(b["max_tokens"], json!(1));
        assert_eq!(b["logprobs"], json!(true));
        assert_eq!(b["top_logprobs"], json!(20));
        assert_eq!(b["temperature"], json!(0.0));
        assert_eq!(b["cache_prompt"], json!(false));
    }
    assert!(posts(&server, "/v1/completions").is_empty());
    assert_eq!(j.missing_letters(), 0);
    let d = j.decoding();
    assert_eq!(d["verdict"], "next-token-logprob");
    assert_eq!(d["transport"], "chat-prefill");
    assert!(j.identity().engine.contains("chat-prefill"));
}

#[test]
fn without_prefill_the_completions_endpoint_renders_the_servers_template() {
    let server = FaultServer::start(ServerConfig::default().with_prefill(false)).unwrap();
    let j = judge(&server, None);
    assert_eq!(j.transport(), LogprobTransport::Completions);
    let items: Vec<_> = (0..8).map(judge_req).collect();
    let verdicts = j.judge(&items).unwrap();
    for (item, v) in items.iter().zip(&verdicts) {
        assert_eq!(v.choice, letter_of(item), "the same letter as through the chat endpoint");
        assert!(v.p_a.is_some());
    }
    let bodies = posts(&server, "/v1/completions");
    assert_eq!(bodies.len(), 9);
    // The prompt is the ChatML of GET /props, generation prompt, then the prefix.
    let want = "<|im_start|>system\nYou judge.<|im_end|>\n<|im_start|>user\nJudge item 3.<|im_end|>\n<|im_start|>assistant\nResult:";
    assert!(bodies.iter().any(|b| b["prompt"] == want), "{bodies:?}");
    for b in &bodies {
        assert_eq!(b["logprobs"], json!(20));
        assert_eq!(b["max_tokens"], json!(1));
        assert!(b.get("messages").is_none());
    }
    let id = j.identity();
    assert!(id.engine.contains("completions"));
    let t = prbench_models::chat_template::ChatTemplate::new(PROPS_TEMPLATE, "", "").unwrap();
    assert_eq!(id.chat_template_hash, t.hash());
}

#[test]
fn a_forced_transport_is_used_or_refused() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let j = judge(&server, Some(LogprobTransport::Completions));
    assert_eq!(j.transport(), LogprobTransport::Completions);
    assert!(!j.detected());
    assert!(posts(&server, "/v1/chat/completions").is_empty(), "no chat probe when forced");

    let server = FaultServer::start(ServerConfig::default().with_prefill(false)).unwrap();
    let chat = OpenAiChat::new("m", vec![server.openai_base()], fast_opts(1)).unwrap();
    let e = ServerLogprobJudge::new(
        chat,
        NextTokenConfig {
            transport: Some(LogprobTransport::ChatPrefill),
            ..NextTokenConfig::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("chat-prefill: HTTP 400") && e.contains("--verdict generate"), "{e}");

    let server =
        FaultServer::start(ServerConfig::default().with_prefill(false).with_completions(false))
            .unwrap();
    let chat = OpenAiChat::new("m", vec![server.openai_base()], RemoteOptions::default()).unwrap();
    let e = ServerLogprobJudge::new(chat, NextTokenConfig::default()).unwrap_err().to_string();
    assert!(e.contains("chat-prefill: HTTP 400") && e.contains("GET /props"), "{e}");
}

#[test]
fn a_missing_letter_is_counted_and_left_unparsed() {
    let server = FaultServer::start(
        ServerConfig::default().with_lone_letter("item 2.").with_lone_letter("item 5."),
    )
    .unwrap();
    let j = judge(&server, None);
    let items: Vec<_> = (0..8).map(judge_req).collect();
    let verdicts = j.judge(&items).unwrap();
    for (i, v) in verdicts.iter().enumerate() {
        if i == 2 || i == 5 {
            assert_eq!(v.choice, Choice::Unparsed, "item {i}");
            assert_eq!((v.p_a, v.margin), (None, None));
            assert!(v.raw.starts_with("missing letter: "), "{}", v.raw);
        } else {
            assert_eq!(v.choice, letter_of(&items[i]));
        }
    }
    assert_eq!(j.missing_letters(), 2);
    // No letter at all (the garbage rule) is a miss as well.
    let server =
        FaultServer::start(ServerConfig::default().with_verdict(VerdictRule::Garbage)).unwrap();
    let j = judge(&server, None);
    let v = j.judge(&[judge_req(0)]).unwrap();
    assert!(v[0].raw.starts_with("missing letter: A and B"), "{}", v[0].raw);
    assert_eq!(j.missing_letters(), 1);
}
