//! Personalized-RewardBench data: the schema, loaders (parquet / JSON / JSONL / Hugging Face hub),
//! validation, the adapters of other datasets ([`psoups`], [`lampqa`], [`synthesizeme`],
//! [`prism`]), dataset statistics, the export to the Hugging Face layout ([`write_hf_layout`],
//! [`card_yaml`]), the four rating dimensions of the human and LLM audits ([`dims`]), and the
//! download of named data sets into the places `--data` specs read ([`fetch`]).
//!
//! Entry points: [`load()`] (`load(spec, subsets)`, benchmark pairs) and [`load_questions()`]
//! (question rows for `prbench build`, including the [`lampqa`] adapter); see the
//! [`load`](mod@load) module for the spec forms.
#![deny(missing_docs)]

pub mod builder;
pub mod dialogue;
pub mod dims;
pub mod error;
pub mod export;
pub mod fetch;
pub mod hub;
pub mod lampqa;
pub mod load;
pub mod prism;
pub mod psoups;
pub mod schema;
pub mod select;
pub mod spec;
pub mod stats;
pub mod synthesizeme;
pub mod synthetic;
pub mod warnings;

mod json_rows;
mod parquet_rows;
mod parquet_values;
mod rows;

pub use builder::ExampleBuilder;
pub use error::DataError;
pub use export::{card_yaml, write_hf_layout, ExportedConfig};
pub use load::{load, load_questions, load_with_history, RowShape, HISTORY_SPECS};
pub use schema::*;
pub use stats::{dataset_stats, DatasetStats};
pub use warnings::dataset_warnings;
