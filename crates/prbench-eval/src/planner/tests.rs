//! Tests of the planner flow: prompt content and order, decoding and seeds, batching and the
//! per-item fallback, parse and generator failures, the leakage guard, the cache wrapper, and
//! the template hash.

use std::sync::Mutex;

use prbench_data::{Example, ExampleBuilder, ProfilePost};
use prbench_models::{ChatRequest, ChatResponse, Generator, ModelError, ModelIdentity, TokenStats};
use sha2::{Digest, Sha256};

use super::*;
use crate::cache::{Cache, CacheCounters};
use crate::prompt::{hash_texts, Prompts, PLANNER_SYSTEM, PLANNER_USER, TEMPLATE_TEXTS};

type Reply = Box<dyn Fn(&ChatRequest) -> Result<String, ModelError> + Send + Sync>;

/// Records every request and the size of every call; a batch fails as a whole when any of its
/// items fails (as a real batched engine would).
struct Recorder {
    reply: Reply,
    seen: Mutex<Vec<ChatRequest>>,
    calls: Mutex<Vec<usize>>,
}

impl Recorder {
    fn new(
        reply: impl Fn(&ChatRequest) -> Result<String, ModelError> + Send + Sync + 'static,
    ) -> Self {
        Self { reply: Box::new(reply), seen: Mutex::new(Vec::new()), calls: Mutex::new(Vec::new()) }
    }

    /// Replies with a two-item list naming the example's question, and fails on questions
    /// containing `FAIL`.
    fn lists() -> Self {
        Self::new(|req| {
            let user = &req.prompt.messages[1].content;
            if user.contains("FAIL") {
                return Err(ModelError::Engine("model refused".into()));
            }
            let q = user
                .lines()
                .skip_while(|l| !l.ends_with("asks:"))
                .nth(1)
                .unwrap_or_default()
                .to_string();
            Ok(format!("Here are the aspects:\n- Answers {q}\n- Friendly tone"))
        })
    }

    fn n_items(&self) -> usize {
        self.calls.lock().unwrap().iter().sum()
    }
}

impl Generator for Recorder {
    fn generate(&self, items: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
        self.calls.lock().unwrap().push(items.len());
        self.seen.lock().unwrap().extend(items.iter().cloned());
        items
            .iter()
            .map(|req| {
                let text = (self.reply)(req)?;
                let output_tokens = text.split_whitespace().count();
                Ok(ChatResponse {
                    text,
                    tokens: TokenStats { input_tokens: 10, truncated_tokens: 0, output_tokens },
                    finish_reason: None,
                })
            })
            .collect()
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: "recorder".into(),
            engine: "test".into(),
            file_hash: "rec".into(),
            ..Default::default()
        }
    }
}

fn post(id: &str, j: usize) -> ProfilePost {
    ProfilePost {
        id: format!("{id}-{j}"),
        category: format!("cat{j}"),
        text: format!("{id} wrote post number {j} zq"),
    }
}

fn example(id: &str, question: &str, n_posts: usize) -> Example {
    ExampleBuilder::new(id)
        .subset("Lifestyle_and_Personal_Development")
        .question(question)
        .profile((0..n_posts).map(|j| post(id, j)))
        .aspect(
            format!("Hidden aspect title {id}"),
            format!("Hidden evidence text {id}"),
            format!("Hidden reason text {id}"),
        )
        .narrative(format!("Hidden narrative about user {id}"))
        .category("Fitness")
        .chosen("chosen answer")
        .rejected("rejected answer")
        .build()
}

/// The profile posts of `ex` in the order `order` (indices into the profile).
fn ranked<'e>(ex: &'e Example, order: &[usize]) -> Vec<&'e ProfilePost> {
    order.iter().map(|&j| &ex.profile[j]).collect()
}

fn independent_seed(run_seed: u64, id: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(run_seed.to_le_bytes());
    h.update(id.as_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d[..8].try_into().unwrap())
}

#[test]
fn prompt_renders_question_then_ranked_posts_exactly() {
    let p = Prompts::new();
    let a = ProfilePost {
        id: "1".into(),
        category: " Cooking ".into(),
        text: "  first post\nline two ".into(),
    };
    let b = ProfilePost { id: "2".into(), category: "".into(), text: "second post".into() };
    let chat = p.planner(" Q? ", &[&a, &b]).unwrap();
    assert_eq!(chat.messages.len(), 2);
    assert_eq!(chat.messages[0].content, PLANNER_SYSTEM.trim());
    assert!(chat.assistant_prefix.is_empty());
    let task = "What kind of answer would this user like? Describe the content and style they expect in 3 to 6 short points, one per line, each starting with \"- \".";
    assert_eq!(
        chat.messages[1].content,
        format!(
            "Here are some past posts by a user, most relevant first:\n\n\
             [Post 1 | category: Cooking]\nfirst post\nline two\n\n[Post 2]\nsecond post\n\n\
             The user now asks:\nQ?\n\n{task}"
        )
    );
    let bare = p.planner("Q?", &[]).unwrap();
    assert_eq!(bare.messages[1].content, format!("A user asks:\nQ?\n\n{task}"));
}

#[test]
fn template_hash_covers_the_planner_templates() {
    assert!(TEMPLATE_TEXTS.contains(&PLANNER_SYSTEM) && TEMPLATE_TEXTS.contains(&PLANNER_USER));
    assert_eq!(Prompts::new().hash(), hash_texts(TEMPLATE_TEXTS));
    // hash_texts is sha256 over (byte length as u64 LE ‖ text) for each text.
    let mut h = Sha256::new();
    h.update(2u64.to_le_bytes());
    h.update(b"ab");
    assert_eq!(hash_texts(&["ab"]), hex::encode(h.finalize()));
    // Changing the planner user template changes the manifest hash.
    let edited = format!("{PLANNER_USER} ");
    let texts: Vec<&str> = TEMPLATE_TEXTS
        .iter()
        .map(|t| if *t == PLANNER_USER { edited.as_str() } else { *t })
        .collect();
    assert_ne!(hash_texts(&texts), hash_texts(TEMPLATE_TEXTS));
}

#[test]
fn plan_all_shows_the_question_and_exactly_the_first_k_posts_in_rank_order() {
    let exs = [
        example("a", "How do I start running?", 5),
        example("b", "Best stretches after lifting?", 2),
        example("c", "How much protein do I need?", 0),
    ];
    let refs: Vec<&Example> = exs.iter().collect();
    let order = [3, 1, 4, 0, 2];
    let ranked_posts = vec![ranked(&exs[0], &order), ranked(&exs[1], &[1, 0]), Vec::new()];
    let gen = Recorder::lists();
    let mut planner = Planner::new(&gen, 42, 3);
    planner.batch_size = 2;
    let plans = planner.plan_all(&refs, &ranked_posts, &Prompts::new()).unwrap();

    assert_eq!(*gen.calls.lock().unwrap(), vec![2, 1]);
    let seen = gen.seen.lock().unwrap();
    assert_eq!(seen.len(), 3);

    // Example a: posts 3, 1, 4 shown as Post 1, 2, 3, then the question; 0 and 2 absent.
    let user = &seen[0].prompt.messages[1].content;
    let q_at = user.find("How do I start running?").expect("question shown");
    let mut last = 0;
    for (rank, &j) in order[..3].iter().enumerate() {
        let block = format!("[Post {} | category: cat{j}]\na wrote post number {j} zq", rank + 1);
        let at = user.find(&block).unwrap_or_else(|| panic!("{block:?} missing from {user}"));
        assert!(at >= last, "post {j} out of order");
        last = at;
    }
    assert!(q_at > last, "the question comes after the posts");
    for &j in &order[3..] {
        assert!(!user.contains(&format!("post number {j} zq")), "post {j} is beyond k");
    }
    assert!(!user.contains("[Post 4"));

    // No hidden text of any example in any prompt.
    for (req, ex) in seen.iter().zip(&exs) {
        let all = req.prompt.all_text();
        for hidden in exs.iter().flat_map(|e| e.hidden_texts()) {
            assert!(!all.contains(hidden), "hidden {hidden:?} in the prompt of {}", ex.id);
        }
        assert!(all.contains(&ex.question));
        // Decoding: greedy defaults and the per-example seed.
        assert_eq!((req.max_new_tokens, req.temperature, req.top_p), (128, 0.0, 1.0));
        assert_eq!(req.seed, independent_seed(42, &ex.id));
        assert_eq!(req.seed, planner_seed(42, &ex.id));
    }
    assert_ne!(seen[0].seed, seen[1].seed);
    // Example b has 2 ranked posts (< k), shown in the ranked order 1, 0.
    let user_b = &seen[1].prompt.messages[1].content;
    assert!(
        user_b.find("[Post 1 | category: cat1]").unwrap()
            < user_b.find("[Post 2 | category: cat0]").unwrap()
    );
    // Example c: no posts section at all.
    assert!(!seen[2].prompt.messages[1].content.contains("[Post"));

    let ids: Vec<&str> = plans.iter().map(|p| p.example_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(plans.iter().map(|p| p.posts_shown).collect::<Vec<_>>(), [3, 2, 0]);
    assert_eq!(plans[0].aspects, ["Answers How do I start running?", "Friendly tone"]);
    assert_eq!(
        plans[0].raw,
        "Here are the aspects:\n- Answers How do I start running?\n- Friendly tone"
    );
    assert!(plans.iter().all(|p| p.is_usable() && p.parse_error.is_none() && p.error.is_none()));
    assert_eq!(plans[0].tokens.output_tokens, 14); // whitespace-separated words of the reply
    assert!(!plans[0].hit_max_new_tokens);
}

#[test]
fn a_hidden_text_in_the_prompt_is_a_leakage_error_before_any_call() {
    let ex = example("a", "How do I start running?", 2);
    // A "post" that is not in the profile and carries the narrative: a caller bug.
    let rogue = ProfilePost { id: "x".into(), category: "c".into(), text: ex.narrative.clone() };
    let gen = Recorder::lists();
    let planner = Planner::new(&gen, 1, 10);
    let err =
        planner.plan_all(&[&ex], &[vec![&ex.profile[0], &rogue]], &Prompts::new()).unwrap_err();
    assert!(matches!(&err, EvalError::Leakage { field, .. } if field == "narrative"), "{err}");
    assert!(gen.calls.lock().unwrap().is_empty());
    // Beyond k the rogue post is not shown, so the same input plans fine.
    let planner = Planner::new(&gen, 1, 1);
    assert!(planner.plan_all(&[&ex], &[vec![&ex.profile[0], &rogue]], &Prompts::new()).unwrap()[0]
        .is_usable());
}

#[test]
fn garbage_replies_set_parse_error_and_cut_replies_are_flagged() {
    let exs = [example("a", "q1", 1), example("b", "q2", 1)];
    let refs: Vec<&Example> = exs.iter().collect();
    let posts = vec![ranked(&exs[0], &[0]), ranked(&exs[1], &[0])];
    let gen = Recorder::new(|req| {
        Ok(if req.prompt.messages[1].content.contains("q1") {
            "???".into()
        } else {
            "- one two\n- three".into()
        })
    });
    let mut planner = Planner::new(&gen, 7, 5);
    planner.max_new_tokens = 5;
    let plans = planner.plan_all(&refs, &posts, &Prompts::new()).unwrap();
    assert!(plans[0].aspects.is_empty());
    assert_eq!(plans[0].raw, "???");
    assert!(plans[0].parse_error.as_deref().unwrap().contains("no usable list item"));
    assert!(plans[0].error.is_none() && !plans[0].is_usable());
    // "- one two - three" is 5 whitespace tokens in the fake: the budget of 5 was used up.
    assert_eq!(plans[1].aspects, ["one two", "three"]);
    assert!(plans[1].hit_max_new_tokens);
    assert!(!plans[0].hit_max_new_tokens);
}

#[test]
fn a_failing_item_becomes_plan_error_and_the_rest_of_its_batch_still_plans() {
    let exs = [
        example("a", "q a", 1),
        example("b", "FAIL b", 1),
        example("c", "q c", 1),
        example("d", "q d", 1),
    ];
    let refs: Vec<&Example> = exs.iter().collect();
    let posts: Vec<Vec<&ProfilePost>> = exs.iter().map(|e| ranked(e, &[0])).collect();
    let gen = Recorder::lists();
    let mut planner = Planner::new(&gen, 3, 10);
    planner.batch_size = 4;
    let plans = planner.plan_all(&refs, &posts, &Prompts::new()).unwrap();
    // The batch of 4 failed as a whole, then each item was tried alone.
    assert_eq!(*gen.calls.lock().unwrap(), vec![4, 1, 1, 1, 1]);
    let err = plans[1].error.as_deref().expect("b failed");
    assert!(
        err.contains("backend `recorder` failed on example `b`") && err.contains("model refused"),
        "{err}"
    );
    assert!(
        plans[1].aspects.is_empty() && plans[1].raw.is_empty() && plans[1].parse_error.is_none()
    );
    assert_eq!(plans[1].posts_shown, 1);
    for i in [0, 2, 3] {
        assert!(plans[i].is_usable(), "{:?}", plans[i]);
        assert_eq!(plans[i].example_id, exs[i].id);
    }
}

#[test]
fn cached_generator_answers_a_rerun_without_inner_calls() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(&dir.path().join("cache.sqlite")).unwrap();
    let exs = [example("a", "q a", 3), example("b", "FAIL b", 3), example("c", "q c", 3)];
    let refs: Vec<&Example> = exs.iter().collect();
    let posts: Vec<Vec<&ProfilePost>> = exs.iter().map(|e| ranked(e, &[2, 0, 1])).collect();
    let gen = Recorder::lists();
    let prompts = Prompts::new();

    let first_counts = CacheCounters::default();
    let cached = CachedGenerator::new(&gen, &cache, &first_counts);
    assert_eq!(cached.identity(), gen.identity());
    let first = Planner::new(&cached, 42, 2).plan_all(&refs, &posts, &prompts).unwrap();
    assert!(first[1].error.is_some());
    let inner_after_first = gen.n_items();
    // The fake generator's default generate_each: the batch of 3 failed (3), then a, b, c
    // alone (3).
    assert_eq!(inner_after_first, 6);
    let r1 = first_counts.report(&cache);
    // Calls: the 3 misses, handed over once (the retries are the generator's own business);
    // stored: a and c only (b failed).
    assert_eq!((r1.hits, r1.calls, r1.stored, r1.write_errors), (0, 3, 2, 0));

    let second_counts = CacheCounters::default();
    let cached = CachedGenerator::new(&gen, &cache, &second_counts);
    let second = Planner::new(&cached, 42, 2).plan_all(&refs, &posts, &prompts).unwrap();
    // Only b (never stored) reaches the inner generator again, once: a and c are hits.
    assert_eq!(gen.n_items() - inner_after_first, 1);
    assert_eq!(second[0], first[0]);
    assert_eq!(second[2], first[2]);
    assert!(second[1].error.is_some());
    let r2 = second_counts.report(&cache);
    assert_eq!((r2.hits, r2.calls, r2.stored), (2, 1, 0));

    // All successes: a rerun makes no inner call at all.
    let ok: Vec<&Example> = vec![&exs[0], &exs[2]];
    let ok_posts = vec![posts[0].clone(), posts[2].clone()];
    let before = gen.n_items();
    let third_counts = CacheCounters::default();
    let cached = CachedGenerator::new(&gen, &cache, &third_counts);
    let third = Planner::new(&cached, 42, 2).plan_all(&ok, &ok_posts, &prompts).unwrap();
    assert_eq!(gen.n_items(), before);
    assert_eq!((third[0].clone(), third[1].clone()), (first[0].clone(), first[2].clone()));
    assert_eq!(third_counts.report(&cache).hits, 2);

    // Another run seed, k or token budget is another request: a miss.
    let fourth_counts = CacheCounters::default();
    let cached = CachedGenerator::new(&gen, &cache, &fourth_counts);
    Planner::new(&cached, 43, 2).plan_all(&ok, &ok_posts, &prompts).unwrap();
    Planner::new(&cached, 42, 1).plan_all(&ok, &ok_posts, &prompts).unwrap();
    let mut longer = Planner::new(&cached, 42, 2);
    longer.max_new_tokens = 256;
    longer.plan_all(&ok, &ok_posts, &prompts).unwrap();
    let r4 = fourth_counts.report(&cache);
    assert_eq!((r4.hits, r4.calls), (0, 6));
}

#[test]
fn cache_keys_cover_identity_and_every_request_field() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(&dir.path().join("cache.sqlite")).unwrap();
    let counters = CacheCounters::default();
    let gen = Recorder::lists();
    let cached = CachedGenerator::new(&gen, &cache, &counters);
    let ex = example("a", "q", 1);
    let (req, _) =
        Planner::new(&gen, 1, 1).request(&ex, &[&ex.profile[0]], &Prompts::new()).unwrap();
    let base = cached.key(&req);
    let variants = [
        ChatRequest { seed: req.seed + 1, ..req.clone() },
        ChatRequest { temperature: 0.7, ..req.clone() },
        ChatRequest { top_p: 0.9, ..req.clone() },
        ChatRequest { max_new_tokens: 64, ..req.clone() },
        {
            let mut r = req.clone();
            r.prompt.messages[1].content.push('!');
            r
        },
    ];
    for v in &variants {
        assert_ne!(cached.key(v), base, "{v:?}");
    }
    assert_eq!(cached.key(&req.clone()), base);
    struct Other;
    impl Generator for Other {
        fn generate(&self, _: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
            unreachable!()
        }
        fn identity(&self) -> ModelIdentity {
            ModelIdentity {
                spec: "recorder".into(),
                engine: "test".into(),
                file_hash: "other".into(),
                ..Default::default()
            }
        }
    }
    let other = CachedGenerator::new(&Other, &cache, &counters);
    assert_ne!(other.key(&req), base, "the model file hash is part of the key");
}

#[test]
fn the_cache_passes_the_inner_generators_context_check_through() {
    /// Says every prompt is `over` tokens past its context.
    struct Tight {
        over: usize,
    }
    impl Generator for Tight {
        fn generate(&self, _: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
            unreachable!()
        }
        fn prompt_overflow(
            &self,
            _: &prbench_models::ChatPrompt,
            reserve: usize,
        ) -> Result<Option<usize>, ModelError> {
            Ok(Some(self.over + reserve))
        }
        fn identity(&self) -> ModelIdentity {
            ModelIdentity { spec: "tight".into(), ..Default::default() }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(&dir.path().join("cache.sqlite")).unwrap();
    let counters = CacheCounters::default();
    let ex = example("a", "q", 1);
    let gen = Recorder::lists();
    let (req, _) =
        Planner::new(&gen, 1, 1).request(&ex, &[&ex.profile[0]], &Prompts::new()).unwrap();
    let tight = Tight { over: 5 };
    let cached = CachedGenerator::new(&tight, &cache, &counters);
    // 5 over, plus the 7 tokens to generate: what the inner generator says, not "cannot tell".
    assert_eq!(cached.prompt_overflow(&req.prompt, 7).unwrap(), Some(12));
}

#[test]
fn requests_of_two_stages_in_one_call_are_keyed_by_their_own_template_hash() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(&dir.path().join("cache.sqlite")).unwrap();
    let counters = CacheCounters::default();
    let gen = Recorder::lists();
    let exs = [example("a", "q a", 1), example("b", "q b", 1)];
    let reqs: Vec<ChatRequest> = exs
        .iter()
        .map(|ex| {
            Planner::new(&gen, 1, 1).request(ex, &[&ex.profile[0]], &Prompts::new()).unwrap().0
        })
        .collect();
    let mixed = CachedGenerator::new(&gen, &cache, &counters);
    let replies = mixed.generate_each_under(&reqs, &["one", "two"], &|_, _| {});
    assert!(replies.iter().all(Result::is_ok));
    assert_eq!(*gen.calls.lock().unwrap(), [2], "both requests in one inner call");
    // Each is found by a wrapper keyed with its own hash only.
    let one = CachedGenerator::new(&gen, &cache, &counters).with_template_hash("one");
    let two = CachedGenerator::new(&gen, &cache, &counters).with_template_hash("two");
    assert_eq!(mixed.key_under(&reqs[0], Some("one")), one.key(&reqs[0]));
    assert_eq!(mixed.key_under(&reqs[1], Some("two")), two.key(&reqs[1]));
    assert_eq!(mixed.key_under(&reqs[0], None), mixed.key(&reqs[0]));
    let before = counters.report(&cache);
    one.generate(&reqs[..1]).unwrap();
    two.generate(&reqs[1..]).unwrap();
    assert_eq!(gen.n_items(), 2, "both hits");
    one.generate(&reqs[1..]).unwrap();
    assert_eq!(gen.n_items(), 3, "b under the other stage's hash is a miss");
    let after = counters.report(&cache);
    assert_eq!((after.hits - before.hits, after.calls - before.calls), (2, 1));
}
