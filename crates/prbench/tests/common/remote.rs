//! The fake-server set-up of the remote-engine tests (`remote.rs`, `remote_text_engines.rs`):
//! fault servers, a URL where nothing listens, a chat-template folder, and readers of the run
//! files they check.

use std::path::Path;

use prbench_fault_server::{Fault, FaultRule, FaultServer, ServerConfig};

/// A loopback fault server with no faults.
pub fn clean_server() -> FaultServer {
    FaultServer::start(ServerConfig::default()).unwrap()
}

/// A loopback fault server on which every request body's first attempt gets a 500 (so every
/// item is retried once).
pub fn first_attempt_fails_server() -> FaultServer {
    FaultServer::start(
        ServerConfig::default().with_rule(FaultRule::new("", Fault::ServerError).times(1)),
    )
    .unwrap()
}

/// A loopback URL where nothing listens (a port the OS just handed out and took back).
pub fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// Writes the folder `root/rm-template` with `chat_template.jinja` holding `template` and, when
/// given, `tokenizer_config.json` holding `tokenizer_config`; returns its `dir:` spec (the
/// `--chat-template` flag of the engines that take rendered text).
pub fn template_dir(root: &Path, template: &str, tokenizer_config: Option<&str>) -> String {
    let dir = root.join("rm-template");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("chat_template.jinja"), template).unwrap();
    if let Some(config) = tokenizer_config {
        std::fs::write(dir.join("tokenizer_config.json"), config).unwrap();
    }
    format!("dir:{}", dir.display())
}

/// A JSON file (a run's `summary.json`, `manifest.json`).
pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The outcomes of the run folder `dir`, one JSON value per line of `outcomes.jsonl`.
pub fn read_outcomes(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("outcomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
