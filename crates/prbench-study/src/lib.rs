//! `prbench study PLAN.toml`: the paper's whole study from one plan file, callable without the
//! CLI.
//!
//! A plan ([`plan`]) names benchmarks, reward models and judges (optionally trained by the
//! study first), downstream legs (Best-of-N, and RL from trained policies' answers) and the
//! correlation settings. [`graph::Study::new`] checks it as a whole, before any model loads, and
//! lays it out as steps, each one library call of an existing verb. [`execute::run`] runs the
//! steps through the run caches and keeps a record per finished step, so a rerun of a finished
//! study makes no model call and a killed one resumes. [`results::write`] then writes, from the
//! run files, the reward-model table, the conditioning table and the proxy-gap table in
//! Markdown, CSV and LaTeX, and the HTML report of everything.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! # struct R; // a StudyReporter: progress bars and notes
//! let file = prbench_study::plan::PlanFile::read("examples/study/psoups.toml".as_ref())?;
//! let out = file.default_out();
//! let study = prbench_study::graph::Study::new(file, out)?;
//! for (id, _, state) in prbench_study::execute::status(&study)? {
//!     println!("{id}: {state:?}");
//! }
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod check;
pub mod execute;
pub mod flags;
pub mod graph;
pub mod plan;
pub mod proxy;
pub mod results;
pub mod table;
pub mod tables;
