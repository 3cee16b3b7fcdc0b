//! The item browser's data carries each example's user for data with user ids (SynthesizeMe,
//! PRISM), and nothing more for PRB data, which has none. The page prints it in the item's header
//! line (`… · subset · user ID · …`, as text).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use prbench_data::Dataset;
use prbench_records::manifest::PartialManifest;
use prbench_records::outcome::Outcome;
use prbench_report::html::payload::build_with;
use prbench_report::sources::RunSource;
use prbench_report::Summary;
use serde_json::{json, Value};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// A run over the first `n` examples of `data`: the fixture's `longer` summary pointed at
/// `data`, one outcome per example.
fn run_on(data: &Dataset, n: usize) -> RunSource {
    let text = std::fs::read_to_string(
        here().join("tests/fixtures/sample-report/runs/longer/summary.json"),
    )
    .unwrap();
    let mut summary: Summary = serde_json::from_str(&text).unwrap();
    summary.dataset = data.source.clone();
    summary.dataset_hash = data.hash.clone();
    summary.dataset_kind = data.kind.clone();
    // One row counting the `n` outcomes (all correct), no baselines.
    summary.rows.retain(|r| r.label == "micro");
    let tally = &mut summary.rows[0].tally;
    (tally.n, tally.correct, tally.wrong) = (n, n, 0);
    summary.baselines.clear();
    let outcomes: Vec<Outcome> = data.examples[..n]
        .iter()
        .map(|e| {
            serde_json::from_value(json!({
                "example_id": e.id, "subset": e.subset, "condition": summary.condition,
                "model": summary.model, "result": "correct", "input_tokens": 0,
                "truncated_tokens": 0, "latency_ms": 0.0
            }))
            .unwrap()
        })
        .collect();
    RunSource {
        dir: PathBuf::from("runs/r"),
        manifest: PartialManifest::default(),
        summary,
        outcomes,
        plans: HashMap::new(),
    }
}

fn items_json(data: Dataset, n: usize) -> Vec<Value> {
    let run = run_on(&data, n);
    let payload = build_with(&[run], &[], &mut vec![std::borrow::Cow::Owned(data)]).unwrap();
    serde_json::to_value(&payload.items).unwrap().as_array().unwrap().clone()
}

#[test]
fn items_of_data_with_user_ids_name_their_user() {
    let spec = format!("prism:{}", here().join("../prbench-data/tests/fixtures/prism").display());
    let data = prbench_data::load(&spec, &[]).unwrap();
    let items = items_json(data, 6);
    let got: Vec<(&str, &str)> =
        items.iter().map(|i| (i["id"].as_str().unwrap(), i["user"].as_str().unwrap())).collect();
    assert_eq!(
        got,
        [
            ("c0-t0-0", "user0"),
            ("c0-t0-1", "user0"),
            ("c0-t0-3", "user0"),
            ("c0-t1-0", "user0"),
            ("c0-t2-1", "user0"),
            ("c1-t0-0", "user1")
        ]
    );
}

#[test]
fn prb_items_have_no_user_field() {
    let data =
        prbench_data::load(here().join("tests/fixtures/sample-report/data").to_str().unwrap(), &[])
            .unwrap();
    let items = items_json(data, 3);
    assert_eq!(items.len(), 3);
    assert!(items.iter().all(|i| i.get("user").is_none()), "{items:?}");
}

/// The page itself (headless Chromium): the item's header line names the user, as text.
#[test]
fn the_item_header_names_the_user() {
    let spec = format!("prism:{}", here().join("../prbench-data/tests/fixtures/prism").display());
    let data = prbench_data::load(&spec, &[]).unwrap();
    let run = run_on(&data, 6);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("runs/prism-longer");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("manifest.json"), "{}").unwrap();
    std::fs::write(dir.join("summary.json"), serde_json::to_string(&run.summary).unwrap()).unwrap();
    let lines: String =
        run.outcomes.iter().map(|o| format!("{}\n", serde_json::to_string(o).unwrap())).collect();
    std::fs::write(dir.join("outcomes.jsonl"), lines).unwrap();
    let sources = prbench_report::sources::load(&[dir]).expect("the run folder loads");
    let opts = prbench_report::html::ReportOptions {
        data: Vec::new(),
        title: None,
        generator: "test".into(),
        study: Vec::new(),
    };
    let html = prbench_report::html::render(&sources, &opts).expect("report renders");
    let path = tmp.path().join("report.html");
    std::fs::write(&path, html).unwrap();
    let Some(browser) = prbench_browser::chromium_or_skip() else {
        return;
    };
    let url = format!("file://{}", path.display());
    let page = browser
        .open(&format!("{url}#item=c1-t0-0&condition={}", run.summary.condition))
        .expect("report opens");
    page.wait_for("#item-detail[data-item='c1-t0-0']", Duration::from_secs(10))
        .expect("the item opens");
    let head = page.eval("document.querySelector('#item-detail p.meta').textContent").unwrap();
    let head = head.as_str().unwrap();
    assert!(head.contains(" · prism · user user1 · "), "{head}");
}
