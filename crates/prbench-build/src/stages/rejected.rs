//! Stage 2, `rejected`: the generator answers each question with the same inputs as
//! `chosen`, the aspects presented as points to avoid, under the same length and style rules
//! (`prompts/build-rejected-user.jinja`). The rubric reaches this prompt in no other form.

use prbench_models::Generator;

use super::answers::{generate, AnswerRecord};
use super::{Side, StageContext};
use crate::error::BuildError;

/// Writes the rejected answer of every example in `ctx`.
///
/// # Errors
/// As [`generate`].
pub fn run(
    ctx: &StageContext<'_>,
    generator: &dyn Generator,
) -> Result<Vec<AnswerRecord>, BuildError> {
    generate(ctx, generator, Side::Rejected, "rejected")
}
