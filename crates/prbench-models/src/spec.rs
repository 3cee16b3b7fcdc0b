//! Model specs as typed on the command line (DESIGN.md, model specs).

use std::path::PathBuf;

use crate::error::ModelError;

/// A parsed `--model` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// `gguf:PATH`: a local causal LM in GGUF, used as a judge.
    Gguf(PathBuf),
    /// `baseline:NAME`: a control baseline (`longer`, `shorter`, `random`, `profile-overlap`, `slot-a`).
    Baseline(String),
    /// `hf:ORG/NAME[@REV]`: a Hugging Face model repo through the hf-hub cache (the text after
    /// `hf:`; a sequence-classification reward model).
    Hf(String),
    /// `dir:PATH`: the same, from a local directory in the Hugging Face layout.
    Dir(PathBuf),
    /// `bt:PATH`: a Bradley-Terry head trained by `prbench train bt` (its output directory).
    Bt(PathBuf),
}

impl ModelSpec {
    /// True for specs whose backend is a pairwise judge (`gguf:` and `baseline:slot-a`).
    pub fn is_judge(&self) -> bool {
        matches!(self, ModelSpec::Gguf(_)) || *self == ModelSpec::Baseline("slot-a".into())
    }
}

impl ModelSpec {
    /// Parses a spec.
    ///
    /// # Errors
    /// [`ModelError::Spec`] naming the spec and the forms this version accepts; the forms
    /// DESIGN.md lists that are not built yet (`openai:`, `vllm-classify:`, `reward-server:`)
    /// are named as such rather than guessed at.
    pub fn parse(spec: &str) -> Result<Self, ModelError> {
        let (kind, rest) = spec.split_once(':').ok_or_else(|| ModelError::Spec {
            spec: spec.into(),
            reason: "expected KIND:VALUE, e.g. `gguf:PATH` or `baseline:longer`".into(),
        })?;
        match kind {
            "gguf" if !rest.is_empty() => Ok(Self::Gguf(PathBuf::from(rest))),
            "baseline" if !rest.is_empty() => Ok(Self::Baseline(rest.to_string())),
            "hf" if !rest.is_empty() => Ok(Self::Hf(rest.to_string())),
            "dir" if !rest.is_empty() => Ok(Self::Dir(PathBuf::from(rest))),
            "bt" if !rest.is_empty() => Ok(Self::Bt(PathBuf::from(rest))),
            "openai" | "vllm-classify" | "reward-server" => Err(ModelError::Spec {
                spec: spec.into(),
                reason: format!("`{kind}:` models are not supported by this version yet; use `gguf:PATH`, `hf:ORG/NAME`, `dir:PATH`, `bt:PATH` or `baseline:NAME`"),
            }),
            _ => Err(ModelError::Spec {
                spec: spec.into(),
                reason: "known kinds: `gguf:PATH` (judge), `hf:ORG/NAME[@REV]` and `dir:PATH` (sequence-classification reward model), `bt:PATH` (Bradley-Terry head from `prbench train bt`), `baseline:NAME` (longer, shorter, random, profile-overlap, slot-a)".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_kinds_and_names_unknown_ones() {
        assert_eq!(ModelSpec::parse("gguf:/m/x.gguf").unwrap(), ModelSpec::Gguf("/m/x.gguf".into()));
        assert_eq!(ModelSpec::parse("baseline:longer").unwrap(), ModelSpec::Baseline("longer".into()));
        assert_eq!(ModelSpec::parse("hf:org/name@v1").unwrap(), ModelSpec::Hf("org/name@v1".into()));
        assert_eq!(ModelSpec::parse("dir:/m/rm").unwrap(), ModelSpec::Dir("/m/rm".into()));
        assert_eq!(ModelSpec::parse("bt:runs/bt").unwrap(), ModelSpec::Bt("runs/bt".into()));
        let e = ModelSpec::parse("openai:gpt").unwrap_err().to_string();
        assert!(e.contains("`openai:` models are not supported"), "{e}");
        assert!(ModelSpec::parse("hf:").is_err());
        assert!(ModelSpec::parse("nonsense").is_err());
        assert!(ModelSpec::parse("gguf:").is_err());
    }
}
