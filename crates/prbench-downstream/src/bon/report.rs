//! Best-of-N tables (PROTOCOL.md §6): for k in {1, 2, 4, …, N}, the exact expected rubric
//! score of the best-of-k choice of each reward model, averaged over all k-subsets of the N
//! samples (ties in the reward broken uniformly: [`prbench_stats::best_of_k`]), per subset and
//! overall. Two reference rows bracket the reward models: `random pick` (k = 1, the mean
//! rubric score of a sample) and `oracle` (the best-of-k choice made by the rubric score itself,
//! the ceiling any reward model can reach).
//!
//! An example enters a row only when all N samples have a rubric score and, for a reward
//! model, a reward; the rest are counted per reason, never scored as 0.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use prbench_stats::accuracy::Ratio;
use prbench_stats::best_of_k::{default_ks, expected_best_of_k};
use prbench_stats::bootstrap::{bootstrap_ci, BootstrapConfig, Stat};

use super::error::BonError;
use super::rubric::RubricJudgement;
use super::sample::BonSample;
use super::score::BonScore;

pub use prbench_records::bon::{BonPoint, BonRow, BonTable, Exclusions};

struct Example<'a> {
    id: &'a str,
    subset: &'a str,
    judge: Option<Vec<f64>>,
}

/// One reward model's scores for [`build`].
#[derive(Debug, Clone)]
pub struct ModelScores {
    /// Name (its scores file's stem).
    pub name: String,
    /// Its spec.
    pub spec: String,
    /// The condition it scored under.
    pub condition: String,
    /// One record per sample.
    pub scores: Vec<BonScore>,
}

/// Builds the table from the samples, one judge's judgements and each reward model's scores,
/// for k in `ks` (default: 1, 2, 4, … up to N, and N).
///
/// # Errors
/// [`BonError::Mismatch`] when an example does not have exactly samples 0..N, a sample has no
/// judgement or no score record (files from different sample sets), or a k is above N;
/// [`BonError::BestOfK`] on non-finite values.
pub fn build(
    samples: &[BonSample],
    n: usize,
    judge: &str,
    judgements: &[RubricJudgement],
    models: &[ModelScores],
    ks: Option<&[usize]>,
) -> Result<BonTable, BonError> {
    let ks: Vec<usize> = ks.map(<[usize]>::to_vec).unwrap_or_else(|| default_ks(n));
    if ks.windows(2).any(|w| w[0] >= w[1]) {
        return Err(BonError::Mismatch {
            what: format!("k values {ks:?}"),
            reason: "give each k once, in increasing order".into(),
        });
    }
    if let Some(&k) = ks.iter().find(|&&k| k == 0 || k > n) {
        return Err(BonError::Mismatch {
            what: format!("k = {k}"),
            reason: format!(
                "k must be between 1 and N = {n} (best-of-k above N would only repeat best-of-N)"
            ),
        });
    }
    let mut order: Vec<&str> = Vec::new();
    let mut by_example: HashMap<&str, Vec<&BonSample>> = HashMap::new();
    for s in samples {
        let e = by_example.entry(s.example_id.as_str()).or_default();
        if e.is_empty() {
            order.push(s.example_id.as_str());
        }
        e.push(s);
    }
    let judged = index_records(
        judgements.iter().map(|j| (j.example_id.as_str(), j.sample_index)),
        &by_example,
        &format!("judgements `{judge}`"),
    )?;
    let judged: HashMap<(&str, usize), &RubricJudgement> =
        judged.into_iter().map(|(k, i)| (k, &judgements[i])).collect();
    for (i, j) in judgements.iter().enumerate() {
        j.check().map_err(|why| BonError::Mismatch {
            what: format!(
                "judgements `{judge}` record {} (example `{}`, sample {})",
                i + 1,
                j.example_id,
                j.sample_index
            ),
            reason: why,
        })?;
    }
    let mut excluded = Exclusions::default();
    let mut examples = Vec::with_capacity(order.len());
    let mut subsets: Vec<String> = Vec::new();
    for id in &order {
        let mut ss = by_example[id].clone();
        ss.sort_by_key(|s| s.sample_index);
        if ss.len() != n || ss.iter().enumerate().any(|(i, s)| s.sample_index != i) {
            return Err(BonError::Mismatch {
                what: format!("example `{id}`"),
                reason: format!("it has samples {:?}, expected exactly 0..{n}; the samples file is incomplete or duplicated", ss.iter().map(|s| s.sample_index).collect::<Vec<_>>()),
            });
        }
        if !subsets.iter().any(|s| s == &ss[0].subset) {
            subsets.push(ss[0].subset.clone());
        }
        let mut scores = Vec::with_capacity(n);
        let mut reason = None;
        for s in &ss {
            let j = judged.get(&(*id, s.sample_index)).ok_or_else(|| BonError::Mismatch {
                what: format!("sample {} of example `{id}`", s.sample_index),
                reason: format!("judge `{judge}` has no judgement for it; run `prbench bon judge` on this samples folder"),
            })?;
            match (s.error.is_some(), j.mean(), &j.unparsed) {
                (true, _, _) => reason = reason.or(Some(0)),
                (false, Some(m), _) => scores.push(m),
                (false, None, Some(_)) => reason = reason.or(Some(1)),
                (false, None, None) => reason = reason.or(Some(2)),
            }
        }
        match reason {
            Some(0) => excluded.sample_failed += 1,
            Some(1) => excluded.judge_unparsed += 1,
            Some(_) => excluded.judge_failed += 1,
            None => {}
        }
        examples.push(Example {
            id,
            subset: ss[0].subset.as_str(),
            judge: reason.is_none().then_some(scores),
        });
    }
    let judged_examples = examples.iter().filter(|e| e.judge.is_some()).count();
    let usable: Vec<(&Example, Vec<f64>)> =
        examples.iter().filter_map(|e| e.judge.clone().map(|j| (e, j))).collect();
    // Each reward model's N rewards per judged example (None: some sample has no reward).
    let mut rewards: Vec<Vec<Option<Vec<f64>>>> = Vec::with_capacity(models.len());
    for ModelScores { name, scores, .. } in models {
        let keys = index_records(
            scores.iter().map(|s| (s.example_id.as_str(), s.sample_index)),
            &by_example,
            &format!("scores `{name}`"),
        )?;
        let by_key: HashMap<(&str, usize), &BonScore> =
            keys.into_iter().map(|(k, i)| (k, &scores[i])).collect();
        for (i, s) in scores.iter().enumerate() {
            let valid = match (s.score, &s.error) {
                (Some(v), None) => v.is_finite(),
                (None, Some(_)) => true,
                _ => false,
            };
            if !valid {
                return Err(BonError::Mismatch {
                    what: format!("scores `{name}` record {} (example `{}`, sample {})", i + 1, s.example_id, s.sample_index),
                    reason: "a score record holds either a finite `score` or an `error`, not both or neither".into(),
                });
            }
        }
        let mut per_example = Vec::with_capacity(usable.len());
        for (e, _) in &usable {
            let mut rm = Vec::with_capacity(n);
            for i in 0..n {
                let s = by_key.get(&(e.id, i)).ok_or_else(|| BonError::Mismatch {
                    what: format!("sample {i} of example `{}`", e.id),
                    reason: format!("reward model `{name}` has no score record for it; run `prbench bon score` on this samples folder"),
                })?;
                if let Some(v) = s.score {
                    rm.push(v);
                }
            }
            per_example.push((rm.len() == n).then_some(rm));
        }
        rewards.push(per_example);
    }
    // Every row is computed on the examples every reward model scored in full, so rows compare
    // like with like (and the references are on the same examples as the models).
    let keep: Vec<bool> =
        (0..usable.len()).map(|x| rewards.iter().all(|m| m[x].is_some())).collect();
    excluded.no_reward = keep.iter().filter(|k| !**k).count();
    let common: Vec<(&Example, Vec<f64>)> =
        usable.iter().zip(&keep).filter(|(_, k)| **k).map(|(u, _)| u.clone()).collect();
    let mut rows = Vec::with_capacity(models.len() + 2);
    // A random pick gives the mean rubric score whatever k (best-of-1); its k = 1 point is
    // copied to every k so the row is exactly flat, free of rounding in the closed form.
    let mut random = row("random pick", "reference", &common, &common, &[1], &subsets, 0)?;
    random.curve = ks.iter().map(|&k| BonPoint { k, ..random.curve[0].clone() }).collect();
    rows.push(random);
    rows.push(row("oracle (rubric score picks)", "reference", &common, &common, &ks, &subsets, 0)?);
    for (ModelScores { name, spec, condition, .. }, per_example) in models.iter().zip(&rewards) {
        // In `common`'s order, which `row` zips with the rubric scores.
        let rm_rows: Vec<(&Example, Vec<f64>)> = usable
            .iter()
            .zip(per_example)
            .zip(&keep)
            .filter(|(_, k)| **k)
            .filter_map(|(((e, _), r), _)| r.clone().map(|r| (*e, r)))
            .collect();
        let missing = per_example.iter().filter(|r| r.is_none()).count();
        let mut r = row(name, "reward model", &rm_rows, &common, &ks, &subsets, missing)?;
        r.spec = Some(spec.clone());
        r.condition = Some(condition.clone());
        rows.push(r);
    }
    Ok(BonTable {
        n,
        ks,
        judge: judge.into(),
        subsets,
        examples: examples.len(),
        judged_examples,
        excluded,
        unparsed_judgements: judgements.iter().filter(|j| j.unparsed.is_some()).count(),
        failed_judgements: judgements.iter().filter(|j| j.error.is_some()).count(),
        rows,
    })
}

/// Maps each record's (example, sample) to its position, refusing a duplicate or a record for a
/// sample the samples file does not have.
fn index_records<'a>(
    keys: impl Iterator<Item = (&'a str, usize)>,
    samples: &HashMap<&str, Vec<&BonSample>>,
    what: &str,
) -> Result<HashMap<(&'a str, usize), usize>, BonError> {
    let mut out: HashMap<(&str, usize), usize> = HashMap::new();
    for (i, (id, index)) in keys.enumerate() {
        if !samples.get(id).is_some_and(|ss| ss.iter().any(|s| s.sample_index == index)) {
            return Err(BonError::Mismatch {
                what: format!("{what} record {}", i + 1),
                reason: format!("example `{id}` sample {index} is not in samples.jsonl; the file belongs to other samples or was edited"),
            });
        }
        if let Some(first) = out.insert((id, index), i) {
            return Err(BonError::Mismatch {
                what: format!("{what} records {} and {}", first + 1, i + 1),
                reason: format!("both are for example `{id}` sample {index}; keep one"),
            });
        }
    }
    Ok(out)
}

/// A row: for each k, the per-example expected best-of-k rubric score, averaged.
fn row(
    name: &str,
    kind: &str,
    rm: &[(&Example, Vec<f64>)],
    judge: &[(&Example, Vec<f64>)],
    ks: &[usize],
    subsets: &[String],
    excluded: usize,
) -> Result<BonRow, BonError> {
    let mut curve = Vec::with_capacity(ks.len());
    for &k in ks {
        let mut per: BTreeMap<String, (f64, usize)> = BTreeMap::new();
        let (mut total, mut count) = (0.0, 0usize);
        let (mut values, mut strata) = (Vec::with_capacity(rm.len()), Vec::with_capacity(rm.len()));
        for ((e, r), (_, j)) in rm.iter().zip(judge) {
            let v = expected_best_of_k(r, j, k)?;
            values.push(Ratio { num: v, den: 1.0 });
            strata.push(subsets.iter().position(|s| s == e.subset).unwrap_or(subsets.len()));
            let slot = per.entry(e.subset.to_string()).or_insert((0.0, 0));
            slot.0 += v;
            slot.1 += 1;
            total += v;
            count += 1;
        }
        let per_subset: BTreeMap<String, f64> = subsets
            .iter()
            .filter_map(|s| per.get(s).map(|(t, c)| (s.clone(), t / *c as f64)))
            .collect();
        let overall = if count == 0 { f64::NAN } else { total / count as f64 };
        let macro_mean = if per_subset.is_empty() {
            f64::NAN
        } else {
            per_subset.values().sum::<f64>() / per_subset.len() as f64
        };
        let overall_ci = bootstrap_ci(&values, &strata, &BootstrapConfig::default(), Stat::Micro)
            .map(|i| [i.lo, i.hi]);
        curve.push(BonPoint {
            k,
            per_subset,
            overall,
            overall_normalized: overall / 2.0,
            macro_mean,
            overall_ci,
        });
    }
    let mut subset_examples: BTreeMap<String, usize> =
        subsets.iter().map(|s| (s.clone(), 0)).collect();
    for (e, _) in rm {
        *subset_examples.entry(e.subset.to_string()).or_default() += 1;
    }
    Ok(BonRow {
        name: name.into(),
        kind: kind.into(),
        spec: None,
        condition: None,
        examples: rm.len(),
        subset_examples,
        excluded_for_score_errors: excluded,
        curve,
    })
}

/// The table as markdown: overall (micro) first, then one table per subset; rubric scores on
/// 0–2 with three decimals.
pub fn render(t: &BonTable) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Best-of-N, N = {}, rubric judge `{}`: expected rubric score (0 = absent … 2 = well, mean over aspects) of the sample the reward model ranks first among k, averaged exactly over all k-subsets (ties broken uniformly).\n",
        t.n, t.judge
    );
    let _ = writeln!(
        s,
        "- {} examples sampled; {} with all {} samples judged. Left out: {} with a failed sample, {} with an unparsed judgement, {} with a failed judgement ({} unparsed and {} failed judgements over all samples).",
        t.examples, t.judged_examples, t.n, t.excluded.sample_failed, t.excluded.judge_unparsed, t.excluded.judge_failed, t.unparsed_judgements, t.failed_judgements
    );
    if t.excluded.no_reward > 0 {
        let who: Vec<String> = t
            .rows
            .iter()
            .filter(|r| r.excluded_for_score_errors > 0)
            .map(|r| format!("`{}` {}", r.name, r.excluded_for_score_errors))
            .collect();
        let _ = writeln!(
            s,
            "- {} judged examples are left out of every row, so that all rows are on the same {} examples: a reward model has no reward for one of their samples (examples per model: {}).",
            t.excluded.no_reward,
            t.judged_examples - t.excluded.no_reward,
            who.join(", ")
        );
    }
    s.push('\n');
    let header = |s: &mut String, title: &str| {
        let _ = writeln!(s, "**{title}**\n");
        let _ = write!(s, "| | examples |");
        for k in &t.ks {
            let _ = write!(s, " k={k} |");
        }
        let _ = write!(s, "\n|---|---:|");
        for _ in &t.ks {
            s.push_str("---:|");
        }
        s.push('\n');
    };
    header(&mut s, "Overall (mean over examples)");
    for r in &t.rows {
        let _ = write!(s, "| {} | {} |", label(r), r.examples);
        for p in &r.curve {
            let _ = write!(s, " {} |", fmt(p.overall));
        }
        s.push('\n');
    }
    for sub in &t.subsets {
        s.push('\n');
        header(&mut s, sub);
        for r in &t.rows {
            let _ = write!(
                s,
                "| {} | {} |",
                label(r),
                r.subset_examples.get(sub).copied().unwrap_or(0)
            );
            for p in &r.curve {
                let _ = write!(s, " {} |", p.per_subset.get(sub).map_or("–".into(), |v| fmt(*v)));
            }
            s.push('\n');
        }
    }
    s
}

fn label(r: &BonRow) -> String {
    match (&r.kind[..], &r.condition) {
        ("reference", _) => format!("*{}*", r.name),
        (_, Some(c)) if c != "none" => format!("`{}` ({c})", r.name),
        _ => format!("`{}`", r.name),
    }
}

fn fmt(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "–".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prbench_models::TokenStats;

    fn sample(id: &str, subset: &str, i: usize) -> BonSample {
        BonSample {
            example_id: id.into(),
            subset: subset.into(),
            sample_index: i,
            seed: 0,
            text: format!("answer {i}"),
            posts_shown: 0,
            posts_dropped: 0,
            tokens: TokenStats::default(),
            hit_max_new_tokens: false,
            error: None,
        }
    }

    fn judgement(id: &str, i: usize, scores: Option<Vec<u8>>) -> RubricJudgement {
        RubricJudgement {
            example_id: id.into(),
            sample_index: i,
            aspects: 1,
            unparsed: scores.is_none().then(|| "no score line".into()),
            scores,
            probabilities: None,
            raw: String::new(),
            error: None,
            tokens: TokenStats::default(),
        }
    }

    fn score(id: &str, i: usize, v: Option<f64>) -> BonScore {
        BonScore {
            example_id: id.into(),
            sample_index: i,
            score: v,
            error: v.is_none().then(|| "boom".into()),
            tokens: TokenStats::default(),
        }
    }

    /// One reward model, `rm` (spec `baseline:x`, condition `none`), with these scores.
    fn one_model(scores: Vec<BonScore>) -> Vec<ModelScores> {
        vec![ModelScores {
            name: "rm".into(),
            spec: "baseline:x".into(),
            condition: "none".into(),
            scores,
        }]
    }

    /// Two examples, N = 3. Example a: rubric [0, 2, 1], RM [1, 3, 2] (agrees); example b:
    /// rubric [2, 0, 0], RM [0, 5, 5] (disagrees, ties at the top). By hand:
    /// - a: k=1 mean 1; k=2 subsets {0,1}→2, {0,2}→1, {1,2}→2 → 5/3; k=3 → 2.
    /// - b: k=1 mean 2/3; k=2 {0,1}→0, {0,2}→0, {1,2}→ tie mean 0 → 0; k=3 → 0.
    /// - oracle b: k=2 {0,1}→2, {0,2}→2, {1,2}→0 → 4/3; k=3 → 2.
    #[test]
    fn table_by_hand() {
        let samples: Vec<BonSample> = (0..3)
            .map(|i| sample("a", "s1", i))
            .chain((0..3).map(|i| sample("b", "s2", i)))
            .collect();
        let js = vec![
            judgement("a", 0, Some(vec![0])),
            judgement("a", 1, Some(vec![2])),
            judgement("a", 2, Some(vec![1])),
            judgement("b", 0, Some(vec![2])),
            judgement("b", 1, Some(vec![0])),
            judgement("b", 2, Some(vec![0])),
        ];
        let rm = vec![
            score("a", 0, Some(1.0)),
            score("a", 1, Some(3.0)),
            score("a", 2, Some(2.0)),
            score("b", 0, Some(0.0)),
            score("b", 1, Some(5.0)),
            score("b", 2, Some(5.0)),
        ];
        let t = build(&samples, 3, "j", &js, &one_model(rm), Some(&[1, 2, 3])).unwrap();
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        let rmrow = &t.rows[2];
        close(rmrow.curve[0].per_subset["s1"], 1.0);
        close(rmrow.curve[1].per_subset["s1"], 5.0 / 3.0);
        close(rmrow.curve[2].per_subset["s1"], 2.0);
        close(rmrow.curve[0].per_subset["s2"], 2.0 / 3.0);
        close(rmrow.curve[1].per_subset["s2"], 0.0);
        close(rmrow.curve[1].overall, (5.0 / 3.0) / 2.0);
        close(rmrow.curve[1].overall_normalized, (5.0 / 3.0) / 4.0);
        let oracle = &t.rows[1];
        close(oracle.curve[1].per_subset["s2"], 4.0 / 3.0);
        close(oracle.curve[2].overall, 2.0);
        let random = &t.rows[0];
        close(random.curve[2].overall, (1.0 + 2.0 / 3.0) / 2.0);
        assert!(render(&t).contains("| `rm` | 2 | 0.833 | 0.833 | 1.000 |"), "{}", render(&t));
    }

    #[test]
    fn unparsed_judgements_and_missing_rewards_leave_examples_out_counted() {
        let samples: Vec<BonSample> = (0..2)
            .map(|i| sample("a", "s", i))
            .chain((0..2).map(|i| sample("b", "s", i)))
            .collect();
        let js = vec![
            judgement("a", 0, Some(vec![1])),
            judgement("a", 1, None),
            judgement("b", 0, Some(vec![2])),
            judgement("b", 1, Some(vec![0])),
        ];
        let rm = vec![
            score("a", 0, Some(1.0)),
            score("a", 1, Some(1.0)),
            score("b", 0, Some(1.0)),
            score("b", 1, None),
        ];
        let t = build(&samples, 2, "j", &js, &one_model(rm), None).unwrap();
        assert_eq!(
            (t.judged_examples, t.excluded.judge_unparsed, t.unparsed_judgements),
            (1, 1, 1)
        );
        assert_eq!(
            (t.rows[2].examples, t.rows[2].excluded_for_score_errors, t.excluded.no_reward),
            (0, 1, 1)
        );
        assert_eq!(t.ks, [1, 2]);
        assert!(t.rows[2].curve[0].overall.is_nan());
    }

    /// Two judged examples, N = 2; `full` scores both, `gappy` has no reward for b's sample 1.
    /// Every row, the references included, is on example a only: rubric [2, 0], so random =
    /// 1.0 and oracle best-of-2 = 2.0; `full` prefers sample 0 (2.0), `gappy` sample 1 (0.0).
    #[test]
    fn every_row_is_on_the_examples_every_model_scored() {
        let samples: Vec<BonSample> = (0..2)
            .map(|i| sample("a", "s", i))
            .chain((0..2).map(|i| sample("b", "s", i)))
            .collect();
        let js = vec![
            judgement("a", 0, Some(vec![2])),
            judgement("a", 1, Some(vec![0])),
            judgement("b", 0, Some(vec![0])),
            judgement("b", 1, Some(vec![2])),
        ];
        let full = vec![
            score("a", 0, Some(2.0)),
            score("a", 1, Some(1.0)),
            score("b", 0, Some(1.0)),
            score("b", 1, Some(2.0)),
        ];
        let gappy = vec![
            score("a", 0, Some(1.0)),
            score("a", 1, Some(2.0)),
            score("b", 0, Some(1.0)),
            score("b", 1, None),
        ];
        let models = [
            ModelScores {
                name: "full".into(),
                spec: "baseline:longer".into(),
                condition: "none".into(),
                scores: full,
            },
            ModelScores {
                name: "gappy".into(),
                spec: "baseline:shorter".into(),
                condition: "none".into(),
                scores: gappy,
            },
        ];
        let t = build(&samples, 2, "j", &js, &models, None).unwrap();
        assert_eq!((t.judged_examples, t.excluded.no_reward), (2, 1));
        assert!(
            t.rows.iter().all(|r| r.examples == 1),
            "{:?}",
            t.rows.iter().map(|r| r.examples).collect::<Vec<_>>()
        );
        assert_eq!(
            t.rows.iter().map(|r| r.excluded_for_score_errors).collect::<Vec<_>>(),
            [0, 0, 0, 1]
        );
        let at_2: Vec<f64> = t.rows.iter().map(|r| r.curve[1].overall).collect();
        assert_eq!(at_2, [1.0, 2.0, 2.0, 0.0]);
        let md = render(&t);
        assert!(md.contains("1 judged examples are left out of every row, so that all rows are on the same 1 examples") && md.contains("`gappy` 1"), "{md}");
    }

    #[test]
    fn refuses_mismatched_files() {
        let samples: Vec<BonSample> = vec![sample("a", "s", 0), sample("a", "s", 2)];
        let e = build(&samples, 2, "j", &[], &[], None).unwrap_err().to_string();
        assert!(e.contains("expected exactly 0..2"), "{e}");
        let samples: Vec<BonSample> = (0..2).map(|i| sample("a", "s", i)).collect();
        let e = build(&samples, 2, "j", &[judgement("a", 0, Some(vec![1]))], &[], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no judgement"), "{e}");
        assert!(build(&samples, 2, "j", &[], &[], Some(&[3]))
            .unwrap_err()
            .to_string()
            .contains("k must be between 1 and N = 2"));
    }

    #[test]
    fn refuses_duplicate_unknown_and_invalid_records() {
        let samples: Vec<BonSample> = (0..2).map(|i| sample("a", "s", i)).collect();
        let good = || vec![judgement("a", 0, Some(vec![1])), judgement("a", 1, Some(vec![2]))];
        let rm = |v: f64| vec![score("a", 0, Some(1.0)), score("a", 1, Some(v))];
        let err = |js: Vec<RubricJudgement>, scores: Vec<BonScore>| {
            build(&samples, 2, "j", &js, &one_model(scores), None).unwrap_err().to_string()
        };
        assert!(build(&samples, 2, "j", &good(), &one_model(rm(2.0)), None).is_ok());
        let mut dup = good();
        dup.push(judgement("a", 1, Some(vec![0])));
        assert!(err(dup, rm(2.0)).contains("judgements `j` records 2 and 3"));
        let mut ghost = rm(2.0);
        ghost.push(score("ghost", 0, Some(1.0)));
        assert!(err(good(), ghost).contains("example `ghost` sample 0 is not in samples.jsonl"));
        let mut both = rm(2.0);
        both[1].error = Some("boom".into());
        assert!(err(good(), both).contains("either a finite `score` or an `error`"));
        let mut out_of_range = good();
        out_of_range[0].scores = Some(vec![9]);
        assert!(err(out_of_range, rm(2.0)).contains("score 9 is not 0, 1 or 2"));
        let mut short = good();
        short[0].aspects = 3;
        assert!(err(short, rm(2.0)).contains("1 scores for 3 rubric aspects"));
        assert!(build(&samples, 2, "j", &good(), &[], Some(&[2, 2]))
            .unwrap_err()
            .to_string()
            .contains("each k once"));
    }
}
