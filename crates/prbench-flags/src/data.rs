//! The data-selection flags (`--data`, `--subset`) of every verb that reads a dataset, and the
//! parser that resolves the default `data/sample`.

use std::path::{Path, PathBuf};

use clap::Args;

/// The default `--data`: the bundled sample, `data/sample` at the repository root.
pub const DEFAULT_DATA: &str = "data/sample";

/// Where the data comes from.
#[derive(Args, Debug, Clone)]
pub struct DataArgs {
    /// Dataset: a directory (HF layout `<config>/*.parquet` or `<config>.{parquet,json,jsonl}`),
    /// a single file, `psoups:DIR`, `synthesizeme:DIR[#SPLIT]` (SynthesizeMe's personalized
    /// Chatbot Arena and PRISM), `prism:DIR` (raw PRISM), or `hf:ORG/NAME[@REV]` (through the
    /// hf-hub cache); for
    /// `build` also `lampqa:DIR[#SPLIT]` (LaMP-QA questions, which have no pairs to evaluate).
    /// The default `data/sample` is looked for in the current folder, then in the source tree
    /// prbench was built from (stderr says which).
    #[arg(long, default_value = DEFAULT_DATA, value_parser = data_spec)]
    pub data: String,
    /// Subsets to load (long or short names, comma-separated); all when omitted.
    #[arg(long, value_delimiter = ',')]
    pub subset: Vec<String>,
}

/// Parser of `--data` values: the default `data/sample` is resolved against the current folder
/// first and then against the source tree the binary was built from (so the default works from
/// any folder), saying on stderr which one is used; every other value passes unchanged.
///
/// # Errors
/// `data/sample` in neither place: the message names both.
pub fn data_spec(s: &str) -> Result<String, String> {
    if s != DEFAULT_DATA || Path::new(s).exists() {
        return Ok(s.to_string());
    }
    let built = source_tree_sample();
    if built.is_dir() {
        eprintln!(
            "prbench: no `{DEFAULT_DATA}` in the current folder; using the bundled sample of the source tree prbench was built from, `{}`",
            built.display()
        );
        return Ok(built.display().to_string());
    }
    let here = std::env::current_dir().map_or_else(|_| PathBuf::from(s), |d| d.join(s));
    Err(format!(
        "the bundled sample is in neither `{}` (the current folder) nor `{}` (the source tree prbench was built from); run from the repository root or pass --data DIR",
        here.display(),
        built.display()
    ))
}

/// `data/sample` in the source tree this crate was built from (the repository root is two
/// folders above the crate's manifest).
pub fn source_tree_sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(DEFAULT_DATA).components().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_data_falls_back_to_the_source_tree_sample() {
        // The test runs in crates/prbench-flags, which has no data/sample of its own.
        assert!(!Path::new("data/sample").exists());
        let got = data_spec("data/sample").unwrap();
        assert_eq!(PathBuf::from(&got), source_tree_sample());
        assert!(
            PathBuf::from(&got).join("Art_and_Entertainment.jsonl").exists()
                || PathBuf::from(&got).is_dir()
        );
        // Any other relative path is left alone (and fails later, naming itself).
        assert_eq!(data_spec("data/other").unwrap(), "data/other");
    }
}
