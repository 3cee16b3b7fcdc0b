//! Shared-prefix scoring is exact: a prefix run once and suffixes scored against its keys and
//! values ([`SeqClsModel::score_suffixes`]) give the scores of the full sequences through the
//! unshared path ([`SeqClsModel::score_batch_padded`], itself checked against transformers in
//! seqcls_parity.rs), on every fixture model of tools/make_seqcls_fixtures.py (Llama, Qwen 2,
//! Qwen 3, Mistral with a sliding window on every layer, Gemma 2 with sliding + full layers and
//! soft-capping; f32, bf16, f16 weights), left and right padding, 1, 3 and 8 suffixes, within
//! 1e-5. Then the same through [`SeqClsRewardModel`], which must also report that it grouped.
//!
//! An `#[ignore]`d timing: set `PRBENCH_SHARED_BENCH_DIR` to a model directory (e.g. the
//! 6-layer decoder of `tools/bench_rm.py make-decoder DIR`) and run
//! `cargo test --release -p prbench-rm --test shared_prefix -- --ignored --nocapture`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use prbench_models::{ChatMessage, ChatPrompt, RewardModel, RmInput, RmRequest, Role};
use prbench_rm::reward::{SeqClsOptions, SeqClsRewardModel};
use prbench_rm::seqcls::{PaddingSide, SeqClsModel};
use rand::{Rng, SeedableRng};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seqcls")
}

fn expected() -> Value {
    let path = fixtures().join("expected.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run tools/make_seqcls_fixtures.py)", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn model_dirs() -> Vec<String> {
    let e = expected();
    let dirs: Vec<String> = e["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["dir"].as_str().unwrap().to_string())
        .collect();
    assert!(dirs.len() >= 13, "expected.json lists {} models", dirs.len());
    dirs
}

fn max_abs(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (p - q).abs())
        })
        .fold(0.0, f32::max)
}

/// Random ids below `vocab`, avoiding `avoid` (pad) so that pooling reads the last token.
fn random_ids(rng: &mut impl Rng, n: usize, vocab: usize, avoid: Option<u32>) -> Vec<u32> {
    (0..n)
        .map(|_| loop {
            let id = rng.random_range(0..vocab as u32);
            if Some(id) != avoid {
                break id;
            }
        })
        .collect()
}

/// Suffix lengths of a batch of `n`: varied, so that rows are padded.
fn suffix_lens(n: usize) -> Vec<usize> {
    [1, 17, 5, 40, 2, 9, 28, 3].iter().copied().cycle().take(n).collect()
}

#[test]
fn shared_equals_unshared_on_every_fixture_model_side_and_batch_size() {
    println!("{:<15} {:>7} {:>6} {:>5} {:>12}", "model", "prefix", "side", "batch", "max |Δ|");
    for dir in model_dirs() {
        let mut m = SeqClsModel::load(&fixtures().join(&dir)).unwrap();
        let vocab = m.vocab_size();
        let pad = m.pad_token_id();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
        let mut worst = 0f32;
        // Prefixes: shorter than the 3-key minimum, past the sliding window of 8 (Mistral,
        // Gemma 2), and long enough for several query blocks of 64.
        for prefix_len in [1, 2, 12, 150] {
            let prefix = random_ids(&mut rng, prefix_len, vocab, pad);
            for side in [PaddingSide::Right, PaddingSide::Left] {
                for n in [1, 3, 8] {
                    let mut suffixes: Vec<Vec<u32>> = suffix_lens(n)
                        .into_iter()
                        .map(|l| random_ids(&mut rng, l, vocab, pad))
                        .collect();
                    if let (Some(p), true) = (pad, n == 8) {
                        // Pad-token ids inside a suffix: pooling skips trailing ones (the pad
                        // == eos case); a suffix of pad tokens alone pools into the prefix.
                        suffixes[3][39] = p;
                        suffixes[3][20] = p;
                        suffixes[4] = vec![p, p];
                    }
                    let full: Vec<Vec<u32>> =
                        suffixes.iter().map(|s| [prefix.as_slice(), s].concat()).collect();
                    let want = m.score_batch_padded(&full, side).unwrap();
                    let cache = m.prefix_cache(&prefix).unwrap();
                    let got = m.score_suffixes(&cache, &suffixes, side).unwrap();
                    let d = max_abs(&got, &want);
                    // Each full sequence alone agrees too (the unshared path's own invariant).
                    let alone: Vec<Vec<f32>> = full
                        .iter()
                        .map(|s| m.score_batch(std::slice::from_ref(s)).unwrap().remove(0))
                        .collect();
                    let d_alone = max_abs(&got, &alone);
                    println!("{dir:<15} {prefix_len:>7} {side:>6?} {n:>5} {d:>12.3e} (vs alone {d_alone:.3e})");
                    assert!(d <= 1e-5 && d_alone <= 1e-5, "{dir}: prefix {prefix_len}, {side:?}, batch {n}: max |Δ| {d}, vs alone {d_alone}");
                    worst = worst.max(d);
                    if side == PaddingSide::Right {
                        let api = m.score_shared_prefix(&prefix, &suffixes).unwrap();
                        assert!(max_abs(&api, &want) <= 1e-5, "{dir}: score_shared_prefix");
                    }
                }
            }
            // Query blocks (one query per block, and one block for everything) change nothing.
            let suffixes: Vec<Vec<u32>> =
                suffix_lens(3).into_iter().map(|l| random_ids(&mut rng, l, vocab, pad)).collect();
            let cache = m.prefix_cache(&prefix).unwrap();
            let reference = m.score_suffixes(&cache, &suffixes, PaddingSide::Left).unwrap();
            for block in [1, 1 << 20] {
                m.set_query_block(block);
                let got = m.score_suffixes(&cache, &suffixes, PaddingSide::Left).unwrap();
                assert!(max_abs(&got, &reference) <= 1e-6, "{dir}: query block {block}");
            }
            m.set_query_block(64);
        }
        println!("{dir}: worst shared vs unshared {worst:.3e}");
    }
}

#[test]
fn bad_shared_inputs_are_errors() {
    let m = SeqClsModel::load(&fixtures().join("qwen2-f32")).unwrap();
    assert!(m.prefix_cache(&[]).unwrap_err().to_string().contains("prefix is empty"));
    assert!(m
        .prefix_cache(&[1, 100_000])
        .unwrap_err()
        .to_string()
        .contains("outside the vocabulary"));
    let cache = m.prefix_cache(&[5, 6, 7]).unwrap();
    let e =
        m.score_suffixes(&cache, &[vec![4], vec![]], PaddingSide::Right).unwrap_err().to_string();
    assert!(e.contains("suffix 1 is empty"), "{e}");
    let long: Vec<u32> = (0..510).map(|i| 3 + i % 400).collect();
    assert!(matches!(
        m.score_suffixes(&cache, &[long], PaddingSide::Right),
        Err(prbench_models::ModelError::ContextOverflow { .. })
    ));
    assert!(m.score_shared_prefix(&[5], &[]).unwrap().is_empty());
}

fn request(context: &str, question: &str, answer: &str) -> RmRequest {
    let user = format!("### About me\n{context}\n\n### My question\n{question}");
    let prompt = ChatPrompt {
        messages: vec![
            ChatMessage::new(Role::User, &user),
            ChatMessage::new(Role::Assistant, answer),
        ],
        assistant_prefix: String::new(),
    };
    RmRequest {
        input: RmInput {
            example_id: "shared".into(),
            question: user,
            context: Some(context.into()),
            answer: answer.into(),
        },
        prompt,
    }
}

#[test]
fn reward_model_groups_items_and_scores_as_unshared() {
    let context =
        "I keep bees on a rooftop in a windy city, I work nights, and I only have an hour on \
                   Sundays for the hives. My neighbours are nervous about stings.";
    let question = "How should I plan my hive inspections this spring?";
    let other =
        "Which sourdough starter feeds are best for a cold kitchen in winter? I bake twice a week.";
    let mut reqs = vec![
        request(context, question, "Inspect on Sunday mornings when the bees are calm."),
        request(context, question, "Skip inspections; bees manage themselves."),
        request(other, "What flour?", "Rye, fed at a 1:5:5 ratio."),
        request(context, question, "Move the hives away from the neighbours' windows first, then inspect every second Sunday."),
    ];
    reqs.push(request(other, "What flour?", "Whole wheat."));
    for dir in model_dirs() {
        let load = |shared_prefix: bool, max_batch: usize| {
            let opts = SeqClsOptions {
                label_index: Some(0),
                max_batch,
                shared_prefix,
                ..SeqClsOptions::default()
            };
            SeqClsRewardModel::load(&fixtures().join(&dir), &format!("dir:{dir}"), None, &opts)
                .unwrap()
        };
        let plain = load(false, 8);
        let want: Vec<f32> = plain.score(&reqs).unwrap().iter().map(|s| s.value).collect();
        assert_eq!(plain.shared_prefix_stats().groups, 0);
        for max_batch in [1, 2, 8] {
            let shared = load(true, max_batch);
            let got = shared.score(&reqs).unwrap();
            let d = got.iter().zip(&want).map(|(s, w)| (s.value - w).abs()).fold(0.0f32, f32::max);
            assert!(d <= 1e-5, "{dir} batch {max_batch}: shared vs unshared max |Δ| {d}");
            let stats = shared.shared_prefix_stats();
            // The three bee answers and the two bread answers each share their rendered prompt.
            assert_eq!((stats.groups, stats.items), (2, 5), "{dir}: {stats:?}");
            assert!(stats.tokens_reused >= 3 * 32, "{dir}: {stats:?}");
            assert_eq!(shared.settings()["shared_prefix"], true);
            if max_batch == 8 {
                println!("{dir}: shared vs unshared max |Δ| {d:.3e}; {stats:?}");
            }
        }
        assert_eq!(plain.settings()["shared_prefix"], false);
    }
}

#[test]
#[ignore = "timing, not a check: set PRBENCH_SHARED_BENCH_DIR and run with --ignored --nocapture"]
fn timing_two_answers_after_a_long_prefix() {
    let dir = std::env::var("PRBENCH_SHARED_BENCH_DIR")
        .expect("PRBENCH_SHARED_BENCH_DIR = a seqcls model directory");
    let m = SeqClsModel::load(Path::new(&dir)).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let vocab = m.vocab_size();
    let prefix = random_ids(&mut rng, 1500, vocab, m.pad_token_id());
    /// Scores one chunk of inputs.
    type BatchScorer<'a> = dyn Fn(&[Vec<u32>]) -> Vec<Vec<f32>> + 'a;
    for n in [2usize, 16] {
        let suffixes: Vec<Vec<u32>> =
            (0..n).map(|i| random_ids(&mut rng, 60 + 13 * i, vocab, m.pad_token_id())).collect();
        let full: Vec<Vec<u32>> =
            suffixes.iter().map(|s| [prefix.as_slice(), s].concat()).collect();
        let time = |f: &dyn Fn() -> Vec<Vec<f32>>| {
            f();
            let mut best = f64::MAX;
            let mut out = Vec::new();
            for _ in 0..3 {
                let t = Instant::now();
                out = f();
                best = best.min(t.elapsed().as_secs_f64());
            }
            (best, out)
        };
        let batches =
            |xs: &[Vec<u32>], f: &BatchScorer<'_>| xs.chunks(8).flat_map(f).collect::<Vec<_>>();
        let (unshared, a) = time(&|| batches(&full, &|c| m.score_batch(c).unwrap()));
        let (shared, b) = time(&|| {
            let cache = m.prefix_cache(&prefix).unwrap();
            batches(&suffixes, &|c| m.score_suffixes(&cache, c, PaddingSide::Right).unwrap())
        });
        println!(
            "{n} answers (60.. tokens) after a 1500-token prefix: unshared {:.1} ms, shared {:.1} ms, {:.2}x; max |Δ| {:.3e}",
            unshared * 1e3,
            shared * 1e3,
            unshared / shared,
            max_abs(&a, &b)
        );
    }
}
