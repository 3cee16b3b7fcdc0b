//! `hf:ORG/NAME[@REV]`: a dataset repo in the Hugging Face layout, fetched through the hf-hub
//! cache (`<cache>/datasets--ORG--NAME/snapshots/<commit>/<config>/test-00000-of-00001.parquet`).
//!
//! The cache directory follows hf-hub's own rules: `HF_HUB_CACHE`, then `HUGGINGFACE_HUB_CACHE`,
//! then `$HF_HOME/hub`, then `$XDG_CACHE_HOME/huggingface/hub`, then `~/.cache/huggingface/hub`
//! (unless [`HubOptions::cache_dir`] overrides it).
//!
//! Offline mode (`HF_HUB_OFFLINE=1`, `true`, `yes` or `on`): hf-hub 1.0.0 does not read that
//! variable itself and would try the network first, so this module passes hf-hub's
//! `local_files_only` option, which resolves `refs/<revision>` (or a commit hash) and the snapshot
//! pointer on disk without any request. A file that is not cached is a
//! [`DataError::HubNotCached`] naming the repo, revision, file and cache directory.

use std::path::PathBuf;

use hf_hub::{HFClient, HFClientSync, HFError};

use crate::error::DataError;
use crate::load::{read_files, DataFile, Format, RowShape, KIND_PRB};
use crate::rows::{finish, subset_rank};
use crate::schema::{canonical_subset, Dataset, PRB_SUBSETS};

/// The Personalized-RewardBench dataset repo (PROTOCOL.md §1).
pub const PRB_REPO: &str = "QiyaoMa/Personalized-RewardBench";

/// Revision used when a spec names none.
pub const DEFAULT_REVISION: &str = "main";

/// Repo-relative path of a config's test split: `<config>/test-00000-of-00001.parquet`.
pub fn config_file(config: &str) -> String {
    format!("{config}/test-00000-of-00001.parquet")
}

/// How to reach the hub.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HubOptions {
    /// Cache directory; `None` = hf-hub's default resolution (see the module docs).
    pub cache_dir: Option<PathBuf>,
    /// Use only the local cache, never the network.
    pub offline: bool,
}

impl HubOptions {
    /// Options from the environment: offline iff `HF_HUB_OFFLINE` is `1`, `true`, `yes` or `on`
    /// (any case); the cache directory is left to hf-hub.
    pub fn from_env() -> Self {
        HubOptions {
            cache_dir: None,
            offline: std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| is_truthy(&v)),
        }
    }
}

fn is_truthy(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

/// Splits `ORG/NAME[@REV]` (the part after `hf:`) into repo id and optional revision; `spec`
/// is the full spec, for the error message.
pub fn parse_repo(s: &str, spec: &str) -> Result<(String, Option<String>), DataError> {
    let bad = |why: &str| DataError::BadSpec {
        spec: spec.to_string(),
        detail: format!("{why}; write hf:ORG/NAME or hf:ORG/NAME@REVISION"),
    };
    let (repo, revision) = match s.split_once('@') {
        Some((r, rev)) if rev.trim().is_empty() => {
            return Err(bad(&format!("empty revision after `@` in `{r}@`")))
        }
        Some((r, rev)) => (r, Some(rev.trim().to_string())),
        None => (s, None),
    };
    let parts: Vec<&str> = repo.split('/').collect();
    if repo.trim().is_empty()
        || parts.len() > 2
        || parts.iter().any(|p| p.trim().is_empty() || p.contains(char::is_whitespace))
    {
        return Err(bad(&format!("`{repo}` is not a repo id")));
    }
    Ok((repo.to_string(), revision))
}

/// Which kind of hub repository a spec names (`datasets--…` or `models--…` in the cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepoKind {
    /// A dataset repo (benchmark data).
    Dataset,
    /// A model repo (reward models, embedders).
    Model,
}

impl RepoKind {
    /// The hub's name for the kind (`dataset`, `model`), as `--repo-type` takes it.
    pub fn name(self) -> &'static str {
        match self {
            RepoKind::Dataset => "dataset",
            RepoKind::Model => "model",
        }
    }
}

/// One repo at one revision, opened through hf-hub (cache, or network unless offline).
pub struct HubRepo {
    client: HFClientSync,
    kind: RepoKind,
    repo: String,
    revision: String,
    cache_dir: PathBuf,
    offline: bool,
}

impl std::fmt::Debug for HubRepo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubRepo")
            .field("kind", &self.kind)
            .field("repo", &self.repo)
            .field("revision", &self.revision)
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.offline)
            .finish()
    }
}

impl HubRepo {
    /// Opens `repo` (`ORG/NAME`) of `kind` at `revision` (default `main`).
    ///
    /// # Errors
    /// [`DataError::Hub`] when the hf-hub client cannot be built.
    pub fn open(
        kind: RepoKind,
        repo: &str,
        revision: Option<&str>,
        opts: &HubOptions,
    ) -> Result<Self, DataError> {
        let revision = revision.unwrap_or(DEFAULT_REVISION).to_string();
        let mut builder = HFClient::builder();
        if let Some(dir) = &opts.cache_dir {
            builder = builder.cache_dir(dir.clone());
        }
        let fallback_dir = opts.cache_dir.clone().unwrap_or_else(hf_hub::resolve_cache_dir);
        let hub_error = |cache_dir: PathBuf, detail: String| DataError::Hub {
            repo: repo.to_string(),
            revision: revision.clone(),
            file: "-".into(),
            cache_dir,
            detail,
        };
        let client = builder.build().map_err(|e| hub_error(fallback_dir.clone(), e.to_string()))?;
        let cache_dir = client.cache_dir().to_path_buf();
        let client = HFClientSync::from_inner(client)
            .map_err(|e| hub_error(cache_dir.clone(), e.to_string()))?;
        Ok(Self {
            client,
            kind,
            repo: repo.to_string(),
            revision,
            cache_dir,
            offline: opts.offline,
        })
    }

    /// The revision asked for (`main` when the spec named none).
    pub fn revision(&self) -> &str {
        &self.revision
    }

    fn download(&self, file: &str) -> Result<PathBuf, HFError> {
        let (owner, name) = hf_hub::split_id(&self.repo);
        macro_rules! fetch {
            ($handle:expr) => {
                $handle
                    .download_file()
                    .filename(file.to_string())
                    .revision(self.revision.clone())
                    .local_files_only(self.offline)
                    .send()
            };
        }
        match self.kind {
            RepoKind::Dataset => fetch!(self.client.dataset(owner, name)),
            RepoKind::Model => fetch!(self.client.model(owner, name)),
        }
    }

    /// Local path of repo-relative `file` (downloaded into the cache unless offline).
    ///
    /// # Errors
    /// [`DataError::HubNotCached`] offline when the file is not in the cache;
    /// [`DataError::Hub`] when the repo has no such file or the request fails.
    pub fn get(&self, file: &str) -> Result<PathBuf, DataError> {
        match self.download(file) {
            Ok(path) => Ok(path),
            Err(HFError::LocalEntryNotFound { .. }) => Err(DataError::HubNotCached {
                repo_type: self.kind.name(),
                repo: self.repo.clone(),
                revision: self.revision.clone(),
                file: file.to_string(),
                cache_dir: self.cache_dir.clone(),
            }),
            Err(HFError::EntryNotFound { .. }) => {
                Err(self.error(file, "the repo has no such file at this revision".into()))
            }
            Err(e) => Err(self.error(file, e.to_string())),
        }
    }

    /// As [`Self::get`] for a file the repo may lack (e.g. `chat_template.jinja`): `None` when the
    /// hub says it does not exist, or, offline, when it is not in the cached snapshot.
    ///
    /// # Errors
    /// [`DataError::Hub`] for any other failure.
    pub fn get_optional(&self, file: &str) -> Result<Option<PathBuf>, DataError> {
        match self.download(file) {
            Ok(path) => Ok(Some(path)),
            Err(HFError::LocalEntryNotFound { .. } | HFError::EntryNotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(file, e.to_string())),
        }
    }

    fn error(&self, file: &str, detail: String) -> DataError {
        DataError::Hub {
            repo: self.repo.clone(),
            revision: self.revision.clone(),
            file: file.to_string(),
            cache_dir: self.cache_dir.clone(),
            detail,
        }
    }
}

/// Fetches repo-relative `files` of dataset `repo` at `revision` (default `main`) into the cache
/// (or, offline, finds them there) and returns their local paths, in order.
///
/// # Errors
/// As [`HubRepo::get`].
pub fn fetch_files(
    repo: &str,
    revision: Option<&str>,
    files: &[String],
    opts: &HubOptions,
) -> Result<Vec<PathBuf>, DataError> {
    let hub = HubRepo::open(RepoKind::Dataset, repo, revision, opts)?;
    files.iter().map(|f| hub.get(f)).collect()
}

/// Loads configs of a dataset repo in the PRB layout: `subsets` (long or short names; empty = the
/// three PRB configs) are fetched as [`config_file`]s and read with the parquet loader. The content
/// hash records each file as `<config>/test-00000-of-00001.parquet`, so it equals the hash of a
/// local copy in the same layout.
pub fn load_hub(
    repo: &str,
    revision: Option<&str>,
    subsets: &[String],
    opts: &HubOptions,
    source: &str,
) -> Result<Dataset, DataError> {
    load_hub_as(repo, revision, subsets, opts, source, RowShape::Pairs)
}

/// [`load_hub`] for rows of `shape`.
pub(crate) fn load_hub_as(
    repo: &str,
    revision: Option<&str>,
    subsets: &[String],
    opts: &HubOptions,
    source: &str,
    shape: RowShape,
) -> Result<Dataset, DataError> {
    let mut configs: Vec<String> = if subsets.is_empty() {
        PRB_SUBSETS.iter().map(|(long, _)| long.to_string()).collect()
    } else {
        subsets.iter().map(|s| canonical_subset(s.trim())).collect()
    };
    configs.sort_by_cached_key(|c| subset_rank(c));
    configs.dedup();
    let names: Vec<String> = configs.iter().map(|c| config_file(c)).collect();
    let paths = fetch_files(repo, revision, &names, opts)?;
    let files: Vec<DataFile<'_>> = configs
        .iter()
        .zip(&names)
        .zip(&paths)
        .map(|((config, name), path)| DataFile {
            path,
            name,
            format: Format::Parquet,
            subset: config,
        })
        .collect();
    let (hash, rows) = read_files(&files, shape)?;
    finish(rows, source, KIND_PRB, hash, shape)
}
