//! Conditions: what a reward model may see besides the question and the answer
//! (PROTOCOL.md §2). Only [`Condition::Oracle`] lets hidden rubric text through.
//!
//! | condition | context shown | built from |
//! |---|---|---|
//! | `none` | nothing | — |
//! | `profile:k` | the user's top-k profile posts, best first, each labelled with rank and category | question + profile (a retriever ranks the posts) |
//! | `planner` | rubric aspects a generator inferred from the question and the top-k posts | question + profile only (the planner never sees the rubric) |
//! | `oracle` | the ground-truth rubric aspect titles | the hidden rubric: an upper bound, flagged everywhere |
//!
//! The per-example material of `profile:k` (ranked posts) and `planner` (planned aspects) is
//! computed before a run and handed over in [`ConditionInputs`].

use std::collections::HashMap;
use std::fmt;

use prbench_data::{Example, ProfilePost};

use crate::error::EvalError;

/// Default number of profile posts shown under `profile` (PROTOCOL.md §2).
pub const DEFAULT_PROFILE_K: usize = 10;

/// What extra text the model under test sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Condition {
    /// Question and answer only (the authors' released evaluators run only this).
    None,
    /// The user's `k` most relevant profile posts ("raw profile injection").
    Profile {
        /// Posts shown at most (fewer when the profile is shorter, or when the lowest-ranked
        /// ones are dropped to fit the model's context).
        k: usize,
    },
    /// Rubric aspects inferred by a planner model from the question and the top-k posts.
    Planner,
    /// The ground-truth rubric aspect titles: an upper bound, flagged in every output.
    Oracle,
}

fn bad(given: &str, reason: impl Into<String>) -> EvalError {
    EvalError::Condition { given: given.into(), reason: reason.into() }
}

/// The forms a condition list takes (`eval --condition`).
const EXPECTED: &str = "expected `none`, `profile` (k = 10), `profile:K`, `profile:k=K1,K2,…` (a sweep), `planner` or `oracle`";

/// The forms one condition takes ([`Condition::parse`]): a sweep is a list, so it is not named.
pub const EXPECTED_ONE: &str =
    "expected one of `none`, `profile` (k = 10), `profile:K`, `planner` or `oracle`";

fn parse_k(given: &str, s: &str, expected: &str) -> Result<usize, EvalError> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err(bad(given, "k is the number of profile posts shown and must be at least 1 (use `none` for no profile)")),
        Ok(k) => Ok(k),
        Err(_) => Err(bad(given, format!("`{}` is not a post count; {expected}", s.trim()))),
    }
}

impl Condition {
    /// Parses one condition: `none`, `profile` (k = [`DEFAULT_PROFILE_K`]), `profile:K`,
    /// `profile:k=K`, `planner`, `oracle` (case-insensitive).
    ///
    /// # Errors
    /// [`EvalError::Condition`] naming the value and what is expected; k = 0 is refused.
    pub fn parse(s: &str) -> Result<Self, EvalError> {
        Self::parse_one(s, EXPECTED_ONE)
    }

    /// [`Condition::parse`], with `expected` (the accepted forms where `s` was given) in errors.
    fn parse_one(s: &str, expected: &str) -> Result<Self, EvalError> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "none" => Ok(Self::None),
            "oracle" => Ok(Self::Oracle),
            "planner" => Ok(Self::Planner),
            "profile" => Ok(Self::Profile { k: DEFAULT_PROFILE_K }),
            _ => match t.strip_prefix("profile:") {
                Some(rest) => {
                    let k = rest.strip_prefix("k=").unwrap_or(rest);
                    if k.contains(',') {
                        return Err(bad(s, "a k sweep names several conditions; it is taken where a list of conditions is (`eval --condition profile:k=1,3,5,10`), and a single condition is expected here (e.g. `profile:3`)"));
                    }
                    Ok(Self::Profile { k: parse_k(s, k, expected)? })
                }
                None if t.contains(',') => Err(bad(s, format!("a list names several conditions, and a single condition is expected here; {expected}"))),
                None => Err(bad(s, expected)),
            },
        }
    }

    /// Parses a `--condition` list, already split at commas: a bare number after a
    /// `profile:k=K` item (or after another number of that sweep) extends it into a k sweep, so
    /// `none,profile:k=1,3,5,10,oracle` gives none, profile:1, profile:3, profile:5,
    /// profile:10, oracle. Order is kept.
    ///
    /// # Errors
    /// [`EvalError::Condition`] for an unknown item, a bare number with no `profile` item
    /// before it, a repeated condition, or an empty list.
    pub fn parse_list<S: AsRef<str>>(items: &[S]) -> Result<Vec<Self>, EvalError> {
        let mut out: Vec<Self> = Vec::new();
        let mut in_sweep = false;
        for item in items {
            let item = item.as_ref().trim();
            if item.is_empty() {
                return Err(bad(item, format!("an empty item in the condition list; {EXPECTED}")));
            }
            let c = if item.chars().all(|c| c.is_ascii_digit()) {
                if !in_sweep {
                    return Err(bad(item, "a bare number continues a k sweep and must follow a `profile:k=K` item (e.g. `profile:k=1,3,5`)"));
                }
                Self::Profile { k: parse_k(item, item, EXPECTED)? }
            } else {
                let c = Self::parse_one(item, EXPECTED)?;
                in_sweep = item.to_ascii_lowercase().starts_with("profile:k=");
                c
            };
            if out.contains(&c) {
                return Err(bad(item, format!("`{c}` is listed twice")));
            }
            out.push(c);
        }
        if out.is_empty() {
            return Err(bad("", format!("no condition given; {EXPECTED}")));
        }
        Ok(out)
    }

    /// The condition as a file-name part: `none`, `profile-k10`, `planner`, `oracle` (run
    /// folders are named `<run-id>-<slug>`).
    pub fn slug(self) -> String {
        match self {
            Self::Profile { k } => format!("profile-k{k}"),
            other => other.to_string(),
        }
    }

    /// Whether this condition shows the hidden scoring standard (an upper bound, not a score).
    pub fn is_oracle(self) -> bool {
        matches!(self, Self::Oracle)
    }

    /// Profile posts this condition needs ranked: `k` for `profile:k`, `None` otherwise (the
    /// planner's own k is a run setting).
    pub fn profile_k(self) -> Option<usize> {
        match self {
            Self::Profile { k } => Some(k),
            _ => None,
        }
    }

    /// One sentence saying what the model sees under this condition (printed in reports).
    pub fn meaning(self) -> String {
        match self {
            Self::None => "the model sees the question and the answers only, nothing about the user in its input: unless it carries the user itself (a PAL model's per-user weights), it cannot personalize, and this measures the non-personalized baseline".into(),
            Self::Profile { k } => format!("the model also sees up to {k} of the user's past posts, ranked by relevance to the question (raw profile injection)"),
            Self::Planner => "the model also sees rubric aspects a planner model inferred from the question and the user's top-ranked posts (never from the hidden rubric)".into(),
            Self::Oracle => "the model also sees the ground-truth rubric aspect titles of this user: an upper bound, not a benchmark score".into(),
        }
    }

    /// The context this condition gives `example` on its own, with no prepared inputs: what a
    /// personalized reward model is trained on (`prbench train bt --condition …`), where every
    /// training copy of a row carries its own profile. Under `profile:k` the example's posts are
    /// ranked by BM25 against its question with the default parameters, exactly as `eval` ranks
    /// them by default ([`crate::retrieve::bm25::Bm25Retriever`]); `none` and `oracle` need no
    /// ranking.
    ///
    /// # Errors
    /// [`EvalError::Condition`] for `planner` (it needs a planner model's output); retrieval
    /// errors for a profile whose post ids repeat.
    pub fn standalone_context(self, example: &Example) -> Result<Option<String>, EvalError> {
        use crate::retrieve::Retriever;
        let mut inputs = ConditionInputs::default();
        match self {
            Condition::Planner => {
                return Err(EvalError::Condition {
                    given: "planner".into(),
                    reason: "it needs a planner model's inferred aspects for every example, so it has no standalone context".into(),
                })
            }
            Condition::Profile { .. } => {
                let bm25 = crate::retrieve::bm25::Bm25Retriever::default();
                let ranking = bm25.rank_all(std::slice::from_ref(example))?.remove(0);
                let posts = ranking.posts(example)?.into_iter().cloned().collect();
                inputs.ranked.insert(example.id.clone(), posts);
            }
            Condition::None | Condition::Oracle => {}
        }
        self.context(example, &inputs, None)
    }

    /// The context this condition adds for `example`, or `None` when it adds nothing.
    /// `n_posts` caps the posts shown under `profile:k` (the runner lowers it to fit the
    /// model's context); `None` means k. An example with nothing to show (an empty profile
    /// under `profile:k`, an empty rubric under `oracle`, see [`Condition::empty_material`])
    /// gets `None`, exactly as under `none`: no label over an empty list.
    ///
    /// # Errors
    /// [`EvalError::Condition`] when `inputs` lacks this example's ranked posts (`profile`) or
    /// plan (`planner`): the caller must prepare them first.
    pub fn context(
        self,
        example: &Example,
        inputs: &ConditionInputs,
        n_posts: Option<usize>,
    ) -> Result<Option<String>, EvalError> {
        match self {
            Self::None => Ok(None),
            Self::Profile { k } => {
                let posts = inputs.ranked_posts(example)?;
                if posts.is_empty() {
                    return Ok(None);
                }
                let n = n_posts.unwrap_or(k).min(k).min(posts.len());
                Ok(Some(profile_context(&posts[..n])))
            }
            Self::Planner => {
                let plan = inputs.plans.get(&example.id).ok_or_else(|| {
                    bad(
                        "planner",
                        format!(
                            "no planner output for example `{}`; run the planner before rendering",
                            example.id
                        ),
                    )
                })?;
                Ok(if plan.aspects.is_empty() {
                    None
                } else {
                    Some(planner_context(&plan.aspects))
                })
            }
            Self::Oracle if example.rubric_aspects.is_empty() => Ok(None),
            Self::Oracle => {
                let aspects: Vec<&str> =
                    example.rubric_aspects.iter().map(|a| a.aspect.as_str()).collect();
                Ok(Some(oracle_context(&aspects)))
            }
        }
    }

    /// What `example` lacks for this condition to add anything: an empty profile (no ranked
    /// posts) under `profile:k`, an empty rubric under `oracle`; `None` otherwise. Such an
    /// example is rendered as under `none` and counted (`empty_profile` / `empty_rubric` in
    /// outcomes and summaries).
    pub fn empty_material(
        self,
        example: &Example,
        inputs: &ConditionInputs,
    ) -> Option<EmptyMaterial> {
        match self {
            Self::Profile { .. }
                if inputs.ranked_posts(example).is_ok_and(<[ProfilePost]>::is_empty) =>
            {
                Some(EmptyMaterial::Profile)
            }
            Self::Oracle if example.rubric_aspects.is_empty() => Some(EmptyMaterial::Rubric),
            _ => None,
        }
    }

    /// Texts besides the question, answers and profile that this condition legitimately shows
    /// for `example` (the planner's aspects): the leakage guard treats them as visible.
    pub fn allowed_texts<'a>(self, example: &Example, inputs: &'a ConditionInputs) -> Vec<&'a str> {
        match self {
            Self::Planner => inputs
                .plans
                .get(&example.id)
                .map(|p| p.aspects.iter().map(String::as_str).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// Refuses `oracle` among `conditions` when no example of `examples` has a rubric aspect: data
/// without a scoring standard besides its label (SynthesizeMe, PRISM; `kind` names the dataset
/// kind for the message) would render every `oracle` input exactly as `none`, and the run would
/// pass for an upper bound it is not. Data where only some examples lack a rubric still runs;
/// those examples are counted as `empty_rubric`.
///
/// # Errors
/// [`EvalError::Condition`] for `oracle` over examples that all have an empty rubric.
pub fn check_oracle_material(
    conditions: &[Condition],
    examples: &[Example],
    kind: &str,
) -> Result<(), EvalError> {
    if !conditions.contains(&Condition::Oracle)
        || examples.iter().any(|e| !e.rubric_aspects.is_empty())
    {
        return Ok(());
    }
    Err(bad(
        "oracle",
        format!(
            "none of the {} examples has rubric aspects (dataset kind `{kind}`), so `oracle` would show nothing and score exactly as `none`; \
             drop `oracle` from --condition (data without a rubric has no oracle upper bound)",
            examples.len()
        ),
    ))
}

/// What an example lacks when its condition has nothing to add ([`Condition::empty_material`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyMaterial {
    /// `profile:k` on an example whose profile has no posts.
    Profile,
    /// `oracle` on an example whose rubric has no aspects.
    Rubric,
}

/// The `profile:k` context: posts best first, each labelled with its rank and category and
/// separated by a blank line. An empty `posts` means none of a non-empty profile fits the
/// model's context (an empty profile gets no context at all, see [`Condition::context`]).
pub fn profile_context(posts: &[ProfilePost]) -> String {
    let mut s = String::from("Posts this user wrote before, most relevant to the question first:");
    if posts.is_empty() {
        s.push_str("\n(none fit in the model's context)");
    }
    for (i, p) in posts.iter().enumerate() {
        s.push_str(&format!(
            "\n\n[Post {} · category: {}]\n{}",
            i + 1,
            p.category.trim(),
            p.text.trim()
        ));
    }
    s
}

/// The `planner` context: the planned aspects as a bulleted list under a label that says
/// where they come from.
pub fn planner_context(aspects: &[String]) -> String {
    let mut s = String::from(
        "This user likely expects an answer with these qualities (inferred from their past posts):",
    );
    for a in aspects {
        s.push_str("\n- ");
        s.push_str(a.trim());
    }
    s
}

/// The `oracle` context: the ground-truth aspect titles as a bulleted list under a label.
pub fn oracle_context(aspects: &[&str]) -> String {
    let mut s = String::from("This user expects an answer with these qualities:");
    for a in aspects {
        s.push_str("\n- ");
        s.push_str(a.trim());
    }
    s
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.write_str("none"),
            Self::Profile { k } => write!(f, "profile:{k}"),
            Self::Planner => f.write_str("planner"),
            Self::Oracle => f.write_str("oracle"),
        }
    }
}

/// The planner's output for one example, as the `planner` condition shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlannedAspects {
    /// Aspects to show (empty when the reply held no usable list: the example is then scored
    /// with no context and flagged `planner_failed`).
    pub aspects: Vec<String>,
    /// Why the reply held no usable list, if so.
    pub failure: Option<String>,
    /// The generator failed on this example (after its retries): the example becomes an error
    /// outcome under `planner` (counted, never scored, subject to `--max-error-rate`).
    pub error: Option<String>,
}

/// Per-example material of the `profile` and `planner` conditions, prepared before a run.
#[derive(Debug, Clone, Default)]
pub struct ConditionInputs {
    /// Example id → that user's posts, best first (as the retriever ranked them, ids attached
    /// to their own text).
    pub ranked: HashMap<String, Vec<ProfilePost>>,
    /// What the retriever was (printed in manifests), e.g. `bm25 (k1=1.2, b=0.75)`.
    pub retriever: Option<String>,
    /// Example id → planned aspects.
    pub plans: HashMap<String, PlannedAspects>,
    /// What the planner was (spec, k, decoding, plans hash), for manifests.
    pub planner: Option<serde_json::Value>,
    /// The planner's summary figures (failures, quality), copied into `planner` runs' summaries.
    pub planner_report: Option<prbench_records::PlannerReport>,
}

impl ConditionInputs {
    /// The ranked posts of `example`.
    ///
    /// # Errors
    /// [`EvalError::Condition`] when they were not prepared.
    pub fn ranked_posts(&self, example: &Example) -> Result<&[ProfilePost], EvalError> {
        self.ranked.get(&example.id).map(Vec::as_slice).ok_or_else(|| {
            bad(
                "profile",
                format!(
                    "no ranked profile for example `{}`; rank the profiles before rendering",
                    example.id
                ),
            )
        })
    }

    /// What a run manifest records about the inputs `condition` uses (`null` for `none` and
    /// `oracle`); a resumed run must match it.
    pub fn manifest_entry(&self, condition: Condition) -> serde_json::Value {
        match condition {
            Condition::Profile { k } => serde_json::json!({ "k": k, "retriever": self.retriever }),
            Condition::Planner => serde_json::json!({ "planner": self.planner }),
            _ => serde_json::Value::Null,
        }
    }

    /// Whether the planner's reply for `example` held no usable list (it is then scored with
    /// no context).
    pub fn planner_failed(&self, example: &Example) -> bool {
        self.plans.get(&example.id).is_some_and(|p| p.aspects.is_empty() && p.error.is_none())
    }

    /// Why `example` cannot be rendered under `condition` at all (the planner's generator
    /// failed on it), if so: the runner records an error outcome instead of calling the model.
    pub fn blocked(&self, condition: Condition, example: &Example) -> Option<&str> {
        match condition {
            Condition::Planner => self.plans.get(&example.id).and_then(|p| p.error.as_deref()),
            _ => None,
        }
    }
}

/// The user's whole profile rendered as a numbered list with categories: the context the
/// `profile-overlap` control baseline reads, whatever the condition under test.
pub fn full_profile_text(example: &Example) -> String {
    example
        .profile
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}. [{}] {}", i + 1, p.category, p.text))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_conditions() {
        assert_eq!(Condition::parse("none").unwrap(), Condition::None);
        assert_eq!(Condition::parse(" Oracle ").unwrap(), Condition::Oracle);
        assert_eq!(Condition::parse("planner").unwrap(), Condition::Planner);
        assert_eq!(Condition::parse("profile").unwrap(), Condition::Profile { k: 10 });
        assert_eq!(Condition::parse("profile:3").unwrap(), Condition::Profile { k: 3 });
        assert_eq!(Condition::parse("profile:k=5").unwrap(), Condition::Profile { k: 5 });
        for bad in ["profile:0", "profile:x", "profiles", "", "profile:k=1,3"] {
            assert!(Condition::parse(bad).is_err(), "{bad}");
        }
        for c in
            [Condition::None, Condition::Profile { k: 7 }, Condition::Planner, Condition::Oracle]
        {
            assert_eq!(Condition::parse(&c.to_string()).unwrap(), c);
        }
    }

    #[test]
    fn parses_a_k_sweep_inside_a_list() {
        let items: Vec<&str> = "none,profile:k=1,3,5,10,planner,oracle".split(',').collect();
        let got = Condition::parse_list(&items).unwrap();
        let k = |k| Condition::Profile { k };
        assert_eq!(
            got,
            vec![Condition::None, k(1), k(3), k(5), k(10), Condition::Planner, Condition::Oracle]
        );
        assert!(Condition::parse_list(&["none", "3"]).is_err());
        assert!(Condition::parse_list(&["profile:k=1", "1"]).is_err());
        assert!(Condition::parse_list(&["oracle", "oracle"]).is_err());
        assert!(Condition::parse_list::<&str>(&[]).is_err());
        // A bare number after planner does not continue an earlier sweep.
        assert!(Condition::parse_list(&["profile:k=2", "planner", "3"]).is_err());
        // Only the `k=` form opens a sweep: `profile:10,5` is refused, not read as 10 and 5.
        assert!(Condition::parse_list(&["profile:10", "5"]).is_err());
    }

    #[test]
    fn one_condition_errors_name_single_forms_and_lists_name_the_sweep() {
        // One condition (export, train, bon): a sweep is not among the forms offered.
        for bad in ["bogus", "none,oracle", "profile:x"] {
            let e = Condition::parse(bad).unwrap_err().to_string();
            assert!(e.contains(EXPECTED_ONE) && !e.contains("sweep"), "{bad}: {e}");
        }
        assert!(Condition::parse("none,oracle")
            .unwrap_err()
            .to_string()
            .contains("a list names several conditions"));
        // A list (eval): the sweep is.
        let e = Condition::parse_list(&["none", "bogus"]).unwrap_err().to_string();
        assert!(e.contains("`profile:k=K1,K2,…` (a sweep)"), "{e}");
    }

    #[test]
    fn oracle_is_refused_only_when_no_example_has_a_rubric() {
        let ex = |id: &str, aspects: &[&str]| {
            prbench_data::ExampleBuilder::new(id)
                .subset("prism")
                .question("q")
                .aspects(aspects.iter().map(|a| prbench_data::RubricAspect::new(*a, "", "")))
                .category("c")
                .chosen("a")
                .rejected("b")
                .user_id("u")
                .build()
        };
        let bare = [ex("x", &[]), ex("y", &[])];
        let err = check_oracle_material(&[Condition::None, Condition::Oracle], &bare, "prism")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "invalid condition `oracle`: none of the 2 examples has rubric aspects (dataset kind `prism`), so `oracle` would show nothing and score exactly as `none`; drop `oracle` from --condition (data without a rubric has no oracle upper bound)"
        );
        // Without oracle, or with one example that has a rubric, nothing is refused.
        assert!(check_oracle_material(
            &[Condition::None, Condition::Profile { k: 3 }],
            &bare,
            "prism"
        )
        .is_ok());
        assert!(check_oracle_material(
            &[Condition::Oracle],
            &[ex("x", &[]), ex("y", &["Brevity"])],
            "prb"
        )
        .is_ok());
    }

    #[test]
    fn profile_context_labels_rank_and_category() {
        let post = |id: &str, cat: &str, text: &str| ProfilePost {
            id: id.into(),
            category: cat.into(),
            text: text.into(),
        };
        let s = profile_context(&[post("9", "Art", "second best"), post("2", "Books", "third")]);
        assert_eq!(
            s,
            "Posts this user wrote before, most relevant to the question first:\n\n[Post 1 · category: Art]\nsecond best\n\n[Post 2 · category: Books]\nthird"
        );
    }
}
