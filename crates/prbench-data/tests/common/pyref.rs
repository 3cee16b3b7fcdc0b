//! The reference Python of the export checks (pyarrow and PyYAML pinned by scripts/setup.sh
//! --tests), shared by prbench-data's and prbench-build's tests (the latter include this file
//! with `#[path]`).
#![allow(dead_code)]

use std::path::PathBuf;

/// The venv folder `scripts/setup.sh` creates (change both together).
const PYREF_VENV: &str = "pyref-pyarrow26.0.1-pyyaml6.0.4";

/// The reference interpreter, or `None` (with the reason on stderr) when it is not installed.
pub fn pyref_or_skip() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PRBENCH_PYREF") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "PRBENCH_PYREF={} is not a file", p.display());
        return Some(p);
    }
    let python = prbench_testkit::tools_dir().join(PYREF_VENV).join("bin/python");
    if python.is_file() {
        return Some(python);
    }
    let why = format!(
        "the reference Python, which is not at {} (run scripts/setup.sh --tests, or set PRBENCH_PYREF)",
        python.display()
    );
    prbench_testkit::unavailable(format!("the pyarrow export test needs {why}"));
    None
}

/// What pyarrow prints for PRB's column types (PROTOCOL.md §1) as `datasets` writes them, i.e.
/// `pa.schema` of `pa.string()` columns and `pa.list_(pa.struct([...]))` columns with pyarrow's
/// defaults (nullable fields, list item `item`); computed once by hand with pyarrow 26.0.1 from
/// those type definitions, not from the writer's output.
pub const PRB_PYARROW_SCHEMA: &str = "id: string
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

/// Runs tools/read_prb_export.py on `dir` with `python`: `{"configs": {NAME: {schema, rows,
/// nbytes}}, "card": <README.md front matter or null>}`.
pub fn read_export(python: &std::path::Path, dir: &std::path::Path) -> serde_json::Value {
    let reader = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/read_prb_export.py");
    let out = std::process::Command::new(python)
        .arg(&reader)
        .arg(dir)
        .output()
        .expect("the reference Python runs");
    assert!(
        out.status.success(),
        "read_prb_export.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the reader prints JSON")
}
