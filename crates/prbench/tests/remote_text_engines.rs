//! `prbench eval` with the reward models behind servers that take text rendered with the chat
//! template (`sglang-classify:`, `tei:`, `openrlhf:`), against the loopback fault server, which
//! scores a text `chars / 100`: the accuracy that score predicts, computed here from the fixture
//! data; the text each server received, compared with the rendering of a template written here;
//! the manifest identity; and the errors for a missing template.

mod common;

use std::path::Path;
use std::process::Command;

use common::remote::*;
use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The test model's chat template (BOS `<s>` from tokenizer_config.json).
const TEMPLATE: &str = "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}";

/// The fixture's examples: `(id, question, chosen, rejected)`.
fn fixture() -> Vec<(String, String, String, String)> {
    let mut out = Vec::new();
    let mut files: Vec<_> =
        std::fs::read_dir(repo().join("data/sample")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for f in files {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let r: Value = serde_json::from_str(line).unwrap();
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            out.push((s("id"), s("question"), s("chosen"), s("rejected")));
        }
    }
    out
}

/// `root/rm-template` with [`TEMPLATE`] and its tokenizer config; returns its `dir:` spec.
fn model_dir(root: &Path) -> String {
    template_dir(root, TEMPLATE, Some(r#"{"bos_token": "<s>", "eos_token": "<|end|>"}"#))
}

#[test]
fn text_engines_score_the_rendered_conversation_through_eval() {
    let tmp = tempfile::tempdir().unwrap();
    let template = model_dir(tmp.path());
    let examples = fixture();
    // chars/100 of the same user turn plus each answer: chosen wins iff it has more characters.
    let chars = |s: &str| s.chars().count() as i64;
    let want_correct = examples.iter().filter(|e| chars(&e.2) > chars(&e.3)).count();
    assert!(examples.iter().all(|e| chars(&e.2) != chars(&e.3)), "no ties in the fixture");
    // Every request body's first attempt gets a 500.
    let server = first_attempt_fails_server();
    for (kind, base, path, keeps_bos) in [
        ("sglang-classify", server.sglang_base(), "/sglang/classify", false),
        ("tei", server.base_url(), "/predict", false),
        ("openrlhf", server.base_url(), "/get_reward", true),
    ] {
        let model = format!("{kind}:test/rm@{base}");
        let before = server.log().len();
        let out = prbench(
            &[
                "eval",
                "--data",
                &sample(),
                "--model",
                &model,
                "--chat-template",
                &template,
                "--run-id",
                kind,
                "--quiet",
                "--bootstrap",
                "200",
            ],
            tmp.path(),
        );
        assert!(out.status.success(), "{model}: {}", text(&out.stderr));
        let run = tmp.path().join("runs").join(kind);

        let summary = read_json(&run.join("summary.json"));
        let micro =
            summary["rows"].as_array().unwrap().iter().find(|r| r["label"] == "micro").unwrap();
        assert_eq!(
            (micro["n"].as_u64(), micro["correct"].as_u64(), micro["errors"].as_u64()),
            (Some(12), Some(want_correct as u64), Some(0)),
            "{model}"
        );
        assert_eq!(micro["strict"].as_f64().unwrap(), want_correct as f64 / 12.0);
        assert_eq!(
            summary["remote"]["retries"], 24,
            "{model}: every answer's first request got a 500"
        );

        let manifest = read_json(&run.join("manifest.json"));
        let m = &manifest["model"];
        assert_eq!(m["spec"], model.as_str());
        assert_eq!(m["file_hash"], format!("test/rm @ {base}").as_str());
        assert_eq!(
            m["chat_template_hash"],
            hex::encode(Sha256::digest(TEMPLATE.as_bytes())).as_str()
        );
        assert_eq!(m["dtype"], "n/a");

        // The load-time probe: the probe item, rendered, to the one URL; its first attempt got
        // the 500 too, so it was sent twice.
        let log = server.log()[before..].to_vec();
        let (probes, items): (Vec<_>, Vec<_>) = log
            .iter()
            .partition(|r| r.body.to_string().contains(prbench_remote::probe::PROBE_QUESTION));
        assert_eq!(probes.len(), 2, "{model}: the probe and its retry");
        assert!(
            probes.iter().all(|r| r.path == path
                && r.body.to_string().contains(prbench_remote::probe::PROBE_ANSWER)),
            "{model}"
        );
        assert_eq!(items.len(), 48, "{model}: 24 answers, each a 500 then its score");

        // Every text the server got is the template's rendering of (rm-user turn, answer): one
        // per answer of every example, BOS dropped where the server adds its own.
        let mut seen = Vec::new();
        for r in items {
            assert_eq!(r.path, path, "{model}");
            let sent = match kind {
                "sglang-classify" => r.body["text"].as_str(),
                "tei" => r.body["inputs"].as_str(),
                _ => r.body["query"][0].as_str(),
            }
            .unwrap()
            .to_string();
            let body = if keeps_bos {
                sent.strip_prefix("<s>").unwrap_or_else(|| panic!("{model}: no BOS in {sent:?}"))
            } else {
                sent.as_str()
            };
            assert!(!body.starts_with("<s>"), "{model}: one BOS at most");
            let rest =
                body.strip_prefix("<|user|>\n").unwrap_or_else(|| panic!("{model}: {body:?}"));
            let (user, rest) = rest.split_once("<|end|>\n<|assistant|>\n").unwrap();
            let answer = rest.strip_suffix("<|end|>\n").unwrap();
            let e = examples
                .iter()
                .find(|e| e.2 == answer || e.3 == answer)
                .unwrap_or_else(|| panic!("{model}: unknown answer {answer:?}"));
            assert!(user.contains(&e.1), "{model}: the user turn holds the question of {}", e.0);
            seen.push(answer.to_string());
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 24, "{model}: both answers of all 12 examples");

        for o in std::fs::read_to_string(run.join("outcomes.jsonl")).unwrap().lines() {
            let o: Value = serde_json::from_str(o).unwrap();
            let e = examples.iter().find(|e| e.0 == o["example_id"].as_str().unwrap()).unwrap();
            let diff = o["score_chosen"].as_f64().unwrap() - o["score_rejected"].as_f64().unwrap();
            let want = (chars(&e.2) - chars(&e.3)) as f64 / 100.0;
            assert!((diff - want).abs() < 1e-4, "{model} {}: {diff} vs {want}", e.0);
        }
    }
}

#[test]
fn a_missing_chat_template_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let server = clean_server();
    let empty = tmp.path().join("no-template");
    std::fs::create_dir_all(&empty).unwrap();
    let model = format!("tei:test/rm@{}", server.base_url());
    let flag = format!("dir:{}", empty.display());
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &model,
            "--chat-template",
            &flag,
            "--run-id",
            "x",
            "--quiet",
        ],
        tmp.path(),
    );
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("chat template")
            && err.contains("chat_template.jinja")
            && err.contains("--chat-template"),
        "{err}"
    );
    // A folder that does not exist is named as such, and so is a file given for the folder.
    let missing = tmp.path().join("nonexist");
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &model,
            "--chat-template",
            &format!("dir:{}", missing.display()),
            "--run-id",
            "x",
            "--quiet",
        ],
        tmp.path(),
    );
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("folder `{}` does not exist", missing.display()))
            && !err.contains("cannot read model file"),
        "{err}"
    );
    let file = empty.join("chat_template.jinja");
    std::fs::write(&file, TEMPLATE).unwrap();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &model,
            "--chat-template",
            &format!("dir:{}", file.display()),
            "--run-id",
            "x",
            "--quiet",
        ],
        tmp.path(),
    );
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("`{}` is a file; `dir:PATH` must be a folder", file.display())),
        "{err}"
    );
    std::fs::remove_file(&file).unwrap();
    // Without the flag the template is the served model's own, from the hub; offline and not
    // cached, that fails naming the repo and the flag.
    let out = Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args(["eval", "--data", &sample(), "--model", &model, "--run-id", "y", "--quiet"])
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", tmp.path().join("hf"))
        .env_remove("HF_HUB_CACHE")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("hf:test/rm") && err.contains("--chat-template"), "{err}");
    assert!(server.log().is_empty(), "nothing is sent without a template, not even the probe");
    // The flag is refused for engines that render on the server.
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &format!("vllm-classify:rm@{}", server.base_url()),
            "--chat-template",
            &flag,
            "--run-id",
            "z",
            "--quiet",
        ],
        tmp.path(),
    );
    assert!(
        !out.status.success() && text(&out.stderr).contains("--chat-template applies to"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn label_index_is_accepted_for_tei_and_sglang_and_refused_for_openrlhf() {
    let tmp = tempfile::tempdir().unwrap();
    let template = model_dir(tmp.path());
    let server = clean_server();
    // The fault server's heads have one label, `LABEL_0` (TEI's GET /info says so): label 0 is
    // read by name for TEI, by position for SGLang, and the scores are those without the flag.
    for (kind, base) in [("tei", server.base_url()), ("sglang-classify", server.sglang_base())] {
        let model = format!("{kind}:test/rm@{base}");
        server.clear_log();
        let out = prbench(
            &[
                "eval",
                "--data",
                &sample(),
                "--model",
                &model,
                "--chat-template",
                &template,
                "--label-index",
                "0",
                "--run-id",
                kind,
                "--quiet",
                "--bootstrap",
                "200",
                "--limit",
                "1",
            ],
            tmp.path(),
        );
        assert!(out.status.success(), "{model}: {}", text(&out.stderr));
        let manifest = read_json(&tmp.path().join("runs").join(kind).join("manifest.json"));
        let info_gets =
            server.log().iter().filter(|r| r.method == "GET" && r.path == "/info").count();
        assert_eq!(
            info_gets,
            usize::from(kind == "tei"),
            "{model}: TEI reads the label names once"
        );
        let settings = manifest.to_string();
        assert!(settings.contains("\"label_index\":0"), "{model}: {settings}");
        if kind == "tei" {
            assert!(settings.contains("\"label\":\"LABEL_0\""), "{model}: {settings}");
        }
    }
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &format!("openrlhf:test/rm@{}", server.base_url()),
            "--chat-template",
            &template,
            "--label-index",
            "0",
            "--run-id",
            "o",
            "--quiet",
        ],
        tmp.path(),
    );
    let err = text(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--label-index applies to") && err.contains("`tei:`"),
        "{err}"
    );
}

#[test]
fn an_unreachable_hub_is_named_as_such_not_as_an_invalid_spec() {
    let tmp = tempfile::tempdir().unwrap();
    let hub = dead_url();
    let out = Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args([
            "eval",
            "--data",
            &sample(),
            "--model",
            "tei:m@http://127.0.0.1:9",
            "--run-id",
            "y",
            "--quiet",
        ])
        .env_remove("HF_HUB_OFFLINE")
        .env("HF_ENDPOINT", &hub)
        .env("HF_HOME", tmp.path().join("hf"))
        .env_remove("HF_HUB_CACHE")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(!err.contains("invalid model spec"), "{err}");
    assert!(
        err.contains("could not be fetched from `hf:m`")
            && err.contains("hub could not be reached")
            && err.contains("--chat-template dir:PATH"),
        "{err}"
    );
}

/// The text block a rendered-RM preflight printed for its first condition.
fn preflight_text(stderr: &str) -> String {
    let (_, rest) =
        stderr.split_once("-----\n").unwrap_or_else(|| panic!("no preflight text in {stderr}"));
    let (text, _) = rest
        .split_once("\n-----\n")
        .unwrap_or_else(|| panic!("unterminated preflight text in {stderr}"));
    text.to_string()
}

#[test]
fn preflight_shows_the_exact_text_each_rendering_engine_sends_without_contacting_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let template = model_dir(tmp.path());
    let server = clean_server();
    for (kind, base, keeps_bos) in [
        ("sglang-classify", server.sglang_base(), false),
        ("tei", server.base_url(), false),
        ("openrlhf", server.base_url(), true),
    ] {
        let model = format!("{kind}:test/rm@{base}");
        // --preflight: the view, then a stop, with nothing sent and no run folder.
        server.clear_log();
        let runs = tmp.path().join(format!("preflight-{kind}"));
        let runs_arg = runs.display().to_string();
        let out = prbench(
            &[
                "eval",
                "--data",
                &sample(),
                "--model",
                &model,
                "--chat-template",
                &template,
                "--condition",
                "none,oracle",
                "--preflight",
                "--quiet",
                "--out",
                &runs_arg,
            ],
            tmp.path(),
        );
        let err = text(&out.stderr);
        assert!(out.status.success(), "{model}: {err}");
        assert!(server.log().is_empty(), "{model}: --preflight sends nothing: {:?}", server.log());
        assert!(!runs.exists(), "{model}: --preflight writes no run folder");
        assert!(
            err.contains(
                "prbench: --preflight: stopping before scoring (the server was not contacted)"
            ),
            "{model}: {err}"
        );
        for condition in ["none", "oracle"] {
            assert!(err.contains(&format!("prbench preflight: condition `{condition}`, example `sample-art-01` (chosen answer)")), "{model}: {err}");
        }
        assert!(err.contains("(rendered here with the chat template of dir:"), "{model}: {err}");
        let shown = preflight_text(&err);
        assert!(err.contains(&format!("characters: {};", shown.chars().count())), "{model}: {err}");
        if keeps_bos {
            assert!(
                shown.starts_with("<s><|user|>\n")
                    && err.contains("BOS: `<s>` sent as the template wrote it"),
                "{model}: {err}"
            );
        } else {
            assert!(shown.starts_with("<|user|>\n") && err.contains("BOS: the template's `<s>` dropped before sending (the server adds its own)"), "{model}: {err}");
        }

        // A real run prints the same view first, and the server then receives exactly that text
        // for the first example's chosen answer under `none`.
        let id = format!("pf-{kind}");
        let out = prbench(
            &[
                "eval",
                "--data",
                &sample(),
                "--model",
                &model,
                "--chat-template",
                &template,
                "--run-id",
                &id,
                "--quiet",
                "--bootstrap",
                "200",
                "--limit",
                "1",
            ],
            tmp.path(),
        );
        let err = text(&out.stderr);
        assert!(out.status.success(), "{model}: {err}");
        assert_eq!(preflight_text(&err), shown, "{model}: the run's preflight is --preflight's");
        let sent: Vec<String> = server
            .log()
            .iter()
            .filter_map(|r| match kind {
                "sglang-classify" => r.body["text"].as_str(),
                "tei" => r.body["inputs"].as_str(),
                _ => r.body["query"][0].as_str(),
            })
            .map(str::to_string)
            .collect();
        assert!(
            sent.contains(&shown),
            "{model}: the preflight text is what the server got; sent: {sent:#?}"
        );
    }
}

#[test]
fn an_openrlhf_run_reports_its_prompt_tokens_as_unknown_not_0() {
    let tmp = tempfile::tempdir().unwrap();
    let template = model_dir(tmp.path());
    let server = clean_server();
    // OpenRLHF's reply has no token count; no --run-id, so the default id is used too.
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &format!("openrlhf:test/rm@{}", server.base_url()),
            "--chat-template",
            &template,
            "--quiet",
            "--bootstrap",
            "200",
        ],
        tmp.path(),
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let runs: Vec<String> = std::fs::read_dir(tmp.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains(".sqlite"))
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(
        runs[0].ends_with("-rm-none"),
        "the default run id names the model `test/rm`, not the URL: {}",
        runs[0]
    );
    let run = tmp.path().join("runs").join(&runs[0]);
    let summary = read_json(&run.join("summary.json"));
    assert_eq!(summary["remote"]["requests"], 24, "{}", summary["remote"]);
    assert!(summary["remote"]["prompt_tokens"].is_null(), "unknown, not 0: {}", summary["remote"]);
    assert_eq!(summary["remote"]["completion_tokens"], 0, "a reward model generates nothing");
    assert!(
        err.contains(
            "24 requests, 0 retries, 0 calls failed; unknown prompt + 0 completion tokens"
        ),
        "{err}"
    );
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        md.contains("server-reported usage unknown prompt + 0 completion tokens")
            && md.contains("input tokens unknown (the server does not count them)"),
        "{md}"
    );
    assert!(!md.contains("0 input tokens"), "{md}");

    // SGLang counts them (the fault server: one per whitespace-separated word of the text).
    server.clear_log();
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &format!("sglang-classify:test/rm@{}", server.sglang_base()),
            "--chat-template",
            &template,
            "--run-id",
            "sg",
            "--quiet",
            "--bootstrap",
            "200",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let words: usize = server
        .log()
        .iter()
        .filter(|r| !r.body.to_string().contains(prbench_remote::probe::PROBE_QUESTION))
        .map(|r| r.body["text"].as_str().unwrap().split_whitespace().count())
        .sum();
    let summary = read_json(&tmp.path().join("runs/sg/summary.json"));
    assert_eq!(
        summary["remote"]["prompt_tokens"].as_u64(),
        Some(words as u64),
        "{}",
        summary["remote"]
    );
}

#[test]
fn a_chat_template_folder_starting_with_tilde_is_read_from_home() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    model_dir(&home);
    let eval = |flag: &str| {
        Command::new(env!("CARGO_BIN_EXE_prbench"))
            .args([
                "eval",
                "--data",
                &sample(),
                "--model",
                "tei:test/rm@http://127.0.0.1:9",
                "--chat-template",
                flag,
                "--preflight",
                "--limit",
                "1",
                "--quiet",
            ])
            .env("HOME", &home)
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    // The template of $HOME/rm-template renders the preflight (no server is needed for it).
    let out = eval("dir:~/rm-template");
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(preflight_text(&err).starts_with("<|user|>\n"), "{err}");
    let out = eval("dir:~/absent");
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("folder `{}` does not exist", home.join("absent").display())),
        "{err}"
    );
}
