//! Human evaluation of benchmark pairs (`prbench annotate`): the paper's check that a pair
//! differs only in personal fit. Raters score each answer 1–5 on four dimensions
//! ([`dims::Dimension`]) and say which answer fits the user better.
//!
//! - [`agreement`]: Krippendorff's alpha (nominal, ordinal, interval) with a bootstrap CI over
//!   units, for ratings from any source (`annotator,unit,dimension,score` CSV).

pub mod agreement;
