//! Where the pinned local model files live and their file names (`scripts/setup.sh` puts them
//! there): one rule for every engine and test that looks for a model.

use std::path::PathBuf;

/// File name of the default local judge / generator model, fetched by `scripts/setup.sh`.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// File name of the default judge of `prbench eval`: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M
/// fetched by `scripts/setup.sh`. Large enough to show the
/// personalization gap between `none` and `oracle`; the tests use [`DEFAULT_MODEL_FILE`].
pub const DEFAULT_JUDGE_FILE: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

/// Directory of the local model files: `$PRBENCH_MODELS` if set, else
/// `~/.cache/prbench/models` (where `scripts/fetch-models.sh` puts them).
pub fn models_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PRBENCH_MODELS").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache").join("prbench").join("models")
}

/// Path of the default judge of `prbench eval`: [`models_dir`] joined with [`DEFAULT_JUDGE_FILE`].
pub fn default_judge_path() -> PathBuf {
    models_dir().join(DEFAULT_JUDGE_FILE)
}

/// Path of the default model: [`models_dir`] joined with [`DEFAULT_MODEL_FILE`].
pub fn default_model_path() -> PathBuf {
    models_dir().join(DEFAULT_MODEL_FILE)
}
