//! The human-evaluation report of an annotation folder (`prbench annotate report`):
//!
//! - the paper's human-evaluation table (Personalized RewardBench §3.3): the mean of each
//!   dimension with its 95% CI, chosen vs rejected, per subset;
//! - the agreement table ([`crate::agreement`] on the exported ratings, the unit being one
//!   answer of one item), and alpha of the "fits the user better" choice (nominal, the unit
//!   being the item);
//! - how often the raters' choice agrees with the benchmark's label;
//! - the items where the raters' majority disagrees with the label (or splits evenly), each
//!   linked to its item view.
//!
//! **CIs.** A mean's interval is the seeded percentile bootstrap over items
//! ([`prbench_stats::bootstrap`], items resampled with replacement): an item contributes the
//! sum of its ratings and their count, so the mean is a ratio of sums and the ratings of one
//! item (which are not independent) move together.

mod markdown;
mod tables;

pub use markdown::{anchor, markdown};
pub use tables::{
    build, AnnotationReport, Disagreement, HumanEvalRow, LabelRow, MeanCi, ReportConfig,
};
