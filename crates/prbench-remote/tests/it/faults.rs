//! Retries, timeouts and failures of the shared HTTP core, driven through OpenAiJudge (the
//! core is the same for every backend).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prbench_models::{Choice, Judge};
use prbench_remote::{JudgeConfig, OpenAiChat, OpenAiJudge, RemoteOptions, VerdictSource};

use crate::support::*;

fn text_judge(url: &str, opts: RemoteOptions) -> OpenAiJudge {
    let chat = OpenAiChat::new("m", vec![url.to_string()], opts).unwrap();
    OpenAiJudge::new(chat, JudgeConfig { verdict: VerdictSource::Text, ..JudgeConfig::default() })
        .unwrap()
}

/// A server whose first `bad` requests get `fault`, then `Result: A`.
fn flaky(bad: usize, fault: impl Fn() -> Reply + Send + Sync + 'static) -> Server {
    serve(move |hit| if hit.n < bad { fault() } else { Reply::Json(chat_json("Result: A", 4, 2)) })
}

#[test]
fn a_429_with_retry_after_is_waited_out_once() {
    let server =
        flaky(1, || Reply::Raw(429, "slow down".into(), vec![("retry-after", "1".into())]));
    let opts = RemoteOptions { backoff_max: Duration::from_millis(500), ..fast_opts(2) };
    let judge = text_judge(&server.url, opts);
    let t0 = Instant::now();
    let v = judge.judge(&[judge_req(0)]).unwrap();
    assert!(t0.elapsed() >= Duration::from_secs(1), "waited only {:?}", t0.elapsed());
    assert_eq!(v[0].choice, Choice::A);
    let s = judge.call_stats().unwrap();
    assert_eq!((s.requests, s.retries, s.failures), (2, 1, 0));
}

#[test]
fn a_huge_retry_after_is_capped_and_the_error_says_so() {
    let server =
        serve(|_| Reply::Raw(503, "maintenance".into(), vec![("retry-after", "3600".into())]));
    let opts =
        RemoteOptions { max_retries: 1, backoff_max: Duration::from_millis(20), ..fast_opts(1) };
    let judge = text_judge(&server.url, opts);
    let t0 = Instant::now();
    let err = judge.judge(&[judge_req(0)]).unwrap_err().to_string();
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert!(err.contains("2 attempts") && err.contains("HTTP 503: maintenance"), "{err}");
    assert!(err.contains("3600 s") && err.contains("cap"), "{err}");
}

#[test]
fn two_500s_then_success() {
    let server = flaky(2, || Reply::Raw(500, "oops".into(), vec![]));
    let judge = text_judge(&server.url, fast_opts(2));
    assert_eq!(judge.judge(&[judge_req(0)]).unwrap()[0].choice, Choice::A);
    let s = judge.call_stats().unwrap();
    assert_eq!((s.requests, s.retries, s.failures, s.prompt_tokens), (3, 2, 0, 4));
}

#[test]
fn a_reply_slower_than_the_timeout_is_retried() {
    let server = flaky(1, || {
        Reply::After(Duration::from_secs(3), Box::new(Reply::Json(chat_json("Result: B", 1, 1))))
    });
    let opts = RemoteOptions { timeout: Duration::from_millis(300), ..fast_opts(2) };
    let judge = text_judge(&server.url, opts);
    let t0 = Instant::now();
    assert_eq!(judge.judge(&[judge_req(0)]).unwrap()[0].choice, Choice::A);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(judge.call_stats().unwrap().retries, 1);
}

#[test]
fn truncated_json_is_retried() {
    let server = flaky(1, || {
        Reply::Raw(
            200,
            r#"{"choices":[{"message":{"content":"Resu"#.into(),
            vec![("content-type", "application/json".into())],
        )
    });
    let judge = text_judge(&server.url, fast_opts(2));
    assert_eq!(judge.judge(&[judge_req(0)]).unwrap()[0].choice, Choice::A);
    assert_eq!(judge.call_stats().unwrap().retries, 1);
}

#[test]
fn a_dropped_connection_is_retried() {
    let server = serve_dropping(1, chat_json("Result: B", 2, 1));
    let judge = text_judge(&server.url, fast_opts(2));
    assert_eq!(judge.judge(&[judge_req(0)]).unwrap()[0].choice, Choice::B);
    assert_eq!(server.log.count(), 2);
    assert_eq!(judge.call_stats().unwrap().retries, 1);
}

#[test]
fn a_refused_connection_fails_after_every_attempt() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let opts = RemoteOptions { max_retries: 2, ..fast_opts(2) };
    let err = text_judge(&url, opts).judge(&[judge_req(0)]).unwrap_err().to_string();
    assert!(
        err.contains(&format!("POST {url}/chat/completions: 3 attempts, last: connection failed")),
        "{err}"
    );
}

#[test]
fn a_permanent_500_fails_only_its_item() {
    let server = serve(|hit| {
        let i = item_no(&user_text(&hit.body));
        if i == 3 {
            Reply::Raw(500, r#"{"error":"poisoned"}"#.into(), vec![])
        } else {
            Reply::After(jitter_ms(i, 10), Box::new(Reply::Json(chat_json("Result: B", 1, 1))))
        }
    });
    let opts = RemoteOptions { max_retries: 2, ..fast_opts(4) };
    let judge = text_judge(&format!("{}/v1", server.url), opts);
    let items: Vec<_> = (0..10).map(judge_req).collect();
    let done = DoneLog::default();
    let out = judge.judge_each(&items, &|i, _| done.mark(i));
    assert_eq!(done.indices(), vec![0, 1, 2, 4, 5, 6, 7, 8, 9]);
    for (i, r) in out.iter().enumerate() {
        if i == 3 {
            let e = r.as_ref().unwrap_err().to_string();
            let want = format!("POST {}/v1/chat/completions: 3 attempts, last: HTTP 500: {{\"error\":\"poisoned\"}}", server.url);
            assert!(e.contains(&want), "{e}");
        } else {
            assert_eq!(r.as_ref().unwrap().choice, Choice::B);
        }
    }
    let poisoned = server.log.hits().iter().filter(|h| item_no(&user_text(&h.body)) == 3).count();
    assert_eq!(poisoned, 3);
    let s = judge.call_stats().unwrap();
    assert_eq!((s.requests, s.retries, s.failures), (12, 2, 1));
    // judge() fails on the first error.
    assert!(judge.judge(&items).unwrap_err().to_string().contains("poisoned"));
}

#[test]
fn a_400_is_not_retried() {
    let seen = Arc::new(AtomicUsize::new(0));
    let seen2 = seen.clone();
    let server = serve(move |_| {
        seen2.fetch_add(1, Ordering::SeqCst);
        Reply::Raw(400, r#"{"error":"max_tokens too large"}"#.into(), vec![])
    });
    let judge = text_judge(&server.url, fast_opts(2));
    let err = judge.judge(&[judge_req(0)]).unwrap_err().to_string();
    assert!(
        err.contains("HTTP 400: {\"error\":\"max_tokens too large\"}")
            && err.contains("not retried"),
        "{err}"
    );
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    let s = judge.call_stats().unwrap();
    assert_eq!((s.requests, s.retries, s.failures), (1, 0, 1));
}
