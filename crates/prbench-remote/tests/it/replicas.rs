//! Several base URLs for one model: failing and slow replicas.

use std::time::Duration;

use prbench_models::{Choice, Judge};
use prbench_remote::{JudgeConfig, OpenAiChat, OpenAiJudge, RemoteOptions, VerdictSource};

use crate::support::*;

fn judge_over(urls: Vec<String>, opts: RemoteOptions) -> OpenAiJudge {
    let chat = OpenAiChat::new("m", urls, opts).unwrap();
    OpenAiJudge::new(chat, JudgeConfig { verdict: VerdictSource::Text, ..JudgeConfig::default() })
        .unwrap()
}

#[test]
fn a_failing_replica_is_avoided_and_the_healthy_one_takes_the_load() {
    let broken = serve(|_| Reply::Raw(500, "down".into(), vec![]));
    let healthy = serve(|hit| {
        Reply::After(jitter_ms(hit.n, 5), Box::new(Reply::Json(chat_json("Result: A", 1, 1))))
    });
    let judge = judge_over(vec![broken.url.clone(), healthy.url.clone()], fast_opts(4));
    let items: Vec<_> = (0..20).map(judge_req).collect();
    let out = judge.judge(&items).unwrap();
    assert!(out.iter().all(|v| v.choice == Choice::A));
    assert_eq!(healthy.log.count(), 20, "every item was answered by the healthy replica");
    let s = judge.call_stats().unwrap();
    assert!(broken.log.count() >= 1);
    // Every request the broken replica got was retried elsewhere, once.
    assert_eq!(
        (s.requests as usize, s.retries as usize, s.failures),
        (20 + broken.log.count(), broken.log.count(), 0)
    );
    assert!(
        broken.log.count() <= 10,
        "the broken replica got {} of 20 first tries",
        broken.log.count()
    );
}

#[test]
fn the_least_busy_replica_gets_the_requests() {
    let slow = serve(|_| {
        Reply::After(
            Duration::from_millis(300),
            Box::new(Reply::Json(chat_json("Result: B", 1, 1))),
        )
    });
    let fast = serve(|_| {
        Reply::After(Duration::from_millis(3), Box::new(Reply::Json(chat_json("Result: B", 1, 1))))
    });
    let judge = judge_over(vec![slow.url.clone(), fast.url.clone()], fast_opts(4));
    let items: Vec<_> = (0..40).map(judge_req).collect();
    assert!(judge.judge(&items).unwrap().iter().all(|v| v.choice == Choice::B));
    assert_eq!(slow.log.count() + fast.log.count(), 40);
    assert!(fast.log.count() >= 32, "fast replica served {} of 40", fast.log.count());
}
