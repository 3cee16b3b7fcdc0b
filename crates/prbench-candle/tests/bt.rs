//! The Bradley-Terry head: training on a synthetic separable problem (accuracy computed here, on
//! pairs the training never saw), determinism, the held-out split, save/load round trips and the
//! embedder identity check.

use prbench_candle::bt::config::{BtConfig, DataRecord, EmbedRecord, EmbedderRecord, TrainingRecord};
use prbench_candle::bt::{
    compose, composition_sha256, held_out_mask, save, train_head, BtHead, BtRewardModel, TrainOptions, COMPOSITION,
};
use prbench_candle::embed::{default_embedder_dir, MiniLmEmbedder};
use prbench_models::{ChatPrompt, RewardModel, RmInput, RmRequest};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const DIM: usize = 32;

/// Pairs where chosen = rejected + 0.5·u for a fixed unit direction u, plus noise: separable by
/// the direction u, invisible in any single embedding's norm.
fn synthetic(n: usize, seed: u64) -> (Vec<Vec<f32>>, Vec<Vec<f32>>, Vec<String>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut dir_rng = ChaCha8Rng::seed_from_u64(7); // the same direction for every set
    let u: Vec<f32> = (0..DIM).map(|_| dir_rng.random_range(-1.0f32..1.0)).collect();
    let norm = u.iter().map(|x| x * x).sum::<f32>().sqrt();
    let u: Vec<f32> = u.iter().map(|x| x / norm).collect();
    let (mut c, mut r, mut ids) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let base: Vec<f32> = (0..DIM).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let noise: Vec<f32> = (0..DIM).map(|_| rng.random_range(-0.05f32..0.05)).collect();
        c.push(base.iter().zip(&u).zip(&noise).map(|((b, d), e)| b + 0.5 * d + e).collect());
        r.push(base);
        ids.push(format!("s{seed}-{i}"));
    }
    (c, r, ids)
}

fn accuracy(head: &BtHead, c: &[Vec<f32>], r: &[Vec<f32>]) -> f64 {
    let sc = head.score_rows(c).unwrap();
    let sr = head.score_rows(r).unwrap();
    sc.iter().zip(&sr).filter(|(a, b)| a > b).count() as f64 / c.len() as f64
}

fn opts(hidden: usize) -> TrainOptions {
    TrainOptions { seed: 3, hidden, epochs: 200, patience: 20, lr: 1e-2, batch_size: 32, ..TrainOptions::default() }
}

#[test]
fn learns_a_separable_problem() {
    let (c, r, ids) = synthetic(300, 1);
    let (tc, tr, _) = synthetic(500, 2); // never seen in training
    for hidden in [0, 16] {
        let t = train_head(&c, &r, &ids, &opts(hidden), &mut |_, _| {}).unwrap();
        assert_eq!(t.n_train + t.n_held_out, 300);
        assert_eq!(t.n_held_out, 60);
        let first = t.history[0];
        assert!((first.train_loss - std::f64::consts::LN_2).abs() < 1e-6, "zero-initialised output layer: loss ln 2");
        let best = t.best();
        assert!(best.train_loss < 0.5 * first.train_loss, "loss fell from {} to {}", first.train_loss, best.train_loss);
        assert!(best.held_out_loss.unwrap() < 0.5 * first.held_out_loss.unwrap());
        let acc = accuracy(&t.head, &tc, &tr);
        eprintln!(
            "hidden {hidden}: {} epochs, best {} (train loss {:.4}, held-out {:.4} / {:.3}), unseen accuracy {acc:.3}",
            t.epochs_run,
            t.best_epoch,
            best.train_loss,
            best.held_out_loss.unwrap(),
            best.held_out_accuracy.unwrap()
        );
        assert!(acc >= 0.95, "hidden {hidden}: accuracy on unseen pairs {acc}");
        // The saved head is the best epoch's, not the last one's.
        assert!(t.best_epoch <= t.epochs_run);
    }
}

#[test]
fn same_seed_same_bytes_and_round_trip() {
    let (c, r, ids) = synthetic(120, 5);
    let dir = tempfile::tempdir().unwrap();
    let train = |seed: u64| train_head(&c, &r, &ids, &TrainOptions { seed, ..opts(8) }, &mut |_, _| {}).unwrap();
    let (a, b, other) = (train(3), train(3), train(4));
    let (pa, pb, po) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("o"));
    a.head.save(&pa).unwrap();
    b.head.save(&pb).unwrap();
    other.head.save(&po).unwrap();
    let bytes = std::fs::read(&pa).unwrap();
    assert_eq!(bytes, std::fs::read(&pb).unwrap(), "same seed, same head bytes");
    assert_ne!(bytes, std::fs::read(&po).unwrap(), "another seed, another head");
    assert_eq!(a.history, b.history);
    // Load gives identical scores.
    let loaded = BtHead::load(&pa, DIM, 8).unwrap();
    assert_eq!(loaded.score_rows(&c).unwrap(), a.head.score_rows(&c).unwrap());
    // Wrong shapes are refused.
    assert!(BtHead::load(&pa, DIM, 4).unwrap_err().to_string().contains("shape"));
    assert!(BtHead::load(&pa, DIM, 0).is_err());
}

#[test]
fn held_out_split_ignores_order_and_follows_the_seed() {
    let ids: Vec<String> = (0..50).map(|i| format!("p{i}")).collect();
    let m = held_out_mask(&ids, 42, 0.2);
    assert_eq!(m.iter().filter(|&&x| x).count(), 10);
    let mut rev = ids.clone();
    rev.reverse();
    let mr = held_out_mask(&rev, 42, 0.2);
    let held = |ids: &[String], m: &[bool]| {
        let mut v: Vec<String> = ids.iter().zip(m).filter(|(_, &x)| x).map(|(i, _)| i.clone()).collect();
        v.sort();
        v
    };
    assert_eq!(held(&ids, &m), held(&rev, &mr));
    assert_ne!(held(&ids, &m), held(&ids, &held_out_mask(&ids, 43, 0.2)));
    assert!(held_out_mask(&ids, 42, 0.0).iter().all(|&x| !x));
    // At least one held out when asked for any, never all.
    assert_eq!(held_out_mask(&ids[..3], 1, 0.01).iter().filter(|&&x| x).count(), 1);
    assert_eq!(held_out_mask(&ids[..1], 1, 0.5).iter().filter(|&&x| x).count(), 0);
}

fn config(sha: &str, dim: usize, hidden: usize) -> BtConfig {
    BtConfig {
        format: "prbench-bt/1".into(),
        embedder: EmbedderRecord {
            name: "all-MiniLM-L6-v2".into(),
            model_safetensors_sha256: sha.into(),
            dim,
            pooling: "mean".into(),
            normalize: true,
        },
        max_length: 512,
        hidden,
        composition: COMPOSITION.into(),
        composition_sha256: composition_sha256(),
        condition: "none".into(),
        seed: 3,
        training: TrainingRecord {
            lr: 1e-3,
            weight_decay: 0.01,
            batch_size: 0,
            max_epochs: 1,
            patience: 0,
            held_out_fraction: 0.0,
            n_train: 1,
            n_held_out: 0,
            epochs_run: 1,
            best_epoch: 1,
            best_held_out_loss: None,
            best_held_out_accuracy: None,
            train_loss_at_best: 0.0,
            seconds: 0.0,
            history: vec![],
        },
        embedding: EmbedRecord::default(),
        data: DataRecord::default(),
        head_sha256: String::new(),
        code_version: "test".into(),
    }
}

#[test]
fn refuses_another_embedder() {
    let tmp = tempfile::tempdir().unwrap();
    let (head, _) = BtHead::init(384, 0, 1).unwrap();
    let model = tmp.path().join("bt");
    save(&model, &head, &config(&"0".repeat(64), 384, 0)).unwrap();
    let fake = tmp.path().join("emb");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(fake.join("model.safetensors"), b"not the weights").unwrap();
    let err = BtRewardModel::load(&model, &fake).unwrap_err().to_string();
    assert!(err.contains("embedder.model_safetensors_sha256") && err.contains(&"0".repeat(64)), "{err}");
    // A config that does not match the head is not written.
    assert!(save(&tmp.path().join("x"), &head, &config("a", 384, 8)).is_err());
}

/// safetensors writes through a 0600 temporary file; the saved head must be 0644 like bt.json
/// is under the usual umask 022 (issue 16: `train bt` left head.safetensors unreadable to others).
#[cfg(unix)]
#[test]
fn saved_head_is_readable_by_everyone() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (head, _) = BtHead::init(384, 0, 1).unwrap();
    let model = tmp.path().join("bt");
    save(&model, &head, &config(&"0".repeat(64), 384, 0)).unwrap();
    let mode = std::fs::metadata(model.join("head.safetensors")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "head.safetensors has mode {mode:o}");
}

fn request(id: &str, context: Option<&str>, q: &str, a: &str) -> RmRequest {
    RmRequest {
        input: RmInput {
            example_id: id.into(),
            question: q.into(),
            context: context.map(Into::into),
            answer: a.into(),
        },
        prompt: ChatPrompt::default(),
    }
}

#[test]
fn reward_model_scores_like_embedder_plus_head() {
    let dir = default_embedder_dir();
    if !dir.join("model.safetensors").is_file() {
        eprintln!("skipping: MiniLM not found at {} (run scripts/fetch-models.sh)", dir.display());
        return;
    }
    let emb = MiniLmEmbedder::load(&dir).unwrap();
    let (head, _) = BtHead::init(384, 16, 9).unwrap();
    // A head with a non-zero output layer: perturb by training one epoch on two toy pairs.
    let inputs = [
        compose(Some("likes jokes"), "Name a fruit.", "A banana, obviously the funniest fruit!"),
        compose(Some("likes jokes"), "Name a fruit.", "Malus domestica."),
        compose(None, "Name a colour.", "Blue."),
        compose(None, "Name a colour.", "The colour of a clear midday sky over the sea."),
    ];
    let (v, _) = emb.embed(&inputs).unwrap();
    let ids = vec!["a".to_string(), "b".to_string()];
    let t = train_head(
        &[v[0].clone(), v[2].clone()],
        &[v[1].clone(), v[3].clone()],
        &ids,
        &TrainOptions { hidden: 16, epochs: 5, held_out: 0.0, seed: 9, ..TrainOptions::default() },
        &mut |_, _| {},
    )
    .unwrap();
    drop(head);
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(emb.weights_sha256(), 384, 16);
    cfg.max_length = emb.max_length();
    save(tmp.path(), &t.head, &cfg).unwrap();
    let model = BtRewardModel::load(tmp.path(), &dir).unwrap();
    let reqs = [
        request("x", Some("likes jokes"), "Name a fruit.", "A banana, obviously the funniest fruit!"),
        request("x", Some("likes jokes"), "Name a fruit.", "Malus domestica."),
        request("y", None, "Name a colour.", "Blue."),
        request("y", Some(""), "Name a colour.", "The colour of a clear midday sky over the sea."),
    ];
    let scores = model.score(&reqs).unwrap();
    let want = t.head.score_rows(&v).unwrap();
    for (s, w) in scores.iter().zip(&want) {
        assert!((s.value - w).abs() < 1e-6, "{} vs {w}", s.value);
        assert!(s.tokens.input_tokens > 0);
    }
    assert!(scores.iter().any(|s| s.value != 0.0));
    let id = model.identity();
    assert_eq!(id.engine, "candle bt-head on all-MiniLM-L6-v2");
    assert_eq!(id.chat_template_hash, composition_sha256());
    assert_eq!(id.dtype, "f32");
    assert_eq!(id.file_hash, prbench_models::file_hash::sha256_file(&tmp.path().join("head.safetensors")).unwrap());
    assert_eq!(id.spec, format!("bt:{}", tmp.path().display()));
}
