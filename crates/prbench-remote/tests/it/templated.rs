//! SglangClassify, TeiPredict and OpenRlhfReward (reward models behind servers that take text
//! rendered with the chat template) against the fault server: the rendered text each receives,
//! values, replicas, faults and refusals.

use std::time::Duration;

use prbench_fault_server::{Fault, FaultRule, FaultServer, ServerConfig};
use prbench_models::chat_template::ChatTemplate;
use prbench_models::RewardModel;
use prbench_remote::{
    ChatRenderer, OpenRlhfReward, RemoteOptions, RenderedRewardModel, SglangClassify, TeiPredict,
    TemplatedRewardModel, TextEndpoint,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::support::*;

/// A tiny chat template with a BOS string, written here so the expected text is known.
const TEMPLATE: &str = "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}";

fn renderer() -> ChatRenderer {
    ChatRenderer::new(ChatTemplate::new(TEMPLATE, "<s>", "<|end|>").unwrap(), "dir:/test/rm")
}

/// What `rm_req(i)` must look like once rendered, computed by hand from the template above.
fn expected_text(i: usize, with_bos: bool) -> String {
    let req = rm_req(i);
    let user = &req.prompt.messages[0].content;
    let answer = &req.prompt.messages[1].content;
    format!(
        "{}<|user|>\n{user}<|end|>\n<|assistant|>\n{answer}<|end|>\n",
        if with_bos { "<s>" } else { "" }
    )
}

fn score_of(text: &str) -> f32 {
    (text.chars().count() as f64 / 100.0) as f32
}

/// The text a logged request carried, per engine.
fn sent_text(kind: &str, body: &Value) -> String {
    match kind {
        "sglang-classify" => body["text"].as_str(),
        "tei" => body["inputs"].as_str(),
        _ => body["query"][0].as_str(),
    }
    .unwrap_or_else(|| panic!("{kind}: no text in {body}"))
    .to_string()
}

struct Case {
    kind: &'static str,
    path: &'static str,
    with_bos: bool,
}

const CASES: [Case; 3] = [
    Case { kind: "sglang-classify", path: "/sglang/classify", with_bos: false },
    Case { kind: "tei", path: "/predict", with_bos: false },
    Case { kind: "openrlhf", path: "/get_reward", with_bos: true },
];

fn base(kind: &str, server: &FaultServer) -> String {
    if kind == "sglang-classify" {
        server.sglang_base()
    } else {
        server.base_url()
    }
}

fn build(kind: &str, urls: Vec<String>, opts: RemoteOptions) -> Box<dyn RenderedRewardModel> {
    match kind {
        "sglang-classify" => {
            Box::new(SglangClassify::new("org/rm", urls, renderer(), opts).unwrap())
        }
        "tei" => Box::new(TeiPredict::new("org/rm", urls, renderer(), opts).unwrap()),
        _ => Box::new(OpenRlhfReward::new("org/rm", urls, renderer(), opts).unwrap()),
    }
}

#[test]
fn each_engine_gets_the_rendered_conversation_and_scores_it_over_replicas() {
    for case in CASES {
        let a = FaultServer::start(ServerConfig::default()).unwrap();
        let b = FaultServer::start(ServerConfig::default()).unwrap();
        let rm = build(case.kind, vec![base(case.kind, &a), base(case.kind, &b)], fast_opts(8));
        let items: Vec<_> = (0..30).map(rm_req).collect();
        let done = DoneLog::default();
        let out = rm.score_each(&items, &|i, _| done.mark(i));
        assert_eq!(done.indices(), (0..30).collect::<Vec<_>>());
        for (i, s) in out.into_iter().enumerate() {
            let s = s.unwrap_or_else(|e| panic!("{}: item {i}: {e}", case.kind));
            assert_eq!(
                s.value,
                score_of(&expected_text(i, case.with_bos)),
                "{}: item {i}",
                case.kind
            );
        }
        let mut log = a.log();
        log.extend(b.log());
        assert!(!a.log().is_empty() && !b.log().is_empty(), "{}: both replicas serve", case.kind);
        assert_eq!(log.len(), 30, "{}", case.kind);
        let mut texts: Vec<String> = log
            .iter()
            .map(|r| {
                assert_eq!(r.path, case.path);
                sent_text(case.kind, &r.body)
            })
            .collect();
        texts.sort();
        let mut want: Vec<String> = (0..30).map(|i| expected_text(i, case.with_bos)).collect();
        want.sort();
        assert_eq!(texts, want, "{}: the text sent is the chat-template rendering", case.kind);
        if case.kind == "tei" {
            assert!(
                log.iter()
                    .all(|r| r.body["raw_scores"] == json!(true)
                        && r.body["truncate"] == json!(false))
            );
        }
        let id = rm.identity();
        let mut urls = [base(case.kind, &a), base(case.kind, &b)];
        urls.sort();
        assert_eq!(id.file_hash, format!("org/rm @ {}", urls.join(",")));
        assert_eq!(id.chat_template_hash, hex::encode(Sha256::digest(TEMPLATE.as_bytes())));
        assert!(id.spec.starts_with(&format!("{}:org/rm@http://", case.kind)), "{}", id.spec);
        assert_eq!(rm.settings()["chat_template"], "dir:/test/rm");
        assert_eq!(rm.settings()["strip_bos"], json!(!case.with_bos));
        let st = rm.call_stats().unwrap();
        assert_eq!((st.requests, st.failures), (30, 0));
    }
}

#[test]
fn sglang_reports_the_servers_prompt_tokens() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let rm = SglangClassify::new("org/rm", vec![server.sglang_base()], renderer(), fast_opts(2))
        .unwrap();
    let s = rm.score(&[rm_req(1)]).unwrap()[0];
    // The fault server counts words.
    assert_eq!(s.tokens.input_tokens, expected_text(1, false).split_whitespace().count());
    assert_eq!(
        rm.identity().engine,
        <prbench_remote::sglang::SglangEndpoint as TextEndpoint>::ENGINE
    );
}

#[test]
fn token_counts_a_server_does_not_report_are_counted_as_unreported_not_as_0() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let items: Vec<_> = (0..3).map(rm_req).collect();
    // SGLang counts the words of each text (the fault server's rule): all reported.
    let rm = SglangClassify::new("org/rm", vec![server.sglang_base()], renderer(), fast_opts(2))
        .unwrap();
    rm.score(&items).unwrap();
    let st = rm.call_stats().unwrap();
    let words: u64 =
        (0..3).map(|i| expected_text(i, false).split_whitespace().count() as u64).sum();
    assert_eq!(
        (
            st.prompt_tokens,
            st.unreported_prompt_tokens,
            st.completion_tokens,
            st.unreported_completion_tokens
        ),
        (words, 0, 0, 0)
    );
    // OpenRLHF and TEI give no count: three replies unreported, nothing summed.
    for kind in ["openrlhf", "tei"] {
        let rm = build(kind, vec![base(kind, &server)], fast_opts(2));
        rm.score(&items).unwrap();
        let st = rm.call_stats().unwrap();
        assert_eq!(
            (
                st.prompt_tokens,
                st.unreported_prompt_tokens,
                st.completion_tokens,
                st.unreported_completion_tokens
            ),
            (0, 3, 0, 0),
            "{kind}"
        );
    }
}

#[test]
fn the_preflight_view_is_the_text_sent_and_says_what_became_of_the_bos() {
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    for case in CASES {
        let rm = build(case.kind, vec![base(case.kind, &server)], fast_opts(1));
        let view = rm.preflight(&rm_req(2)).unwrap();
        assert!(server.log().is_empty(), "{}: the preflight sends nothing", case.kind);
        assert_eq!(view.text, expected_text(2, case.with_bos), "{}", case.kind);
        assert_eq!(
            (view.bos_token.as_str(), view.bos_dropped, view.template_origin.as_str()),
            ("<s>", !case.with_bos, "dir:/test/rm"),
            "{}",
            case.kind
        );
        let shown = view.to_string();
        assert!(shown.starts_with("----- text sent to the server (rendered here with the chat template of dir:/test/rm) -----\n"), "{shown}");
        assert!(
            shown.contains(&format!(
                "\n{}\n-----\ncharacters: {};",
                view.text,
                expected_text(2, case.with_bos).chars().count()
            )),
            "{shown}"
        );
        let bos = if case.with_bos {
            "BOS: `<s>` sent as the template wrote it"
        } else {
            "BOS: the template's `<s>` dropped before sending (the server adds its own)"
        };
        assert!(shown.contains(bos), "{}: {shown}", case.kind);
        // The view is what an item sends.
        rm.score(&[rm_req(2)]).unwrap();
        assert_eq!(sent_text(case.kind, &server.log()[0].body), view.text, "{}", case.kind);
        server.clear_log();
    }
}

#[test]
fn every_transient_fault_is_retried_to_the_same_scores() {
    for case in CASES {
        let server = FaultServer::start(
            ServerConfig::default()
                .with_rule(
                    FaultRule::new("", Fault::RateLimited { retry_after: Some("0".into()) })
                        .times(1),
                )
                .with_rule(FaultRule::new("", Fault::TruncatedJson).times(1))
                .with_rule(FaultRule::new("", Fault::DropConnection).times(1))
                .with_rule(FaultRule::new("", Fault::DropMidBody).times(1))
                .with_rule(FaultRule::new("item 3", Fault::Slow(Duration::from_secs(3))).times(1))
                .with_rule(FaultRule::new("item 4", Fault::ServerError).times(2)),
        )
        .unwrap();
        let opts =
            RemoteOptions { timeout: Duration::from_millis(800), max_retries: 8, ..fast_opts(4) };
        let rm = build(case.kind, vec![base(case.kind, &server)], opts);
        let items: Vec<_> = (0..6).map(rm_req).collect();
        let scores = rm.score(&items).unwrap_or_else(|e| panic!("{}: {e}", case.kind));
        for (i, s) in scores.iter().enumerate() {
            assert_eq!(
                s.value,
                score_of(&expected_text(i, case.with_bos)),
                "{}: item {i}",
                case.kind
            );
        }
        let st = rm.call_stats().unwrap();
        // Four faults per body, one more timeout for item 3 and two more 500s for item 4.
        assert_eq!((st.retries, st.failures), (6 * 4 + 1 + 2, 0), "{}", case.kind);
    }
}

#[test]
fn a_4xx_fails_at_once_and_names_the_url() {
    for case in CASES {
        let server = FaultServer::start(
            ServerConfig::default().with_rule(FaultRule::new("", Fault::Status(400))),
        )
        .unwrap();
        let rm = build(case.kind, vec![base(case.kind, &server)], fast_opts(2));
        let err = rm.score(&[rm_req(0)]).unwrap_err().to_string();
        assert!(
            err.contains(&format!("POST {}{}", server.base_url(), case.path))
                && err.contains("HTTP 400")
                && err.contains("not retried"),
            "{}: {err}",
            case.kind
        );
        assert_eq!(server.log().len(), 1, "{}", case.kind);
    }
    // An SGLang client pointed at the root, where the vLLM-shaped `/classify` lives, is refused
    // (vLLM wants `input` or `messages`, not `text`) at once.
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let rm =
        SglangClassify::new("org/rm", vec![server.base_url()], renderer(), fast_opts(2)).unwrap();
    let err = rm.score(&[rm_req(0)]).unwrap_err().to_string();
    assert!(
        err.contains("HTTP 400") && err.contains("'input' or 'messages'") && err.contains("ex-0"),
        "{err}"
    );
    assert_eq!(server.log().len(), 1);
}

#[test]
fn openrlhf_500s_are_retried_then_fail() {
    // OpenRLHF answers a plain-text 500 when its handler raises: retried like any 5xx.
    let server = FaultServer::start(
        ServerConfig::default().with_rule(FaultRule::new("", Fault::ServerError)),
    )
    .unwrap();
    let rm = OpenRlhfReward::new(
        "org/rm",
        vec![server.base_url()],
        renderer(),
        RemoteOptions { max_retries: 2, ..fast_opts(1) },
    )
    .unwrap();
    let err = rm.score(&[rm_req(0)]).unwrap_err().to_string();
    assert!(err.contains("3 attempts") && err.contains("HTTP 500"), "{err}");
}

#[test]
fn the_api_key_is_redacted_from_errors() {
    let key = "sk-templated-test-5c2d9e";
    std::env::set_var("PRB_TEMPLATED_KEY", key);
    for case in CASES {
        let server = FaultServer::start(
            ServerConfig::default().with_rule(FaultRule::new("", Fault::EchoAuthorization)),
        )
        .unwrap();
        let opts = RemoteOptions {
            api_key_env: Some("PRB_TEMPLATED_KEY".into()),
            max_retries: 1,
            ..fast_opts(1)
        };
        let rm = build(case.kind, vec![base(case.kind, &server)], opts);
        let err = rm.score(&[rm_req(0)]).unwrap_err().to_string();
        assert!(err.contains("[REDACTED]") && !err.contains(key), "{}: {err}", case.kind);
        assert!(server
            .log()
            .iter()
            .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {key}"))));
    }
}

#[test]
fn replies_of_the_wrong_shape_name_the_url_and_field_and_are_not_retried() {
    let server = serve(|hit| {
        let text = hit.body["text"]
            .as_str()
            .or(hit.body["inputs"].as_str())
            .or(hit.body["query"][0].as_str())
            .unwrap_or_default()
            .to_string();
        match (hit.path.as_str(), item_no(&text)) {
            ("/classify", 0) => Reply::Json(json!({"embedding": [0.5, -1.0], "meta_info": {}})),
            ("/classify", _) => Reply::Json(json!([{"embedding": [0.5]}])),
            ("/predict", 0) => Reply::Json(
                json!([{"score": 0.9, "label": "good"}, {"score": 0.1, "label": "bad"}]),
            ),
            ("/predict", _) => Reply::Json(json!({"score": 0.9})),
            (_, 0) => Reply::Json(json!({"scores": [1.0]})),
            _ => Reply::Json(json!({"rewards": ["1.0"]})),
        }
    });
    let url = server.url.clone();
    // A reply of the wrong shape names the URL and the field; a well-formed reply from a head
    // with several outputs (item 0 of SGLang and TEI) names the flag that picks one.
    let check = |rm: &dyn RewardModel, path: &str, want: [&str; 2]| {
        for (i, w) in want.iter().enumerate() {
            let err = rm.score(&[rm_req(i)]).unwrap_err().to_string();
            if w.contains("--label-index") {
                assert!(
                    err.contains(&format!("POST …{path} (example `ex-{i}`)")) && err.contains(w),
                    "{path} item {i}: {err}"
                );
            } else {
                assert!(
                    err.contains(&format!("POST {url}{path}"))
                        && err.contains(w)
                        && err.contains("not retried"),
                    "{path} item {i}: {err}"
                );
            }
        }
    };
    let opts = || fast_opts(1);
    check(&SglangClassify::new("m", vec![url.clone()], renderer(), opts()).unwrap(), "/classify", ["the head has 2 outputs; a reward model has one, so name the output to read with `--label-index N`", "got a list"]);
    check(&TeiPredict::new("m", vec![url.clone()], renderer(), opts()).unwrap(), "/predict", ["with `--label-index N` (0 to 1, the label id in the model's config.json `id2label`); the reply's labels: good, bad", "expected a list of predictions"]);
    check(
        &OpenRlhfReward::new("m", vec![url.clone()], renderer(), opts()).unwrap(),
        "/get_reward",
        ["no `rewards`", "`rewards[0]` = \"1.0\" is not a number"],
    );
    assert_eq!(server.log.count(), 6, "one request each");
}

#[test]
fn the_bos_is_stripped_only_where_the_server_adds_its_own() {
    let r = renderer();
    let req = rm_req(2);
    assert_eq!(r.render(&req.prompt, false).unwrap(), expected_text(2, true));
    assert_eq!(r.render(&req.prompt, true).unwrap(), expected_text(2, false));
    // A template without BOS is left alone.
    let plain = ChatRenderer::new(
        ChatTemplate::new("{% for m in messages %}{{ m['content'] }}|{% endfor %}", "", "")
            .unwrap(),
        "x",
    );
    assert_eq!(
        plain.render(&req.prompt, true).unwrap(),
        format!("{}|answer 2|", req.prompt.messages[0].content)
    );
    const {
        assert!(
            <prbench_remote::sglang::SglangEndpoint as TextEndpoint>::STRIP_BOS
                && <prbench_remote::tei::TeiEndpoint as TextEndpoint>::STRIP_BOS
        )
    };
    const { assert!(!<prbench_remote::openrlhf::OpenRlhfEndpoint as TextEndpoint>::STRIP_BOS) };
    let _: Option<TemplatedRewardModel<prbench_remote::tei::TeiEndpoint>> = None;
}
