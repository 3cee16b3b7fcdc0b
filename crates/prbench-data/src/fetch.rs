//! `prbench data fetch NAME`: the data sets prbench's loaders read, downloaded from where their
//! authors publish them, checked, and put where a `--data` spec reads them.
//!
//! The named sources ([`SOURCES`]):
//!
//! | name | from | checked by | written to | `--data` spec |
//! |---|---|---|---|---|
//! | `psoups` | P-Soups of the AlignX benchmark: GitHub `JinaLeejnl/AlignX`, `benchmark/P-Soups/{friendly_unfriendly,student_phd}.json` at a pinned commit, raw files | size and sha256 pinned here | `--out DIR` (default `data/psoups`) | `psoups:DIR` |
//! | `prb` | Hugging Face dataset `QiyaoMa/Personalized-RewardBench`, `<config>/test-00000-of-00001.parquet` of the three configs | the hub's LFS sha256 and size | the hub cache | `hf:QiyaoMa/Personalized-RewardBench` |
//! | `lamp-qa` | Hugging Face dataset `alireza7/LaMP-QA`, its parquet conversion (revision `refs/convert/parquet`, `<config>/<split>/*.parquet`) | as `prb` | the hub cache | `lampqa:<snapshot>` (`prbench build` input) |
//! | `synthesizeme-arena`, `synthesizeme-prism` | `MichaelR207/chatbot_arena_personalized_0125`, `MichaelR207/prism_personalized_0125`, `data/*.parquet` | as `prb` | the hub cache | `synthesizeme:<snapshot>` |
//! | `prism` | `HannahRoseKirk/prism-alignment`, `conversations.jsonl` and `survey.jsonl` | as `prb` | the hub cache | `prism:<snapshot>` |
//!
//! `<snapshot>` is `<cache>/datasets--ORG--NAME/snapshots/<commit>`, the folder the hub cache
//! keeps for the fetched commit. The hub cache is the one `hf:` specs read ([`crate::hub`]: the
//! `HF_HUB_CACHE`, `HF_HOME`, … rules, or [`FetchOptions::out`]); files are laid out as
//! huggingface_hub lays them out (`blobs/<etag>`, a relative symlink per file under
//! `snapshots/<commit>/`, `refs/<revision>` holding the commit), so after a fetch the spec works
//! offline (`HF_HUB_OFFLINE=1`) and other hub tools find the files.
//!
//! Every file is downloaded to a temporary name beside its target and renamed into place only
//! after its size and sha256 match what the source publishes (pinned here for GitHub files; the
//! hub's tree listing gives each LFS file's sha256 and size, and a file outside LFS is checked by
//! size). A mismatch is [`DataError::FetchMismatch`], naming the file and both values; nothing of
//! that file is left behind. A file already in place with the expected size (and, for pinned
//! files, sha256) is not downloaded again.
//!
//! Offline ([`FetchOptions::offline`], from `HF_HUB_OFFLINE`): nothing is requested; the files
//! must already be in place (a hub source's commit is then read from `refs/<revision>`), else
//! [`DataError::FetchOffline`] says which file is missing and where it would come from.
//!
//! Endpoints: the hub's is hf-hub's (`HF_ENDPOINT`, default `https://huggingface.co`, or
//! [`FetchOptions::hf_endpoint`]); GitHub raw files come from [`FetchOptions::github_raw`]
//! (`PRBENCH_GITHUB_RAW`, default [`GITHUB_RAW_DEFAULT`]) as
//! `<base>/<owner>/<repo>/<commit>/<path>`, so a mirror of either can stand in.

use std::io::Write;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use hf_hub::{HFClient, HFError};
use prbench_files::AtomicFile;
use sha2::{Digest, Sha256};

use crate::error::DataError;
use crate::hub::PRB_REPO;

/// Environment variable overriding the base URL of raw GitHub files.
pub const GITHUB_RAW_ENV: &str = "PRBENCH_GITHUB_RAW";

/// Base URL of raw GitHub files when [`GITHUB_RAW_ENV`] is unset.
pub const GITHUB_RAW_DEFAULT: &str = "https://raw.githubusercontent.com";

/// Where `psoups` is written when [`FetchOptions::out`] is `None` (relative to the working
/// folder).
pub const PSOUPS_DEFAULT_OUT: &str = "data/psoups";

/// One file of a GitHub repository, pinned by size and sha256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedFile {
    /// Path in the repository, e.g. `benchmark/P-Soups/student_phd.json`; the file is written
    /// under its last component.
    pub path: &'static str,
    /// Size in bytes.
    pub size: u64,
    /// sha256 of the bytes, lowercase hex.
    pub sha256: &'static str,
}

impl PinnedFile {
    /// The file name the file is written under (the last component of [`Self::path`]).
    pub fn name(&self) -> &'static str {
        self.path.rsplit('/').next().unwrap_or(self.path)
    }
}

/// The `--data` spec a fetched source is read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecForm {
    /// `hf:ORG/NAME` (revision `main`; the loader reads `refs/main` offline).
    Hf,
    /// `<prefix>:<folder>`, the folder being the output folder (GitHub) or the cached snapshot
    /// (hub), e.g. `psoups:`, `prism:`.
    Dir(&'static str),
}

/// Where a named source comes from.
#[derive(Debug, Clone, Copy)]
pub enum Origin {
    /// Files of a public GitHub repository at one commit, from raw URLs.
    GitHub {
        /// `OWNER/REPO`.
        repo: &'static str,
        /// The commit (40 hex digits).
        commit: &'static str,
        /// The files, checked by size and sha256.
        files: &'static [PinnedFile],
    },
    /// Files of a Hugging Face dataset repository, into the hub cache.
    Hub {
        /// `ORG/NAME`.
        repo: &'static str,
        /// Branch, tag or commit fetched (e.g. `main`, `refs/convert/parquet`).
        revision: &'static str,
        /// Which repo-relative paths are fetched.
        wanted: fn(&str) -> bool,
        /// Path prefixes each of which at least one fetched file must start with (the layout
        /// the loader needs), e.g. `data/test-`; a missing one is an error naming it.
        required: &'static [&'static str],
    },
}

/// A named data source of `prbench data fetch`.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    /// The name `prbench data fetch` takes.
    pub name: &'static str,
    /// One line on what it is.
    pub about: &'static str,
    /// Where it comes from.
    pub origin: Origin,
    /// How `--data` reads it.
    pub spec: SpecForm,
    /// Which verbs read it, when not every one (e.g. LaMP-QA is `prbench build` input only).
    pub note: Option<&'static str>,
}

/// The P-Soups files of AlignX: the commit and hashes the copy prbench was developed on has.
pub const PSOUPS_FILES: [PinnedFile; 2] = [
    PinnedFile {
        path: "benchmark/P-Soups/friendly_unfriendly.json",
        size: 1_660_790,
        sha256: "c7545cfd23cee20318934e4751474ee966812622a6304abb4170f1bf3bbc2661",
    },
    PinnedFile {
        path: "benchmark/P-Soups/student_phd.json",
        size: 1_915_679,
        sha256: "a727a99cee6a4328d6f6aa28b36230c71b2a6d033c818a31a60ba25d31f675be",
    },
];

/// The AlignX commit the P-Soups files are pinned at.
pub const ALIGNX_COMMIT: &str = "4b86568e89817825f27e2b72f31134b1dec08b21";

const PRB_FILES: [&str; 3] = [
    "Art_and_Entertainment/test-00000-of-00001.parquet",
    "Lifestyle_and_Personal_Development/test-00000-of-00001.parquet",
    "Society_and_Culture/test-00000-of-00001.parquet",
];

const LAMPQA_CONFIGS: [&str; 3] =
    ["Art_and_Entertainment/", "Lifestyle_and_Personal_Development/", "Society_and_Culture/"];

fn prb_wanted(path: &str) -> bool {
    PRB_FILES.contains(&path)
}

/// `<config>/<split>/<file>.parquet` of a LaMP-QA config (the hub's parquet conversion).
fn lampqa_wanted(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.len() == 3
        && LAMPQA_CONFIGS.iter().any(|c| c.trim_end_matches('/') == parts[0])
        && crate::lampqa::LAMPQA_SPLITS.contains(&parts[1])
        && parts[2].ends_with(".parquet")
}

fn synthesizeme_wanted(path: &str) -> bool {
    path.strip_prefix("data/").is_some_and(|f| !f.contains('/') && f.ends_with(".parquet"))
}

fn prism_wanted(path: &str) -> bool {
    matches!(path, "conversations.jsonl" | "survey.jsonl")
}

/// Every named source, in the order `prbench data fetch --help` lists them.
pub const SOURCES: [Source; 6] = [
    Source {
        name: "psoups",
        about: "P-Soups personalized pairs (AlignX benchmark copy; 1,200 pairs, 2 files)",
        origin: Origin::GitHub {
            repo: "JinaLeejnl/AlignX",
            commit: ALIGNX_COMMIT,
            files: &PSOUPS_FILES,
        },
        spec: SpecForm::Dir("psoups"),
        note: None,
    },
    Source {
        name: "prb",
        about: "Personalized-RewardBench (the three LaMP-QA categories, test split)",
        origin: Origin::Hub {
            repo: PRB_REPO,
            revision: "main",
            wanted: prb_wanted,
            required: &PRB_FILES,
        },
        spec: SpecForm::Hf,
        note: None,
    },
    Source {
        name: "lamp-qa",
        about: "LaMP-QA questions, the hub's parquet conversion (all splits)",
        origin: Origin::Hub {
            repo: "alireza7/LaMP-QA",
            revision: "refs/convert/parquet",
            wanted: lampqa_wanted,
            required: &LAMPQA_CONFIGS,
        },
        spec: SpecForm::Dir("lampqa"),
        note: Some("`prbench build` input (and `data validate --for build`)"),
    },
    Source {
        name: "synthesizeme-arena",
        about: "SynthesizeMe's Chatbot Arena personalized pairs (all splits)",
        origin: Origin::Hub {
            repo: "MichaelR207/chatbot_arena_personalized_0125",
            revision: "main",
            wanted: synthesizeme_wanted,
            required: &["data/test-"],
        },
        spec: SpecForm::Dir("synthesizeme"),
        note: None,
    },
    Source {
        name: "synthesizeme-prism",
        about: "SynthesizeMe's PRISM personalized pairs (all splits)",
        origin: Origin::Hub {
            repo: "MichaelR207/prism_personalized_0125",
            revision: "main",
            wanted: synthesizeme_wanted,
            required: &["data/test-"],
        },
        spec: SpecForm::Dir("synthesizeme"),
        note: None,
    },
    Source {
        name: "prism",
        about: "raw PRISM conversations and survey",
        origin: Origin::Hub {
            repo: "HannahRoseKirk/prism-alignment",
            revision: "main",
            wanted: prism_wanted,
            required: &["conversations.jsonl", "survey.jsonl"],
        },
        spec: SpecForm::Dir("prism"),
        note: None,
    },
];

/// The named source `name`.
///
/// # Errors
/// [`DataError::BadSpec`] listing the names when there is no such source.
pub fn source(name: &str) -> Result<&'static Source, DataError> {
    SOURCES.iter().find(|s| s.name == name.trim()).ok_or_else(|| DataError::BadSpec {
        spec: name.to_string(),
        detail: format!(
            "no data source of that name; `prbench data fetch` knows {}",
            SOURCES.iter().map(|s| format!("`{}`", s.name)).collect::<Vec<_>>().join(", ")
        ),
    })
}

/// How to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOptions {
    /// GitHub sources: the folder the files go into (default [`PSOUPS_DEFAULT_OUT`]). Hub
    /// sources: the hub cache directory (default hf-hub's, as [`crate::hub`] resolves it).
    pub out: Option<PathBuf>,
    /// Request nothing: use what is already in place, or fail saying what is missing.
    pub offline: bool,
    /// Base URL of raw GitHub files (no trailing slash needed).
    pub github_raw: String,
    /// The hub's base URL; `None` = hf-hub's (`HF_ENDPOINT`, else `https://huggingface.co`).
    pub hf_endpoint: Option<String>,
}

impl FetchOptions {
    /// Options from the environment: offline as [`crate::hub::HubOptions::from_env`] reads
    /// `HF_HUB_OFFLINE`; the raw-GitHub base from [`GITHUB_RAW_ENV`] (else
    /// [`GITHUB_RAW_DEFAULT`]); the hub endpoint left to hf-hub (`HF_ENDPOINT`).
    pub fn from_env(out: Option<PathBuf>) -> Self {
        FetchOptions {
            out,
            offline: crate::hub::HubOptions::from_env().offline,
            github_raw: std::env::var(GITHUB_RAW_ENV)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .unwrap_or_else(|| GITHUB_RAW_DEFAULT.to_string()),
            hf_endpoint: None,
        }
    }
}

/// One file of a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedFile {
    /// Where it is now (for hub sources, the snapshot path, a symlink into `blobs/`).
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// Its sha256 when the source publishes one (checked).
    pub sha256: Option<String>,
    /// Downloaded by this fetch (`false`: it was already in place and checked).
    pub downloaded: bool,
}

/// What a fetch put in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The source's name.
    pub name: &'static str,
    /// The `--data` spec that reads it.
    pub spec: String,
    /// Which verbs read it, when not every one.
    pub note: Option<&'static str>,
    /// The folder holding the files (the output folder, or the cached snapshot).
    pub dir: PathBuf,
    /// The commit the files come from.
    pub commit: String,
    /// The files, in the source's order (GitHub) or path order (hub).
    pub files: Vec<FetchedFile>,
}

/// Fetches the named source (see the module docs).
///
/// # Errors
/// [`DataError::BadSpec`] for an unknown name; otherwise as [`fetch_source`].
pub fn fetch(name: &str, opts: &FetchOptions) -> Result<Fetched, DataError> {
    fetch_source(source(name)?, opts, &mut |_| {})
}

/// [`fetch`], calling `note` with one line before each download (`downloading FILE (N bytes)
/// from URL`), for a caller that shows progress.
///
/// # Errors
/// As [`fetch`].
pub fn fetch_reporting(
    name: &str,
    opts: &FetchOptions,
    note: &mut dyn FnMut(&str),
) -> Result<Fetched, DataError> {
    fetch_source(source(name)?, opts, note)
}

/// Fetches `source` (one of [`SOURCES`], or one built the same way), calling `note` before
/// each download as [`fetch_reporting`] does.
///
/// # Errors
/// [`DataError::FetchMismatch`] when a downloaded file's size or sha256 differs from the
/// source's (nothing of it is kept); [`DataError::Download`] when a request fails;
/// [`DataError::Hub`] when the hub cannot be asked or lacks a file the loader needs;
/// [`DataError::FetchOffline`] offline when a file is not in
/// place; [`DataError::Write`] / [`DataError::Io`] for the local files.
pub fn fetch_source(
    source: &Source,
    opts: &FetchOptions,
    note: &mut dyn FnMut(&str),
) -> Result<Fetched, DataError> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
            DataError::Download {
                what: source.name.to_string(),
                url: "-".into(),
                detail: format!("cannot start the HTTP runtime: {e}"),
            }
        })?;
    match source.origin {
        Origin::GitHub { repo, commit, files } => {
            let out = opts.out.clone().unwrap_or_else(|| PathBuf::from(PSOUPS_DEFAULT_OUT));
            let fetched =
                runtime.block_on(fetch_github(source, repo, commit, files, &out, opts, note))?;
            Ok(Fetched {
                name: source.name,
                spec: spec_for(source, repo_of(source), &out),
                note: source.note,
                dir: out,
                commit: commit.to_string(),
                files: fetched,
            })
        }
        Origin::Hub { repo, revision, wanted, required } => {
            let hub = HubFetch { name: source.name, repo, revision, wanted, required };
            let (dir, commit, files) = runtime.block_on(hub.run(opts, note))?;
            Ok(Fetched {
                name: source.name,
                spec: spec_for(source, repo, &dir),
                note: source.note,
                dir,
                commit,
                files,
            })
        }
    }
}

fn repo_of(source: &Source) -> &'static str {
    match source.origin {
        Origin::GitHub { repo, .. } | Origin::Hub { repo, .. } => repo,
    }
}

fn spec_for(source: &Source, repo: &str, dir: &Path) -> String {
    match source.spec {
        SpecForm::Hf => format!("hf:{repo}"),
        SpecForm::Dir(prefix) => format!("{prefix}:{}", dir.display()),
    }
}

fn sha256_file(path: &Path) -> Result<(u64, String), DataError> {
    let io = |source| DataError::Io { file: path.display().to_string(), source };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut h = Sha256::new();
    let n = std::io::copy(&mut f, &mut h).map_err(io)?;
    Ok((n, hex::encode(h.finalize())))
}

fn write_error(path: &Path, detail: impl std::fmt::Display) -> DataError {
    DataError::Write { file: path.display().to_string(), detail: detail.to_string() }
}

/// What a download must match.
struct Expect<'a> {
    /// What the messages call the file (its source path).
    label: String,
    size: Option<u64>,
    sha256: Option<&'a str>,
}

/// Streams `chunks` into `target` through an [`AtomicFile`], hashing on the way; renames it
/// into place only when size and sha256 match `expect`. Returns (size, sha256).
async fn write_checked<S, B, E>(
    mut chunks: S,
    target: &Path,
    expect: &Expect<'_>,
    url: &str,
) -> Result<(u64, String), DataError>
where
    S: futures::Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    let mut file = AtomicFile::create(target).map_err(|e| write_error(target, e.source))?;
    let mut h = Sha256::new();
    let mut n: u64 = 0;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| DataError::Download {
            what: expect.label.clone(),
            url: url.to_string(),
            detail: format!("the transfer broke off after {n} bytes: {e}"),
        })?;
        let chunk = chunk.as_ref();
        h.update(chunk);
        n += chunk.len() as u64;
        file.write_all(chunk).map_err(|e| write_error(target, e))?;
    }
    let sha = hex::encode(h.finalize());
    // Dropping `file` on these returns removes the temporary file: nothing is left in place.
    if let Some(size) = expect.size.filter(|&s| s != n) {
        return Err(DataError::FetchMismatch {
            file: expect.label.clone(),
            url: url.to_string(),
            what: "size",
            expected: format!("{size} bytes"),
            found: format!("{n} bytes"),
        });
    }
    if let Some(want) = expect.sha256.filter(|w| !w.eq_ignore_ascii_case(&sha)) {
        return Err(DataError::FetchMismatch {
            file: expect.label.clone(),
            url: url.to_string(),
            what: "sha256",
            expected: want.to_ascii_lowercase(),
            found: sha,
        });
    }
    file.commit().map_err(|e| write_error(target, e.source))?;
    Ok((n, sha))
}

async fn fetch_github(
    source: &Source,
    repo: &str,
    commit: &str,
    files: &[PinnedFile],
    out: &Path,
    opts: &FetchOptions,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<FetchedFile>, DataError> {
    let mut done = Vec::new();
    let client = reqwest::Client::builder()
        .user_agent(concat!("prbench/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| DataError::Download {
            what: source.name.to_string(),
            url: opts.github_raw.clone(),
            detail: e.to_string(),
        })?;
    for f in files {
        let target = out.join(f.name());
        if target.is_file() {
            let (size, sha) = sha256_file(&target)?;
            if size == f.size && sha == f.sha256 {
                done.push(FetchedFile { path: target, size, sha256: Some(sha), downloaded: false });
                continue;
            }
        }
        let url = format!("{}/{repo}/{commit}/{}", opts.github_raw.trim_end_matches('/'), f.path);
        if opts.offline {
            return Err(DataError::FetchOffline {
                name: source.name.to_string(),
                file: target.display().to_string(),
                url,
            });
        }
        std::fs::create_dir_all(out).map_err(|e| write_error(out, e))?;
        let download = |detail: String| DataError::Download {
            what: f.path.to_string(),
            url: url.clone(),
            detail,
        };
        note(&format!("downloading {} ({} bytes) from {url}", f.path, f.size));
        let resp = client.get(&url).send().await.map_err(|e| download(error_chain(&e)))?;
        if !resp.status().is_success() {
            return Err(download(format!("the server answered HTTP {}", resp.status())));
        }
        let expect =
            Expect { label: f.path.to_string(), size: Some(f.size), sha256: Some(f.sha256) };
        let (size, sha) = write_checked(resp.bytes_stream(), &target, &expect, &url).await?;
        done.push(FetchedFile { path: target, size, sha256: Some(sha), downloaded: true });
    }
    Ok(done)
}

/// An error and its causes, `: `-joined, each cause once (reqwest's top message alone says
/// little, and hf-hub repeats its cause's text in its own).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        cur = c.source();
    }
    s
}

fn is_commit_hash(s: &str) -> bool {
    s.len() == 40 && s.chars().all(|c| c.is_ascii_hexdigit())
}

/// What hub messages name as the file when the revision itself could not be listed.
const LISTING: &str = "the revision's file list";

struct HubFetch {
    name: &'static str,
    repo: &'static str,
    revision: &'static str,
    wanted: fn(&str) -> bool,
    required: &'static [&'static str],
}

/// One file of the hub's tree listing that the source wants.
struct Listed {
    path: String,
    size: u64,
    /// The LFS sha256, when the file is in LFS.
    sha256: Option<String>,
    /// The blob's name in the cache: the LFS sha256, else the git object id (as hf-hub names it).
    etag: String,
}

impl HubFetch {
    fn hub_error(&self, cache_dir: &Path, file: &str, detail: String) -> DataError {
        DataError::Hub {
            repo: self.repo.to_string(),
            revision: self.revision.to_string(),
            file: file.to_string(),
            cache_dir: cache_dir.to_path_buf(),
            detail,
        }
    }

    /// The first required prefix no path starts with.
    fn missing<'a>(&self, paths: impl Iterator<Item = &'a str> + Clone) -> Option<&'static str> {
        self.required.iter().copied().find(|r| !paths.clone().any(|p| p.starts_with(r)))
    }

    async fn run(
        &self,
        opts: &FetchOptions,
        note: &mut dyn FnMut(&str),
    ) -> Result<(PathBuf, String, Vec<FetchedFile>), DataError> {
        let mut builder = HFClient::builder();
        if let Some(dir) = &opts.out {
            builder = builder.cache_dir(dir.clone());
        }
        if let Some(e) = &opts.hf_endpoint {
            builder = builder.endpoint(e.clone());
        }
        let fallback = opts.out.clone().unwrap_or_else(hf_hub::resolve_cache_dir);
        let client =
            builder.build().map_err(|e| self.hub_error(&fallback, LISTING, e.to_string()))?;
        let cache_dir = client.cache_dir().to_path_buf();
        let repo_dir = cache_dir.join(format!("datasets--{}", self.repo.replace('/', "--")));
        if opts.offline {
            return self.offline(&cache_dir, &repo_dir, client.endpoint());
        }
        let (owner, name) = hf_hub::split_id(self.repo);
        let repo = client.dataset(owner, name);
        let info = repo
            .info()
            .revision(self.revision.to_string())
            .send()
            .await
            .map_err(|e| self.hub_error(&cache_dir, LISTING, hf_detail(&e)))?;
        let commit = info.sha.filter(|s| is_commit_hash(s)).ok_or_else(|| {
            self.hub_error(&cache_dir, LISTING, "the hub named no commit for this revision".into())
        })?;
        let http = reqwest::Client::builder()
            .user_agent(concat!("prbench/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| self.hub_error(&cache_dir, LISTING, error_chain(&e)))?;
        let mut listed: Vec<Listed> = list_tree(&http, client.endpoint(), self.repo, &commit)
            .await
            .map_err(|detail| self.hub_error(&cache_dir, LISTING, detail))?
            .into_iter()
            .filter(|e| e.kind == "file" && (self.wanted)(&e.path))
            .map(|e| {
                let sha256 = e.lfs.as_ref().and_then(|l| l.oid.clone());
                let size = e.lfs.as_ref().and_then(|l| l.size).unwrap_or(e.size);
                let etag = sha256.clone().unwrap_or(e.oid);
                Listed { path: e.path, size, sha256, etag }
            })
            .collect();
        listed.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(req) = self.missing(listed.iter().map(|l| l.path.as_str())) {
            return Err(self.hub_error(
                &cache_dir,
                req,
                format!(
                    "the repo at commit {commit} has no file `{req}…` (it lists {} file(s) of the \
                     layout prbench reads); the dataset's layout changed: report it",
                    listed.len()
                ),
            ));
        }
        let snapshot = repo_dir.join("snapshots").join(&commit);
        let mut files = Vec::new();
        for l in &listed {
            let pointer = snapshot.join(&l.path);
            let blob = repo_dir.join("blobs").join(&l.etag);
            if in_place(&pointer, &l.etag, l.size) {
                files.push(FetchedFile {
                    path: pointer,
                    size: l.size,
                    sha256: l.sha256.clone(),
                    downloaded: false,
                });
                continue;
            }
            let url = format!(
                "{}/datasets/{}/resolve/{commit}/{}",
                client.endpoint().trim_end_matches('/'),
                self.repo,
                l.path
            );
            if !blob_ok(&blob, l.size, l.sha256.as_deref())? {
                let blobs = repo_dir.join("blobs");
                std::fs::create_dir_all(&blobs).map_err(|e| write_error(&blobs, e))?;
                note(&format!("downloading {} ({} bytes) from {url}", l.path, l.size));
                let (_, stream) = repo
                    .download_file_stream()
                    .filename(l.path.clone())
                    .revision(commit.clone())
                    .send()
                    .await
                    .map_err(|e| DataError::Download {
                        what: format!("{} of hf:{}", l.path, self.repo),
                        url: url.clone(),
                        detail: hf_detail(&e),
                    })?;
                let expect = Expect {
                    label: format!("{} (hf:{}@{commit})", l.path, self.repo),
                    size: Some(l.size),
                    sha256: l.sha256.as_deref(),
                };
                write_checked(stream, &blob, &expect, &url).await?;
                link_pointer(&pointer, &l.path, &l.etag)?;
                files.push(FetchedFile {
                    path: pointer,
                    size: l.size,
                    sha256: l.sha256.clone(),
                    downloaded: true,
                });
            } else {
                link_pointer(&pointer, &l.path, &l.etag)?;
                files.push(FetchedFile {
                    path: pointer,
                    size: l.size,
                    sha256: l.sha256.clone(),
                    downloaded: false,
                });
            }
        }
        if !is_commit_hash(self.revision) {
            let ref_file = repo_dir.join("refs").join(self.revision);
            if let Some(parent) = ref_file.parent() {
                std::fs::create_dir_all(parent).map_err(|e| write_error(parent, e))?;
            }
            prbench_files::write_atomic(&ref_file, commit.as_bytes())
                .map_err(|e| write_error(&ref_file, e.source))?;
        }
        Ok((snapshot, commit, files))
    }

    fn offline(
        &self,
        cache_dir: &Path,
        repo_dir: &Path,
        endpoint: &str,
    ) -> Result<(PathBuf, String, Vec<FetchedFile>), DataError> {
        let not_cached = |file: &str| DataError::FetchOffline {
            name: self.name.to_string(),
            file: format!(
                "`{file}` of hf:{}@{} (hub cache {})",
                self.repo,
                self.revision,
                cache_dir.display()
            ),
            url: format!("{}/datasets/{}", endpoint.trim_end_matches('/'), self.repo),
        };
        let first = self.required.first().copied().unwrap_or("-");
        let commit = if is_commit_hash(self.revision) {
            self.revision.to_string()
        } else {
            match std::fs::read_to_string(repo_dir.join("refs").join(self.revision)) {
                Ok(s) if is_commit_hash(s.trim()) => s.trim().to_string(),
                _ => return Err(not_cached(first)),
            }
        };
        let snapshot = repo_dir.join("snapshots").join(&commit);
        let mut paths = Vec::new();
        walk(&snapshot, "", &mut paths);
        paths.retain(|p| (self.wanted)(p));
        paths.sort();
        if let Some(req) = self.missing(paths.iter().map(String::as_str)) {
            return Err(not_cached(req));
        }
        let files = paths
            .iter()
            .map(|p| {
                let path = snapshot.join(p);
                let size = std::fs::metadata(&path)
                    .map_err(|source| DataError::Io { file: path.display().to_string(), source })?
                    .len();
                Ok(FetchedFile { path, size, sha256: None, downloaded: false })
            })
            .collect::<Result<_, DataError>>()?;
        Ok((snapshot, commit, files))
    }
}

/// Whether `blob` is there with `size` bytes and, when known, `sha256` (a blob left by another
/// tool, or by a fetch stopped before its pointer was made).
fn blob_ok(blob: &Path, size: u64, sha256: Option<&str>) -> Result<bool, DataError> {
    if !std::fs::metadata(blob).is_ok_and(|m| m.is_file() && m.len() == size) {
        return Ok(false);
    }
    Ok(match sha256 {
        Some(want) => sha256_file(blob)?.1.eq_ignore_ascii_case(want),
        None => true,
    })
}

/// One entry of the hub's tree listing (`GET /api/datasets/ORG/NAME/tree/REV?recursive=true`),
/// read here rather than through hf-hub 1.0.0's `RepoTreeEntry`, whose LFS record expects a
/// `sha256` key while the hub sends the sha256 as `lfs.oid`.
#[derive(Debug, serde::Deserialize)]
struct TreeEntry {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    #[serde(default)]
    oid: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    lfs: Option<TreeLfs>,
}

/// An LFS file's record in the tree listing: `oid` is the sha256 of the file's bytes.
#[derive(Debug, serde::Deserialize)]
struct TreeLfs {
    #[serde(default, alias = "sha256")]
    oid: Option<String>,
    #[serde(default)]
    size: Option<u64>,
}

/// `HF_TOKEN` as a bearer header value, when set (gated or private repos).
fn hf_token() -> Option<String> {
    std::env::var("HF_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty())
        .map(|t| format!("Bearer {}", t.trim()))
}

/// The whole recursive tree of dataset `repo` at `commit`, following the hub's `Link: <…>;
/// rel="next"` pages. Errors are messages for [`DataError::Hub`].
async fn list_tree(
    http: &reqwest::Client,
    endpoint: &str,
    repo: &str,
    commit: &str,
) -> Result<Vec<TreeEntry>, String> {
    let mut url = format!(
        "{}/api/datasets/{repo}/tree/{commit}?recursive=true",
        endpoint.trim_end_matches('/')
    );
    let mut all = Vec::new();
    for _ in 0..10_000 {
        let mut req = http.get(&url);
        if let Some(t) = hf_token() {
            req = req.header(reqwest::header::AUTHORIZATION, t);
        }
        let resp = req.send().await.map_err(|e| format!("GET {url}: {}", error_chain(&e)))?;
        if !resp.status().is_success() {
            return Err(format!("GET {url}: the hub answered HTTP {}", resp.status()));
        }
        let next = resp
            .headers()
            .get_all(reqwest::header::LINK)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .find(|part| part.contains("rel=\"next\""))
            .and_then(|part| Some(part.split_once('<')?.1.split_once('>')?.0.to_string()));
        let page: Vec<TreeEntry> = resp
            .json()
            .await
            .map_err(|e| format!("GET {url}: unreadable listing: {}", error_chain(&e)))?;
        all.extend(page);
        match next {
            Some(n) => url = n,
            None => return Ok(all),
        }
    }
    Err(format!("GET {url}: the listing did not end after 10,000 pages"))
}

/// hf-hub's message with its causes.
fn hf_detail(e: &HFError) -> String {
    error_chain(e)
}

/// Whether `pointer` is a symlink to blob `etag` whose file has `size` bytes (what a finished
/// fetch leaves: blobs are renamed into place only after their check).
fn in_place(pointer: &Path, etag: &str, size: u64) -> bool {
    let Ok(target) = std::fs::read_link(pointer) else { return false };
    target.file_name().is_some_and(|n| n == etag)
        && std::fs::metadata(pointer).is_ok_and(|m| m.is_file() && m.len() == size)
}

/// Points `pointer` (a repo file under `snapshots/<commit>/`) at `blobs/<etag>` with a relative
/// symlink, as huggingface_hub does; made under a temporary name and renamed over the old one.
fn link_pointer(pointer: &Path, repo_path: &str, etag: &str) -> Result<(), DataError> {
    let parent = pointer.parent().expect("a snapshot path has a parent");
    std::fs::create_dir_all(parent).map_err(|e| write_error(parent, e))?;
    // From snapshots/<commit>/<a>/<b>/file: one `..` per folder back to the repo folder.
    let depth = repo_path.split('/').count() + 1;
    let target = format!("{}blobs/{etag}", "../".repeat(depth));
    let tmp = parent.join(format!(
        ".{}.{}.link.tmp",
        pointer.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&target, &tmp).map_err(|e| write_error(pointer, e))?;
    std::fs::rename(&tmp, pointer).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        write_error(pointer, e)
    })
}

/// Files under `dir` (following symlinks to files), as `/`-joined paths relative to it; hidden
/// entries are skipped.
fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let rel = format!("{prefix}{name}");
        let path = e.path();
        if path.is_dir() {
            walk(&path, &format!("{rel}/"), out);
        } else if path.is_file() {
            out.push(rel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for s in &SOURCES {
            assert_eq!(source(s.name).unwrap().name, s.name);
            assert_eq!(SOURCES.iter().filter(|t| t.name == s.name).count(), 1);
        }
        let err = source("nope").unwrap_err().to_string();
        assert!(err.contains("`psoups`") && err.contains("`prism`"), "{err}");
    }

    #[test]
    fn selections_match_the_loaders_layouts() {
        assert!(lampqa_wanted("Art_and_Entertainment/test/0000.parquet"));
        assert!(!lampqa_wanted("Art_and_Entertainment/other/0000.parquet"));
        assert!(!lampqa_wanted("Unknown/test/0000.parquet"));
        assert!(synthesizeme_wanted("data/test-00000-of-00001.parquet"));
        assert!(!synthesizeme_wanted("data/x/test.parquet"));
        assert!(!synthesizeme_wanted("README.md"));
        assert!(prism_wanted("survey.jsonl") && !prism_wanted("utterances.jsonl"));
        assert!(prb_wanted("Society_and_Culture/test-00000-of-00001.parquet"));
    }

    #[test]
    fn pinned_names_are_the_psoups_stems() {
        let names: Vec<&str> = PSOUPS_FILES.iter().map(|f| f.name()).collect();
        let stems: Vec<String> =
            crate::psoups::PSOUPS_SUBSETS.iter().map(|s| format!("{s}.json")).collect();
        assert_eq!(names, stems);
    }
}
