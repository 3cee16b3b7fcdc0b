//! Batched generation ([`GgufOptions::gen_batch`]) against one request at a time, on the real
//! SmolLM2-135M-Instruct file and the bundled sample's questions: the outputs are the same,
//! greedy and sampled, and a prompt a slot holds is not decoded again. Run with
//! `cargo test --release -p prbench-llm --test gguf_batch -- --nocapture` to see the counts.

use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::{ChatMessage, ChatPrompt, ChatRequest, ChatResponse, Generator, Role};

fn load() -> Option<GgufEngine> {
    let path = prbench_testkit::smollm2()?;
    Some(GgufEngine::load(&path, GgufOptions::default()).expect("load SmolLM2"))
}

/// The sample's 12 questions as policy requests: the bare question, or (`with_posts`) the
/// question after its ten profile posts (stage-sized prompts, hundreds of tokens).
fn sample_requests(temperature: f32, max_new_tokens: usize, with_posts: bool) -> Vec<ChatRequest> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/sample");
    let mut out = Vec::new();
    for subset in
        ["Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture"]
    {
        let text = std::fs::read_to_string(dir.join(format!("{subset}.jsonl"))).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let question = v["question"].as_str().unwrap();
            let user = if with_posts {
                let posts: Vec<String> = v["profile"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| format!("- {}", p["text"].as_str().unwrap()))
                    .collect();
                format!("My past posts:\n{}\n\nQuestion: {question}", posts.join("\n"))
            } else {
                question.to_string()
            };
            out.push(ChatRequest {
                prompt: ChatPrompt {
                    messages: vec![
                        ChatMessage::new(Role::System, "You are a helpful assistant."),
                        ChatMessage::new(Role::User, user),
                    ],
                    assistant_prefix: String::new(),
                },
                max_new_tokens,
                temperature,
                top_p: 0.9,
                seed: 42 + out.len() as u64,
            });
        }
    }
    out
}

/// The prompt tokens one slot keeps generating `prompts` in order, by the rule of `fork.rs`
/// applied by hand: each prompt keeps what it shares with the one before, at most its length
/// minus 64, rounded down to a multiple of 4.
fn kept_one_at_a_time(prompts: &[Vec<i32>]) -> u64 {
    prompts
        .windows(2)
        .map(|w| {
            let common = w[0].iter().zip(&w[1]).take_while(|(a, b)| a == b).count();
            let keep = common.min(w[1].len().saturating_sub(64));
            (keep - keep % 4) as u64
        })
        .sum()
}

/// (outputs that differ, the first differing token's index in each) between two runs.
fn differences(a: &[ChatResponse], b: &[ChatResponse]) -> Vec<usize> {
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.text != y.text)
        .map(|(x, y)| x.text.chars().zip(y.text.chars()).take_while(|(c, d)| c == d).count())
        .collect()
}

#[test]
fn the_batch_size_is_part_of_the_generator_identity() {
    let Some(engine) = load() else { return };
    engine.set_gen_batch(1);
    let alone = Generator::identity(&engine);
    // The generator's identity is the engine's plus the decoding scheme, so that generations
    // cached by builds that decoded one-row steps are not read back.
    let mut engine_id = engine.identity();
    engine_id.engine = format!("{}, {}", engine_id.engine, prbench_llm::GENERATION);
    assert_eq!(alone, engine_id);
    // Batched: the batch size too (Q4_K weights round a step by its row count, docs/perf.md).
    engine.set_gen_batch(4);
    let batched = Generator::identity(&engine);
    assert_eq!(batched.engine, format!("{}, batched decoding of up to 4 sequences", alone.engine));
    assert_eq!(
        (alone.file_hash, alone.chat_template_hash),
        (batched.file_hash, batched.chat_template_hash)
    );
}

/// Batched outputs equal one-at-a-time ones exactly, greedy and sampled, on the sample's bare
/// questions (a few dozen prompt tokens) and on the questions with their ten profile posts
/// (hundreds of tokens, the stages' size), whatever the batch size and the order the requests
/// come in: every decode step's rows are whole blocks of four, so no token is computed by
/// llama.cpp's one-row kernels (before steps had two rows or more, 2 of 6 greedy outputs on
/// the long prompts parted from one at a time after 40-80 characters).
#[test]
fn batched_generation_matches_one_at_a_time() {
    let Some(engine) = load() else { return };
    for (what, long) in [("bare questions", false), ("questions with posts", true)] {
        for temperature in [0.0f32, 1.0] {
            let mut reqs = sample_requests(temperature, if long { 32 } else { 48 }, long);
            // Budgets of 8 to 32 tokens, so sequences stop at different steps and leave idle
            // slots between running ones.
            for (i, r) in reqs.iter_mut().enumerate() {
                r.max_new_tokens = 8 + (i * 7) % 25;
            }
            // A request with no token budget rides along: it finishes before any decode step.
            reqs.push(ChatRequest { max_new_tokens: 0, ..reqs[0].clone() });
            engine.set_gen_batch(1);
            let alone = engine.generate(&reqs).unwrap();
            let (zero, rest) = alone.split_last().unwrap();
            assert!(rest.iter().all(|r| r.tokens.output_tokens > 0));
            assert_eq!((zero.text.as_str(), zero.finish_reason.as_deref()), ("", Some("length")));
            for n in [2, 4, 8] {
                engine.set_gen_batch(n);
                let batched = engine.generate(&reqs).unwrap();
                let diff = differences(&alone, &batched);
                eprintln!(
                    "{what}, temperature {temperature}, gen_batch {n}: {} of {} outputs differ \
                     (first differing character: {diff:?})",
                    diff.len(),
                    reqs.len()
                );
                assert_eq!(alone, batched, "{what}, temperature {temperature}, gen_batch {n}");
            }
            // The requests in reverse order, four at a time: other neighbours, same outputs.
            engine.set_gen_batch(4);
            let rev: Vec<ChatRequest> = reqs.iter().rev().cloned().collect();
            let mut back = engine.generate(&rev).unwrap();
            back.reverse();
            assert_eq!(alone, back, "{what}, temperature {temperature}, reversed");
        }
    }
}

/// Best-of-N's requests: four samples (own seeds) of each of three prompts with posts. A slot
/// that holds a prompt lets the next sample of it skip the prefill; the samples equal those of
/// each request generated alone in a call of its own (where nothing can be reused), one at a
/// time and batched, and the reused tokens are counted.
#[test]
fn samples_of_one_prompt_reuse_its_prefill_exactly() {
    let Some(engine) = load() else { return };
    let prompts: Vec<ChatRequest> = sample_requests(1.0, 24, true).into_iter().take(3).collect();
    let reqs: Vec<ChatRequest> = prompts
        .iter()
        .flat_map(|p| (0..4u64).map(move |k| ChatRequest { seed: p.seed * 100 + k, ..p.clone() }))
        .collect();
    engine.set_gen_batch(1);
    let each_alone: Vec<ChatResponse> =
        reqs.iter().map(|r| engine.generate_one(r).unwrap()).collect();
    assert_eq!(engine.reused_prompt_tokens(), 0, "a call of one request reuses nothing");
    let distinct: std::collections::BTreeSet<&str> =
        each_alone.iter().map(|r| r.text.as_str()).collect();
    assert!(distinct.len() > 3, "the seeds draw different samples: {distinct:?}");
    // By hand: every sample but the first of its prompt reuses that prompt's tokens (only
    // whole prompts are reused with `keep_prefix` off).
    let by_hand: u64 = each_alone.chunks(4).map(|c| 3 * c[0].tokens.input_tokens as u64).sum();
    engine.set_keep_prefix(false);
    for n in [1, 2, 4, 8] {
        engine.set_gen_batch(n);
        let before = engine.reused_prompt_tokens();
        let got = engine.generate(&reqs).unwrap();
        assert_eq!(got, each_alone, "gen_batch {n}");
        assert_eq!(engine.reused_prompt_tokens() - before, by_hand, "gen_batch {n}");
    }
    // With it on (the default), the first sample of the second and third prompts also keeps
    // the leading tokens it shares with the prompt before it (the system prompt and the posts'
    // heading), by the rule of `fork.rs`: at most its length - 64, a multiple of 4.
    let tokens: Vec<Vec<i32>> =
        prompts.iter().map(|p| engine.tokenize(&p.prompt).unwrap()).collect();
    let kept = kept_one_at_a_time(&tokens);
    assert!(kept > 0, "the prompts share a system prompt");
    engine.set_keep_prefix(true);
    engine.set_gen_batch(1);
    let before = engine.reused_prompt_tokens();
    assert_eq!(engine.generate(&reqs).unwrap(), each_alone, "keep_prefix on");
    assert_eq!(engine.reused_prompt_tokens() - before, by_hand + kept, "keep_prefix on");
}

/// Build-like requests: for each of four questions with posts, a "chosen" and a "rejected"
/// request whose prompts differ only in their closing instruction, so the second keeps the
/// cells of everything before it. The outputs equal those of each prompt prefilled whole
/// ([`GgufEngine::set_keep_prefix`] off), one at a time and batched; with one slot the kept
/// tokens equal the rule applied by hand to the tokenized prompts (each keeps what it shares
/// with the prompt before it, leaving at least 64 tokens to decode, rounded down to a
/// multiple of 4: `fork.rs`).
#[test]
fn a_prompt_keeps_the_prefix_it_shares_with_a_held_one_exactly() {
    let Some(engine) = load() else { return };
    let mut reqs = Vec::new();
    for (i, base) in sample_requests(0.0, 24, true).into_iter().take(4).enumerate() {
        for (k, ending) in [
            "Write an answer that meets everything this user expects, in their own style.",
            "Write an answer that ignores what this user expects, in a generic style.",
        ]
        .iter()
        .enumerate()
        {
            let mut r = base.clone();
            r.temperature = if i % 2 == 0 { 0.0 } else { 1.0 };
            r.seed = 7 + 2 * i as u64 + k as u64;
            r.prompt.messages[1].content = format!("{}\n\n{ending}", r.prompt.messages[1].content);
            reqs.push(r);
        }
    }
    engine.set_keep_prefix(false);
    engine.set_gen_batch(1);
    let before = engine.reused_prompt_tokens();
    let whole = engine.generate(&reqs).unwrap();
    assert_eq!(engine.reused_prompt_tokens(), before, "keep off: distinct prompts reuse nothing");
    let tokens: Vec<Vec<_>> = reqs.iter().map(|r| engine.tokenize(&r.prompt).unwrap()).collect();
    let by_hand = kept_one_at_a_time(&tokens);
    let pairs: u64 = tokens.chunks(2).map(|c| c[1].len() as u64 - 80).sum();
    assert!(by_hand > pairs, "each rejected prompt keeps most of its chosen one: {by_hand}");
    engine.set_keep_prefix(true);
    for n in [1, 4] {
        engine.set_gen_batch(n);
        let before = engine.reused_prompt_tokens();
        let kept = engine.generate(&reqs).unwrap();
        let reused = engine.reused_prompt_tokens() - before;
        eprintln!("gen_batch {n}: {reused} prompt tokens kept, by hand (one slot) {by_hand}");
        assert_eq!(kept, whole, "gen_batch {n}");
        if n == 1 {
            assert_eq!(reused, by_hand);
        } else {
            assert!(reused > 0, "gen_batch {n}");
        }
    }
}
