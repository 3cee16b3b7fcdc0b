//! `prbench retrieve` through the real binary on the bundled sample, and dense ranking with the
//! real MiniLM checked against cosine similarities computed here from the vectors it returns.

mod common;

use std::sync::Arc;

use common::*;
use prbench_data::load::load;
use prbench_eval::retrieve::dense::DenseRetriever;
use prbench_eval::retrieve::Retriever;
use prbench_models::{Embedder, Similarity};
use prbench_rm::embed::{default_embedder_dir, MiniLmEmbedder};

fn minilm() -> Option<std::path::PathBuf> {
    let dir = default_embedder_dir();
    if dir.join("model.safetensors").is_file() && dir.join("modules.json").is_file() {
        Some(dir)
    } else {
        prbench_testkit::unavailable(format!(
            "MiniLM not found at {} (run scripts/setup.sh --tests)",
            dir.display()
        ));
        None
    }
}

#[test]
fn bm25_retrieve_writes_a_ranked_dataset_that_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let out_path = tmp.path().join("out/ranked.jsonl");
    let out = prbench(
        &[
            "retrieve",
            "--data",
            &sample(),
            "--retriever",
            "bm25",
            "--out",
            out_path.to_str().unwrap(),
            "--quiet",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let orig = load(&sample(), &[]).unwrap();
    let posts: usize = orig.examples.iter().map(|e| e.profile.len()).sum();
    assert!(stdout.contains("examples: 12\n"), "{stdout}");
    assert!(stdout.contains(&format!("posts: {posts}\n")), "{stdout}");
    assert!(stdout.contains("embedding cache: not used"), "{stdout}");
    assert!(stdout.contains(&format!("wrote {}", out_path.display())), "{stdout}");
    assert!(!tmp.path().join("runs").exists(), "bm25 must not open a cache");

    let ranked = load(out_path.to_str().unwrap(), &[]).unwrap();
    assert!(
        ranked.profile_ranking.as_deref().unwrap().starts_with("bm25 (k1=1.2, b=0.75"),
        "{:?}",
        ranked.profile_ranking
    );
    assert_eq!(ranked.kind, "prb");
    assert_eq!(ranked.examples.len(), 12);
    for (a, b) in orig.examples.iter().zip(&ranked.examples) {
        assert_eq!(
            (&a.id, &a.subset, &a.question, &a.chosen),
            (&b.id, &b.subset, &b.question, &b.chosen)
        );
        let mut x: Vec<_> = a.profile.clone();
        let mut y: Vec<_> = b.profile.clone();
        x.sort_by(|p, q| p.id.cmp(&q.id));
        y.sort_by(|p, q| p.id.cmp(&q.id));
        assert_eq!(x, y, "same posts, each id with its own text");
    }

    // A ranked file is valid --data: ranking it again gives the same file content order.
    let again = tmp.path().join("again.jsonl");
    let out = prbench(
        &[
            "retrieve",
            "--data",
            out_path.to_str().unwrap(),
            "--out",
            again.to_str().unwrap(),
            "--quiet",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let twice = load(again.to_str().unwrap(), &[]).unwrap();
    for (a, b) in ranked.examples.iter().zip(&twice.examples) {
        // Ties are broken by post id, not by file order, so a second ranking changes nothing.
        assert_eq!(a.profile, b.profile);
    }
}

#[test]
fn bad_arguments_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = prbench(
        &["retrieve", "--data", &sample(), "--retriever", "tfidf", "--out", "x.jsonl"],
        tmp.path(),
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("unknown retriever `tfidf`"), "{}", text(&out.stderr));
    let out = prbench(&["retrieve", "--data", &sample(), "--out", "x.json"], tmp.path());
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("must be a .jsonl file"), "{}", text(&out.stderr));
    let out = prbench(
        &[
            "retrieve",
            "--data",
            &sample(),
            "--retriever",
            "dense:/no/such/model",
            "--out",
            "x.jsonl",
            "--no-cache",
        ],
        tmp.path(),
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("/no/such/model"), "{}", text(&out.stderr));
    std::fs::write(tmp.path().join("taken.jsonl"), "keep me").unwrap();
    let out = prbench(&["retrieve", "--data", &sample(), "--out", "taken.jsonl"], tmp.path());
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("already exists"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(tmp.path().join("taken.jsonl")).unwrap(), "keep me");
}

#[test]
fn dense_minilm_ranking_matches_independent_cosine() {
    let Some(dir) = minilm() else { return };
    let data = load(&sample(), &[]).unwrap();
    let examples = &data.examples[..4];
    let emb = Arc::new(MiniLmEmbedder::load(&dir).unwrap());
    assert_eq!(emb.similarity(), Similarity::Cosine);
    let retriever = DenseRetriever::new(emb.clone());
    let rankings = retriever.rank_all(examples).unwrap();
    for (ex, r) in examples.iter().zip(&rankings) {
        let mut texts = vec![ex.question.as_str()];
        texts.extend(ex.profile.iter().map(|p| p.text.as_str()));
        let v = Embedder::embed(emb.as_ref(), &texts).unwrap();
        let cos = |a: &[f32], b: &[f32]| {
            let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            let n = |x: &[f32]| x.iter().map(|y| f64::from(*y).powi(2)).sum::<f64>().sqrt();
            dot / (n(a) * n(b))
        };
        let sims: Vec<f64> = v[1..].iter().map(|e| cos(&v[0].vector, &e.vector)).collect();
        let mut order: Vec<usize> = (0..sims.len()).collect();
        order.sort_by(|&a, &b| sims[b].total_cmp(&sims[a]));
        let want: Vec<&str> = order.iter().map(|&i| ex.profile[i].id.as_str()).collect();
        assert_eq!(r.post_ids, want, "example {}", ex.id);
        for (s, &i) in r.scores.iter().zip(&order) {
            assert!((s - sims[i]).abs() < 1e-5, "{s} vs {}", sims[i]);
        }
    }
    assert!(
        retriever
            .describe()
            .starts_with(&format!("dense all-MiniLM-L6-v2 sha256:{} cosine", emb.weights_sha256())),
        "{}",
        retriever.describe()
    );
}

#[test]
fn dense_retrieve_cli_uses_the_embedding_cache() {
    let Some(dir) = minilm() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let spec = format!("dense:{}", dir.display());
    let cache = tmp.path().join("c.sqlite");
    let run = |out: &str| {
        prbench(
            &[
                "retrieve",
                "--data",
                &sample(),
                "--subset",
                "art",
                "--retriever",
                &spec,
                "--out",
                out,
                "--cache",
                cache.to_str().unwrap(),
                "--quiet",
            ],
            tmp.path(),
        )
    };
    let data = load(&sample(), &["art".to_string()]).unwrap();
    let texts: usize = data.examples.iter().map(|e| e.profile.len() + 1).sum();
    let first = run("a.jsonl");
    assert!(first.status.success(), "stderr: {}", text(&first.stderr));
    let s = text(&first.stdout);
    assert!(s.contains(&format!("embedding cache: 0 hits, {texts} misses")), "{s}");
    assert!(s.contains(&format!("texts truncated by the embedder: 0 of {texts}")), "{s}");
    let second = run("b.jsonl");
    assert!(second.status.success(), "stderr: {}", text(&second.stderr));
    let s = text(&second.stdout);
    assert!(s.contains(&format!("embedding cache: {texts} hits, 0 misses")), "{s}");
    let a = std::fs::read_to_string(tmp.path().join("a.jsonl")).unwrap();
    let b = std::fs::read_to_string(tmp.path().join("b.jsonl")).unwrap();
    assert_eq!(a, b, "cached embeddings give the same ranked file");
    let ranked = load(tmp.path().join("a.jsonl").to_str().unwrap(), &[]).unwrap();
    assert!(ranked.profile_ranking.unwrap().contains("cosine"));
}
