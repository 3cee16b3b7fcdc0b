//! `examples/verl/reward_fn.py` against the real `prbench serve-reward --model
//! baseline:longer`: `examples/verl/test_reward_fn.py` checks every reward exactly (the
//! answer's character count), that the function binds and answers the keyword call verl 0.9.0
//! makes (quoted from verl's source in that script), and that a failed request raises instead
//! of giving a default reward. Here: the script passes, and the server scored exactly the
//! answers the script sent. The shim uses only the standard library: any `python3` runs it
//! (`PRBENCH_ENGINES_PYTHON` when set).

mod common;

#[path = "common/served.rs"]
mod served;

use std::process::Command;

use common::*;
use served::Served;

#[test]
fn the_verl_reward_function_answers_verl_0_9s_call_from_the_served_reward() {
    let py = std::env::var("PRBENCH_ENGINES_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into());
    if Command::new(&py).arg("--version").output().map_or(true, |o| !o.status.success()) {
        prbench_testkit::unavailable(format!("no Python at `{py}` to run the verl reward shim"));
        return;
    }
    let server = Served::start(&["--model", "baseline:longer"]);
    let out = Command::new(&py)
        .arg(repo().join("examples/verl/test_reward_fn.py"))
        .env("PRBENCH_REWARD_URL", server.url())
        .output()
        .expect("python runs");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("server ") && stdout.contains("model baseline:longer"), "{stdout}");
    for check in [
        "ok   verl 0.9: compute_score is not a coroutine",
        "ok   verl 0.9: the keyword call binds (reward_kwargs {})",
        "ok   verl 0.9: the call returns the server's score (reward_kwargs {}) 28.0",
        "ok   HTTP error raises, no default reward",
    ] {
        assert!(stdout.contains(check), "missing `{check}`:\n{stdout}");
    }
    assert!(!stdout.contains("FAIL"), "{stdout}");
    // compute_score once, compute_score_batch with 3 answers, verl 0.9's call twice.
    assert_eq!(server.health()["stats"]["scored"].as_u64(), Some(1 + 3 + 2), "{stdout}");
}
