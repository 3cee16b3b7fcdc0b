//! `hf:ORG/NAME[@REV]` for models: the files a sequence-classification reward model needs,
//! fetched through the hf-hub cache (`<cache>/models--ORG--NAME/snapshots/<commit>/…`), so the
//! model then loads from that snapshot directory like `dir:PATH`.
//!
//! Offline (`HF_HUB_OFFLINE=1`) nothing is requested; files come from the cache (see
//! `prbench_data::hub`).

use std::path::{Path, PathBuf};

use prbench_data::hub::{parse_repo, HubOptions, HubRepo, RepoKind};
use prbench_models::ModelError;
use serde_json::Value;

/// Files every model directory needs.
pub const REQUIRED_FILES: [&str; 2] = ["config.json", "tokenizer.json"];

/// Files fetched when the repo has them.
pub const OPTIONAL_FILES: [&str; 2] = ["tokenizer_config.json", "chat_template.jinja"];

/// Single-file weights.
pub const WEIGHTS: &str = "model.safetensors";

/// Index of sharded weights.
pub const WEIGHTS_INDEX: &str = "model.safetensors.index.json";

/// A model resolved from the hub: its local snapshot directory and the commit it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubModel {
    /// `<cache>/models--ORG--NAME/snapshots/<commit>`.
    pub dir: PathBuf,
    /// The snapshot's commit hash (the directory name), recorded in manifests.
    pub commit: String,
}

/// A failure of the hub client: an unusable repo id is a [`ModelError::Spec`] (its message is
/// the reason), anything else (the client cannot be built, a file cannot be fetched or is not
/// cached offline) a [`ModelError::Hub`] keeping the hub's error as its source.
pub(crate) fn hub_err(spec: &str, e: prbench_data::DataError) -> ModelError {
    match e {
        prbench_data::DataError::BadSpec { .. } => {
            ModelError::Spec { spec: spec.into(), reason: e.to_string() }
        }
        other => ModelError::hub(spec, other),
    }
}

/// Shard file names listed by a `model.safetensors.index.json` (`weight_map` values), sorted and
/// deduplicated.
///
/// # Errors
/// [`ModelError::File`] when the index is unreadable or not JSON, [`ModelError::FileReason`]
/// when it has no `weight_map` object.
pub fn shard_names(index: &Path) -> Result<Vec<String>, ModelError> {
    let text = std::fs::read_to_string(index).map_err(|e| ModelError::file(index, "", e))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| ModelError::file(index, "not valid JSON", e))?;
    let map = v
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| ModelError::file_reason(index, "no `weight_map` object"))?;
    let mut names: Vec<String> =
        map.values().filter_map(Value::as_str).map(str::to_string).collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Fetches (or, offline, finds in the cache) a model repo's config, tokenizer, chat template and
/// safetensors weights (single file, or the index and every shard it lists). `repo_spec` is the
/// part after `hf:`.
///
/// # Errors
/// [`ModelError::Spec`] for an unusable repo id; [`ModelError::Hub`] (its source naming the
/// repo, revision, file and cache directory) when a file cannot be fetched or is not cached
/// offline.
pub fn fetch_model(repo_spec: &str, opts: &HubOptions) -> Result<HubModel, ModelError> {
    let spec = format!("hf:{repo_spec}");
    let (repo, revision) = parse_repo(repo_spec, &spec).map_err(|e| hub_err(&spec, e))?;
    let hub = HubRepo::open(RepoKind::Model, &repo, revision.as_deref(), opts)
        .map_err(|e| hub_err(&spec, e))?;
    let config = hub.get(REQUIRED_FILES[0]).map_err(|e| hub_err(&spec, e))?;
    for f in &REQUIRED_FILES[1..] {
        hub.get(f).map_err(|e| hub_err(&spec, e))?;
    }
    for f in OPTIONAL_FILES {
        hub.get_optional(f).map_err(|e| hub_err(&spec, e))?;
    }
    match hub.get_optional(WEIGHTS_INDEX).map_err(|e| hub_err(&spec, e))? {
        Some(index) => {
            for shard in shard_names(&index)? {
                hub.get(&shard).map_err(|e| hub_err(&spec, e))?;
            }
        }
        None => {
            hub.get(WEIGHTS).map_err(|e| hub_err(&spec, e))?;
        }
    }
    let dir = config.parent().map(Path::to_path_buf).unwrap_or_default();
    let commit = dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(HubModel { dir, commit })
}

/// Fetches (or, offline, finds in the cache) only the chat-template files of a model repo
/// ([`OPTIONAL_FILES`]: `tokenizer_config.json`, `chat_template.jinja`, whichever it has), for
/// engines that need the template but not the weights (remote servers that take pre-rendered
/// text). `repo_spec` is the part after `hf:`. Read the template from the returned snapshot
/// directory with [`prbench_models::template_files::load_dir_template`].
///
/// # Errors
/// [`ModelError::Spec`] for an unusable repo id or a repo that has neither file;
/// [`ModelError::Hub`] when a file cannot be fetched, or offline when neither is in the cache.
pub fn fetch_chat_template(repo_spec: &str, opts: &HubOptions) -> Result<HubModel, ModelError> {
    let spec = format!("hf:{repo_spec}");
    let (repo, revision) = parse_repo(repo_spec, &spec).map_err(|e| hub_err(&spec, e))?;
    let hub = HubRepo::open(RepoKind::Model, &repo, revision.as_deref(), opts)
        .map_err(|e| hub_err(&spec, e))?;
    let mut found = None;
    for f in OPTIONAL_FILES {
        if let Some(p) = hub.get_optional(f).map_err(|e| hub_err(&spec, e))? {
            found = Some(p);
        }
    }
    let Some(path) = found else {
        if opts.offline {
            let why = format!("neither {} nor {} is in the local hub cache, and HF_HUB_OFFLINE is set so nothing was downloaded", OPTIONAL_FILES[0], OPTIONAL_FILES[1]);
            return Err(ModelError::hub(spec, why));
        }
        let reason = format!(
            "the repo has no chat template: neither {} nor {}",
            OPTIONAL_FILES[0], OPTIONAL_FILES[1]
        );
        return Err(ModelError::Spec { spec, reason });
    };
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let commit = dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(HubModel { dir, commit })
}
