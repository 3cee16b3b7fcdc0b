//! The run cache: keys, hits, per-item storage through the completion hook, failures never
//! stored, sharing one file between handles, stats and prune.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use prbench_eval::cache::{
    cache_key, Cache, CacheCounters, CachedJudge, CachedRewardModel, EntryKind, PruneFilter,
};
use prbench_models::{
    ChatMessage, ChatPrompt, Choice, ItemDone, Judge, JudgeRequest, ModelError, ModelIdentity,
    PairInput, RewardModel, RmInput, RmRequest, Role, Score, TokenStats, Verdict,
};

fn prompt(text: &str) -> ChatPrompt {
    ChatPrompt {
        messages: vec![ChatMessage::new(Role::User, text)],
        assistant_prefix: String::new(),
    }
}

fn request(id: &str, text: &str) -> JudgeRequest {
    JudgeRequest {
        pair: PairInput {
            example_id: id.into(),
            question: text.into(),
            context: None,
            a: "a".into(),
            b: "b".into(),
        },
        prompt: prompt(text),
        prompt_b: None,
    }
}

/// A judge that counts the items it is asked about, fails on prompts containing "FAIL", and
/// picks A when the prompt has an even length.
#[derive(Default)]
struct Counting {
    asked: AtomicUsize,
    seen: Mutex<Vec<String>>,
}

impl Judge for Counting {
    fn judge(&self, _: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        unreachable!("the cache calls judge_each")
    }
    fn judge_each(
        &self,
        items: &[JudgeRequest],
        done: ItemDone<'_, Verdict>,
    ) -> Vec<Result<Verdict, ModelError>> {
        items
            .iter()
            .enumerate()
            .map(|(i, it)| {
                self.asked.fetch_add(1, Ordering::SeqCst);
                let text = &it.prompt.messages[0].content;
                self.seen.lock().unwrap().push(text.clone());
                if text.contains("FAIL") {
                    return Err(ModelError::Engine(format!("refused {text}")));
                }
                let v = Verdict {
                    choice: if text.len() % 2 == 0 { Choice::A } else { Choice::B },
                    p_a: Some(0.25),
                    margin: Some(-1.5),
                    raw: format!("reply to {text}"),
                    tokens: TokenStats {
                        input_tokens: text.len(),
                        truncated_tokens: 0,
                        output_tokens: 3,
                    },
                };
                done(i, &v);
                Ok(v)
            })
            .collect()
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: "openai:counting@http://127.0.0.1:1/v1".into(),
            engine: "test".into(),
            file_hash: "counting".into(),
            ..Default::default()
        }
    }
    fn decoding(&self) -> serde_json::Value {
        serde_json::json!({"temperature": 0.0})
    }
}

fn temp_cache() -> (tempfile::TempDir, Cache) {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(&dir.path().join("sub/cache.sqlite")).unwrap();
    (dir, cache)
}

#[test]
fn a_second_pass_is_answered_from_the_cache_with_identical_verdicts() {
    let (_d, cache) = temp_cache();
    let inner = Counting::default();
    let items: Vec<JudgeRequest> = (0..5)
        .map(|i| request(&format!("ex{i}"), &format!("prompt number {i}{}", "x".repeat(i))))
        .collect();
    let counters = CacheCounters::default();
    let judge = CachedJudge::new(&inner, &cache, &counters);
    let first = judge.judge(&items).unwrap();
    assert_eq!(inner.asked.load(Ordering::SeqCst), 5);
    let second = judge.judge(&items).unwrap();
    assert_eq!(inner.asked.load(Ordering::SeqCst), 5, "no call repeated");
    assert_eq!(first, second);
    let r = counters.report(&cache);
    assert_eq!((r.hits, r.calls, r.stored, r.write_errors), (5, 5, 5, 0));
    // The choice follows the prompt (even length → A), so the stored values are the computed ones.
    for (it, v) in items.iter().zip(&second) {
        let expect =
            if it.prompt.messages[0].content.len() % 2 == 0 { Choice::A } else { Choice::B };
        assert_eq!(v.choice, expect);
        assert_eq!(v.tokens.output_tokens, 3);
    }
}

#[test]
fn failures_are_not_stored_and_are_retried_next_time_alone() {
    let (_d, cache) = temp_cache();
    let inner = Counting::default();
    let items = vec![request("a", "good one"), request("b", "FAIL here"), request("c", "good two")];
    let counters = CacheCounters::default();
    let judge = CachedJudge::new(&inner, &cache, &counters);
    let done_for = Mutex::new(Vec::new());
    let out = judge.judge_each(&items, &|i, _| done_for.lock().unwrap().push(i));
    assert!(out[0].is_ok() && out[1].is_err() && out[2].is_ok());
    assert_eq!(*done_for.lock().unwrap(), vec![0, 2], "done is called exactly for the successes");
    inner.seen.lock().unwrap().clear();
    let out2 = judge.judge_each(&items, &|_, _| {});
    assert!(out2[1].is_err());
    assert_eq!(
        *inner.seen.lock().unwrap(),
        vec!["FAIL here".to_string()],
        "only the failed item is asked again"
    );
    let done_for = Mutex::new(Vec::new());
    judge.judge_each(&items, &|i, _| done_for.lock().unwrap().push(i));
    assert_eq!(*done_for.lock().unwrap(), vec![0, 2], "hits are handed to done too");
}

/// A judge that hands item 0 to `done` and then "dies" (returns without results for the
/// rest): what a SIGKILL after the first completed call leaves behind.
struct DiesAfterFirst;

impl Judge for DiesAfterFirst {
    fn judge(&self, _: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        unreachable!()
    }
    fn judge_each(
        &self,
        items: &[JudgeRequest],
        done: ItemDone<'_, Verdict>,
    ) -> Vec<Result<Verdict, ModelError>> {
        let v = Verdict {
            choice: Choice::B,
            p_a: None,
            margin: None,
            raw: "first".into(),
            tokens: TokenStats::default(),
        };
        done(0, &v);
        let mut out = vec![Ok(v)];
        out.extend(items[1..].iter().map(|_| Err(ModelError::Engine("killed".into()))));
        out
    }
    fn identity(&self) -> ModelIdentity {
        Counting::default().identity()
    }
    fn decoding(&self) -> serde_json::Value {
        Counting::default().decoding()
    }
}

#[test]
fn a_result_is_stored_when_the_backend_hands_it_over_not_when_the_batch_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    let items = vec![request("a", "first prompt"), request("b", "second prompt")];
    {
        let cache = Cache::open(&path).unwrap();
        let counters = CacheCounters::default();
        let _ = CachedJudge::new(&DiesAfterFirst, &cache, &counters).judge_each(&items, &|_, _| {});
    }
    // A new handle (a new process, in effect) finds the first verdict and asks only for the second.
    let cache = Cache::open(&path).unwrap();
    let counters = CacheCounters::default();
    let inner = Counting::default();
    let out = CachedJudge::new(&inner, &cache, &counters).judge_each(&items, &|_, _| {});
    assert_eq!(out[0].as_ref().unwrap().raw, "first");
    assert_eq!(*inner.seen.lock().unwrap(), vec!["second prompt".to_string()]);
}

#[test]
fn keys_change_with_every_component_but_not_with_the_spec() {
    let id = ModelIdentity {
        spec: "openai:m@http://a/v1".into(),
        engine: "e".into(),
        file_hash: "m".into(),
        chat_template_hash: "t".into(),
        dtype: "n/a".into(),
    };
    let dec = serde_json::json!({"temperature": 0.0});
    let p = prompt("hello");
    let null = serde_json::Value::Null;
    let base = cache_key(EntryKind::Verdict, &id, &dec, "ex1", &p, &null);
    assert_eq!(base.len(), 64);
    assert_eq!(base, cache_key(EntryKind::Verdict, &id, &dec, "ex1", &p, &null), "deterministic");
    let other_spec =
        ModelIdentity { spec: "openai:m@http://b/v1,http://c/v1".into(), ..id.clone() };
    assert_eq!(
        base,
        cache_key(EntryKind::Verdict, &other_spec, &dec, "ex1", &p, &null),
        "replicas share entries"
    );
    let variants = [
        cache_key(EntryKind::Score, &id, &dec, "ex1", &p, &null),
        cache_key(
            EntryKind::Verdict,
            &ModelIdentity { file_hash: "m2".into(), ..id.clone() },
            &dec,
            "ex1",
            &p,
            &null,
        ),
        cache_key(
            EntryKind::Verdict,
            &ModelIdentity { engine: "e2".into(), ..id.clone() },
            &dec,
            "ex1",
            &p,
            &null,
        ),
        cache_key(
            EntryKind::Verdict,
            &ModelIdentity { chat_template_hash: "t2".into(), ..id.clone() },
            &dec,
            "ex1",
            &p,
            &null,
        ),
        cache_key(
            EntryKind::Verdict,
            &id,
            &serde_json::json!({"temperature": 0.7}),
            "ex1",
            &p,
            &null,
        ),
        cache_key(EntryKind::Verdict, &id, &dec, "ex2", &p, &null),
        cache_key(EntryKind::Verdict, &id, &dec, "ex1", &prompt("hello!"), &null),
        cache_key(
            EntryKind::Verdict,
            &id,
            &dec,
            "ex1",
            &ChatPrompt { assistant_prefix: "Result:".into(), ..p.clone() },
            &null,
        ),
        cache_key(EntryKind::Verdict, &id, &dec, "ex1", &p, &serde_json::json!({"answer": "x"})),
    ];
    for (i, k) in variants.iter().enumerate() {
        assert_ne!(&base, k, "variant {i} must change the key");
    }
}

struct LengthRm(AtomicUsize);

impl RewardModel for LengthRm {
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        self.0.fetch_add(items.len(), Ordering::SeqCst);
        Ok(items
            .iter()
            .map(|r| Score {
                value: r.input.answer.len() as f32 / 7.0,
                tokens: TokenStats::default(),
            })
            .collect())
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: "reward-server:http://127.0.0.1:1".into(),
            engine: "rm".into(),
            file_hash: "http://127.0.0.1:1".into(),
            ..Default::default()
        }
    }
}

#[test]
fn reward_model_scores_round_trip_exactly_and_prune_and_stats_count_them() {
    let (_d, cache) = temp_cache();
    let rm = LengthRm(AtomicUsize::new(0));
    let items: Vec<RmRequest> = ["short", "a longer answer", "the longest answer of them all"]
        .iter()
        .map(|a| RmRequest {
            input: RmInput {
                example_id: "e".into(),
                question: "q".into(),
                context: None,
                answer: (*a).into(),
            },
            prompt: prompt(a),
        })
        .collect();
    let counters = CacheCounters::default();
    let cached = CachedRewardModel::new(&rm, &cache, &counters);
    let first = cached.score(&items).unwrap();
    let second = cached.score(&items).unwrap();
    assert_eq!(rm.0.load(Ordering::SeqCst), 3);
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(
            a.value.to_bits(),
            b.value.to_bits(),
            "f32 scores survive the JSON round trip bit for bit"
        );
    }
    // A judge's entries beside them.
    let judge_counters = CacheCounters::default();
    CachedJudge::new(&Counting::default(), &cache, &judge_counters)
        .judge(&[request("x", "judge prompt")])
        .unwrap();
    let stats = cache.stats().unwrap();
    assert_eq!(stats.len(), 2);
    assert_eq!(
        (stats[0].model.as_str(), stats[0].kind.as_str(), stats[0].entries),
        ("reward-server:http://127.0.0.1:1", "score", 3)
    );
    assert_eq!((stats[1].kind.as_str(), stats[1].entries), ("verdict", 1));
    let f = PruneFilter { model_contains: Some("reward-server".into()), unused_for_secs: None };
    assert_eq!(cache.prune(&f, true).unwrap(), 3, "dry run counts");
    assert_eq!(cache.stats().unwrap().len(), 2, "dry run deletes nothing");
    // `_` and `%` in the filter are literal text, not SQL wildcards.
    assert_eq!(
        cache
            .prune(
                &PruneFilter {
                    model_contains: Some("reward_server".into()),
                    unused_for_secs: None
                },
                false
            )
            .unwrap(),
        0
    );
    assert_eq!(cache.prune(&f, false).unwrap(), 3);
    assert_eq!(cache.stats().unwrap().len(), 1);
    // Entries used within the last day survive an age filter of one day.
    assert_eq!(
        cache
            .prune(&PruneFilter { model_contains: None, unused_for_secs: Some(86_400) }, false)
            .unwrap(),
        0
    );
    assert_eq!(cache.prune(&PruneFilter::default(), false).unwrap(), 1);
    assert!(cache.stats().unwrap().is_empty());
}

#[test]
fn two_handles_on_one_file_see_each_others_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.sqlite");
    let a = Cache::open(&path).unwrap();
    let b = Cache::open(&path).unwrap();
    a.put("k1", EntryKind::Score, "m", &1.5f32).unwrap();
    assert_eq!(b.get::<f32>("k1").unwrap(), Some(1.5));
    assert_eq!(b.get::<f32>("missing").unwrap(), None);
}

#[test]
fn a_file_that_is_not_a_cache_is_refused_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(
        &path,
        "not a database, just text that is long enough to look like a header....",
    )
    .unwrap();
    let e = Cache::open(&path).unwrap_err().to_string();
    assert!(e.contains("notes.txt"), "{e}");
}

#[test]
fn a_short_file_that_is_not_a_cache_is_refused_and_left_byte_for_byte() {
    // SQLite opens a file shorter than its header as a new database and writes over it; a
    // mistyped `--cache` must not cost the user the file.
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [("one-byte.jsonl", &b"x"[..]), ("rows.jsonl", &b"{\"id\": 1}\n"[..])] {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let e = Cache::open(&path).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains("is not a SQLite file"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), body);
        assert!(
            !dir.path().join(format!("{name}-wal")).exists()
                && !dir.path().join(format!("{name}-shm")).exists()
        );
    }
    // An empty file holds nothing to lose, and a new path is created as before.
    std::fs::write(dir.path().join("empty.sqlite"), b"").unwrap();
    assert!(Cache::open(&dir.path().join("empty.sqlite")).is_ok());
    assert!(Cache::open(&dir.path().join("new.sqlite")).is_ok());
    assert!(Cache::open(&dir.path().join("new.sqlite")).is_ok(), "our own cache reopens");
}

#[test]
fn another_programs_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('keep me');")
        .unwrap();
    drop(conn);
    let e = Cache::open(&path).unwrap_err().to_string();
    assert!(e.contains("not a prbench cache") && e.contains("notes"), "{e}");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(tables, vec!["notes".to_string()]);
}
