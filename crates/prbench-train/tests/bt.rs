//! The Bradley-Terry head: parity with the PyTorch reference (`tools/bt_reference.py`, fixture
//! `tests/fixtures/bt_reference.json`, float64) in f64 and in f32; training on a synthetic
//! separable problem (accuracy computed here, on pairs the training never saw), determinism, the
//! held-out split, save/load round trips and the embedder identity check.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use candle_core::{DType, Device, Tensor};
use prbench_models::{ChatPrompt, RewardModel, RmInput, RmRequest};
use prbench_rm::embed::{default_embedder_dir, MiniLmEmbedder};
use prbench_train::bt::config::{
    BtConfig, DataRecord, EmbedRecord, EmbedderRecord, TrainingRecord,
};
use prbench_train::bt::{
    compose, composition_sha256, held_out_mask, save, train_head, train_head_from, BtHead,
    BtRewardModel, TrainOptions, TrainStart, COMPOSITION,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

// ---------------------------------------------------------------------------------------------
// Parity with the reference.

#[derive(Deserialize)]
struct Fixture {
    torch: String,
    dtype: String,
    dim: usize,
    data: FxData,
    runs: Vec<FxRun>,
}

#[derive(Deserialize)]
struct FxData {
    ids: Vec<String>,
    chosen: Vec<Vec<f64>>,
    rejected: Vec<Vec<f64>>,
    test_inputs: Vec<Vec<f64>>,
}

#[derive(Deserialize)]
struct Named {
    shape: Vec<usize>,
    data: Vec<f64>,
}

#[derive(Deserialize)]
struct FxStats {
    epoch: usize,
    train_loss: f64,
    train_accuracy: f64,
    held_out_loss: Option<f64>,
    held_out_accuracy: Option<f64>,
}

#[derive(Deserialize)]
struct FxRun {
    name: String,
    seed: u64,
    hidden: usize,
    epochs: usize,
    patience: usize,
    lr: f64,
    weight_decay: f64,
    batch_size: usize,
    held_out: f64,
    init: BTreeMap<String, Named>,
    held_out_mask: Vec<bool>,
    schedule: Vec<Vec<Vec<usize>>>,
    history: Vec<FxStats>,
    epochs_run: usize,
    best_epoch: usize,
    best: BTreeMap<String, Named>,
    test_rewards: Vec<f64>,
    train_chosen_rewards: Vec<f64>,
    train_rejected_rewards: Vec<f64>,
}

fn fixture() -> Fixture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bt_reference.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A fixture input (embedding or initial weight) as the float32 value the reference wrote, so
/// that f32 and f64 runs start from exactly the reference's numbers. (serde_json's default
/// parser can miss the written f64 by an ulp; rounding to f32 recovers the value.)
fn f32_value(x: f64) -> f32 {
    let y = x as f32;
    assert!((y as f64 - x).abs() <= 1e-15 * x.abs(), "fixture input {x} is not a float32 value");
    y
}

fn rows_f32(rows: &[Vec<f64>]) -> Vec<Vec<f32>> {
    rows.iter().map(|r| r.iter().map(|&x| f32_value(x)).collect()).collect()
}

/// Absolute tolerance on losses, weights and rewards (all of order 1).
/// f64 runs the reference's arithmetic: only the summation order and the algebra of AdamW's
/// bias corrections (torch: `(m / bc1) / (√v / √bc2 + ε)`, candle: `(m / bc1) / (√(v / bc2) + ε)`)
/// differ (seen: at most 7.8e-15). The two bugs this test found were far above it: the loss's
/// gradient at margin 0 (1.1e-5 after one epoch) and candle's rounded GELU derivative (1.7e-10
/// after six).
const TOL_F64: f64 = 1e-12;
/// f32 (prbench's dtype) against the f64 reference over ≤ 92 steps (seen: at most 1.5e-7 on
/// losses, 6.6e-7 on weights, 1.8e-6 on rewards).
const TOL_F32: f64 = 1e-5;

/// Largest absolute difference; panics naming the first value over `tol`.
fn close(what: &str, got: &[f64], want: &[f64], tol: f64) -> f64 {
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: {} values, the reference has {}",
        got.len(),
        want.len()
    );
    let mut worst = 0.0f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let d = (g - w).abs();
        assert!(d <= tol, "{what}[{i}]: {g} vs the reference's {w} (difference {d:.3e} > {tol:e})");
        worst = worst.max(d);
    }
    worst
}

fn flat(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap()
}

fn scores(head: &BtHead, rows: &[Vec<f64>]) -> Vec<f64> {
    let x = Tensor::from_vec(rows.concat(), (rows.len(), rows[0].len()), &Device::Cpu)
        .unwrap()
        .to_dtype(head.dtype())
        .unwrap();
    flat(&head.forward(&x).unwrap())
}

/// Trains `run` of the fixture with prbench's code in `dtype` from the reference's start and
/// compares every recorded figure; returns the largest differences (losses, weights, rewards).
fn replay(fx: &Fixture, run: &FxRun, dtype: DType, tol: f64) -> [f64; 3] {
    let tag = format!("{} {dtype:?}", run.name);
    let (chosen, rejected) = (rows_f32(&fx.data.chosen), rows_f32(&fx.data.rejected));
    assert_eq!(
        held_out_mask(&fx.data.ids, run.seed, run.held_out),
        run.held_out_mask,
        "{tag}: held-out split"
    );
    let opts = TrainOptions {
        seed: run.seed,
        hidden: run.hidden,
        epochs: run.epochs,
        patience: run.patience,
        lr: run.lr,
        weight_decay: run.weight_decay,
        batch_size: run.batch_size,
        held_out: run.held_out,
    };
    let weights: HashMap<String, Tensor> = run
        .init
        .iter()
        .map(|(n, t)| {
            let v: Vec<f32> = t.data.iter().map(|&x| f32_value(x)).collect();
            let t = Tensor::from_vec(v, t.shape.as_slice(), &Device::Cpu).unwrap();
            (n.clone(), t.to_dtype(dtype).unwrap())
        })
        .collect();
    let start = TrainStart { weights, batches: run.schedule.clone() };
    let t =
        train_head_from(&chosen, &rejected, &fx.data.ids, &opts, &start, &mut |_, _| {}).unwrap();
    assert_eq!(t.head.dtype(), dtype);

    // The curves, epoch by epoch (0 = before training), and where early stopping ended.
    assert_eq!(
        (t.epochs_run, t.best_epoch),
        (run.epochs_run, run.best_epoch),
        "{tag}: epochs run, best epoch"
    );
    assert_eq!(t.history.len(), run.history.len());
    let pick = |f: &dyn Fn(&FxStats) -> f64| run.history.iter().map(f).collect::<Vec<f64>>();
    let got = |f: &dyn Fn(&prbench_train::bt::EpochStats) -> f64| {
        t.history.iter().map(f).collect::<Vec<f64>>()
    };
    assert!(t.history.iter().zip(&run.history).all(|(g, w)| g.epoch == w.epoch));
    let mut worst_loss =
        close(&format!("{tag} train loss"), &got(&|s| s.train_loss), &pick(&|s| s.train_loss), tol);
    worst_loss = worst_loss.max(close(
        &format!("{tag} held-out loss"),
        &got(&|s| s.held_out_loss.unwrap()),
        &pick(&|s| s.held_out_loss.unwrap()),
        tol,
    ));
    assert_eq!(got(&|s| s.train_accuracy), pick(&|s| s.train_accuracy), "{tag}: train accuracy");
    assert_eq!(
        got(&|s| s.held_out_accuracy.unwrap()),
        pick(&|s| s.held_out_accuracy.unwrap()),
        "{tag}: held-out accuracy"
    );

    // The kept (best epoch's) weights.
    let tensors = t.head.tensors();
    assert_eq!(tensors.len(), run.best.len(), "{tag}: tensor names");
    let mut worst_weight = 0.0f64;
    for (name, want) in &run.best {
        assert_eq!(tensors[name].dims(), want.shape.as_slice(), "{tag} {name}");
        worst_weight = worst_weight.max(close(
            &format!("{tag} kept {name}"),
            &flat(&tensors[name]),
            &want.data,
            tol,
        ));
    }

    // Rewards of the kept head on unseen inputs and on the training pairs.
    let test = scores(&t.head, &fx.data.test_inputs);
    let mut worst_reward = close(&format!("{tag} test rewards"), &test, &run.test_rewards, tol);
    let train: Vec<usize> = (0..fx.data.ids.len()).filter(|&i| !run.held_out_mask[i]).collect();
    let rows = |v: &[Vec<f64>]| train.iter().map(|&i| v[i].clone()).collect::<Vec<_>>();
    worst_reward = worst_reward.max(close(
        &format!("{tag} train chosen rewards"),
        &scores(&t.head, &rows(&fx.data.chosen)),
        &run.train_chosen_rewards,
        tol,
    ));
    worst_reward = worst_reward.max(close(
        &format!("{tag} train rejected rewards"),
        &scores(&t.head, &rows(&fx.data.rejected)),
        &run.train_rejected_rewards,
        tol,
    ));
    // `score_rows` (what the reward model calls) agrees with `forward` to f32 rounding.
    let via_rows: Vec<f64> = t
        .head
        .score_rows(&rows_f32(&fx.data.test_inputs))
        .unwrap()
        .iter()
        .map(|&x| x as f64)
        .collect();
    close(&format!("{tag} score_rows"), &via_rows, &run.test_rewards, tol.max(1e-6));
    [worst_loss, worst_weight, worst_reward]
}

#[test]
fn matches_the_pytorch_reference() {
    let fx = fixture();
    assert_eq!(fx.dtype, "float64");
    assert_eq!(fx.runs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["mlp", "linear"]);
    assert_eq!(fx.data.chosen[0].len(), fx.dim);
    // The fixture exercises early stopping and the kept epoch being an earlier one.
    let mlp = &fx.runs[0];
    assert!(mlp.epochs_run < mlp.epochs && mlp.best_epoch < mlp.epochs_run);
    println!("reference: tools/bt_reference.py, torch {}, float64", fx.torch);
    for run in &fx.runs {
        for (dtype, tol) in [(DType::F64, TOL_F64), (DType::F32, TOL_F32)] {
            let [l, w, r] = replay(&fx, run, dtype, tol);
            let h = &run.history;
            println!(
                "{} {dtype:?}: {} epochs (best {}), train loss {:.4} → {:.4}; largest difference: losses {l:.1e}, \
                 kept weights {w:.1e}, rewards {r:.1e} (tolerance {tol:e})",
                run.name,
                run.epochs_run,
                run.best_epoch,
                h[0].train_loss,
                h[h.len() - 1].train_loss
            );
        }
    }
}

/// The replay hook is the default path with another start: replaying `train_head`'s own seeded
/// start (full batch, so no shuffle) gives the same bytes.
#[test]
fn replaying_the_seeded_start_is_train_head() {
    let (c, r, ids) = synthetic(60, 11);
    let opts = TrainOptions { epochs: 15, patience: 3, batch_size: 0, ..opts(8) };
    let a = train_head(&c, &r, &ids, &opts, &mut |_, _| {}).unwrap();
    let (init, _) = BtHead::init(DIM, 8, opts.seed).unwrap();
    let n_train = a.n_train;
    let start = TrainStart {
        weights: init.tensors(),
        batches: vec![vec![(0..n_train).collect()]; opts.epochs],
    };
    let b = train_head_from(&c, &r, &ids, &opts, &start, &mut |_, _| {}).unwrap();
    assert_eq!(a.history, b.history);
    assert_eq!(a.best_epoch, b.best_epoch);
    for (name, t) in a.head.tensors() {
        assert_eq!(flat(&t), flat(&b.head.tensors()[&name]), "{name}");
    }
    // The start's tensors are copied, not trained in place.
    assert_eq!(flat(&start.weights["out.weight"]), vec![0.0; 8]);
    // Too few epochs of batches, or an index past the training pairs, are refused.
    let short = TrainStart { batches: start.batches[..3].to_vec(), ..start.clone() };
    assert!(train_head_from(&c, &r, &ids, &opts, &short, &mut |_, _| {}).is_err());
    let mut past = start.clone();
    past.batches[0][0].push(n_train);
    assert!(train_head_from(&c, &r, &ids, &opts, &past, &mut |_, _| {}).is_err());
}

/// The head's GELU (composed from `erf` for an exact gradient) gives candle's `gelu_erf` values
/// bit for bit, in f32 and f64: heads score as before.
#[test]
fn head_gelu_is_candles_gelu_erf() {
    let xs: Vec<f64> = (-4000..=4000)
        .map(|i| i as f64 * 1.37e-3)
        .chain([0.0, -0.0, 1e-30, -1e-30, 9.0, -9.0])
        .collect();
    for dtype in [DType::F32, DType::F64] {
        let one = |v: f64| Tensor::new(&[[v]], &Device::Cpu).unwrap().to_dtype(dtype).unwrap();
        let tensors: HashMap<String, Tensor> = [
            ("hidden.weight".to_string(), one(1.0)),
            (
                "hidden.bias".to_string(),
                Tensor::new(&[0.0f64], &Device::Cpu).unwrap().to_dtype(dtype).unwrap(),
            ),
            ("out.weight".to_string(), one(1.0)),
        ]
        .into();
        // The head as training from this start gives it, in its dtype: one epoch with no steps.
        let opts = TrainOptions { hidden: 1, epochs: 1, held_out: 0.0, ..TrainOptions::default() };
        let start = TrainStart { weights: tensors, batches: vec![vec![]] };
        let head = train_head_from(
            &[vec![0.0]],
            &[vec![0.0]],
            &["a".into()],
            &opts,
            &start,
            &mut |_, _| {},
        )
        .unwrap()
        .head;
        assert_eq!(head.dtype(), dtype);
        let x = Tensor::from_vec(xs.clone(), (xs.len(), 1), &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let got = flat(&head.forward(&x).unwrap());
        let want = flat(&x.gelu_erf().unwrap().squeeze(1).unwrap());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let same = g.to_bits() == w.to_bits() || (*g == 0.0 && *w == 0.0);
            assert!(same, "{dtype:?} gelu({}) = {g}, gelu_erf {w}", xs[i]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Training on synthetic data, the split, files.

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
    TrainOptions {
        seed: 3,
        hidden,
        epochs: 200,
        patience: 20,
        lr: 1e-2,
        batch_size: 32,
        ..TrainOptions::default()
    }
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
        assert!(
            (first.train_loss - std::f64::consts::LN_2).abs() < 1e-6,
            "zero-initialised output layer: loss ln 2"
        );
        let best = t.best();
        assert!(
            best.train_loss < 0.5 * first.train_loss,
            "loss fell from {} to {}",
            first.train_loss,
            best.train_loss
        );
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
    let train = |seed: u64| {
        train_head(&c, &r, &ids, &TrainOptions { seed, ..opts(8) }, &mut |_, _| {}).unwrap()
    };
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
        let mut v: Vec<String> =
            ids.iter().zip(m).filter(|(_, &x)| x).map(|(i, _)| i.clone()).collect();
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
    assert!(
        err.contains("embedder.model_safetensors_sha256") && err.contains(&"0".repeat(64)),
        "{err}"
    );
    // A config that does not match the head is not written.
    assert!(save(&tmp.path().join("x"), &head, &config("a", 384, 8)).is_err());
}

/// safetensors writes through a 0600 temporary file; the saved head must be 0644 like bt.json
/// is under the usual umask 022 (`train bt` once left head.safetensors unreadable to others).
#[cfg(unix)]
#[test]
fn saved_head_is_readable_by_everyone() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (head, _) = BtHead::init(384, 0, 1).unwrap();
    let model = tmp.path().join("bt");
    save(&model, &head, &config(&"0".repeat(64), 384, 0)).unwrap();
    let mode =
        std::fs::metadata(model.join("head.safetensors")).unwrap().permissions().mode() & 0o777;
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
        prbench_testkit::unavailable(format!(
            "MiniLM not found at {} (run scripts/setup.sh --tests)",
            dir.display()
        ));
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
        request(
            "x",
            Some("likes jokes"),
            "Name a fruit.",
            "A banana, obviously the funniest fruit!",
        ),
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
    assert_eq!(
        id.file_hash,
        prbench_models::file_hash::sha256_file(&tmp.path().join("head.safetensors")).unwrap()
    );
    assert_eq!(id.spec, format!("bt:{}", tmp.path().display()));
}
