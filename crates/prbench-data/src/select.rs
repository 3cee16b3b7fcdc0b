//! Taking part of a dataset: the first N examples of each subset, the one rule `prbench eval
//! --limit`, `prbench build --limit`, `prbench annotate --limit` and `prbench bon sample
//! --limit` share.

use std::collections::HashMap;

use crate::schema::Example;

/// The first `n` examples of each subset, in dataset order (all when `n` is `None`). Subsets
/// are counted apart, so a subset's examples need not be contiguous.
pub fn first_per_subset(examples: &[Example], n: Option<usize>) -> Vec<&Example> {
    first_per_subset_where(examples, n, |_| true)
}

/// [`first_per_subset`] over the examples `admit` accepts: an example is taken when its subset
/// still has room and `admit` accepts it. `admit` is asked in dataset order and only about
/// examples whose subset still has room, so a filter with state sees exactly the candidates:
/// "skip a question already taken" (`prbench bon sample --distinct-questions`) neither lets a
/// repeated question use up a subset's room nor counts a question as taken when its example
/// was left out because its subset was full.
pub fn first_per_subset_where<'a>(
    examples: &'a [Example],
    n: Option<usize>,
    mut admit: impl FnMut(&'a Example) -> bool,
) -> Vec<&'a Example> {
    let mut taken: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    for ex in examples {
        let count = taken.entry(ex.subset.as_str()).or_insert(0);
        if n.is_some_and(|m| *count >= m) || !admit(ex) {
            continue;
        }
        *count += 1;
        out.push(ex);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(id: &str, subset: &str) -> Example {
        crate::ExampleBuilder::new(id)
            .subset(subset)
            .question(format!("q{id}"))
            .narrative("n")
            .category("c")
            .chosen("a")
            .rejected("b")
            .build()
    }

    fn ids(v: Vec<&Example>) -> Vec<&str> {
        v.iter().map(|e| e.id.as_str()).collect()
    }

    #[test]
    fn takes_the_first_n_of_each_subset_in_order() {
        let all = [ex("1", "x"), ex("2", "y"), ex("3", "x"), ex("4", "x"), ex("5", "y")];
        assert_eq!(ids(first_per_subset(&all, Some(2))), ["1", "2", "3", "5"]);
        assert_eq!(ids(first_per_subset(&all, Some(1))), ["1", "2"]);
        assert_eq!(ids(first_per_subset(&all, Some(0))), Vec::<&str>::new());
        assert_eq!(ids(first_per_subset(&all, None)), ["1", "2", "3", "4", "5"]);
    }

    #[test]
    fn a_filter_is_asked_only_while_the_subset_has_room() {
        let all = [ex("1", "x"), ex("2", "x"), ex("3", "x"), ex("4", "y")];
        let mut asked = Vec::new();
        let got = first_per_subset_where(&all, Some(1), |e| {
            asked.push(e.id.clone());
            e.id != "1"
        });
        assert_eq!(ids(got), ["2", "4"]);
        assert_eq!(asked, ["1", "2", "4"]);
    }
}
