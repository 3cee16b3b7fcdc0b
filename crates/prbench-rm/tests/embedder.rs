//! MiniLM as a `prbench_models::Embedder` (the dense-retrieval path): agreement with the
//! transformers fixture, right truncation with the count returned, the normalisation/similarity
//! rule read from modules.json, and `hf:` resolution against a local hub-cache layout. Skips
//! (with a printed reason) when the model directory from scripts/fetch-models.sh is absent.

use std::path::{Path, PathBuf};

use prbench_data::hub::HubOptions;
use prbench_models::{Embedder, Similarity};
use prbench_rm::embed::{default_embedder_dir, EmbedInput, EmbedderOptions, MiniLmEmbedder};
use prbench_rm::embedder::{load_embedder, resolve_embedder_dir};
use serde_json::Value;

fn model_dir() -> Option<PathBuf> {
    let dir = default_embedder_dir();
    if dir.join("model.safetensors").is_file() && dir.join("modules.json").is_file() {
        Some(dir)
    } else {
        prbench_testkit::unavailable(format!(
            "MiniLM (with modules.json) not found at {} (run scripts/setup.sh --tests)",
            dir.display()
        ));
        None
    }
}

fn fixture() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilm.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// A directory of symlinks to `src`'s base model files (config, tokenizer, weights) plus `extra`.
fn link_dir(dst: &Path, src: &Path, extra: &[&str]) {
    std::fs::create_dir_all(dst).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"].iter().chain(extra) {
        let to = dst.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(src.join(f), to).unwrap();
    }
}

#[test]
fn trait_path_matches_transformers_and_reads_normalize_from_modules_json() {
    let Some(dir) = model_dir() else { return };
    let fx = fixture();
    let emb = MiniLmEmbedder::load(&dir).unwrap();
    assert_eq!(emb.similarity(), Similarity::Cosine);
    assert!(emb.normalizes());
    // sentence_bert_config.json says max_seq_length 256 (the inherent path keeps 512).
    assert_eq!((emb.text_max_length(), emb.max_length()), (256, 512));
    let texts: Vec<&str> =
        fx["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let out = Embedder::embed(&emb, &texts).unwrap();
    for (i, e) in out.iter().enumerate() {
        assert_eq!(e.truncated_tokens, 0);
        assert!((norm(&e.vector) - 1.0).abs() < 1e-5);
        for (d, want) in fx["first8"][i].as_array().unwrap().iter().enumerate() {
            let want = want.as_f64().unwrap() as f32;
            assert!(
                (e.vector[d] - want).abs() <= 1e-4,
                "text {i} dim {d}: {} vs transformers {want}",
                e.vector[d]
            );
        }
    }
    let id = emb.identity();
    assert_eq!(id.file_hash, fx["model_safetensors_sha256"].as_str().unwrap());
    assert!(id.engine.contains("l2-normalised") && id.engine.contains("max 256"), "{}", id.engine);
    assert!(id.spec.starts_with("dir:"));

    // The same weights without the sentence-transformers files (Contriever's layout): no
    // normalisation, dot product, and the direction unchanged.
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    link_dir(&plain, &dir, &[]);
    let raw = MiniLmEmbedder::load(&plain).unwrap();
    assert_eq!(raw.similarity(), Similarity::Dot);
    assert_eq!(raw.text_max_length(), 512);
    let raw_out = Embedder::embed(&raw, &texts).unwrap();
    for (a, b) in raw_out.iter().zip(&out) {
        let n = norm(&a.vector);
        assert!((n - 1.0).abs() > 0.1, "unnormalised norm {n}");
        for (x, y) in a.vector.iter().zip(&b.vector) {
            assert!((x / n - y).abs() < 1e-5);
        }
    }
    assert_ne!(raw.identity().engine, id.engine, "cache keys must differ");
}

#[test]
fn long_texts_are_cut_at_the_end_and_counted() {
    let Some(dir) = model_dir() else { return };
    let emb = MiniLmEmbedder::load(&dir).unwrap();
    // "hello" is one WordPiece token: 300 of them + [CLS] + [SEP] = 302 tokens (the inherent
    // path's count with its 512 limit), so 302 − 256 = 46 are cut.
    let long = vec!["hello"; 300].join(" ");
    let stats = emb.token_stats(&[EmbedInput::Text(long.clone())]).unwrap();
    assert_eq!(stats[0].input_tokens, 302);
    // Right truncation keeps the first 254 words: the same vector as embedding them alone.
    let kept = vec!["hello"; 254].join(" ");
    let head = ["world"; 254].join(" ") + " " + &["hello"; 46].join(" ");
    let out =
        Embedder::embed(&emb, &[long.as_str(), kept.as_str(), head.as_str(), "short"]).unwrap();
    assert_eq!(out.iter().map(|e| e.truncated_tokens).collect::<Vec<_>>(), [46, 0, 46, 0]);
    for (a, b) in out[0].vector.iter().zip(&out[1].vector) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }
    // A text whose end differs is cut to its start (all "world"), not to its end.
    let world = Embedder::embed(&emb, &[["world"; 254].join(" ").as_str()]).unwrap();
    for (a, b) in out[2].vector.iter().zip(&world[0].vector) {
        assert!((a - b).abs() < 1e-5);
    }
    // An explicit max_length wins over sentence_bert_config.json.
    let short = MiniLmEmbedder::load_with(
        &dir,
        &EmbedderOptions { max_length: Some(32), batch_size: Some(2) },
    )
    .unwrap();
    assert_eq!(short.text_max_length(), 32);
    assert_eq!(Embedder::embed(&short, &[long.as_str()]).unwrap()[0].truncated_tokens, 302 - 32);
    // The inherent API still refuses an over-long single text.
    assert!(short.embed(&[EmbedInput::Text(long)]).is_err());
}

#[test]
fn refuses_pooling_it_does_not_run() {
    let Some(dir) = model_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("cls");
    link_dir(&d, &dir, &["modules.json"]);
    std::fs::create_dir_all(d.join("1_Pooling")).unwrap();
    std::fs::write(
        d.join("1_Pooling/config.json"),
        r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .unwrap();
    let e = MiniLmEmbedder::load(&d).unwrap_err().to_string();
    assert!(e.contains("mean pooling only") && e.contains("1_Pooling"), "{e}");
    let d2 = tmp.path().join("dense-layer");
    link_dir(&d2, &dir, &[]);
    std::fs::write(d2.join("modules.json"), r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},{"idx":1,"name":"1","path":"2_Dense","type":"sentence_transformers.models.Dense"}]"#).unwrap();
    let e = MiniLmEmbedder::load(&d2).unwrap_err().to_string();
    assert!(e.contains("sentence_transformers.models.Dense"), "{e}");
}

/// `<cache>/models--ORG--NAME/{refs/main, snapshots/<commit>/<file>}`, the snapshot files being
/// symlinks to the real model directory (no 90 MB copy).
fn hub_cache(root: &Path, repo: &str, commit: &str, src: &Path, files: &[&str]) {
    let repo_dir = root.join(format!("models--{}", repo.replace('/', "--")));
    std::fs::create_dir_all(repo_dir.join("refs")).unwrap();
    std::fs::write(repo_dir.join("refs/main"), commit).unwrap();
    let snap = repo_dir.join("snapshots").join(commit);
    std::fs::create_dir_all(&snap).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"].iter().chain(files) {
        let to = snap.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(src.join(f), to).unwrap();
    }
}

#[test]
fn hf_spec_resolves_through_the_hub_cache_with_sentence_transformers_files() {
    let Some(dir) = model_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let commit = "0123456789abcdef0123456789abcdef01234567";
    hub_cache(
        tmp.path(),
        "sentence-transformers/all-MiniLM-L6-v2",
        commit,
        &dir,
        &["modules.json", "sentence_bert_config.json", "1_Pooling/config.json"],
    );
    hub_cache(tmp.path(), "test-org/plain-bert", commit, &dir, &[]);
    let opts = HubOptions { cache_dir: Some(tmp.path().to_path_buf()), offline: true };

    let (snap, label) =
        resolve_embedder_dir("hf:sentence-transformers/all-MiniLM-L6-v2", &opts).unwrap();
    assert!(snap.ends_with(format!("snapshots/{commit}")), "{}", snap.display());
    assert_eq!(label, format!("hf:sentence-transformers/all-MiniLM-L6-v2@{commit}"));
    let emb = MiniLmEmbedder::load(&snap).unwrap().with_spec(label.clone());
    assert_eq!((emb.similarity(), emb.text_max_length()), (Similarity::Cosine, 256));
    assert_eq!(emb.identity().spec, label);

    // A repo without modules.json (Contriever's layout) → dot product.
    let (plain, _) = resolve_embedder_dir("hf:test-org/plain-bert", &opts).unwrap();
    assert_eq!(MiniLmEmbedder::load(&plain).unwrap().similarity(), Similarity::Dot);

    // Not cached (the hub is unreachable here): the error names the repo, the file and what a
    // dense embedder repo must hold.
    let e = load_embedder("hf:facebook/contriever-msmarco", &EmbedderOptions::default(), &opts)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("facebook/contriever-msmarco")
            && e.contains("config.json")
            && e.contains("model.safetensors"),
        "{e}"
    );
    let e = resolve_embedder_dir("/no/such/dir", &opts).unwrap_err().to_string();
    assert!(
        e.contains("/no/such/dir: no such directory")
            || e.contains("`/no/such/dir`: no such directory"),
        "{e}"
    );
    let file = snap.join("config.json");
    let e = resolve_embedder_dir(file.to_str().unwrap(), &opts).unwrap_err().to_string();
    assert!(e.contains("not a directory"), "{e}");
}
