//! Batched generation ([`GgufOptions::gen_batch`]) against one request at a time, on the real
//! SmolLM2-135M-Instruct file and the bundled sample's questions: how many outputs differ, and
//! by how many tokens, greedy and sampled. Run with
//! `cargo test --release -p prbench-llm --test gguf_batch -- --nocapture` to see the counts.

use prbench_llm::{GgufEngine, GgufOptions};
use prbench_models::{ChatMessage, ChatPrompt, ChatRequest, ChatResponse, Generator, Role};

fn load() -> Option<GgufEngine> {
    let path = prbench_testkit::smollm2()?;
    Some(GgufEngine::load(&path, GgufOptions::default()).expect("load SmolLM2"))
}

/// The sample's 12 questions, as policy requests.
fn requests(temperature: f32, max_new_tokens: usize) -> Vec<ChatRequest> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/sample");
    let mut out = Vec::new();
    for subset in
        ["Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture"]
    {
        let text = std::fs::read_to_string(dir.join(format!("{subset}.jsonl"))).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let q = v["question"].as_str().unwrap();
            out.push(ChatRequest {
                prompt: ChatPrompt {
                    messages: vec![
                        ChatMessage::new(Role::System, "You are a helpful assistant."),
                        ChatMessage::new(Role::User, q),
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
    assert_eq!(alone, engine.identity(), "one at a time: the engine's own identity");
    engine.set_gen_batch(4);
    let batched = Generator::identity(&engine);
    assert_ne!(alone.engine, batched.engine);
    assert!(batched.engine.contains("up to 4 sequences"), "{}", batched.engine);
    assert_eq!(
        (alone.file_hash, alone.chat_template_hash),
        (batched.file_hash, batched.chat_template_hash)
    );
}

/// On SmolLM2's Q4_1 weights and the sample's bare questions (prompts of a few dozen tokens),
/// batched outputs equal one-at-a-time ones exactly. They do not in general: on the stages'
/// prompts with ten profile posts (hundreds of tokens) and on Q4_K_M weights some outputs part
/// after a few tokens (docs/perf.md, `prbench bench generate` counts them); the generator
/// identity keeps the two apart in the cache.
#[test]
fn batched_generation_matches_one_at_a_time() {
    let Some(engine) = load() else { return };
    for temperature in [0.0f32, 1.0] {
        let mut reqs = requests(temperature, 48);
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
                "temperature {temperature}, gen_batch {n}: {} of {} outputs differ (first differing character: {diff:?})",
                diff.len(),
                reqs.len()
            );
            for (a, b) in alone.iter().zip(&batched) {
                assert_eq!(a.tokens.input_tokens, b.tokens.input_tokens);
            }
            assert_eq!(alone, batched, "temperature {temperature}, gen_batch {n}");
        }
    }
}
