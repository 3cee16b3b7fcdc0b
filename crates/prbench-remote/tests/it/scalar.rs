//! VllmClassify and RewardServer against scripted servers.

use prbench_models::RewardModel;
use prbench_remote::{RewardServer, VllmClassify};
use serde_json::{json, Value};

use crate::support::*;

fn logit(i: usize) -> f64 {
    i as f64 * 0.5 - 3.25
}

fn classify_reply(probs: Value, prompt_tokens: u64) -> Value {
    json!({
        "id": "classify-x", "object": "list", "created": 1, "model": "rm",
        "data": [{"index": 0, "label": "LABEL_0", "probs": probs, "num_classes": probs.as_array().map_or(0, Vec::len)}],
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens, "completion_tokens": 0, "prompt_tokens_details": null}
    })
}

#[test]
fn vllm_classify_scores_in_order_with_chat_messages_and_raw_logits() {
    let server = serve(|hit| {
        assert_eq!(hit.path, "/classify");
        let b = &hit.body;
        assert_eq!(
            (b["model"].as_str(), b["use_activation"].as_bool()),
            (Some("org/rm"), Some(false))
        );
        let i = item_no(&user_text(b));
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[1], json!({"role": "assistant", "content": format!("answer {i}")}));
        Reply::After(
            jitter_ms(i, 20),
            Box::new(Reply::Json(classify_reply(json!([logit(i)]), 10 + i as u64))),
        )
    });
    let rm = VllmClassify::new("org/rm", vec![format!("{}/", server.url)], fast_opts(8)).unwrap();
    let items: Vec<_> = (0..50).map(rm_req).collect();
    let done = DoneLog::default();
    let out = rm.score_each(&items, &|i, s| {
        assert_eq!(s.value, logit(i) as f32);
        done.mark(i)
    });
    assert_eq!(done.indices(), (0..50).collect::<Vec<_>>());
    for (i, s) in out.into_iter().enumerate() {
        let s = s.unwrap();
        assert_eq!(s.value, logit(i) as f32, "item {i}");
        assert_eq!((s.tokens.input_tokens, s.tokens.output_tokens), (10 + i, 0));
    }
    let st = rm.call_stats().unwrap();
    assert_eq!(
        (st.requests, st.failures, st.prompt_tokens, st.completion_tokens),
        (50, 0, (10..60).sum::<u64>(), 0)
    );
    let id = rm.identity();
    // The URL is normalized (trailing `/` dropped) and named with the model: servers that ignore
    // the model name must not share cache entries.
    assert_eq!(
        (id.engine.as_str(), id.file_hash.as_str(), id.spec.as_str()),
        ("vllm classify", format!("org/rm @ {}", server.url).as_str(), "vllm-classify:org/rm")
    );
    assert_eq!(
        rm.settings(),
        json!({"endpoint": "/classify", "extra": {}, "label_index": null, "use_activation": false})
    );
}

#[test]
fn vllm_multi_label_heads_need_a_label_index_and_outputs_must_be_finite() {
    let server = serve(|hit| match item_no(&user_text(&hit.body)) {
        0 => Reply::Json(classify_reply(json!([0.25, -1.5]), 3)),
        _ => Reply::Json(classify_reply(json!([null]), 3)),
    });
    let rm = VllmClassify::new("rm", vec![server.url.clone()], fast_opts(2)).unwrap();
    let err = rm.score(&[rm_req(0)]).unwrap_err().to_string();
    assert!(err.contains("2 outputs") && err.contains("`--label-index N`"), "{err}");
    let err = rm.score(&[rm_req(1)]).unwrap_err().to_string();
    assert!(err.contains("not a finite number"), "{err}");
    assert_eq!(server.log.count(), 2, "a well-formed but unusable reply is not retried");
    let rm = VllmClassify::new("rm", vec![server.url.clone()], fast_opts(2))
        .unwrap()
        .with_label_index(1);
    assert_eq!(rm.score(&[rm_req(0)]).unwrap()[0].value, -1.5);
    assert_eq!(rm.settings()["label_index"], json!(1));
    let rm = VllmClassify::new("rm", vec![server.url.clone()], fast_opts(2))
        .unwrap()
        .with_label_index(2);
    let err = rm.score(&[rm_req(0)]).unwrap_err().to_string();
    assert!(err.contains("`--label-index 2` is out of range for a head with 2 outputs"), "{err}");
}

#[test]
fn reward_server_sends_the_protocol_fields_and_keeps_order() {
    let server = serve(|hit| {
        assert_eq!(hit.path, "/score");
        let b = &hit.body;
        let q = b["query"].as_str().unwrap();
        let i = item_no(q);
        assert_eq!(q, format!("question for item {i}"));
        let want_profile =
            if i.is_multiple_of(2) { format!("likes item {i}") } else { String::new() };
        assert_eq!(b["profile"].as_str(), Some(want_profile.as_str()));
        assert_eq!(b["response_text"].as_str(), Some(format!("answer {i}").as_str()));
        Reply::After(jitter_ms(i, 20), Box::new(Reply::Json(json!({"score": logit(i)}))))
    });
    let rm = RewardServer::new(vec![server.url.clone()], fast_opts(8)).unwrap();
    let items: Vec<_> = (0..50).map(rm_req).collect();
    let scores = rm.score(&items).unwrap();
    assert_eq!(
        scores.iter().map(|s| s.value).collect::<Vec<_>>(),
        (0..50).map(|i| logit(i) as f32).collect::<Vec<_>>()
    );
    let id = rm.identity();
    assert_eq!(
        (id.engine.as_str(), id.file_hash.as_str()),
        ("reward server (PROTOCOL.md §7)", server.url.as_str())
    );
    assert_eq!(
        prbench_remote::served_model_id("m", &["http://b".into(), "http://a".into()]),
        "m @ http://a,http://b"
    );
    assert_eq!(rm.call_stats().unwrap().requests, 50);
}

#[test]
fn reward_server_without_a_finite_score_fails_the_item_never_defaults() {
    let server = serve(|hit| match item_no(hit.body["query"].as_str().unwrap()) {
        0 => Reply::Json(json!({"error": "model crashed"})),
        1 => Reply::Json(json!({"score": "0.5"})),
        2 => Reply::Raw(200, r#"{"score": NaN}"#.into(), vec![]),
        _ => Reply::Json(json!({"score": 1.5})),
    });
    let opts = prbench_remote::RemoteOptions { max_retries: 1, ..fast_opts(4) };
    let rm = RewardServer::new(vec![server.url.clone()], opts).unwrap();
    let out = rm.score_each(&(0..4).map(rm_req).collect::<Vec<_>>(), &|_, _| {});
    let e0 = out[0].as_ref().unwrap_err().to_string();
    assert!(e0.contains("no `score`") && e0.contains("ex-0"), "{e0}");
    assert!(out[1].as_ref().unwrap_err().to_string().contains("`score` = \"0.5\""));
    // NaN is not JSON: retried like a broken body, then failed.
    assert!(out[2].as_ref().unwrap_err().to_string().contains("2 attempts"));
    assert_eq!(out[3].as_ref().unwrap().value, 1.5);
    assert_eq!(rm.call_stats().unwrap().failures, 3);
}
