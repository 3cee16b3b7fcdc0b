//! The process-wide llama.cpp backend.

use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::{send_logs_to_tracing, LogOptions};

use prbench_models::error::ModelError;

static BACKEND: OnceLock<Result<LlamaBackend, std::sync::Arc<llama_cpp_2::LlamaCppError>>> =
    OnceLock::new();

/// The llama.cpp backend, initialised on first use and kept for the process lifetime
/// (`LlamaBackend::init` fails when called twice, so every llama.cpp user in the process must
/// go through this function).
///
/// On first call, llama.cpp's logging is turned off unless `PRBENCH_LLAMA_LOG=1`; with it,
/// llama.cpp keeps writing its own log to stderr.
///
/// # Errors
/// [`ModelError::Engine`] if the backend cannot be initialised (e.g. another library in the
/// process already initialised it directly).
pub fn backend() -> Result<&'static LlamaBackend, ModelError> {
    BACKEND
        .get_or_init(|| {
            if std::env::var("PRBENCH_LLAMA_LOG").as_deref() != Ok("1") {
                send_logs_to_tracing(LogOptions::default().with_logs_enabled(false));
            }
            LlamaBackend::init().map_err(std::sync::Arc::new)
        })
        .as_ref()
        .map_err(|e| {
            ModelError::engine("cannot initialise the llama.cpp backend", std::sync::Arc::clone(e))
        })
}
