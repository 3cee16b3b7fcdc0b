//! The data the report's item browser and run-vs-run view read: runs, the items' texts (only
//! the posts some run showed, not whole profiles), one record per outcome, and every pair of
//! runs' 2×2 agreement with its exact McNemar p (computed here, by prbench-stats, not in the
//! page). Serialised once into the page as JSON.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use prbench_data::Dataset;
use prbench_records::outcome::{Choice, Outcome, Verdict};
use prbench_stats::paired::mcnemar_exact;
use prbench_stats::ItemResult;
use serde::Serialize;

use crate::error::{ReportError, Result};
use crate::plots::short_model;
use crate::sources::{Metric, RunSource};

/// One run as the page lists it.
#[derive(Debug, Serialize)]
pub struct RunEntry {
    /// Run folder name.
    pub id: String,
    /// Model spec.
    pub model: String,
    /// Shortened spec for labels.
    pub short: String,
    /// Condition.
    pub condition: String,
    /// Upper bound (`oracle`).
    pub oracle: bool,
    /// A control baseline run.
    pub baseline: bool,
    /// Index into [`Payload::datasets`].
    pub dataset: usize,
    /// The metrics its outcomes carry.
    pub metrics: Vec<Metric>,
}

/// One dataset the runs were made on.
#[derive(Debug, Serialize)]
pub struct DatasetEntry {
    /// Source spec.
    pub source: String,
    /// sha256.
    pub hash: String,
    /// Kind (`prb`, `psoups`, …).
    pub kind: String,
}

/// One example's texts.
#[derive(Debug, Serialize)]
pub struct ItemEntry {
    /// Dataset index.
    pub d: usize,
    /// Example id.
    pub id: String,
    /// Long subset name.
    pub subset: String,
    /// The asking user, for data with user ids (SynthesizeMe, PRISM); left out otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Question.
    pub q: String,
    /// `chosen` answer.
    pub chosen: String,
    /// `rejected` answer.
    pub rejected: String,
    /// Hidden rubric aspects: (aspect, evidence, reason).
    pub rubric: Vec<(String, String, String)>,
    /// Hidden narrative.
    pub narrative: String,
    /// Posts some run showed or dropped: id → (category, text).
    pub posts: BTreeMap<String, (String, String)>,
}

/// A judge verdict as the page shows it: the outcome's verdict without its token counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictEntry {
    /// `A`, `B`, `Tie` or `Unparsed`.
    pub choice: Choice,
    /// Probability of A for logprob verdicts.
    pub p_a: Option<f64>,
    /// log p(A) − log p(B), nats, for logprob verdicts.
    pub margin: Option<f64>,
    /// The raw reply (generate verdicts) or a description of the log-probabilities.
    pub raw: String,
}

/// The `f64` a JSON reader would take from the digits `outcomes.jsonl` holds for `x` (written
/// as the shortest decimal that reads back as the `f32`), so the page shows the file's value,
/// not the `f32`'s binary expansion.
fn widen(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

impl From<&Verdict> for VerdictEntry {
    fn from(v: &Verdict) -> Self {
        VerdictEntry {
            choice: v.choice,
            p_a: v.p_a.map(widen),
            margin: v.margin.map(widen),
            raw: v.raw.clone(),
        }
    }
}

/// One outcome record for the page.
#[derive(Debug, Serialize)]
pub struct OutcomeEntry {
    /// Run index.
    pub r: usize,
    /// Item index.
    pub i: usize,
    /// Primary result.
    pub res: ItemResult,
    /// Both-orders result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bo: Option<ItemResult>,
    /// Position-debiased result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db: Option<ItemResult>,
    /// Slot of chosen (`A`/`B`) for judges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<prbench_stats::Slot>,
    /// Verdict, primary order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub v: Option<VerdictEntry>,
    /// Verdict, swapped order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sv: Option<VerdictEntry>,
    /// Score of chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sc: Option<f64>,
    /// Score of rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sr: Option<f64>,
    /// Top-k post ids (shown first, then dropped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<String>,
    /// Posts shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ps: Option<usize>,
    /// Backend error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub err: Option<String>,
    /// Input tokens.
    pub tin: usize,
    /// Truncated tokens.
    pub ttr: usize,
    /// Planner runs: the planned aspects the model saw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Vec<String>>,
}

/// Two runs on the same items under one metric.
#[derive(Debug, Serialize)]
pub struct PairEntry {
    /// First run index.
    pub a: usize,
    /// Second run index.
    pub b: usize,
    /// The metric both runs carry.
    pub metric: Metric,
    /// Items both runs evaluated (by example id).
    pub n: usize,
    /// Correct under both.
    pub both: u64,
    /// Correct under `a` only.
    pub only_a: u64,
    /// Correct under `b` only.
    pub only_b: u64,
    /// Correct under neither.
    pub neither: u64,
    /// Two-sided exact McNemar p on the discordant items.
    pub p: f64,
}

/// Everything the page's scripts read.
#[derive(Debug, Serialize)]
pub struct Payload {
    /// Runs with outcomes.
    pub runs: Vec<RunEntry>,
    /// Datasets.
    pub datasets: Vec<DatasetEntry>,
    /// Items.
    pub items: Vec<ItemEntry>,
    /// Outcomes, run-major.
    pub outcomes: Vec<OutcomeEntry>,
    /// Pairs of runs on one dataset.
    pub pairs: Vec<PairEntry>,
}

fn metrics_of(o: &[Outcome]) -> Vec<Metric> {
    let mut m = vec![Metric::Primary];
    if !o.is_empty() && o.iter().all(|o| o.both_orders_result.is_some()) {
        m.push(Metric::BothOrders);
    }
    if !o.is_empty() && o.iter().all(|o| o.debiased_result.is_some()) {
        m.push(Metric::Debiased);
    }
    m
}

/// Builds the payload. `data` lists where datasets the runs were made on are now
/// (`prbench report --data`, one per dataset; empty: where the runs' manifests say), matched to
/// the runs by content hash.
///
/// # Errors
/// [`ReportError::Dataset`] when a run's dataset is found nowhere (each place tried is named,
/// with its content hash); [`ReportError::UnusedData`] for a `data` entry no run was made on;
/// [`ReportError::Layout`] when an outcome names an example the dataset lacks.
pub fn build(runs: &[RunSource], data: &[String]) -> Result<Payload> {
    build_with(runs, data, &mut Vec::new())
}

/// [`build`] with datasets already in memory: `cache` is searched by content hash before a
/// dataset is read, and what is read is added to it (owned). `eval` starts it with the dataset
/// it evaluated (borrowed, so the report reads no file again) and renders one report per run
/// and one of all runs from it.
///
/// # Errors
/// As [`build`].
pub fn build_with(
    runs: &[RunSource],
    data: &[String],
    cache: &mut Vec<Cow<'_, Dataset>>,
) -> Result<Payload> {
    let mut finder = super::datasets::Finder::new(data);
    let mut datasets: Vec<DatasetEntry> = Vec::new();
    // Per entry of `datasets`: its index in `cache`.
    let mut loaded: Vec<usize> = Vec::new();
    let mut entries = Vec::new();
    for run in runs {
        let hash = &run.summary.dataset_hash;
        let d = match datasets.iter().position(|d| &d.hash == hash) {
            Some(d) => d,
            None => {
                let c = finder.find(run, cache)?;
                datasets.push(DatasetEntry {
                    source: run.summary.dataset.clone(),
                    hash: hash.clone(),
                    kind: run.summary.dataset_kind.clone(),
                });
                loaded.push(c);
                datasets.len() - 1
            }
        };
        entries.push(RunEntry {
            id: run
                .dir
                .file_name()
                .map_or_else(|| run.summary.run_id.clone(), |n| n.to_string_lossy().into_owned()),
            model: run.summary.model.clone(),
            short: short_model(&run.summary.model),
            condition: run.summary.condition.clone(),
            oracle: run.summary.oracle,
            baseline: run.is_baseline(),
            dataset: d,
            metrics: metrics_of(&run.outcomes),
        });
    }
    // Items that some run evaluated, in dataset order, with the posts any run listed.
    let mut wanted: Vec<HashMap<&str, BTreeSet<&str>>> = vec![HashMap::new(); loaded.len()];
    for (run, e) in runs.iter().zip(&entries) {
        for o in &run.outcomes {
            wanted[e.dataset]
                .entry(o.example_id.as_str())
                .or_default()
                .extend(o.post_ids.iter().map(String::as_str));
        }
    }
    let mut items = Vec::new();
    let mut index: Vec<HashMap<String, usize>> = vec![HashMap::new(); loaded.len()];
    for (d, ds) in loaded.iter().map(|&c| &*cache[c]).enumerate() {
        for ex in &ds.examples {
            let Some(posts) = wanted[d].get(ex.id.as_str()) else { continue };
            index[d].insert(ex.id.clone(), items.len());
            items.push(ItemEntry {
                d,
                id: ex.id.clone(),
                subset: ex.subset.clone(),
                user: ex.user_id.clone(),
                q: ex.question.clone(),
                chosen: ex.chosen.clone(),
                rejected: ex.rejected.clone(),
                rubric: ex
                    .rubric_aspects
                    .iter()
                    .map(|a| (a.aspect.clone(), a.evidence.clone(), a.reason.clone()))
                    .collect(),
                narrative: ex.narrative.clone(),
                posts: ex
                    .profile
                    .iter()
                    .filter(|p| posts.contains(p.id.as_str()))
                    .map(|p| (p.id.clone(), (p.category.clone(), p.text.clone())))
                    .collect(),
            });
        }
    }
    let mut outcomes = Vec::new();
    for (r, (run, e)) in runs.iter().zip(&entries).enumerate() {
        for (line, o) in run.outcomes.iter().enumerate() {
            let i = *index[e.dataset].get(&o.example_id).ok_or_else(|| ReportError::Layout {
                path: run.dir.join("outcomes.jsonl"),
                reason: format!(
                    "line {}: example `{}` is not in dataset `{}`",
                    line + 1,
                    o.example_id,
                    run.summary.dataset
                ),
            })?;
            outcomes.push(OutcomeEntry {
                r,
                i,
                res: o.result,
                bo: o.both_orders_result,
                db: o.debiased_result,
                slot: o.chosen_slot,
                v: o.verdict.as_ref().map(VerdictEntry::from),
                sv: o.swapped_verdict.as_ref().map(VerdictEntry::from),
                sc: o.score_chosen.map(widen),
                sr: o.score_rejected.map(widen),
                pids: o.post_ids.clone(),
                ps: o.posts_shown,
                err: o.error.clone(),
                tin: o.input_tokens,
                ttr: o.truncated_tokens,
                plan: (run.summary.condition == "planner")
                    .then(|| run.plans.get(&o.example_id).cloned().unwrap_or_default()),
            });
        }
    }
    finder.check_all_used()?;
    let pairs = pairs(runs, &entries);
    Ok(Payload { runs: entries, datasets, items, outcomes, pairs })
}

/// The 2×2 table and exact McNemar p of every pair of runs on one dataset, per metric both
/// carry, on the items both evaluated.
pub fn pairs(runs: &[RunSource], entries: &[RunEntry]) -> Vec<PairEntry> {
    let by_id: Vec<HashMap<&str, &Outcome>> = runs
        .iter()
        .map(|r| r.outcomes.iter().map(|o| (o.example_id.as_str(), o)).collect())
        .collect();
    let mut out = Vec::new();
    for a in 0..runs.len() {
        for b in a + 1..runs.len() {
            if entries[a].dataset != entries[b].dataset {
                continue;
            }
            for &metric in entries[a].metrics.iter().filter(|m| entries[b].metrics.contains(m)) {
                let (mut both, mut only_a, mut only_b, mut neither, mut n) =
                    (0u64, 0u64, 0u64, 0u64, 0usize);
                for o in &runs[a].outcomes {
                    let Some(p) = by_id[b].get(o.example_id.as_str()) else { continue };
                    let (Some(x), Some(y)) = (metric.of(o), metric.of(p)) else {
                        continue;
                    };
                    n += 1;
                    match (x == ItemResult::Correct, y == ItemResult::Correct) {
                        (true, true) => both += 1,
                        (true, false) => only_a += 1,
                        (false, true) => only_b += 1,
                        (false, false) => neither += 1,
                    }
                }
                if n > 0 {
                    out.push(PairEntry {
                        a,
                        b,
                        metric,
                        n,
                        both,
                        only_a,
                        only_b,
                        neither,
                        p: mcnemar_exact(only_a, only_b).p_value,
                    });
                }
            }
        }
    }
    out
}

/// The payload as JSON safe to place inside `<script type="application/json">`: `<`, `>` and
/// `&` become `\u003c`, `\u003e`, `\u0026` (they can occur only inside JSON strings, where the
/// escapes mean the same), and U+2028/U+2029 are escaped, so no text from data can end the
/// script element.
pub fn to_script_json<T: Serialize>(value: &T) -> serde_json::Result<String> {
    let raw = serde_json::to_vec(value)?;
    let mut out = String::with_capacity(raw.len() + raw.len() / 50);
    escape_script(&raw, &mut out);
    Ok(out)
}

/// [`to_script_json`] of a [`Payload`], the same bytes, with `items` and `outcomes` (nearly all
/// of it: every shown text) serialised and escaped in parallel chunks. serde_json's compact
/// form of a struct is `{"field":value,…}` in declaration order and of a sequence
/// `[a,b,…]`, each element's text independent of its neighbours, and the escaping maps bytes
/// one at a time, so the chunks joined are the whole.
pub fn payload_script_json(p: &Payload) -> serde_json::Result<String> {
    Ok(payload_script_parts(p)?.concat())
}

/// [`payload_script_json`] as the consecutive pieces it is made of, not copied into one string
/// (the report writes them to its file one after another).
pub(crate) fn payload_script_parts(p: &Payload) -> serde_json::Result<Vec<String>> {
    use rayon::prelude::*;
    /// Elements per parallel chunk.
    const CHUNK: usize = 64;
    /// `[`, the elements of `v` separated by `,`, `]`, as pieces.
    fn sequence<T: Serialize + Sync>(v: &[T]) -> serde_json::Result<Vec<String>> {
        let chunks: Vec<String> = v
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(k, chunk)| {
                let mut raw = Vec::new();
                for (i, x) in chunk.iter().enumerate() {
                    if k > 0 || i > 0 {
                        raw.push(b',');
                    }
                    serde_json::to_writer(&mut raw, x)?;
                }
                Ok(escape_script_owned(raw))
            })
            .collect::<serde_json::Result<_>>()?;
        let mut parts = Vec::with_capacity(chunks.len() + 2);
        parts.push("[".to_string());
        parts.extend(chunks);
        parts.push("]".to_string());
        Ok(parts)
    }
    let (items, outcomes) = rayon::join(|| sequence(&p.items), || sequence(&p.outcomes));
    let mut parts = vec![format!(
        "{{\"runs\":{},\"datasets\":{},\"items\":",
        to_script_json(&p.runs)?,
        to_script_json(&p.datasets)?
    )];
    parts.extend(items?);
    parts.push(",\"outcomes\":".to_string());
    parts.extend(outcomes?);
    parts.push(format!(",\"pairs\":{}}}", to_script_json(&p.pairs)?));
    Ok(parts)
}

/// `raw` (UTF-8 JSON) escaped by [`escape_script`], reusing its buffer when nothing needs an
/// escape.
fn escape_script_owned(raw: Vec<u8>) -> String {
    let clean = !raw.iter().any(|&b| matches!(b, b'<' | b'>' | b'&' | 0xE2));
    match clean {
        true => String::from_utf8(raw).expect("serde_json writes UTF-8"),
        false => {
            let mut out = String::with_capacity(raw.len() + raw.len() / 50);
            escape_script(&raw, &mut out);
            out
        }
    }
}

/// Appends `raw` (UTF-8 JSON) to `out` with `<`, `>`, `&`, U+2028 and U+2029 escaped as
/// [`to_script_json`] says, copying the runs between them whole.
fn escape_script(raw: &[u8], out: &mut String) {
    let mut start = 0;
    let mut i = 0;
    while i < raw.len() {
        let (len, escape) = match raw[i] {
            b'<' => (1, "\\u003c"),
            b'>' => (1, "\\u003e"),
            b'&' => (1, "\\u0026"),
            // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
            0xE2 if raw.get(i + 1) == Some(&0x80) && raw.get(i + 2) == Some(&0xA8) => {
                (3, "\\u2028")
            }
            0xE2 if raw.get(i + 1) == Some(&0x80) && raw.get(i + 2) == Some(&0xA9) => {
                (3, "\\u2029")
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(
            std::str::from_utf8(&raw[start..i])
                .expect("serde_json writes UTF-8, cut at a character"),
        );
        out.push_str(escape);
        i += len;
        start = i;
    }
    out.push_str(std::str::from_utf8(&raw[start..]).expect("serde_json writes UTF-8"));
}

#[cfg(test)]
mod tests {
    use super::to_script_json;

    /// The chunked, parallel serialisation gives serde_json's bytes, escaped, for a payload
    /// with more items and outcomes than one chunk, texts that need every escape and chunks
    /// that need none.
    #[test]
    fn payload_script_json_equals_the_whole_payload_escaped() {
        use super::*;
        let texts = ["plain", "</script> & <b>", "line\u{2028}sep\u{2029}", "é ✓ \"q\" \\ \n", ""];
        let items: Vec<ItemEntry> = (0..150)
            .map(|k| ItemEntry {
                d: k % 2,
                id: format!("ex-{k}"),
                subset: texts[k % 5].into(),
                user: (k % 3 == 0).then(|| format!("u{k}")),
                q: texts[(k + 1) % 5].into(),
                chosen: texts[(k + 2) % 5].repeat(k % 4),
                rejected: "r".into(),
                rubric: vec![(texts[k % 5].into(), "e".into(), "r".into())],
                narrative: String::new(),
                posts: [(format!("p{k}"), ("c".to_string(), texts[(k + 3) % 5].to_string()))]
                    .into_iter()
                    .collect(),
            })
            .collect();
        let outcomes: Vec<OutcomeEntry> = (0..130)
            .map(|k| OutcomeEntry {
                r: k % 3,
                i: k,
                res: ItemResult::Correct,
                bo: (k % 2 == 0).then_some(ItemResult::Wrong),
                db: None,
                slot: None,
                v: None,
                sv: None,
                sc: Some(k as f64 / 7.0),
                sr: None,
                pids: vec![format!("p{k}")],
                ps: Some(k),
                // Only the first chunk of outcomes needs an escape; the others are kept as written.
                err: (k < 10).then(|| texts[1].to_string()),
                tin: k,
                ttr: 0,
                plan: None,
            })
            .collect();
        let p = Payload {
            runs: vec![RunEntry {
                id: "r<1>".into(),
                model: "m".into(),
                short: "m".into(),
                condition: "none".into(),
                oracle: false,
                baseline: true,
                dataset: 0,
                metrics: vec![Metric::Primary],
            }],
            datasets: vec![DatasetEntry {
                source: "a&b".into(),
                hash: "h".into(),
                kind: "prb".into(),
            }],
            items,
            outcomes,
            pairs: Vec::new(),
        };
        let whole = serde_json::to_string(&p).unwrap();
        let mut escaped = String::new();
        for ch in whole.chars() {
            match ch {
                '<' => escaped.push_str("\\u003c"),
                '>' => escaped.push_str("\\u003e"),
                '&' => escaped.push_str("\\u0026"),
                '\u{2028}' => escaped.push_str("\\u2028"),
                '\u{2029}' => escaped.push_str("\\u2029"),
                c => escaped.push(c),
            }
        }
        assert!(
            whole.contains('\u{2028}') && whole.contains('<'),
            "the test must need the escapes"
        );
        assert_eq!(payload_script_json(&p).unwrap(), escaped);
        assert_eq!(to_script_json(&p).unwrap(), escaped);
    }

    #[test]
    fn script_json_cannot_end_its_script_element_and_parses_back() {
        let text = "</script><script>alert(1)</script> & <!-- \u{2028}";
        let json = to_script_json(&serde_json::json!({ "t": text })).unwrap();
        assert!(
            !json.contains('<')
                && !json.contains('>')
                && !json.contains('&')
                && !json.contains('\u{2028}'),
            "{json}"
        );
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["t"], text);
    }
}
