//! Shared-prefix scoring on the GGUF engine (`next_token_logprobs_many`, KV sequence copy)
//! against scoring each prompt alone, on the real SmolLM2-135M-Instruct file (skipped when it
//! is absent). Run with `cargo test --release -p prbench-llm --test gguf_fork`.

use std::sync::{Mutex, MutexGuard};

use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::{ChatMessage, ChatPrompt, NextTokenScorer, Role};

/// Largest difference allowed between a shared-prefix log-probability and the one from the
/// prompt alone (the judge's margins must agree within 1e-5).
const TOL: f32 = 1e-5;

const CANDIDATES: [&str; 2] = [" A", " B"];

/// Model tests run one at a time (2 shared cores).
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn load(opts: GgufOptions) -> Option<GgufEngine> {
    let path = prbench_testkit::smollm2()?;
    Some(GgufEngine::load(&path, opts).expect("load SmolLM2"))
}

/// A judge prompt over `context` with the answers in the order given.
fn judge(context: &str, question: &str, a: &str, b: &str) -> ChatPrompt {
    ChatPrompt {
        messages: vec![
            ChatMessage::new(Role::System, "You compare two answers for a user and pick the better one."),
            ChatMessage::new(
                Role::User,
                format!("{context}\n\nQuestion: {question}\n\nAnswer A: {a}\n\nAnswer B: {b}\n\nWhich answer is better? End with `Result: A` or `Result: B`."),
            ),
        ],
        assistant_prefix: "Result:".into(),
    }
}

/// Both orders of two pairs, then a pair under another context: 6 prompts.
fn prompts(posts: usize) -> Vec<ChatPrompt> {
    let profile: String = (0..posts)
        .map(|i| {
            format!("Post {i}: I grow herbs on a north-facing balcony and cook most evenings.\n")
        })
        .collect();
    let (basil, q2) = ("How do I keep basil alive indoors?", "What should I plant first?");
    let (a1, b1) =
        ("Put it in a sunny window and water when the soil is dry.", "Basil cannot grow indoors.");
    let (a2, b2) = ("Start with mint; it tolerates shade.", "Tomatoes, they need little light.");
    vec![
        judge(&profile, basil, a1, b1),
        judge(&profile, basil, b1, a1),
        judge(&profile, q2, a2, b2),
        judge(&profile, q2, b2, a2),
        judge("No profile.", basil, a1, b1),
        judge("No profile.", basil, b1, a1),
    ]
}

/// Each prompt scored alone through `next_token_logprobs`.
fn alone(engine: &GgufEngine, prompts: &[ChatPrompt]) -> Vec<Vec<f32>> {
    prompts.iter().map(|p| engine.next_token_logprobs(p, &CANDIDATES).unwrap().0).collect()
}

/// `next_token_logprobs_many` on all prompts; checks `input_tokens` is each prompt's length.
fn many(engine: &GgufEngine, prompts: &[ChatPrompt]) -> Vec<Vec<f32>> {
    let refs: Vec<&ChatPrompt> = prompts.iter().collect();
    let out = engine.next_token_logprobs_many(&refs, &CANDIDATES).unwrap();
    assert_eq!(out.len(), prompts.len());
    for ((_, stats), p) in out.iter().zip(prompts) {
        assert_eq!(
            stats.input_tokens,
            engine.tokenize(p).unwrap().len(),
            "input_tokens is the whole prompt"
        );
    }
    out.into_iter().map(|(lp, _)| lp).collect()
}

/// Largest |a − b| over log-probabilities and margins, asserting it is within [`TOL`] and that
/// every margin has the same sign.
fn assert_close(shared: &[Vec<f32>], reference: &[Vec<f32>]) -> f32 {
    assert_eq!(shared.len(), reference.len());
    let mut worst = 0f32;
    for (i, (s, r)) in shared.iter().zip(reference).enumerate() {
        assert_eq!(s.len(), 2);
        for (x, y) in s.iter().zip(r) {
            worst = worst.max((x - y).abs());
        }
        let (ms, mr) = (s[0] - s[1], r[0] - r[1]);
        worst = worst.max((ms - mr).abs());
        assert_eq!(
            ms.partial_cmp(&0.0),
            mr.partial_cmp(&0.0),
            "prompt {i}: verdict changed ({ms} vs {mr})"
        );
    }
    assert!(worst <= TOL, "shared-prefix results differ from prompts alone by {worst}");
    worst
}

/// Length of the longest common prefix of two token sequences.
fn lcp(a: &[i32], b: &[i32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Fewest tokens the engine leaves in a shared prefix and in each suffix (llama.cpp's CPU
/// flash-attention tile, `GGML_FA_TILE_Q`; see `gguf/fork.rs`).
const MIN_PIECE: usize = 64;

/// Multiple of tokens every piece starts at (llama.cpp's repacked matrix kernels take rows in
/// blocks of four; see `gguf/fork.rs`).
const ROW_BLOCK: usize = 4;

/// What two prompts can share: their common prefix, leaving each [`MIN_PIECE`] tokens, in
/// whole row blocks.
fn shareable(a: &[i32], b: &[i32]) -> usize {
    let s = lcp(a, b).min(a.len().min(b.len()).saturating_sub(MIN_PIECE));
    s - s % ROW_BLOCK
}

#[test]
fn shared_prefix_scores_equal_each_prompt_alone() {
    let _g = serial();
    let Some(engine) = load(GgufOptions::default()) else { return };
    assert!(engine.share_prefix(), "shared prefixes are the default");
    let ps = prompts(12);
    let reference = alone(&engine, &ps);
    let before = engine.shared_prefix_tokens();
    let shared = many(&engine, &ps);
    let worst = assert_close(&shared, &reference);
    let reused = engine.shared_prefix_tokens() - before;
    eprintln!("max |shared − alone| = {worst:e}; {reused} prompt tokens reused");

    // The two orders of each pair share everything up to the first answer; the prefixes the
    // engine reused are at least those of the three pairs (it may also group across pairs when
    // that saves more).
    let toks: Vec<Vec<i32>> = ps.iter().map(|p| engine.tokenize(p).unwrap()).collect();
    let pairs: usize = toks.chunks(2).map(|c| shareable(&c[0], &c[1])).sum();
    assert!(pairs > 2 * 100, "the pairs share long prefixes ({pairs} tokens)");
    assert!(reused as usize >= pairs, "reused {reused} < the pairs' common prefixes {pairs}");

    // Off: the same call scores each prompt alone, bit for bit, and reuses nothing.
    engine.set_share_prefix(false);
    let before = engine.shared_prefix_tokens();
    let unshared = many(&engine, &ps);
    assert_eq!(unshared, reference);
    assert_eq!(engine.shared_prefix_tokens(), before);
}

#[test]
fn a_group_of_one_is_the_plain_forward_pass() {
    let _g = serial();
    let Some(engine) = load(GgufOptions::default()) else { return };
    let ps = prompts(8);
    let one = many(&engine, &ps[..1]);
    assert_eq!(one, alone(&engine, &ps[..1]), "one prompt: exactly next_token_logprobs");
    assert_eq!(engine.shared_prefix_tokens(), 0);
    // Identical prompts: all but the last 64 tokens (and up to 3 more, to a whole row block)
    // are shared, each gets its own logits.
    let twice = [ps[0].clone(), ps[0].clone(), ps[0].clone()];
    let out = many(&engine, &twice);
    assert_close(&out, &alone(&engine, &twice));
    let n = engine.tokenize(&ps[0]).unwrap().len();
    assert!(n > 2 * MIN_PIECE);
    let each = (n - MIN_PIECE) - (n - MIN_PIECE) % ROW_BLOCK;
    assert_eq!(engine.shared_prefix_tokens(), 2 * each as u64);
}

#[test]
fn prompts_without_a_common_prefix_are_scored_alone() {
    let _g = serial();
    // A template that emits the content only, so prompts can differ from their first token.
    let opts = GgufOptions {
        chat_template: Some("{{ messages[0]['content'] }}".into()),
        ..GgufOptions::default()
    };
    let Some(engine) = load(opts) else { return };
    let text = |s: &str| ChatPrompt {
        messages: vec![ChatMessage::new(Role::User, s)],
        assistant_prefix: String::new(),
    };
    let ps = vec![
        text("Apples grow on trees. The best answer is"),
        text("Zebras live in Africa. The best answer is"),
        text("Apples grow on trees. The worst answer is"),
    ];
    let toks: Vec<Vec<i32>> = ps.iter().map(|p| engine.tokenize(&p.clone()).unwrap()).collect();
    assert_eq!(lcp(&toks[0], &toks[1]), 0, "{toks:?}");
    assert_eq!(lcp(&toks[1], &toks[2]), 0, "{toks:?}");
    let out = many(&engine, &ps);
    assert_eq!(out, alone(&engine, &ps), "no common prefix: each prompt alone, bit for bit");
    assert_eq!(engine.shared_prefix_tokens(), 0);
    // Errors stay errors: a candidate of two tokens fails the call.
    let refs: Vec<&ChatPrompt> = ps.iter().collect();
    assert!(engine.next_token_logprobs_many(&refs, &[" A", " Answer B"]).is_err());
    assert!(engine.next_token_logprobs_many(&[], &CANDIDATES).unwrap().is_empty());
}

/// The KV cache grows on demand (512 cells, then the next power of two a call needs; a group
/// needs its longest prompt, since each suffix leaves the cache before the next). Shared-prefix
/// results equal each prompt alone, before and after the growth, and on an engine whose cache
/// history differs.
#[test]
fn kv_cache_growth_keeps_shared_prefix_scores() {
    let _g = serial();
    let Some(fresh) = load(GgufOptions::default()) else { return };
    assert_eq!(fresh.allocated_ctx(), 512);
    let short = prompts(3);
    let long = prompts(40);
    let long_toks: Vec<Vec<i32>> = long[..2].iter().map(|p| fresh.tokenize(p).unwrap()).collect();
    let (n0, n1) = (long_toks[0].len(), long_toks[1].len());
    assert!(n0.max(n1) > 512 && n0.max(n1) <= 1024, "a pair of {n0} and {n1} tokens");
    assert!(
        shareable(&long_toks[0], &long_toks[1]) > 512,
        "the pair shares more than the first cache holds"
    );

    let short_before = many(&fresh, &short);
    assert_eq!(fresh.allocated_ctx(), 512);
    let long_shared = many(&fresh, &long[..2]);
    assert_eq!(fresh.allocated_ctx(), 1024, "grown to the longest prompt's power of two");
    let short_after = many(&fresh, &short);
    assert_eq!(short_before, short_after, "results changed after the cache grew");

    let big = load(GgufOptions::default()).unwrap();
    let long_alone = alone(&big, &long[..2]);
    assert!(big.allocated_ctx() >= 1024);
    assert_close(&long_shared, &long_alone);
    assert_close(&short_after, &alone(&big, &short));
    assert_eq!(many(&big, &long[..2]), long_shared, "same results whatever the cache's history");
}

/// Where a group continues from the tokens the cache holds (the previous group's last
/// prompt): their common prefix, leaving at least [`MIN_PIECE`] tokens of the group's first
/// prompt to decode, in whole row blocks (the rules `gguf/fork.rs` states, by hand).
fn kept(held: &[i32], prompt: &[i32]) -> usize {
    let k = lcp(held, prompt).min(prompt.len() - MIN_PIECE);
    k - k % ROW_BLOCK
}

/// One call per pair, as eval's judge calls come one chunk at a time: each pair continues from
/// what the pair before left in the cache (the system prompt and the profile), within the same
/// exactness; a call that decodes a prompt alone in between leaves nothing to continue from;
/// with the kept prefix off each pair starts from a cleared cache.
#[test]
fn a_kept_prefix_carries_across_calls() {
    let _g = serial();
    let Some(engine) = load(GgufOptions::default()) else { return };
    assert!(engine.keep_prefix(), "the kept prefix is the default");
    let ps = prompts(12);
    let toks: Vec<Vec<i32>> = ps.iter().map(|p| engine.tokenize(p).unwrap()).collect();
    let reference = alone(&engine, &ps);

    // By hand: each pair is one group sharing its common prefix (each order keeping at least
    // MIN_PIECE tokens after it); its first prompt keeps what it has in common with the cache
    // (the previous pair's second prompt).
    let shared: Vec<usize> = toks.chunks(2).map(|c| shareable(&c[0], &c[1])).collect();
    assert!(shared.iter().all(|&s| s > 0), "{shared:?}");
    let kept_by_hand: Vec<usize> = (1..3).map(|k| kept(&toks[2 * k - 1], &toks[2 * k])).collect();
    assert!(kept_by_hand[0] > 100, "the second pair keeps the profile ({kept_by_hand:?})");
    assert!(kept_by_hand[1] > 0, "the third keeps the system prompt ({kept_by_hand:?})");

    let before = engine.shared_prefix_tokens();
    let per_call: Vec<Vec<f32>> = ps.chunks(2).flat_map(|c| many(&engine, c)).collect();
    let worst = assert_close(&per_call, &reference);
    let reused = engine.shared_prefix_tokens() - before;
    eprintln!(
        "shared {shared:?}, kept across calls {kept_by_hand:?}; max |kept − alone| = {worst:e}"
    );
    let pairs: usize = shared.iter().sum();
    assert_eq!(reused as usize, pairs + kept_by_hand.iter().sum::<usize>());

    // A prompt scored alone empties the cache: the next pair keeps nothing.
    let _ = alone(&engine, &ps[..1]);
    let before = engine.shared_prefix_tokens();
    assert_eq!(many(&engine, &ps[2..4]), per_call[2..4]);
    assert_eq!((engine.shared_prefix_tokens() - before) as usize, shared[1]);

    // Off: each pair from a cleared cache, the same results.
    engine.set_keep_prefix(false);
    let before = engine.shared_prefix_tokens();
    let cleared: Vec<Vec<f32>> = ps.chunks(2).flat_map(|c| many(&engine, c)).collect();
    assert_eq!(cleared, per_call);
    assert_eq!((engine.shared_prefix_tokens() - before) as usize, pairs);
}
