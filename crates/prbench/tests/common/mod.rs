//! Helpers shared by the binary's integration tests: run the real `prbench` binary in a folder.
#![allow(dead_code)]

pub mod remote;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the built binary with `args` in `cwd`.
pub fn prbench(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("binary runs")
}

/// Lossy UTF-8 of captured output.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The bundled sample dataset's path.
pub fn sample() -> String {
    repo().join("data/sample").display().to_string()
}

/// A copy of the committed qwen2-f32 sequence-classification fixture in `tmp/rm`, with a
/// 4,096-token position limit; returns its `dir:` spec.
pub fn seqcls_model(tmp: &Path) -> String {
    let src = repo().join("crates/prbench-rm/tests/fixtures/seqcls/qwen2-f32");
    let dst = tmp.join("rm");
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dst.join(p.file_name().unwrap())).unwrap();
    }
    let cfg = dst.join("config.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    v["max_position_embeddings"] = 4096.into();
    std::fs::write(&cfg, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    format!("dir:{}", dst.display())
}

/// Starts `prbench args` in `cwd`, SIGKILLs it once the cache file `cache` holds at least
/// `entries` results (failing if it ends first or stores nothing for 120 s), and returns how
/// many results the cache kept: the set-up of every "a killed run resumes" test.
pub fn kill_once_cached(args: &[&str], cwd: &Path, cache: &Path, entries: usize) -> usize {
    let watch = prbench_eval::cache::Cache::open(cache).unwrap();
    let stored =
        || watch.stats().map_or(0, |rows| rows.iter().map(|r| r.entries).sum::<u64>()) as usize;
    let mut child = Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args(args)
        .current_dir(cwd)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while stored() < entries {
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "the run never got going");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it was killed");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    stored()
}

/// Writes `Art_and_Entertainment.jsonl` in `dir` with `n` examples (the sample's art rows
/// repeated with new ids and questions), so that a run lasts long enough to be killed, or to
/// lose its server, halfway; returns the file's path.
pub fn write_dataset(dir: &Path, n: usize) -> String {
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(repo().join("data/sample/Art_and_Entertainment.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let mut body = String::new();
    for i in 0..n {
        let mut r = rows[i % rows.len()].clone();
        r["id"] = format!("gen-{i:03}").into();
        r["question"] = format!("Question {i}: {}", r["question"].as_str().unwrap()).into();
        body += &(r.to_string() + "\n");
    }
    let path = dir.join("Art_and_Entertainment.jsonl");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}
