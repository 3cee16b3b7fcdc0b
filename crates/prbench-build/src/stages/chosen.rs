//! Stage 1, `chosen`: the generator answers each question told to meet every rubric aspect
//! (`prompts/build-chosen-user.jinja`), seeing the question, the top-k ranked posts and the
//! aspects' titles and reasons.

use prbench_models::Generator;

use super::answers::{generate, AnswerRecord};
use super::{Side, StageContext};
use crate::error::BuildError;

/// Writes the chosen answer of every example in `ctx`.
///
/// # Errors
/// As [`generate`].
pub fn run(
    ctx: &StageContext<'_>,
    generator: &dyn Generator,
) -> Result<Vec<AnswerRecord>, BuildError> {
    generate(ctx, generator, Side::Chosen, "chosen")
}
