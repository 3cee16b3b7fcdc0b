//! The report's numbers, computed from a [`Store`].

use std::collections::BTreeMap;

use prbench_stats::accuracy::Ratio;
use prbench_stats::bootstrap::{bootstrap_ci, BootstrapConfig, Stat};
use serde::Serialize;

use crate::agreement::{
    agreement, alpha, bootstrap_alpha, AgreementConfig, AgreementReport, AlphaBootstrapConfig,
    Level, LevelAgreement, Rating, Ratings, ReliabilityData,
};
use crate::dims::Dimension;
use crate::error::AnnotateError;
use crate::export;
use crate::store::{RatedItem, Store};

/// Settings of [`build`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReportConfig {
    /// Bootstrap resamples of every CI.
    pub resamples: usize,
    /// Bootstrap seed.
    pub seed: u64,
}

impl Default for ReportConfig {
    fn default() -> Self {
        ReportConfig { resamples: 1_000, seed: 42 }
    }
}

/// A mean with its 95% bootstrap CI over items.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeanCi {
    /// The mean over all ratings.
    pub mean: f64,
    /// Lower end of the 95% CI.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// Ratings averaged.
    pub n: usize,
}

/// One subset's row of the human-evaluation table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumanEvalRow {
    /// The subset, or `all`.
    pub subset: String,
    /// Items with at least one rating.
    pub items: usize,
    /// Per dimension ([`Dimension::ALL`] order): chosen's and rejected's mean score.
    pub dims: Vec<(Dimension, Option<MeanCi>, Option<MeanCi>)>,
}

/// How often the raters' "fits the user better" agrees with the label, in one subset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelRow {
    /// The subset, or `all`.
    pub subset: String,
    /// The share of judgements (annotator × item) that pick the chosen answer.
    pub prefers_chosen: Option<MeanCi>,
    /// Items rated.
    pub items: usize,
    /// Items whose raters' majority picks chosen.
    pub majority_chosen: usize,
    /// Items whose raters' majority picks rejected.
    pub majority_rejected: usize,
    /// Items whose raters split evenly.
    pub split: usize,
}

/// An item whose raters' majority picks the rejected answer, or splits evenly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disagreement {
    /// The item.
    pub item_id: String,
    /// Its subset.
    pub subset: String,
    /// Raters who picked chosen.
    pub votes_chosen: usize,
    /// Raters who picked rejected.
    pub votes_rejected: usize,
    /// Mean rubric fit the raters gave chosen.
    pub fit_chosen: f64,
    /// Mean rubric fit the raters gave rejected.
    pub fit_rejected: f64,
    /// The question.
    pub question: String,
    /// The user's rubric aspects.
    pub aspects: Vec<String>,
    /// The chosen answer.
    pub chosen: String,
    /// The rejected answer.
    pub rejected: String,
    /// Each rater's judgement: (annotator, picked chosen?, rubric fit of chosen, of rejected,
    /// comment on chosen, comment on rejected).
    pub raters: Vec<(String, bool, u8, u8, String, String)>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnotationReport {
    /// The dataset's source when the folder was made.
    pub source: String,
    /// Its sha256.
    pub dataset_hash: String,
    /// Annotators per item.
    pub per_item: usize,
    /// Assignment seed.
    pub seed: String,
    /// Each annotator's (name, items rated, items assigned).
    pub annotators: Vec<(String, usize, usize)>,
    /// Items in the folder.
    pub items: usize,
    /// The human-evaluation table: one row per subset (dataset order), then `all` when there
    /// are several.
    pub human_eval: Vec<HumanEvalRow>,
    /// Agreement per dimension (`None` before the first rating).
    pub agreement: Option<AgreementReport>,
    /// Alpha (nominal) of the "fits better" choice, units = items.
    pub preference: LevelAgreement,
    /// Items rated by two or more annotators (the units of [`AnnotationReport::preference`]).
    pub preference_units: usize,
    /// Label agreement per subset, then `all`.
    pub label: Vec<LabelRow>,
    /// Items where the raters disagree with the label.
    pub disagreements: Vec<Disagreement>,
    /// Bootstrap settings used.
    pub config: ReportConfig,
}

fn mean_ci(items: &[Ratio], cfg: &ReportConfig) -> Option<MeanCi> {
    let (num, den) = items.iter().fold((0.0, 0.0), |(n, d), r| (n + r.num, d + r.den));
    if den == 0.0 {
        return None;
    }
    let bc = BootstrapConfig { resamples: cfg.resamples, seed: cfg.seed, level: 0.95 };
    let ci = bootstrap_ci(items, &[], &bc, Stat::Micro)?;
    Some(MeanCi { mean: num / den, lo: ci.lo, hi: ci.hi, n: den as usize })
}

/// Ratings grouped by item, items in dataset order.
struct ByItem<'a> {
    order: Vec<(String, String)>,
    ratings: BTreeMap<&'a str, Vec<&'a RatedItem>>,
}

impl<'a> ByItem<'a> {
    fn of(items: &[prbench_data::Example], ratings: &'a [RatedItem]) -> Self {
        let mut by: BTreeMap<&str, Vec<&RatedItem>> = BTreeMap::new();
        for r in ratings {
            by.entry(r.item_id.as_str()).or_default().push(r);
        }
        ByItem {
            order: items.iter().map(|e| (e.id.clone(), e.subset.clone())).collect(),
            ratings: by,
        }
    }

    /// The rated items of `subset` (`None`: all), each with its ratings.
    fn items(&self, subset: Option<&str>) -> Vec<&Vec<&'a RatedItem>> {
        self.order
            .iter()
            .filter(|(_, s)| subset.is_none_or(|want| want == s))
            .filter_map(|(id, _)| self.ratings.get(id.as_str()))
            .collect()
    }
}

fn human_eval_row(subset: &str, items: &[&Vec<&RatedItem>], cfg: &ReportConfig) -> HumanEvalRow {
    let dims = Dimension::ALL
        .into_iter()
        .map(|d| {
            let side = |chosen: bool| -> Vec<Ratio> {
                items
                    .iter()
                    .map(|rs| Ratio {
                        num: rs.iter().map(|r| f64::from(r.answer(chosen).score(d))).sum(),
                        den: rs.len() as f64,
                    })
                    .collect()
            };
            (d, mean_ci(&side(true), cfg), mean_ci(&side(false), cfg))
        })
        .collect();
    HumanEvalRow { subset: subset.to_string(), items: items.len(), dims }
}

fn label_row(subset: &str, items: &[&Vec<&RatedItem>], cfg: &ReportConfig) -> LabelRow {
    let shares: Vec<Ratio> = items
        .iter()
        .map(|rs| Ratio {
            num: rs.iter().filter(|r| r.prefers_chosen()).count() as f64,
            den: rs.len() as f64,
        })
        .collect();
    let (mut mc, mut mr, mut split) = (0, 0, 0);
    for rs in items {
        let yes = rs.iter().filter(|r| r.prefers_chosen()).count();
        match (2 * yes).cmp(&rs.len()) {
            std::cmp::Ordering::Greater => mc += 1,
            std::cmp::Ordering::Less => mr += 1,
            std::cmp::Ordering::Equal => split += 1,
        }
    }
    LabelRow {
        subset: subset.to_string(),
        prefers_chosen: mean_ci(&shares, cfg),
        items: items.len(),
        majority_chosen: mc,
        majority_rejected: mr,
        split,
    }
}

/// Computes the report of `store` (module docs).
///
/// # Errors
/// The store's errors; [`AnnotateError::Items`] if the bootstrap settings are out of range.
pub fn build(store: &Store, cfg: &ReportConfig) -> Result<AnnotationReport, AnnotateError> {
    let items = store.items()?;
    let ratings = store.ratings()?;
    let by = ByItem::of(&items, &ratings);
    let mut subsets: Vec<String> = Vec::new();
    for e in &items {
        if !subsets.contains(&e.subset) {
            subsets.push(e.subset.clone());
        }
    }
    let mut groups: Vec<(String, Option<&str>)> =
        subsets.iter().map(|s| (s.clone(), Some(s.as_str()))).collect();
    if subsets.len() > 1 {
        groups.push(("all".into(), None));
    }
    let human_eval =
        groups.iter().map(|(name, s)| human_eval_row(name, &by.items(*s), cfg)).collect();
    let label = groups.iter().map(|(name, s)| label_row(name, &by.items(*s), cfg)).collect();

    // Agreement: the same path as `annotate agreement` on the export's four columns.
    let mut w = csv::Writer::from_writer(Vec::new());
    let io = |e: csv::Error| AnnotateError::Io {
        path: store.path().to_path_buf(),
        source: std::io::Error::other(e),
    };
    w.write_record(crate::agreement::REQUIRED_COLUMNS).map_err(io)?;
    for r in export::rows(&ratings) {
        w.write_record([r.annotator.as_str(), r.unit.as_str(), r.dimension, &r.score.to_string()])
            .map_err(io)?;
    }
    let csv = w.into_inner().map_err(|e| io(e.into_error().into()))?;
    let boot = AlphaBootstrapConfig::new(cfg.resamples, cfg.seed, 0.95)
        .map_err(|e| AnnotateError::Items(e.to_string()))?;
    let agreement_report = if ratings.is_empty() {
        None
    } else {
        let parsed = Ratings::from_csv_reader("annotate export", csv.as_slice())
            .map_err(|e| AnnotateError::Items(format!("the export does not read back: {e}")))?;
        Some(agreement(&parsed, &AgreementConfig { bootstrap: boot }))
    };

    let pref_units: Vec<(String, Vec<Rating>)> = by
        .items(None)
        .into_iter()
        .map(|rs| {
            (
                rs[0].item_id.clone(),
                rs.iter()
                    .map(|r| {
                        Rating::new(r.annotator.clone(), f64::from(u8::from(r.prefers_chosen())))
                    })
                    .collect(),
            )
        })
        .collect();
    let pref_data =
        ReliabilityData::new(pref_units).map_err(|e| AnnotateError::Items(e.to_string()))?;
    let preference = LevelAgreement {
        alpha: alpha(&pref_data, Level::Nominal),
        bootstrap: bootstrap_alpha(&pref_data, &[Level::Nominal], &boot).remove(0),
    };

    let mut disagreements = Vec::new();
    for e in &items {
        let Some(rs) = by.ratings.get(e.id.as_str()) else {
            continue;
        };
        let yes = rs.iter().filter(|r| r.prefers_chosen()).count();
        if 2 * yes > rs.len() {
            continue;
        }
        let fit = |chosen: bool| {
            rs.iter().map(|r| f64::from(r.answer(chosen).rubric_fit)).sum::<f64>() / rs.len() as f64
        };
        disagreements.push(Disagreement {
            item_id: e.id.clone(),
            subset: e.subset.clone(),
            votes_chosen: yes,
            votes_rejected: rs.len() - yes,
            fit_chosen: fit(true),
            fit_rejected: fit(false),
            question: e.question.clone(),
            aspects: e.rubric_aspects.iter().map(|a| a.aspect.clone()).collect(),
            chosen: e.chosen.clone(),
            rejected: e.rejected.clone(),
            raters: rs
                .iter()
                .map(|r| {
                    (
                        r.annotator.clone(),
                        r.prefers_chosen(),
                        r.answer(true).rubric_fit,
                        r.answer(false).rubric_fit,
                        r.answer(true).comment.clone(),
                        r.answer(false).comment.clone(),
                    )
                })
                .collect(),
        });
    }

    let mut annotators = Vec::new();
    for name in store.annotators()? {
        let p = store.progress(&name)?;
        annotators.push((name, p.done, p.total));
    }
    Ok(AnnotationReport {
        source: store.meta("dataset_source")?,
        dataset_hash: store.meta("dataset_hash")?,
        per_item: store.meta("per_item")?.parse().map_err(|e| AnnotateError::Corrupt {
            path: store.path().to_path_buf(),
            detail: format!("its per_item is not a whole number: {e}"),
        })?,
        seed: store.meta("seed")?,
        annotators,
        items: items.len(),
        human_eval,
        agreement: agreement_report,
        preference,
        preference_units: pref_data.n_pairable_units(),
        label,
        disagreements,
        config: *cfg,
    })
}
