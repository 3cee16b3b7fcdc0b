//! Krippendorff's alpha: in progress.
