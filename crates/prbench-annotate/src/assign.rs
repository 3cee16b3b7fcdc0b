//! Which annotator rates which item, and in which order the two answers are shown.
//!
//! **Procedure** (deterministic given the seed; nothing depends on thread count):
//!
//! 1. Items are put in the order of `sha256("prbench-annotate/deal", seed, item id)`, and
//!    annotators in the order of `sha256("prbench-annotate/deal", seed, annotator name)`.
//! 2. Item `i` of that order goes to the `per_item` annotators at positions
//!    `(i·per_item + j) mod A`, `j = 0 … per_item − 1`: distinct annotators (as
//!    `per_item ≤ A`), and the `N·per_item` ratings are dealt round-robin, so every annotator
//!    gets `⌊N·K/A⌋` or `⌈N·K/A⌉` items.
//! 3. An annotator sees their items in the order of
//!    `sha256("prbench-annotate/order", seed, annotator, item id)`, so raters do not all meet
//!    the items in the same order.
//! 4. Which answer is shown as answer 1 is balanced per annotator: their items are put in the
//!    order of `sha256("prbench-annotate/side", seed, annotator, item id)`, and the chosen
//!    answer is answer 1 on the 1st, 3rd, 5th … of that order and answer 2 on the others, so
//!    each annotator sees chosen first on half their items (one more when odd). A rater who
//!    knows the seed and their item ids could recompute the sides: pass a `--seed` of your own
//!    when raters could read this code (the page shows no item id).
//!
//! Each part is hashed with its length in front (no two tuples hash alike). Which annotators
//! share an item depends on the whole item set (that is what balancing means); the answer
//! order and the viewing order depend only on (seed, annotator, item).

use sha2::{Digest, Sha256};

use crate::error::AnnotateError;

/// One item on one annotator's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// Index of the item in the caller's item list.
    pub item: usize,
    /// Which answer label (1 or 2) the chosen answer gets on the page.
    pub chosen_shown_as: u8,
}

/// The assignment: for each annotator (in the caller's order), their items in viewing order.
pub type Assignment = Vec<Vec<Slot>>;

fn digest(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// Checks an annotator name: 1–64 characters from `A-Z a-z 0-9 _ . -` (names are printed
/// beside URLs and written to CSV files unquoted).
///
/// # Errors
/// [`AnnotateError::Annotators`] naming the bad name and the rule.
pub fn check_name(name: &str) -> Result<(), AnnotateError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(AnnotateError::Annotators(format!(
            "annotator name `{name}` is not allowed: use 1-64 characters from A-Z, a-z, 0-9, `_`, `.` and `-`"
        )))
    }
}

/// Deals `item_ids` to `annotators`, `per_item` annotators per item (module docs).
///
/// # Errors
/// [`AnnotateError::Annotators`] if there is no annotator, a name is repeated or not allowed
/// ([`check_name`]), `per_item` is 0 or more than the annotators; [`AnnotateError::Items`] if
/// there is no item or an id is repeated.
pub fn assign(
    item_ids: &[&str],
    annotators: &[String],
    per_item: usize,
    seed: u64,
) -> Result<Assignment, AnnotateError> {
    if annotators.is_empty() {
        return Err(AnnotateError::Annotators(
            "no annotator given: pass --annotators NAME,NAME,...".into(),
        ));
    }
    for (i, a) in annotators.iter().enumerate() {
        check_name(a)?;
        if annotators[..i].contains(a) {
            return Err(AnnotateError::Annotators(format!(
                "annotator `{a}` is named twice in --annotators"
            )));
        }
    }
    if per_item == 0 || per_item > annotators.len() {
        return Err(AnnotateError::Annotators(format!(
            "--per-item {per_item} cannot be met with {} annotator(s): it must be between 1 and the number of annotators",
            annotators.len()
        )));
    }
    if item_ids.is_empty() {
        return Err(AnnotateError::Items("the dataset has no item to rate".into()));
    }
    if item_ids.len() * per_item < annotators.len() {
        return Err(AnnotateError::Annotators(format!(
            "{} item(s) × --per-item {per_item} is fewer ratings than the {} annotators: some would get nothing to rate; name fewer annotators, raise --per-item or rate more items",
            item_ids.len(),
            annotators.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for id in item_ids {
        if !seen.insert(*id) {
            return Err(AnnotateError::Items(format!(
                "item id `{id}` appears twice: ids must be unique to be rated"
            )));
        }
    }
    let s = seed.to_le_bytes();
    let mut items: Vec<(usize, [u8; 32])> = item_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (i, digest(&[b"prbench-annotate/deal", &s, id.as_bytes()])))
        .collect();
    items.sort_by_key(|a| a.1);
    let mut order: Vec<(usize, [u8; 32])> = annotators
        .iter()
        .enumerate()
        .map(|(i, a)| (i, digest(&[b"prbench-annotate/deal", &s, a.as_bytes()])))
        .collect();
    order.sort_by_key(|a| a.1);

    let n_ann = annotators.len();
    let mut lists: Vec<Vec<(usize, [u8; 32])>> = vec![Vec::new(); n_ann];
    for (i, (item, _)) in items.iter().enumerate() {
        for j in 0..per_item {
            let who = order[(i * per_item + j) % n_ann].0;
            let key = digest(&[
                b"prbench-annotate/order",
                &s,
                annotators[who].as_bytes(),
                item_ids[*item].as_bytes(),
            ]);
            lists[who].push((*item, key));
        }
    }
    Ok(lists
        .into_iter()
        .enumerate()
        .map(|(who, mut list)| {
            list.sort_by_key(|a| a.1);
            let mut by_side: Vec<(usize, [u8; 32])> = list
                .iter()
                .map(|(item, _)| {
                    let key = [
                        b"prbench-annotate/side".as_slice(),
                        &s,
                        annotators[who].as_bytes(),
                        item_ids[*item].as_bytes(),
                    ];
                    (*item, digest(&key))
                })
                .collect();
            by_side.sort_by_key(|a| a.1);
            let side: std::collections::HashMap<usize, u8> = by_side
                .iter()
                .enumerate()
                .map(|(rank, (item, _))| (*item, 1 + (rank % 2) as u8))
                .collect();
            list.into_iter().map(|(item, _)| Slot { item, chosen_shown_as: side[&item] }).collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("a{i}")).collect()
    }

    #[test]
    fn every_item_gets_k_distinct_annotators_and_loads_differ_by_at_most_one() {
        let ids: Vec<String> = (0..23).map(|i| format!("item-{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        for (n_ann, k) in [(1, 1), (3, 2), (5, 3), (4, 4), (7, 2)] {
            let a = assign(&refs, &names(n_ann), k, 7).unwrap();
            let mut per_item = vec![Vec::new(); refs.len()];
            for (who, list) in a.iter().enumerate() {
                for s in list {
                    per_item[s.item].push(who);
                }
            }
            for raters in &per_item {
                let mut d = raters.clone();
                d.sort();
                d.dedup();
                assert_eq!((raters.len(), d.len()), (k, k), "{n_ann} annotators, k={k}");
            }
            let loads: Vec<usize> = a.iter().map(Vec::len).collect();
            let (lo, hi) = (*loads.iter().min().unwrap(), *loads.iter().max().unwrap());
            assert!(hi - lo <= 1, "{loads:?}");
            assert_eq!(loads.iter().sum::<usize>(), refs.len() * k);
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_assignment_and_another_seed_another() {
        let ids: Vec<String> = (0..40).map(|i| format!("q{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let a = assign(&refs, &names(4), 2, 1).unwrap();
        assert_eq!(a, assign(&refs, &names(4), 2, 1).unwrap());
        assert_ne!(a, assign(&refs, &names(4), 2, 2).unwrap());
        // Each annotator sees chosen first on half their items (one more when odd).
        for list in &a {
            let first = list.iter().filter(|s| s.chosen_shown_as == 1).count();
            assert_eq!(first, list.len().div_ceil(2), "{list:?}");
        }
    }

    #[test]
    fn bad_input_is_refused_with_what_to_do() {
        let ids = ["x", "y"];
        let msg = |r: Result<Assignment, AnnotateError>| r.unwrap_err().to_string();
        assert!(msg(assign(&ids, &[], 1, 0)).contains("--annotators"));
        assert!(msg(assign(&ids, &names(2), 3, 0)).contains("--per-item 3"));
        assert!(msg(assign(&ids, &names(2), 0, 0)).contains("--per-item 0"));
        assert!(msg(assign(&ids, &["a".into(), "a".into()], 1, 0)).contains("named twice"));
        assert!(msg(assign(&ids, &["a b".into()], 1, 0)).contains("`a b`"));
        assert!(msg(assign(&["x", "x"], &names(1), 1, 0)).contains("`x` appears twice"));
        assert!(msg(assign(&[], &names(1), 1, 0)).contains("no item"));
        assert!(msg(assign(&ids, &names(3), 1, 0)).contains("some would get nothing"));
    }
}
