//! The work of `prbench annotate`'s sub-verbs behind the flags ([`crate::flags`]), for any
//! front-end: the caller turns its flags into options, calls one function here and prints.
//! Notes for the user (what was made, resumed or written, warnings) go to a `note` sink, one
//! line each without the `prbench: ` prefix; what belongs on stdout (links, rows, a report) is
//! returned or written to the `stdout` the caller passes, so the caller decides where each goes.
//!
//! - [`prepare_serve`] / [`Server::run`]: `annotate serve` (bind, load, open or resume the store,
//!   the links to print; then serve until a shutdown signal);
//! - [`export_ratings`]: `annotate export`;
//! - [`agreement_text`]: `annotate agreement`;
//! - [`write_report`]: `annotate report`.

use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use prbench_records::plural::count;

use crate::agreement;
use crate::export::{self, Format, Output};
use crate::report;
use crate::server::{page_url_at, public_base, run_blocking};
use crate::{AnnotateError, Opened, Store, StoreSpec};

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

/// `annotate serve`'s settings (the flags of [`crate::flags::AnnotateServeArgs`]).
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The dataset spec (`prbench_data::load`).
    pub data: String,
    /// Subsets to load; all when empty.
    pub subset: Vec<String>,
    /// The annotation folder.
    pub out: PathBuf,
    /// Annotator names.
    pub annotators: Vec<String>,
    /// Annotators per item; `None`: 2, or 1 with a single annotator.
    pub per_item: Option<usize>,
    /// At most this many items per subset (dataset order); `None`: all.
    pub limit: Option<usize>,
    /// Seed of the assignment and answer orders.
    pub seed: u64,
    /// Address to listen on.
    pub host: IpAddr,
    /// The address annotators reach the server at, when it differs from `host`:`port`.
    pub public_url: Option<String>,
    /// Port (0: any free port).
    pub port: u16,
    /// Issue new links for every annotator of a resumed folder.
    pub new_tokens: bool,
}

/// How `--subset` and `--limit` chose the items, as the store records it.
fn selection(opts: &ServeOptions) -> String {
    let mut parts = Vec::new();
    if !opts.subset.is_empty() {
        parts.push(format!("--subset {}", opts.subset.join(",")));
    }
    if let Some(l) = opts.limit {
        parts.push(format!("--limit {l}"));
    }
    if parts.is_empty() {
        "all items (no --subset, no --limit)".into()
    } else {
        parts.join(" ")
    }
}

/// A rating server ready to run: bound, its store open, and the lines to print.
pub struct Server {
    listener: TcpListener,
    store: Store,
    bound: SocketAddr,
    links: Vec<String>,
}

impl Server {
    /// The address the server listens on (the port chosen when `--port 0`).
    pub fn bound(&self) -> SocketAddr {
        self.bound
    }

    /// The lines for stdout, one per annotator: `NAME URL` when links were issued, else a
    /// line saying the link printed at the first start still works (or where the server
    /// moved from).
    pub fn links(&self) -> &[String] {
        &self.links
    }

    /// Serves the rating page until `shutdown` completes (every rating is saved as it
    /// arrives).
    ///
    /// # Errors
    /// [`CommandError::Serve`] with the server's I/O error.
    pub fn run<F>(self, shutdown: impl FnOnce() -> F) -> Result<(), CommandError>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let bound = self.bound;
        run_blocking(self.listener, Arc::new(self.store), shutdown)
            .map_err(|source| CommandError::Serve { bound, source })
    }
}

/// `annotate serve` up to serving, in this order: `--public-url` and the folder are checked,
/// the address is bound (a taken port fails before a new folder hands out links nobody sees),
/// the data loads, and the store is created or resumed (new links when created, or with
/// `new_tokens`). Notes: the data's warnings, the folder made or resumed, a non-loopback host.
///
/// # Errors
/// A bad `--public-url`, folder or annotators ([`CommandError::Annotate`]), a taken address
/// ([`CommandError::Listen`]), data that does not load ([`CommandError::Data`]), the store's
/// errors.
pub fn prepare_serve(
    opts: &ServeOptions,
    note: &mut dyn FnMut(&str),
) -> Result<Server, CommandError> {
    let public = opts.public_url.as_deref().map(public_base).transpose()?;
    crate::store::check_folder(&opts.out)?;
    let addr = SocketAddr::new(opts.host, opts.port);
    let listener =
        TcpListener::bind(addr).map_err(|source| CommandError::Listen { addr, source })?;
    let bound = listener.local_addr()?;
    let data = prbench_data::load(&opts.data, &opts.subset)
        .map_err(|e| CommandError::Data { spec: opts.data.clone(), source: Box::new(e) })?;
    for w in prbench_data::dataset_warnings(&data) {
        note(&w);
    }
    let examples: Vec<_> = prbench_data::select::first_per_subset(&data.examples, opts.limit)
        .into_iter()
        .cloned()
        .collect();
    let per_item = opts.per_item.unwrap_or(opts.annotators.len().min(2));
    let selection = selection(opts);
    let spec = StoreSpec {
        examples: &examples,
        source: &data.source,
        dataset_hash: &data.hash,
        annotators: &opts.annotators,
        per_item,
        seed: opts.seed,
        selection: &selection,
    };
    let (mut store, opened) = Store::open_or_create(&opts.out, &spec)?;
    let base = public.unwrap_or_else(|| format!("http://{bound}"));
    let previous_base = store.meta_opt("base_url")?;
    let tokens = match opened {
        Opened::Created(t) => {
            note(&format!(
                "new annotation folder `{}`: {} from `{}`, {} per item, seed {}",
                opts.out.display(),
                count(examples.len(), "item", "items"),
                data.source,
                count(per_item, "annotator", "annotators"),
                opts.seed
            ));
            Some(t)
        }
        Opened::Resumed => {
            note(&format!(
                "resuming `{}` ({} saved so far)",
                opts.out.display(),
                count(store.ratings()?.len(), "rating", "ratings")
            ));
            if opts.new_tokens {
                note("--new-tokens: every earlier link stops working");
                Some(store.reissue_tokens()?)
            } else {
                None
            }
        }
    };
    store.set_meta("base_url", &base)?;
    if !opts.host.is_loopback() && opts.public_url.is_none() {
        note(&format!(
            "warning: listening on {}: the links are secret but travel as plain HTTP; keep this on a trusted network or behind TLS, and give --public-url the address annotators reach",
            opts.host
        ));
    }
    let names = store.annotators()?;
    let links = match &tokens {
        Some(t) => {
            t.iter().map(|(name, token)| format!("{name} {}", page_url_at(&base, token))).collect()
        }
        None => {
            let moved = previous_base.as_deref().is_some_and(|p| p.trim_end_matches('/') != base);
            names
                .iter()
                .map(|name| {
                    if moved {
                        format!(
                            "{name} {} (the server moved from {}; --new-tokens issues new links)",
                            page_url_at(&base, "<the token of the link printed at the first start>"),
                            previous_base.as_deref().unwrap_or("?")
                        )
                    } else {
                        format!("{name} (the link printed at its first start still works; --new-tokens issues new ones)")
                    }
                })
                .collect()
        }
    };
    Ok(Server { listener, store, bound, links })
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
