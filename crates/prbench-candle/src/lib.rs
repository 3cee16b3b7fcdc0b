//! Candle engines for prbench (DESIGN.md, engines): sequence-classification reward models in the
//! Hugging Face layout, computed in f32 on CPU, and the Bradley-Terry and PAL personalized reward
//! models on frozen MiniLM embeddings.
#![warn(missing_docs)]

pub mod batch;
pub mod bt;
pub mod decoder;
pub mod embed;
pub mod embedder;
pub mod encoder;
pub mod hub;
pub mod pal;
pub mod reward;
pub mod seqcls;
pub mod token_count;
pub mod tokenize;
