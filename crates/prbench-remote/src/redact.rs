//! Keeps the API key out of every string prbench shows: error messages, `Debug` output, identities
//! and decoding records: the key comes from an env var, never from a flag, and never reaches a log
//! line.

use std::fmt;

/// What replaces the key wherever it would appear.
pub const REDACTED: &str = "[REDACTED]";

/// An API key. Its `Debug` prints [`REDACTED`]; it has no `Display`, so it cannot be
/// formatted into a message by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Reads the key from environment variable `var`; `None` when the variable is unset,
    /// empty, or not valid Unicode.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| Secret(k.trim().to_string()))
    }

    /// The key text, for the `Authorization` header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Replaces the key's text by [`REDACTED`] in strings that may hold it (server replies echo
/// request headers more often than one would hope).
#[derive(Clone, Default)]
pub struct Redactor {
    /// The forms of the key to replace: as sent, and as JSON escapes it (a reply that quotes
    /// the header in a JSON string), longest first.
    needles: Vec<String>,
}

impl Redactor {
    /// A redactor for `key`; with `None` it returns strings unchanged.
    pub fn new(key: Option<&Secret>) -> Self {
        let mut needles = Vec::new();
        if let Some(k) = key {
            needles.push(k.expose().to_string());
            let escaped = serde_json::to_string(k.expose()).unwrap_or_default();
            let escaped = escaped.trim_matches('"').to_string();
            if !needles.contains(&escaped) {
                needles.push(escaped);
            }
            needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        }
        Self { needles }
    }

    /// `text` with every occurrence of the key replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for n in &self.needles {
            if out.contains(n.as_str()) {
                out = out.replace(n.as_str(), REDACTED);
            }
        }
        out
    }
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("key", &if self.needles.is_empty() { "none" } else { REDACTED })
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_every_form_of_the_key_and_hides_it_from_debug() {
        let key = Secret("sk-\"odd\\key".to_string());
        let r = Redactor::new(Some(&key));
        let body = format!(
            "{{\"auth\":{}}} raw: Bearer {}",
            serde_json::to_string(key.expose()).unwrap(),
            key.expose()
        );
        let red = r.redact(&body);
        assert!(!red.contains("odd"), "{red}");
        assert_eq!(red.matches(REDACTED).count(), 2, "{red}");
        assert_eq!(format!("{key:?}"), REDACTED);
        assert!(!format!("{r:?}").contains("odd"));
        assert_eq!(Redactor::new(None).redact("Bearer x"), "Bearer x");
    }
}
