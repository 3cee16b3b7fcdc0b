//! What a valid dataset may hold that changes what some conditions show: examples with an
//! empty profile (`profile:k` renders them as `none`) or an empty rubric (`oracle` renders them
//! as `none`, and is refused when no example has a rubric). Loading allows both; commands print
//! these warnings before any model loads.

use crate::schema::Dataset;

/// How many example ids a warning lists before "…".
const IDS_SHOWN: usize = 3;

/// One line per kind of empty material, e.g. `warning: 3 of 12 examples have an empty profile
/// (profile:k renders them as none; first: a1, a7, b2)`; empty when there is nothing to say.
pub fn dataset_warnings(data: &Dataset) -> Vec<String> {
    let empty_profile: Vec<&str> =
        data.examples.iter().filter(|e| e.profile.is_empty()).map(|e| e.id.as_str()).collect();
    let empty_rubric: Vec<&str> = data
        .examples
        .iter()
        .filter(|e| e.rubric_aspects.is_empty())
        .map(|e| e.id.as_str())
        .collect();
    [
        warning(
            &empty_profile,
            data.examples.len(),
            "an empty profile",
            "profile:k renders them as none",
        ),
        warning(
            &empty_rubric,
            data.examples.len(),
            "an empty rubric",
            // With no rubric at all (SynthesizeMe, PRISM), `prbench eval` refuses `oracle`.
            if empty_rubric.len() == data.examples.len() {
                "the data has no rubric, so oracle is refused"
            } else {
                "oracle renders them as none"
            },
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The warning for the examples `ids` (of `n`) that have `what`; `None` when `ids` is empty.
fn warning(ids: &[&str], n: usize, what: &str, renders: &str) -> Option<String> {
    if ids.is_empty() {
        return None;
    }
    let more = if ids.len() > IDS_SHOWN { ", …" } else { "" };
    let first = ids[..ids.len().min(IDS_SHOWN)].join(", ");
    let noun = if n == 1 { "example" } else { "examples" };
    let verb = if ids.len() == 1 { "has" } else { "have" };
    Some(format!(
        "warning: {} of {n} {noun} {verb} {what} ({renders}; first: {first}{more})",
        ids.len()
    ))
}
