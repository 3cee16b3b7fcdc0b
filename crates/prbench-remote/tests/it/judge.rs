//! OpenAiChat / OpenAiJudge against a scripted OpenAI-compatible server.

use prbench_models::{ChatRequest, Choice, Generator, Judge};
use prbench_remote::{JudgeConfig, OpenAiChat, OpenAiJudge, VerdictSource};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::support::*;

fn expected_seed(seed: u64, id: &str) -> u64 {
    let d = Sha256::digest([seed.to_le_bytes().as_slice(), id.as_bytes()].concat());
    (u32::from_be_bytes([d[0], d[1], d[2], d[3]]) & 0x7FFF_FFFF) as u64
}

fn reply_for(i: usize) -> &'static str {
    match i % 3 {
        0 => "Response A fits.\nResult: A",
        1 => "**Result:** B",
        _ => "I cannot decide.",
    }
}

#[test]
fn text_verdicts_come_back_in_order_with_tokens_summed() {
    let server = serve(|hit| {
        let i = item_no(&user_text(&hit.body));
        Reply::After(
            jitter_ms(i, 25),
            Box::new(Reply::Json(chat_json(reply_for(i), i as u64 + 1, 2 * i as u64 + 1))),
        )
    });
    let chat =
        OpenAiChat::new("judge-m", vec![format!("{}/v1", server.url)], fast_opts(8)).unwrap();
    let judge = OpenAiJudge::new(
        chat,
        JudgeConfig { verdict: VerdictSource::Text, ..JudgeConfig::default() },
    )
    .unwrap();
    let items: Vec<_> = (0..50).map(judge_req).collect();
    let done = DoneLog::default();
    let results = judge.judge_each(&items, &|i, v| {
        assert_eq!(v.raw, reply_for(i), "done got item {i}'s verdict");
        done.mark(i)
    });
    assert_eq!(done.indices(), (0..50).collect::<Vec<_>>());
    for (i, r) in results.iter().enumerate() {
        let v = r.as_ref().unwrap();
        let want = [Choice::A, Choice::B, Choice::Unparsed][i % 3];
        assert_eq!(v.choice, want, "item {i}");
        assert_eq!(v.raw, reply_for(i));
        assert_eq!((v.p_a, v.margin), (None, None));
        assert_eq!(
            (v.tokens.input_tokens, v.tokens.output_tokens, v.tokens.truncated_tokens),
            (i + 1, 2 * i + 1, 0)
        );
    }
    let stats = judge.call_stats().unwrap();
    assert_eq!((stats.requests, stats.retries, stats.failures), (50, 0, 0));
    assert_eq!(stats.prompt_tokens, (1..=50).sum::<u64>());
    assert_eq!(stats.completion_tokens, (0..50u64).map(|i| 2 * i + 1).sum::<u64>());
    let peak = server.log.max_in_flight.load(std::sync::atomic::Ordering::SeqCst);
    assert!((2..=8).contains(&peak), "peak in flight {peak}");
    for hit in server.log.hits() {
        assert_eq!(hit.path, "/v1/chat/completions");
        let b = &hit.body;
        let i = item_no(&user_text(b));
        assert_eq!(b["model"], "judge-m");
        assert_eq!(b["messages"][0], json!({"role": "system", "content": "You judge."}));
        assert_eq!(
            (b["temperature"].as_f64(), b["top_p"].as_f64(), b["max_tokens"].as_u64()),
            (Some(0.0), Some(1.0), Some(512))
        );
        assert_eq!(b["seed"].as_u64(), Some(expected_seed(42, &format!("ex-{i}"))));
        assert!(b.get("logprobs").is_none() && b.get("top_logprobs").is_none());
        assert!(hit.auth.is_none());
    }
    // judge() is judge_each without the hook; the seeds do not depend on batch or order.
    let again = judge.judge(&[items[7].clone()]).unwrap();
    assert_eq!(again[0].choice, Choice::B);
    let last = server.log.hits().pop().unwrap();
    assert_eq!(last.body["seed"].as_u64(), Some(expected_seed(42, "ex-7")));
    let d = judge.decoding();
    assert_eq!(d["verdict"], "text");
    assert_eq!(d["detected"], false);
    assert!(!d.to_string().contains("127.0.0.1"));
}

/// The llama.cpp reply shape, with top alternatives at the verdict token.
fn logprob_reply(content: &str, pieces: &[&str], at: usize, top: &[(&str, f64)]) -> Value {
    let toks: Vec<Value> = pieces
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let alts: Vec<Value> = if k == at {
                top.iter().map(|(t, l)| json!({"token": t, "logprob": l, "bytes": null})).collect()
            } else {
                vec![json!({"token": p, "logprob": -0.05, "bytes": null})]
            };
            json!({"token": p, "logprob": -0.05, "bytes": null, "top_logprobs": alts})
        })
        .collect();
    let mut v = chat_json(content, 30, pieces.len() as u64);
    v["choices"][0]["logprobs"] = json!({"content": toks, "refusal": null});
    v
}

#[test]
fn auto_detects_logprobs_and_reads_p_a_at_the_verdict_letter() {
    let server = serve(|hit| {
        let b = &hit.body;
        if b["max_tokens"] == 1 {
            // The construction probe.
            assert_eq!(
                (b["logprobs"].as_bool(), b["top_logprobs"].as_u64()),
                (Some(true), Some(2))
            );
            return Reply::Json(logprob_reply("A", &["A"], 0, &[("A", -0.1), ("B", -2.0)]));
        }
        assert_eq!((b["logprobs"].as_bool(), b["top_logprobs"].as_u64()), (Some(true), Some(20)));
        match item_no(&user_text(b)) {
            0 => Reply::Json(logprob_reply(
                "A) steak\nResult: B",
                &["A", ")", " steak", "\n", "Result", ":", " B"],
                6,
                &[(" B", -0.2), (" A", -1.7), ("B", -3.0), (" The", -4.0)],
            )),
            // No A among the alternatives: a miss, the verdict still parsed.
            1 => Reply::Json(logprob_reply(
                "Result: A",
                &["Result", ":", " A"],
                2,
                &[(" A", -0.01), (" The", -5.0)],
            )),
            // Unparsed: a miss.
            2 => Reply::Json(logprob_reply("Hmm.", &["Hmm", "."], 1, &[(".", -0.1)])),
            // Server dropped logprobs for this one: a miss.
            _ => Reply::Json(chat_json("Result: A", 1, 1)),
        }
    });
    let chat = OpenAiChat::new("m", vec![format!("{}/v1", server.url)], fast_opts(4)).unwrap();
    let judge = OpenAiJudge::new(chat, JudgeConfig::default()).unwrap();
    assert!(judge.uses_logprobs());
    let items: Vec<_> = (0..4).map(judge_req).collect();
    let v = judge.judge(&items).unwrap();
    assert_eq!(
        v.iter().map(|v| v.choice).collect::<Vec<_>>(),
        vec![Choice::B, Choice::A, Choice::Unparsed, Choice::A]
    );
    let la = -1.7f64;
    let lb = ((-0.2f64).exp() + (-3.0f64).exp()).ln();
    let margin = v[0].margin.unwrap() as f64;
    assert!((margin - (la - lb)).abs() < 1e-5, "{margin}");
    assert!((v[0].p_a.unwrap() as f64 - 1.0 / (1.0 + (lb - la).exp())).abs() < 1e-5);
    assert_eq!(v[0].raw, "A) steak\nResult: B");
    assert!(v[1..].iter().all(|v| v.p_a.is_none() && v.margin.is_none()));
    assert_eq!(judge.logprob_misses(), 3);
    let d = judge.decoding();
    assert_eq!(d, judge.decoding());
    assert_eq!(
        (d["verdict"].as_str(), d["detected"].as_bool(), d["top_logprobs"].as_u64()),
        (Some("logprob"), Some(true), Some(20))
    );
    // The probe is one request; 4 items make 4 more.
    assert_eq!(judge.call_stats().unwrap().requests, 5);
}

#[test]
fn auto_falls_back_to_text_when_the_server_rejects_or_ignores_logprobs() {
    let rejecting = serve(|hit| {
        if hit.body.get("logprobs").is_some() {
            Reply::Raw(400, r#"{"error":"logprobs not supported"}"#.into(), vec![])
        } else {
            Reply::Json(chat_json("Result: B", 3, 2))
        }
    });
    let chat = OpenAiChat::new("m", vec![rejecting.url.clone()], fast_opts(2)).unwrap();
    let judge = OpenAiJudge::new(chat, JudgeConfig::default()).unwrap();
    assert!(!judge.uses_logprobs());
    assert_eq!(judge.judge(&[judge_req(0)]).unwrap()[0].choice, Choice::B);
    assert_eq!(rejecting.log.count(), 2, "one probe, one item, no retry of the 400");
    assert_eq!(
        (judge.decoding()["verdict"].as_str(), judge.decoding()["detected"].as_bool()),
        (Some("text"), Some(true))
    );
    assert_eq!(judge.logprob_misses(), 0);

    let ignoring = serve(|_| Reply::Json(chat_json("Result: A", 3, 2)));
    let chat = OpenAiChat::new("m", vec![ignoring.url.clone()], fast_opts(2)).unwrap();
    assert!(!OpenAiJudge::new(chat, JudgeConfig::default()).unwrap().uses_logprobs());
}

#[test]
fn a_wrong_path_or_key_stops_the_judge_at_load() {
    for status in [401u16, 403, 404] {
        let server = serve(move |_| Reply::Raw(status, r#"{"error":"nope"}"#.into(), vec![]));
        let chat = OpenAiChat::new("m", vec![server.url.clone()], fast_opts(2)).unwrap();
        let e = OpenAiJudge::new(chat, JudgeConfig::default()).unwrap_err().to_string();
        assert!(e.contains(&format!("HTTP {status}")) && e.contains("base URL"), "{e}");
        assert_eq!(server.log.count(), 1, "a refusal is not retried");
    }
}

#[test]
fn extra_fields_cannot_override_decoding() {
    for key in
        ["temperature", "top_p", "max_tokens", "seed", "logprobs", "top_logprobs", "n", "model"]
    {
        let mut extra = serde_json::Map::new();
        extra.insert(key.into(), json!(1));
        let e = OpenAiChat::new("m", vec!["http://127.0.0.1:9".into()], fast_opts(1))
            .unwrap()
            .with_extra(extra)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("`{key}` is reserved")), "{e}");
    }
}

#[test]
fn decoding_is_deterministic_sorted_and_records_extra() {
    let server = serve(|_| Reply::Json(chat_json("Result: A", 1, 1)));
    let mut extra = serde_json::Map::new();
    extra.insert("repeat_penalty".into(), json!(1.0));
    extra.insert("chat_template_kwargs".into(), json!({"z": 1, "enable_thinking": false}));
    let chat = OpenAiChat::new("m", vec![server.url.clone()], fast_opts(2))
        .unwrap()
        .with_extra(extra)
        .unwrap()
        .with_spec("openai:m@X");
    let cfg = JudgeConfig {
        temperature: 0.7,
        top_p: 0.9,
        max_tokens: 64,
        seed: 7,
        verdict: VerdictSource::Logprobs,
    };
    let judge = OpenAiJudge::new(chat, cfg).unwrap();
    assert_eq!(server.log.count(), 0, "no probe unless Auto");
    let text = judge.decoding().to_string();
    assert_eq!(text, judge.decoding().to_string());
    assert!(text.starts_with(r#"{"detected":false,"extra":{"chat_template_kwargs":{"enable_thinking":false,"z":1},"repeat_penalty":1.0},"max_tokens":64,"#), "{text}");
    assert!(
        text.contains(r#""temperature":0.7"#)
            && text.contains(r#""top_p":0.9"#)
            && text.contains(r#""verdict":"logprob""#),
        "{text}"
    );
    let id = judge.identity();
    assert_eq!(
        (
            id.spec.as_str(),
            id.engine.as_str(),
            id.file_hash.as_str(),
            id.chat_template_hash.as_str(),
            id.dtype.as_str()
        ),
        ("openai:m@X", "openai-compatible chat", format!("m @ {}", server.url).as_str(), "", "n/a")
    );
    judge.judge(&[judge_req(1)]).unwrap();
    let b = &server.log.hits()[0].body;
    assert_eq!(b["repeat_penalty"], json!(1.0));
    assert_eq!(b["chat_template_kwargs"]["enable_thinking"], json!(false));
    assert_eq!(b["seed"].as_u64(), Some(expected_seed(7, "ex-1")));
    assert_eq!((b["max_tokens"].as_u64(), b["temperature"].as_f64()), (Some(64), Some(0.7)));
}

#[test]
fn generator_replies_null_content_and_finish_reason() {
    let server = serve(|hit| {
        let i = item_no(&user_text(&hit.body));
        let mut v = chat_json(&format!("reply {i}"), 5, i as u64);
        if i == 2 {
            v["choices"][0]["message"]["content"] = Value::Null;
            v["choices"][0]["finish_reason"] = json!("length");
            v.as_object_mut().unwrap().remove("usage");
        }
        Reply::After(jitter_ms(i, 10), Box::new(Reply::Json(v)))
    });
    let chat = OpenAiChat::new("gen", vec![server.url.clone()], fast_opts(3)).unwrap();
    let reqs: Vec<ChatRequest> = (0..4)
        .map(|i| ChatRequest {
            prompt: judge_req(i).prompt,
            max_new_tokens: 16,
            temperature: 1.0,
            top_p: 0.9,
            seed: u64::MAX - i as u64,
        })
        .collect();
    let out = chat.generate(&reqs).unwrap();
    assert_eq!(
        out.iter().map(|r| r.text.as_str()).collect::<Vec<_>>(),
        vec!["reply 0", "reply 1", "", "reply 3"]
    );
    assert_eq!(out[2].tokens.input_tokens, 0);
    assert_eq!(out[3].tokens.output_tokens, 3);
    let replies = chat.chat_each(&reqs[2..3], None, &|_, _| {});
    let r = replies[0].as_ref().unwrap();
    assert_eq!(
        (r.text.as_str(), r.finish_reason.as_deref(), r.logprobs.is_none()),
        ("", Some("length"), true)
    );
    for hit in server.log.hits() {
        let i = item_no(&user_text(&hit.body)) as u64;
        assert_eq!(hit.body["seed"].as_u64(), Some(prbench_remote::fold_seed(u64::MAX - i) as u64));
        assert!(hit.body["seed"].as_u64().unwrap() < 1 << 31);
        assert_eq!(hit.body["max_tokens"].as_u64(), Some(16));
    }
}

#[test]
fn an_assistant_prefix_fails_the_item_without_a_request() {
    let server = serve(|_| Reply::Json(chat_json("Result: A", 1, 1)));
    let chat = OpenAiChat::new("m", vec![server.url.clone()], fast_opts(2)).unwrap();
    let judge = OpenAiJudge::new(
        chat,
        JudgeConfig { verdict: VerdictSource::Text, ..JudgeConfig::default() },
    )
    .unwrap();
    let mut bad = judge_req(0);
    bad.prompt.assistant_prefix = "Result:".into();
    let out = judge.judge_each(&[bad, judge_req(1)], &|_, _| {});
    assert!(out[0].as_ref().unwrap_err().to_string().contains("cannot continue an assistant turn"));
    assert_eq!(out[1].as_ref().unwrap().choice, Choice::A);
    assert_eq!(server.log.count(), 1);
}
