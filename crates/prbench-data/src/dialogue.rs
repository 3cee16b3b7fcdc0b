//! Multi-turn conversations in the single-question PRB schema, shared by the
//! [`crate::synthesizeme`] and [`crate::prism`] adapters.
//!
//! The schema has one `question` per example and no separate context field, and every condition
//! shows the question to the model under test. So the earlier turns of a conversation go into
//! the question, as a labelled transcript above the user's latest message (PROTOCOL.md §2 asks
//! for clear labels between what the user said before and what is asked now):
//!
//! ```text
//! Conversation so far:
//! User: <first user message>
//! Assistant: <the reply the conversation continued with>
//!
//! Latest user message:
//! <the message both answers reply to>
//! ```
//!
//! A conversation with no earlier turns gives the latest message alone, exactly as written. The
//! transcript is part of the question, so the leakage guard treats it as visible text (these
//! datasets have no hidden rubric or narrative anyway).

/// Who wrote one message of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    /// The user (role `user`).
    User,
    /// The model (role `assistant` or `model`).
    Assistant,
    /// A system message (role `system`).
    System,
}

impl Speaker {
    /// The speaker a dataset's role name stands for: `user`; `assistant` or `model`;
    /// `system`. Any other name is `None`.
    pub fn from_role(role: &str) -> Option<Speaker> {
        match role {
            "user" => Some(Speaker::User),
            "assistant" | "model" => Some(Speaker::Assistant),
            "system" => Some(Speaker::System),
            _ => None,
        }
    }

    /// The transcript label: `User`, `Assistant`, `System`.
    pub fn label(self) -> &'static str {
        match self {
            Speaker::User => "User",
            Speaker::Assistant => "Assistant",
            Speaker::System => "System",
        }
    }
}

/// The role names [`Speaker::from_role`] accepts, for messages.
pub const ROLES: &str = "`user`, `assistant`, `model` or `system`";

/// Label above the earlier turns.
pub const EARLIER_LABEL: &str = "Conversation so far:";

/// Label above the user's latest message when there are earlier turns.
pub const LATEST_LABEL: &str = "Latest user message:";

/// The question text for a pair that answers `latest`, after the earlier messages `prior` (in
/// order): `latest` itself when `prior` is empty, else the labelled transcript of the module
/// docs (one `Label: text` line per message, the text as written; a blank line; the latest
/// message under its own label).
pub fn render_question(prior: &[(Speaker, &str)], latest: &str) -> String {
    if prior.is_empty() {
        return latest.to_string();
    }
    let mut s = String::from(EARLIER_LABEL);
    for (speaker, text) in prior {
        s.push('\n');
        s.push_str(speaker.label());
        s.push_str(": ");
        s.push_str(text);
    }
    s.push_str("\n\n");
    s.push_str(LATEST_LABEL);
    s.push('\n');
    s.push_str(latest);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_message_is_the_question_unchanged() {
        assert_eq!(render_question(&[], "  Hi there?\n"), "  Hi there?\n");
    }

    #[test]
    fn earlier_turns_come_first_under_their_labels() {
        let q = render_question(
            &[(Speaker::User, "Plan a trip."), (Speaker::Assistant, "Where to?")],
            "Lisbon, please.",
        );
        assert_eq!(q, "Conversation so far:\nUser: Plan a trip.\nAssistant: Where to?\n\nLatest user message:\nLisbon, please.");
    }

    #[test]
    fn roles() {
        assert_eq!(Speaker::from_role("model"), Some(Speaker::Assistant));
        assert_eq!(Speaker::from_role("assistant"), Some(Speaker::Assistant));
        assert_eq!(Speaker::from_role("user"), Some(Speaker::User));
        assert_eq!(Speaker::from_role("system"), Some(Speaker::System));
        assert_eq!(Speaker::from_role("User"), None);
        assert_eq!(Speaker::from_role("bot"), None);
    }
}
