//! `prbench_data::fetch` against a loopback HTTP server built here, which serves small copies
//! in the real layouts:
//!
//! - the Hugging Face hub as hf-hub 1.0.0 and the tree listing ask it:
//!   `GET /api/datasets/ORG/NAME/revision/REV` (`{"id", "sha"}`),
//!   `GET /api/datasets/ORG/NAME/tree/COMMIT?recursive=true` (entries with `lfs.oid` = sha256),
//!   `HEAD`/`GET /datasets/ORG/NAME/resolve/COMMIT/PATH` (the bytes, `X-Repo-Commit`, `ETag`);
//! - raw GitHub files: `GET /OWNER/REPO/COMMIT/PATH`.
//!
//! Every request is logged, so a test can say which were made (a rerun downloads nothing).
//! Offline mode and the cache directory are passed as options (no env vars: tests run in
//! parallel).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Method, StatusCode, Uri};
use axum::response::Response;
use common::{fixture, names, row, write_parquet};
use prbench_data::error::DataError;
use prbench_data::fetch::{fetch, FetchOptions, ALIGNX_COMMIT, PSOUPS_FILES};
use prbench_data::hub::{load_hub, HubOptions, PRB_REPO};
use prbench_data::load;
use sha2::{Digest, Sha256};

const COMMIT: &str = "89abcdef0123456789abcdef0123456789abcdef";

#[derive(Clone)]
struct Served {
    body: Vec<u8>,
    headers: Vec<(&'static str, String)>,
}

#[derive(Default)]
struct State {
    routes: HashMap<String, Served>,
    log: Vec<(Method, String)>,
}

/// The loopback server: routes by exact path (as requested, percent-encoding kept).
struct Mirror {
    base: String,
    state: Arc<Mutex<State>>,
    _runtime: tokio::runtime::Runtime,
}

impl Mirror {
    fn start() -> Mirror {
        let state = Arc::new(Mutex::new(State::default()));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let shared = state.clone();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind a loopback port");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(move |method: Method, uri: Uri| {
            let state = shared.clone();
            async move {
                let mut st = state.lock().unwrap();
                st.log.push((method.clone(), uri.path().to_string()));
                match st.routes.get(uri.path()) {
                    Some(s) => {
                        let mut r = Response::builder().status(StatusCode::OK);
                        for (k, v) in &s.headers {
                            r = r.header(*k, v);
                        }
                        let body = if method == Method::HEAD { Vec::new() } else { s.body.clone() };
                        r.body(Body::from(body)).unwrap()
                    }
                    None => Response::builder()
                        .status(StatusCode::NOT_FOUND)
                        .body(Body::from("not found"))
                        .unwrap(),
                }
            }
        });
        runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
        Mirror { base, state, _runtime: runtime }
    }

    fn route(&self, path: &str, body: Vec<u8>, headers: Vec<(&'static str, String)>) {
        self.state.lock().unwrap().routes.insert(path.to_string(), Served { body, headers });
    }

    fn json(&self, path: &str, value: serde_json::Value) {
        self.route(
            path,
            value.to_string().into_bytes(),
            vec![("content-type", "application/json".into())],
        );
    }

    /// Serves dataset `repo` at `revision` (percent-encoded as hf-hub sends it) = [`COMMIT`]:
    /// each `(path, published, served)` is listed as an LFS file whose sha256 and size are those
    /// of `published`, and its resolve URL answers `served`.
    fn hub_repo(&self, repo: &str, revision_enc: &str, files: &[(&str, Vec<u8>, Vec<u8>)]) {
        self.json(
            &format!("/api/datasets/{repo}/revision/{revision_enc}"),
            serde_json::json!({"id": repo, "sha": COMMIT, "private": false}),
        );
        let mut tree = vec![
            serde_json::json!({"type": "file", "oid": "1111111111111111111111111111111111111111", "size": 2, "path": ".gitattributes"}),
        ];
        for (path, published, served) in files {
            let sha = sha256(published);
            if let Some((dir, _)) = path.rsplit_once('/') {
                tree.push(serde_json::json!({"type": "directory", "oid": "2222222222222222222222222222222222222222", "path": dir}));
            }
            tree.push(serde_json::json!({
                "type": "file",
                "oid": "3333333333333333333333333333333333333333",
                "size": 134,
                "path": path,
                "lfs": {"oid": sha, "size": published.len(), "pointerSize": 134}
            }));
            self.route(
                &format!("/datasets/{repo}/resolve/{COMMIT}/{path}"),
                served.clone(),
                vec![
                    ("x-repo-commit", COMMIT.to_string()),
                    ("etag", format!("\"{sha}\"")),
                    ("x-linked-size", published.len().to_string()),
                ],
            );
        }
        self.json(&format!("/api/datasets/{repo}/tree/{COMMIT}"), serde_json::Value::Array(tree));
    }

    /// Requests so far as `METHOD path`.
    fn requests(&self) -> Vec<String> {
        self.state.lock().unwrap().log.iter().map(|(m, p)| format!("{m} {p}")).collect()
    }

    fn clear_log(&self) {
        self.state.lock().unwrap().log.clear();
    }

    fn downloads(&self) -> usize {
        self.requests().iter().filter(|r| r.starts_with("GET ") && r.contains("/resolve/")).count()
    }

    fn opts(&self, out: &Path) -> FetchOptions {
        FetchOptions {
            out: Some(out.to_path_buf()),
            offline: false,
            github_raw: format!("{}/raw", self.base),
            hf_endpoint: Some(self.base.clone()),
        }
    }
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn read(p: PathBuf) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// Every file under `dir` (recursively, symlinks listed as they are), relative.
fn listing(dir: &Path) -> Vec<String> {
    fn go(dir: &Path, pre: &str, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let rel = format!("{pre}{}", e.file_name().to_string_lossy());
            if e.file_type().unwrap().is_dir() {
                go(&e.path(), &format!("{rel}/"), out);
            } else {
                out.push(rel);
            }
        }
    }
    let mut v = Vec::new();
    go(dir, "", &mut v);
    v.sort();
    v
}

fn offline_hub(cache: &Path) -> HubOptions {
    HubOptions { cache_dir: Some(cache.to_path_buf()), offline: true }
}

/// A Lifestyle config file (the committed PRB fixture has Art and Society only).
fn lifestyle_parquet(dir: &Path) -> Vec<u8> {
    let p = dir.join("life.parquet");
    write_parquet(
        &p,
        &[row("life-001"), row("life-002")],
        &["id", "question", "narrative", "category", "chosen", "rejected"],
        &[
            ("profile", &["category", "id", "text"]),
            ("rubric_aspects", &["aspect", "evidence", "reason"]),
        ],
    );
    read(p)
}

#[test]
fn prb_fetch_then_load_offline_and_a_rerun_downloads_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Mirror::start();
    let art = read(fixture("prb_hf/Art_and_Entertainment/test-00000-of-00001.parquet"));
    let soc = read(fixture("prb_hf/Society_and_Culture/test-00000-of-00001.parquet"));
    let life = lifestyle_parquet(tmp.path());
    let files = [
        ("Art_and_Entertainment/test-00000-of-00001.parquet", art.clone(), art.clone()),
        (
            "Lifestyle_and_Personal_Development/test-00000-of-00001.parquet",
            life.clone(),
            life.clone(),
        ),
        ("Society_and_Culture/test-00000-of-00001.parquet", soc.clone(), soc.clone()),
    ];
    m.hub_repo(PRB_REPO, "main", &files);
    let cache = tmp.path().join("hub");

    let got = fetch("prb", &m.opts(&cache)).unwrap();
    assert_eq!(got.spec, format!("hf:{PRB_REPO}"));
    assert_eq!(got.commit, COMMIT);
    assert_eq!(got.files.len(), 3);
    assert!(got.files.iter().all(|f| f.downloaded), "{:?}", got.files);
    assert_eq!(got.files[1].sha256.as_deref(), Some(sha256(&life).as_str()));
    assert_eq!(m.downloads(), 3, "{:?}", m.requests());
    // The hub cache layout hf: reads: refs/main, blobs named by sha256, relative symlinks.
    let repo_dir = cache.join("datasets--QiyaoMa--Personalized-RewardBench");
    assert_eq!(std::fs::read_to_string(repo_dir.join("refs/main")).unwrap(), COMMIT);
    let pointer = repo_dir
        .join(format!("snapshots/{COMMIT}/Society_and_Culture/test-00000-of-00001.parquet"));
    assert_eq!(
        std::fs::read_link(&pointer).unwrap(),
        PathBuf::from(format!("../../../blobs/{}", sha256(&soc)))
    );
    assert_eq!(read(pointer), soc);

    // The printed spec loads, offline, the same examples as a local copy of the same files.
    let local = tmp.path().join("local");
    for (path, bytes, _) in &files {
        let p = local.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let expected = load(local.to_str().unwrap(), &[]).unwrap();
    let ds = load_hub(PRB_REPO, None, &[], &offline_hub(&cache), &got.spec).unwrap();
    assert_eq!(ds.examples, expected.examples);
    assert_eq!(ds.hash, expected.hash);
    assert_eq!(ds.examples.len(), 2 + 2 + 3);

    // A rerun asks the hub what the revision holds but downloads nothing.
    m.clear_log();
    let again = fetch("prb", &m.opts(&cache)).unwrap();
    assert!(again.files.iter().all(|f| !f.downloaded), "{:?}", again.files);
    assert_eq!(m.downloads(), 0, "{:?}", m.requests());
    assert!(!m.requests().is_empty(), "online, the rerun still lists the revision");

    // Offline with the files cached: no request at all, same snapshot.
    m.clear_log();
    let mut off = m.opts(&cache);
    off.offline = true;
    let cached = fetch("prb", &off).unwrap();
    assert_eq!(cached.commit, COMMIT);
    assert_eq!(cached.files.len(), 3);
    assert_eq!(cached.spec, got.spec);
    assert!(m.requests().is_empty(), "{:?}", m.requests());
}

#[test]
fn offline_without_the_files_fails_naming_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Mirror::start();
    let cache = tmp.path().join("empty-cache");
    let mut off = m.opts(&cache);
    off.offline = true;
    let err = fetch("prism", &off).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::FetchOffline { .. }), "{msg}");
    assert!(msg.contains("hf:HannahRoseKirk/prism-alignment@main"), "{msg}");
    assert!(msg.contains(&format!("{}/datasets/HannahRoseKirk/prism-alignment", m.base)), "{msg}");
    assert!(msg.contains("conversations.jsonl"), "{msg}");
    assert!(msg.contains("HF_HUB_OFFLINE"), "{msg}");
    assert!(msg.contains(cache.to_str().unwrap()), "{msg}");

    // GitHub source offline, nothing in the folder.
    let out = tmp.path().join("psoups");
    let mut off = m.opts(&out);
    off.offline = true;
    let err = fetch("psoups", &off).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::FetchOffline { .. }), "{msg}");
    assert!(msg.contains("friendly_unfriendly.json") && msg.contains("HF_HUB_OFFLINE"), "{msg}");
    assert!(m.requests().is_empty(), "{:?}", m.requests());
    assert!(!out.exists());
}

#[test]
fn a_hub_sha256_mismatch_is_refused_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Mirror::start();
    let conv = read(fixture("prism/conversations.jsonl"));
    let survey = read(fixture("prism/survey.jsonl"));
    let mut tampered = survey.clone();
    let last = tampered.len() - 2;
    tampered[last] ^= 0x01;
    m.hub_repo(
        "HannahRoseKirk/prism-alignment",
        "main",
        &[
            ("conversations.jsonl", conv.clone(), conv.clone()),
            ("survey.jsonl", survey.clone(), tampered.clone()),
        ],
    );
    let cache = tmp.path().join("hub");
    let err = fetch("prism", &m.opts(&cache)).unwrap_err();
    let msg = err.to_string();
    let (want, found) = (sha256(&survey), sha256(&tampered));
    assert!(matches!(err, DataError::FetchMismatch { what: "sha256", .. }), "{msg}");
    assert!(msg.contains("survey.jsonl"), "{msg}");
    assert!(msg.contains(&want) && msg.contains(&found), "{msg}");
    let repo_dir = cache.join("datasets--HannahRoseKirk--prism-alignment");
    let left = listing(&repo_dir);
    // The verified file stays; nothing of survey.jsonl (no blob, no temporary file, no pointer),
    // and no ref: the fetch did not finish.
    assert_eq!(
        left,
        [format!("blobs/{}", sha256(&conv)), format!("snapshots/{COMMIT}/conversations.jsonl")],
        "{left:?}"
    );
}

#[test]
fn a_github_sha256_mismatch_is_refused_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Mirror::start();
    let f = PSOUPS_FILES[0];
    let wrong = b"[{\"prompt\": \"not the published file\"}]".to_vec();
    m.route(&format!("/raw/JinaLeejnl/AlignX/{ALIGNX_COMMIT}/{}", f.path), wrong.clone(), vec![]);
    let out = tmp.path().join("psoups");
    let err = fetch("psoups", &m.opts(&out)).unwrap_err();
    let msg = err.to_string();
    // The size differs first.
    assert!(matches!(err, DataError::FetchMismatch { what: "size", .. }), "{msg}");
    assert!(msg.contains(f.path), "{msg}");
    assert!(
        msg.contains(&format!("{} bytes", f.size))
            && msg.contains(&format!("{} bytes", wrong.len())),
        "{msg}"
    );
    assert_eq!(listing(&out), Vec::<String>::new());

    // Same size, other bytes: the sha256 check, with both hashes.
    let mut same_size = vec![b' '; f.size as usize];
    same_size[0] = b'[';
    same_size[1] = b']';
    m.route(
        &format!("/raw/JinaLeejnl/AlignX/{ALIGNX_COMMIT}/{}", f.path),
        same_size.clone(),
        vec![],
    );
    let err = fetch("psoups", &m.opts(&out)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::FetchMismatch { what: "sha256", .. }), "{msg}");
    assert!(msg.contains(f.sha256) && msg.contains(&sha256(&same_size)), "{msg}");
    assert!(msg.contains("friendly_unfriendly.json"), "{msg}");
    assert_eq!(listing(&out), Vec::<String>::new());
}

#[test]
fn psoups_from_raw_github_then_load_and_rerun() {
    let Some(real) = prbench_testkit::psoups() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let m = Mirror::start();
    for f in PSOUPS_FILES {
        m.route(
            &format!("/raw/JinaLeejnl/AlignX/{ALIGNX_COMMIT}/{}", f.path),
            read(real.join(f.name())),
            vec![],
        );
    }
    let out = tmp.path().join("data/psoups");
    let got = fetch("psoups", &m.opts(&out)).unwrap();
    assert_eq!(got.spec, format!("psoups:{}", out.display()));
    assert_eq!(got.commit, ALIGNX_COMMIT);
    assert!(got.files.iter().all(|f| f.downloaded));
    assert_eq!(m.requests().len(), 2, "{:?}", m.requests());
    for f in PSOUPS_FILES {
        assert_eq!(sha256(&read(out.join(f.name()))), f.sha256);
    }
    assert_eq!(listing(&out), ["friendly_unfriendly.json", "student_phd.json"]);
    let fetched = load(&got.spec, &[]).unwrap();
    let original = load(&format!("psoups:{}", real.display()), &[]).unwrap();
    assert_eq!(fetched.examples, original.examples);
    assert_eq!(fetched.hash, original.hash);
    assert_eq!(fetched.examples.len(), 1200);

    m.clear_log();
    let again = fetch("psoups", &m.opts(&out)).unwrap();
    assert!(again.files.iter().all(|f| !f.downloaded));
    assert!(m.requests().is_empty(), "{:?}", m.requests());
}

#[test]
fn synthesizeme_and_prism_fetch_then_load() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Mirror::start();
    let fix = fixture("synthesizeme/prism_personalized_0125");
    let data: Vec<(String, Vec<u8>)> = ["test", "train", "validation"]
        .iter()
        .map(|s| {
            let p = format!("data/{s}-00000-of-00001.parquet");
            let b = read(fix.join(&p));
            (p, b)
        })
        .collect();
    let files: Vec<(&str, Vec<u8>, Vec<u8>)> =
        data.iter().map(|(p, b)| (p.as_str(), b.clone(), b.clone())).collect();
    m.hub_repo("MichaelR207/prism_personalized_0125", "main", &files);
    let cache = tmp.path().join("hub");
    let got = fetch("synthesizeme-prism", &m.opts(&cache)).unwrap();
    let snapshot =
        cache.join(format!("datasets--MichaelR207--prism_personalized_0125/snapshots/{COMMIT}"));
    assert_eq!(got.spec, format!("synthesizeme:{}", snapshot.display()));
    let ds = load(&got.spec, &[]).unwrap();
    let expected = load(&format!("synthesizeme:{}", fix.display()), &[]).unwrap();
    assert_eq!(ds.examples, expected.examples);
    assert_eq!(ds.hash, expected.hash);
    assert!(ds.examples.iter().all(|e| e.subset == "prism"));
    assert!(!ds.examples.is_empty());

    let conv = read(fixture("prism/conversations.jsonl"));
    let survey = read(fixture("prism/survey.jsonl"));
    m.hub_repo(
        "HannahRoseKirk/prism-alignment",
        "main",
        &[("conversations.jsonl", conv.clone(), conv), ("survey.jsonl", survey.clone(), survey)],
    );
    let got = fetch("prism", &m.opts(&cache)).unwrap();
    let ds = load(&got.spec, &names(&[])).unwrap();
    let expected = load(&format!("prism:{}", fixture("prism").display()), &[]).unwrap();
    assert_eq!(ds.examples, expected.examples);
    assert_eq!(ds.hash, expected.hash);
}

#[test]
fn lampqa_fetches_the_parquet_conversion_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Mirror::start();
    let q = |id: &str| common::question_row(id);
    let mut files = Vec::new();
    for (config, ids) in [
        ("Art_and_Entertainment", ["a1", "a2"]),
        ("Lifestyle_and_Personal_Development", ["l1", "l2"]),
        ("Society_and_Culture", ["s1", "s2"]),
    ] {
        for split in ["test", "validation"] {
            let p = tmp.path().join(format!("{config}-{split}.parquet"));
            let rows: Vec<_> = ids.iter().map(|i| q(&format!("{split}-{i}"))).collect();
            write_parquet(
                &p,
                &rows,
                &["id", "question", "narrative", "category"],
                &[
                    ("profile", &["category", "id", "text"]),
                    ("rubric_aspects", &["aspect", "evidence", "reason"]),
                ],
            );
            files.push((format!("{config}/{split}/0000.parquet"), read(p)));
        }
    }
    let served: Vec<(&str, Vec<u8>, Vec<u8>)> =
        files.iter().map(|(p, b)| (p.as_str(), b.clone(), b.clone())).collect();
    // hf-hub sends the revision as one percent-encoded path segment.
    m.hub_repo("alireza7/LaMP-QA", "refs%2Fconvert%2Fparquet", &served);
    let cache = tmp.path().join("hub");
    let got = fetch("lamp-qa", &m.opts(&cache)).unwrap();
    assert!(got.spec.starts_with("lampqa:"), "{}", got.spec);
    assert!(got.note.is_some());
    let repo_dir = cache.join("datasets--alireza7--LaMP-QA");
    assert_eq!(
        std::fs::read_to_string(repo_dir.join("refs/refs/convert/parquet")).unwrap(),
        COMMIT
    );
    let local = tmp.path().join("local");
    for (p, b) in &files {
        std::fs::create_dir_all(local.join(p).parent().unwrap()).unwrap();
        std::fs::write(local.join(p), b).unwrap();
    }
    for split in ["", "#validation"] {
        let ds = prbench_data::load_questions(&format!("{}{split}", got.spec), &[]).unwrap();
        let expected =
            prbench_data::load_questions(&format!("lampqa:{}{split}", local.display()), &[])
                .unwrap();
        assert_eq!(ds.examples, expected.examples);
        assert_eq!(ds.hash, expected.hash);
        assert_eq!(ds.examples.len(), 6);
    }
}

#[test]
fn a_repo_without_the_layout_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Mirror::start();
    let conv = read(fixture("prism/conversations.jsonl"));
    m.hub_repo(
        "HannahRoseKirk/prism-alignment",
        "main",
        &[("conversations.jsonl", conv.clone(), conv)],
    );
    let err = fetch("prism", &m.opts(&tmp.path().join("hub"))).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DataError::Hub { .. }), "{msg}");
    assert!(msg.contains("survey.jsonl") && msg.contains(COMMIT), "{msg}");
    assert_eq!(m.downloads(), 0);
}

#[test]
fn a_tree_listing_in_pages_is_followed_to_its_end() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Mirror::start();
    let conv = read(fixture("prism/conversations.jsonl"));
    let survey = read(fixture("prism/survey.jsonl"));
    let repo = "HannahRoseKirk/prism-alignment";
    m.hub_repo(
        repo,
        "main",
        &[
            ("conversations.jsonl", conv.clone(), conv),
            ("survey.jsonl", survey.clone(), survey.clone()),
        ],
    );
    // The hub pages a long listing with `Link: <next>; rel="next"`: split this one after the
    // first entry (survey.jsonl comes last, on the second page).
    let tree_path = format!("/api/datasets/{repo}/tree/{COMMIT}");
    let tree: Vec<serde_json::Value> = {
        let st = m.state.lock().unwrap();
        serde_json::from_slice(&st.routes[&tree_path].body).unwrap()
    };
    let (first, rest) = tree.split_at(1);
    m.route(
        &tree_path,
        serde_json::Value::Array(first.to_vec()).to_string().into_bytes(),
        vec![
            ("content-type", "application/json".into()),
            ("link", format!("<{}/tree-page-2?cursor=abc>; rel=\"next\"", m.base)),
        ],
    );
    m.json("/tree-page-2", serde_json::Value::Array(rest.to_vec()));
    let got = fetch("prism", &m.opts(&tmp.path().join("hub"))).unwrap();
    let names: Vec<String> =
        got.files.iter().map(|f| f.path.file_name().unwrap().to_string_lossy().into()).collect();
    assert_eq!(names, ["conversations.jsonl", "survey.jsonl"]);
    assert_eq!(got.files[1].sha256.as_deref(), Some(sha256(&survey).as_str()));
    assert!(m.requests().contains(&"GET /tree-page-2".to_string()), "{:?}", m.requests());
}
