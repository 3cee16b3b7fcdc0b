//! The one function that turns (context, question, answer) into the text the embedder sees, used
//! by training and by scoring alike.

use sha2::{Digest, Sha256};

use prbench_rm::embed::EmbedInput;

/// What [`compose`] does, in words; its sha256 is the model's `chat_template_hash` and it is
/// recorded in `bt.json`. Change it together with [`compose`] (and bump the version), never one
/// without the other.
pub const COMPOSITION: &str = "prbench-bt-composition/1: BERT sentence pair. \
first = \"User context:\\n{context}\\n\\nQuestion:\\n{question}\" when the condition gives a \
non-empty context, else \"Question:\\n{question}\"; second = \"{answer}\". Too-long inputs lose \
tokens from the left of the first sequence (the context first); the answer is never cut.";

/// sha256 (hex) of [`COMPOSITION`].
pub fn composition_sha256() -> String {
    hex::encode(Sha256::digest(COMPOSITION.as_bytes()))
}

/// The embedder input for one answer: the question (after the condition's context, if any) as
/// the first, left-truncatable sequence and the answer as the second. A context that is empty or
/// only whitespace counts as none.
pub fn compose(context: Option<&str>, question: &str, answer: &str) -> EmbedInput {
    let first = match context.filter(|c| !c.trim().is_empty()) {
        Some(c) => format!("User context:\n{c}\n\nQuestion:\n{question}"),
        None => format!("Question:\n{question}"),
    };
    EmbedInput::Pair { context: first, text: answer.to_string() }
}

/// Identity of a preference pair for leak checks between training and evaluation: sha256 (hex)
/// of the whitespace-trimmed question, chosen and rejected texts, each followed by a NUL byte.
/// The context is left out on purpose: the same pair under another user is still the same pair.
pub fn pair_sha256(question: &str, chosen: &str, rejected: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [question, chosen, rejected] {
        h.update(part.trim().as_bytes());
        h.update([0u8]);
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_goes_first_and_empty_context_is_none() {
        let with = compose(Some("likes jokes"), "Q?", "A.");
        assert_eq!(
            with,
            EmbedInput::Pair {
                context: "User context:\nlikes jokes\n\nQuestion:\nQ?".into(),
                text: "A.".into()
            }
        );
        assert_eq!(compose(Some("  "), "Q?", "A."), compose(None, "Q?", "A."));
        assert_eq!(
            compose(None, "Q?", "A."),
            EmbedInput::Pair { context: "Question:\nQ?".into(), text: "A.".into() }
        );
        assert_eq!(composition_sha256().len(), 64);
    }
}
