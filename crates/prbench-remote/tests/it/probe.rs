//! The load-time probe of the served reward models (`probe()`), and the label index of engines
//! whose head has several outputs (SGLang in label order, TEI by label name).

use prbench_fault_server::{Fault, FaultRule, FaultServer, ServerConfig};
use prbench_models::chat_template::ChatTemplate;
use prbench_models::{ModelError, RewardModel};
use prbench_remote::probe::{PROBE_ANSWER, PROBE_QUESTION};
use prbench_remote::{
    ChatRenderer, OpenRlhfReward, RemoteOptions, RewardServer, SglangClassify, TeiPredict,
    VllmClassify,
};
use serde_json::json;

use crate::support::*;

fn renderer() -> ChatRenderer {
    ChatRenderer::new(
        ChatTemplate::new(
            "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}",
            "",
            "",
        )
        .unwrap(),
        "test",
    )
}

/// The four newly probed engines plus the reward server, each at `base` (the fault server's
/// root; SGLang's lives under `/sglang`), probed.
fn probes(
    kind: &str,
    urls: Vec<String>,
    opts: RemoteOptions,
) -> (Box<dyn RewardModel>, Result<(), ModelError>) {
    match kind {
        "vllm" => {
            let rm = VllmClassify::new("rm", urls, opts).unwrap();
            let r = rm.probe();
            (Box::new(rm), r)
        }
        "sglang" => {
            let rm = SglangClassify::new("rm", urls, renderer(), opts).unwrap();
            let r = rm.probe();
            (Box::new(rm), r)
        }
        "tei" => {
            let rm = TeiPredict::new("rm", urls, renderer(), opts).unwrap();
            let r = rm.probe();
            (Box::new(rm), r)
        }
        "openrlhf" => {
            let rm = OpenRlhfReward::new("rm", urls, renderer(), opts).unwrap();
            let r = rm.probe();
            (Box::new(rm), r)
        }
        _ => {
            let rm = RewardServer::new(urls, opts).unwrap();
            let r = rm.probe();
            (Box::new(rm), r)
        }
    }
}

const KINDS: [(&str, &str); 5] = [
    ("vllm", "vLLM server"),
    ("sglang", "`sglang-classify:` server"),
    ("tei", "`tei:` server"),
    ("openrlhf", "`openrlhf:` server"),
    ("rs", "reward server"),
];

fn root(kind: &str, server: &FaultServer) -> String {
    if kind == "sglang" {
        server.sglang_base()
    } else {
        server.base_url()
    }
}

fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

#[test]
fn a_probe_sends_one_retried_request_per_url_and_is_not_counted() {
    for (kind, _) in KINDS {
        // Every body's first attempt gets a 500: the probe is retried like any request.
        let a = FaultServer::start(
            ServerConfig::default().with_rule(FaultRule::new("", Fault::ServerError).times(1)),
        )
        .unwrap();
        let b = FaultServer::start(ServerConfig::default()).unwrap();
        let (rm, probed) = probes(kind, vec![root(kind, &a), root(kind, &b)], fast_opts(2));
        probed.unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(a.log().len(), 2, "{kind}: a 500, then the retry");
        assert_eq!(b.log().len(), 1, "{kind}: one request to each URL");
        for r in a.log().iter().chain(&b.log()) {
            let sent = r.body.to_string();
            assert!(
                sent.contains(PROBE_QUESTION) && sent.contains(PROBE_ANSWER),
                "{kind}: the probe item is sent: {sent}"
            );
        }
        let st = rm.call_stats().unwrap();
        assert_eq!(
            (st.requests, st.retries, st.failures),
            (0, 0, 0),
            "{kind}: the probe is not the run's"
        );
    }
}

#[test]
fn a_dead_url_fails_the_probe_naming_it_and_what_to_check() {
    for (kind, server) in KINDS {
        let live = FaultServer::start(ServerConfig::default()).unwrap();
        let dead = dead_url();
        // Two retries against the dead URL, then the error; the live replica does not take over.
        let opts = RemoteOptions { max_retries: 2, ..fast_opts(2) };
        let (_, probed) = probes(kind, vec![root(kind, &live), dead.clone()], opts);
        let err = probed.unwrap_err().to_string();
        assert!(
            err.contains(&format!("{server} `{dead}` did not answer a test request")),
            "{kind}: {err}"
        );
        assert!(err.contains("3 attempts") && err.contains("connection failed"), "{kind}: {err}");
        assert!(err.contains("Check that the server is up and reachable at that URL, that the host and port are right"), "{kind}: {err}");
        assert_eq!(live.log().len(), 1, "{kind}: the live URL was probed once");
    }
}

#[test]
fn a_probe_refuses_a_head_with_several_outputs_and_names_the_flag() {
    let server = serve(|hit| match hit.path.as_str() {
        "/classify" if hit.body.get("text").is_some() => {
            Reply::Json(json!({"embedding": [0.5, -1.0], "meta_info": {"prompt_tokens": 3}}))
        }
        "/classify" => Reply::Json(
            json!({"data": [{"index": 0, "label": "x", "probs": [0.5, -1.0], "num_classes": 2}], "usage": {"prompt_tokens": 3}}),
        ),
        _ => Reply::Json(json!([{"score": 0.5, "label": "good"}, {"score": -1.0, "label": "bad"}])),
    });
    let url = server.url.clone();
    let errs = [
        (
            "vLLM server",
            VllmClassify::new("rm", vec![url.clone()], fast_opts(1)).unwrap().probe().unwrap_err(),
        ),
        (
            "`sglang-classify:` server",
            SglangClassify::new("rm", vec![url.clone()], renderer(), fast_opts(1))
                .unwrap()
                .probe()
                .unwrap_err(),
        ),
        (
            "`tei:` server",
            TeiPredict::new("rm", vec![url.clone()], renderer(), fast_opts(1))
                .unwrap()
                .probe()
                .unwrap_err(),
        ),
    ];
    for (server_name, e) in errs {
        let e = e.to_string();
        assert!(
            e.contains(&format!(
                "{server_name} `{url}` answered a test request, but its answer cannot be used"
            )),
            "{e}"
        );
        assert!(
            e.contains("the head has 2 outputs")
                && e.contains("`--label-index N`")
                && e.contains("example `prbench-probe`"),
            "{e}"
        );
        assert!(!e.contains("Check that the server is up"), "the URL is right: {e}");
    }
    assert_eq!(server.log.count(), 3, "not retried");
}

/// A TEI server with three labels whose predictions come sorted by score, highest first, as
/// TEI's `/predict` sorts them, and whose `/info` names the labels `id2label` order.
fn tei_three_labels(id2label: serde_json::Value) -> Server {
    serve(move |hit| match hit.path.as_str() {
        "/info" => Reply::Json(
            json!({"model_id": "rm", "model_type": {"classifier": {"id2label": id2label.clone(), "label2id": {}}}}),
        ),
        _ => Reply::Json(
            json!([{"score": 2.5, "label": "helpful"}, {"score": 0.25, "label": "neutral"}, {"score": -1.5, "label": "harmful"}]),
        ),
    })
}

#[test]
fn tei_label_index_is_the_label_id_read_by_name_not_the_position_in_the_sorted_reply() {
    let server = tei_three_labels(json!({"0": "harmful", "1": "neutral", "2": "helpful"}));
    let url = server.url.clone();
    for (index, want) in [(0, -1.5), (1, 0.25), (2, 2.5)] {
        let rm = TeiPredict::new("rm", vec![url.clone()], renderer(), fast_opts(2))
            .unwrap()
            .with_label_index(index)
            .unwrap();
        rm.probe().unwrap();
        let scores = rm.score(&[rm_req(0), rm_req(1)]).unwrap();
        assert_eq!(
            scores.iter().map(|s| s.value).collect::<Vec<_>>(),
            [want as f32; 2],
            "label {index}"
        );
        let settings = rm.settings();
        assert_eq!(
            (settings["label_index"].clone(), settings["label"].clone()),
            (json!(index), json!(["harmful", "neutral", "helpful"][index]))
        );
    }
    let paths: Vec<String> = server.log.hits().iter().map(|h| h.path.clone()).collect();
    assert_eq!(
        paths.iter().filter(|p| *p == "/info").count(),
        3,
        "one GET /info per probe: {paths:?}"
    );
    // Without a label index the settings stay as before (cache keys of one-label runs unchanged).
    let plain = TeiPredict::new("rm", vec![url.clone()], renderer(), fast_opts(1)).unwrap();
    assert!(
        plain.settings().get("label_index").is_none() && plain.settings().get("label").is_none()
    );

    // An id the model does not have is refused at the probe, naming the labels.
    let err = TeiPredict::new("rm", vec![url.clone()], renderer(), fast_opts(1))
        .unwrap()
        .with_label_index(3)
        .unwrap()
        .probe()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`--label-index 3`") && err.contains("no label 3") && err.contains("helpful"),
        "{err}"
    );
    // Scoring with a label index before the probe read the label's name is refused, not guessed.
    let rm = TeiPredict::new("rm", vec![url.clone()], renderer(), fast_opts(1))
        .unwrap()
        .with_label_index(0)
        .unwrap();
    let err = rm.score(&[rm_req(0)]).unwrap_err().to_string();
    assert!(err.contains("the name of label 0 is not known") && err.contains("probe()"), "{err}");
    // Replicas serving models whose label ids name different labels are refused.
    let other = tei_three_labels(json!({"0": "helpful", "1": "neutral", "2": "harmful"}));
    let err = TeiPredict::new("rm", vec![url.clone(), other.url.clone()], renderer(), fast_opts(1))
        .unwrap()
        .with_label_index(0)
        .unwrap()
        .probe()
        .unwrap_err()
        .to_string();
    assert!(err.contains("label 0 is `helpful` here but `harmful` on an earlier URL"), "{err}");
}

#[test]
fn sglang_label_index_reads_the_embedding_in_label_order_and_openrlhf_refuses_one() {
    let server = serve(|_| {
        Reply::Json(json!({"embedding": [0.5, -1.0], "meta_info": {"prompt_tokens": 3}}))
    });
    let rm = SglangClassify::new("rm", vec![server.url.clone()], renderer(), fast_opts(1))
        .unwrap()
        .with_label_index(1)
        .unwrap();
    rm.probe().unwrap();
    assert_eq!(rm.score(&[rm_req(0)]).unwrap()[0].value, -1.0);
    assert_eq!(rm.settings()["label_index"], json!(1));
    let rm = SglangClassify::new("rm", vec![server.url.clone()], renderer(), fast_opts(1))
        .unwrap()
        .with_label_index(2)
        .unwrap();
    assert!(rm
        .probe()
        .unwrap_err()
        .to_string()
        .contains("`--label-index 2` is out of range for a head with 2 outputs (0 to 1)"));
    let err = OpenRlhfReward::new("rm", vec![server.url.clone()], renderer(), fast_opts(1))
        .unwrap()
        .with_label_index(0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("--label-index does not apply"), "{err}");
}

#[test]
fn tei_label_index_refuses_a_label_name_several_ids_share() {
    // TEI names each prediction by its label and sorts by score: two ids named `x` cannot be told apart.
    let server = serve(|hit| match hit.path.as_str() {
        "/info" => Reply::Json(
            json!({"model_id": "rm", "model_type": {"classifier": {"id2label": {"0": "x", "1": "x", "2": "y"}, "label2id": {}}}}),
        ),
        _ => Reply::Json(
            json!([{"score": 2.5, "label": "x"}, {"score": 0.25, "label": "y"}, {"score": -1.5, "label": "x"}]),
        ),
    });
    let url = server.url.clone();
    for index in [0, 1] {
        let err = TeiPredict::new("rm", vec![url.clone()], renderer(), fast_opts(1))
            .unwrap()
            .with_label_index(index)
            .unwrap()
            .probe()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!(
                "`tei:` server `{url}` answered a test request, but its answer cannot be used"
            )),
            "{err}"
        );
        assert!(
            err.contains(&format!("`--label-index {index}`"))
                && err.contains("labels 0, 1 of the model's `id2label` are all named `x`"),
            "{err}"
        );
        assert!(err.contains(&format!("which `x` is label {index} cannot be known")), "{err}");
        assert_eq!(err.matches("engine error").count(), 1, "{err}");
    }
    // A label whose name is its own is still read.
    let rm = TeiPredict::new("rm", vec![url.clone()], renderer(), fast_opts(1))
        .unwrap()
        .with_label_index(2)
        .unwrap();
    rm.probe().unwrap();
    assert_eq!(rm.score(&[rm_req(0)]).unwrap()[0].value, 0.25);
}

#[test]
fn a_404_to_a_probe_says_the_path_or_the_model_is_wrong() {
    let server = serve(|_| Reply::Raw(404, "Not Found".into(), vec![]));
    let url = server.url.clone();
    let err = OpenRlhfReward::new("rm", vec![url.clone()], renderer(), fast_opts(1))
        .unwrap()
        .probe()
        .unwrap_err();
    assert_answered(&err, "`openrlhf:` server", &url, &["HTTP 404", "Not Found"]);
    assert!(
        err.to_string().contains("A 404 means the server is up but has no such path or no such model: check that the URL is the server's root (where `/get_reward` hangs"),
        "{err}"
    );
    // Another refusal is not explained as a 404.
    let server = serve(|_| Reply::Raw(400, "bad".into(), vec![]));
    let err = OpenRlhfReward::new("rm", vec![server.url.clone()], renderer(), fast_opts(1))
        .unwrap()
        .probe()
        .unwrap_err()
        .to_string();
    assert!(err.contains("HTTP 400") && !err.contains("A 404 means"), "{err}");
}

/// A probe whose request reached the server says it answered (with the server's status and
/// message), never "did not answer … check that the server is up", and says "engine error" once.
fn assert_answered(err: &ModelError, server: &str, url: &str, has: &[&str]) {
    let e = err.to_string();
    assert!(
        e.contains(&format!(
            "{server} `{url}` answered a test request, but its answer cannot be used: "
        )),
        "{e}"
    );
    assert!(!e.contains("did not answer") && !e.contains("Check that the server is up"), "{e}");
    assert_eq!(e.matches("engine error").count(), 1, "{e}");
    for h in has {
        assert!(e.contains(h), "`{h}` in {e}");
    }
}

#[test]
fn a_probe_that_got_an_http_answer_says_it_answered_and_quotes_it() {
    // 200 with well-formed JSON of the wrong shape: not retried (as for an item), named as answered.
    let server = serve(|hit| match hit.path.as_str() {
        "/classify" if hit.body.get("text").is_some() => Reply::Json(json!({"embedding": "1.5"})),
        "/classify" => Reply::Json(json!({"data": [{"index": 0, "probs": ["1.5"]}]})),
        "/predict" => Reply::Json(json!({"score": 1})),
        "/score" => Reply::Json(json!({"rewards": []})),
        _ => Reply::Json(json!({"rewards": []})),
    });
    let url = server.url.clone();
    let opts = || RemoteOptions { max_retries: 2, ..fast_opts(1) };
    assert_answered(
        &VllmClassify::new("rm", vec![url.clone()], opts()).unwrap().probe().unwrap_err(),
        "vLLM server",
        &url,
        &["HTTP 200 but the reply is not the expected JSON", "not retried"],
    );
    assert_answered(
        &SglangClassify::new("rm", vec![url.clone()], renderer(), opts())
            .unwrap()
            .probe()
            .unwrap_err(),
        "`sglang-classify:` server",
        &url,
        &["HTTP 200"],
    );
    assert_answered(
        &TeiPredict::new("rm", vec![url.clone()], renderer(), opts()).unwrap().probe().unwrap_err(),
        "`tei:` server",
        &url,
        &["HTTP 200"],
    );
    assert_answered(
        &OpenRlhfReward::new("rm", vec![url.clone()], renderer(), opts())
            .unwrap()
            .probe()
            .unwrap_err(),
        "`openrlhf:` server",
        &url,
        &["HTTP 200"],
    );
    assert_answered(
        &RewardServer::new(vec![url.clone()], opts()).unwrap().probe().unwrap_err(),
        "reward server",
        &url,
        &["no `score`"],
    );
    assert_eq!(server.log.count(), 5, "wrong-shape JSON is not retried");

    // Error statuses: vLLM's 404 for a model it does not serve, TEI's 413, TEI's `/info` 404.
    let server = serve(|hit| {
        match hit.path.as_str() {
        "/classify" => Reply::Raw(404, r#"{"object":"error","message":"The model `m` does not exist.","code":404}"#.into(), vec![]),
        "/info" => Reply::Raw(404, "Not Found".into(), vec![]),
        _ => Reply::Raw(413, r#"{"error":"Input validation error: inputs must have less than 512 tokens","error_type":"Validation"}"#.into(), vec![]),
    }
    });
    let url = server.url.clone();
    assert_answered(
        &VllmClassify::new("m", vec![url.clone()], opts()).unwrap().probe().unwrap_err(),
        "vLLM server",
        &url,
        &["HTTP 404", "The model `m` does not exist"],
    );
    assert_answered(
        &TeiPredict::new("rm", vec![url.clone()], renderer(), opts()).unwrap().probe().unwrap_err(),
        "`tei:` server",
        &url,
        &["HTTP 413", "less than 512 tokens"],
    );
    let tei = TeiPredict::new("rm", vec![url.clone()], renderer(), opts())
        .unwrap()
        .with_label_index(1)
        .unwrap();
    assert_answered(
        &tei.probe().unwrap_err(),
        "`tei:` server",
        &url,
        &["GET", "/info", "HTTP 404"],
    );

    // A 200 whose body is not JSON (cut in transit) is retried, as an item's is, then named as answered.
    let server = serve(|_| Reply::Raw(200, "{\"data\": [".into(), vec![]));
    let url = server.url.clone();
    assert_answered(
        &VllmClassify::new("rm", vec![url.clone()], opts()).unwrap().probe().unwrap_err(),
        "vLLM server",
        &url,
        &["3 attempts", "HTTP 200 but the reply is not the expected JSON"],
    );
    assert_eq!(server.log.count(), 3, "invalid JSON is retried");

    // A 503 retried to the end is still an answer (the server is up, it said it is not ready).
    let server = serve(|_| Reply::Raw(503, "loading".into(), vec![]));
    let url = server.url.clone();
    assert_answered(
        &RewardServer::new(vec![url.clone()], opts()).unwrap().probe().unwrap_err(),
        "reward server",
        &url,
        &["3 attempts", "HTTP 503: loading"],
    );
}
