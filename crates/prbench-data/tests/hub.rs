//! `hf:` loading through a Hugging Face cache built by hand in a tempdir, laid out exactly as
//! huggingface_hub does it:
//!
//! ```text
//! <cache>/datasets--ORG--NAME/refs/main                      (commit hash, no newline)
//! <cache>/datasets--ORG--NAME/blobs/<sha256 of the file>      (the bytes)
//! <cache>/datasets--ORG--NAME/snapshots/<commit>/<config>/test-00000-of-00001.parquet
//!                                                             -> ../../../blobs/<sha256> (relative symlink)
//! ```
//! Offline mode is passed as a parameter (no env vars: tests run in parallel).

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{fixture, names};
use prbench_data::error::DataError;
use prbench_data::hub::{config_file, load_hub, parse_repo, HubOptions};
use prbench_data::load;
use sha2::{Digest, Sha256};

const REPO: &str = "test-org/PRB-mini";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const CONFIGS: [&str; 2] = ["Art_and_Entertainment", "Society_and_Culture"];

fn build_cache(root: &Path) {
    let repo_dir = root.join(format!("datasets--{}", REPO.replace('/', "--")));
    std::fs::create_dir_all(repo_dir.join("refs")).unwrap();
    std::fs::write(repo_dir.join("refs/main"), COMMIT).unwrap();
    std::fs::create_dir_all(repo_dir.join("blobs")).unwrap();
    for config in CONFIGS {
        let rel = format!("{config}/test-00000-of-00001.parquet");
        let bytes = std::fs::read(fixture("prb_hf").join(&rel)).unwrap();
        let etag = hex::encode(Sha256::digest(&bytes));
        std::fs::write(repo_dir.join("blobs").join(&etag), &bytes).unwrap();
        let pointer = repo_dir.join("snapshots").join(COMMIT).join(&rel);
        std::fs::create_dir_all(pointer.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(format!("../../../blobs/{etag}"), &pointer).unwrap();
    }
}

fn offline(root: &Path) -> HubOptions {
    HubOptions { cache_dir: Some(root.to_path_buf()), offline: true }
}

#[test]
fn offline_load_from_cache_matches_local_copy() {
    let tmp = tempfile::tempdir().unwrap();
    build_cache(tmp.path());
    let start = Instant::now();
    let ds = load_hub(
        REPO,
        None,
        &names(&["art", "Society"]),
        &offline(tmp.path()),
        "hf:test-org/PRB-mini",
    )
    .unwrap();
    assert!(start.elapsed() < Duration::from_secs(5), "offline load must not touch the network");
    assert_eq!(ds.source, "hf:test-org/PRB-mini");
    assert_eq!(ds.kind, "prb");
    let ids: Vec<&str> = ds.examples.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["art-001", "art-002", "soc-001", "soc-002", "soc-003"]);
    assert_eq!(ds.examples[2].subset, "Society_and_Culture");
    assert_eq!(ds.examples[0].profile[1].text, "Joe Hisaishi scores make me cry.");
    // Same files under the same names: same hash as the local HF-layout copy.
    let local = load(fixture("prb_hf").to_str().unwrap(), &[]).unwrap();
    assert_eq!(ds.hash, local.hash);
    assert_eq!(ds.examples, local.examples);
}

#[test]
fn offline_by_commit_hash_and_by_branch() {
    let tmp = tempfile::tempdir().unwrap();
    build_cache(tmp.path());
    let ds = load_hub(REPO, Some(COMMIT), &names(&["ART"]), &offline(tmp.path()), "x").unwrap();
    assert_eq!(ds.examples.len(), 2);
    let ds = load_hub(REPO, Some("main"), &names(&["society"]), &offline(tmp.path()), "x").unwrap();
    assert_eq!(ds.examples.len(), 3);
}

#[test]
fn offline_missing_file_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    build_cache(tmp.path());
    // Default subsets = the three PRB configs; Lifestyle is not cached.
    let start = Instant::now();
    let err = load_hub(REPO, None, &[], &offline(tmp.path()), "x").unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    let msg = err.to_string();
    assert!(matches!(err, DataError::HubNotCached { .. }), "{msg}");
    assert!(msg.contains(REPO), "{msg}");
    assert!(msg.contains("@main"), "{msg}");
    assert!(msg.contains(&config_file("Lifestyle_and_Personal_Development")), "{msg}");
    assert!(msg.contains(tmp.path().to_str().unwrap()), "{msg}");
    assert!(
        msg.contains("HF_HUB_OFFLINE") && msg.contains("network") && msg.contains("pre-populate"),
        "{msg}"
    );

    // A revision that is not cached, and a repo that is not cached at all.
    let err = load_hub(REPO, Some("v2"), &names(&["art"]), &offline(tmp.path()), "x").unwrap_err();
    assert!(matches!(&err, DataError::HubNotCached { revision, .. } if revision == "v2"), "{err}");
    let err =
        load_hub("other/repo", None, &names(&["art"]), &offline(tmp.path()), "x").unwrap_err();
    assert!(matches!(&err, DataError::HubNotCached { repo, .. } if repo == "other/repo"), "{err}");
}

#[test]
fn repo_spec_parsing() {
    assert_eq!(parse_repo("a/b", "hf:a/b").unwrap(), ("a/b".to_string(), None));
    assert_eq!(
        parse_repo("a/b@v1.0", "hf:a/b@v1.0").unwrap(),
        ("a/b".to_string(), Some("v1.0".to_string()))
    );
    assert_eq!(parse_repo("squad", "hf:squad").unwrap(), ("squad".to_string(), None));
    for bad in ["", "a/b/c", "a/", "/b", "a/b@", "a b/c"] {
        let err = parse_repo(bad, &format!("hf:{bad}")).unwrap_err();
        assert!(matches!(err, DataError::BadSpec { .. }), "{bad}: {err}");
    }
}
