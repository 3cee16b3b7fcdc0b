//! The personalized reward models prbench trains: the Bradley-Terry head ([`bt`]) and PAL-A /
//! PAL-B ([`pal`]), on frozen MiniLM embeddings from `prbench-rm`. Each holds its training
//! (pairs from a dataset, the training loop, the saved files) and the trained model's
//! [`prbench_models::RewardModel`]: PAL scores an unseen user after a few gradient steps on
//! that user's history, so its scoring needs the trainer, and both live here, apart from the
//! inference-only engines. Both take one [`options::RunOptions`] (the flags they share, and
//! the method's own training settings). `prbench train`'s flags are [`flags`], and what the
//! command does between them and the pipelines is [`front`].
#![deny(missing_docs)]

pub mod bt;
pub mod flags;
pub mod front;
pub mod options;
pub mod pal;
