//! The build's settings (the record `build.json` keeps, with its defaults from the paper's
//! construction: [`BuildSettings`], defined in `prbench_records::build`), what skipping the
//! audit means, and the word count the limits use.

/// What skipping the audit (`--skip-audit`) keeps, in the words the command's help, the dataset
/// card, the build report and the guide (`docs/guide/src/build.md`) all use (the filter's
/// `pre_audit` is the code it describes).
pub const SKIP_AUDIT_RULE: &str = "only pairs with a failed, empty or truncated answer, or with two identical answers, are dropped; the word limit (--max-words), the length ratio (--max-length-ratio) and the audit's checks are not applied";

pub use prbench_records::build::BuildSettings;

/// Whitespace-separated words of `text`: the unit of `max_words` and of the length ratio.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}
