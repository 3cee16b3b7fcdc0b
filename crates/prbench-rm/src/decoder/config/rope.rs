//! RoPE base and scaling from `config.json` (`rope_scaling`, `rope_parameters`, `rope_theta`).

use prbench_models::ModelError;
use serde_json::Value;

use super::{Keys, RopeScaling};

/// RoPE base and scaling, as `RotaryEmbeddingConfigMixin.convert_rope_params_to_dict` and
/// `standardize_rope_params` (transformers `modeling_rope_utils.py`) resolve them: the dict is
/// `rope_scaling` (pre-v5 configs) or else `rope_parameters` (v5); `rope_theta` comes from the
/// dict, else the top-level key, else 10000; the type from `rope_type`, else `type`, else
/// `default`.
pub(super) fn rope(
    k: &Keys<'_>,
    max_position_embeddings: usize,
) -> Result<(f64, RopeScaling), ModelError> {
    let key = if k.get("rope_scaling").is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty()))
    {
        "rope_scaling"
    } else {
        "rope_parameters"
    };
    let empty = serde_json::Map::new();
    let params = match k.get(key) {
        None => &empty,
        Some(Value::Object(o)) => o,
        Some(v) => return Err(k.err(key, format!("expected an object, found `{v}`"))),
    };
    if params.contains_key("full_attention") || params.contains_key("sliding_attention") {
        return Err(k.err(key, "RoPE parameters per layer type are not supported"));
    }
    let p = Keys { v: params, path: k.path };
    let num = |name: &str| -> Result<Option<f64>, ModelError> {
        p.opt_f64(name).map_err(|_| k.err(&format!("{key}.{name}"), "expected a number"))
    };
    let rope_theta = match num("rope_theta")? {
        Some(t) => t,
        None => k.opt_f64("rope_theta")?.unwrap_or(10_000.0),
    };
    if rope_theta <= 0.0 {
        return Err(k.err("rope_theta", format!("{rope_theta} must be positive")));
    }
    let partial = match num("partial_rotary_factor")? {
        Some(f) => Some(f),
        None => k.opt_f64("partial_rotary_factor")?,
    };
    if partial.is_some_and(|f| f != 1.0) {
        return Err(k.err(
            "partial_rotary_factor",
            format!("{} is not supported (only 1.0)", partial.unwrap_or(1.0)),
        ));
    }
    let rope_type = match params.get("rope_type").or_else(|| params.get("type")) {
        None | Some(Value::Null) => "default",
        Some(Value::String(s)) => s.as_str(),
        Some(v) => {
            return Err(
                k.err(&format!("{key}.rope_type"), format!("expected a string, found `{v}`"))
            )
        }
    };
    let required = |name: &str| -> Result<f64, ModelError> {
        num(name)?.ok_or_else(|| {
            k.err(
                &format!("{key}.{name}"),
                format!("missing (required for rope_type `{rope_type}`)"),
            )
        })
    };
    let scaling = match rope_type {
        "default" => RopeScaling::Default,
        "linear" => RopeScaling::Linear { factor: required("factor")? },
        "llama3" => RopeScaling::Llama3 {
            factor: required("factor")?,
            low_freq_factor: required("low_freq_factor")?,
            high_freq_factor: required("high_freq_factor")?,
            original_max_position_embeddings: num("original_max_position_embeddings")?
                .unwrap_or(max_position_embeddings as f64),
        },
        other => {
            return Err(k.err(
                &format!("{key}.rope_type"),
                format!(
                    "RoPE type `{other}` is not supported (supported: default, linear, llama3)"
                ),
            ))
        }
    };
    if let RopeScaling::Llama3 { low_freq_factor, high_freq_factor, .. } = scaling {
        if high_freq_factor == low_freq_factor {
            return Err(
                k.err(&format!("{key}.high_freq_factor"), "must differ from low_freq_factor")
            );
        }
    }
    Ok((rope_theta, scaling))
}
