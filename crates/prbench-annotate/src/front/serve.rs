//! `annotate serve`'s front (the default feature `server`): bind, load, open or resume the
//! store, then serve the rating page until the caller's shutdown signal.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use prbench_records::plural::count;

use super::CommandError;
use crate::server::{page_url_at, public_base, run_blocking};
use crate::{Opened, Store, StoreSpec};

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
