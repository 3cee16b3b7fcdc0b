//! The MiniLM embedder against transformers (fixtures from tools/make_minilm_fixture.py and
//! tools/make_minilm_ids_fixture.py, every dimension of the encoder to 1e-5), batch
//! independence, truncation accounting and overflow errors. Skips (with a printed reason) when
//! the model directory from scripts/fetch-models.sh is absent.

use std::path::PathBuf;

use prbench_models::ModelError;
use prbench_rm::embed::{default_embedder_dir, EmbedInput, EmbedderOptions, MiniLmEmbedder};
use prbench_rm::encoder::{BertEncoder, Packed};
use serde_json::Value;

fn model_dir() -> Option<PathBuf> {
    let dir = default_embedder_dir();
    if dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file() {
        Some(dir)
    } else {
        prbench_testkit::unavailable(format!(
            "MiniLM not found at {} (run scripts/setup.sh --tests)",
            dir.display()
        ));
        None
    }
}

fn fixture() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilm.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn f32s(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn matches_transformers_mean_pooling() {
    let Some(dir) = model_dir() else { return };
    let fx = fixture();
    let emb = MiniLmEmbedder::load(&dir).unwrap();
    assert_eq!(emb.weights_sha256(), fx["model_safetensors_sha256"].as_str().unwrap());
    assert_eq!((emb.dim(), emb.max_length()), (384, 512));
    let texts: Vec<EmbedInput> = fx["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| EmbedInput::Text(t.as_str().unwrap().into()))
        .collect();
    let (vecs, stats) = emb.embed(&texts).unwrap();
    let mut worst = 0f32;
    for (i, v) in vecs.iter().enumerate() {
        let norm = cos(v, v).sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        let want = f32s(&fx["first8"][i]);
        for (d, (a, b)) in v.iter().zip(&want).enumerate() {
            worst = worst.max((a - b).abs());
            assert!((a - b).abs() <= 1e-4, "text {i} dim {d}: candle {a} vs transformers {b}");
        }
        assert_eq!(stats[i].input_tokens as u64, fx["input_tokens"][i].as_u64().unwrap());
        assert_eq!(stats[i].truncated_tokens, 0);
        for j in 0..vecs.len() {
            let want = fx["cosine"][i][j].as_f64().unwrap() as f32;
            let got = cos(v, &vecs[j]);
            worst = worst.max((got - want).abs());
            assert!(
                (got - want).abs() <= 1e-4,
                "cosine({i},{j}): candle {got} vs transformers {want}"
            );
        }
    }

    // A pair cut from the left of the context to 32 tokens, as transformers does with
    // truncation="only_first", truncation_side="left".
    let pair = &fx["pair"];
    let max = pair["max_length"].as_u64().unwrap() as usize;
    let short = MiniLmEmbedder::load_with(
        &dir,
        &EmbedderOptions { max_length: Some(max), batch_size: None },
    )
    .unwrap();
    let input = EmbedInput::Pair {
        context: pair["context"].as_str().unwrap().into(),
        text: pair["text"].as_str().unwrap().into(),
    };
    let (v, s) = short.embed(&[input]).unwrap();
    assert_eq!(s[0].input_tokens as u64, pair["input_tokens"].as_u64().unwrap());
    assert_eq!(s[0].truncated_tokens as u64, pair["truncated_tokens"].as_u64().unwrap());
    for (d, (a, b)) in v[0].iter().zip(f32s(&pair["first8"])).enumerate() {
        worst = worst.max((a - b).abs());
        assert!((a - b).abs() <= 1e-4, "pair dim {d}: candle {a} vs transformers {b}");
    }
    eprintln!("largest |candle - transformers| over the fixture: {worst:.2e}");
}

#[test]
fn batch_size_does_not_change_embeddings() {
    let Some(dir) = model_dir() else { return };
    let mut inputs = Vec::new();
    for i in 0..11 {
        let words = "lorem ipsum dolor sit amet ".repeat(1 + 3 * i);
        if i % 2 == 0 {
            inputs
                .push(EmbedInput::Text(format!("text {i}: {}", "lorem ipsum ".repeat(1 + 2 * i))));
        } else {
            inputs.push(EmbedInput::Pair {
                context: format!("context {i} {words}"),
                text: format!("answer {i}"),
            });
        }
    }
    let run = |batch: usize| {
        let e = MiniLmEmbedder::load_with(
            &dir,
            &EmbedderOptions { max_length: Some(128), batch_size: Some(batch) },
        )
        .unwrap();
        e.embed(&inputs).unwrap()
    };
    let (one, s1) = run(1);
    assert!(s1.iter().any(|s| s.truncated_tokens > 0), "some pair should be cut at 128 tokens");
    for batch in [3, 16] {
        let (other, s) = run(batch);
        assert_eq!(s, s1);
        for (i, (a, b)) in one.iter().zip(&other).enumerate() {
            let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
            assert!(worst <= 1e-6, "input {i}: batch 1 vs {batch} differ by {worst}");
        }
    }
}

#[test]
fn the_answer_is_never_cut() {
    let Some(dir) = model_dir() else { return };
    let e = MiniLmEmbedder::load_with(
        &dir,
        &EmbedderOptions { max_length: Some(16), batch_size: None },
    )
    .unwrap();
    // Fits once the context is gone: all context tokens cut, counted.
    let (_, s) = e
        .embed(&[EmbedInput::Pair {
            context: "one two three four five six seven eight nine ten eleven".into(),
            text: "alpha beta gamma delta".into(),
        }])
        .unwrap();
    assert_eq!(s[0].input_tokens, 16);
    assert!(s[0].truncated_tokens > 0);
    let long_answer = "word ".repeat(20);
    let err = e
        .embed(&[
            EmbedInput::Text("short".into()),
            EmbedInput::Pair { context: "ctx".into(), text: long_answer.clone() },
        ])
        .unwrap_err();
    match &err {
        ModelError::ContextOverflow { tokens, n_ctx, reason } => {
            assert_eq!((*tokens, *n_ctx), (23, 16), "{err}");
            assert!(reason.contains("input 1") && reason.contains("20 tokens"), "{reason}");
        }
        other => panic!("expected a context overflow, got {other}"),
    }
    let err = e.embed(&[EmbedInput::Text(long_answer)]).unwrap_err().to_string();
    assert!(err.contains("input 0") && err.contains("no context to cut"), "{err}");
    // A literal special-token string in untrusted text stays plain text (more than one token).
    let (_, s) = e.embed(&[EmbedInput::Text("[SEP]".into())]).unwrap();
    assert!(s[0].input_tokens > 3, "{s:?}");
}

#[test]
fn ids_path_agrees_with_text_path() {
    let Some(dir) = model_dir() else { return };
    let e = MiniLmEmbedder::load(&dir).unwrap();
    // "[CLS] hello world [SEP]" in the MiniLM vocabulary: 101, 7592, 2088, 102.
    let (v, s) = e.embed(&[EmbedInput::Text("hello world".into())]).unwrap();
    assert_eq!(s[0].input_tokens, 4);
    let w = e.embed_ids(&[vec![101, 7592, 2088, 102], vec![101, 102]]).unwrap();
    let worst = v[0].iter().zip(&w[0]).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(worst <= 1e-6, "{worst}");
    assert!(e.embed_ids(&[vec![]]).is_err());
    assert!(e.embed_ids(&[vec![1000; 513]]).is_err());
}

fn ids_fixture() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilm_ids.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn u32s(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max)
}

/// The encoder against transformers on every dimension (tools/make_minilm_ids_fixture.py: one
/// right-padded batch of 1- to 300-token sequences, some with a type-1 segment), packed in
/// batches of 1, 3 and all 7; and a batch against batch size 1.
#[test]
fn encoder_matches_transformers_on_every_dimension() {
    let Some(dir) = model_dir() else { return };
    let fx = ids_fixture();
    let enc = BertEncoder::load(&dir).unwrap();
    assert_eq!(enc.weights_sha256(), fx["model_safetensors_sha256"].as_str().unwrap());
    let seqs: Vec<(Vec<u32>, Vec<u32>)> = fx["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (u32s(&s["ids"]), u32s(&s["type_ids"])))
        .collect();
    let want_mean: Vec<Vec<f32>> =
        fx["sequences"].as_array().unwrap().iter().map(|s| f32s(&s["mean"])).collect();
    let want_unit: Vec<Vec<f32>> =
        fx["sequences"].as_array().unwrap().iter().map(|s| f32s(&s["normalized"])).collect();
    assert!(seqs.iter().any(|(_, t)| t.contains(&1)) && seqs.iter().any(|(i, _)| i.len() == 1));
    let run = |batch: usize, normalize: bool| -> Vec<Vec<f32>> {
        let mut out = Vec::new();
        for chunk in seqs.chunks(batch) {
            let mut p = Packed::new();
            for (ids, types) in chunk {
                p.push(ids, types).unwrap();
            }
            out.extend(enc.mean_pooled(&p, normalize).unwrap());
        }
        out
    };
    let single = run(1, false);
    let mut worst = 0f32;
    for batch in [1, 3, seqs.len()] {
        for (normalize, want) in [(false, &want_mean), (true, &want_unit)] {
            let got = run(batch, normalize);
            for (i, (g, w)) in got.iter().zip(want.iter()).enumerate() {
                assert_eq!(g.len(), 384);
                let d = max_abs(g, w);
                worst = worst.max(d);
                assert!(
                    d <= 1e-5,
                    "batch {batch}, normalize {normalize}, sequence {i} ({} tokens): max |Δ| {d:e}",
                    seqs[i].0.len()
                );
            }
            if !normalize {
                for (i, (g, s)) in got.iter().zip(&single).enumerate() {
                    let d = max_abs(g, s);
                    assert!(d <= 1e-6, "sequence {i}: batch {batch} vs batch 1 differ by {d:e}");
                }
            }
        }
    }
    eprintln!("largest |prbench - transformers| over every dimension: {worst:.2e}");

    // The embedder's id path (token type 0) agrees with the encoder on the type-0 sequences.
    let e =
        MiniLmEmbedder::load_with(&dir, &EmbedderOptions { max_length: None, batch_size: Some(2) })
            .unwrap();
    let plain: Vec<usize> = (0..seqs.len()).filter(|&i| !seqs[i].1.contains(&1)).collect();
    let got = e.embed_ids(&plain.iter().map(|&i| seqs[i].0.clone()).collect::<Vec<_>>()).unwrap();
    for (g, &i) in got.iter().zip(&plain) {
        assert!(max_abs(g, &want_unit[i]) <= 1e-5, "embed_ids sequence {i}");
    }
}

#[test]
fn encoder_refuses_ids_outside_its_tables() {
    let Some(dir) = model_dir() else { return };
    let enc = BertEncoder::load(&dir).unwrap();
    let mut p = Packed::new();
    p.push(&[101, 30522], &[0, 0]).unwrap();
    let e = enc.forward(&p).unwrap_err().to_string();
    assert!(e.contains("30522") && e.contains("vocabulary"), "{e}");
    let mut p = Packed::new();
    p.push(&[101, 102], &[0, 2]).unwrap();
    assert!(enc.forward(&p).unwrap_err().to_string().contains("token type 2"));
    let mut p = Packed::new();
    p.push(&vec![1000; 513], &vec![0; 513]).unwrap();
    assert!(matches!(
        enc.forward(&p),
        Err(ModelError::ContextOverflow { tokens: 513, n_ctx: 512, .. })
    ));
    assert!(Packed::new().push(&[], &[]).is_err());
    assert!(Packed::new().push(&[1, 2], &[0]).is_err());
}
