//! Best-of-N sampling (PROTOCOL.md §6): a policy answers each question with the user's top-k
//! profile posts in its prompt, N samples per question, each seeded by (run seed, example id,
//! sample index), so a sample never depends on batching, threads or order.

use prbench_data::{Example, ProfilePost};
use prbench_eval::condition::{Condition, ConditionInputs};
use prbench_eval::{leakage, EvalError};
use prbench_models::{ChatRequest, Generator, ModelError, TokenStats};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::prompts::BonPrompts;

/// Sampling settings; the defaults are the paper's (PROTOCOL.md §6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleSettings {
    /// Samples per question (N). Default 16.
    pub n: usize,
    /// Profile posts in the policy's prompt (top-k by the ranking). Default 10.
    pub k_posts: usize,
    /// Sampling temperature. Default 1.0.
    pub temperature: f32,
    /// Nucleus mass. Default 0.9.
    pub top_p: f32,
    /// New-token budget per sample. Default 512.
    pub max_new_tokens: usize,
    /// Run seed; each sample's seed is [`sample_seed`] of it.
    pub seed: u64,
}

impl Default for SampleSettings {
    fn default() -> Self {
        Self { n: 16, k_posts: 10, temperature: 1.0, top_p: 0.9, max_new_tokens: 512, seed: 0 }
    }
}

/// The sampling seed of sample `index` of `example_id`: the first 8 bytes, little-endian, of
/// sha256(run seed as little-endian u64 ‖ example id ‖ 0xFF ‖ index as little-endian u64).
/// The 0xFF byte cannot occur in UTF-8, so `("a1", 0)` and `("a", 10)` never collide.
pub fn sample_seed(run_seed: u64, example_id: &str, index: usize) -> u64 {
    let mut h = Sha256::new();
    h.update(run_seed.to_le_bytes());
    h.update(example_id.as_bytes());
    h.update([0xFF]);
    h.update((index as u64).to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d[..8].try_into().expect("32-byte digest"))
}

/// One policy sample; one per line of `samples.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BonSample {
    /// The example (question) it answers.
    pub example_id: String,
    /// The example's subset.
    pub subset: String,
    /// 0-based sample index within the example (0..N).
    pub sample_index: usize,
    /// The sampling seed ([`sample_seed`]).
    pub seed: u64,
    /// The policy's answer (empty when `error` is set).
    pub text: String,
    /// Profile posts in the prompt (k, or fewer when the profile is shorter or posts were
    /// dropped to fit the policy's context).
    pub posts_shown: usize,
    /// Lowest-ranked posts dropped so the prompt plus `max_new_tokens` fits the context.
    pub posts_dropped: usize,
    /// Prompt and generated tokens.
    pub tokens: TokenStats,
    /// The answer used the whole token budget (it may be cut mid-sentence).
    pub hit_max_new_tokens: bool,
    /// The generator failed on this sample (after its retries); the example then lacks a
    /// sample and is left out of best-of-k tables (counted).
    pub error: Option<String>,
}

/// The policy request for every sample of `example`, and the posts shown / dropped. The
/// prompt is the same for all N samples (only the seed differs); it shows the top
/// `settings.k_posts` ranked posts, dropping the lowest-ranked ones while the generator says
/// the prompt plus `max_new_tokens` does not fit (a generator that cannot tell gets all k).
///
/// # Errors
/// [`EvalError::Condition`] when `inputs` lacks the example's ranking; template and leakage
/// errors (the rubric and narrative must never reach the policy).
pub fn requests_for(
    example: &Example,
    inputs: &ConditionInputs,
    settings: &SampleSettings,
    generator: &dyn Generator,
    prompts: &BonPrompts,
) -> Result<(Vec<ChatRequest>, usize, usize), EvalError> {
    let ranked: &[ProfilePost] = inputs.ranked_posts(example)?;
    let available = ranked.len().min(settings.k_posts);
    let mut n = available;
    let prompt = loop {
        let shown: Vec<&ProfilePost> = ranked[..n].iter().collect();
        let prompt = prompts.policy(&example.question, &shown)?;
        let over =
            generator.prompt_overflow(&prompt, settings.max_new_tokens).ok().flatten().unwrap_or(0);
        if over == 0 || n == 0 {
            break prompt;
        }
        n -= 1;
    };
    leakage::check(example, Condition::Profile { k: settings.k_posts }, &prompt.all_text())?;
    let requests = (0..settings.n)
        .map(|i| ChatRequest {
            prompt: prompt.clone(),
            max_new_tokens: settings.max_new_tokens,
            temperature: settings.temperature,
            top_p: settings.top_p,
            seed: sample_seed(settings.seed, &example.id, i),
        })
        .collect();
    Ok((requests, n, available - n))
}

/// Samples N answers for each example, `batch` requests per generator call, calling
/// `progress(samples done)` after each call. Requests for all examples are built (and checked
/// by the leakage guard) before the first call. A sample the generator fails on is returned
/// with `error` set; the others are unaffected.
///
/// # Errors
/// As [`requests_for`]; [`EvalError::BackendShape`] when the generator returns the wrong
/// number of results.
pub fn sample_all(
    examples: &[&Example],
    inputs: &ConditionInputs,
    settings: &SampleSettings,
    generator: &dyn Generator,
    batch: usize,
    progress: &dyn Fn(usize),
) -> Result<Vec<BonSample>, EvalError> {
    let prompts = BonPrompts::new();
    let mut planned = Vec::with_capacity(examples.len() * settings.n);
    for ex in examples {
        let (requests, shown, dropped) = requests_for(ex, inputs, settings, generator, &prompts)?;
        for (i, r) in requests.into_iter().enumerate() {
            planned.push((*ex, i, r, shown, dropped));
        }
    }
    let model = generator.identity().spec;
    let mut out = Vec::with_capacity(planned.len());
    for chunk in planned.chunks(batch.max(1)) {
        let reqs: Vec<ChatRequest> = chunk.iter().map(|p| p.2.clone()).collect();
        let results = generator.generate_each(&reqs, &|_, _| {});
        if results.len() != chunk.len() {
            return Err(EvalError::BackendShape {
                model,
                got: results.len(),
                expected: chunk.len(),
            });
        }
        for ((ex, i, req, shown, dropped), result) in chunk.iter().zip(results) {
            out.push(to_sample(ex, *i, req, *shown, *dropped, result, &model));
        }
        progress(out.len());
    }
    Ok(out)
}

fn to_sample(
    ex: &Example,
    index: usize,
    req: &ChatRequest,
    shown: usize,
    dropped: usize,
    result: Result<prbench_models::ChatResponse, ModelError>,
    model: &str,
) -> BonSample {
    let base = BonSample {
        example_id: ex.id.clone(),
        subset: ex.subset.clone(),
        sample_index: index,
        seed: req.seed,
        text: String::new(),
        posts_shown: shown,
        posts_dropped: dropped,
        tokens: TokenStats::default(),
        hit_max_new_tokens: false,
        error: None,
    };
    match result {
        Ok(reply) => BonSample {
            hit_max_new_tokens: reply.tokens.output_tokens >= req.max_new_tokens,
            text: reply.text,
            tokens: reply.tokens,
            ..base
        },
        Err(source) => BonSample {
            error: Some(prbench_models::error::chain(&EvalError::Backend {
                model: model.into(),
                example_id: ex.id.clone(),
                source,
            })),
            ..base
        },
    }
}

/// Picks the examples to sample: in dataset order, at most `per_subset` from each subset
/// (all when `None`), and with `distinct_questions` only the first example of each question
/// text (after trimming) across the whole selection: P-Soups asks one question of several
/// users, and Best-of-N wants each prompt sampled once. The repeated-question check is the
/// filter of [`prbench_data::select::first_per_subset_where`], so a repeated question uses no
/// room in its subset, and an example left out because its subset is full marks no question as
/// taken.
pub fn select(
    examples: &[Example],
    per_subset: Option<usize>,
    distinct_questions: bool,
) -> Vec<&Example> {
    let mut questions = std::collections::HashSet::new();
    prbench_data::select::first_per_subset_where(examples, per_subset, |ex| {
        !distinct_questions || questions.insert(ex.question.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: Python `int.from_bytes(hashlib.sha256((7).to_bytes(8,'little') + b'ex-1' +
    /// b'\xff' + (3).to_bytes(8,'little')).digest()[:8], 'little')`.
    #[test]
    fn sample_seed_matches_the_documented_hash() {
        assert_eq!(sample_seed(7, "ex-1", 3), 2_853_694_668_449_823_933);
        assert_ne!(sample_seed(7, "a1", 0), sample_seed(7, "a", 10));
        assert_ne!(sample_seed(7, "ex-1", 3), sample_seed(8, "ex-1", 3));
    }

    fn ex(id: &str, subset: &str, q: &str) -> Example {
        prbench_data::ExampleBuilder::new(id)
            .subset(subset)
            .question(q)
            .narrative("n")
            .category("c")
            .chosen("a")
            .rejected("b")
            .build()
    }

    #[test]
    fn select_caps_per_subset_and_skips_repeated_questions() {
        let all = vec![
            ex("1", "x", "Q1"),
            ex("2", "x", "Q1 "),
            ex("3", "x", "Q2"),
            ex("4", "x", "Q3"),
            ex("5", "y", "Q2"),
            ex("6", "y", "Q4"),
        ];
        let ids = |v: Vec<&Example>| v.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(select(&all, Some(2), true)), ["1", "3", "6"]);
        assert_eq!(ids(select(&all, Some(2), false)), ["1", "2", "5", "6"]);
        assert_eq!(ids(select(&all, None, true)), ["1", "3", "4", "6"]);
    }
}
