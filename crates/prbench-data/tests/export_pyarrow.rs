//! The export as another implementation sees it: `write_hf_layout`'s files and a card from
//! `card_yaml`, read by tools/read_prb_export.py with pinned pyarrow and PyYAML (the reference
//! Python `scripts/setup.sh --tests` installs). Checks the exact Arrow schema pyarrow reports,
//! every row value, `arrow_bytes` against pyarrow's `Table.nbytes`, and the card's `configs` /
//! `dataset_info`.
//!
//! The interpreter is `$PRBENCH_PYREF`, else the venv setup.sh builds under
//! `${PRBENCH_TOOLS:-~/.cache/prbench/tools}`. Without it the test prints why and passes, except
//! when the environment variable `CI` is set: then it fails (CI must run it).

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::tricky_examples;
use prbench_data::{card_yaml, write_hf_layout, Example};
use serde_json::{json, Value};

/// The venv folder `scripts/setup.sh` creates (change both together).
const PYREF_VENV: &str = "pyref-pyarrow26.0.1-pyyaml6.0.4";

/// What pyarrow prints for PRB's column types (PROTOCOL.md §1) as `datasets` writes them, i.e.
/// `pa.schema` of `pa.string()` columns and `pa.list_(pa.struct([...]))` columns with pyarrow's
/// defaults (nullable fields, list item `item`); computed once by hand with pyarrow 26.0.1 from
/// those type definitions, not from the writer's output.
const EXPECTED_SCHEMA: &str = "id: string
question: string
profile: list<item: struct<category: string, id: string, text: string>>
  child 0, item: struct<category: string, id: string, text: string>
      child 0, category: string
      child 1, id: string
      child 2, text: string
rubric_aspects: list<item: struct<aspect: string, evidence: string, reason: string>>
  child 0, item: struct<aspect: string, evidence: string, reason: string>
      child 0, aspect: string
      child 1, evidence: string
      child 2, reason: string
narrative: string
category: string
chosen: string
rejected: string";

/// The reference interpreter, or `None` (with the reason on stderr) when it is not installed.
fn pyref_or_skip() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PRBENCH_PYREF") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "PRBENCH_PYREF={} is not a file", p.display());
        return Some(p);
    }
    let tools = match std::env::var_os("PRBENCH_TOOLS") {
        Some(t) => PathBuf::from(t),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/prbench/tools"),
    };
    let python = tools.join(PYREF_VENV).join("bin/python");
    if python.is_file() {
        return Some(python);
    }
    let why = format!(
        "the reference Python is not at {} (run scripts/setup.sh --tests, or set PRBENCH_PYREF)",
        python.display()
    );
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("CI is set, so the pyarrow export test must run: {why}");
    }
    // Straight to stderr, not `eprintln!`: libtest would capture that and hide it.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipping pyarrow export test: {why}");
    None
}

/// An example as pyarrow's `to_pylist` gives it (no `subset`: that is the folder).
fn as_pylist_row(ex: &Example) -> Value {
    json!({
        "id": ex.id,
        "question": ex.question,
        "profile": ex.profile.iter().map(|p| json!({"category": p.category, "id": p.id, "text": p.text})).collect::<Vec<_>>(),
        "rubric_aspects": ex.rubric_aspects.iter().map(|a| json!({"aspect": a.aspect, "evidence": a.evidence, "reason": a.reason})).collect::<Vec<_>>(),
        "narrative": ex.narrative,
        "category": ex.category,
        "chosen": ex.chosen,
        "rejected": ex.rejected,
    })
}

#[test]
fn pyarrow_reads_the_export_and_its_card() {
    let Some(python) = pyref_or_skip() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let examples = tricky_examples();
    let configs = write_hf_layout(tmp.path(), &examples).unwrap();
    std::fs::write(tmp.path().join("README.md"), format!("---\n{}---\n\n# Export\n", card_yaml(&configs)))
        .unwrap();

    let reader = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/read_prb_export.py");
    let out = Command::new(&python).arg(&reader).arg(tmp.path()).output().unwrap();
    assert!(
        out.status.success(),
        "{} {} failed: {}",
        python.display(),
        reader.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();

    let names = ["Art_and_Entertainment", "friendly_unfriendly"];
    let read = seen["configs"].as_object().unwrap();
    assert_eq!(read.keys().collect::<Vec<_>>(), names);
    for name in names {
        let config = &read[name];
        assert_eq!(config["schema"], EXPECTED_SCHEMA, "{name}: schema");
        let exported = configs.iter().find(|c| c.subset == name).unwrap();
        assert_eq!(config["nbytes"], exported.arrow_bytes, "{name}: arrow_bytes is pyarrow's Table.nbytes");
        let rows = config["rows"].as_array().unwrap();
        let want: Vec<&Example> = examples.iter().filter(|e| e.subset == name).collect();
        assert_eq!(rows.len(), want.len(), "{name}: rows");
        for (i, (got, ex)) in rows.iter().zip(&want).enumerate() {
            let expected = as_pylist_row(ex);
            let expected = expected.as_object().unwrap();
            let got = got.as_object().unwrap();
            assert_eq!(got.keys().collect::<Vec<_>>().len(), 8, "{name} row {i}: {got:?}");
            for (field, value) in expected {
                assert_eq!(&got[field], value, "{name} row {i} field {field}");
            }
        }
    }

    let card = &seen["card"];
    let config_names = |key: &str| -> Vec<&str> {
        card[key].as_array().unwrap().iter().map(|c| c["config_name"].as_str().unwrap()).collect()
    };
    assert_eq!(config_names("configs"), names);
    assert_eq!(config_names("dataset_info"), names);
    for (i, name) in names.iter().enumerate() {
        assert_eq!(card["configs"][i]["data_files"], json!([{"split": "test", "path": format!("{name}/test-*")}]));
        let info = &card["dataset_info"][i];
        let nbytes = &read[*name]["nbytes"];
        assert_eq!(info["splits"], json!([{"name": "test", "num_bytes": nbytes, "num_examples": 2}]), "{name}");
        assert_eq!(info["download_size"], configs[i].bytes, "{name}");
        assert_eq!(&info["dataset_size"], nbytes, "{name}");
        let features: Vec<&str> =
            info["features"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert_eq!(
            features,
            ["id", "question", "profile", "rubric_aspects", "narrative", "category", "chosen", "rejected"]
        );
        let strings = |names: &[&str]| -> Value {
            names.iter().map(|n| json!({"name": n, "dtype": "string"})).collect()
        };
        assert_eq!(info["features"][0], json!({"name": "id", "dtype": "string"}));
        assert_eq!(info["features"][2], json!({"name": "profile", "list": strings(&["category", "id", "text"])}));
        assert_eq!(
            info["features"][3],
            json!({"name": "rubric_aspects", "list": strings(&["aspect", "evidence", "reason"])})
        );
    }
}
