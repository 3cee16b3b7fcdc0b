//! The benchmark's row schema (PROTOCOL.md §1), shared by every loader and adapter.

use serde::{Deserialize, Serialize};

/// One post from a user's history (LaMP-QA profile item). `id` stays attached to its own
/// `text` through every ranking step (PROTOCOL.md §10, defect 10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfilePost {
    /// Post id, unique within one profile.
    pub id: String,
    /// Forum category the post was written in.
    pub category: String,
    /// Post body.
    pub text: String,
}

/// One hidden rubric aspect: part of the scoring standard, shown to a reward model only under
/// the `oracle` condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RubricAspect {
    /// Short title of what the user expects (the text the oracle condition shows).
    pub aspect: String,
    /// Where in the profile the expectation comes from.
    pub evidence: String,
    /// Why the aspect matters to this user.
    pub reason: String,
}

/// One benchmark example: a question, the asking user's profile, the hidden rubric, and a
/// chosen/rejected answer pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Example {
    /// Example id, unique within a dataset.
    pub id: String,
    /// Long subset (config) name, e.g. `Art_and_Entertainment`, or the source file stem for
    /// adapted data (e.g. `friendly_unfriendly` for P-Soups).
    pub subset: String,
    /// The user's question.
    pub question: String,
    /// The user's past posts, in dataset order.
    pub profile: Vec<ProfilePost>,
    /// Hidden rubric aspects (scoring standard).
    pub rubric_aspects: Vec<RubricAspect>,
    /// Hidden narrative describing what this user expects (scoring standard).
    pub narrative: String,
    /// Question category as given by the dataset.
    pub category: String,
    /// Answer that follows the rubric.
    pub chosen: String,
    /// Answer that violates the rubric while staying high quality.
    pub rejected: String,
    /// The user who asked, where the dataset knows one (SynthesizeMe's and PRISM's `user_id`):
    /// per-user models read it, and the bootstrap resamples users rather than examples when it
    /// is known (PROTOCOL.md §5). Personalized-RewardBench has no user id (each row is its own
    /// user, with its own profile), so PRB rows carry `None`. Serialized only when present, so
    /// PRB rows keep exactly PRB's fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

impl Example {
    /// Every hidden text of this example (narrative, and each aspect's title, evidence and
    /// reason): the strings the leakage guard keeps out of non-oracle inputs.
    pub fn hidden_texts(&self) -> Vec<&str> {
        let mut out = vec![self.narrative.as_str()];
        for a in &self.rubric_aspects {
            out.extend([a.aspect.as_str(), a.evidence.as_str(), a.reason.as_str()]);
        }
        out
    }
}

/// The three Personalized-RewardBench configs: long (config) name and short (report) name.
pub const PRB_SUBSETS: [(&str, &str); 3] = [
    ("Art_and_Entertainment", "Art"),
    ("Lifestyle_and_Personal_Development", "Lifestyle"),
    ("Society_and_Culture", "Society"),
];

/// Resolves a user-typed subset name (long or short, case-insensitive) to the long config name.
/// Names that are not PRB configs (adapted data) are returned unchanged.
pub fn canonical_subset(name: &str) -> String {
    PRB_SUBSETS
        .iter()
        .find(|(long, short)| long.eq_ignore_ascii_case(name) || short.eq_ignore_ascii_case(name))
        .map(|(long, _)| long.to_string())
        .unwrap_or_else(|| name.to_string())
}

/// Short report name of a subset (`Art`, `Lifestyle`, `Society`), or the name itself.
pub fn short_subset(name: &str) -> &str {
    PRB_SUBSETS.iter().find(|(long, _)| *long == name).map(|(_, short)| *short).unwrap_or(name)
}

/// A loaded, validated dataset plus the provenance a run manifest records.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Examples in load order (subsets in PRB config order, rows in file order).
    pub examples: Vec<Example>,
    /// Human-readable source, e.g. `data/sample` or `psoups:../shared/data/alignx-psoups`.
    pub source: String,
    /// What kind of data this is (`prb`, or an adapter name such as `psoups`): reports mark
    /// adapted data as not being Personalized-RewardBench.
    pub kind: String,
    /// sha256 (hex) over the files read, in read order (name and bytes of each file).
    pub hash: String,
    /// For a dataset file written by `prbench retrieve`: the retriever that ranked every
    /// profile (its description, e.g. `bm25 (k1=1.2, b=0.75, …)`); each example's `profile` is
    /// then in ranked order, best first. `None` for unranked data (profiles in dataset order).
    pub profile_ranking: Option<String>,
}

/// Row field of a ranked dataset file (`prbench retrieve`): `{"retriever": <description>,
/// "post_ids": [...], "scores": [...]}`, `post_ids` equal to the row's profile ids in order and
/// `scores` (same length, non-increasing) the retriever's scores. All rows carry it or none.
pub const PROFILE_RANKING_FIELD: &str = "profile_ranking";

/// Row field naming the dataset kind (`prb`, `psoups`, …) of data re-written by prbench, so
/// adapted data stays marked as not being Personalized-RewardBench; when present it sets
/// [`Dataset::kind`]. All rows carry it (with one value) or none.
pub const DATASET_KIND_FIELD: &str = "dataset_kind";

/// Optional row field (JSON/JSONL) and column (parquet) holding [`Example::user_id`]: a
/// non-empty string; absent or null means no user id. PRB files have no such column, and the
/// export writes it only for data that has user ids.
pub const USER_ID_FIELD: &str = "user_id";
