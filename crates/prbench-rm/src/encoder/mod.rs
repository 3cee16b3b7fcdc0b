//! BERT encoders in the Hugging Face layout (`BertModel` of `modeling_bert.py`: all-MiniLM-L6-v2,
//! Contriever), computed in f32 on CPU on plain buffers, written to agree with transformers on
//! the same weights (the MiniLM embedder's engine, [`crate::embed`]).
//!
//! Sequences are packed: a batch is the concatenation of its sequences' tokens (no padding
//! rows), every per-token step (projections, LayerNorm, GELU) runs on `[tokens, width]`
//! matrices, and attention runs per (sequence, head) over that sequence's own keys only, so
//! padding costs nothing and needs no mask.
//!
//! Modules: [`config`] (`configuration_bert.py`), [`model`] (weights and the forward pass),
//! [`matmul`] (the GEMMs, through the `gemm` crate candle's CPU matmul uses), [`attention`]
//! (per-head softmax attention), [`layer_norm`] (residual add + LayerNorm), [`gelu`] (erf GELU)
//! and [`pool`] (masked mean pooling and L2 normalisation).

pub mod attention;
pub mod config;
pub mod gelu;
pub mod layer_norm;
pub mod matmul;
pub mod model;
pub mod pool;

pub use config::{BertConfig, HiddenAct};
pub use model::{BertEncoder, Packed};

/// Engine name recorded in manifests and bench rows.
pub const ENGINE: &str = "prbench BERT encoder (packed, f32 CPU)";
