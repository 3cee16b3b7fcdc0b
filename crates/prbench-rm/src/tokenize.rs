//! Tokenizer and chat template of a model directory in the Hugging Face layout, and the
//! conversation → token ids step of a scalar reward model (PROTOCOL.md §3).
//!
//! Files read: `tokenizer.json` (required), `tokenizer_config.json` (the `bos_token` /
//! `eos_token` strings the template sees, `model_max_length`, and possibly `chat_template`),
//! `chat_template.jinja` (newer repos; it wins over `tokenizer_config.json`, as in transformers).
//!
//! Rendering and tokenization follow transformers' `apply_chat_template(..., tokenize=True)`:
//! the rendered text is tokenized *without* adding special tokens again, so a template that
//! emits BOS gives exactly one BOS. One deliberate difference: the
//! template's own text is tokenized with special-token matching while message contents are
//! tokenized as plain text ([`ChatTemplate::render_segments_with`]), so a profile post that
//! contains `<|im_end|>` cannot close a chat turn.

use std::path::Path;

use prbench_models::chat_template::{ChatTemplate, Segment};
pub use prbench_models::template_files::TemplateSource;
#[cfg(test)]
use prbench_models::template_files::{config_template, token_string};
use prbench_models::{ChatPrompt, ModelError};
use serde_json::Value;
use tokenizers::Tokenizer;

/// Token ids and their byte offsets `(start, end)` into the encoded text.
type Encoded = (Vec<u32>, Vec<(usize, usize)>);

/// A tokenizer plus chat template, loaded from a model directory.
pub struct HfTokenizer {
    /// Matches special tokens (for template text).
    special: Tokenizer,
    /// Treats special-token strings as plain text (for message contents).
    plain: Tokenizer,
    template: ChatTemplate,
    template_source: TemplateSource,
    model_max_length: Option<usize>,
    /// Ids of added tokens marked special (control tokens).
    special_ids: std::collections::HashSet<u32>,
}

impl std::fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfTokenizer")
            .field("template_source", &self.template_source)
            .field("model_max_length", &self.model_max_length)
            .finish_non_exhaustive()
    }
}

fn file_err(path: &Path, reason: impl Into<String>) -> ModelError {
    ModelError::file_reason(path, reason)
}

/// Token ids of one conversation, with what was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokenized {
    /// Token ids fed to the model, `[seq_len]`.
    pub ids: Vec<u32>,
    /// Context tokens cut from the left (0 when nothing was cut).
    pub truncated_tokens: usize,
    /// Leading BOS tokens the render produced beyond the first (removed; 0 normally).
    pub extra_bos_removed: usize,
    /// Index in `ids` of the first context token kept after a cut, if a cut happened.
    pub cut_at: Option<usize>,
    /// True when a message content held a special-token string, so the segments were tokenized
    /// one by one (contents as plain text) instead of as one string.
    pub split_tokenization: bool,
}

impl HfTokenizer {
    /// Loads `tokenizer.json`, `tokenizer_config.json` (optional) and the chat template from
    /// `dir`.
    ///
    /// # Errors
    /// [`ModelError::FileReason`] for a missing `tokenizer.json` or a directory with no
    /// chat template in either place (naming both); [`ModelError::File`] for an unreadable
    /// one; [`ModelError::Metadata`] for malformed keys;
    /// [`ModelError::Template`] when the template does not compile.
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        let tok_path = dir.join("tokenizer.json");
        if !tok_path.is_file() {
            return Err(file_err(
                &tok_path,
                "missing: a Hugging Face model directory needs tokenizer.json",
            ));
        }
        let special =
            Tokenizer::from_file(&tok_path).map_err(|e| ModelError::file(&tok_path, "", e))?;
        let mut plain = special.clone();
        plain.set_encode_special_tokens(true);

        let cfg = prbench_models::template_files::read_tokenizer_config(dir)?;
        let model_max_length = cfg
            .get("model_max_length")
            .and_then(Value::as_f64)
            // transformers writes 1e30 ("VERY_LARGE_INTEGER") when the repo sets no limit.
            .filter(|v| *v >= 1.0 && *v < 1e9)
            .map(|v| v as usize);
        let (template, template_source) = prbench_models::template_files::load_dir_template(dir)?;
        let special_ids = special
            .get_added_tokens_decoder()
            .into_iter()
            .filter(|(_, t)| t.special)
            .map(|(id, _)| id)
            .collect();
        Ok(Self { special, plain, template, template_source, model_max_length, special_ids })
    }

    /// The chat template.
    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// Where the template came from.
    pub fn template_source(&self) -> &TemplateSource {
        &self.template_source
    }

    /// `model_max_length` from `tokenizer_config.json` (tokens), when the repo sets a real one.
    pub fn model_max_length(&self) -> Option<usize> {
        self.model_max_length
    }

    /// The id of a token string, if the vocabulary has it.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.special.token_to_id(token)
    }

    /// Decodes ids to text, special tokens included (for previews).
    ///
    /// # Errors
    /// [`ModelError::Engine`] when the ids are outside the vocabulary.
    pub fn decode(&self, ids: &[u32]) -> Result<String, ModelError> {
        self.special.decode(ids, false).map_err(|e| ModelError::engine("decode", e))
    }

    /// Ids and byte offsets (into `text`) of one encoding.
    fn encode(&self, text: &str, content: bool) -> Result<Encoded, ModelError> {
        let tok = if content { &self.plain } else { &self.special };
        let enc = tok.encode(text, false).map_err(|e| ModelError::engine("tokenize", e))?;
        Ok((enc.get_ids().to_vec(), enc.get_offsets().to_vec()))
    }

    /// Renders a finished conversation (`add_generation_prompt = false`) into segments.
    ///
    /// # Errors
    /// As [`ChatTemplate::render_segments_with`].
    pub fn render(&self, prompt: &ChatPrompt) -> Result<Vec<Segment>, ModelError> {
        self.template.render_segments_with(prompt, false)
    }

    /// Ids and byte offsets of rendered segments, as transformers tokenizes the rendered text
    /// (one string, special tokens matched, nothing added), unless a special token would come
    /// out of a message content: then each segment is tokenized on its own, contents as plain
    /// text. The second value says whether that fallback was taken.
    fn encode_segments(&self, segments: &[Segment]) -> Result<(Encoded, bool), ModelError> {
        let text: String = segments.iter().map(Segment::text).collect();
        let mut content_ranges = Vec::new();
        let mut pos = 0;
        for seg in segments {
            if seg.is_content() {
                content_ranges.push((pos, pos + seg.text().len()));
            }
            pos += seg.text().len();
        }
        let (ids, offsets) = self.encode(&text, false)?;
        let special_from_content = ids.iter().zip(&offsets).any(|(id, &(s, e))| {
            self.special_ids.contains(id) && content_ranges.iter().any(|&(cs, ce)| s < ce && cs < e)
        });
        if !special_from_content {
            return Ok(((ids, offsets), false));
        }
        let (mut ids, mut offsets) = (Vec::new(), Vec::new());
        let mut pos = 0;
        for seg in segments {
            let (i, o) = self.encode(seg.text(), seg.is_content())?;
            ids.extend(i);
            offsets.extend(o.into_iter().map(|(s, e)| (s + pos, e + pos)));
            pos += seg.text().len();
        }
        Ok(((ids, offsets), true))
    }

    /// Token ids of a scalar-RM conversation, at most `max_len` tokens.
    ///
    /// The rendered text is tokenized as one string, exactly as transformers'
    /// `apply_chat_template(..., tokenize=True)` does, so BPE merges across the template/content
    /// boundary come out the same. If that would turn a special-token string inside a message
    /// content into a control token, the segments are tokenized one by one instead, contents as
    /// plain text ([`Tokenized::split_tokenization`]).
    ///
    /// When the sequence is longer than `max_len`, tokens lying wholly inside `context` (found in
    /// the content segment that holds it) are dropped from the left (oldest profile text first)
    /// until it fits; the question, the answer and the template are never cut (PROTOCOL.md §3).
    /// Leading repeated BOS tokens are collapsed to one (`bos_id`), so a sequence has at most one
    /// leading BOS.
    ///
    /// # Errors
    /// [`ModelError::ContextOverflow`] when the sequence does not fit even with the whole
    /// context removed, or needs a cut and has no context; tokenizer and template errors as
    /// [`ModelError::Engine`] / [`ModelError::Template`].
    pub fn tokenize_rm(
        &self,
        prompt: &ChatPrompt,
        context: Option<&str>,
        max_len: usize,
        bos_id: Option<u32>,
    ) -> Result<Tokenized, ModelError> {
        let segments = self.render(prompt)?;
        let ((mut ids, mut offsets), split_tokenization) = self.encode_segments(&segments)?;
        let extra_bos_removed = collapse_bos(&mut ids, bos_id);
        offsets.drain(..extra_bos_removed);
        let done = |ids: Vec<u32>, truncated_tokens: usize, cut_at: Option<usize>| Tokenized {
            ids,
            truncated_tokens,
            extra_bos_removed,
            cut_at,
            split_tokenization,
        };
        if ids.len() <= max_len {
            return Ok(done(ids, 0, None));
        }
        let overflow = |tokens: usize, reason: &str| ModelError::ContextOverflow {
            tokens,
            n_ctx: max_len,
            reason: reason.into(),
        };
        let context = match context {
            Some(c) if !c.is_empty() => c,
            _ => return Err(overflow(ids.len(), "the conversation has no context to cut and the question and answer are never truncated")),
        };
        let mut pos = 0;
        let mut range = None;
        for seg in &segments {
            if seg.is_content() {
                if let Some(at) = seg.text().find(context) {
                    range = Some((pos + at, pos + at + context.len()));
                    break;
                }
            }
            pos += seg.text().len();
        }
        let Some((cs, ce)) = range else {
            return Err(overflow(ids.len(), "the context text was not found in the rendered conversation, so it cannot be cut safely"));
        };
        let inside: Vec<usize> = offsets
            .iter()
            .enumerate()
            .filter(|(_, &(s, e))| s >= cs && e <= ce)
            .map(|(i, _)| i)
            .collect();
        let need = ids.len() - max_len;
        if need > inside.len() {
            return Err(overflow(
                ids.len() - inside.len(),
                "the template, question and answer alone exceed the limit (they are never cut)",
            ));
        }
        let cut_at = inside.first().copied().unwrap_or(0);
        ids.drain(cut_at..cut_at + need);
        Ok(done(ids, need, Some(cut_at)))
    }
}

/// Removes repeated leading BOS tokens, keeping one; returns how many were removed.
fn collapse_bos(ids: &mut Vec<u32>, bos_id: Option<u32>) -> usize {
    let Some(bos) = bos_id else { return 0 };
    let lead = ids.iter().take_while(|&&t| t == bos).count();
    if lead > 1 {
        ids.drain(..lead - 1);
        lead - 1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_only_leading_repeats() {
        let mut ids = vec![1, 1, 1, 5, 1];
        assert_eq!(collapse_bos(&mut ids, Some(1)), 2);
        assert_eq!(ids, vec![1, 5, 1]);
        let mut ids = vec![1, 5];
        assert_eq!(collapse_bos(&mut ids, Some(1)), 0);
        assert_eq!(collapse_bos(&mut ids, None), 0);
    }

    #[test]
    fn template_from_config_list_takes_default() {
        let cfg: Value = serde_json::json!({"chat_template": [{"name": "tool_use", "template": "x"}, {"name": "default", "template": "y"}]});
        assert_eq!(config_template(&cfg, Path::new("t.json")).unwrap().as_deref(), Some("y"));
        let cfg: Value = serde_json::json!({"bos_token": {"content": "<s>", "lstrip": false}});
        assert_eq!(token_string(&cfg, "bos_token", Path::new("t.json")).unwrap(), "<s>");
        assert_eq!(token_string(&cfg, "eos_token", Path::new("t.json")).unwrap(), "");
    }
}
