//! `config.json` of a Hugging Face decoder checkpoint, resolved into one runtime configuration.
//!
//! Each default below is the one transformers 5.24 applies when the key is absent, per
//! architecture (`models/<arch>/configuration_<arch>.py`, `__post_init__`); keys that fix a
//! tensor shape (`hidden_size`, `intermediate_size`, `num_hidden_layers`,
//! `num_attention_heads`) are required, since a default there can only produce a shape error
//! later. Every weight shape is checked against this configuration at load time.

use std::path::{Path, PathBuf};

use prbench_models::ModelError;
use serde_json::Value;

/// A supported decoder family (`architectures[0]` in `config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Architecture {
    /// `LlamaForSequenceClassification` (`models/llama/modeling_llama.py`).
    Llama,
    /// `Qwen2ForSequenceClassification` (`models/qwen2/modeling_qwen2.py`).
    Qwen2,
    /// `Qwen3ForSequenceClassification` (`models/qwen3/modeling_qwen3.py`).
    Qwen3,
    /// `MistralForSequenceClassification` (`models/mistral/modeling_mistral.py`).
    Mistral,
    /// `Gemma2ForSequenceClassification` (`models/gemma2/modeling_gemma2.py`).
    Gemma2,
}

impl Architecture {
    /// The supported `architectures[0]` values, in the order error messages list them.
    pub const SUPPORTED: [&'static str; 5] = [
        "LlamaForSequenceClassification",
        "Qwen2ForSequenceClassification",
        "Qwen3ForSequenceClassification",
        "MistralForSequenceClassification",
        "Gemma2ForSequenceClassification",
    ];

    /// Parses an `architectures[0]` value; `None` when unsupported.
    pub fn from_hf_name(name: &str) -> Option<Self> {
        Some(match name {
            "LlamaForSequenceClassification" => Self::Llama,
            "Qwen2ForSequenceClassification" => Self::Qwen2,
            "Qwen3ForSequenceClassification" => Self::Qwen3,
            "MistralForSequenceClassification" => Self::Mistral,
            "Gemma2ForSequenceClassification" => Self::Gemma2,
            _ => return None,
        })
    }

    /// The transformers class name (e.g. `Qwen2ForSequenceClassification`).
    pub fn hf_name(self) -> &'static str {
        match self {
            Self::Llama => Self::SUPPORTED[0],
            Self::Qwen2 => Self::SUPPORTED[1],
            Self::Qwen3 => Self::SUPPORTED[2],
            Self::Mistral => Self::SUPPORTED[3],
            Self::Gemma2 => Self::SUPPORTED[4],
        }
    }
}

/// The MLP activation (`hidden_act`, or `hidden_activation` for Gemma 2), transformers
/// `activations.py` `ACT2FN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `silu` / `swish`: x·sigmoid(x).
    Silu,
    /// `gelu_pytorch_tanh` / `gelu_new`: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
    GeluTanh,
    /// `gelu`: 0.5·x·(1 + erf(x/√2)).
    GeluErf,
}

/// The attention pattern of one layer (`layer_types` entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// `full_attention`: causal.
    Full,
    /// `sliding_attention`: causal, and a query at index q sees keys k with q − k < window
    /// (`masking_utils.py` `sliding_window_overlay`: `kv_idx > q_idx - sliding_window`).
    Sliding,
}

/// RoPE frequency scaling (`rope_parameters["rope_type"]`, `modeling_rope_utils.py`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RopeScaling {
    /// `default`: inv_freq = 1 / θ^(2i/d).
    Default,
    /// `linear`: inv_freq / factor (`_compute_linear_scaling_rope_parameters`).
    Linear {
        /// Scaling factor.
        factor: f64,
    },
    /// `llama3` (`_compute_llama3_parameters`).
    Llama3 {
        /// `factor` (8 for Llama 3.1).
        factor: f64,
        /// `low_freq_factor` (1).
        low_freq_factor: f64,
        /// `high_freq_factor` (4).
        high_freq_factor: f64,
        /// `original_max_position_embeddings` (8192); defaults to `max_position_embeddings`.
        original_max_position_embeddings: f64,
    },
}

/// The resolved configuration of a decoder with a sequence-classification head.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderConfig {
    /// Path of the `config.json` read (for messages).
    pub path: PathBuf,
    /// Model family.
    pub architecture: Architecture,
    /// `vocab_size`, when given (checked against the embedding matrix).
    pub vocab_size: Option<usize>,
    /// Residual width.
    pub hidden_size: usize,
    /// MLP inner width.
    pub intermediate_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads (GQA groups); divides `num_attention_heads`.
    pub num_key_value_heads: usize,
    /// Per-head width.
    pub head_dim: usize,
    /// RMSNorm epsilon.
    pub rms_norm_eps: f64,
    /// RoPE base θ.
    pub rope_theta: f64,
    /// RoPE frequency scaling.
    pub rope_scaling: RopeScaling,
    /// Context length the model was configured for.
    pub max_position_embeddings: usize,
    /// Sliding window size in tokens, where some layer uses one.
    pub sliding_window: Option<usize>,
    /// Attention pattern per layer (`num_hidden_layers` entries).
    pub layer_types: Vec<LayerKind>,
    /// q/k/v projections have a bias (Qwen 2 always; Llama, Qwen 3, Gemma 2 when
    /// `attention_bias`).
    pub qkv_bias: bool,
    /// o projection has a bias (Llama, Qwen 3, Gemma 2 when `attention_bias`).
    pub o_bias: bool,
    /// gate/up/down projections have a bias (Llama `mlp_bias`).
    pub mlp_bias: bool,
    /// Per-head RMSNorm on q and k before RoPE (Qwen 3 `q_norm`/`k_norm`).
    pub qk_norm: bool,
    /// MLP activation.
    pub activation: Activation,
    /// Attention score scale: `head_dim^-0.5`, or `query_pre_attn_scalar^-0.5` for Gemma 2.
    pub attn_scale: f64,
    /// Gemma 2 `attn_logit_softcapping`: scores ← c·tanh(scores / c) before masking.
    pub attn_logit_softcapping: Option<f64>,
    /// Gemma 2 layout: RMSNorm scales by (1 + w); extra post-attention, pre- and
    /// post-feed-forward norms; embeddings multiplied by √hidden_size.
    pub gemma_layout: bool,
    /// Number of logits of the score head.
    pub num_labels: usize,
    /// Label names (`id2label`, by id), or `LABEL_i` when absent.
    pub label_names: Vec<String>,
    /// `pad_token_id` (drives pooling; may be absent).
    pub pad_token_id: Option<u32>,
    /// `bos_token_id`.
    pub bos_token_id: Option<u32>,
    /// `eos_token_id` (an int or a list in `config.json`).
    pub eos_token_ids: Vec<u32>,
}

/// Typed access to the keys of one `config.json`, with errors naming the file and key.
struct Keys<'a> {
    v: &'a serde_json::Map<String, Value>,
    path: &'a Path,
}

impl Keys<'_> {
    fn err(&self, key: &str, reason: impl Into<String>) -> ModelError {
        ModelError::Metadata {
            path: self.path.to_path_buf(),
            key: key.into(),
            reason: reason.into(),
        }
    }

    /// The value of `key`, `None` when absent or `null`.
    fn get(&self, key: &str) -> Option<&Value> {
        self.v.get(key).filter(|v| !v.is_null())
    }

    fn opt_usize(&self, key: &str) -> Result<Option<usize>, ModelError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(|n| Some(n as usize)).ok_or_else(|| {
                self.err(key, format!("expected a non-negative integer, found `{v}`"))
            }),
        }
    }

    fn req_usize(&self, key: &str) -> Result<usize, ModelError> {
        match self.opt_usize(key)? {
            Some(0) => Err(self.err(key, "must be positive")),
            Some(n) => Ok(n),
            None => Err(self.err(key, "missing (required)")),
        }
    }

    fn opt_f64(&self, key: &str) -> Result<Option<f64>, ModelError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.err(key, format!("expected a number, found `{v}`"))),
        }
    }

    fn opt_bool(&self, key: &str) -> Result<Option<bool>, ModelError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.err(key, format!("expected true or false, found `{v}`"))),
        }
    }

    fn opt_str(&self, key: &str) -> Result<Option<&str>, ModelError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| self.err(key, format!("expected a string, found `{v}`"))),
        }
    }

    fn token_id(&self, key: &str, v: &Value) -> Result<u32, ModelError> {
        v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
            self.err(key, format!("expected a token id (non-negative integer), found `{v}`"))
        })
    }

    /// A token id key: `Ok(None)` when present as `null`, `Err` on a wrong type, `default`
    /// when absent.
    fn opt_token(&self, key: &str, default: Option<u32>) -> Result<Option<u32>, ModelError> {
        match self.v.get(key) {
            None => Ok(default),
            Some(Value::Null) => Ok(None),
            Some(v) => self.token_id(key, v).map(Some),
        }
    }

    /// `eos_token_id`: an int, a list of ints, or null.
    fn token_list(&self, key: &str, default: Option<u32>) -> Result<Vec<u32>, ModelError> {
        match self.v.get(key) {
            None => Ok(default.into_iter().collect()),
            Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items.iter().map(|v| self.token_id(key, v)).collect(),
            Some(v) => Ok(vec![self.token_id(key, v)?]),
        }
    }
}

impl DecoderConfig {
    /// Reads and resolves `dir/config.json`.
    ///
    /// # Errors
    /// [`ModelError::File`] when the file is missing or not JSON; [`ModelError::Metadata`]
    /// naming `config.json` and the key for an unsupported architecture (listing the supported
    /// ones), a missing required key, a value of the wrong type, an unsupported RoPE type, or
    /// an inconsistent combination (heads not divisible, a sliding layer without a window).
    pub fn from_dir(dir: &Path) -> Result<Self, ModelError> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(|e| ModelError::file(&path, "", e))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| ModelError::file(&path, "not valid JSON", e))?;
        Self::from_json(&value, &path)
    }

    /// Resolves an already parsed `config.json` (`path` is used in messages only).
    ///
    /// # Errors
    /// As [`DecoderConfig::from_dir`].
    pub fn from_json(value: &Value, path: &Path) -> Result<Self, ModelError> {
        let obj = value.as_object().ok_or_else(|| ModelError::Metadata {
            path: path.to_path_buf(),
            key: "(top level)".into(),
            reason: "expected a JSON object".into(),
        })?;
        let k = Keys { v: obj, path };
        let supported = Architecture::SUPPORTED.join(", ");
        let arch_name = match k.get("architectures") {
            Some(Value::Array(a)) if !a.is_empty() => a[0].as_str().ok_or_else(|| {
                k.err("architectures", format!("expected a list of strings, found `{}`", a[0]))
            })?,
            Some(v) => {
                return Err(k.err(
                    "architectures",
                    format!("expected a non-empty list, found `{v}`; supported: {supported}"),
                ))
            }
            None => {
                return Err(
                    k.err("architectures", format!("missing (required); supported: {supported}"))
                )
            }
        };
        let arch = Architecture::from_hf_name(arch_name).ok_or_else(|| {
            k.err("architectures", format!("architecture `{arch_name}` is not supported; supported architectures: {supported}"))
        })?;
        use Architecture as A;

        let hidden_size = k.req_usize("hidden_size")?;
        let intermediate_size = k.req_usize("intermediate_size")?;
        let num_hidden_layers = k.req_usize("num_hidden_layers")?;
        let num_attention_heads = k.req_usize("num_attention_heads")?;
        // Class defaults when the key is absent (configuration_<arch>.py).
        let kv_default = match arch {
            A::Llama => num_attention_heads,
            A::Qwen2 | A::Qwen3 => 32,
            A::Mistral => 8,
            A::Gemma2 => 4,
        };
        let num_key_value_heads = k.opt_usize("num_key_value_heads")?.unwrap_or(kv_default);
        if num_key_value_heads == 0 || num_attention_heads % num_key_value_heads != 0 {
            return Err(k.err(
                "num_key_value_heads",
                format!("{num_key_value_heads} does not divide num_attention_heads = {num_attention_heads}"),
            ));
        }
        let head_dim = match (k.opt_usize("head_dim")?, arch) {
            (Some(d), _) => d,
            (None, A::Qwen3) => 128,
            (None, A::Gemma2) => 256,
            (None, _) => hidden_size / num_attention_heads,
        };
        if head_dim == 0 || head_dim % 2 != 0 {
            return Err(k.err("head_dim", format!("{head_dim} must be positive and even for RoPE")));
        }
        let rms_norm_eps = k.opt_f64("rms_norm_eps")?.unwrap_or(1e-6);
        let max_position_embeddings =
            k.opt_usize("max_position_embeddings")?.unwrap_or(match arch {
                A::Llama => 2048,
                A::Qwen2 | A::Qwen3 => 32768,
                A::Mistral => 4096 * 32,
                A::Gemma2 => 8192,
            });

        if k.opt_bool("is_causal")? == Some(false)
            || k.opt_bool("use_bidirectional_attention")? == Some(true)
        {
            return Err(k.err(
                "is_causal / use_bidirectional_attention",
                "bidirectional attention is not supported (this engine is causal only)",
            ));
        }

        let (rope_theta, rope_scaling) = rope(&k, max_position_embeddings)?;
        let (sliding_window, layer_types) = layers(&k, arch, num_hidden_layers)?;

        let attention_bias = k.opt_bool("attention_bias")?.unwrap_or(false);
        let (qkv_bias, o_bias) = match arch {
            A::Qwen2 => (true, false),
            A::Mistral => (false, false),
            A::Llama | A::Qwen3 | A::Gemma2 => (attention_bias, attention_bias),
        };
        let mlp_bias = arch == A::Llama && k.opt_bool("mlp_bias")?.unwrap_or(false);

        let (act_key, act_default) = match arch {
            A::Gemma2 => ("hidden_activation", "gelu_pytorch_tanh"),
            _ => ("hidden_act", "silu"),
        };
        let act_name = k.opt_str(act_key)?.unwrap_or(act_default);
        let activation = match act_name {
            "silu" | "swish" => Activation::Silu,
            "gelu_pytorch_tanh" | "gelu_new" => Activation::GeluTanh,
            "gelu" => Activation::GeluErf,
            other => {
                return Err(k.err(act_key, format!("activation `{other}` is not supported (supported: silu, gelu_pytorch_tanh, gelu_new, gelu)")))
            }
        };

        let (attn_scale, attn_logit_softcapping) = match arch {
            A::Gemma2 => {
                let q = k.opt_f64("query_pre_attn_scalar")?.unwrap_or(256.0);
                if q <= 0.0 {
                    return Err(k.err("query_pre_attn_scalar", format!("{q} must be positive")));
                }
                let cap = match obj.get("attn_logit_softcapping") {
                    None => Some(50.0),
                    Some(Value::Null) => None,
                    Some(_) => k.opt_f64("attn_logit_softcapping")?,
                };
                (q.powf(-0.5), cap)
            }
            _ => ((head_dim as f64).powf(-0.5), None),
        };

        let (num_labels, label_names) = labels(&k)?;

        let (pad_default, bos_default, eos_default) = match arch {
            A::Llama | A::Mistral => (None, Some(1), Some(2)),
            A::Qwen2 | A::Qwen3 => (None, None, None),
            A::Gemma2 => (Some(0), Some(2), Some(1)),
        };
        Ok(Self {
            path: path.to_path_buf(),
            architecture: arch,
            vocab_size: k.opt_usize("vocab_size")?,
            hidden_size,
            intermediate_size,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps,
            rope_theta,
            rope_scaling,
            max_position_embeddings,
            sliding_window,
            layer_types,
            qkv_bias,
            o_bias,
            mlp_bias,
            qk_norm: arch == A::Qwen3,
            activation,
            attn_scale,
            attn_logit_softcapping,
            gemma_layout: arch == A::Gemma2,
            num_labels,
            label_names,
            pad_token_id: k.opt_token("pad_token_id", pad_default)?,
            bos_token_id: k.opt_token("bos_token_id", bos_default)?,
            eos_token_ids: k.token_list("eos_token_id", eos_default)?,
        })
    }
}

/// Sliding window and per-layer attention pattern, per architecture:
/// Llama: all causal; Mistral: every layer uses `sliding_window` when set (default 4096,
/// `MistralModel.forward` picks `create_sliding_window_causal_mask`); Qwen 2/3: the window only
/// when `use_sliding_window`, layer i sliding when i ≥ `max_window_layers` unless `layer_types`
/// is given; Gemma 2: `layer_types` or alternating sliding (even i) / full, window default 4096.
fn layers(
    k: &Keys<'_>,
    arch: Architecture,
    n: usize,
) -> Result<(Option<usize>, Vec<LayerKind>), ModelError> {
    use Architecture as A;
    let window_or = |default: Option<usize>| -> Result<Option<usize>, ModelError> {
        match k.v.get("sliding_window") {
            None => Ok(default),
            Some(Value::Null) => Ok(None),
            Some(_) => k.opt_usize("sliding_window"),
        }
    };
    let explicit = |k: &Keys<'_>| -> Result<Option<Vec<LayerKind>>, ModelError> {
        let Some(v) = k.get("layer_types") else { return Ok(None) };
        let items = v
            .as_array()
            .ok_or_else(|| k.err("layer_types", format!("expected a list, found `{v}`")))?;
        if items.len() != n {
            return Err(k.err(
                "layer_types",
                format!("has {} entries, num_hidden_layers is {n}", items.len()),
            ));
        }
        items
            .iter()
            .map(|t| match t.as_str() {
                Some("full_attention") => Ok(LayerKind::Full),
                Some("sliding_attention") => Ok(LayerKind::Sliding),
                _ => Err(k.err(
                    "layer_types",
                    format!("entry `{t}` is not supported (supported: full_attention, sliding_attention)"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    };
    let (window, kinds) = match arch {
        A::Llama => (None, vec![LayerKind::Full; n]),
        A::Mistral => {
            let w = window_or(Some(4096))?;
            let kind = if w.is_some() { LayerKind::Sliding } else { LayerKind::Full };
            (w, vec![kind; n])
        }
        A::Qwen2 | A::Qwen3 => {
            let use_sw = k.opt_bool("use_sliding_window")?.unwrap_or(false);
            let w = if use_sw { window_or(Some(4096))? } else { None };
            let kinds = match explicit(k)? {
                Some(kinds) => kinds,
                None => {
                    let max_window_layers = k.opt_usize("max_window_layers")?.unwrap_or(28);
                    (0..n)
                        .map(|i| {
                            if w.is_some() && i >= max_window_layers {
                                LayerKind::Sliding
                            } else {
                                LayerKind::Full
                            }
                        })
                        .collect()
                }
            };
            (w, kinds)
        }
        A::Gemma2 => {
            let w = window_or(Some(4096))?;
            let kinds = match explicit(k)? {
                Some(kinds) => kinds,
                None => (0..n)
                    .map(|i| if (i + 1) % 2 == 1 { LayerKind::Sliding } else { LayerKind::Full })
                    .collect(),
            };
            (w, kinds)
        }
    };
    if window == Some(0) {
        return Err(k.err("sliding_window", "must be positive"));
    }
    if window.is_none() && kinds.contains(&LayerKind::Sliding) {
        return Err(k.err(
            "sliding_window",
            "layer_types has sliding_attention layers but no sliding window is set (transformers raises here too)",
        ));
    }
    Ok((window, kinds))
}

/// Number and names of labels, as `PreTrainedConfig.__post_init__` (transformers
/// `configuration_utils.py`): `len(id2label)` when present (a conflicting `num_labels` is an
/// error), else `num_labels`, else 2.
fn labels(k: &Keys<'_>) -> Result<(usize, Vec<String>), ModelError> {
    let num_labels = k.opt_usize("num_labels")?;
    match k.get("id2label") {
        Some(Value::Object(map)) => {
            let n = map.len();
            if n == 0 {
                return Err(k.err("id2label", "is empty"));
            }
            if let Some(m) = num_labels.filter(|&m| m != n) {
                return Err(k.err(
                    "num_labels",
                    format!("{m} conflicts with id2label, which has {n} entries"),
                ));
            }
            let mut names = vec![None; n];
            for (id, name) in map {
                let i = id.parse::<usize>().ok().filter(|&i| i < n).ok_or_else(|| {
                    k.err("id2label", format!("key `{id}` is not a label id in 0..{n}"))
                })?;
                names[i] = Some(name.as_str().map_or_else(|| name.to_string(), str::to_string));
            }
            let names = names
                .into_iter()
                .enumerate()
                .map(|(i, s)| s.unwrap_or_else(|| format!("LABEL_{i}")))
                .collect();
            Ok((n, names))
        }
        Some(v) => Err(k.err("id2label", format!("expected an object, found `{v}`"))),
        None => {
            let n = num_labels.unwrap_or(2);
            if n == 0 {
                return Err(k.err("num_labels", "must be positive"));
            }
            Ok((n, (0..n).map(|i| format!("LABEL_{i}")).collect()))
        }
    }
}

mod rope;
use rope::rope;

#[cfg(test)]
mod tests;
