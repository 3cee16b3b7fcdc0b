//! Tests of `config.json` resolution: defaults per architecture, RoPE, layer patterns, labels.

use super::*;
use serde_json::json;

fn base(arch: &str) -> Value {
    json!({
        "architectures": [arch],
        "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2,
    })
}

fn parse(v: &Value) -> Result<DecoderConfig, ModelError> {
    DecoderConfig::from_json(v, Path::new("m/config.json"))
}

#[test]
fn unsupported_architecture_names_file_key_and_supported_list() {
    let err = parse(&base("GPT2ForSequenceClassification")).unwrap_err().to_string();
    assert!(err.contains("m/config.json"), "{err}");
    assert!(err.contains("GPT2ForSequenceClassification"), "{err}");
    for s in Architecture::SUPPORTED {
        assert!(err.contains(s), "{err}");
    }
}

#[test]
fn missing_required_key_is_named() {
    let mut v = base("LlamaForSequenceClassification");
    v.as_object_mut().unwrap().remove("intermediate_size");
    let err = parse(&v).unwrap_err().to_string();
    assert!(
        err.contains("config.json") && err.contains("intermediate_size") && err.contains("missing"),
        "{err}"
    );
}

#[test]
fn llama_defaults_and_llama3_rope_scaling() {
    let mut v = base("LlamaForSequenceClassification");
    let o = v.as_object_mut().unwrap();
    o.insert("rope_theta".into(), json!(500000.0));
    o.insert(
        "rope_scaling".into(),
        json!({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
    );
    o.insert("eos_token_id".into(), json!([128001, 128009]));
    o.insert("pad_token_id".into(), Value::Null);
    let c = parse(&v).unwrap();
    assert_eq!(c.head_dim, 16);
    assert_eq!(c.rope_theta, 500000.0);
    assert!(matches!(c.rope_scaling, RopeScaling::Llama3 { factor, .. } if factor == 8.0));
    assert_eq!(c.eos_token_ids, vec![128001, 128009]);
    assert_eq!(c.pad_token_id, None);
    assert_eq!(c.bos_token_id, Some(1));
    assert_eq!(c.num_labels, 2);
    assert_eq!(c.layer_types, vec![LayerKind::Full; 4]);
}

#[test]
fn v5_rope_parameters_and_unsupported_type() {
    let mut v = base("Qwen2ForSequenceClassification");
    v["rope_parameters"] = json!({"rope_theta": 1000000.0, "rope_type": "default"});
    let c = parse(&v).unwrap();
    assert_eq!(c.rope_theta, 1e6);
    assert!(c.qkv_bias && !c.o_bias);
    v["rope_parameters"] = json!({"rope_theta": 1000000.0, "rope_type": "yarn", "factor": 4.0});
    let err = parse(&v).unwrap_err().to_string();
    assert!(err.contains("yarn") && err.contains("rope_parameters.rope_type"), "{err}");
}

#[test]
fn layer_types_per_architecture() {
    let mut v = base("Gemma2ForSequenceClassification");
    let c = parse(&v).unwrap();
    use LayerKind::*;
    assert_eq!(c.layer_types, vec![Sliding, Full, Sliding, Full]);
    assert_eq!(c.sliding_window, Some(4096));
    assert_eq!(c.head_dim, 256);
    assert_eq!(c.attn_logit_softcapping, Some(50.0));
    assert_eq!(c.pad_token_id, Some(0));
    v["sliding_window"] = Value::Null;
    assert!(parse(&v).unwrap_err().to_string().contains("sliding_window"));

    let mut q = base("Qwen2ForSequenceClassification");
    q["sliding_window"] = json!(16);
    assert_eq!(parse(&q).unwrap().layer_types, vec![Full; 4]);
    q["use_sliding_window"] = json!(true);
    q["max_window_layers"] = json!(2);
    let c = parse(&q).unwrap();
    assert_eq!(c.layer_types, vec![Full, Full, Sliding, Sliding]);
    assert_eq!(c.sliding_window, Some(16));

    let mut m = base("MistralForSequenceClassification");
    m["sliding_window"] = json!(8);
    assert_eq!(parse(&m).unwrap().layer_types, vec![Sliding; 4]);
    m["sliding_window"] = Value::Null;
    assert_eq!(parse(&m).unwrap().layer_types, vec![Full; 4]);
}

#[test]
fn labels_from_id2label_or_num_labels() {
    let mut v = base("Qwen3ForSequenceClassification");
    v["id2label"] = json!({"0": "reward"});
    let c = parse(&v).unwrap();
    assert_eq!((c.num_labels, c.label_names.clone()), (1, vec!["reward".to_string()]));
    assert!(c.qk_norm);
    v["num_labels"] = json!(3);
    assert!(parse(&v).unwrap_err().to_string().contains("num_labels"));
    v.as_object_mut().unwrap().remove("id2label");
    assert_eq!(parse(&v).unwrap().num_labels, 3);
}
