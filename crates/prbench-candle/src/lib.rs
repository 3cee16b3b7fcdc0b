//! Candle engines for prbench (DESIGN.md, engines): sequence-classification reward models in the
//! Hugging Face layout, computed in f32 on CPU, and the Bradley-Terry and PAL personalized reward
//! models on frozen MiniLM embeddings.
#![warn(missing_docs)]

pub mod batch;
pub mod hub;
pub mod reward;
pub mod token_count;
pub mod tokenize;
pub mod embed;
pub mod encoder;
pub mod embedder;
pub mod bt;
pub mod pal;
pub mod decoder;
pub mod seqcls;
