//! The file plumbing every prbench stage shares, so it is written once:
//!
//! - [`write_atomic`] (and [`AtomicFile`], [`write_jsonl`], [`write_json_pretty`]): a file is
//!   written to a hidden temporary file in the target's folder, flushed to disk (`fsync`) and
//!   renamed over the target, so a reader, or a run that is killed or runs out of disk, never
//!   sees half a file under the final name: it finds the old file or the whole new one.
//! - [`read_head`], [`starts_with`], [`is_sqlite`]: what a file is, from its first bytes, for
//!   the checks that refuse to overwrite a file prbench did not write (a rating store, a run
//!   cache, a user's notes).
//! - [`readable_by_all`]: mode 0644 for a file written through a private temporary file (a
//!   saved model), so the other users of a shared machine can read it.
//!
//! Errors are plain: [`WriteError`] names the target and keeps the [`std::io::Error`] as its
//! source, and each caller wraps it in its own error type with its own message.
#![deny(missing_docs)]

mod atomic;
mod perm;
mod sniff;

pub use atomic::{write_atomic, write_json_pretty, write_jsonl, AtomicFile, WriteError};
pub use perm::readable_by_all;
pub use sniff::{is_sqlite, read_head, starts_with, SQLITE_MAGIC};
