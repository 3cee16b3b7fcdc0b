//! Planner quality against the hidden rubric: evaluation-side only, after the planner ran (the
//! rubric never reaches the planner).
//!
//! Score of one example = mean over its true aspect titles of the best cosine similarity to any
//! planned aspect, in [-1, 1] (1 = every true aspect has an identical planned one). Cosine is
//! always computed from the vectors, whatever [`Embedder::similarity`] says: a raw dot product
//! would reward long planned aspects.

use std::collections::HashMap;

use prbench_data::Example;
use prbench_models::{Embedder, Embedding, ModelError};
use serde::{Deserialize, Serialize};

use super::Plan;
use crate::error::EvalError;

/// Cosine similarity of two vectors (same length), accumulated in f64; 0 when either is zero.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// Mean over `truth` of the max over `planned` of the cosine; both non-empty.
fn coverage(truth: &[&[f32]], planned: &[&[f32]]) -> f64 {
    let sum: f64 = truth
        .iter()
        .map(|t| planned.iter().map(|p| cosine(t, p)).fold(f64::NEG_INFINITY, f64::max))
        .sum();
    sum / truth.len() as f64
}

/// Embeds `texts` in one call and checks the reply: one vector per text, all of one dimension.
fn embed_checked(
    embedder: &dyn Embedder,
    texts: &[&str],
    example_id: &str,
) -> Result<Vec<Embedding>, EvalError> {
    let model = embedder.identity().spec;
    let backend = |source: ModelError| EvalError::Backend {
        model: model.clone(),
        example_id: example_id.into(),
        source,
    };
    let out = embedder.embed(texts).map_err(backend)?;
    if out.len() != texts.len() {
        return Err(EvalError::BackendShape {
            model: model.clone(),
            got: out.len(),
            expected: texts.len(),
        });
    }
    if let Some(first) = out.first() {
        let dim = first.vector.len();
        if let Some(bad) = out.iter().find(|e| e.vector.len() != dim) {
            return Err(backend(ModelError::Engine(format!(
                "embeddings of different dimension ({} and {})",
                dim,
                bad.vector.len()
            ))));
        }
    }
    Ok(out)
}

fn empty_input(what: &str) -> EvalError {
    EvalError::Condition {
        given: "planner".into(),
        reason: format!("plan quality needs at least one {what}"),
    }
}

/// Planner quality of one example: the mean over `true_aspects` of the maximum over `planned`
/// of the cosine similarity of their embeddings, in [-1, 1]. All texts are embedded in one
/// call.
///
/// # Errors
/// [`EvalError::Condition`] (given `planner`) when either list is empty (the score is
/// undefined; [`plan_quality_all`] counts such examples instead); [`EvalError::Backend`] when
/// the embedder fails or returns vectors of different dimensions;
/// [`EvalError::BackendShape`] when it returns the wrong number of vectors.
pub fn plan_quality(
    true_aspects: &[String],
    planned: &[String],
    embedder: &dyn Embedder,
) -> Result<f64, EvalError> {
    if true_aspects.is_empty() {
        return Err(empty_input("true aspect"));
    }
    if planned.is_empty() {
        return Err(empty_input("planned aspect"));
    }
    let texts: Vec<&str> = true_aspects.iter().chain(planned).map(String::as_str).collect();
    let emb = embed_checked(embedder, &texts, "")?;
    let vecs: Vec<&[f32]> = emb.iter().map(|e| e.vector.as_slice()).collect();
    Ok(coverage(&vecs[..true_aspects.len()], &vecs[true_aspects.len()..]))
}

/// Planner quality of one example, as aggregated by [`plan_quality_all`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExampleQuality {
    /// Example id.
    pub example_id: String,
    /// True aspect titles compared (non-blank rubric aspect titles).
    pub n_true: usize,
    /// Planned aspects compared (0 when the example has no usable plan).
    pub n_planned: usize,
    /// The example's score in [-1, 1]; `None` when it has no usable plan or no rubric.
    pub score: Option<f64>,
}

/// Planner quality over many examples ([`plan_quality_all`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanQuality {
    /// Mean score over the examples with a usable plan (`n_with_plan`), in [-1, 1]; `None` when
    /// there are none.
    pub mean: Option<f64>,
    /// Mean score over all `n_examples`, an example without a usable plan counting as 0;
    /// `None` when `n_examples` is 0.
    pub mean_missing_as_zero: Option<f64>,
    /// Examples with at least one true aspect: `n_with_plan + n_without_plan`.
    pub n_examples: usize,
    /// Of those, examples whose plan has at least one aspect and no generator error.
    pub n_with_plan: usize,
    /// Of those, examples whose plan failed (generator error, parse error, no aspects) or that
    /// have no [`Plan`] at all; excluded from `mean`, counted as 0 in `mean_missing_as_zero`.
    pub n_without_plan: usize,
    /// Examples with no non-blank rubric aspect title: excluded from everything above.
    pub n_without_rubric: usize,
    /// Distinct embedded texts the embedder truncated (it cut tokens from their end).
    pub truncated_texts: usize,
    /// Tokens cut from those texts, summed.
    pub truncated_tokens: usize,
    /// The embedder's spec.
    pub embedder: String,
    /// One row per example, in the order of the `examples` given.
    pub per_example: Vec<ExampleQuality>,
}

/// Planner quality over `examples`, each matched to its [`Plan`] by example id (plans may come
/// in any order; plans of other ids are ignored; with several plans for one id the first
/// counts). True aspects are the non-blank rubric aspect titles (trimmed: the text the oracle
/// condition shows). An example has a usable plan when its plan exists, has no generator
/// `error` and at least one aspect; a parse error leaves no aspects, so it counts as without
/// plan. Every distinct text of the usable plans and their rubrics is embedded in one call
/// (none when no example has a usable plan).
///
/// # Errors
/// [`EvalError::Backend`] when the embedder fails (named with the first example's id) or
/// returns vectors of different dimensions; [`EvalError::BackendShape`] for a wrong count.
pub fn plan_quality_all(
    examples: &[&Example],
    plans: &[Plan],
    embedder: &dyn Embedder,
) -> Result<PlanQuality, EvalError> {
    let mut by_id: HashMap<&str, &Plan> = HashMap::with_capacity(plans.len());
    for p in plans {
        by_id.entry(p.example_id.as_str()).or_insert(p);
    }
    // Per example: true aspects, and the planned aspects when the plan is usable.
    struct Row<'e> {
        id: &'e str,
        truth: Vec<&'e str>,
        planned: Option<Vec<&'e str>>,
    }
    let rows: Vec<Row<'_>> = examples
        .iter()
        .map(|ex| {
            let truth: Vec<&str> = ex
                .rubric_aspects
                .iter()
                .map(|a| a.aspect.trim())
                .filter(|a| !a.is_empty())
                .collect();
            let planned = by_id
                .get(ex.id.as_str())
                .filter(|p| p.error.is_none() && !p.aspects.is_empty())
                .map(|p| p.aspects.iter().map(String::as_str).collect::<Vec<_>>());
            Row { id: ex.id.as_str(), truth, planned }
        })
        .collect();

    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut texts: Vec<&str> = Vec::new();
    for row in rows.iter().filter(|r| !r.truth.is_empty()) {
        if let Some(planned) = &row.planned {
            for &t in row.truth.iter().chain(planned) {
                index.entry(t).or_insert_with(|| {
                    texts.push(t);
                    texts.len() - 1
                });
            }
        }
    }
    let emb = if texts.is_empty() {
        Vec::new()
    } else {
        embed_checked(embedder, &texts, examples[0].id.as_str())?
    };

    let mut per_example = Vec::with_capacity(rows.len());
    let (mut n_with, mut n_without, mut n_no_rubric) = (0usize, 0usize, 0usize);
    let mut sum = 0.0f64;
    for row in &rows {
        let score = match (&row.planned, row.truth.is_empty()) {
            (_, true) => {
                n_no_rubric += 1;
                None
            }
            (None, false) => {
                n_without += 1;
                None
            }
            (Some(planned), false) => {
                let vec = |t: &str| emb[index[t]].vector.as_slice();
                let truth: Vec<&[f32]> = row.truth.iter().map(|t| vec(t)).collect();
                let plan: Vec<&[f32]> = planned.iter().map(|t| vec(t)).collect();
                let s = coverage(&truth, &plan);
                n_with += 1;
                sum += s;
                Some(s)
            }
        };
        per_example.push(ExampleQuality {
            example_id: row.id.to_string(),
            n_true: row.truth.len(),
            n_planned: row.planned.as_ref().map_or(0, Vec::len),
            score,
        });
    }
    let n_examples = n_with + n_without;
    Ok(PlanQuality {
        mean: (n_with > 0).then(|| sum / n_with as f64),
        mean_missing_as_zero: (n_examples > 0).then(|| sum / n_examples as f64),
        n_examples,
        n_with_plan: n_with,
        n_without_plan: n_without,
        n_without_rubric: n_no_rubric,
        truncated_texts: emb.iter().filter(|e| e.truncated_tokens > 0).count(),
        truncated_tokens: emb.iter().map(|e| e.truncated_tokens).sum(),
        embedder: embedder.identity().spec,
        per_example,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use prbench_data::{Example, ExampleBuilder, RubricAspect};
    use prbench_models::{ModelIdentity, Similarity};

    use super::*;

    /// Fixed vectors per text; reports `Dot` so a test shows cosine is used anyway; records the
    /// size of every call.
    struct Fixed {
        table: Vec<(&'static str, Vec<f32>)>,
        calls: Mutex<Vec<usize>>,
    }

    impl Fixed {
        fn new(table: Vec<(&'static str, Vec<f32>)>) -> Self {
            Self { table, calls: Mutex::new(Vec::new()) }
        }
    }

    impl Embedder for Fixed {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, ModelError> {
            self.calls.lock().unwrap().push(texts.len());
            texts
                .iter()
                .map(|t| {
                    let v = self
                        .table
                        .iter()
                        .find(|(k, _)| k == t)
                        .ok_or_else(|| ModelError::Engine(format!("unknown text {t}")))?;
                    Ok(Embedding {
                        vector: v.1.clone(),
                        truncated_tokens: if *t == "P3" { 7 } else { 0 },
                    })
                })
                .collect()
        }
        fn similarity(&self) -> Similarity {
            Similarity::Dot
        }
        fn identity(&self) -> ModelIdentity {
            ModelIdentity { spec: "fixed".into(), ..Default::default() }
        }
    }

    // T1 = (1,0,0), T2 = (0,1,0), P1 = (1,1,0), P2 = (4,3,0) (norm 5), P0 = (0,0,0).
    // D2 = (1,0) has another dimension (an embedder bug).
    // cos(T1,P1) = 1/√2 = 0.70710678, cos(T1,P2) = 4/5 = 0.8  → best 0.8
    // cos(T2,P1) = 1/√2 = 0.70710678, cos(T2,P2) = 3/5 = 0.6  → best 0.70710678
    // score = (0.8 + 0.70710678) / 2 = 0.75355339. (A dot product would give T1·P2 = 4.)
    // 3-dim: T3 = (1,2,2) (norm 3), P3 = (2,1,2) (norm 3): cos = (2+2+4)/9 = 8/9 = 0.88888889.
    fn embedder() -> Fixed {
        Fixed::new(vec![
            ("T1", vec![1.0, 0.0, 0.0]),
            ("T2", vec![0.0, 1.0, 0.0]),
            ("P1", vec![1.0, 1.0, 0.0]),
            ("P2", vec![4.0, 3.0, 0.0]),
            ("P0", vec![0.0, 0.0, 0.0]),
            ("T3", vec![1.0, 2.0, 2.0]),
            ("P3", vec![2.0, 1.0, 2.0]),
            ("D2", vec![1.0, 0.0]),
        ])
    }

    fn s(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn one_example_is_the_mean_best_cosine() {
        let e = embedder();
        let q = plan_quality(&s(&["T1", "T2"]), &s(&["P1", "P2"]), &e).unwrap();
        assert!((q - 0.753_553_39).abs() < 1e-7, "{q}");
        assert_eq!(*e.calls.lock().unwrap(), vec![4], "one batched call");
        let q3 = plan_quality(&s(&["T3"]), &s(&["P3"]), &e).unwrap();
        assert!((q3 - 8.0 / 9.0).abs() < 1e-7, "{q3}");
        // A zero vector has cosine 0 with everything: T2's best is then P1.
        let qz = plan_quality(&s(&["T2"]), &s(&["P0", "P1"]), &e).unwrap();
        assert!((qz - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-7, "{qz}");
        let q0 = plan_quality(&s(&["T2"]), &s(&["P0"]), &e).unwrap();
        assert_eq!(q0, 0.0);
    }

    #[test]
    fn empty_lists_and_embedder_failures_are_errors() {
        let e = embedder();
        assert!(matches!(plan_quality(&[], &s(&["P1"]), &e), Err(EvalError::Condition { .. })));
        assert!(matches!(plan_quality(&s(&["T1"]), &[], &e), Err(EvalError::Condition { .. })));
        assert!(matches!(
            plan_quality(&s(&["T1"]), &s(&["unknown"]), &e),
            Err(EvalError::Backend { .. })
        ));
        // The message a user reads: the error and its causes (the binary prints each once).
        let err =
            prbench_models::error::chain(&plan_quality(&s(&["T1"]), &s(&["D2"]), &e).unwrap_err());
        assert!(err.contains("different dimension"), "{err}");
    }

    fn example(id: &str, aspects: &[&str]) -> Example {
        ExampleBuilder::new(id)
            .subset("Art_and_Entertainment")
            .question("q")
            .aspects(aspects.iter().map(|a| RubricAspect::new(*a, "", "")))
            .build()
    }

    fn plan(id: &str, aspects: &[&str], error: Option<&str>) -> Plan {
        Plan {
            example_id: id.into(),
            aspects: s(aspects),
            raw: String::new(),
            parse_error: None,
            error: error.map(String::from),
            posts_shown: 0,
            tokens: Default::default(),
            hit_max_new_tokens: false,
            unmarked: false,
        }
    }

    #[test]
    fn aggregate_counts_missing_plans_and_rubrics() {
        let e = embedder();
        let exs = [
            example("a", &["T1", "T2"]),
            example("b", &["T1"]),   // generator failed
            example("c", &["  "]),   // no rubric: excluded
            example("d", &[" T3 "]), // trimmed to T3
            example("e", &["T2"]),   // parse error: no aspects
            example("f", &["T1"]),   // no Plan at all
        ];
        let refs: Vec<&Example> = exs.iter().collect();
        let mut parse_failed = plan("e", &[], None);
        parse_failed.parse_error = Some("empty reply".into());
        let plans = vec![
            plan("d", &["P3"], None),
            plan("a", &["P1", "P2"], None),
            plan("b", &["P1"], Some("backend failed")),
            plan("c", &["P1"], None),
            parse_failed,
            plan("zz", &["P1"], None),
            plan("a", &["P0"], None), // a second plan for `a` is ignored
        ];
        let q = plan_quality_all(&refs, &plans, &e).unwrap();
        // Usable: a = 0.75355339, d = 8/9 = 0.88888889.
        // mean = (0.75355339 + 0.88888889) / 2 = 0.82122114
        // with b, e, f as 0: (0.75355339 + 0.88888889) / 5 = 0.32848846
        assert!((q.mean.unwrap() - 0.821_221_14).abs() < 1e-7, "{:?}", q.mean);
        assert!(
            (q.mean_missing_as_zero.unwrap() - 0.328_488_46).abs() < 1e-7,
            "{:?}",
            q.mean_missing_as_zero
        );
        assert_eq!(
            (q.n_examples, q.n_with_plan, q.n_without_plan, q.n_without_rubric),
            (5, 2, 3, 1)
        );
        // Distinct texts T1, T2, P1, P2, T3, P3 in one call; P3 was truncated by 7 tokens.
        assert_eq!(*e.calls.lock().unwrap(), vec![6]);
        assert_eq!((q.truncated_texts, q.truncated_tokens), (1, 7));
        let ids: Vec<&str> = q.per_example.iter().map(|r| r.example_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c", "d", "e", "f"]);
        let scored: Vec<bool> = q.per_example.iter().map(|r| r.score.is_some()).collect();
        assert_eq!(scored, [true, false, false, true, false, false]);
        assert_eq!((q.per_example[0].n_true, q.per_example[0].n_planned), (2, 2));
        assert_eq!((q.per_example[2].n_true, q.per_example[1].n_planned), (0, 0));
        assert_eq!(q.embedder, "fixed");
    }

    #[test]
    fn aggregate_without_any_plan_embeds_nothing() {
        let e = embedder();
        let exs = [example("a", &["T1"])];
        let q =
            plan_quality_all(&exs.iter().collect::<Vec<_>>(), &[plan("a", &[], Some("down"))], &e)
                .unwrap();
        assert_eq!((q.mean, q.mean_missing_as_zero, q.n_without_plan), (None, Some(0.0), 1));
        assert!(e.calls.lock().unwrap().is_empty());
        let none = plan_quality_all(&[], &[], &e).unwrap();
        assert_eq!((none.mean, none.mean_missing_as_zero, none.n_examples), (None, None, 0));
    }
}
