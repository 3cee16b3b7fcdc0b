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

use common::pyref::{pyref_or_skip, read_export, PRB_PYARROW_SCHEMA};
use common::tricky_examples;
use prbench_data::{card_yaml, write_hf_layout, Example};
use serde_json::{json, Value};

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
    std::fs::write(
        tmp.path().join("README.md"),
        format!("---\n{}---\n\n# Export\n", card_yaml(&configs)),
    )
    .unwrap();

    let seen: Value = read_export(&python, tmp.path());

    let names = ["Art_and_Entertainment", "friendly_unfriendly"];
    let read = seen["configs"].as_object().unwrap();
    assert_eq!(read.keys().collect::<Vec<_>>(), names);
    for name in names {
        let config = &read[name];
        assert_eq!(config["schema"], PRB_PYARROW_SCHEMA, "{name}: schema");
        let exported = configs.iter().find(|c| c.subset == name).unwrap();
        assert_eq!(
            config["nbytes"], exported.arrow_bytes,
            "{name}: arrow_bytes is pyarrow's Table.nbytes"
        );
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
        assert_eq!(
            card["configs"][i]["data_files"],
            json!([{"split": "test", "path": format!("{name}/test-*")}])
        );
        let info = &card["dataset_info"][i];
        let nbytes = &read[*name]["nbytes"];
        assert_eq!(
            info["splits"],
            json!([{"name": "test", "num_bytes": nbytes, "num_examples": 2}]),
            "{name}"
        );
        assert_eq!(info["download_size"], configs[i].bytes, "{name}");
        assert_eq!(&info["dataset_size"], nbytes, "{name}");
        let features: Vec<&str> = info["features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            features,
            [
                "id",
                "question",
                "profile",
                "rubric_aspects",
                "narrative",
                "category",
                "chosen",
                "rejected"
            ]
        );
        let strings = |names: &[&str]| -> Value {
            names.iter().map(|n| json!({"name": n, "dtype": "string"})).collect()
        };
        assert_eq!(info["features"][0], json!({"name": "id", "dtype": "string"}));
        assert_eq!(
            info["features"][2],
            json!({"name": "profile", "list": strings(&["category", "id", "text"])})
        );
        assert_eq!(
            info["features"][3],
            json!({"name": "rubric_aspects", "list": strings(&["aspect", "evidence", "reason"])})
        );
    }
}

/// Data with user ids (SynthesizeMe, PRISM) gets one more column, `user_id`, after `rejected`;
/// pyarrow sees it as a plain string column, null where an example has no user id, and its
/// `Table.nbytes` (with the validity bitmap a null brings) is the export's `arrow_bytes`.
#[test]
fn pyarrow_reads_the_user_id_column() {
    let Some(python) = pyref_or_skip() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut examples = tricky_examples();
    // Art: both examples have a user id; friendly_unfriendly: one of two (the other is null).
    examples[0].user_id = Some("ü-1".into());
    examples[1].user_id = Some("user584".into());
    examples[3].user_id = Some("user584".into());
    let configs = write_hf_layout(tmp.path(), &examples).unwrap();
    assert!(configs.iter().all(|c| c.user_id_column));
    let seen = read_export(&python, tmp.path());
    let schema = format!("{PRB_PYARROW_SCHEMA}\nuser_id: string");
    for (name, want) in [
        ("Art_and_Entertainment", vec![json!("user584"), json!("user584")]),
        ("friendly_unfriendly", vec![json!("ü-1"), Value::Null]),
    ] {
        let config = &seen["configs"][name];
        assert_eq!(config["schema"], schema, "{name}: schema");
        let exported = configs.iter().find(|c| c.subset == name).unwrap();
        assert_eq!(
            config["nbytes"], exported.arrow_bytes,
            "{name}: arrow_bytes is pyarrow's Table.nbytes"
        );
        let got: Vec<&Value> =
            config["rows"].as_array().unwrap().iter().map(|r| &r["user_id"]).collect();
        assert_eq!(got, want.iter().collect::<Vec<_>>(), "{name}: user_id values");
    }
}
