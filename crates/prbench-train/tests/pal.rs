//! PAL-A and PAL-B: parity with the PyTorch reference (`tools/pal_reference.py`, fixture
//! `tests/fixtures/pal_reference.json`, float64) in f64 and in f32; the logit-scale clamp; a
//! synthetic population of two opposite user groups where PAL (adapted) must beat BT and no
//! adaptation on held-out users; the held-out users of `train_pal`; save/load round trips.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use candle_core::{DType, Device, Tensor};
use prbench_train::bt::{self, TrainOptions};
use prbench_train::pal::model::{init_user_row, pair_loss};
use prbench_train::pal::train::{adapt_schedule, loss_and_accuracy, pair_rewards};
use prbench_train::pal::{
    adapt_user, train_pal, Hyper, PalData, PalNet, PalPair, PalTrainOptions, Trainer, Variant,
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
    data: FxData,
    variants: Vec<FxVariant>,
}

#[derive(Deserialize)]
struct FxData {
    prompts: Vec<Vec<f64>>,
    items: Vec<Vec<f64>>,
    pairs: Vec<FxPair>,
    n_train_users: usize,
    unseen: Vec<FxUnseen>,
}

#[derive(Deserialize)]
struct FxPair {
    user: i64,
    prompt: usize,
    chosen: usize,
    rejected: usize,
}

#[derive(Deserialize)]
struct FxUnseen {
    history: Vec<usize>,
    test: Vec<usize>,
}

#[derive(Deserialize)]
struct Named {
    shape: Vec<usize>,
    data: Vec<f64>,
}

#[derive(Deserialize)]
struct FxVariant {
    variant: String,
    k: usize,
    dim: usize,
    init: BTreeMap<String, Named>,
    schedule: Vec<Vec<usize>>,
    loss: Vec<f64>,
    #[serde(rename = "final")]
    final_: BTreeMap<String, Named>,
    eval_pairs: Vec<usize>,
    eval_chosen: Vec<f64>,
    eval_rejected: Vec<f64>,
    adapt: Vec<FxAdapt>,
}

#[derive(Deserialize)]
struct FxAdapt {
    w_init: Vec<f64>,
    batches: Vec<Vec<usize>>,
    loss: Vec<f64>,
    w_final: Vec<f64>,
    test: Vec<usize>,
    test_chosen: Vec<f64>,
    test_rejected: Vec<f64>,
}

fn fixture() -> Fixture {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pal_reference.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn tensor(n: &Named, dtype: DType) -> Tensor {
    Tensor::from_vec(n.data.clone(), n.shape.as_slice(), &Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

fn flat(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().flatten_all().unwrap().to_vec1::<f64>().unwrap()
}

/// Tolerances of one precision: `rel` for the loss curves (relative), `abs` for parameters and
/// rewards (absolute, on values of order 1; PAL-B's rewards are scaled cosines up to ~14, so
/// they are compared relative to max(1, |value|)).
#[derive(Clone, Copy, Debug)]
struct Tol {
    rel: f64,
    abs: f64,
}

/// f64 runs the reference's arithmetic: only summation order differs (seen: at most 5e-15).
const TOL_F64: Tol = Tol { rel: 1e-12, abs: 1e-12 };
/// f32 (prbench's models) against the f64 reference over 36 steps and 6 adaptation steps
/// (seen: at most 6.4e-7 relative on losses, 5.3e-7 on parameters and rewards).
const TOL_F32: Tol = Tol { rel: 1e-5, abs: 5e-6 };

/// Largest scaled difference; panics naming the first value over `tol`.
fn close(what: &str, got: &[f64], want: &[f64], tol: f64, relative: bool) -> f64 {
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: {} values, the reference has {}",
        got.len(),
        want.len()
    );
    let mut worst = 0.0f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let scale = if relative { w.abs().max(1e-12) } else { w.abs().max(1.0) };
        let d = (g - w).abs() / scale;
        assert!(d <= tol, "{what}[{i}]: {g} vs the reference's {w} (difference {d:.3e} > {tol:e})");
        worst = worst.max(d);
    }
    worst
}

fn data(fx: &FxData, dtype: DType) -> PalData {
    let rows = |v: &[Vec<f64>]| -> Vec<Vec<f32>> {
        v.iter().map(|r| r.iter().map(|&x| x as f32).collect()).collect()
    };
    let pairs = fx
        .pairs
        .iter()
        .map(|p| PalPair {
            user: if p.user >= 0 { p.user as usize } else { usize::MAX },
            prompt: p.prompt,
            chosen: p.chosen,
            rejected: p.rejected,
        })
        .collect();
    let mut d =
        PalData::from_rows(&rows(&fx.items), Some(&rows(&fx.prompts)), pairs, dtype).unwrap();
    // The tables in full precision (from_rows takes f32 rows, as embeddings are).
    let table = |v: &[Vec<f64>]| {
        Tensor::from_vec(v.concat(), (v.len(), v[0].len()), &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    };
    d.items = table(&fx.items);
    d.prompts = Some(table(&fx.prompts));
    d
}

/// Runs one variant of the fixture in `dtype` and compares every recorded figure; returns the
/// largest differences seen (loss, parameters, rewards, adaptation).
fn run_variant(fx: &Fixture, v: &FxVariant, dtype: DType, tol: Tol) -> [f64; 4] {
    let variant = Variant::parse(&v.variant).unwrap();
    let data = data(&fx.data, dtype);
    let init: HashMap<String, Tensor> = v
        .init
        .iter()
        .filter(|(n, _)| *n != "W")
        .map(|(n, t)| (n.clone(), tensor(t, dtype)))
        .collect();
    let w_init = tensor(&v.init["W"], dtype);
    assert_eq!(w_init.dims(), [fx.data.n_train_users, v.k]);
    let mut trainer = Trainer::new(variant, v.k, v.dim, &init, &w_init, &Hyper::default()).unwrap();
    let tag = format!("PAL-{} {dtype:?}", v.variant.to_uppercase());

    // The loss curve, step by step.
    let losses: Vec<f64> = v.schedule.iter().map(|b| trainer.step(&data, b).unwrap()).collect();
    let worst_loss = close(&format!("{tag} loss per step"), &losses, &v.loss, tol.rel, true);

    // Final parameters.
    let mut worst_param = 0.0f64;
    let tensors = trainer.net().tensors();
    for (name, want) in &v.final_ {
        let got = if name == "W" { trainer.w().unwrap() } else { tensors[name].clone() };
        assert_eq!(got.dims(), want.shape.as_slice(), "{tag} {name}");
        worst_param = worst_param.max(close(
            &format!("{tag} final {name}"),
            &flat(&got),
            &want.data,
            tol.abs,
            false,
        ));
    }
    assert_eq!(v.final_.len(), tensors.len() + 1, "{tag}: the reference has every tensor and W");

    // Rewards after training, each pair for its user.
    let users: Vec<u32> = v.eval_pairs.iter().map(|&i| fx.data.pairs[i].user as u32).collect();
    let rows = trainer
        .w()
        .unwrap()
        .index_select(&Tensor::new(users.as_slice(), &Device::Cpu).unwrap(), 0)
        .unwrap();
    let (rc, rr) = pair_rewards(trainer.net(), &data, &rows, &v.eval_pairs).unwrap();
    let worst_reward = close(&format!("{tag} eval chosen"), &rc, &v.eval_chosen, tol.abs, false)
        .max(close(&format!("{tag} eval rejected"), &rr, &v.eval_rejected, tol.abs, false));

    // Few-shot adaptation of each unseen user, everything else frozen.
    let net = trainer.net().snapshot(dtype).unwrap();
    let mut worst_adapt = 0.0f64;
    for (a, u) in v.adapt.iter().zip(&fx.data.unseen) {
        assert!(a.batches.iter().all(|b| *b == u.history) && a.test == u.test);
        let w0 =
            Tensor::from_vec(a.w_init.clone(), v.k, &Device::Cpu).unwrap().to_dtype(dtype).unwrap();
        let adapted = adapt_user(&net, &data, &w0, &a.batches, &Hyper::default()).unwrap();
        worst_adapt = worst_adapt.max(close(
            &format!("{tag} adaptation loss"),
            &adapted.losses,
            &a.loss,
            tol.rel,
            true,
        ));
        worst_adapt = worst_adapt.max(close(
            &format!("{tag} adapted w"),
            &flat(&adapted.w),
            &a.w_final,
            tol.abs,
            false,
        ));
        let rows = adapted
            .w
            .unsqueeze(0)
            .unwrap()
            .broadcast_as((a.test.len(), v.k))
            .unwrap()
            .contiguous()
            .unwrap();
        let (tc, tr) = pair_rewards(&net, &data, &rows, &a.test).unwrap();
        worst_adapt = worst_adapt.max(close(
            &format!("{tag} adapted test chosen"),
            &tc,
            &a.test_chosen,
            tol.abs,
            false,
        ));
        worst_adapt = worst_adapt.max(close(
            &format!("{tag} adapted test rejected"),
            &tr,
            &a.test_rejected,
            tol.abs,
            false,
        ));
    }
    [worst_loss, worst_param, worst_reward, worst_adapt]
}

#[test]
fn matches_the_pytorch_reference() {
    let fx = fixture();
    assert_eq!(fx.dtype, "float64");
    assert_eq!(fx.variants.iter().map(|v| v.variant.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    println!("reference: tools/pal_reference.py, torch {}, float64", fx.torch);
    for v in &fx.variants {
        for (dtype, tol) in [(DType::F64, TOL_F64), (DType::F32, TOL_F32)] {
            let [l, p, r, a] = run_variant(&fx, v, dtype, tol);
            println!(
                "PAL-{} {dtype:?}: {} steps, loss {:.4} → {:.4}; largest difference: loss {l:.1e} (relative), parameters {p:.1e}, rewards {r:.1e}, adaptation {a:.1e} (tolerance {tol:?})",
                v.variant.to_uppercase(),
                v.loss.len(),
                v.loss[0],
                v.loss[v.loss.len() - 1]
            );
        }
    }
}

/// The fixture's logit scale stays below ln 100, so the clamp is checked here: above it the
/// reward is 100·cos (the reference's rewards rescaled) and `logit_scale` gets no gradient.
#[test]
fn logit_scale_clamp() {
    let fx = fixture();
    let v = &fx.variants[1];
    assert_eq!(v.variant, "b");
    let s = v.final_["logit_scale"].data[0];
    assert!(s.exp() < 100.0, "the fixture now reaches the clamp; this test can use it directly");
    let data = data(&fx.data, DType::F64);
    let mut tensors: HashMap<String, Tensor> = v
        .final_
        .iter()
        .filter(|(n, _)| *n != "W")
        .map(|(n, t)| (n.clone(), tensor(t, DType::F64)))
        .collect();
    tensors.insert("logit_scale".into(), Tensor::new(&[5.0f64], &Device::Cpu).unwrap());
    let w = tensor(&v.final_["W"], DType::F64);
    let users: Vec<u32> = v.eval_pairs.iter().map(|&i| fx.data.pairs[i].user as u32).collect();
    let rows = w.index_select(&Tensor::new(users.as_slice(), &Device::Cpu).unwrap(), 0).unwrap();
    let net = PalNet::from_tensors(Variant::B, v.k, v.dim, &tensors).unwrap();
    let (rc, _) = pair_rewards(&net, &data, &rows, &v.eval_pairs).unwrap();
    let want: Vec<f64> = v.eval_chosen.iter().map(|r| r * 100.0 / s.exp()).collect();
    close("clamped rewards", &rc, &want, 1e-9, false);
    // One training step: every parameter moves except logit_scale (zero gradient, zero moment).
    let mut trainer =
        Trainer::new(Variant::B, v.k, v.dim, &tensors, &w, &Hyper::default()).unwrap();
    trainer.step(&data, &v.schedule[0]).unwrap();
    assert_eq!(flat(&trainer.net().tensors()["logit_scale"]), [5.0]);
    assert_ne!(flat(&trainer.net().tensors()["f.0.bias"]), flat(&tensors["f.0.bias"]));
}

/// A user absent from a batch takes no optimizer step (its Adam state waits), as a torch
/// parameter with no gradient.
#[test]
fn users_outside_the_batch_do_not_step() {
    let fx = fixture();
    let v = &fx.variants[0];
    let data = data(&fx.data, DType::F64);
    let init: HashMap<String, Tensor> = v
        .init
        .iter()
        .filter(|(n, _)| *n != "W")
        .map(|(n, t)| (n.clone(), tensor(t, DType::F64)))
        .collect();
    let w0 = tensor(&v.init["W"], DType::F64);
    let mut trainer = Trainer::new(Variant::A, v.k, v.dim, &init, &w0, &Hyper::default()).unwrap();
    let batch = &v.schedule[0];
    trainer.step(&data, batch).unwrap();
    let in_batch: Vec<usize> = batch.iter().map(|&i| fx.data.pairs[i].user as usize).collect();
    let (before, after) =
        (w0.to_vec2::<f64>().unwrap(), trainer.w().unwrap().to_vec2::<f64>().unwrap());
    for u in 0..fx.data.n_train_users {
        let stepped = in_batch.contains(&u);
        assert_eq!(trainer.user_steps(u), u64::from(stepped), "user {u}");
        assert_eq!(
            before[u] != after[u],
            stepped,
            "user {u}: row moved = {}",
            before[u] != after[u]
        );
    }
    assert!(in_batch.len() < fx.data.n_train_users, "the first batch leaves some user out");
}

// ---------------------------------------------------------------------------------------------
// A synthetic population: two opposite user groups.

const DIM: usize = 32;

fn unit(rng: &mut ChaCha8Rng) -> Vec<f32> {
    let v: Vec<f32> = (0..DIM).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

/// Users of group 0 prefer the answer further along +v, group 1 along −v (as the reference's
/// `synthetic`); embeddings are unit vectors like MiniLM's.
struct Population {
    items: Vec<Vec<f32>>,
    prompts: Vec<Vec<f32>>,
    /// `(user, group, pair)` for every pair.
    pairs: Vec<(usize, usize, PalPair)>,
}

impl Population {
    fn add_user(&mut self, rng: &mut ChaCha8Rng, v: &[f32], user: usize, group: usize, n: usize) {
        for _ in 0..n {
            let (a, b) = (unit(rng), unit(rng));
            let dot = |x: &[f32]| x.iter().zip(v).map(|(p, q)| p * q).sum::<f32>();
            let (sa, sb) = if group == 0 { (dot(&a), dot(&b)) } else { (-dot(&a), -dot(&b)) };
            let (c, r) = if sa > sb { (a, b) } else { (b, a) };
            self.prompts.push(unit(rng));
            self.items.push(c);
            self.items.push(r);
            let pair = PalPair {
                user,
                prompt: self.prompts.len() - 1,
                chosen: self.items.len() - 2,
                rejected: self.items.len() - 1,
            };
            self.pairs.push((user, group, pair));
        }
    }

    fn data(&self, idx: &[usize]) -> PalData {
        PalData::from_rows(
            &self.items,
            Some(&self.prompts),
            idx.iter().map(|&i| self.pairs[i].2).collect(),
            DType::F32,
        )
        .unwrap()
    }
}

/// Train users and held-out users, alternating groups: each train user with `per_train` pairs,
/// each held-out user with `history` pairs to adapt on, then `test` test pairs.
struct Split {
    pop: Population,
    train: Vec<usize>,
    held_out: Vec<(usize, Vec<usize>, Vec<usize>)>,
}

fn population(
    n_train: usize,
    per_train: usize,
    n_held: usize,
    history: usize,
    test: usize,
) -> Split {
    let mut rng = ChaCha8Rng::seed_from_u64(20260512);
    let v = unit(&mut rng);
    let mut pop = Population { items: Vec::new(), prompts: Vec::new(), pairs: Vec::new() };
    for u in 0..n_train {
        pop.add_user(&mut rng, &v, u, u % 2, per_train);
    }
    let train: Vec<usize> = (0..pop.pairs.len()).collect();
    let mut held_out = Vec::new();
    for u in n_train..n_train + n_held {
        let start = pop.pairs.len();
        pop.add_user(&mut rng, &v, u, u % 2, history + test);
        held_out.push((
            u,
            (start..start + history).collect(),
            (start + history..start + history + test).collect(),
        ));
    }
    Split { pop, train, held_out }
}

fn accuracy(c: &[f64], r: &[f64]) -> f64 {
    c.iter().zip(r).filter(|(a, b)| a > b).count() as f64 / c.len() as f64
}

#[test]
fn pal_beats_bt_and_no_adaptation_on_held_out_users() {
    // The authors' optimizer settings move a user's row only in batches holding their pairs, so
    // the train users have many pairs each (10 users × 80); 20 held-out users, half per group,
    // adapt on 8 pairs and are tested on 10 each: 200 test pairs.
    let (n_train, per_train, n_held, history, n_test_each) = (10, 80, 20, 8, 10);
    let s = population(n_train, per_train, n_held, history, n_test_each);
    let pop = &s.pop;
    let train = pop.data(&s.train);
    let keys: Vec<String> = (0..n_train).map(|u| format!("u{u}")).collect();
    let ids: Vec<String> = (0..train.pairs.len()).map(|i| format!("p{i}")).collect();
    let all = pop.data(&(0..pop.pairs.len()).collect::<Vec<_>>());
    let test: Vec<usize> = s.held_out.iter().flat_map(|(_, _, t)| t.clone()).collect();
    let n_test = test.len();

    // BT on the same embeddings: one head for everyone (it cannot tell the groups apart).
    let rows = |idx: &[usize], f: fn(&PalPair) -> usize| -> Vec<Vec<f32>> {
        idx.iter().map(|&i| pop.items[f(&pop.pairs[i].2)].clone()).collect()
    };
    let bt_opts = TrainOptions {
        seed: 3,
        hidden: 16,
        epochs: 50,
        patience: 10,
        lr: 1e-2,
        batch_size: 32,
        ..TrainOptions::default()
    };
    let head = bt::train_head(
        &rows(&s.train, |p| p.chosen),
        &rows(&s.train, |p| p.rejected),
        &ids,
        &bt_opts,
        &mut |_, _| {},
    )
    .unwrap();
    let bc = head.head.score_rows(&rows(&test, |p| p.chosen)).unwrap();
    let br = head.head.score_rows(&rows(&test, |p| p.rejected)).unwrap();
    let bt_acc = bc.iter().zip(&br).filter(|(a, b)| a > b).count() as f64 / n_test as f64;
    println!(
        "synthetic population: {n_train} train users × {per_train} pairs, {n_held} held-out users × ({history} history + {n_test_each} test) pairs, d = {DIM}, two opposite groups"
    );
    println!(
        "  BT (hidden 16, {} epochs): held-out users' test accuracy {bt_acc:.3}",
        head.epochs_run
    );

    for variant in [Variant::A, Variant::B] {
        let epochs = if variant == Variant::A { 15 } else { 10 };
        let opts = PalTrainOptions {
            variant,
            k: 2,
            seed: 7,
            epochs,
            adapt_epochs: 150,
            ..PalTrainOptions::default()
        };
        let t = train_pal(&train, &keys, &ids, &opts, &mut |_| {}).unwrap();
        let last = t.history.last().unwrap();
        let (mut adapted, mut random, mut uniform) = (Vec::new(), Vec::new(), Vec::new());
        for (u, hist, _) in &s.held_out {
            let key = format!("u{u}");
            let hist_ids: Vec<String> = hist.iter().map(|i| format!("p{i}")).collect();
            let hist_ids: Vec<&str> = hist_ids.iter().map(String::as_str).collect();
            let schedule = adapt_schedule(
                opts.seed,
                &key,
                hist,
                &hist_ids,
                opts.adapt_epochs,
                opts.batch_size,
            );
            let row0 = init_user_row(opts.seed, &key, 2);
            let a = adapt_user(
                &t.net,
                &all,
                &Tensor::from_vec(row0.clone(), 2, &Device::Cpu).unwrap(),
                &schedule,
                &opts.hyper,
            )
            .unwrap();
            let row = a.w.to_vec1::<f32>().unwrap();
            for _ in 0..n_test_each {
                adapted.extend(&row);
                random.extend(&row0);
                uniform.extend([0.0f32, 0.0]);
            }
        }
        let acc = |w: Vec<f32>| {
            let w = Tensor::from_vec(w, (n_test, 2), &Device::Cpu).unwrap();
            let (c, r) = pair_rewards(&t.net, &all, &w, &test).unwrap();
            accuracy(&c, &r)
        };
        let (a, r, u) = (acc(adapted), acc(random), acc(uniform));
        println!(
            "  PAL-{} (K 2, {} epochs, train loss {:.3}, train accuracy {:.3}; adaptation {} epochs): held-out test accuracy adapted {a:.3}, unadapted random row {r:.3}, uniform mixture {u:.3}, BT {bt_acc:.3}",
            variant.name().to_uppercase(),
            opts.epochs,
            last.train_loss,
            last.train_accuracy,
            opts.adapt_epochs
        );
        // 200 test pairs: a standard error of at most 0.035 per accuracy. The groups are exactly
        // opposite, so a model that ignores the user is near 0.5; adapted PAL reached about 0.9
        // (printed above), so these bounds leave more than 3 standard errors each.
        assert!(a >= 0.75, "PAL-{variant} adapted accuracy {a}");
        assert!(a >= bt_acc + 0.25, "PAL-{variant} adapted {a} vs BT {bt_acc}");
        assert!(
            a >= u + 0.25 && a >= r + 0.25,
            "PAL-{variant} adapted {a} vs uniform {u} / random row {r}"
        );
    }
}

#[test]
fn train_pal_holds_out_users_and_adapts_them() {
    // 30 users with 40 pairs each; 30% held out (9 users): adapted on 30 pairs, tested on 10.
    let s = population(30, 40, 0, 0, 0);
    let pop = &s.pop;
    let data = pop.data(&s.train);
    let keys: Vec<String> = (0..30).map(|u| format!("u{u}")).collect();
    let ids: Vec<String> = s.train.iter().map(|i| format!("p{i}")).collect();
    let opts = PalTrainOptions {
        variant: Variant::A,
        seed: 11,
        epochs: 10,
        adapt_epochs: 100,
        holdout_users: 0.3,
        ..PalTrainOptions::default()
    };
    let mut seen = 0;
    let t = train_pal(&data, &keys, &ids, &opts, &mut |_| seen += 1).unwrap();
    assert_eq!(seen, 10);
    assert_eq!(t.held_out_users.len(), 9);
    assert_eq!(t.users.len() + t.held_out_users.len(), 30);
    assert_eq!(t.w.dims(), [t.users.len(), 2]);
    assert!(t.users.iter().all(|u| !t.held_out_users.contains(u)));
    assert_eq!(t.n_train_pairs, 21 * 40);
    let h = t.held_out.clone().unwrap();
    assert_eq!((h.users, h.adapt_pairs, h.test_pairs), (9, 270, 90));
    println!(
        "train_pal with 30% of users held out: {} users trained on {} pairs, train accuracy {:.3}; {} held-out users adapted on {} pairs, tested on {}: accuracy adapted {:.3}, unadapted (random row) {:.3}, uniform mixture {:.3}",
        t.users.len(),
        t.n_train_pairs,
        t.history.last().unwrap().train_accuracy,
        h.users,
        h.adapt_pairs,
        h.test_pairs,
        h.accuracy_adapted,
        h.accuracy_unadapted,
        h.accuracy_uniform
    );
    // 90 test pairs (standard error at most 0.053): the bound leaves about 3 of them below the
    // printed gap.
    assert!(
        h.accuracy_adapted >= h.accuracy_uniform + 0.2
            && h.accuracy_adapted >= h.accuracy_unadapted + 0.2,
        "{h:?}"
    );
    // The figures are those of the saved weights, computed the documented way.
    let idx: Vec<usize> = (0..data.pairs.len())
        .filter(|&i| !t.held_out_users.contains(&keys[data.pairs[i].user]))
        .collect();
    let row_of: HashMap<&str, usize> =
        t.users.iter().enumerate().map(|(r, u)| (u.as_str(), r)).collect();
    let rows: Vec<u32> =
        idx.iter().map(|&i| row_of[keys[data.pairs[i].user].as_str()] as u32).collect();
    let w = t.w.index_select(&Tensor::new(rows.as_slice(), &Device::Cpu).unwrap(), 0).unwrap();
    let (c, r) = pair_rewards(&t.net, &data, &w, &idx).unwrap();
    let (loss, acc) = loss_and_accuracy(Variant::A, &c, &r);
    let last = t.history.last().unwrap();
    assert!((loss - last.train_loss).abs() < 1e-9 && (acc - last.train_accuracy).abs() < 1e-12);
    let direct = pair_loss(
        Variant::A,
        &Tensor::new(&[c[0]], &Device::Cpu).unwrap(),
        &Tensor::new(&[r[0]], &Device::Cpu).unwrap(),
    )
    .unwrap();
    assert!((flat(&direct)[0] - (1.0 - (c[0] - r[0])).max(0.0)).abs() < 1e-12);
}

/// The same seed gives the same model; another seed another one; the batch order does not
/// depend on the order the pairs are listed in.
#[test]
fn training_is_deterministic() {
    let s = population(6, 12, 0, 0, 0);
    let data = s.pop.data(&s.train);
    let keys: Vec<String> = (0..6).map(|u| format!("u{u}")).collect();
    let ids: Vec<String> = s.train.iter().map(|i| format!("p{i}")).collect();
    let run = |seed: u64, data: &PalData, ids: &[String]| {
        let opts = PalTrainOptions {
            variant: Variant::B,
            seed,
            epochs: 2,
            holdout_users: 0.2,
            adapt_epochs: 3,
            ..PalTrainOptions::default()
        };
        train_pal(data, &keys, ids, &opts, &mut |_| {}).unwrap()
    };
    let (a, b, c) = (run(5, &data, &ids), run(5, &data, &ids), run(6, &data, &ids));
    assert_eq!(flat(&a.w), flat(&b.w));
    assert_eq!(a.history, b.history);
    assert_eq!(a.held_out, b.held_out);
    for (n, t) in a.net.tensors() {
        assert_eq!(flat(&t), flat(&b.net.tensors()[&n]), "{n}");
    }
    assert_ne!(flat(&a.net.tensors()["f.0.weight"]), flat(&c.net.tensors()["f.0.weight"]));
    // Reversed pair order: the same pairs in the same batches, so the same model.
    let mut rev = data.clone();
    rev.pairs.reverse();
    let rev_ids: Vec<String> = ids.iter().rev().cloned().collect();
    let r = run(5, &rev, &rev_ids);
    let row = |t: &prbench_train::pal::TrainedPal, u: &str| {
        flat(&t.w.get(t.users.iter().position(|x| x == u).unwrap()).unwrap())
    };
    for u in &a.users {
        assert_eq!(row(&a, u), row(&r, u), "user {u}");
    }
    // Only the after-epoch mean over all pairs sums in another order.
    for (x, y) in a.history.iter().zip(&r.history) {
        assert_eq!((x.mean_step_loss, x.train_accuracy), (y.mean_step_loss, y.train_accuracy));
        assert!((x.train_loss - y.train_loss).abs() < 1e-12);
    }
}

// ---------------------------------------------------------------------------------------------
// Saved models.

mod saved {
    use super::*;
    use prbench_models::{ChatPrompt, RewardModel, RmInput, RmRequest};
    use prbench_rm::embed::{default_embedder_dir, MiniLmEmbedder};
    use prbench_train::bt::{compose, BtPair, DataRecord, EmbedRecord, EmbedderRecord};
    use prbench_train::pal::compose::{composition, composition_sha256, prompt_input};
    use prbench_train::pal::config::PalTrainingRecord;
    use prbench_train::pal::{save, PalConfig, PalRewardModel, UserHistory};

    fn config(variant: Variant, sha: &str, users: &[&str], adapt_epochs: usize) -> PalConfig {
        PalConfig {
            format: "prbench-pal/1".into(),
            variant: variant.name().into(),
            k: 2,
            dim: 384,
            projector: variant.projector_arch().into(),
            score: variant.score_name().into(),
            loss: variant.loss_name().into(),
            embedder: EmbedderRecord {
                name: "all-MiniLM-L6-v2".into(),
                model_safetensors_sha256: sha.into(),
                dim: 384,
                pooling: "mean".into(),
                normalize: true,
            },
            max_length: 512,
            composition: composition(),
            composition_sha256: composition_sha256(),
            condition: "none".into(),
            seed: 9,
            training: PalTrainingRecord {
                optimizer: String::new(),
                lr_projector: 1e-4,
                weight_decay_projector: 0.01,
                lr_prototypes: 5e-3,
                lr_users: 5e-3,
                lr_logit_scale: 0.1,
                betas: [0.9, 0.999],
                eps: 1e-8,
                batch_size: 4,
                epochs: 1,
                authors_epochs: 1,
                adapt_optimizer: String::new(),
                adapt_lr: 5e-3,
                adapt_weight_decay: 0.0,
                adapt_epochs,
                authors_adapt_epochs: 1,
                holdout_users: 0.0,
                n_users: users.len(),
                n_held_out_users: 0,
                n_train_pairs: 0,
                n_held_out_pairs: 0,
                history: vec![],
                held_out: None,
                seconds: 0.0,
            },
            embedding: EmbedRecord::default(),
            data: DataRecord::default(),
            users: users.iter().enumerate().map(|(i, u)| (u.to_string(), i)).collect(),
            deviations: vec![],
            weights_sha256: String::new(),
            code_version: "test".into(),
        }
    }

    fn request(id: &str, q: &str, a: &str) -> RmRequest {
        RmRequest {
            input: RmInput {
                example_id: id.into(),
                question: q.into(),
                context: None,
                answer: a.into(),
            },
            prompt: ChatPrompt::default(),
        }
    }

    /// Save, load, score: the loaded model's scores are the trained network's on the same
    /// embeddings, for known users and for a user adapted at load time; an unknown user is
    /// refused; a swapped weights file or another embedder is refused.
    #[test]
    fn round_trip_scores_equal() {
        let dir = default_embedder_dir();
        if !dir.join("model.safetensors").is_file() {
            prbench_testkit::unavailable(format!(
                "MiniLM not found at {} (run scripts/setup.sh --tests)",
                dir.display()
            ));
            return;
        }
        let emb = MiniLmEmbedder::load(&dir).unwrap();
        let qa = [
            ("Name a fruit.", "A banana, obviously the funniest fruit!", "Malus domestica."),
            ("Name a colour.", "Blue!", "The colour of a clear midday sky over the sea."),
            (
                "Describe rain.",
                "Nature's free shower, no soap included!",
                "Water falling from clouds.",
            ),
        ];
        for variant in [Variant::A, Variant::B] {
            // Items and prompts as the pipeline embeds them.
            let mut inputs = Vec::new();
            for (q, c, r) in qa {
                inputs.extend([compose(None, q, c), compose(None, q, r), prompt_input(None, q)]);
            }
            let (v, _) = emb.embed(&inputs).unwrap();
            let items: Vec<Vec<f32>> =
                (0..3).flat_map(|i| [v[3 * i].clone(), v[3 * i + 1].clone()]).collect();
            let prompts: Vec<Vec<f32>> = (0..3).map(|i| v[3 * i + 2].clone()).collect();
            // User 0 prefers the playful answers, user 1 the plain ones.
            let mut pairs = Vec::new();
            for i in 0..3 {
                pairs.push(PalPair { user: 0, prompt: i, chosen: 2 * i, rejected: 2 * i + 1 });
                pairs.push(PalPair { user: 1, prompt: i, chosen: 2 * i + 1, rejected: 2 * i });
            }
            let data = PalData::from_rows(&items, Some(&prompts), pairs, DType::F32).unwrap();
            let keys = vec!["fun".to_string(), "plain".to_string()];
            let ids: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
            let opts =
                PalTrainOptions { variant, seed: 9, epochs: 3, ..PalTrainOptions::default() };
            let t = train_pal(&data, &keys, &ids, &opts, &mut |_| {}).unwrap();
            assert_eq!(t.users, keys);

            let tmp = tempfile::tempdir().unwrap();
            let model_dir = tmp.path().join("pal");
            save(
                &model_dir,
                &t.net,
                &t.w,
                &config(variant, emb.weights_sha256(), &["fun", "plain"], 4),
            )
            .unwrap();
            let mut model = PalRewardModel::load(&model_dir, &dir).unwrap();

            // Known users: the loaded model's scores are the network's on the same embeddings.
            let reqs: Vec<RmRequest> = ["fun", "plain"]
                .iter()
                .flat_map(|u| {
                    qa.iter().flat_map(move |(q, c, r)| [request(u, q, c), request(u, q, r)])
                })
                .collect();
            let got: Vec<f32> = model.score(&reqs).unwrap().iter().map(|s| s.value).collect();
            let mut want = Vec::new();
            for u in 0..2 {
                let idx: Vec<usize> =
                    (0..3).map(|i| if u == 0 { 2 * i } else { 2 * i + 1 }).collect();
                let rows =
                    t.w.get(u)
                        .unwrap()
                        .unsqueeze(0)
                        .unwrap()
                        .broadcast_as((3, 2))
                        .unwrap()
                        .contiguous()
                        .unwrap();
                let (c, r) = pair_rewards(&t.net, &data, &rows, &idx).unwrap();
                // Pairs of user 1 have chosen and rejected swapped: undo it to list (playful, plain).
                for i in 0..3 {
                    let (fun, plain) = if u == 0 { (c[i], r[i]) } else { (r[i], c[i]) };
                    want.extend([fun as f32, plain as f32]);
                }
            }
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-5, "PAL-{variant}: loaded {g} vs trained {w}");
            }
            // The two users are told apart on at least one question.
            assert_ne!(&got[..6], &got[6..]);

            // An unknown user is refused, then adapted from their history and scored with the
            // adapted row, as adapt_user computes it.
            assert!(model
                .score(&[request("new", "Name a fruit.", "Apple")])
                .unwrap_err()
                .to_string()
                .contains("example `new`"));
            let history = vec![UserHistory {
                user: "new".into(),
                pairs: (0..3)
                    .map(|i| BtPair {
                        id: format!("h{i}"),
                        context: None,
                        question: qa[i].0.into(),
                        chosen: qa[i].2.into(),
                        rejected: qa[i].1.into(),
                    })
                    .collect(),
            }];
            let report = model.adapt_users(&history, &mut |_| {}).unwrap();
            assert_eq!((report.adapted, report.pairs, report.known), (1, 3, 0));
            let hist_pairs: Vec<PalPair> = (0..3)
                .map(|i| PalPair { user: 0, prompt: i, chosen: 2 * i + 1, rejected: 2 * i })
                .collect();
            let hdata = PalData::from_rows(&items, Some(&prompts), hist_pairs, DType::F32).unwrap();
            let hid: Vec<&str> = vec!["h0", "h1", "h2"];
            let schedule = adapt_schedule(9, "new", &[0, 1, 2], &hid, 4, 4);
            let row0 = Tensor::from_vec(init_user_row(9, "new", 2), 2, &Device::Cpu).unwrap();
            let a = adapt_user(&t.net, &hdata, &row0, &schedule, &Hyper::default()).unwrap();
            let rows =
                a.w.unsqueeze(0).unwrap().broadcast_as((3, 2)).unwrap().contiguous().unwrap();
            let (c, r) = pair_rewards(&t.net, &hdata, &rows, &[0, 1, 2]).unwrap();
            let got = model
                .score(&[request("new", qa[1].0, qa[1].2), request("new", qa[1].0, qa[1].1)])
                .unwrap();
            assert!(
                (got[0].value as f64 - c[1]).abs() < 1e-5
                    && (got[1].value as f64 - r[1]).abs() < 1e-5
            );
            assert_eq!(model.adapted_users(), 1);

            // Weights swapped under a pal.json they do not belong to, or another embedder: refused.
            let path = model_dir.join("pal.safetensors");
            let mut bytes = std::fs::read(&path).unwrap();
            let n = bytes.len();
            bytes[n - 1] ^= 1;
            std::fs::write(&path, bytes).unwrap();
            assert!(PalRewardModel::load(&model_dir, &dir)
                .unwrap_err()
                .to_string()
                .contains("weights_sha256"));
            let fake = tmp.path().join("emb");
            std::fs::create_dir_all(&fake).unwrap();
            std::fs::write(fake.join("model.safetensors"), b"not the weights").unwrap();
            assert!(PalRewardModel::load(&model_dir, &fake)
                .unwrap_err()
                .to_string()
                .contains("embedder.model_safetensors_sha256"));
        }
    }

    /// A config that does not fit the network or W is not written.
    #[test]
    fn save_checks_the_config() {
        let init = PalNet::init_tensors(Variant::A, 2, 384, 1).unwrap();
        let net = PalNet::from_tensors(Variant::A, 2, 384, &init).unwrap();
        let w = Tensor::zeros((2, 2), DType::F32, &Device::Cpu).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        assert!(save(&tmp.path().join("a"), &net, &w, &config(Variant::B, "x", &["u", "v"], 1))
            .is_err());
        assert!(save(&tmp.path().join("b"), &net, &w, &config(Variant::A, "x", &["u"], 1)).is_err());
        save(&tmp.path().join("c"), &net, &w, &config(Variant::A, "x", &["u", "v"], 1)).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(tmp.path().join("c/pal.safetensors"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, 0o644);
        }
    }
}
