//! Training pairs for the BT head (`prbench train bt`): P-Soups users' past pairs (`--pairs history`) or a
//! file's own pairs (`--pairs target`), with the condition's context, minus every pair that
//! equals a target pair (so no evaluated pair is ever trained on) and minus exact repeats.

use std::collections::{HashMap, HashSet};

use prbench_data::psoups::{HistoryPair, RowHistory};
use prbench_data::Example;

use super::BtPair;

/// The context a training input carries for an example (the condition's rendering of it, e.g.
/// nothing under `none`, the rubric aspects under `oracle`).
pub type Context<'a> = &'a dyn Fn(&Example) -> Option<String>;

/// Identity of a pair for the overlap check: (question, chosen, rejected), whitespace-trimmed.
type PairKey = (String, String, String);

fn key(question: &str, chosen: &str, rejected: &str) -> PairKey {
    (question.trim().to_string(), chosen.trim().to_string(), rejected.trim().to_string())
}

/// The pairs built, and what was dropped on the way.
#[derive(Debug, Clone, Default)]
pub struct Built {
    /// Pairs to train on (train + held out).
    pub pairs: Vec<BtPair>,
    /// Pairs built before any drop.
    pub built: usize,
    /// `(training pair id, target example id)` for every pair dropped because it equals a target
    /// pair, in build order.
    pub dropped: Vec<(String, String)>,
    /// Pairs dropped as exact repeats (same context, question, chosen, rejected) of an earlier one.
    pub duplicates: usize,
    /// Kept pairs whose question is also the question of some target pair (with other answers):
    /// not a leak of any evaluated pair, reported so the reader can judge.
    pub shared_questions: usize,
}

/// One training example per history pair `k` (1-based) of row `r`: a copy of row `r` with
/// question/chosen/rejected replaced by the history pair and the profile post `k` (the same pair
/// rendered as a post) removed, id `{r}-h{k}`; its context is `context(copy)`.
/// `histories[i]` must describe `rows[i]`.
pub fn history_examples(
    rows: &[Example],
    histories: &[RowHistory],
    context: Context<'_>,
) -> Vec<BtPair> {
    let mut out = Vec::new();
    for (row, hist) in rows.iter().zip(histories) {
        debug_assert_eq!(row.id, hist.id);
        for (k, h) in hist.pairs.iter().enumerate() {
            out.push(to_pair(&history_copy(row, k, h), context));
        }
    }
    out
}

/// The copy of `row` for its history pair `k` (0-based here; the id and the removed post use
/// `k + 1`, the adapter's post id for that pair).
pub fn history_copy(row: &Example, k: usize, h: &HistoryPair) -> Example {
    let mut ex = row.clone();
    ex.id = format!("{}-h{}", row.id, k + 1);
    ex.question = h.prompt.clone();
    ex.chosen = h.chosen.clone();
    ex.rejected = h.rejected.clone();
    let post_id = (k + 1).to_string();
    ex.profile.retain(|p| p.id != post_id);
    ex
}

/// One training example per row, its own chosen/rejected (a separate training file).
pub fn target_examples(rows: &[Example], context: Context<'_>) -> Vec<BtPair> {
    rows.iter().map(|ex| to_pair(ex, context)).collect()
}

fn to_pair(ex: &Example, context: Context<'_>) -> BtPair {
    BtPair {
        id: ex.id.clone(),
        context: context(ex),
        question: ex.question.clone(),
        chosen: ex.chosen.clone(),
        rejected: ex.rejected.clone(),
    }
}

/// Drops every pair equal (question, chosen, rejected) to a pair of `targets`, then every exact
/// repeat (same context too) of an earlier kept pair; counts both.
pub fn filter(pairs: Vec<BtPair>, targets: &[&Example]) -> Built {
    filter_scoped(pairs, targets, &|_| String::new())
}

/// [`filter`] where a repeat must also have the same `scope`: the PAL models (`crate::pal`)
/// pass the pair's user, so two users' identical pairs are both kept (they are each user's own
/// evidence) while a user's own repeats are merged.
pub fn filter_scoped(
    pairs: Vec<BtPair>,
    targets: &[&Example],
    scope: &dyn Fn(&BtPair) -> String,
) -> Built {
    let mut target_ids: HashMap<PairKey, &str> = HashMap::new();
    let mut target_questions: HashSet<&str> = HashSet::new();
    for t in targets {
        target_ids.entry(key(&t.question, &t.chosen, &t.rejected)).or_insert(&t.id);
        target_questions.insert(t.question.trim());
    }
    let mut built = Built { built: pairs.len(), ..Built::default() };
    let mut seen: HashSet<(String, Option<String>, PairKey)> = HashSet::new();
    for p in pairs {
        let k = key(&p.question, &p.chosen, &p.rejected);
        if let Some(t) = target_ids.get(&k) {
            built.dropped.push((p.id.clone(), t.to_string()));
            continue;
        }
        if !seen.insert((scope(&p), p.context.clone(), k)) {
            built.duplicates += 1;
            continue;
        }
        if target_questions.contains(p.question.trim()) {
            built.shared_questions += 1;
        }
        built.pairs.push(p);
    }
    built
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use prbench_data::psoups::load_psoups_with_history;
    use prbench_eval::condition::{Condition, ConditionInputs};

    use super::*;

    fn fixture() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../prbench/tests/fixtures/psoups-mini")
    }

    /// The context `prbench train bt` gives under `condition` (`none` or `oracle`).
    pub(super) fn ctx(condition: Condition) -> impl Fn(&Example) -> Option<String> {
        move |ex| condition.context(ex, &ConditionInputs::default(), None).unwrap()
    }

    /// A user-conditioned BT (`train bt --condition profile:k`): each history copy's context holds
    /// the user's other history pairs and never the pair it is trained on.
    #[test]
    fn user_conditioned_copies_never_see_their_own_pair() {
        let (ds, hist) = load_psoups_with_history(&fixture(), &[], "fixture").unwrap();
        let condition = Condition::parse("profile:10").unwrap();
        let context = |ex: &Example| condition.standalone_context(ex).unwrap();
        let pairs = history_examples(&ds.examples, &hist, &context);
        assert_eq!(pairs.len(), hist.iter().map(|h| h.pairs.len()).sum::<usize>());
        for p in &pairs {
            let (row_id, k) = p.id.rsplit_once("-h").unwrap();
            let row = ds.examples.iter().find(|e| e.id == row_id).unwrap();
            let ctx = p.context.as_deref().unwrap_or_default();
            for post in &row.profile {
                assert_eq!(
                    ctx.contains(&post.text),
                    post.id != k,
                    "{}: post {} in the context",
                    p.id,
                    post.id
                );
            }
        }
    }

    #[test]
    fn history_pairs_drop_target_overlap_and_repeats() {
        let (ds, hist) = load_psoups_with_history(&fixture(), &[], "fixture").unwrap();
        assert_eq!(ds.examples.len(), 3);
        let pairs = history_examples(&ds.examples, &hist, &ctx(Condition::None));
        assert_eq!(pairs.len(), 7);
        assert_eq!(pairs[0].id, "friendly_unfriendly-0000-h1");
        assert_eq!(pairs[0].context, None);
        let targets: Vec<&Example> = ds.examples.iter().collect();
        let b = filter(pairs, &targets);
        assert_eq!(b.built, 7);
        // student_phd-0000's 2nd history pair is student_phd-0001's target pair, and
        // student_phd-0001's 3rd is friendly_unfriendly-0000's target (with extra spaces).
        assert_eq!(
            b.dropped,
            [
                ("student_phd-0000-h2".to_string(), "student_phd-0001".to_string()),
                ("student_phd-0001-h3".to_string(), "friendly_unfriendly-0000".to_string()),
            ]
        );
        // student_phd-0001-h1 repeats student_phd-0000-h1.
        assert_eq!(b.duplicates, 1);
        let ids: Vec<&str> = b.pairs.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "friendly_unfriendly-0000-h1",
                "friendly_unfriendly-0000-h2",
                "student_phd-0000-h1",
                "student_phd-0001-h2"
            ]
        );
        // friendly_unfriendly-0000-h2 asks a target question with other answers.
        assert_eq!(b.shared_questions, 1);
        // No kept pair equals any target pair.
        for p in &b.pairs {
            assert!(!ds.examples.iter().any(|t| key(&t.question, &t.chosen, &t.rejected)
                == key(&p.question, &p.chosen, &p.rejected)));
        }
    }

    #[test]
    fn oracle_context_and_profile_post_removed() {
        let (ds, hist) = load_psoups_with_history(&fixture(), &[], "fixture").unwrap();
        let pairs = history_examples(&ds.examples, &hist, &ctx(Condition::Oracle));
        let p = &pairs[2];
        assert_eq!(p.id, "student_phd-0000-h1");
        assert_eq!(
            p.context.as_deref(),
            Some("This user expects an answer with these qualities:\n- Generate a response that can be easily understood by an elementary school student.")
        );
        assert_eq!(p.question, "What is a fraction?");
        // Under oracle the pair that both student_phd users share comes with two personas, so two
        // contexts: not a repeat.
        let targets: Vec<&Example> = ds.examples.iter().collect();
        let b = filter(pairs, &targets);
        assert_eq!((b.duplicates, b.dropped.len(), b.pairs.len()), (0, 2, 5));
    }

    #[test]
    fn the_copy_loses_only_its_own_post() {
        let (ds, hist) = load_psoups_with_history(&fixture(), &[], "fixture").unwrap();
        let row = &ds.examples[2];
        let copy = history_copy(row, 1, &hist[2].pairs[1]);
        assert_eq!(copy.id, "student_phd-0001-h2");
        assert_eq!(
            (copy.question.as_str(), copy.rejected.as_str()),
            ("Define entropy.", "How messy things get.")
        );
        let ids: Vec<&str> = copy.profile.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["1", "3"]);
        // Everything else is the row's own.
        assert_eq!(
            (copy.narrative.as_str(), &copy.rubric_aspects),
            (row.narrative.as_str(), &row.rubric_aspects)
        );
    }

    #[test]
    fn target_pairs_are_the_rows_own() {
        let (ds, _) = load_psoups_with_history(&fixture(), &[], "fixture").unwrap();
        let pairs = target_examples(&ds.examples, &ctx(Condition::None));
        assert_eq!(pairs.len(), 3);
        assert_eq!(pairs[1].chosen, ds.examples[1].chosen);
        // Filtering a file's pairs against themselves drops them all.
        let targets: Vec<&Example> = ds.examples.iter().collect();
        assert_eq!(filter(pairs, &targets).dropped.len(), 3);
    }
}

#[cfg(test)]
mod real_data {
    use std::collections::HashSet;
    use std::path::PathBuf;

    use prbench_data::psoups::load_psoups_with_history;
    use prbench_eval::condition::Condition;

    use super::tests::ctx;
    use super::*;

    #[test]
    fn psoups_history_vs_target_overlap() {
        let dir =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/alignx-psoups");
        if !dir.join("friendly_unfriendly.json").is_file() {
            prbench_testkit::unavailable(format!(
                "P-Soups data not found at {} (the shared data dir is absent)",
                dir.display()
            ));
            return;
        }
        let (ds, hist) = load_psoups_with_history(&dir, &[], "p").unwrap();
        let targets: Vec<&Example> = ds.examples.iter().collect();
        // Expected counts from Python over the two files (json.load; keys = stripped
        // (prompt, chosen, rejected); rows in file order, friendly_unfriendly first):
        // 4,800 history pairs, 443 equal to a target pair (5 distinct targets), 4,303 repeats,
        // 54 kept, 27 of which ask a question that some target pair asks too.
        for condition in [Condition::None, Condition::Oracle] {
            let b = filter(history_examples(&ds.examples, &hist, &ctx(condition)), &targets);
            assert_eq!(b.built, 4800);
            assert_eq!(b.dropped.len(), 443, "{condition}");
            let distinct: HashSet<&str> = b.dropped.iter().map(|(_, t)| t.as_str()).collect();
            assert_eq!(distinct.len(), 5);
            assert_eq!(
                b.dropped[0],
                ("friendly_unfriendly-0016-h4".to_string(), "friendly_unfriendly-0000".to_string())
            );
            assert_eq!(
                (b.duplicates, b.pairs.len(), b.shared_questions),
                (4303, 54, 27),
                "{condition}"
            );
        }
    }
}
