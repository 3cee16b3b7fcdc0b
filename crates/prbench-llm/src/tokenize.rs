//! Prompt → tokens, with untrusted text kept out of special-token parsing.

use llama_cpp_2::token::LlamaToken;

use super::GgufEngine;
use prbench_models::chat_template::Segment;
use prbench_models::error::ModelError;
use prbench_models::io::ChatPrompt;

impl GgufEngine {
    /// Tokenizes a prompt as the engine feeds it to the model: the chat template rendered
    /// with `add_generation_prompt = true`, then `prompt.assistant_prefix`.
    ///
    /// Template text is tokenized with special-token parsing (so `<|im_start|>` becomes its
    /// control token); message contents and the assistant prefix are tokenized without it (a
    /// post containing `<|im_end|>` stays plain text). Each segment is tokenized on its own.
    /// A BOS token is prepended only when the file's metadata asks for one
    /// ([`Self::add_bos`]) and the rendered template does not already begin with the BOS
    /// text, so a prompt has at most one BOS. No EOS is added.
    ///
    /// Returns token ids (`i32`, indices into the vocabulary).
    ///
    /// # Errors
    /// [`ModelError::Template`] from rendering; [`ModelError::ContextOverflow`] when the prompt
    /// has more tokens than [`Self::n_ctx`] (truncation is decided upstream).
    pub fn tokenize(&self, prompt: &ChatPrompt) -> Result<Vec<i32>, ModelError> {
        Ok(self.tokenize_prompt(prompt)?.into_iter().map(|t| t.0).collect())
    }

    /// [`Self::tokenize`] with llama.cpp token values.
    pub(super) fn tokenize_prompt(
        &self,
        prompt: &ChatPrompt,
    ) -> Result<Vec<LlamaToken>, ModelError> {
        let segments = self.template.render_segments(prompt)?;
        let tokens = self.tokenize_segments(&segments);
        if tokens.len() > self.n_ctx {
            return Err(ModelError::ContextOverflow {
                tokens: tokens.len(),
                n_ctx: self.n_ctx,
                reason: "the prompt is longer than the context window; truncate it upstream".into(),
            });
        }
        Ok(tokens)
    }

    /// How many tokens `prompt` plus `reserve` generated tokens is over [`Self::n_ctx`] (0 when
    /// it fits), counted exactly as [`Self::tokenize`] would feed it.
    ///
    /// # Errors
    /// [`ModelError::Template`] from rendering.
    pub fn overflow(&self, prompt: &ChatPrompt, reserve: usize) -> Result<usize, ModelError> {
        let segments = self.template.render_segments(prompt)?;
        Ok((self.tokenize_segments(&segments).len() + reserve).saturating_sub(self.n_ctx))
    }

    /// Tokens of rendered segments (BOS rule as in [`Self::tokenize`], no length check).
    pub(super) fn tokenize_segments(&self, segments: &[Segment]) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let starts_with_bos = !self.bos_text.is_empty()
            && matches!(segments.first(), Some(Segment::Template(t)) if t.starts_with(&self.bos_text));
        let mut tokens = Vec::new();
        if self.add_bos && !starts_with_bos {
            if let Some(bos) = self.bos {
                tokens.push(bos);
            }
        }
        for seg in segments {
            let parse_special = !seg.is_content();
            vocab.tokenize_into(seg.text().as_bytes(), &mut tokens, false, parse_special);
        }
        tokens
    }

    /// Tokens of plain text: no special-token parsing, no BOS (e.g. for budgeting profile
    /// posts). Returns token ids.
    pub fn tokenize_text(&self, text: &str) -> Vec<i32> {
        self.model
            .vocab()
            .tokenize(text.as_bytes(), false, false)
            .into_iter()
            .map(|t| t.0)
            .collect()
    }

    /// Tokens of trusted text WITH special-token parsing and no BOS (e.g. to look up the id of
    /// `<|im_end|>`). Never use it on untrusted text.
    pub fn tokenize_special(&self, text: &str) -> Vec<i32> {
        self.model.vocab().tokenize(text.as_bytes(), false, true).into_iter().map(|t| t.0).collect()
    }

    /// Number of tokens in plain text (no special-token parsing, no BOS).
    pub fn count_tokens(&self, text: &str) -> usize {
        self.model.vocab().tokenize(text.as_bytes(), false, false).len()
    }

    /// Text of token ids. With `render_special` false, control tokens (BOS, `<|im_end|>`, …)
    /// produce no text; with it true they are written out. Invalid UTF-8 is replaced.
    ///
    /// # Errors
    /// [`ModelError::Engine`] for an id outside the vocabulary.
    pub fn detokenize(&self, tokens: &[i32], render_special: bool) -> Result<String, ModelError> {
        let n_vocab = self.model.n_vocab();
        if let Some(bad) = tokens.iter().find(|&&t| t < 0 || t >= n_vocab) {
            return Err(ModelError::Engine(format!(
                "token id {bad} is outside the vocabulary of {n_vocab} tokens"
            )));
        }
        let toks: Vec<LlamaToken> = tokens.iter().map(|&t| LlamaToken(t)).collect();
        Ok(self.detokenize_llama(&toks, render_special))
    }

    /// [`Self::detokenize`] with llama.cpp token values.
    pub(super) fn detokenize_llama(&self, tokens: &[LlamaToken], render_special: bool) -> String {
        if tokens.is_empty() {
            return String::new();
        }
        let bytes = self.model.vocab().detokenize(tokens, false, render_special);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The single token a candidate continuation string maps to (no special parsing, no BOS).
    pub(super) fn candidate_token(&self, candidate: &str) -> Result<LlamaToken, ModelError> {
        let toks = self.model.vocab().tokenize(candidate.as_bytes(), false, false);
        match toks.as_slice() {
            [t] => Ok(*t),
            _ => {
                Err(ModelError::Candidate { candidate: candidate.to_owned(), n_tokens: toks.len() })
            }
        }
    }
}
