//! The work of `prbench annotate`'s sub-verbs behind the flags ([`crate::flags`]), for any
//! front-end: the caller turns its flags into options, calls one function here and prints.
//! Notes for the user (what was made, resumed or written, warnings) go to a `note` sink, one
//! line each without the `prbench: ` prefix; what belongs on stdout (links, rows, a report) is
//! returned or written to the `stdout` the caller passes, so the caller decides where each goes.
//!
//! - `prepare_serve` / `Server::run` (with the default feature `server`): `annotate serve`
//!   (bind, load, open or resume the store, the links to print; then serve until a shutdown
//!   signal);
//! - [`export_ratings`]: `annotate export`;
//! - [`agreement_text`]: `annotate agreement`;
//! - [`write_report`]: `annotate report`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::agreement;
use crate::export::{self, Format, Output};
use crate::report;
use crate::{AnnotateError, Store};

#[cfg(feature = "server")]
mod serve;
#[cfg(feature = "server")]
pub use serve::{prepare_serve, ServeOptions, Server};

/// What a sub-verb's front can fail on: the library's own errors, and the I/O and data
/// loading around them, each naming what it was doing (the cause below it).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The store, the export or the report failed.
    #[error(transparent)]
    Annotate(#[from] AnnotateError),
    /// The address cannot be listened on.
    #[error("listening on {addr} (another program has the port? pick another with --port, or --port 0 for any free one)")]
    Listen {
        /// `--host`:`--port`.
        addr: SocketAddr,
        /// The bind error.
        #[source]
        source: std::io::Error,
    },
    /// The dataset did not load.
    #[error("loading dataset `{spec}`")]
    Data {
        /// The `--data` spec.
        spec: String,
        /// Why (boxed: the data errors are large).
        #[source]
        source: Box<prbench_data::DataError>,
    },
    /// The server stopped with an error.
    #[error("serving on {bound}")]
    Serve {
        /// The address it listened on.
        bound: SocketAddr,
        /// The server's I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An output file cannot be created.
    #[error("creating `{}`", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An output file cannot be written to disk.
    #[error("writing `{}`", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Writing to the caller's stdout, or reading the bound address, failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// `annotate agreement`'s ratings file cannot be read.
    #[error(transparent)]
    Ratings(#[from] Box<agreement::RatingsError>),
    /// `annotate agreement`'s bootstrap settings are unusable.
    #[error(transparent)]
    Bootstrap(#[from] agreement::ConfigError),
    /// `annotate agreement --json` cannot be encoded.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Whether `to` names stdout (`-`).
fn is_stdout(to: &Path) -> bool {
    to == Path::new("-")
}

/// Writes through `f` to `to`, or to `stdout` for `-`; a file is checked first
/// ([`export::check_output`]) and synced after.
fn write_to(
    to: &Path,
    what: Output,
    stdout: &mut dyn Write,
    f: impl FnOnce(&mut dyn Write) -> Result<(), CommandError>,
) -> Result<(), CommandError> {
    if is_stdout(to) {
        return f(stdout);
    }
    export::check_output(to, what)?;
    let mut file = std::fs::File::create(to)
        .map_err(|source| CommandError::Create { path: to.to_path_buf(), source })?;
    f(&mut file)?;
    file.sync_all().map_err(|source| CommandError::Write { path: to.to_path_buf(), source })
}

/// `annotate export`: every saved rating of the folder `out`, one row per annotator × item ×
/// answer × dimension, in `format`, to `to` (`-`: `stdout`; `None`: `<out>/ratings.csv` or
/// `<out>/ratings.jsonl`). A file written gets a note with the counts.
///
/// # Errors
/// No store, a refused `to` (a store, a file this command did not write), I/O.
pub fn export_ratings(
    out: &Path,
    format: Format,
    to: Option<&Path>,
    stdout: &mut dyn Write,
    note: &mut dyn FnMut(&str),
) -> Result<(), CommandError> {
    let store = Store::open(out)?;
    let ext = match format {
        Format::Csv => "csv",
        Format::Jsonl => "jsonl",
    };
    let to = to.map_or_else(|| out.join(format!("ratings.{ext}")), Path::to_path_buf);
    let ratings = store.ratings()?;
    let rows = export::rows(&ratings);
    write_to(&to, Output::Export(format), stdout, |w| Ok(export::write(&rows, format, w, &to)?))?;
    if !is_stdout(&to) {
        note(&format!(
            "wrote {} rows ({} ratings of {} assigned) to `{}`",
            rows.len(),
            ratings.len(),
            store.assignment_count()?,
            to.display()
        ));
    }
    Ok(())
}

/// `annotate agreement`: Krippendorff's alpha per dimension of the ratings CSV at `ratings`,
/// with `resamples` bootstrap resamples seeded by `seed` (95% CIs). Returns what goes to
/// stdout: a JSON object (dimension → statistics, with a closing newline; the unused columns
/// are a note) or the Markdown table (which names the unused columns itself).
///
/// # Errors
/// An unreadable ratings file, unusable bootstrap settings.
pub fn agreement_text(
    ratings: &Path,
    json: bool,
    resamples: usize,
    seed: u64,
    note: &mut dyn FnMut(&str),
) -> Result<String, CommandError> {
    let ratings = agreement::Ratings::from_csv_path(ratings).map_err(Box::new)?;
    let cfg = agreement::AgreementConfig {
        bootstrap: agreement::AlphaBootstrapConfig::new(resamples, seed, 0.95)?,
    };
    let rep = agreement::agreement(&ratings, &cfg);
    if json {
        if !ratings.ignored_columns().is_empty() {
            note(&format!("columns not used: {}", ratings.ignored_columns().join(", ")));
        }
        Ok(format!("{}\n", serde_json::to_string_pretty(&rep.dimensions)?))
    } else {
        Ok(agreement::markdown_table(&rep))
    }
}

/// `annotate report`: the human-evaluation report of the folder `out` in Markdown, to `to`
/// (`-`: `stdout`; `None`: `<out>/annotate-report.md`), its CIs from `cfg`. A file written
/// gets a note.
///
/// # Errors
/// No store, a refused `to`, I/O.
pub fn write_report(
    out: &Path,
    to: Option<&Path>,
    cfg: &report::ReportConfig,
    stdout: &mut dyn Write,
    note: &mut dyn FnMut(&str),
) -> Result<(), CommandError> {
    let store = Store::open(out)?;
    let md = report::markdown(&report::build(&store, cfg)?);
    let to = to.map_or_else(|| out.join("annotate-report.md"), Path::to_path_buf);
    write_to(&to, Output::Report, stdout, |w| Ok(w.write_all(md.as_bytes())?))?;
    if !is_stdout(&to) {
        note(&format!("wrote `{}`", to.display()));
    }
    Ok(())
}
