//! `prbench data fetch` through the real binary, against a loopback HTTP server started here
//! (std only: one thread, one request per connection) that serves raw GitHub paths and the hub's
//! API and resolve URLs. The library's own tests (`prbench-data/tests/fetch.rs`) cover the
//! checks; these cover the verb: flags, the environment it reads (`PRBENCH_GITHUB_RAW`,
//! `HF_ENDPOINT`, `HF_HUB_CACHE`, `HF_HUB_OFFLINE`), what it prints, and that the printed spec
//! is what `--data` reads.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use common::{repo, text};
use sha2::{Digest, Sha256};

const ALIGNX_COMMIT: &str = "4b86568e89817825f27e2b72f31134b1dec08b21";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

type Routes = Arc<Mutex<HashMap<String, (Vec<u8>, Vec<(String, String)>)>>>;

/// The server: answers each path in `routes` (404 otherwise) and logs `METHOD path`.
struct Server {
    base: String,
    routes: Routes,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let routes: Routes = Arc::default();
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let (r, l) = (routes.clone(), log.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).map_or(true, |n| n == 0) || h.trim().is_empty() {
                        break;
                    }
                }
                let mut parts = first.split_whitespace();
                let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                let path = target.split('?').next().unwrap_or("").to_string();
                l.lock().unwrap().push(format!("{method} {path}"));
                let found = r.lock().unwrap().get(&path).cloned();
                let (status, body, headers) = match found {
                    Some((b, h)) => ("200 OK", b, h),
                    None => ("404 Not Found", b"not found".to_vec(), vec![]),
                };
                let mut head = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                if method != "HEAD" {
                    let _ = stream.write_all(&body);
                }
            }
        });
        Server { base, routes, log }
    }

    fn route(&self, path: &str, body: Vec<u8>, headers: Vec<(String, String)>) {
        self.routes.lock().unwrap().insert(path.to_string(), (body, headers));
    }

    /// Dataset `repo` at `main` = [`COMMIT`], its files listed as LFS files.
    fn hub_repo(&self, repo: &str, files: &[(&str, Vec<u8>)]) {
        let json = vec![("content-type".to_string(), "application/json".to_string())];
        self.route(
            &format!("/api/datasets/{repo}/revision/main"),
            serde_json::json!({"id": repo, "sha": COMMIT}).to_string().into_bytes(),
            json.clone(),
        );
        let mut tree = Vec::new();
        for (path, bytes) in files {
            let sha = hex::encode(Sha256::digest(bytes));
            tree.push(serde_json::json!({"type": "file", "oid": "3333333333333333333333333333333333333333", "size": 134, "path": path, "lfs": {"oid": sha, "size": bytes.len(), "pointerSize": 134}}));
            self.route(
                &format!("/datasets/{repo}/resolve/{COMMIT}/{path}"),
                bytes.clone(),
                vec![
                    ("x-repo-commit".into(), COMMIT.into()),
                    ("etag".into(), format!("\"{sha}\"")),
                ],
            );
        }
        self.route(
            &format!("/api/datasets/{repo}/tree/{COMMIT}"),
            serde_json::Value::Array(tree).to_string().into_bytes(),
            json,
        );
    }

    fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

/// Runs the binary in `cwd` with the hub and GitHub pointed at `server` and the hub cache at
/// `cache`, offline when asked.
fn run(args: &[&str], cwd: &Path, server: &Server, cache: &Path, offline: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_prbench"));
    cmd.args(args)
        .current_dir(cwd)
        .env("HF_ENDPOINT", &server.base)
        .env("PRBENCH_GITHUB_RAW", format!("{}/gh", server.base))
        .env("HF_HUB_CACHE", cache)
        .env_remove("HF_TOKEN");
    if offline {
        cmd.env("HF_HUB_OFFLINE", "1");
    } else {
        cmd.env_remove("HF_HUB_OFFLINE");
    }
    cmd.output().expect("binary runs")
}

#[test]
fn psoups_fetch_prints_the_spec_that_validates() {
    let Some(real) = prbench_testkit::psoups() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start();
    for name in ["friendly_unfriendly.json", "student_phd.json"] {
        server.route(
            &format!("/gh/JinaLeejnl/AlignX/{ALIGNX_COMMIT}/benchmark/P-Soups/{name}"),
            std::fs::read(real.join(name)).unwrap(),
            vec![],
        );
    }
    let cache = tmp.path().join("hub");
    // The default folder, relative to where the command runs.
    let out = run(&["data", "fetch", "psoups"], tmp.path(), &server, &cache, false);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "--data psoups:data/psoups\n", "{stderr}");
    assert!(
        stderr.contains("2 files from commit 4b86568e89817825f27e2b72f31134b1dec08b21"),
        "{stderr}"
    );
    assert!(
        stderr.contains("c7545cfd23cee20318934e4751474ee966812622a6304abb4170f1bf3bbc2661"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 2, "{:?}", server.requests());
    let announced = format!(
        "prbench: downloading benchmark/P-Soups/student_phd.json (1915679 bytes) from {}/gh/JinaLeejnl/AlignX/{ALIGNX_COMMIT}/benchmark/P-Soups/student_phd.json",
        server.base
    );
    assert!(stderr.contains(&announced), "{stderr}");

    let v = run(
        &["data", "validate", "--data", "psoups:data/psoups"],
        tmp.path(),
        &server,
        &cache,
        false,
    );
    let vout = text(&v.stdout);
    assert!(v.status.success(), "{}", text(&v.stderr));
    let original = prbench_data::load(&format!("psoups:{}", real.display()), &[]).unwrap();
    assert!(vout.contains(&format!("ok: {} examples", original.examples.len())), "{vout}");
    assert!(vout.contains(&original.hash), "{vout}");

    // A rerun downloads nothing and says so; --github-raw beats the environment.
    let again = run(
        &["data", "fetch", "psoups", "--github-raw", "http://127.0.0.1:9"],
        tmp.path(),
        &server,
        &cache,
        false,
    );
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("(0 downloaded)"), "{}", text(&again.stderr));
    assert_eq!(server.requests().len(), 2);

    // --github-raw is used: a fresh folder against a dead address fails naming it.
    let dead = run(
        &["data", "fetch", "psoups", "--out", "elsewhere", "--github-raw", "http://127.0.0.1:9"],
        tmp.path(),
        &server,
        &cache,
        false,
    );
    let err = text(&dead.stderr);
    assert_eq!(dead.status.code(), Some(1), "{err}");
    assert!(err.contains("http://127.0.0.1:9/JinaLeejnl/AlignX/"), "{err}");
    assert!(!tmp.path().join("elsewhere/friendly_unfriendly.json").exists());
}

#[test]
fn hub_fetch_then_offline_data_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start();
    let fix = repo().join("crates/prbench-data/tests/fixtures/prism");
    let conv = std::fs::read(fix.join("conversations.jsonl")).unwrap();
    let survey = std::fs::read(fix.join("survey.jsonl")).unwrap();
    server.hub_repo(
        "HannahRoseKirk/prism-alignment",
        &[("conversations.jsonl", conv), ("survey.jsonl", survey)],
    );
    let cache = tmp.path().join("hub");

    // Offline with nothing cached: a clear refusal, no request.
    let off = run(&["data", "fetch", "prism"], tmp.path(), &server, &cache, true);
    let err = text(&off.stderr);
    assert_eq!(off.status.code(), Some(1), "{err}");
    assert!(err.contains("offline mode is on") && err.contains("conversations.jsonl"), "{err}");
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    let out = run(&["data", "fetch", "prism"], tmp.path(), &server, &cache, false);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let snapshot =
        cache.join(format!("datasets--HannahRoseKirk--prism-alignment/snapshots/{COMMIT}"));
    let spec = format!("prism:{}", snapshot.display());
    assert_eq!(stdout, format!("--data {spec}\n"));

    // The spec reads, offline, the same examples as the fixture folder.
    let v = run(&["data", "validate", "--data", &spec], tmp.path(), &server, &cache, true);
    assert!(v.status.success(), "{}", text(&v.stderr));
    let expected = prbench_data::load(&format!("prism:{}", fix.display()), &[]).unwrap();
    let vout = text(&v.stdout);
    assert!(vout.contains(&expected.hash), "{vout}");
    assert!(vout.contains(&format!("prism: {}", expected.examples.len())), "{vout}");

    // Offline with the files cached: succeeds without a request.
    let n = server.requests().len();
    let cached = run(&["data", "fetch", "prism"], tmp.path(), &server, &cache, true);
    assert!(cached.status.success(), "{}", text(&cached.stderr));
    assert_eq!(text(&cached.stdout), format!("--data {spec}\n"));
    assert_eq!(server.requests().len(), n);
}
