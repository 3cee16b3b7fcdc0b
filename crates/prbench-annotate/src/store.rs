//! The annotation store: one SQLite file (`DIR/annotate.sqlite`, WAL, `synchronous=FULL`)
//! holding the items, the annotators' hashed tokens, the assignment and every rating.
//!
//! A rating is committed before [`Store::submit`] returns, so whatever the page was told is
//! saved survives a `kill -9` (and, with `synchronous=FULL`, a power cut). The items are
//! stored with their labels, so export and report need only the folder; the page's views
//! ([`ItemView`]) never carry a label.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use prbench_data::Example;
use rand::Rng;
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use crate::assign::assign;
use crate::error::AnnotateError;

mod folder;
mod ratings;

use folder::lock;
pub use folder::{check_folder, refuse_store_path, LOCK_FILE};
pub use ratings::{scored, AspectView, ItemView, PostView, Progress, RatedItem, StoredItem};

/// The store's file name inside the annotation folder.
pub const STORE_FILE: &str = "annotate.sqlite";
const SCHEMA_VERSION: &str = "1";

/// What a new annotation folder is made from (and a reopened one must match).
#[derive(Debug, Clone)]
pub struct StoreSpec<'a> {
    /// The items to rate, each with its chosen and rejected answers.
    pub examples: &'a [Example],
    /// The dataset's human-readable source (`Dataset::source`).
    pub source: &'a str,
    /// The dataset's sha256 (`Dataset::hash`).
    pub dataset_hash: &'a str,
    /// Annotator names, in the order tokens are printed.
    pub annotators: &'a [String],
    /// Annotators per item.
    pub per_item: usize,
    /// Seed of the assignment and answer order ([`crate::assign`]).
    pub seed: u64,
    /// Which items of the dataset were taken, as the flags say it (`--subset Art --limit 5`,
    /// or `all items`): a reopened folder must have the same.
    pub selection: &'a str,
}

/// How [`Store::open_or_create`] found the folder.
#[derive(Debug)]
pub enum Opened {
    /// A new store: each annotator's secret token, in `--annotators` order. They are shown
    /// once; the store keeps only their sha256.
    Created(Vec<(String, String)>),
    /// An existing store for the same data and settings: the ratings so far are kept.
    Resumed,
}

/// The annotation store (see the module docs). Safe to share between threads: one
/// connection behind a mutex (every statement is short).
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    conn: Mutex<Connection>,
    tokens: HashMap<String, String>,
    /// The folder's lock while serving ([`Store::open_or_create`]); released on drop.
    _lock: Option<std::fs::File>,
}

fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A new secret token: 128 random bits from the thread CSPRNG (ChaCha seeded by the OS), as
/// 32 hex digits.
fn new_token() -> String {
    hex::encode(rand::rng().random::<[u8; 16]>())
}

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items (item_id TEXT PRIMARY KEY, item_index INTEGER NOT NULL UNIQUE, subset TEXT NOT NULL, example TEXT NOT NULL);
CREATE TABLE annotators (name TEXT PRIMARY KEY, list_index INTEGER NOT NULL UNIQUE, token_sha256 TEXT NOT NULL UNIQUE);
CREATE TABLE assignments (
  annotator TEXT NOT NULL REFERENCES annotators(name),
  position INTEGER NOT NULL CHECK (position >= 1),
  item_id TEXT NOT NULL REFERENCES items(item_id),
  chosen_shown_as INTEGER NOT NULL CHECK (chosen_shown_as IN (1, 2)),
  PRIMARY KEY (annotator, position), UNIQUE (annotator, item_id));
CREATE TABLE ratings (
  annotator TEXT NOT NULL,
  position INTEGER NOT NULL,
  submission TEXT NOT NULL,
  better INTEGER NOT NULL CHECK (better IN (1, 2)),
  revision INTEGER NOT NULL,
  first_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (annotator, position),
  FOREIGN KEY (annotator, position) REFERENCES assignments(annotator, position));
";

impl Store {
    fn sql(&self, source: rusqlite::Error) -> AnnotateError {
        AnnotateError::Store { path: self.path.clone(), source }
    }

    fn connect(path: &Path) -> Result<Connection, AnnotateError> {
        let err = |source| AnnotateError::Store { path: path.to_path_buf(), source };
        let conn = Connection::open(path).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(err)?;
        conn.pragma_update(None, "synchronous", "FULL").map_err(err)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(err)?;
        Ok(conn)
    }

    /// Opens the annotation folder `dir`, making it (and the store) if new.
    ///
    /// A new store gets the items, the assignment ([`crate::assign::assign`]) and one token per
    /// annotator ([`Opened::Created`]). An existing one must have been made from the same
    /// dataset hash, annotators (same order), `per_item` and seed, and is resumed.
    ///
    /// Everything is checked before anything is created: the folder ([`check_folder`]), and for
    /// a new store the annotators, `per_item` and the items ([`assign`]), so a refused start
    /// leaves no folder, lock or file behind.
    ///
    /// # Errors
    /// [`AnnotateError::Mismatch`] naming what differs; the errors of [`assign`] and
    /// [`check_folder`]; [`AnnotateError::Refused`] when another server holds the folder;
    /// [`AnnotateError::Io`]/[`AnnotateError::Store`] when the folder or file cannot be used.
    pub fn open_or_create(dir: &Path, spec: &StoreSpec) -> Result<(Store, Opened), AnnotateError> {
        check_folder(dir)?;
        let path = dir.join(STORE_FILE);
        if path.is_file() {
            let held = lock(dir)?;
            let mut store = Store::open(dir)?;
            store.check_same(spec)?;
            store._lock = Some(held);
            return Ok((store, Opened::Resumed));
        }
        let ids: Vec<&str> = spec.examples.iter().map(|e| e.id.as_str()).collect();
        let assignment = assign(&ids, spec.annotators, spec.per_item, spec.seed)?;
        std::fs::create_dir_all(dir)
            .map_err(|source| AnnotateError::Io { path: dir.to_path_buf(), source })?;
        let held = lock(dir)?;
        // A second start may have made the store between the look above and the lock: look
        // again now that the lock is held.
        if path.is_file() {
            let mut store = Store::open(dir)?;
            store.check_same(spec)?;
            store._lock = Some(held);
            return Ok((store, Opened::Resumed));
        }
        // Build in a side file and rename, so a kill mid-creation leaves no half store. Not
        // prbench_files::write_atomic: SQLite writes this file itself (with its -wal/-shm), and
        // the side file has a fixed name that a later start recognises and clears
        // (`made_before_the_store`).
        let tmp = dir.join(format!("{STORE_FILE}.new"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", tmp.display()));
        }
        let mut conn = Store::connect(&tmp)?;
        let err = |source| AnnotateError::Store { path: tmp.clone(), source };
        let tokens: Vec<(String, String)> =
            spec.annotators.iter().map(|a| (a.clone(), new_token())).collect();
        {
            let tx = conn.transaction().map_err(err)?;
            tx.execute_batch(SCHEMA).map_err(err)?;
            let created = chrono::Utc::now().to_rfc3339();
            for (k, v) in [
                ("schema_version", SCHEMA_VERSION.to_string()),
                ("dataset_source", spec.source.to_string()),
                ("dataset_hash", spec.dataset_hash.to_string()),
                ("per_item", spec.per_item.to_string()),
                ("seed", spec.seed.to_string()),
                ("selection", spec.selection.to_string()),
                ("created_at", created),
            ] {
                tx.execute("INSERT INTO meta (key, value) VALUES (?1, ?2)", params![k, v])
                    .map_err(err)?;
            }
            for (i, e) in spec.examples.iter().enumerate() {
                let json = serde_json::to_string(e).expect("an Example serializes");
                tx.execute(
                    "INSERT INTO items VALUES (?1, ?2, ?3, ?4)",
                    params![e.id, i as i64, e.subset, json],
                )
                .map_err(err)?;
            }
            for (i, (name, token)) in tokens.iter().enumerate() {
                tx.execute(
                    "INSERT INTO annotators VALUES (?1, ?2, ?3)",
                    params![name, i as i64, token_hash(token)],
                )
                .map_err(err)?;
                for (p, slot) in assignment[i].iter().enumerate() {
                    tx.execute(
                        "INSERT INTO assignments VALUES (?1, ?2, ?3, ?4)",
                        params![
                            name,
                            (p + 1) as i64,
                            spec.examples[slot.item].id,
                            slot.chosen_shown_as
                        ],
                    )
                    .map_err(err)?;
                }
            }
            tx.commit().map_err(err)?;
        }
        conn.pragma_update(None, "wal_checkpoint", "TRUNCATE").map_err(err)?;
        drop(conn);
        std::fs::rename(&tmp, &path)
            .map_err(|source| AnnotateError::Io { path: path.clone(), source })?;
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", tmp.display()));
        }
        let mut store = Store::open(dir)?;
        store._lock = Some(held);
        Ok((store, Opened::Created(tokens)))
    }

    /// Opens the existing store of annotation folder `dir`.
    ///
    /// # Errors
    /// [`AnnotateError::Refused`] when `dir` holds no store (with what to run), the SQLite errors,
    /// and [`AnnotateError::Corrupt`] for a store of another schema version.
    pub fn open(dir: &Path) -> Result<Store, AnnotateError> {
        let path = dir.join(STORE_FILE);
        if !path.is_file() {
            return Err(AnnotateError::Refused {
                path: path.clone(),
                reason: "no annotation store here: start one with `prbench annotate serve --data D --out DIR --annotators NAME,...`".into(),
            });
        }
        let conn = Store::connect(&path)?;
        let mut store = Store { path, conn: Mutex::new(conn), tokens: HashMap::new(), _lock: None };
        let version = store.meta("schema_version")?;
        if version != SCHEMA_VERSION {
            return Err(AnnotateError::Corrupt {
                path: store.path.clone(),
                detail: format!("schema version {version}, this prbench reads {SCHEMA_VERSION}"),
            });
        }
        store.load_tokens()?;
        Ok(store)
    }

    fn load_tokens(&mut self) -> Result<(), AnnotateError> {
        let conn = self.conn.lock().expect("store mutex");
        let mut stmt =
            conn.prepare("SELECT token_sha256, name FROM annotators").map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .and_then(|r| r.collect::<Result<HashMap<_, _>, _>>())
            .map_err(|e| self.sql(e))?;
        drop(stmt);
        drop(conn);
        self.tokens = rows;
        Ok(())
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A value of the `meta` table (`dataset_hash`, `dataset_source`, `per_item`, `seed`,
    /// `created_at`, `schema_version`).
    ///
    /// # Errors
    /// [`AnnotateError::Corrupt`] if the key is missing.
    pub fn meta(&self, key: &str) -> Result<String, AnnotateError> {
        let conn = self.conn.lock().expect("store mutex");
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or_else(|| AnnotateError::Corrupt {
                path: self.path.clone(),
                detail: format!("no `{key}` in its meta table"),
            })
    }

    /// Annotator names in `--annotators` order.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn annotators(&self) -> Result<Vec<String>, AnnotateError> {
        let conn = self.conn.lock().expect("store mutex");
        let mut stmt = conn
            .prepare("SELECT name FROM annotators ORDER BY list_index")
            .map_err(|e| self.sql(e))?;
        let names =
            stmt.query_map([], |r| r.get(0)).and_then(|r| r.collect()).map_err(|e| self.sql(e));
        names
    }

    fn check_same(&self, spec: &StoreSpec) -> Result<(), AnnotateError> {
        let hint = "restart with the same --data, --subset, --limit, --annotators, --per-item and --seed as the first start, or pass a new --out";
        let mismatch = |what: String| AnnotateError::Mismatch {
            path: self.path.clone(),
            what,
            hint: hint.into(),
        };
        let selection = self.meta("selection")?;
        if selection != spec.selection {
            return Err(mismatch(format!("{selection}, not {}", spec.selection)));
        }
        let hash = self.meta("dataset_hash")?;
        if hash != spec.dataset_hash {
            return Err(mismatch(format!(
                "dataset `{}` (sha256 {hash}), not `{}` (sha256 {})",
                self.meta("dataset_source")?,
                spec.source,
                spec.dataset_hash
            )));
        }
        let names = self.annotators()?;
        if names != spec.annotators {
            return Err(mismatch(format!(
                "--annotators {}, not {}",
                names.join(","),
                spec.annotators.join(",")
            )));
        }
        for (key, now) in [("per_item", spec.per_item.to_string()), ("seed", spec.seed.to_string())]
        {
            let then = self.meta(key)?;
            if then != now {
                return Err(mismatch(format!("--{} {then}, not {now}", key.replace('_', "-"))));
            }
        }
        Ok(())
    }

    /// Sets a value of the `meta` table (e.g. `port`, the port last served on).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn set_meta(&self, key: &str, value: &str) -> Result<(), AnnotateError> {
        let conn = self.conn.lock().expect("store mutex");
        conn.execute("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value", params![key, value])
            .map(|_| ())
            .map_err(|e| self.sql(e))
    }

    /// A value of the `meta` table, `None` when it was never set.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn meta_opt(&self, key: &str) -> Result<Option<String>, AnnotateError> {
        let conn = self.conn.lock().expect("store mutex");
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// Replaces every annotator's token with a new one (the old links stop working).
    ///
    /// # Errors
    /// SQLite errors.
    pub fn reissue_tokens(&mut self) -> Result<Vec<(String, String)>, AnnotateError> {
        let names = self.annotators()?;
        let tokens: Vec<(String, String)> = names.into_iter().map(|n| (n, new_token())).collect();
        {
            let mut conn = self.conn.lock().expect("store mutex");
            let tx = conn.transaction().map_err(|e| self.sql(e))?;
            for (name, token) in &tokens {
                tx.execute(
                    "UPDATE annotators SET token_sha256 = ?1 WHERE name = ?2",
                    params![token_hash(token), name],
                )
                .map_err(|e| self.sql(e))?;
            }
            tx.commit().map_err(|e| self.sql(e))?;
        }
        self.load_tokens()?;
        Ok(tokens)
    }

    /// The annotator whose token is `token`, if any (compared by sha256).
    pub fn annotator_for_token(&self, token: &str) -> Option<&str> {
        self.tokens.get(&token_hash(token)).map(String::as_str)
    }

    /// How many (annotator, item) assignments there are.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn assignment_count(&self) -> Result<usize, AnnotateError> {
        let conn = self.conn.lock().expect("store mutex");
        conn.query_row("SELECT COUNT(*) FROM assignments", [], |r| r.get::<_, i64>(0))
            .map(|n| n as usize)
            .map_err(|e| self.sql(e))
    }
}
