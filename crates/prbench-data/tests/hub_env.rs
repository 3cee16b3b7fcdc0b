//! `load("hf:…")` reads HF_HUB_OFFLINE and HF_HUB_CACHE from the environment. This file holds a
//! single test, so setting process env vars here cannot race with other tests (each integration
//! test file is its own process).

mod common;

use common::{fixture, names};
use prbench_data::load;
use sha2::{Digest, Sha256};

#[test]
fn load_hf_spec_honours_offline_env() {
    let tmp = tempfile::tempdir().unwrap();
    let commit = "fedcba9876543210fedcba9876543210fedcba98";
    let repo_dir = tmp.path().join("datasets--env-org--env-data");
    std::fs::create_dir_all(repo_dir.join("refs")).unwrap();
    std::fs::write(repo_dir.join("refs/main"), commit).unwrap();
    let rel = "Art_and_Entertainment/test-00000-of-00001.parquet";
    let bytes = std::fs::read(fixture("prb_hf").join(rel)).unwrap();
    let etag = hex::encode(Sha256::digest(&bytes));
    std::fs::create_dir_all(repo_dir.join("blobs")).unwrap();
    std::fs::write(repo_dir.join("blobs").join(&etag), &bytes).unwrap();
    let pointer = repo_dir.join("snapshots").join(commit).join(rel);
    std::fs::create_dir_all(pointer.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(format!("../../../blobs/{etag}"), &pointer).unwrap();

    std::env::set_var("HF_HUB_CACHE", tmp.path());
    std::env::set_var("HF_HUB_OFFLINE", "1");
    let ds = load("hf:env-org/env-data", &names(&["Art"])).unwrap();
    assert_eq!(ds.examples.len(), 2);
    assert_eq!(ds.source, "hf:env-org/env-data");

    std::env::set_var("HF_HUB_OFFLINE", "TRUE");
    let err = load("hf:env-org/env-data@main", &names(&["Society"])).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("Society_and_Culture/test-00000-of-00001.parquet"), "{msg}");
    assert!(msg.contains(tmp.path().to_str().unwrap()), "{msg}");
}
