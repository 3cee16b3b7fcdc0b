//! What the embedder sees for PAL: items exactly as the BT head's ([`crate::bt::compose()`]),
//! and, for PAL-B, the prompt on its own.

use sha2::{Digest, Sha256};

use crate::bt;
use prbench_rm::embed::EmbedInput;

/// PAL's composition, in words. The item part is [`bt::COMPOSITION`] (recorded in full by
/// [`composition`]); change [`prompt_input`] together with this text and bump the version.
pub const PROMPT_COMPOSITION: &str = "prbench-pal-composition/1: items (chosen and rejected answers) are composed as \
prbench-bt-composition/1 below. PAL-B's prompt is \"Question:\\n{question}\" as one text when the condition gives \
no non-empty context, else the BERT sentence pair first = \"User context:\\n{context}\", second = \
\"Question:\\n{question}\"; a too-long prompt loses context tokens from the left, never question tokens.";

/// The full composition text recorded in `pal.json`: [`PROMPT_COMPOSITION`], a blank line, then
/// [`bt::COMPOSITION`].
pub fn composition() -> String {
    format!("{PROMPT_COMPOSITION}\n\n{}", bt::COMPOSITION)
}

/// sha256 (hex) of [`composition`]: the model's `chat_template_hash`.
pub fn composition_sha256() -> String {
    hex::encode(Sha256::digest(composition().as_bytes()))
}

/// The embedder input of an answer: [`bt::compose()`].
pub fn item_input(context: Option<&str>, question: &str, answer: &str) -> EmbedInput {
    bt::compose(context, question, answer)
}

/// The embedder input of a prompt (PAL-B's `g_k` input): see [`PROMPT_COMPOSITION`].
pub fn prompt_input(context: Option<&str>, question: &str) -> EmbedInput {
    let question = format!("Question:\n{question}");
    match context.filter(|c| !c.trim().is_empty()) {
        Some(c) => EmbedInput::Pair { context: format!("User context:\n{c}"), text: question },
        None => EmbedInput::Text(question),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_and_item_inputs() {
        assert_eq!(prompt_input(None, "Q?"), EmbedInput::Text("Question:\nQ?".into()));
        assert_eq!(prompt_input(Some(" "), "Q?"), prompt_input(None, "Q?"));
        assert_eq!(
            prompt_input(Some("likes jokes"), "Q?"),
            EmbedInput::Pair {
                context: "User context:\nlikes jokes".into(),
                text: "Question:\nQ?".into()
            }
        );
        assert_eq!(item_input(Some("c"), "Q?", "A."), bt::compose(Some("c"), "Q?", "A."));
        // The recorded text names the item composition it embeds; a new BT composition changes
        // PAL's hash too.
        assert!(bt::COMPOSITION.starts_with("prbench-bt-composition/1:"));
        assert!(composition().ends_with(bt::COMPOSITION));
        assert_eq!(composition_sha256().len(), 64);
    }
}
