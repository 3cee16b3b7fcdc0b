//! The local reward-model engines, on candle in f32 on CPU: sequence-classification reward models
//! in the Hugging Face layout (BERT-style encoders and Llama/Qwen-style decoders) and the MiniLM
//! embedder that dense retrieval and the personalized reward models (`prbench-train`) build on.
#![deny(missing_docs)]

pub mod batch;
pub mod decoder;
pub mod embed;
pub mod embedder;
pub mod encoder;
pub mod hub;
pub mod reward;
pub mod seqcls;
pub mod token_count;
pub mod tokenize;
