//! From a model spec to an engine, the same way for every front-end (the `prbench` binary, a
//! study plan, a test): [`load::load_model`] turns `gguf:`, `hf:`, `dir:`, `bt:`, `pal:`,
//! `baseline:` and the remote specs into a judge or reward model; [`generators`] loads the
//! planner's, Best-of-N's and build's generators and implements
//! [`prbench_eval::evaluation::Engines`]; [`retrieve`] builds the retriever a `--retriever`
//! value names; [`prepare`] readies a loaded model for the data (leak check, PAL adaptation,
//! preflight); [`flags`] are the model-loading flags; [`evaluate`] is the `eval` verb's flags
//! and what they become (checked combinations, the evaluation's options, the retry hint);
//! [`run_eval`] runs one evaluation from those flags to its run files (what `eval` and a study
//! call); [`train`] runs `train bt`/`train pal` from their flags; [`export`] is the `export` verb's (training data from the rendered inputs).
//!
//! This is the one crate that depends on every engine crate (`prbench-llm`, `prbench-rm`,
//! `prbench-train`, `prbench-remote`); the libraries below it take engines as trait objects.

#![deny(missing_docs)]

pub mod evaluate;
pub mod export;
pub mod flags;
pub mod generators;
pub mod load;
pub mod prepare;
pub mod retrieve;
pub mod run_eval;
pub mod train;
