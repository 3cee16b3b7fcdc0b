//! The API key reaches the server and nothing else. Its own test binary with a single test, so
//! setting the environment variable races with no other thread.

#[path = "it/support.rs"]
#[allow(dead_code)]
mod support;

use prbench_models::{Judge, RewardModel};
use prbench_remote::{
    JudgeConfig, OpenAiChat, OpenAiJudge, RemoteOptions, RewardServer, VerdictSource,
};
use serde_json::json;
use support::*;

const VAR: &str = "PRBENCH_REMOTE_TEST_KEY";

#[test]
fn the_key_is_sent_as_a_bearer_token_and_redacted_everywhere_else() {
    let key = format!(
        "sk-test-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    );
    // SAFETY of the environment write: this binary holds this one test, run before any other
    // thread of ours reads the environment.
    std::env::set_var(VAR, &key);
    // Echoes the Authorization header into a 500 body (raw and JSON-quoted), then a 400.
    let server = serve(|hit| {
        let auth = hit.auth.clone().unwrap_or_default();
        if hit.path.ends_with("/score") {
            Reply::Raw(400, format!("bad request from {auth}"), vec![])
        } else {
            Reply::Raw(
                500,
                json!({"error": format!("denied: {auth}"), "raw": auth}).to_string(),
                vec![],
            )
        }
    });
    let opts = RemoteOptions { api_key_env: Some(VAR.into()), max_retries: 1, ..fast_opts(2) };
    let chat = OpenAiChat::new("m", vec![server.url.clone()], opts.clone()).unwrap();
    let judge = OpenAiJudge::new(
        chat,
        JudgeConfig { verdict: VerdictSource::Text, ..JudgeConfig::default() },
    )
    .unwrap();
    let err = judge.judge(&[judge_req(0)]).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("HTTP 500") && text.contains("[REDACTED]"), "{text}");
    assert!(!text.contains(&key), "{text}");
    assert!(!format!("{err:?}").contains(&key));
    for shown in [
        format!("{judge:?}"),
        format!("{:?}", judge.identity()),
        judge.decoding().to_string(),
        format!("{opts:?}"),
    ] {
        assert!(!shown.contains(&key), "{shown}");
    }
    assert!(format!("{judge:?}").contains("[REDACTED]"));
    let rm = RewardServer::new(vec![server.url.clone()], opts).unwrap();
    let err = rm.score(&[rm_req(0)]).unwrap_err().to_string();
    assert!(
        err.contains("HTTP 400")
            && err.contains("bad request from Bearer [REDACTED]")
            && !err.contains(&key),
        "{err}"
    );
    assert!(!format!("{rm:?}").contains(&key));
    let hits = server.log.hits();
    assert_eq!(hits.len(), 3);
    assert!(hits.iter().all(|h| h.auth.as_deref() == Some(format!("Bearer {key}").as_str())));

    // An unset or empty variable sends no Authorization header.
    std::env::set_var(VAR, "");
    let plain = serve(|_| Reply::Json(chat_json("Result: A", 1, 1)));
    for var in [VAR, "PRBENCH_REMOTE_TEST_UNSET_VAR"] {
        let opts = RemoteOptions { api_key_env: Some(var.into()), ..fast_opts(2) };
        let chat = OpenAiChat::new("m", vec![plain.url.clone()], opts).unwrap();
        let judge = OpenAiJudge::new(
            chat,
            JudgeConfig { verdict: VerdictSource::Text, ..JudgeConfig::default() },
        )
        .unwrap();
        judge.judge(&[judge_req(0)]).unwrap();
    }
    assert!(plain.log.hits().iter().all(|h| h.auth.is_none()));
}
