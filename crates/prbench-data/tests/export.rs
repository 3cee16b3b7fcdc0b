//! `write_hf_layout` / `card_yaml`: the export loads back unchanged with `load`, reports what it
//! wrote, and refuses input that would not load back as given.

mod common;

use std::path::{Path, PathBuf};

use common::{tricky_examples, tricky_examples_load_order};
use prbench_data::error::DataError;
use prbench_data::{card_yaml, load, write_hf_layout, Example, ExportedConfig};
use sha2::{Digest, Sha256};

const FILE: &str = "test-00000-of-00001.parquet";

fn spec(dir: &Path) -> &str {
    dir.to_str().unwrap()
}

/// Every path under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if p.is_dir() {
                walk(root, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn export_loads_back_as_the_same_examples() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let configs = write_hf_layout(&dir, &tricky_examples()).unwrap();
    let ds = load(spec(&dir), &[]).unwrap();
    assert_eq!(ds.examples, tricky_examples_load_order());
    assert_eq!(ds.kind, "prb");

    // What it reports is what is on disk; no temporary file is left behind.
    assert_eq!(
        tree(&dir),
        [
            "Art_and_Entertainment".to_string(),
            format!("Art_and_Entertainment/{FILE}"),
            "friendly_unfriendly".to_string(),
            format!("friendly_unfriendly/{FILE}"),
        ]
    );
    let summary: Vec<(&str, PathBuf, usize)> =
        configs.iter().map(|c| (c.subset.as_str(), c.path.clone(), c.rows)).collect();
    assert_eq!(
        summary,
        [
            ("Art_and_Entertainment", Path::new("Art_and_Entertainment").join(FILE), 2),
            ("friendly_unfriendly", Path::new("friendly_unfriendly").join(FILE), 2),
        ]
    );
    for c in &configs {
        let bytes = std::fs::read(dir.join(&c.path)).unwrap();
        assert_eq!(c.bytes, bytes.len() as u64, "{}", c.subset);
        assert_eq!(c.sha256, hex::encode(Sha256::digest(&bytes)), "{}", c.subset);
        assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    }
    let json = serde_json::to_value(&configs[0]).unwrap();
    assert_eq!(json["path"], format!("Art_and_Entertainment/{FILE}"));
    assert_eq!(json["rows"], 2);
}

#[test]
fn many_rows_span_several_batches_and_keep_their_order() {
    let tmp = tempfile::tempdir().unwrap();
    let base = &tricky_examples()[1];
    let examples: Vec<Example> = (0..700)
        .map(|i| Example {
            id: format!("row-{i:04}"),
            subset: if i % 3 == 0 {
                "Society_and_Culture"
            } else {
                "Lifestyle_and_Personal_Development"
            }
            .into(),
            chosen: format!("chosen {i}"),
            ..base.clone()
        })
        .collect();
    let configs = write_hf_layout(tmp.path(), &examples).unwrap();
    assert_eq!(
        configs.iter().map(|c| (c.subset.as_str(), c.rows)).collect::<Vec<_>>(),
        [("Lifestyle_and_Personal_Development", 466), ("Society_and_Culture", 234)]
    );
    let mut expected = examples.clone();
    expected.sort_by_key(|e| e.subset != "Lifestyle_and_Personal_Development");
    assert_eq!(load(spec(tmp.path()), &[]).unwrap().examples, expected);
}

#[test]
fn a_second_export_replaces_the_first_and_leaves_other_files() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("README.md"), "---\nlicense: apache-2.0\n---\n").unwrap();
    write_hf_layout(tmp.path(), &tricky_examples()).unwrap();
    let mut changed = tricky_examples();
    changed[1].chosen = "Totoro.".into();
    write_hf_layout(tmp.path(), &changed).unwrap();
    assert_eq!(load(spec(tmp.path()), &[]).unwrap().examples[0].chosen, "Totoro.");
    assert!(tmp.path().join("README.md").is_file());
}

fn refusal(dir: &Path, examples: &[Example]) -> String {
    let err = write_hf_layout(dir, examples).unwrap_err();
    assert!(matches!(err, DataError::Export { .. }), "{err:?}");
    err.to_string()
}

#[test]
fn refuses_input_that_would_not_load_back_as_given() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    assert!(refusal(&dir, &[]).contains("no examples to export"));
    let with_subset = |name: &str| {
        let mut ex = tricky_examples();
        ex[2].subset = name.into();
        ex
    };
    assert!(refusal(&dir, &with_subset("")).contains("empty subset name"));
    assert!(refusal(&dir, &with_subset("  ")).contains("empty subset name"));
    for bad in ["..", ".", "../x", "a/b", "a\\b", ".hidden", "-x", "sp ace", "é"] {
        let msg = refusal(&dir, &with_subset(bad));
        assert!(msg.contains("is not a safe folder name"), "{bad}: {msg}");
    }
    let msg = refusal(&dir, &with_subset("art"));
    assert!(msg.contains("would load back as \"Art_and_Entertainment\""), "{msg}");
    let msg = refusal(&dir, &with_subset("Friendly_Unfriendly"));
    assert!(msg.contains("differ only in case"), "{msg}");
    // Nothing was written by any refusal.
    assert!(!dir.exists());
}

#[test]
fn refuses_rows_the_loader_would_reject_before_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let mut ex = tricky_examples();
    ex[3].id = "art-001".into();
    let err = write_hf_layout(&dir, &ex).unwrap_err();
    assert!(matches!(err, DataError::DuplicateId { row: 2, first_row: 1, .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("Art_and_Entertainment/{FILE}")), "{err}");
    let mut ex = tricky_examples();
    ex[2].rejected = ex[2].chosen.clone();
    let err = write_hf_layout(&dir, &ex).unwrap_err();
    assert!(matches!(err, DataError::SameAnswers { row: 2, .. }), "{err:?}");
    assert!(!dir.exists());
}

#[test]
fn refuses_a_directory_holding_other_data_the_loader_would_mix_in() {
    for (stale, what) in [
        (
            "Society_and_Culture/test-00000-of-00001.parquet",
            "`Society_and_Culture/test-00000-of-00001.parquet`",
        ),
        (
            "friendly_unfriendly/test-00000-of-00002.parquet",
            "`friendly_unfriendly/test-00000-of-00002.parquet`",
        ),
        ("extra.jsonl", "`extra.jsonl`"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(stale);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"x").unwrap();
        let msg = refusal(tmp.path(), &tricky_examples());
        assert!(msg.contains(&format!("{what} is already there")), "{msg}");
        assert!(!tmp.path().join("Art_and_Entertainment").exists(), "nothing written");
    }
}

#[test]
fn card_yaml_declares_configs_features_and_row_counts() {
    let configs = [
        ExportedConfig {
            subset: "Art_and_Entertainment".into(),
            path: Path::new("Art_and_Entertainment").join(FILE),
            rows: 767,
            bytes: 1234,
            arrow_bytes: 5678,
            sha256: "00".into(),
            user_id_column: false,
        },
        ExportedConfig {
            subset: "yes".into(),
            path: Path::new("yes").join(FILE),
            rows: 2,
            bytes: 99,
            arrow_bytes: 400,
            sha256: "11".into(),
            // This config has user ids: its features end with `user_id`.
            user_id_column: true,
        },
    ];
    let features = "  features:
  - name: id
    dtype: string
  - name: question
    dtype: string
  - name: profile
    list:
    - name: category
      dtype: string
    - name: id
      dtype: string
    - name: text
      dtype: string
  - name: rubric_aspects
    list:
    - name: aspect
      dtype: string
    - name: evidence
      dtype: string
    - name: reason
      dtype: string
  - name: narrative
    dtype: string
  - name: category
    dtype: string
  - name: chosen
    dtype: string
  - name: rejected
    dtype: string
";
    let expected = format!(
        "configs:
- config_name: Art_and_Entertainment
  data_files:
  - split: test
    path: Art_and_Entertainment/test-*
- config_name: \"yes\"
  data_files:
  - split: test
    path: yes/test-*
dataset_info:
- config_name: Art_and_Entertainment
{features}  splits:
  - name: test
    num_bytes: 5678
    num_examples: 767
  download_size: 1234
  dataset_size: 5678
- config_name: \"yes\"
{features}  - name: user_id
    dtype: string
  splits:
  - name: test
    num_bytes: 400
    num_examples: 2
  download_size: 99
  dataset_size: 400
"
    );
    assert_eq!(card_yaml(&configs), expected);
    assert_eq!(card_yaml(&[]), "configs: []\ndataset_info: []\n");
}
