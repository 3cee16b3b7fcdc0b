//! The PAL network and its users' weights as one safetensors file (`pal.safetensors`).

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use prbench_models::ModelError;

use super::{engine, PalNet, Variant, W_TENSOR};

/// Writes the network and the user weights `w` `[n_users, K]` as one safetensors file (`W` and
/// the names of [`PalNet::tensor_names`]), in f32.
///
/// # Errors
/// [`ModelError::File`] when the file cannot be written; [`ModelError::Engine`] when `w` is not
/// `[n_users, K]`.
pub fn save_tensors(path: &Path, net: &PalNet, w: &Tensor) -> Result<(), ModelError> {
    if w.rank() != 2 || w.dims()[1] != net.k() {
        return Err(ModelError::Engine(format!(
            "W has shape {:?}, expected [n_users, {}]",
            w.dims(),
            net.k()
        )));
    }
    let mut tensors = net.tensors();
    tensors.insert(W_TENSOR.into(), w.clone());
    let tensors: HashMap<String, Tensor> = tensors
        .into_iter()
        .map(|(n, t)| Ok((n, t.to_dtype(DType::F32)?.contiguous()?)))
        .collect::<candle_core::Result<_>>()
        .map_err(engine)?;
    candle_core::safetensors::save(&tensors, path).map_err(|e| ModelError::file(path, "", e))
}

/// Reads a file written by [`save_tensors`]: the network and `W` `[n_users, K]` (f32).
///
/// # Errors
/// [`ModelError::File`] when the file cannot be read; [`ModelError::Engine`] for a missing,
/// unexpected or misshapen tensor (e.g. another variant's or K's file), or a `W` with
/// `n_users` other than expected.
pub fn load_tensors(
    path: &Path,
    variant: Variant,
    k: usize,
    dim: usize,
    n_users: usize,
) -> Result<(PalNet, Tensor), ModelError> {
    let tensors = candle_core::safetensors::load(path, &Device::Cpu)
        .map_err(|e| ModelError::file(path, "", e))?;
    let w = tensors
        .get(W_TENSOR)
        .ok_or_else(|| ModelError::Engine(format!("{}: tensor `W` is missing", path.display())))?;
    if w.dims() != [n_users, k] {
        return Err(ModelError::Engine(format!(
            "{}: `W` has shape {:?}, expected [{n_users}, {k}]",
            path.display(),
            w.dims()
        )));
    }
    let net = PalNet::from_tensors(variant, k, dim, &tensors)
        .map_err(|e| ModelError::engine(path.display().to_string(), e))?;
    Ok((net, w.clone()))
}
