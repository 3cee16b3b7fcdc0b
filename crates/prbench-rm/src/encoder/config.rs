//! A BERT `config.json` (transformers `BertConfig`), with the fields the encoder uses and the
//! checks that refuse what it does not implement.

use std::path::Path;

use prbench_models::ModelError;
use serde::Deserialize;

/// The feed-forward activation (`hidden_act`, transformers `ACT2FN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiddenAct {
    /// `gelu`: exact GELU, x·Φ(x) = 0.5·x·(1 + erf(x/√2)) (`torch.nn.functional.gelu`).
    GeluErf,
    /// `gelu_new`, `gelu_pytorch_tanh`: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
    GeluTanh,
    /// `relu`: max(x, 0).
    Relu,
}

#[derive(Deserialize)]
struct Raw {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    hidden_act: String,
    max_position_embeddings: usize,
    type_vocab_size: usize,
    layer_norm_eps: f64,
    #[serde(default)]
    position_embedding_type: Option<String>,
    #[serde(default)]
    model_type: Option<String>,
}

/// The architecture of a BERT encoder.
#[derive(Debug, Clone, PartialEq)]
pub struct BertConfig {
    /// Word-piece vocabulary size.
    pub vocab_size: usize,
    /// Hidden width H.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads (H is a multiple of it).
    pub num_attention_heads: usize,
    /// Feed-forward width.
    pub intermediate_size: usize,
    /// Feed-forward activation.
    pub hidden_act: HiddenAct,
    /// Longest sequence (absolute position embeddings).
    pub max_position_embeddings: usize,
    /// Token types (segments).
    pub type_vocab_size: usize,
    /// LayerNorm epsilon.
    pub layer_norm_eps: f32,
    /// `model_type` (the weight-name prefix some checkpoints use, e.g. `bert.`).
    pub model_type: Option<String>,
}

impl BertConfig {
    /// Parses `config.json` text; `path` names the file in errors.
    ///
    /// # Errors
    /// [`ModelError::Metadata`] (key = the field) for text that is not a BERT config, an
    /// activation other than `gelu`, `gelu_new`, `gelu_pytorch_tanh` or `relu`, a
    /// `position_embedding_type` other than `absolute` (relative position embeddings are not
    /// implemented), or a hidden size that the heads do not divide.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ModelError> {
        let meta = |key: &str, reason: String| ModelError::Metadata {
            path: path.to_path_buf(),
            key: key.into(),
            reason,
        };
        let raw: Raw = serde_json::from_str(text)
            .map_err(|e| meta("(config)", format!("not a BERT config: {e}")))?;
        let hidden_act = match raw.hidden_act.as_str() {
            "gelu" => HiddenAct::GeluErf,
            "gelu_new" | "gelu_pytorch_tanh" => HiddenAct::GeluTanh,
            "relu" => HiddenAct::Relu,
            other => {
                return Err(meta(
                    "hidden_act",
                    format!("`{other}` is not implemented by prbench's BERT encoder (gelu, gelu_new, gelu_pytorch_tanh, relu)"),
                ))
            }
        };
        if let Some(p) = raw.position_embedding_type.as_deref() {
            if p != "absolute" {
                return Err(meta(
                    "position_embedding_type",
                    format!("`{p}` is not implemented by prbench's BERT encoder (absolute only)"),
                ));
            }
        }
        if raw.num_attention_heads == 0 || !raw.hidden_size.is_multiple_of(raw.num_attention_heads)
        {
            return Err(meta(
                "num_attention_heads",
                format!(
                    "{} heads do not divide hidden_size {}",
                    raw.num_attention_heads, raw.hidden_size
                ),
            ));
        }
        Ok(Self {
            vocab_size: raw.vocab_size,
            hidden_size: raw.hidden_size,
            num_hidden_layers: raw.num_hidden_layers,
            num_attention_heads: raw.num_attention_heads,
            intermediate_size: raw.intermediate_size,
            hidden_act,
            max_position_embeddings: raw.max_position_embeddings,
            type_vocab_size: raw.type_vocab_size,
            layer_norm_eps: raw.layer_norm_eps as f32,
            model_type: raw.model_type,
        })
    }

    /// Reads and parses `path`.
    ///
    /// # Errors
    /// [`ModelError::File`] when unreadable; as [`BertConfig::parse`].
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::file(path, "", e))?;
        Self::parse(&text, path)
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINILM: &str = r#"{"hidden_act": "gelu", "hidden_size": 384, "intermediate_size": 1536,
        "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "num_attention_heads": 12,
        "num_hidden_layers": 6, "position_embedding_type": "absolute", "type_vocab_size": 2,
        "vocab_size": 30522, "model_type": "bert"}"#;

    #[test]
    fn parses_and_refuses_what_it_does_not_run() {
        let p = Path::new("config.json");
        let c = BertConfig::parse(MINILM, p).unwrap();
        assert_eq!((c.hidden_act, c.head_dim(), c.layer_norm_eps), (HiddenAct::GeluErf, 32, 1e-12));
        let e = BertConfig::parse(&MINILM.replace("\"absolute\"", "\"relative_key\""), p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("relative_key") && e.contains("position_embedding_type"), "{e}");
        let e =
            BertConfig::parse(&MINILM.replace("\"gelu\"", "\"swish\""), p).unwrap_err().to_string();
        assert!(e.contains("swish"), "{e}");
        let e = BertConfig::parse(
            &MINILM.replace("\"num_attention_heads\": 12", "\"num_attention_heads\": 7"),
            p,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("7 heads"), "{e}");
        assert!(BertConfig::parse("{}", p).unwrap_err().to_string().contains("not a BERT config"));
    }
}
