//! The crate graph follows the data flow (docs/ARCHITECTURE.md, "Crates"): every workspace
//! crate sits in one stage, and a crate's normal dependencies are crates of earlier stages only,
//! or the few same-stage edges listed here. `cargo metadata` is the source, so a new `[dependencies]`
//! line that runs against the flow fails this test, naming the edge.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// The stages, in data-flow order, and the crates of each. Keep in step with the table in
/// docs/ARCHITECTURE.md.
const STAGES: &[(&str, &[&str])] = &[
    ("test support", &["prbench-testkit", "prbench-browser", "prbench-fault-server"]),
    (
        "foundations",
        &["prbench-files", "prbench-flags", "prbench-data", "prbench-stats", "prbench-models"],
    ),
    ("records", &["prbench-records"]),
    ("backends", &["prbench-llm", "prbench-rm", "prbench-remote", "prbench-train"]),
    ("evaluation", &["prbench-eval"]),
    ("engine factory", &["prbench-engines"]),
    ("benchmark uses", &["prbench-build", "prbench-downstream", "prbench-annotate"]),
    ("report", &["prbench-report"]),
    ("harnesses", &["prbench-bench"]),
    ("study", &["prbench-study"]),
    ("binary", &["prbench"]),
];

/// Same-stage edges that are allowed: the trained reward models embed with prbench-rm's MiniLM;
/// `data export` writes its parquet files through prbench-files' atomic writer.
const SAME_STAGE: &[(&str, &str)] = &[
    ("prbench-train", "prbench-rm"),
    ("prbench-browser", "prbench-testkit"),
    ("prbench-data", "prbench-files"),
];

/// (crate, normal dependencies on workspace crates), from `cargo metadata`.
fn workspace_edges() -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(common::repo())
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: BTreeSet<String> =
        packages.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_string())
                .filter(|d| names.contains(d))
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

fn stage_of(name: &str) -> Option<usize> {
    STAGES.iter().position(|(_, crates)| crates.contains(&name))
}

/// The rule itself, on any graph: the edges that break it, as readable lines.
fn violations(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut bad = Vec::new();
    for (from, deps) in edges {
        let Some(s) = stage_of(from) else {
            bad.push(format!(
                "{from} is in no stage: add it to STAGES and to docs/ARCHITECTURE.md"
            ));
            continue;
        };
        for to in deps {
            let Some(t) = stage_of(to) else { continue };
            let same_ok = SAME_STAGE.contains(&(from.as_str(), to.as_str()));
            let test_support = t == 0 && from == "prbench-bench";
            if t == 0 && s > 0 && !test_support {
                bad.push(format!(
                    "{from} depends on {to}, a test-support crate: make it a dev-dependency"
                ));
            } else if t > s || (t == s && !same_ok) {
                bad.push(format!(
                    "{from} ({}) depends on {to} ({}), which is not earlier in the data flow",
                    STAGES[s].0, STAGES[t].0
                ));
            }
        }
    }
    bad
}

#[test]
fn no_library_depends_on_a_crate_later_in_the_data_flow() {
    let edges = workspace_edges();
    assert!(edges.len() >= 19, "cargo metadata listed {} crates", edges.len());
    let bad = violations(&edges);
    assert!(bad.is_empty(), "the crate graph runs against the data flow:\n{}", bad.join("\n"));
}

#[test]
fn every_crate_in_the_stages_exists_and_appears_once() {
    let edges = workspace_edges();
    let mut seen = BTreeSet::new();
    for (_, crates) in STAGES {
        for c in *crates {
            assert!(seen.insert(*c), "{c} is listed in two stages");
            assert!(edges.contains_key(*c), "{c} is listed but is not a workspace crate");
        }
    }
}

#[test]
fn the_rule_catches_a_backward_edge_a_same_stage_edge_and_an_unplaced_crate() {
    let graph = |e: &[(&str, &[&str])]| -> BTreeMap<String, BTreeSet<String>> {
        e.iter().map(|(f, d)| (f.to_string(), d.iter().map(|x| x.to_string()).collect())).collect()
    };
    // The edges this restructuring removed: eval on report, remote on the llama.cpp engine.
    let bad = violations(&graph(&[
        ("prbench-eval", &["prbench-report", "prbench-records"]),
        ("prbench-remote", &["prbench-llm"]),
        ("prbench-report", &["prbench-fault-server"]),
        ("prbench-new", &[]),
    ]));
    assert_eq!(bad.len(), 4, "{bad:#?}");
    assert!(bad[0].contains("prbench-eval (evaluation) depends on prbench-report (report)"));
    assert!(bad[1].contains("prbench-new is in no stage"), "{bad:#?}");
    assert!(bad[2].contains("prbench-remote (backends) depends on prbench-llm (backends)"));
    assert!(bad[3].contains("prbench-report depends on prbench-fault-server, a test-support"));
    // Allowed: earlier stages, a listed same-stage edge, test support for the harnesses.
    let ok = violations(&graph(&[
        ("prbench-train", &["prbench-rm", "prbench-models"]),
        ("prbench-bench", &["prbench-fault-server", "prbench-report"]),
    ]));
    assert!(ok.is_empty(), "{ok:#?}");
}

/// The report reads annotation stores but never serves the rating page: built alone, it
/// compiles prbench-annotate without the feature `server`, so no axum. `cargo tree` resolves the
/// features of the report on its own, as `cargo build -p prbench-report` would.
#[test]
fn the_report_compiles_no_http_server() {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "-p", "prbench-report", "-e", "normal", "--prefix", "none", "--offline"])
        .current_dir(common::repo())
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8(out.stdout).unwrap();
    assert!(tree.lines().any(|l| l.starts_with("prbench-annotate ")), "{tree}");
    let servers: Vec<&str> = tree.lines().filter(|l| l.starts_with("axum ")).collect();
    assert!(servers.is_empty(), "prbench-report compiles {servers:?}: depend on prbench-annotate without its `server` feature");
}
