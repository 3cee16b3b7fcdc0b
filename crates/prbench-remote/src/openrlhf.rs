//! A reward model served by OpenRLHF's reward server, `openrlhf/cli/serve_rm.py`.
//!
//! Checked against OpenRLHF v0.11.0 (stored commit 3c3be623): `openrlhf/cli/serve_rm.py` and
//! `openrlhf/models/model.py` (`_get_reward_model`):
//!
//! - `POST {base}/get_reward` with `{"query": ["TEXT"]}`: a list of full texts (prompt and
//!   response with the chat template applied, as OpenRLHF's PPO trainer sends them). prbench
//!   sends one text per request, rendered with the model's template
//!   ([`crate::templated::ChatRenderer`]).
//! - Reply: `{"rewards": [f], "scores": [f], "extra_logs": {…}}`, one reward per query.
//!   `rewards` is the value head's output at the last non-padding token — a raw logit unless the
//!   server was started with `--reward.normalize_enable`, which standardizes it with the
//!   mean/std in the model's config (still monotone, so the pairwise outcome is the same).
//! - The server tokenizes with `add_special_tokens=False`, so the text is sent exactly as the
//!   template renders it (BOS included), and truncates silently to `--data.max_len` tokens
//!   (default 2048, from the right): keep long profiles within it.
//! - Run against a real server in CI: OpenRLHF 0.11.2's `serve_rm` on CPU in bfloat16
//!   (started by `scripts/engines.sh`), within bfloat16 rounding of the in-process `dir:` engine
//!   (`crates/prbench/tests/real_engines.rs`).
//! - The server does not validate: a body without `query` raises inside the handler and
//!   answers 500, which the client retries like any 5xx before failing the item.

use serde_json::{json, Value};

use crate::templated::{Outputs, TemplatedRewardModel, TextEndpoint};

/// OpenRLHF's `/get_reward` (see the module docs).
#[derive(Debug)]
pub struct OpenRlhfEndpoint;

impl TextEndpoint for OpenRlhfEndpoint {
    const ENGINE: &'static str = "openrlhf reward server";
    const KIND: &'static str = "openrlhf";
    const PATH: &'static str = "/get_reward";
    const STRIP_BOS: bool = false;
    const LABEL_INDEX: bool = false;
    const SERVER_SIDE: &'static str = "OpenRLHF tokenizes it as it is (`add_special_tokens=False`) and silently cuts it to its `--data.max_len` tokens (default 2048); it reports no count";

    /// `{"query": [TEXT]}`.
    fn body(text: &str) -> Value {
        json!({ "query": [text] })
    }

    /// `rewards[0]`; the server reports no token count.
    fn read(reply: &Value) -> Result<(Outputs, Option<u64>), String> {
        match reply.get("rewards") {
            Some(Value::Array(a)) if a.len() == 1 => match &a[0] {
                Value::Number(n) => n
                    .as_f64()
                    .map(|v| (Outputs::ByIndex(vec![v]), None))
                    .ok_or_else(|| format!("`rewards[0]` = {n} is not a finite number")),
                other => Err(format!("`rewards[0]` = {other} is not a number")),
            },
            Some(Value::Array(a)) => Err(format!("`rewards` has {} values for one query", a.len())),
            None | Some(Value::Null) => Err("no `rewards` in the reply".into()),
            Some(other) => Err(format!("`rewards` = {other} is not a list of numbers")),
        }
    }
}

/// A reward model behind OpenRLHF's `/get_reward`.
pub type OpenRlhfReward = TemplatedRewardModel<OpenRlhfEndpoint>;
