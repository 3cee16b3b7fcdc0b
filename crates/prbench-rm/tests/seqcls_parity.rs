//! Parity of the candle sequence-classification engine with transformers 5.24 on the fixtures of
//! `tools/make_seqcls_fixtures.py` (`tests/fixtures/seqcls/expected.json`): single inputs,
//! left- and right-padded batches fed exactly as transformers saw them, the f32 upcast of the
//! bf16/f16 weights, batch == single, a two-label head, a sharded checkpoint, the errors for an
//! unsupported architecture and a missing shard. Run with `--nocapture` to see max |Δ| per model.
//!
//! Also: a random-weights Qwen2-shaped model written by [`write_random_qwen2`] (no fixture
//! needed) for batch == single at larger sizes, and an `#[ignore]`d throughput measurement:
//! `cargo test --release -p prbench-rm --test seqcls_parity -- --ignored --nocapture`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use prbench_rm::seqcls::{pooled_index, Positions, SeqClsModel};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seqcls")
}

fn expected() -> Value {
    let path = fixtures().join("expected.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run tools/make_seqcls_fixtures.py)", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn ids_of(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

fn rows(v: &Value) -> Vec<Vec<f32>> {
    v.as_array().unwrap().iter().map(floats).collect()
}

fn max_abs(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (p - q).abs())
        })
        .fold(0.0, f32::max)
}

fn single(model: &SeqClsModel, ids: &[u32]) -> Vec<f32> {
    model.logits(ids, &vec![1; ids.len()], 1, Positions::FromMask).unwrap().remove(0)
}

fn dtype_label(torch: &str) -> &'static str {
    match torch {
        "float32" => "f32",
        "bfloat16" => "bf16",
        "float16" => "f16",
        other => panic!("unexpected weights_dtype {other}"),
    }
}

/// Max |Δ| of one fixture model, per check.
#[derive(Default, Debug)]
struct Deltas {
    single: f32,
    left: f32,
    right: f32,
    left_arange: f32,
    upcast: Option<f32>,
    batch_vs_single: f32,
    score_batch_vs_single: f32,
}

fn check_model(entry: &Value) -> Deltas {
    let dir = fixtures().join(entry["dir"].as_str().unwrap());
    let name = entry["dir"].as_str().unwrap();
    let model = SeqClsModel::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let tol = entry["tolerance"].as_f64().unwrap() as f32;

    // Metadata.
    assert_eq!(model.architecture(), entry["architecture"].as_str().unwrap(), "{name}");
    assert_eq!(
        model.weights_dtype(),
        dtype_label(entry["weights_dtype"].as_str().unwrap()),
        "{name}"
    );
    assert_eq!(model.num_labels(), entry["num_labels"].as_u64().unwrap() as usize, "{name}");
    assert_eq!(model.pad_token_id(), entry["pad_token_id"].as_u64().map(|x| x as u32), "{name}");
    assert_eq!(model.bos_token_id(), entry["bos_token_id"].as_u64().map(|x| x as u32), "{name}");
    let eos: Vec<u32> = match &entry["eos_token_id"] {
        Value::Array(a) => a.iter().map(|x| x.as_u64().unwrap() as u32).collect(),
        Value::Null => vec![],
        v => vec![v.as_u64().unwrap() as u32],
    };
    assert_eq!(model.eos_token_ids(), eos.as_slice(), "{name}");
    // tools/make_seqcls_fixtures.py writes max_position_embeddings 512 into every config.
    assert_eq!(model.max_position_embeddings(), 512, "{name}");
    assert!(model.unused_tensors().is_empty(), "{name}: {:?}", model.unused_tensors());

    let mut d = Deltas::default();

    // Singles.
    let singles: Vec<Vec<u32>> =
        entry["single"].as_array().unwrap().iter().map(|s| ids_of(&s["input_ids"])).collect();
    let ours: Vec<Vec<f32>> = singles.iter().map(|ids| single(&model, ids)).collect();
    let want: Vec<Vec<f32>> =
        entry["single"].as_array().unwrap().iter().map(|s| floats(&s["logits"])).collect();
    for (s, ids) in entry["single"].as_array().unwrap().iter().zip(&singles) {
        let p = pooled_index(ids, &vec![1; ids.len()], model.pad_token_id());
        assert_eq!(p as u64, s["pooled_index"].as_u64().unwrap(), "{name}: pooled index");
    }
    d.single = max_abs(&ours, &want);

    // Batches, fed exactly as transformers saw them.
    let mut batch_logits = Vec::new();
    for b in entry["batches"].as_array().unwrap() {
        let ids: Vec<Vec<u32>> = b["input_ids"].as_array().unwrap().iter().map(ids_of).collect();
        let mask: Vec<Vec<u32>> =
            b["attention_mask"].as_array().unwrap().iter().map(ids_of).collect();
        let (n, t) = (ids.len(), ids[0].len());
        let ids_t = Tensor::from_vec(ids.concat(), (n, t), &Device::Cpu).unwrap();
        let mask_t = Tensor::from_vec(mask.concat(), (n, t), &Device::Cpu).unwrap();
        let got = model.forward(&ids_t, &mask_t).unwrap().to_vec2::<f32>().unwrap();
        let arange = model
            .forward_with(&ids_t, &mask_t, Positions::Arange)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        let want = rows(&b["logits"]);
        let delta = max_abs(&got, &want);
        let conv: Vec<usize> = b["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as usize)
            .collect();
        let alone: Vec<Vec<f32>> = conv.iter().map(|&i| ours[i].clone()).collect();
        d.batch_vs_single = d.batch_vs_single.max(max_abs(&got, &alone));
        match b["padding_side"].as_str().unwrap() {
            "left" => {
                d.left = d.left.max(delta);
                d.left_arange = d.left_arange.max(max_abs(&arange, &want));
            }
            "right" => {
                d.right = d.right.max(delta);
                // Right padding: both position rules give the same positions.
                assert_eq!(got, arange, "{name}: right padding, FromMask vs Arange");
            }
            side => panic!("padding side {side}"),
        }
        batch_logits.push(got);
    }
    for (what, v) in [
        ("single", d.single),
        ("left", d.left),
        ("right", d.right),
        ("left, arange positions", d.left_arange),
    ] {
        assert!(v <= tol, "{name}: {what} max |Δ| {v} > tolerance {tol}");
    }

    // The same low-precision weights computed by torch in f32.
    if let Some(up) = entry.get("upcast_f32") {
        let utol = up["tolerance"].as_f64().unwrap() as f32;
        let mut u = max_abs(&ours, &rows(&up["single_logits"]));
        for (got, want) in batch_logits.iter().zip(up["batches_logits"].as_array().unwrap()) {
            u = u.max(max_abs(got, &rows(want)));
        }
        assert!(u <= utol, "{name}: upcast f32 max |Δ| {u} > {utol}");
        d.upcast = Some(u);
    }

    // score_batch (right-padded internally) == each sequence alone.
    let batched = model.score_batch(&singles).unwrap();
    d.score_batch_vs_single = max_abs(&batched, &ours);
    assert!(
        d.score_batch_vs_single <= 1e-5,
        "{name}: score_batch vs single {}",
        d.score_batch_vs_single
    );
    assert!(
        d.batch_vs_single <= 1e-5,
        "{name}: fixture batches vs our singles {}",
        d.batch_vs_single
    );
    d
}

#[test]
fn parity_with_transformers_on_every_fixture_model() {
    let e = expected();
    let models = e["models"].as_array().unwrap();
    assert!(models.len() >= 13, "expected.json lists {} models", models.len());
    println!(
        "{:<15} {:>6} {:>10} {:>10} {:>10} {:>12} {:>10} {:>12} {:>12}",
        "model",
        "tol",
        "single",
        "left",
        "right",
        "left-arange",
        "upcast32",
        "batch=single",
        "score_batch"
    );
    for m in models {
        let d = check_model(m);
        println!(
            "{:<15} {:>6} {:>10.3e} {:>10.3e} {:>10.3e} {:>12.3e} {:>10} {:>12.3e} {:>12.3e}",
            m["dir"].as_str().unwrap(),
            m["tolerance"].as_f64().unwrap(),
            d.single,
            d.left,
            d.right,
            d.left_arange,
            d.upcast.map_or("-".to_string(), |u| format!("{u:.3e}")),
            d.batch_vs_single,
            d.score_batch_vs_single,
        );
    }
}

#[test]
fn two_label_head_returns_two_logits_and_row_zero_is_qwen2s() {
    let two = SeqClsModel::load(&fixtures().join("qwen2-2labels")).unwrap();
    let one = SeqClsModel::load(&fixtures().join("qwen2-f32")).unwrap();
    assert_eq!(two.num_labels(), 2);
    assert_eq!(two.label_names(), ["LABEL_0", "LABEL_1"]);
    let e = expected();
    for s in e["models"].as_array().unwrap().iter().find(|m| m["dir"] == "qwen2-2labels").unwrap()
        ["single"]
        .as_array()
        .unwrap()
    {
        let ids = ids_of(&s["input_ids"]);
        let l2 = single(&two, &ids);
        assert_eq!(l2.len(), 2);
        let l1 = single(&one, &ids);
        assert!((l2[0] - l1[0]).abs() <= 1e-6, "{l2:?} vs {l1:?}");
    }
}

#[test]
fn sharded_checkpoint_equals_single_file_and_hashes_shards() {
    let sharded = SeqClsModel::load(&fixtures().join("qwen2-sharded")).unwrap();
    let plain = SeqClsModel::load(&fixtures().join("qwen2-f32")).unwrap();
    assert_eq!(sharded.weight_files().len(), 3);
    assert_eq!(sharded.param_count(), plain.param_count());
    assert_eq!(sharded.param_count(), 35136); // the index's metadata.total_parameters
    let ids: Vec<u32> = (10..60).collect();
    assert_eq!(single(&sharded, &ids), single(&plain, &ids));
    // Single file: the plain sha256 of the file.
    let bytes = std::fs::read(fixtures().join("qwen2-f32/model.safetensors")).unwrap();
    assert_eq!(plain.weights_sha256(), hex::encode(Sha256::digest(&bytes)));
    // Shards: name, NUL, length (u64 LE), bytes, in file-name order.
    let mut h = Sha256::new();
    for f in sharded.weight_files() {
        let b = std::fs::read(f).unwrap();
        h.update(f.file_name().unwrap().to_str().unwrap().as_bytes());
        h.update([0u8]);
        h.update((b.len() as u64).to_le_bytes());
        h.update(&b);
    }
    assert_eq!(sharded.weights_sha256(), hex::encode(h.finalize()));
}

#[test]
fn missing_shard_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixtures().join("qwen2-sharded");
    for entry in std::fs::read_dir(&src).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if name != "model-00002-of-00003.safetensors" {
            std::fs::copy(&p, tmp.path().join(&name)).unwrap();
        }
    }
    let err = SeqClsModel::load(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("model-00002-of-00003.safetensors") && err.contains("missing"), "{err}");
    println!("missing shard: {err}");
}

#[test]
fn unsupported_architecture_error_lists_supported_ones() {
    let err = SeqClsModel::load(&fixtures().join("unsupported")).unwrap_err().to_string();
    assert!(err.contains("config.json"), "{err}");
    assert!(err.contains("GPT2ForSequenceClassification"), "{err}");
    for s in prbench_rm::seqcls::Architecture::SUPPORTED {
        assert!(err.contains(s), "{err}");
    }
    println!("unsupported: {err}");
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let m = SeqClsModel::load(&fixtures().join("qwen2-f32")).unwrap();
    assert!(m
        .score_batch(&[vec![1, 2], vec![]])
        .unwrap_err()
        .to_string()
        .contains("sequence 1 is empty"));
    assert!(m
        .score_batch(&[vec![1, 100_000]])
        .unwrap_err()
        .to_string()
        .contains("outside the vocabulary"));
    let long: Vec<u32> = (0..513).map(|i| i % 500).collect();
    assert!(matches!(
        m.score_batch(&[long]),
        Err(prbench_models::ModelError::ContextOverflow { .. })
    ));
    assert!(m.score_batch(&[]).unwrap().is_empty());
}

// ------------------------------------------------------------------------------------------------
// Random-weights Qwen2-shaped models (no fixture needed).
// ------------------------------------------------------------------------------------------------

/// Shape of a random Qwen2-style model.
struct Shape {
    vocab: usize,
    hidden: usize,
    layers: usize,
    heads: usize,
    kv_heads: usize,
    inter: usize,
}

/// Writes `config.json` + `model.safetensors` of a Qwen2ForSequenceClassification with uniform
/// random weights (seeded) into `dir`, stored in `dtype`.
fn write_random_qwen2(dir: &Path, s: &Shape, dtype: DType, seed: u64) {
    let head_dim = s.hidden / s.heads;
    let config = json!({
        "architectures": ["Qwen2ForSequenceClassification"],
        "hidden_size": s.hidden, "intermediate_size": s.inter, "num_hidden_layers": s.layers,
        "num_attention_heads": s.heads, "num_key_value_heads": s.kv_heads, "vocab_size": s.vocab,
        "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "hidden_act": "silu",
        "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
        "use_sliding_window": false, "sliding_window": null,
        "id2label": {"0": "LABEL_0"}, "pad_token_id": 0, "eos_token_id": 1, "bos_token_id": null,
    });
    std::fs::write(dir.join("config.json"), serde_json::to_string_pretty(&config).unwrap())
        .unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut tensors: HashMap<String, Tensor> = HashMap::new();
    let mut add = |name: String, shape: &[usize], centre: f32, scale: f32| {
        let n: usize = shape.iter().product();
        let v: Vec<f32> =
            (0..n).map(|_| centre + scale * (rng.random::<f32>() * 2.0 - 1.0)).collect();
        let t = Tensor::from_vec(v, shape, &Device::Cpu).unwrap().to_dtype(dtype).unwrap();
        tensors.insert(name, t);
    };
    let w = |fan_in: usize| (3.0 / fan_in as f32).sqrt();
    add("model.embed_tokens.weight".into(), &[s.vocab, s.hidden], 0.0, 1.0);
    for i in 0..s.layers {
        let p = format!("model.layers.{i}");
        let (qd, kvd) = (s.heads * head_dim, s.kv_heads * head_dim);
        add(format!("{p}.self_attn.q_proj.weight"), &[qd, s.hidden], 0.0, w(s.hidden));
        add(format!("{p}.self_attn.q_proj.bias"), &[qd], 0.0, 0.1);
        add(format!("{p}.self_attn.k_proj.weight"), &[kvd, s.hidden], 0.0, w(s.hidden));
        add(format!("{p}.self_attn.k_proj.bias"), &[kvd], 0.0, 0.1);
        add(format!("{p}.self_attn.v_proj.weight"), &[kvd, s.hidden], 0.0, w(s.hidden));
        add(format!("{p}.self_attn.v_proj.bias"), &[kvd], 0.0, 0.1);
        add(format!("{p}.self_attn.o_proj.weight"), &[s.hidden, qd], 0.0, w(qd));
        add(format!("{p}.mlp.gate_proj.weight"), &[s.inter, s.hidden], 0.0, w(s.hidden));
        add(format!("{p}.mlp.up_proj.weight"), &[s.inter, s.hidden], 0.0, w(s.hidden));
        add(format!("{p}.mlp.down_proj.weight"), &[s.hidden, s.inter], 0.0, w(s.inter));
        add(format!("{p}.input_layernorm.weight"), &[s.hidden], 1.0, 0.1);
        add(format!("{p}.post_attention_layernorm.weight"), &[s.hidden], 1.0, 0.1);
    }
    add("model.norm.weight".into(), &[s.hidden], 1.0, 0.1);
    add("score.weight".into(), &[1, s.hidden], 0.0, w(s.hidden));
    candle_core::safetensors::save(&tensors, dir.join("model.safetensors")).unwrap();
}

fn random_seqs(n: usize, lens: impl Fn(usize) -> usize, vocab: usize, seed: u64) -> Vec<Vec<u32>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    // Ids from 2.. so that no pad (0) or eos (1) token sits inside a sequence.
    (0..n).map(|i| (0..lens(i)).map(|_| rng.random_range(2..vocab as u32)).collect()).collect()
}

#[test]
fn random_qwen2_batch_equals_single_and_left_padding_equals_right() {
    let tmp = tempfile::tempdir().unwrap();
    let shape = Shape { vocab: 1000, hidden: 128, layers: 3, heads: 4, kv_heads: 2, inter: 256 };
    write_random_qwen2(tmp.path(), &shape, DType::BF16, 7);
    let m = SeqClsModel::load(tmp.path()).unwrap();
    assert_eq!(m.weights_dtype(), "bf16");
    let seqs = random_seqs(8, |i| [1, 7, 33, 64, 100, 2, 65, 90][i], shape.vocab, 11);
    let alone: Vec<Vec<f32>> = seqs.iter().map(|s| single(&m, s)).collect();
    let batched = m.score_batch(&seqs).unwrap();
    let right = max_abs(&batched, &alone);
    // Left padding through the tensor API.
    let t = seqs.iter().map(Vec::len).max().unwrap();
    let (mut ids, mut mask) = (Vec::new(), Vec::new());
    for s in &seqs {
        ids.extend(std::iter::repeat_n(0u32, t - s.len()).chain(s.iter().copied()));
        mask.extend(std::iter::repeat_n(0u32, t - s.len()).chain(std::iter::repeat_n(1, s.len())));
    }
    let left = m
        .forward(
            &Tensor::from_vec(ids.clone(), (8, t), &Device::Cpu).unwrap(),
            &Tensor::from_vec(mask.clone(), (8, t), &Device::Cpu).unwrap(),
        )
        .unwrap()
        .to_vec2::<f32>()
        .unwrap();
    let left_d = max_abs(&left, &alone);
    let left_arange = m.logits(&ids, &mask, 8, Positions::Arange).unwrap();
    let left_arange_d = max_abs(&left_arange, &alone);
    println!("random qwen2 (128 hidden, 3 layers): batch vs single max |Δ|: right {right:.3e}, left {left_d:.3e}, left with arange positions {left_arange_d:.3e}");
    assert!(right <= 1e-5 && left_d <= 1e-5, "right {right}, left {left_d}");
    assert!(left_arange_d <= 1e-4, "left arange {left_arange_d}");
}

#[test]
fn attention_blocks_and_sliding_window_do_not_change_scores() {
    let tmp = tempfile::tempdir().unwrap();
    let shape = Shape { vocab: 600, hidden: 64, layers: 3, heads: 4, kv_heads: 2, inter: 128 };
    write_random_qwen2(tmp.path(), &shape, DType::F32, 21);
    // Sliding window on layers 1 and 2 (Qwen2: use_sliding_window, max_window_layers).
    let cfg_path = tmp.path().join("config.json");
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(&cfg_path).unwrap()).unwrap();
    cfg["use_sliding_window"] = json!(true);
    cfg["sliding_window"] = json!(70);
    cfg["max_window_layers"] = json!(1);
    std::fs::write(&cfg_path, cfg.to_string()).unwrap();
    let mut m = SeqClsModel::load(tmp.path()).unwrap();
    let seqs = random_seqs(3, |i| [300, 129, 260][i], shape.vocab, 4);
    let reference = m.score_batch(&seqs).unwrap(); // default blocks of 64 queries
    for block in [1, 16, 100, 1 << 20] {
        m.set_query_block(block);
        let got = m.score_batch(&seqs).unwrap();
        let d = max_abs(&got, &reference);
        assert!(d <= 1e-6, "query block {block}: max |Δ| {d}");
    }
    let alone: Vec<Vec<f32>> = seqs.iter().map(|s| single(&m, s)).collect();
    assert!(max_abs(&alone, &reference) <= 1e-5);
}

fn bench(label: &str, dir: &Path, vocab: usize, batch: usize, len: usize, iters: usize) {
    let m = SeqClsModel::load(dir).unwrap();
    let seqs = random_seqs(batch, |_| len, vocab, 5);
    m.score_batch(&seqs).unwrap(); // warm-up (RoPE table, allocator)
    let mut times: Vec<f64> = (0..iters)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(m.score_batch(&seqs).unwrap());
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let (best, median) = (times[0], times[iters / 2]);
    let tokens = (batch * len) as f64;
    println!(
        "{label}: {batch}x{len} tokens; best {:.1} ms = {:.0} tokens/s, median {:.1} ms = {:.0} tokens/s ({} params, {} threads)",
        best * 1e3,
        tokens / best,
        median * 1e3,
        tokens / median,
        m.param_count(),
        candle_core::utils::get_num_threads()
    );
}

#[test]
#[ignore = "timing, not a check: run with --ignored --nocapture"]
fn throughput_f32_forward() {
    let tmp = tempfile::tempdir().unwrap();
    let tiny = Shape { vocab: 512, hidden: 32, layers: 2, heads: 4, kv_heads: 2, inter: 64 };
    write_random_qwen2(tmp.path(), &tiny, DType::F32, 2);
    bench(
        "tiny qwen2 (hidden 32, 2 layers, the fixtures' shape)",
        tmp.path(),
        tiny.vocab,
        8,
        256,
        20,
    );
    let tmp = tempfile::tempdir().unwrap();
    let shape = Shape { vocab: 8192, hidden: 384, layers: 6, heads: 6, kv_heads: 2, inter: 1536 };
    write_random_qwen2(tmp.path(), &shape, DType::F32, 3);
    bench(
        "random qwen2 (hidden 384, 6 layers, 6/2 heads, inter 1536)",
        tmp.path(),
        shape.vocab,
        8,
        256,
        10,
    );
}
