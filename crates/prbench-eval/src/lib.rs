//! Evaluation for prbench: conditions decide what the model under test may see, prompts
//! render it, the leakage guard checks every rendered input, the runner calls the backend,
//! and outcomes and summaries come out (docs/ARCHITECTURE.md, "Data flow"; PROTOCOL.md §2–5).
//!
//! ```no_run
//! use prbench_eval::{condition::Condition, runner::{evaluate, Backend, EvalOptions, Silent}, prompt::Prompts};
//! use prbench_models::baselines::Baseline;
//! let data = prbench_data::load::load("data/sample", &[]).unwrap();
//! let opts = EvalOptions::new(Condition::None);
//! let outcomes = evaluate(&data.examples, Backend::RewardModel(&Baseline::Longer), &opts, &Prompts::new(), &Silent).unwrap();
//! println!("{} outcomes", outcomes.len());
//! ```
#![deny(missing_docs)]

pub mod cache;
pub mod cached_scorer;
pub mod condition;
pub mod controls;
pub mod error;
pub mod evaluation;
pub mod leakage;
pub mod matrix;
pub mod outcome;
pub mod planner;
pub mod prompt;
pub mod recipe;
pub mod retrieve;
pub mod run;
pub mod runner;
pub mod slots;
pub mod summary;
pub mod training_export;

pub use error::EvalError;
