//! The reward server against fake reward models, in process on loopback port 0: values,
//! batching, order, load, the bounded queue, every error path, client disconnects, shutdown,
//! logs without payloads, and compatibility with prbench's own reward-server client.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prbench_downstream::serve::{LogWriter, Normalize, ServeOptions, Server, ServerHandle};
use prbench_downstream::ServeError;
use prbench_eval::prompt::Prompts;
use prbench_models::{
    ModelError, ModelIdentity, RewardModel, RmInput, RmRequest, Score, TokenStats,
};
use serde_json::{json, Value};
use tokio::sync::oneshot;

/// Score = characters of the answer, plus 1000 when there is a context. An answer containing
/// `FAIL` fails its call; one containing `NAN` scores NaN. Records every call.
#[derive(Default)]
struct Fake {
    delay: Duration,
    batches: Mutex<Vec<usize>>,
    seen: Mutex<Vec<RmRequest>>,
}

impl Fake {
    fn slow(delay: Duration) -> Fake {
        Fake { delay, ..Fake::default() }
    }

    fn value(input: &RmInput) -> f32 {
        input.answer.chars().count() as f32 + if input.context.is_some() { 1000.0 } else { 0.0 }
    }

    fn batch_sizes(&self) -> Vec<usize> {
        self.batches.lock().unwrap().clone()
    }
}

impl RewardModel for Fake {
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        self.batches.lock().unwrap().push(items.len());
        self.seen.lock().unwrap().extend(items.iter().cloned());
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        items
            .iter()
            .map(|i| {
                if i.input.answer.contains("FAIL") {
                    Err(ModelError::Engine("boom: the fake fails on its marker".into()))
                } else if i.input.answer.contains("NAN") {
                    Ok(Score { value: f32::NAN, tokens: TokenStats::default() })
                } else {
                    Ok(Score { value: Fake::value(&i.input), tokens: TokenStats::default() })
                }
            })
            .collect()
    }

    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: "fake:length".into(),
            engine: "fake".into(),
            dtype: "n/a".into(),
            ..Default::default()
        }
    }
}

/// A server on port 0 in the test's runtime, its log captured in memory.
struct Running {
    base: String,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), ServeError>>,
    log: Arc<Mutex<Vec<u8>>>,
}

impl Running {
    async fn start(model: Arc<dyn RewardModel>, tweak: impl FnOnce(&mut ServeOptions)) -> Running {
        let log = Arc::new(Mutex::new(Vec::<u8>::new()));
        let writer: LogWriter = log.clone();
        let mut opts = ServeOptions {
            addr: "127.0.0.1:0".parse().unwrap(),
            log: Some(writer),
            ..ServeOptions::default()
        };
        tweak(&mut opts);
        let server = Server::bind(model, opts).await.unwrap();
        let base = format!("http://{}", server.local_addr());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async move {
            let _ = rx.await;
        }));
        Running { base, stop: Some(tx), task, log }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn log_text(&self) -> String {
        String::from_utf8(self.log.lock().unwrap().clone()).unwrap()
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.task.await.unwrap().unwrap();
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(60)).build().unwrap()
}

async fn post(c: &reqwest::Client, url: &str, body: &Value) -> (u16, Value) {
    let resp = c.post(url).json(body).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

async fn post_raw(c: &reqwest::Client, url: &str, body: &str) -> (u16, Value) {
    let resp = c
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

async fn health(c: &reqwest::Client, r: &Running) -> Value {
    c.get(r.url("/health")).send().await.unwrap().json().await.unwrap()
}

fn item(query: &str, profile: Option<&str>, answer: &str) -> Value {
    match profile {
        Some(p) => json!({ "query": query, "profile": p, "response_text": answer }),
        None => json!({ "query": query, "response_text": answer }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn score_is_the_models_score_and_profile_is_the_context() {
    let fake = Arc::new(Fake::default());
    let r = Running::start(fake.clone(), |_| {}).await;
    let c = client();
    let (s, v) = post(&c, &r.url("/score"), &item("Q?", Some("I paint."), "abcd")).await;
    assert_eq!((s, v["score"].as_f64()), (200, Some(1004.0)), "{v}");
    for no_context in [
        item("Q?", None, "abcd"),
        item("Q?", Some(""), "abcd"),
        json!({"query": "Q?", "profile": null, "response_text": "abcd"}),
    ] {
        let (s, v) = post(&c, &r.url("/score"), &no_context).await;
        assert_eq!((s, v["score"].as_f64()), (200, Some(4.0)), "{no_context} -> {v}");
    }
    // The model saw exactly what `prbench eval` renders for the same input.
    let seen = fake.seen.lock().unwrap()[0].clone();
    let want = RmInput {
        example_id: seen.input.example_id.clone(),
        question: "Q?".into(),
        context: Some("I paint.".into()),
        answer: "abcd".into(),
    };
    assert_eq!(seen.input, want);
    assert_eq!(seen.prompt, Prompts::new().reward_model(&want).unwrap());
    assert!(seen.input.example_id.starts_with("req-"), "{}", seen.input.example_id);
    // A given id becomes the example id.
    let (s, _) =
        post(&c, &r.url("/score"), &json!({"query": "Q", "response_text": "a", "id": "ex-7"}))
            .await;
    assert_eq!(s, 200);
    assert_eq!(fake.seen.lock().unwrap().last().unwrap().input.example_id, "ex-7");
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_endpoint_keeps_order() {
    let r = Running::start(Arc::new(Fake::default()), |_| {}).await;
    let c = client();
    let body = json!({ "items": [item("q", None, "aaaaa"), item("q", None, "a"), item("q", Some("ctx"), "aaa")] });
    let (s, v) = post(&c, &r.url("/score/batch"), &body).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["scores"], json!([5.0, 1.0, 1003.0]));
    let (s, v) = post(&c, &r.url("/score/batch"), &json!({ "items": [] })).await;
    assert_eq!((s, v), (200, json!({ "scores": [] })));
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_items_are_batched_up_to_max_batch() {
    let fake = Arc::new(Fake::default());
    let r = Running::start(fake.clone(), |o| {
        o.max_batch = 16;
        o.batch_wait = Duration::from_millis(50);
    })
    .await;
    let c = client();
    let url = r.url("/score");
    let answers = futures::future::join_all((0..50).map(|i| {
        let (c, url) = (c.clone(), url.clone());
        async move { post(&c, &url, &item("q", None, &"x".repeat(i + 1))).await }
    }))
    .await;
    for (i, (s, v)) in answers.iter().enumerate() {
        assert_eq!((*s, v["score"].as_f64()), (200, Some((i + 1) as f64)));
    }
    let sizes = fake.batch_sizes();
    assert_eq!(sizes.iter().sum::<usize>(), 50, "{sizes:?}");
    assert!(sizes.iter().any(|&n| n > 1), "no batching happened: {sizes:?}");
    assert!(sizes.iter().all(|&n| n <= 16), "{sizes:?}");
    let h = health(&c, &r).await;
    assert_eq!(h["stats"]["largest_batch"].as_u64(), sizes.iter().max().map(|&m| m as u64));
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_requests_each_get_their_own_score() {
    let r = Running::start(Arc::new(Fake::default()), |_| {}).await;
    let c = client();
    let url = r.url("/score");
    let answers = futures::future::join_all((0..1000).map(|i| {
        let (c, url) = (c.clone(), url.clone());
        tokio::spawn(async move {
            post(&c, &url, &item(&format!("q{i}"), None, &"y".repeat(i + 1))).await
        })
    }))
    .await;
    assert_eq!(answers.len(), 1000);
    for (i, a) in answers.into_iter().enumerate() {
        let (s, v) = a.unwrap();
        assert_eq!((s, v["score"].as_f64()), (200, Some((i + 1) as f64)), "request {i}");
    }
    let h = health(&c, &r).await;
    assert_eq!(h["stats"]["scored"], 1000);
    assert_eq!(h["stats"]["in_flight"], 0);
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_503_and_every_request_is_answered() {
    let r = Running::start(Arc::new(Fake::slow(Duration::from_millis(100))), |o| {
        o.queue_capacity = 2;
        o.max_batch = 1;
        o.batch_wait = Duration::ZERO;
    })
    .await;
    let c = client();
    let url = r.url("/score");
    let answers = futures::future::join_all((0..20).map(|i| {
        let (c, url) = (c.clone(), url.clone());
        tokio::spawn(async move {
            let resp =
                c.post(&url).json(&item("q", None, &"z".repeat(i + 1))).send().await.unwrap();
            let status = resp.status().as_u16();
            let retry = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
            let body: Value = resp.json().await.unwrap();
            (i, status, retry, body)
        })
    }))
    .await;
    let (mut ok, mut full) = (0, 0);
    for a in answers {
        let (i, status, retry, body) = a.unwrap();
        match status {
            200 => {
                ok += 1;
                assert_eq!(body["score"].as_f64(), Some((i + 1) as f64));
            }
            503 => {
                full += 1;
                assert_eq!(retry.as_deref(), Some("1"));
                assert!(body["error"].as_str().unwrap().contains("queue is full"), "{body}");
                assert!(body.get("score").is_none(), "a refused request carries no score: {body}");
            }
            other => panic!("unexpected status {other}: {body}"),
        }
    }
    assert_eq!(ok + full, 20);
    assert!(ok >= 1 && full >= 1, "ok {ok}, 503 {full}");
    let h = health(&c, &r).await;
    assert_eq!(h["stats"]["rejected_full"], full);
    assert_eq!(h["capacity"], 2);
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_unknown_missing_and_mistyped_fields_are_400_with_a_json_error() {
    let r = Running::start(Arc::new(Fake::default()), |_| {}).await;
    let c = client();
    let url = r.url("/score");
    let cases = [
        ("{not json", "not valid JSON"),
        ("", "not valid JSON"),
        (r#"{"query":"q","profle":"p","response_text":"a"}"#, "unknown field `profle`"),
        (r#"{"query":"q","profile":"p"}"#, "missing field `response_text`"),
        (r#"{"query":"q","response_text":7}"#, "invalid type: integer `7`"),
        (r#"["q","p","a"]"#, "must be a JSON object"),
        ("null", "must be a JSON object"),
    ];
    for (body, want) in cases {
        let (s, v) = post_raw(&c, &url, body).await;
        assert_eq!(s, 400, "{body} -> {v}");
        let msg = v["error"].as_str().unwrap_or_else(|| panic!("no JSON error for {body}: {v}"));
        assert!(msg.contains(want), "{body} -> {msg}");
    }
    let (s, v) =
        post(&c, &r.url("/score/batch"), &json!({"items": [item("q", None, "a"), {"query": "q"}]}))
            .await;
    assert_eq!(s, 400);
    assert!(
        v["error"].as_str().unwrap().starts_with("items[1]: missing field `response_text`"),
        "{v}"
    );
    let (s, v) = post(&c, &r.url("/score/batch"), &json!({"itemz": []})).await;
    assert_eq!(s, 400);
    assert!(v["error"].as_str().unwrap().contains("unknown field `itemz`"), "{v}");
    // Unknown routes and methods answer JSON too.
    let resp = c.get(r.url("/nope")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    assert!(resp.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("POST /score"));
    let resp = c.get(r.url("/score")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    assert!(resp.json::<Value>().await.unwrap()["error"]
        .as_str()
        .unwrap()
        .contains("does not take GET"));
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_or_batch_is_413() {
    let r = Running::start(Arc::new(Fake::default()), |o| {
        o.max_body_bytes = 1000;
        o.queue_capacity = 4;
    })
    .await;
    let c = client();
    let (s, v) = post(&c, &r.url("/score"), &item("q", None, &"w".repeat(2000))).await;
    assert_eq!(s, 413, "{v}");
    assert!(v["error"].as_str().unwrap().contains("1000 bytes"), "{v}");
    let many: Vec<Value> = (0..5).map(|_| item("q", None, "a")).collect();
    let (s, v) = post(&c, &r.url("/score/batch"), &json!({ "items": many })).await;
    assert_eq!(s, 413, "{v}");
    assert!(v["error"].as_str().unwrap().contains("queue of 4 items"), "{v}");
    // Just under the limit is served.
    let (s, _) = post(&c, &r.url("/score"), &item("q", None, &"w".repeat(900))).await;
    assert_eq!(s, 200);
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_failure_is_500_never_a_default_and_the_server_keeps_serving() {
    let r = Running::start(Arc::new(Fake::default()), |_| {}).await;
    let c = client();
    let (s, v) = post(&c, &r.url("/score"), &item("q", None, "FAIL please")).await;
    assert_eq!(s, 500, "{v}");
    assert!(v["error"].as_str().unwrap().contains("boom"), "{v}");
    assert!(v.get("score").is_none());
    let (s, v) = post(&c, &r.url("/score"), &item("q", None, "NAN")).await;
    assert_eq!(s, 500, "{v}");
    assert!(v["error"].as_str().unwrap().contains("non-finite"), "{v}");
    let (s, v) = post(&c, &r.url("/score"), &item("q", None, "fine")).await;
    assert_eq!((s, v["score"].as_f64()), (200, Some(4.0)));
    let body = json!({ "items": [item("q", None, "ok"), item("q", None, "ok"), item("q", None, "FAIL"), item("q", None, "ok")] });
    let (s, v) = post(&c, &r.url("/score/batch"), &body).await;
    assert_eq!(s, 500, "{v}");
    assert!(v["error"].as_str().unwrap().starts_with("items[2]: "), "{v}");
    let h = health(&c, &r).await;
    assert_eq!(h["status"], "ok");
    assert_eq!(h["stats"]["failed"], 3);
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normalization_sigmoid_and_affine_by_hand() {
    let c = client();
    let r = Running::start(Arc::new(Fake::default()), |o| o.normalize = Normalize::Sigmoid).await;
    let (_, v) = post(&c, &r.url("/score"), &item("q", None, "ab")).await;
    let want = 1.0 / (1.0 + (-2.0f64).exp());
    assert!((v["score"].as_f64().unwrap() - want).abs() < 1e-12, "{v}");
    assert_eq!(health(&c, &r).await["normalize"], "sigmoid");
    r.stop().await;
    let r = Running::start(Arc::new(Fake::default()), |o| {
        o.normalize = "affine:0.5,1".parse().unwrap()
    })
    .await;
    let (_, v) = post(&c, &r.url("/score"), &item("q", None, "abcd")).await;
    assert_eq!(v["score"].as_f64(), Some(3.0));
    assert_eq!(health(&c, &r).await["normalize"], "affine:0.5,1");
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_request_is_counted_and_the_server_goes_on() {
    let fake = Arc::new(Fake::slow(Duration::from_millis(400)));
    let r = Running::start(fake.clone(), |_| {}).await;
    let addr = r.base.trim_start_matches("http://").to_string();
    let body = item("q", None, "gone").to_string();
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let req = format!("POST /score HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len());
        s.write_all(req.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // Dropping the stream closes the connection while the model is still scoring.
    })
    .await
    .unwrap();
    let c = client();
    let mut closed = 0;
    for _ in 0..100 {
        closed = health(&c, &r).await["stats"]["client_closed"].as_u64().unwrap();
        if closed == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(closed, 1, "the disconnect was not seen");
    let (s, v) = post(&c, &r.url("/score"), &item("q", None, "still here")).await;
    assert_eq!((s, v["score"].as_f64()), (200, Some(10.0)));
    let log = r.log_text();
    assert!(
        log.lines().any(|l| l.contains("\"status\":499") && l.contains("client_closed")),
        "{log}"
    );
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_requests_in_flight_first() {
    let fake = Arc::new(Fake::slow(Duration::from_millis(300)));
    let r = Running::start(fake, |o| o.batch_wait = Duration::from_secs(30)).await;
    let c = client();
    let url = r.url("/score");
    let inflight = tokio::spawn({
        let c = c.clone();
        async move { post(&c, &url, &item("q", None, "abc")).await }
    });
    for _ in 0..200 {
        if health(&c, &r).await["stats"]["in_flight"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The item waits for a batch to fill (30 s); shutdown must not wait for that, nor drop it.
    r.stop().await;
    let (s, v) = inflight.await.unwrap();
    assert_eq!((s, v["score"].as_f64()), (200, Some(3.0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_are_json_lines_without_request_text() {
    let r = Running::start(Arc::new(Fake::default()), |_| {}).await;
    let c = client();
    post(&c, &r.url("/score"), &item("SECRET-QUESTION", Some("SECRET-PROFILE"), "SECRET-ANSWER"))
        .await;
    post(
        &c,
        &r.url("/score/batch"),
        &json!({"items": [item("SECRET-Q2", Some("SECRET-P2"), "SECRET-A2")]}),
    )
    .await;
    post_raw(&c, &r.url("/score"), r#"{"SECRET-FIELD": "SECRET-VALUE"}"#).await;
    post(&c, &r.url("/score"), &item("SECRET-Q3", None, "FAIL SECRET-A3")).await;
    health(&c, &r).await;
    let log = r.log_text();
    assert!(!log.contains("SECRET"), "payload text in the log:\n{log}");
    let lines: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5, "{log}");
    for l in &lines {
        for key in ["ts", "method", "path", "status", "items", "latency_ms", "queue"] {
            assert!(l.get(key).is_some(), "`{key}` missing in {l}");
        }
    }
    assert_eq!(lines[0]["status"], 200);
    assert_eq!(lines[1]["path"], "/score/batch");
    assert_eq!(
        (lines[2]["status"].clone(), lines[2]["error"].clone()),
        (json!(400), json!("invalid_request"))
    );
    assert_eq!(lines[3]["error"], "model_error");
    assert_eq!(lines[4]["path"], "/health");
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_reports_model_settings_and_queue() {
    let r = Running::start(Arc::new(Fake::default()), |o| {
        o.max_batch = 4;
        o.queue_capacity = 64;
    })
    .await;
    let h = health(&client(), &r).await;
    assert_eq!(h["status"], "ok");
    assert_eq!(h["model"], "fake:length");
    assert_eq!(h["normalize"], "none");
    assert_eq!(
        (h["queue"].clone(), h["capacity"].clone(), h["max_batch"].clone()),
        (json!(0), json!(64), json!(4))
    );
    r.stop().await;
}

#[test]
fn bad_settings_are_refused_before_binding() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tweaks: [fn(&mut ServeOptions); 3] =
        [|o| o.max_batch = 0, |o| o.queue_capacity = 0, |o| o.max_body_bytes = 0];
    for tweak in tweaks {
        let mut opts = ServeOptions {
            addr: "127.0.0.1:0".parse().unwrap(),
            log: None,
            ..ServeOptions::default()
        };
        tweak(&mut opts);
        let err =
            rt.block_on(Server::bind(Arc::new(Fake::default()), opts)).err().expect("refused");
        assert!(matches!(err, ServeError::Options(_)), "{err}");
    }
}

fn rm_request(id: &str, question: &str, context: Option<&str>, answer: &str) -> RmRequest {
    let input = RmInput {
        example_id: id.into(),
        question: question.into(),
        context: context.map(String::from),
        answer: answer.into(),
    };
    RmRequest { prompt: Prompts::new().reward_model(&input).unwrap(), input }
}

/// prbench's own `reward-server:` client gets exactly the model's scores, context included.
#[test]
fn prbench_reward_server_client_is_compatible() {
    let fake = Arc::new(Fake::default());
    let opts =
        ServeOptions { addr: "127.0.0.1:0".parse().unwrap(), log: None, ..ServeOptions::default() };
    let server = ServerHandle::start(fake.clone(), opts).unwrap();
    let client = prbench_remote::RewardServer::new(
        vec![server.base_url()],
        prbench_remote::RemoteOptions::default(),
    )
    .unwrap();
    let items = vec![
        rm_request("a", "What should I read?", Some("Posts: I love sci-fi."), "Try Dune."),
        rm_request("b", "What should I read?", None, "Anything."),
    ];
    let got: Vec<f32> = client.score(&items).unwrap().iter().map(|s| s.value).collect();
    let want: Vec<f32> = items.iter().map(|i| Fake::value(&i.input)).collect();
    assert_eq!(got, want);
    let seen = fake.seen.lock().unwrap().clone();
    let by_answer = |a: &str| seen.iter().find(|r| r.input.answer == a).unwrap().clone();
    assert_eq!(by_answer("Try Dune.").input.context.as_deref(), Some("Posts: I love sci-fi."));
    assert_eq!(by_answer("Try Dune.").prompt, items[0].prompt);
    assert_eq!(by_answer("Anything.").input.context, None);
    server.shutdown().unwrap();
}

/// A remote engine (which owns a runtime of its own) can be the served model: here prbench's
/// client of the fault server's reward endpoint, itself served and called through the protocol.
#[test]
fn a_remote_engine_can_be_served() {
    let upstream = prbench_fault_server::FaultServer::start(
        prbench_fault_server::ServerConfig::default().with_record(false),
    )
    .unwrap();
    let model = prbench_remote::RewardServer::new(
        vec![upstream.base_url()],
        prbench_remote::RemoteOptions::default(),
    )
    .unwrap();
    let opts =
        ServeOptions { addr: "127.0.0.1:0".parse().unwrap(), log: None, ..ServeOptions::default() };
    let server = ServerHandle::start(Arc::new(model), opts).unwrap();
    let client = prbench_remote::RewardServer::new(
        vec![server.base_url()],
        prbench_remote::RemoteOptions::default(),
    )
    .unwrap();
    let items =
        vec![rm_request("a", "q", Some("ctx"), "twelve chars"), rm_request("b", "q", None, "x")];
    let got: Vec<f32> = client.score(&items).unwrap().iter().map(|s| s.value).collect();
    assert_eq!(got, vec![0.12, 0.01]);
    server.shutdown().unwrap();
}

/// The raw socket helper above must not leave a half-read reply that would hide a panic.
#[test]
fn raw_http_reply_is_readable() {
    let opts =
        ServeOptions { addr: "127.0.0.1:0".parse().unwrap(), log: None, ..ServeOptions::default() };
    let server = ServerHandle::start(Arc::new(Fake::default()), opts).unwrap();
    let mut s = TcpStream::connect(server.addr()).unwrap();
    let body = r#"{"query":"q","response_text":"abc"}"#;
    let req = format!(
        "POST /score HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with(r#"{"score":3.0}"#), "{reply}");
    server.shutdown().unwrap();
}
