//! The process-wide llama.cpp backend.

use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::{send_logs_to_tracing, LogOptions};

use prbench_models::error::ModelError;

static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

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
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| ModelError::Engine(format!("cannot initialise the llama.cpp backend: {e}")))
}
