//! Safetensors weights of a Hugging Face checkpoint: one `model.safetensors`, or
//! `model.safetensors.index.json` plus the shards its `weight_map` names. Tensors stored as
//! F32, BF16 or F16 are converted to f32 when read (exact: every bf16/f16 value is an f32).

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Tensor};
use prbench_models::file_hash::hash_file_into;
use prbench_models::ModelError;
use sha2::{Digest, Sha256};

/// Single-file weights name (transformers `SAFE_WEIGHTS_NAME`).
pub const SINGLE_FILE: &str = "model.safetensors";
/// Sharded weights index name (transformers `SAFE_WEIGHTS_INDEX_NAME`).
pub const INDEX_FILE: &str = "model.safetensors.index.json";

/// The weight files of a checkpoint directory, memory-mapped, with the bookkeeping the model
/// reports: stored dtypes, parameter count and content hash.
pub struct Weights {
    files: Vec<PathBuf>,
    sharded: bool,
    st: MmapedSafetensors,
    dtypes: BTreeSet<&'static str>,
    params: usize,
    sha256: String,
    loaded: HashSet<String>,
}

impl std::fmt::Debug for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Weights")
            .field("files", &self.files)
            .field("dtypes", &self.dtypes)
            .finish_non_exhaustive()
    }
}

fn file_err(path: &Path, reason: impl Into<String>) -> ModelError {
    ModelError::file_reason(path, reason)
}

/// The safetensors files of `dir`, in hashing order (see [`Weights::sha256`]), and whether
/// they are shards.
///
/// # Errors
/// [`ModelError::FileReason`] when neither `model.safetensors` nor
/// `model.safetensors.index.json` exists, the index lacks `weight_map`, or a shard it lists is
/// missing (the error names that shard); [`ModelError::File`] when the index is unreadable or
/// not valid JSON.
pub fn locate(dir: &Path) -> Result<(Vec<PathBuf>, bool), ModelError> {
    let single = dir.join(SINGLE_FILE);
    if single.is_file() {
        return Ok((vec![single], false));
    }
    let index = dir.join(INDEX_FILE);
    if !index.is_file() {
        return Err(file_err(
            &single,
            format!("no `{SINGLE_FILE}` or `{INDEX_FILE}` in `{}`", dir.display()),
        ));
    }
    let text = std::fs::read_to_string(&index).map_err(|e| ModelError::file(&index, "", e))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ModelError::file(&index, "not valid JSON", e))?;
    let map = v
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| file_err(&index, "no `weight_map` object"))?;
    let mut names = BTreeSet::new();
    for (tensor, file) in map {
        let file = file
            .as_str()
            .ok_or_else(|| file_err(&index, format!("`weight_map.{tensor}` is not a file name")))?;
        names.insert(file.to_string());
    }
    if names.is_empty() {
        return Err(file_err(&index, "`weight_map` is empty"));
    }
    let mut files = Vec::with_capacity(names.len());
    for name in names {
        let path = dir.join(&name);
        if !path.is_file() {
            return Err(file_err(
                &path,
                format!("shard `{name}` listed in `{INDEX_FILE}` is missing"),
            ));
        }
        files.push(path);
    }
    Ok((files, true))
}

/// Lower-case name of a stored dtype (`f32`, `bf16`, `f16`).
fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "f32",
        DType::BF16 => "bf16",
        DType::F16 => "f16",
        DType::F64 => "f64",
        DType::U8 => "u8",
        DType::U32 => "u32",
        DType::I64 => "i64",
        _ => "other",
    }
}

impl Weights {
    /// Locates (see [`locate`]), hashes and memory-maps the weights of `dir`.
    ///
    /// # Errors
    /// As [`locate`]; [`ModelError::File`] when a file cannot be read or is not safetensors.
    pub fn open(dir: &Path) -> Result<Self, ModelError> {
        let (files, sharded) = locate(dir)?;
        let mut hasher = Sha256::new();
        for f in &files {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            hash_file_into(&mut hasher, f, sharded.then_some(name.as_str()))?;
        }
        let sha256 = hex::encode(hasher.finalize());
        // SAFETY: the files are mapped read-only; as with every mmap-based loader (transformers
        // and candle included), they must not be modified while the model is loading. Tensors
        // are copied out (converted to f32) before `Weights` is dropped.
        let st = unsafe { MmapedSafetensors::multi(&files) }
            .map_err(|e| ModelError::file(&files[0], "not a readable safetensors file", e))?;
        Ok(Self {
            files,
            sharded,
            st,
            dtypes: BTreeSet::new(),
            params: 0,
            sha256,
            loaded: HashSet::new(),
        })
    }

    /// Whether a tensor of this name exists in any file.
    pub fn contains(&self, name: &str) -> bool {
        self.st.get(name).is_ok()
    }

    /// The stored shape of tensor `name`, if present.
    pub fn shape(&self, name: &str) -> Option<Vec<usize>> {
        self.st.get(name).ok().map(|v| v.shape().to_vec())
    }

    /// Reads tensor `name` as f32 and checks its shape.
    ///
    /// # Errors
    /// [`ModelError::Metadata`] (path = the weights file, key = the tensor name) when the
    /// tensor is missing, stored in a dtype other than F32/BF16/F16, or has another shape;
    /// [`ModelError::File`] (with candle's error as the source) when it cannot be read or
    /// converted.
    pub fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<Tensor, ModelError> {
        let where_ = if self.sharded {
            self.files[0].with_file_name(INDEX_FILE)
        } else {
            self.files[0].clone()
        };
        let err = |reason: String| ModelError::Metadata {
            path: where_.clone(),
            key: name.into(),
            reason,
        };
        let view =
            self.st.get(name).map_err(|_| err("tensor missing from the checkpoint".into()))?;
        if view.shape() != shape {
            return Err(err(format!(
                "shape {:?}, expected {:?} from config.json",
                view.shape(),
                shape
            )));
        }
        let t = candle_core::safetensors::Load::load(&view, &Device::Cpu)
            .map_err(|e| ModelError::file(&where_, format!("cannot read tensor `{name}`"), e))?;
        match t.dtype() {
            DType::F32 | DType::BF16 | DType::F16 => {}
            d => {
                return Err(err(format!("stored as {}, supported: f32, bf16, f16", dtype_name(d))))
            }
        }
        self.dtypes.insert(dtype_name(t.dtype()));
        if self.loaded.insert(name.to_string()) {
            self.params += t.elem_count();
        }
        t.to_dtype(DType::F32).map_err(|e| {
            ModelError::file(&where_, format!("cannot convert tensor `{name}` to f32"), e)
        })
    }

    /// Stored dtypes of the tensors read so far, e.g. `bf16`, or `bf16+f32` when mixed.
    pub fn dtype_label(&self) -> String {
        self.dtypes.iter().copied().collect::<Vec<_>>().join("+")
    }

    /// Elements of the tensors read so far.
    pub fn param_count(&self) -> usize {
        self.params
    }

    /// sha256 (lower-case hex) of the weights. One file: the plain sha256 of its bytes (what
    /// `sha256sum model.safetensors` prints). Shards: one digest over the shards in
    /// lexicographic file-name order, each contributing its file name, a NUL byte, its length
    /// as 8 little-endian bytes, then its bytes (the prbench-data content-hash convention).
    /// The index file itself is not hashed.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The weight files, in hashing order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Tensors present in the files but not read so far, sorted (e.g. a leftover `lm_head` or
    /// rotary `inv_freq` buffers; transformers ignores these too).
    pub fn unread(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .st
            .tensors()
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| !self.loaded.contains(n))
            .collect();
        v.sort();
        v
    }
}
