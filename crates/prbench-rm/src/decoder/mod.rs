//! Decoder-only transformers in the Hugging Face layout (Llama, Qwen 2, Qwen 3, Mistral,
//! Gemma 2), computed in f32 on CPU with candle, written to agree with transformers 5.24 on
//! the same weights. [`crate::seqcls`] puts the sequence-classification head on top.
//!
//! Modules follow the Python module tree: [`config`] (`configuration_<arch>.py`), [`weights`]
//! (safetensors files), [`rope`] (`<Arch>RotaryEmbedding`, `modeling_rope_utils.py`), [`mask`]
//! (`masking_utils.py`, pooling rule), [`qkv`] (head split, q/k norm, RoPE), [`softmax`] (masked
//! attention softmax), [`attention`], [`prefix`] (a shared prefix run once),
//! [`mlp`], [`norm`], [`linear`] and [`model`] (`<Arch>Model`); [`fastmath`] and [`par`] hold
//! the vectorised exp and the row-parallel loop of the custom kernels.

pub mod attention;
pub mod config;
pub mod fastmath;
pub mod linear;
pub mod mask;
pub mod mlp;
pub mod model;
pub mod norm;
pub mod par;
pub mod prefix;
pub mod qkv;
pub mod rope;
pub mod softmax;
pub mod weights;

pub use config::{Architecture, DecoderConfig};
pub use mask::{pooled_index, Positions};
pub use prefix::PaddingSide;
