//! Descriptive statistics of a dataset (`prbench data stats`): per subset and overall.
//!
//! Lengths are in tokens when a counter is given, else in whitespace-separated words. A profile's
//! length is the sum of its posts' text lengths (categories and ids not counted).

use serde::Serialize;

use crate::schema::{short_subset, Dataset, Example};

/// Mean, minimum and maximum of a count (all 0 when there are no values).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: usize,
    /// Largest value.
    pub max: usize,
}

impl Summary {
    /// Summary of `values`.
    pub fn of(values: &[usize]) -> Summary {
        if values.is_empty() {
            return Summary { mean: 0.0, min: 0, max: 0 };
        }
        Summary {
            mean: values.iter().sum::<usize>() as f64 / values.len() as f64,
            min: *values.iter().min().expect("non-empty"),
            max: *values.iter().max().expect("non-empty"),
        }
    }

    fn cell(&self) -> String {
        format!("{:.1} ({}–{})", self.mean, self.min, self.max)
    }
}

/// Statistics of one subset (or of the whole dataset, with `subset = "all"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubsetStats {
    /// Long subset name, or `all`.
    pub subset: String,
    /// Number of examples.
    pub examples: usize,
    /// Posts per profile.
    pub posts_per_profile: Summary,
    /// Profile length (sum over posts).
    pub profile_length: Summary,
    /// Question length.
    pub question_length: Summary,
    /// Chosen-answer length.
    pub chosen_length: Summary,
    /// Rejected-answer length.
    pub rejected_length: Summary,
    /// Rubric aspects per example.
    pub aspects_per_example: Summary,
    /// Examples whose profile has no posts.
    pub empty_profiles: usize,
    /// Examples with no rubric aspects.
    pub empty_rubrics: usize,
}

/// Statistics of a dataset: one entry per subset (in dataset order) and the overall figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatasetStats {
    /// The dataset's source spec.
    pub source: String,
    /// The dataset's kind (`prb`, `psoups`, …).
    pub kind: String,
    /// Length unit: `tokens` or `words`.
    pub unit: String,
    /// Per subset, in dataset order.
    pub subsets: Vec<SubsetStats>,
    /// Over all examples.
    pub overall: SubsetStats,
}

fn subset_stats(name: &str, examples: &[&Example], len: &dyn Fn(&str) -> usize) -> SubsetStats {
    let collect = |f: &dyn Fn(&Example) -> usize| examples.iter().map(|e| f(e)).collect::<Vec<_>>();
    SubsetStats {
        subset: name.to_string(),
        examples: examples.len(),
        posts_per_profile: Summary::of(&collect(&|e| e.profile.len())),
        profile_length: Summary::of(&collect(&|e| e.profile.iter().map(|p| len(&p.text)).sum())),
        question_length: Summary::of(&collect(&|e| len(&e.question))),
        chosen_length: Summary::of(&collect(&|e| len(&e.chosen))),
        rejected_length: Summary::of(&collect(&|e| len(&e.rejected))),
        aspects_per_example: Summary::of(&collect(&|e| e.rubric_aspects.len())),
        empty_profiles: examples.iter().filter(|e| e.profile.is_empty()).count(),
        empty_rubrics: examples.iter().filter(|e| e.rubric_aspects.is_empty()).count(),
    }
}

/// Computes [`DatasetStats`]; `count_tokens` counts a text's tokens (e.g. with a model's
/// tokenizer), `None` = whitespace-separated words.
pub fn dataset_stats(ds: &Dataset, count_tokens: Option<&dyn Fn(&str) -> usize>) -> DatasetStats {
    let words = |s: &str| s.split_whitespace().count();
    let (len, unit): (&dyn Fn(&str) -> usize, &str) = match count_tokens {
        Some(f) => (f, "tokens"),
        None => (&words, "words"),
    };
    let mut names: Vec<&str> = Vec::new();
    for e in &ds.examples {
        if !names.contains(&e.subset.as_str()) {
            names.push(&e.subset);
        }
    }
    let subsets = names
        .iter()
        .map(|n| {
            let of: Vec<&Example> = ds.examples.iter().filter(|e| e.subset == *n).collect();
            subset_stats(n, &of, len)
        })
        .collect();
    let all: Vec<&Example> = ds.examples.iter().collect();
    DatasetStats {
        source: ds.source.clone(),
        kind: ds.kind.clone(),
        unit: unit.to_string(),
        subsets,
        overall: subset_stats("all", &all, len),
    }
}

impl DatasetStats {
    /// A Markdown table: one row per subset (short names) and a final `all` row; each length cell
    /// is `mean (min–max)`.
    pub fn to_markdown(&self) -> String {
        let u = &self.unit;
        let mut out =
            format!("Dataset `{}` (kind: {}); lengths in {u}.\n\n", self.source, self.kind);
        out.push_str(&format!(
            "| subset | examples | posts/profile | profile {u} | question {u} | chosen {u} | \
             rejected {u} | aspects/example | empty profiles | empty rubrics |\n"
        ));
        out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for s in self.subsets.iter().chain(std::iter::once(&self.overall)) {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                short_subset(&s.subset),
                s.examples,
                s.posts_per_profile.cell(),
                s.profile_length.cell(),
                s.question_length.cell(),
                s.chosen_length.cell(),
                s.rejected_length.cell(),
                s.aspects_per_example.cell(),
                s.empty_profiles,
                s.empty_rubrics,
            ));
        }
        out
    }
}
