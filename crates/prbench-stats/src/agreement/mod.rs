//! Inter-annotator agreement: Krippendorff's alpha at the nominal, ordinal and interval levels
//! (coincidence-matrix method, Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"),
//! with seeded percentile-bootstrap intervals over units, for ratings from any source (an
//! `annotator,unit,dimension,score` CSV).
//!
//! - [`data`]: [`ReliabilityData`], units with the values annotators gave them.
//! - [`coincidence`]: the coincidence matrix (for inspection).
//! - [`alpha`](mod@alpha): [`alpha()`] and its typed undefined cases, with how they map to the
//!   Python `krippendorff` package (which the tests match to 1e-9).
//! - [`bootstrap`]: [`bootstrap_alpha`], the seeded interval over units.
//! - [`ratings`]: [`Ratings`] from a CSV, with errors naming file, line and field.
//! - [`summary`], [`table`]: [`agreement`] per dimension, serializable to JSON, and
//!   [`markdown_table`].
//!
//! ```
//! use prbench_stats::agreement::{agreement, alpha, markdown_table, AgreementConfig, Level, Ratings};
//!
//! let csv = "annotator,unit,dimension,score\n\
//!            ann,q1,fit,4\nbob,q1,fit,4\nann,q2,fit,2\nbob,q2,fit,3\nann,q3,fit,5\n";
//! let ratings = Ratings::from_csv_reader("ratings.csv", csv.as_bytes()).unwrap();
//! let fit = ratings.dimensions()["fit"].data();
//! let a = alpha(fit, Level::Interval).unwrap();
//! assert_eq!((a.n_units, a.n_single), (2, 1)); // q3 has one rating: left out, counted
//! assert!((a.alpha - 8.0 / 11.0).abs() < 1e-12); // 1 − (n − 1)·Σoδ²/Σnnδ² = 1 − 3·2/22
//!
//! let report = agreement(&ratings, &AgreementConfig::default());
//! let json = serde_json::to_value(&report.dimensions).unwrap();
//! assert_eq!(json["fit"]["n_units"], 2);
//! assert!(markdown_table(&report).contains("| fit | 2 | 1 | 5 | 2 |"));
//! ```

pub mod alpha;
pub mod bootstrap;
pub mod coincidence;
pub mod data;
pub mod ratings;
pub mod summary;
pub mod table;

pub use alpha::{alpha, AlphaUndefined, AlphaValue, Level};
pub use bootstrap::{
    bootstrap_alpha, AlphaBootstrap, AlphaBootstrapConfig, CiUndefined, ConfigError,
};
pub use coincidence::{coincidences, CoincidenceMatrix};
pub use data::{DataError, Rating, ReliabilityData, Unit};
pub use ratings::{DimensionRatings, Ratings, RatingsError, REQUIRED_COLUMNS};
pub use summary::{
    agreement, AgreementConfig, AgreementReport, DimensionAgreement, LevelAgreement,
};
pub use table::markdown_table;
