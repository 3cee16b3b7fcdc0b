//! The content-addressed run cache (docs/ARCHITECTURE.md, "Determinism, caching and manifests"):
//! every score and verdict a model engine returns is stored under a sha256 of (model identity,
//! decoding parameters, example id, rendered input), so a rerun or a resumed run repeats no
//! completed call.
//!
//! Why SQLite (rusqlite with the bundled library) and not a pure-Rust store such as redb:
//! - several `prbench eval` processes may share one cache file (a condition sweep in parallel);
//!   SQLite's file locking allows that, redb opens a database in one process only;
//! - in WAL mode every commit is appended to the log before `put` returns, so a SIGKILLed run
//!   keeps each result written before the kill (no fsync is needed for that: the kernel holds the
//!   pages; `synchronous=NORMAL` keeps a power loss from corrupting the file);
//! - the file is inspectable with the `sqlite3` shell, which researchers have.
//!
//! Where the cache lives by default is one rule for every command, [`default_beside`]:
//! `cache.sqlite` in the folder that holds what the command writes (`--cache PATH` chooses
//! another file, `--no-cache` none).
//! Control baselines make no cached calls ([`prbench_models::Judge::cacheable`]); their rows
//! are stored whole, per data, items, condition, seed, bootstrap settings and build
//! ([`crate::controls::cache`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use prbench_models::{
    CallStats, ChatPrompt, ItemDone, Judge, JudgeRequest, ModelError, ModelIdentity, RewardModel,
    RmRequest, Score, Verdict,
};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::EvalError;
pub use prbench_records::CacheReport;

/// The run cache's file name.
pub const FILE_NAME: &str = "cache.sqlite";

/// The default run cache of a command, the one rule every command follows: `cache.sqlite` in
/// the folder that holds the command's output `output` (a run folder, a Best-of-N folder, a
/// build folder, a ranked dataset file), so that the outputs side by side in one folder share
/// one cache and no default depends on the folder the command runs in, except for a bare name
/// (`bon1`, `ranked.jsonl`), whose folder is the current one (the result is then the relative
/// `cache.sqlite`).
///
/// `prbench eval`'s outputs are the run folders `<--out>/<run-id>`, so its cache is
/// `<--out>/cache.sqlite` ([`default_in`]).
pub fn default_beside(output: &Path) -> PathBuf {
    match output.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder.join(FILE_NAME),
        _ => PathBuf::from(FILE_NAME),
    }
}

/// [`default_beside`] for a command whose outputs are written into `folder` (`prbench eval`'s
/// run folders inside `--out`): `<folder>/cache.sqlite`.
pub fn default_in(folder: &Path) -> PathBuf {
    folder.join(FILE_NAME)
}

/// Version of the key layout; bumping it makes every old entry a miss.
const KEY_VERSION: u32 = 1;

/// What a cache entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A judge [`Verdict`].
    Verdict,
    /// A reward-model [`Score`].
    Score,
    /// A sentence embedding (retrieval, planner quality), keyed by embedder and text hash.
    Embedding,
    /// A generator reply (the planner), keyed by generator, decoding and rendered prompt.
    Generation,
    /// Next-token log-probabilities of candidate strings (the Best-of-N rubric judge in
    /// logprob mode), keyed by scorer, candidates and rendered prompt.
    NextToken,
    /// A run's control-baseline rows, keyed by what they are computed from
    /// ([`crate::controls::cache::rows_key`]).
    BaselineRows,
}

impl EntryKind {
    fn as_str(self) -> &'static str {
        match self {
            EntryKind::Verdict => "verdict",
            EntryKind::Score => "score",
            EntryKind::Embedding => "embedding",
            EntryKind::Generation => "generation",
            EntryKind::NextToken => "next-token",
            EntryKind::BaselineRows => "baseline-rows",
        }
    }
}

/// The cache key of one backend call: sha256 (hex) over a canonical JSON of the key layout
/// version, the entry kind, the model identity (engine, model file hash or served model name,
/// chat-template hash, dtype — not the spec, so moving a file or adding a replica keeps hits),
/// the decoding parameters, the example id (remote judges seed from it) and the rendered input
/// (`prompt`, plus the structured fields `input` for reward models that read them).
pub fn cache_key(
    kind: EntryKind,
    identity: &ModelIdentity,
    decoding: &serde_json::Value,
    example_id: &str,
    prompt: &ChatPrompt,
    input: &serde_json::Value,
) -> String {
    let doc = serde_json::json!({
        "v": KEY_VERSION,
        "kind": kind.as_str(),
        "engine": identity.engine,
        "model": identity.file_hash,
        "chat_template": identity.chat_template_hash,
        "dtype": identity.dtype,
        "decoding": decoding,
        "example_id": example_id,
        "prompt": prompt,
        "input": input,
    });
    // serde_json's Map is ordered by key (no `preserve_order` feature here), so this text is
    // canonical for a given value.
    hex::encode(Sha256::digest(doc.to_string().as_bytes()))
}

/// An open cache file. Safe to share between threads (one connection behind a mutex; writes are
/// short single-row commits).
pub struct Cache {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").field("path", &self.path).finish()
    }
}

/// Entries of one model and kind, for `prbench cache stats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsRow {
    /// Model spec that stored the entries (as typed at the time).
    pub model: String,
    /// `verdict` or `score`.
    pub kind: String,
    /// Entries.
    pub entries: u64,
    /// Bytes of stored values (JSON text).
    pub value_bytes: u64,
    /// Oldest entry, seconds since the Unix epoch (UTC).
    pub oldest: i64,
    /// Most recently used entry (written or read), seconds since the Unix epoch (UTC).
    pub last_used: i64,
}

/// Which entries `prbench cache prune` deletes; all given conditions must hold.
#[derive(Debug, Clone, Default)]
pub struct PruneFilter {
    /// Entries whose model spec contains this text.
    pub model_contains: Option<String>,
    /// Entries not used (written or read) for at least this many seconds.
    pub unused_for_secs: Option<i64>,
}

fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl Cache {
    /// Opens (creating if needed, with its parent folder) the cache at `path`.
    ///
    /// # Errors
    /// [`EvalError::Cache`] naming the file when it cannot be created or is not a prbench cache
    /// (another program's SQLite database is refused, never modified).
    pub fn open(path: &Path) -> Result<Self, EvalError> {
        let err = |reason: String| EvalError::Cache { path: path.to_path_buf(), reason };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| err(e.to_string()))?;
        }
        refuse_foreign_file(path).map_err(err)?;
        let conn = Connection::open(path).map_err(|e| err(e.to_string()))?;
        conn.busy_timeout(std::time::Duration::from_secs(30)).map_err(|e| err(e.to_string()))?;
        // Never add tables to somebody else's database: a file with tables must have ours.
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| {
                err(format!("{e} (is this a prbench cache file? pass another --cache PATH)"))
            })?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "prbench_cache_meta") {
            return Err(err(format!(
                "this SQLite file is not a prbench cache (it has the tables {tables:?}); pass another --cache PATH"
            )));
        }
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=NORMAL;
             CREATE TABLE IF NOT EXISTS prbench_cache_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT OR IGNORE INTO prbench_cache_meta (key, value) VALUES ('schema', '1');
             CREATE TABLE IF NOT EXISTS entries (
                 key TEXT PRIMARY KEY,
                 kind TEXT NOT NULL,
                 model TEXT NOT NULL,
                 value TEXT NOT NULL,
                 created INTEGER NOT NULL,
                 last_used INTEGER NOT NULL
             );",
        )
        .map_err(|e| err(format!("{e} (is this a prbench cache file? pass another --cache PATH)")))?;
        let schema: String = conn
            .query_row("SELECT value FROM prbench_cache_meta WHERE key = 'schema'", [], |r| {
                r.get(0)
            })
            .map_err(|e| err(e.to_string()))?;
        if schema != "1" {
            return Err(err(format!("cache schema {schema} is not the one this prbench reads (1); pass another --cache PATH or --no-cache")));
        }
        Ok(Self { conn: Mutex::new(conn), path: path.to_path_buf() })
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent; keep going.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn err(&self, e: impl std::fmt::Display) -> EvalError {
        EvalError::Cache { path: self.path.clone(), reason: e.to_string() }
    }

    /// The stored value under `key`, if any (and marks it used).
    ///
    /// # Errors
    /// [`EvalError::Cache`] on a read failure or a value that no longer deserializes.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, EvalError> {
        let conn = self.conn();
        let text: Option<String> = conn
            .query_row("SELECT value FROM entries WHERE key = ?1", params![key], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        let Some(text) = text else { return Ok(None) };
        conn.execute("UPDATE entries SET last_used = ?2 WHERE key = ?1", params![key, now_secs()])
            .map_err(|e| self.err(e))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| self.err(format!("entry {key} does not read back ({e}); run `prbench cache prune --all` or pass --no-cache")))
    }

    /// Stores `value` under `key` (replacing an older value), committed before it returns.
    ///
    /// # Errors
    /// [`EvalError::Cache`] on a write failure.
    pub fn put<T: Serialize>(
        &self,
        key: &str,
        kind: EntryKind,
        model: &str,
        value: &T,
    ) -> Result<(), EvalError> {
        let text = serde_json::to_string(value).map_err(|e| self.err(e))?;
        let now = now_secs();
        self.conn()
            .execute(
                "INSERT OR REPLACE INTO entries (key, kind, model, value, created, last_used) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                params![key, kind.as_str(), model, text, now],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Entries per (model, kind), largest first.
    ///
    /// # Errors
    /// [`EvalError::Cache`] on a read failure.
    pub fn stats(&self) -> Result<Vec<StatsRow>, EvalError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT model, kind, COUNT(*), SUM(LENGTH(value)), MIN(created), MAX(last_used)
                 FROM entries GROUP BY model, kind ORDER BY COUNT(*) DESC, model, kind",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(StatsRow {
                    model: r.get(0)?,
                    kind: r.get(1)?,
                    entries: r.get::<_, i64>(2)? as u64,
                    value_bytes: r.get::<_, i64>(3)? as u64,
                    oldest: r.get(4)?,
                    last_used: r.get(5)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Deletes the entries `filter` selects (all entries for an empty filter) and compacts the
    /// file; returns how many were deleted. With `dry_run`, deletes nothing and returns the count.
    ///
    /// # Errors
    /// [`EvalError::Cache`] on a failure.
    pub fn prune(&self, filter: &PruneFilter, dry_run: bool) -> Result<u64, EvalError> {
        let conn = self.conn();
        let pattern = filter.model_contains.as_deref().map(|m| {
            format!("%{}%", m.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"))
        });
        let before = filter.unused_for_secs.map(|s| now_secs() - s);
        let where_ =
            "(?1 IS NULL OR model LIKE ?1 ESCAPE '\\') AND (?2 IS NULL OR last_used <= ?2)";
        if dry_run {
            let n: i64 = conn
                .query_row(
                    &format!("SELECT COUNT(*) FROM entries WHERE {where_}"),
                    params![pattern, before],
                    |r| r.get(0),
                )
                .map_err(|e| self.err(e))?;
            return Ok(n as u64);
        }
        let n = conn
            .execute(&format!("DELETE FROM entries WHERE {where_}"), params![pattern, before])
            .map_err(|e| self.err(e))?;
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM;").map_err(|e| self.err(e))?;
        Ok(n as u64)
    }

    /// Size of the cache file and its write-ahead log on disk, bytes.
    pub fn disk_bytes(&self) -> u64 {
        let wal = PathBuf::from(format!("{}-wal", self.path.display()));
        [self.path.as_path(), wal.as_path()]
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
    }
}

/// What the cache did during one run (reported in the summary and the log).
#[derive(Debug, Default)]
pub struct CacheCounters {
    hits: AtomicU64,
    calls: AtomicU64,
    stored: AtomicU64,
    write_errors: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl CacheCounters {
    /// The counts so far.
    pub fn report(&self, cache: &Cache) -> CacheReport {
        CacheReport {
            path: cache.path().display().to_string(),
            hits: self.hits.load(Ordering::Relaxed),
            calls: self.calls.load(Ordering::Relaxed),
            stored: self.stored.load(Ordering::Relaxed),
            write_errors: self.write_errors.load(Ordering::Relaxed),
            first_error: self.first_error.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        }
    }

    fn write_failed(&self, e: EvalError) {
        self.write_errors.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        if first.is_none() {
            *first = Some(e.to_string());
        }
    }
}

/// The lookup-then-call logic shared by [`CachedJudge`], [`CachedRewardModel`], the
/// planner's [`crate::planner::CachedGenerator`] and
/// [`crate::cached_scorer::CachedNextTokenScorer`]: answers the
/// items whose key is stored, sends the rest to `call` (one batch), stores each result the
/// moment the backend hands it to `done`, and returns one result per item in order.
/// Where [`cached_each`] stores results: the cache, the run's counters, and what to file them as.
pub(crate) struct Store<'a> {
    pub(crate) cache: &'a Cache,
    pub(crate) counters: &'a CacheCounters,
    pub(crate) kind: EntryKind,
    pub(crate) model: &'a str,
}

pub(crate) fn cached_each<R, T>(
    store: &Store<'_>,
    items: &[R],
    keys: &[String],
    done: ItemDone<'_, T>,
    call: impl FnOnce(&[R], ItemDone<'_, T>) -> Vec<Result<T, ModelError>>,
) -> Vec<Result<T, ModelError>>
where
    R: Clone,
    T: Serialize + DeserializeOwned + Clone,
{
    let Store { cache, counters, kind, model } = *store;
    let mut out: Vec<Option<Result<T, ModelError>>> = Vec::with_capacity(items.len());
    let mut miss_index = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        match cache.get::<T>(key) {
            Ok(Some(hit)) => {
                counters.hits.fetch_add(1, Ordering::Relaxed);
                done(i, &hit);
                out.push(Some(Ok(hit)));
            }
            // An unreadable entry is a miss: the call is repeated and the entry replaced.
            Ok(None) | Err(_) => {
                miss_index.push(i);
                out.push(None);
            }
        }
    }
    if !miss_index.is_empty() {
        let misses: Vec<R> = miss_index.iter().map(|&i| items[i].clone()).collect();
        counters.calls.fetch_add(misses.len() as u64, Ordering::Relaxed);
        let store = |j: usize, value: &T| {
            let i = miss_index[j];
            match cache.put(&keys[i], kind, model, value) {
                Ok(()) => {
                    counters.stored.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => counters.write_failed(e),
            }
            done(i, value);
        };
        let results = call(&misses, &store);
        for (j, r) in results.into_iter().enumerate() {
            out[miss_index[j]] = Some(r);
        }
    }
    out.into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(ModelError::Engine("backend returned fewer results than inputs".into()))
            })
        })
        .collect()
}

/// A [`Judge`] that answers from the cache when it can and stores every new verdict.
pub struct CachedJudge<'a> {
    inner: &'a dyn Judge,
    cache: &'a Cache,
    counters: &'a CacheCounters,
    identity: ModelIdentity,
    decoding: serde_json::Value,
}

impl<'a> CachedJudge<'a> {
    /// Wraps `inner`; results go to `cache`, counts to `counters`.
    pub fn new(inner: &'a dyn Judge, cache: &'a Cache, counters: &'a CacheCounters) -> Self {
        Self { identity: inner.identity(), decoding: inner.decoding(), inner, cache, counters }
    }

    /// The cache key of one request; a pointwise recipe's second conversation
    /// ([`JudgeRequest::prompt_b`]) is part of it as the `input`.
    pub fn key(&self, item: &JudgeRequest) -> String {
        let input = item
            .prompt_b
            .as_ref()
            .map_or(serde_json::Value::Null, |b| serde_json::json!({ "prompt_b": b }));
        cache_key(
            EntryKind::Verdict,
            &self.identity,
            &self.decoding,
            &item.pair.example_id,
            &item.prompt,
            &input,
        )
    }
}

impl Judge for CachedJudge<'_> {
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        self.judge_each(items, &|_, _| {}).into_iter().collect()
    }

    fn judge_each(
        &self,
        items: &[JudgeRequest],
        done: ItemDone<'_, Verdict>,
    ) -> Vec<Result<Verdict, ModelError>> {
        let keys: Vec<String> = items.iter().map(|it| self.key(it)).collect();
        let store = Store {
            cache: self.cache,
            counters: self.counters,
            kind: EntryKind::Verdict,
            model: &self.identity.spec,
        };
        cached_each(&store, items, &keys, done, |xs, d| self.inner.judge_each(xs, d))
    }

    fn input_overflow(&self, item: &JudgeRequest) -> Result<Option<usize>, ModelError> {
        self.inner.input_overflow(item)
    }

    fn identity(&self) -> ModelIdentity {
        self.identity.clone()
    }

    fn decoding(&self) -> serde_json::Value {
        self.decoding.clone()
    }

    fn call_stats(&self) -> Option<CallStats> {
        self.inner.call_stats()
    }
}

/// A [`RewardModel`] that answers from the cache when it can and stores every new score.
pub struct CachedRewardModel<'a> {
    inner: &'a dyn RewardModel,
    cache: &'a Cache,
    counters: &'a CacheCounters,
    identity: ModelIdentity,
    settings: serde_json::Value,
}

impl<'a> CachedRewardModel<'a> {
    /// Wraps `inner`; results go to `cache`, counts to `counters`.
    pub fn new(inner: &'a dyn RewardModel, cache: &'a Cache, counters: &'a CacheCounters) -> Self {
        Self { identity: inner.identity(), settings: inner.settings(), inner, cache, counters }
    }

    /// The cache key of one request (the structured fields are part of it: reward servers read
    /// them instead of the rendered conversation).
    pub fn key(&self, item: &RmRequest) -> String {
        let input = serde_json::json!({ "question": item.input.question, "context": item.input.context, "answer": item.input.answer });
        cache_key(
            EntryKind::Score,
            &self.identity,
            &self.settings,
            &item.input.example_id,
            &item.prompt,
            &input,
        )
    }
}

impl RewardModel for CachedRewardModel<'_> {
    fn score(&self, items: &[RmRequest]) -> Result<Vec<Score>, ModelError> {
        self.score_each(items, &|_, _| {}).into_iter().collect()
    }

    fn score_each(
        &self,
        items: &[RmRequest],
        done: ItemDone<'_, Score>,
    ) -> Vec<Result<Score, ModelError>> {
        let keys: Vec<String> = items.iter().map(|it| self.key(it)).collect();
        let store = Store {
            cache: self.cache,
            counters: self.counters,
            kind: EntryKind::Score,
            model: &self.identity.spec,
        };
        cached_each(&store, items, &keys, done, |xs, d| self.inner.score_each(xs, d))
    }

    fn input_overflow(&self, item: &RmRequest) -> Result<Option<usize>, ModelError> {
        self.inner.input_overflow(item)
    }

    fn identity(&self) -> ModelIdentity {
        self.identity.clone()
    }

    fn settings(&self) -> serde_json::Value {
        self.settings.clone()
    }

    fn training_condition(&self) -> Option<String> {
        self.inner.training_condition()
    }

    fn call_stats(&self) -> Option<CallStats> {
        self.inner.call_stats()
    }
}

/// Refuses an existing non-empty file that is not a SQLite database: SQLite opens a short file
/// of any content as a new database and writes over it, so a mistyped `--cache notes.jsonl`
/// would destroy the file. A missing or empty file is fine.
fn refuse_foreign_file(path: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
    if meta.is_dir() {
        return Err("is a folder; pass a file path such as runs/cache.sqlite".into());
    }
    if meta.len() == 0 {
        return Ok(());
    }
    if !prbench_files::is_sqlite(path).map_err(|e| format!("cannot be read: {e}"))? {
        return Err("exists and is not a SQLite file, so using it as the cache would destroy it; pass another --cache PATH (a new file, or a prbench cache)".into());
    }
    Ok(())
}

#[cfg(test)]
mod default_path_tests {
    use std::path::{Path, PathBuf};

    use super::{default_beside, default_in};

    #[test]
    fn the_default_cache_sits_in_the_folder_that_holds_the_output() {
        // Best-of-N folder, ranked dataset file, build folder: the folder holding each.
        assert_eq!(default_beside(Path::new("runs/bon1")), PathBuf::from("runs/cache.sqlite"));
        assert_eq!(
            default_beside(Path::new("/data/x/ranked.jsonl")),
            PathBuf::from("/data/x/cache.sqlite")
        );
        // A bare name is in the current folder: the relative file name, never `/cache.sqlite`.
        assert_eq!(default_beside(Path::new("bon1")), PathBuf::from("cache.sqlite"));
        // eval's run folders live inside --out.
        assert_eq!(default_in(Path::new("runs")), PathBuf::from("runs/cache.sqlite"));
        assert_eq!(default_in(Path::new("runs")), default_beside(Path::new("runs/any-run-id")));
    }
}
