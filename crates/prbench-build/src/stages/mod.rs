//! The build's stages, in order: [`chosen`] → [`rejected`] → [`audit`] → [`filter`] →
//! [`export`]. Each model stage sends its calls through the run cache when one is given, so a
//! killed build resumes with no call repeated.

pub mod answers;
pub mod audit;
pub mod audit_parse;
pub mod chosen;
pub mod export;
pub mod filter;
pub mod rejected;

use std::collections::HashMap;

use prbench_data::{Example, ProfilePost};
use prbench_eval::runner::Reporter;
use prbench_models::Generator;
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
    requests: &[prbench_models::ChatRequest],
    batch: usize,
    reporter: &dyn Reporter,
) -> Result<Vec<Result<prbench_models::ChatResponse, prbench_models::ModelError>>, BuildError> {
    let mut out = Vec::with_capacity(requests.len());
    for chunk in requests.chunks(batch.max(1)) {
        let results = generator.generate_each(chunk, &|_, _| {});
        if results.len() != chunk.len() {
            return Err(BuildError::BackendShape {
                model: generator.identity().spec,
                got: results.len(),
                expected: chunk.len(),
            });
        }
        out.extend(results);
        reporter.advance(chunk.len() as u64);
    }
    Ok(out)
}
