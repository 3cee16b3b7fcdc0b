//! Best-of-N (PROTOCOL.md §6): a policy samples N answers per question ([`sample`]), the
//! rubric judge scores each against the hidden rubric ([`rubric`]), each reward model under
//! test scores each ([`score`]; a generative judge through our rating prompt, [`rating`]),
//! and [`report`] gives the exact expected rubric score of the best-of-k choice for every k.
//! [`folder`] lays out the files of one sampling run. [`stages`] runs each step over a folder
//! (`prbench bon sample|judge|score|report`), with the [`options`] that are also its flags.

pub mod error;
pub mod files;
pub mod folder;
pub mod options;
pub mod prompts;
pub mod rating;
pub mod report;
pub mod rubric;
pub mod rubric_parse;
pub mod sample;
pub mod score;
pub mod stages;

pub use error::BonError;
