//! Inter-annotator agreement: Krippendorff's alpha at the nominal, ordinal and interval levels
//! (coincidence-matrix method, Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability").
//!
//! - [`data`]: [`ReliabilityData`], units with the values annotators gave them.
//! - [`coincidence`]: the coincidence matrix (for inspection).
//! - [`alpha`](mod@alpha): [`alpha()`] and its typed undefined cases, with how they map to the
//!   Python `krippendorff` package (which the tests match to 1e-9).
//! - [`bootstrap`]: [`bootstrap_alpha`], the seeded interval over units.
//! - [`ratings`]: [`Ratings`] from a CSV, with errors naming file, line and field.

pub mod alpha;
pub mod bootstrap;
pub mod coincidence;
pub mod data;
pub mod ratings;

pub use alpha::{alpha, AlphaUndefined, AlphaValue, Level};
pub use bootstrap::{
    bootstrap_alpha, AlphaBootstrap, AlphaBootstrapConfig, CiUndefined, ConfigError,
};
pub use coincidence::{coincidences, CoincidenceMatrix};
pub use data::{DataError, Rating, ReliabilityData, Unit};
pub use ratings::{DimensionRatings, Ratings, RatingsError, REQUIRED_COLUMNS};
