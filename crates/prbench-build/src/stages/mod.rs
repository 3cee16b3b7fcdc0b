//! The build's stages, in order: [`answers`] (chosen and rejected, side by side) → [`audit`]
//! → [`filter`] → [`export`]. Each model stage sends its calls through the run cache when one
//! is given, so a killed build resumes with no call repeated.

pub mod answers;
pub mod audit;
pub mod audit_parse;
pub mod export;
pub mod filter;

use std::collections::HashMap;
use std::ops::Range;

use prbench_data::{Example, ProfilePost};
use prbench_eval::runner::Reporter;
use prbench_models::{ChatRequest, ChatResponse, Generator, ModelError};
use serde::{Deserialize, Serialize};

use crate::error::BuildError;
use crate::prompts::BuildPrompts;
use crate::settings::BuildSettings;

/// Which answer of a pair a generation writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Told to meet the user's rubric aspects.
    Chosen,
    /// Told to avoid them, keeping general quality.
    Rejected,
}

impl Side {
    /// `chosen` / `rejected`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Chosen => "chosen",
            Side::Rejected => "rejected",
        }
    }
}

/// What the model stages share: the examples, their ranked posts, the prompts and settings,
/// and where progress goes.
pub struct StageContext<'a> {
    /// The examples to build, in dataset order.
    pub examples: &'a [&'a Example],
    /// Example id → profile posts, best first (as for `profile:k`).
    pub ranked: &'a HashMap<String, Vec<ProfilePost>>,
    /// The compiled prompts.
    pub prompts: &'a BuildPrompts,
    /// The build settings.
    pub settings: &'a BuildSettings,
    /// Progress bars (one per stage).
    pub reporter: &'a dyn Reporter,
}

impl StageContext<'_> {
    /// The ranked posts of `example`.
    ///
    /// # Errors
    /// [`BuildError::Input`] when the ranking lacks the example (a caller bug).
    pub fn posts(&self, example: &Example) -> Result<&[ProfilePost], BuildError> {
        self.ranked.get(&example.id).map(Vec::as_slice).ok_or_else(|| {
            BuildError::Input(format!("no ranked profile for example `{}`", example.id))
        })
    }
}

/// Sends `requests` to `generator` in batches of `batch`, advancing `reporter` after each
/// call. One result per request, in order; a failed request is an `Err` in its place.
///
/// # Errors
/// [`BuildError::BackendShape`] when the generator returns the wrong number of results.
pub(crate) fn generate_batched(
    generator: &dyn Generator,
    requests: &[ChatRequest],
    batch: usize,
    reporter: &dyn Reporter,
) -> Result<Vec<Result<ChatResponse, ModelError>>, BuildError> {
    let model = generator.identity().spec;
    in_calls(&model, requests.len(), batch, reporter, |r| {
        generator.generate_each(&requests[r], &|_, _| {})
    })
}

/// Requests `0..n` in calls of `batch` (the last one shorter): `call` gets each call's range of
/// request indices and returns one result per request in it; `reporter` advances after each
/// call.
///
/// # Errors
/// [`BuildError::BackendShape`], naming `model`, when a call returns the wrong number of
/// results.
pub(crate) fn in_calls(
    model: &str,
    n: usize,
    batch: usize,
    reporter: &dyn Reporter,
    call: impl Fn(Range<usize>) -> Vec<Result<ChatResponse, ModelError>>,
) -> Result<Vec<Result<ChatResponse, ModelError>>, BuildError> {
    let batch = batch.max(1);
    let mut out = Vec::with_capacity(n);
    for lo in (0..n).step_by(batch) {
        let hi = (lo + batch).min(n);
        let results = call(lo..hi);
        if results.len() != hi - lo {
            return Err(BuildError::BackendShape {
                model: model.to_string(),
                got: results.len(),
                expected: hi - lo,
            });
        }
        out.extend(results);
        reporter.advance((hi - lo) as u64);
    }
    Ok(out)
}
