//! The HTML report in a real headless Chromium (Debian's `chromium`, driven over the DevTools
//! protocol by prbench-browser), on the fixture `tools/make_report_fixture.sh` made from the
//! bundled sample: SmolLM2 under none, profile:3, planner and oracle (both orders), two control
//! baselines run as models, a Best-of-N folder and a correlate result. One example carries
//! hostile text in its posts, question, chosen answer and narrative.
//!
//! Expected values come from the fixture's own files (summary.json, outcomes.jsonl, the
//! dataset), read here with serde_json, not from the report code.
//!
//! `PRBENCH_SCREENSHOTS=DIR` also writes one PNG per report section into DIR (how
//! docs/report/ was made).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use prbench_browser::{chromium_or_skip, Page};
use prbench_report::html::{render, ReportOptions};
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sample-report")
}

const RUNS: [&str; 6] =
    ["smol-none", "smol-profile-k3", "smol-planner", "smol-oracle", "longer", "shorter"];

/// Writes the report of the whole fixture to a temp file and returns (dir guard, file URL).
fn write_report() -> (tempfile::TempDir, String) {
    let f = fixture();
    let paths = vec![
        f.join("runs/smol-matrix.json"),
        f.join("runs/longer"),
        f.join("runs/shorter"),
        f.join("bon"),
        f.join("correlation.json"),
    ];
    let sources = prbench_report::sources::load(&paths).expect("fixture loads");
    let opts = ReportOptions {
        data: vec![f.join("data").display().to_string()],
        title: None,
        generator: "test".into(),
        study: vec![],
    };
    let html = render(&sources, &opts).expect("report renders");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.html");
    std::fs::write(&path, html).unwrap();
    let url = format!("file://{}", path.display());
    (dir, url)
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn outcomes(run: &str) -> Vec<Value> {
    std::fs::read_to_string(fixture().join("runs").join(run).join("outcomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn dataset() -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(fixture().join("data")).unwrap() {
        let p = entry.unwrap().path();
        for line in std::fs::read_to_string(&p).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            out.insert(v["id"].as_str().unwrap().to_string(), v);
        }
    }
    out
}

fn open(url: &str) -> Option<(prbench_browser::Browser, Page)> {
    let browser = chromium_or_skip()?;
    let page = browser.open(url).expect("report opens");
    page.wait_for("body[data-ready='1']", Duration::from_secs(10))
        .expect("the report's script ran");
    Some((browser, page))
}

fn js_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn set_select(page: &Page, id: &str, value: &str) {
    page.eval(&format!("(() => {{ const s = document.getElementById({}); s.value = {}; s.dispatchEvent(new Event('change')); return s.value; }})()", js_str(id), js_str(value)))
        .unwrap();
}

fn listed(page: &Page) -> BTreeSet<(String, String)> {
    let v = page.eval("Array.from(document.querySelectorAll('#item-list li')).map(li => [li.dataset.run, li.dataset.item])").unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_str().unwrap().to_string()))
        .collect()
}

fn screenshot(page: &Page, selector: &str, name: &str) {
    if let Ok(dir) = std::env::var("PRBENCH_SCREENSHOTS") {
        std::fs::create_dir_all(&dir).unwrap();
        page.screenshot_element(selector, Path::new(&dir).join(name)).unwrap();
    }
}

#[test]
fn leaderboard_shows_the_figures_of_summary_json() {
    let (_dir, url) = write_report();
    let Some((_b, page)) = open(&url) else { return };
    for run in RUNS {
        let summary = read_json(&fixture().join("runs").join(run).join("summary.json"));
        let cells = page
            .eval(&format!(
                "Object.fromEntries(Array.from(document.querySelectorAll('tr.lb-row[data-run={}][data-kind]')).filter(r => r.dataset.model === {}).flatMap(r => Array.from(r.cells).map(c => [c.dataset.col, [c.dataset.v, c.textContent]])))",
                js_str(run),
                js_str(summary["model"].as_str().unwrap())
            ))
            .unwrap();
        for row in summary["rows"].as_array().unwrap() {
            let label = row["label"].as_str().unwrap();
            let cell = &cells[label];
            assert!(cell.is_array(), "run {run}: no leaderboard cell for `{label}` in {cells}");
            let strict = row["strict"].as_f64().unwrap();
            assert_eq!(
                cell[0].as_str().unwrap().parse::<f64>().unwrap(),
                strict,
                "run {run}, {label}"
            );
            let [lo, hi] =
                [row["strict_ci"][0].as_f64().unwrap(), row["strict_ci"][1].as_f64().unwrap()];
            assert_eq!(
                cell[1].as_str().unwrap(),
                format!("{:.1} [{:.1}, {:.1}]", strict * 100.0, lo * 100.0, hi * 100.0),
                "run {run}, {label}"
            );
        }
        if let Some(d) = summary["both_orders"]["debiased_rows"].as_array() {
            let micro = d.iter().find(|r| r["label"] == "micro").unwrap();
            assert_eq!(
                cells["debiased"][0].as_str().unwrap().parse::<f64>().unwrap(),
                micro["strict"].as_f64().unwrap(),
                "run {run} debiased"
            );
        }
        let tally =
            summary["rows"].as_array().unwrap().iter().find(|r| r["label"] == "micro").unwrap();
        for (col, key) in
            [("unparsed", "unparsed"), ("ties", "ties"), ("errors", "errors"), ("n", "n")]
        {
            assert_eq!(cells[col][1].as_str().unwrap(), tally[key].to_string(), "run {run} {col}");
        }
    }
    // The oracle row is marked as an upper bound and listed after every benchmark row.
    let order = page
        .eval("Array.from(document.querySelectorAll('tr.lb-row')).map(r => r.dataset.upper)")
        .unwrap();
    let order: Vec<&str> = order.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(order.iter().filter(|u| **u == "true").count(), 1);
    assert_eq!(order.last(), Some(&"true"));
    // The five control baselines of the summaries are rows marked as such; `longer` and
    // `shorter`, also run as models on the same items, are listed once, as their runs.
    let baselines = page.eval("Array.from(document.querySelectorAll('tr.lb-row.kind-baseline')).map(r => r.dataset.model + ' ' + r.dataset.run)").unwrap();
    let mut baselines: Vec<&str> =
        baselines.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    baselines.sort();
    assert_eq!(
        baselines,
        [
            "baseline:longer longer",
            "baseline:profile-overlap smol-none",
            "baseline:random smol-none",
            "baseline:shorter shorter",
            "baseline:slot-a smol-none"
        ]
    );
    // Sorting by a column orders the rows by its values.
    page.click("th[data-col='micro']").unwrap();
    let vals = page.eval("Array.from(document.querySelectorAll('tr.lb-row td[data-col=micro]')).map(c => Number(c.dataset.v))").unwrap();
    let vals: Vec<f64> = vals.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(vals.windows(2).all(|w| w[0] <= w[1]), "ascending after one click: {vals:?}");
    screenshot(&page, "#sec-leaderboard", "leaderboard.png");
    screenshot(&page, "#sec-plots", "plots.png");
    screenshot(&page, "#sec-matrix", "matrix.png");
    screenshot(&page, "#sec-bon", "bon.png");
    screenshot(&page, "#sec-correlation", "correlation.png");
    screenshot(&page, "#sec-provenance", "provenance.png");
    assert_eq!(page.requests(), [url.as_str()], "the report made a network request");
}

#[test]
fn filtering_by_result_lists_exactly_those_outcomes() {
    let (_dir, url) = write_report();
    let Some((_b, page)) = open(&url) else { return };
    let all: Vec<(String, Value)> = RUNS
        .iter()
        .flat_map(|r| outcomes(r).into_iter().map(move |o| (r.to_string(), o)))
        .collect();
    for result in ["wrong", "correct"] {
        set_select(&page, "f-result", result);
        let want: BTreeSet<(String, String)> = all
            .iter()
            .filter(|(_, o)| o["result"] == result)
            .map(|(r, o)| (r.clone(), o["example_id"].as_str().unwrap().to_string()))
            .collect();
        assert!(!want.is_empty());
        assert_eq!(listed(&page), want, "result = {result}");
    }
    // With the position-debiased metric and one condition.
    set_select(&page, "f-metric", "debiased");
    set_select(&page, "f-condition", "oracle");
    set_select(&page, "f-result", "wrong");
    let want: BTreeSet<(String, String)> = outcomes("smol-oracle")
        .iter()
        .filter(|o| o["debiased_result"] == "wrong")
        .map(|o| ("smol-oracle".to_string(), o["example_id"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(listed(&page), want);
    // Full-text search: an answer's words find its item.
    set_select(&page, "f-result", "");
    set_select(&page, "f-condition", "");
    let data = dataset();
    let ex = &data["sample-soc-02"];
    let words: String =
        ex["rejected"].as_str().unwrap().split_whitespace().take(4).collect::<Vec<_>>().join(" ");
    let before = page.eval("document.getElementById('f-count').textContent").unwrap();
    page.type_text("#f-search", &words).unwrap();
    // The search runs 150 ms after the last keystroke: wait for the count to change.
    for _ in 0..100 {
        if page.eval("document.getElementById('f-count').textContent").unwrap() != before {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let items: BTreeSet<String> = listed(&page).into_iter().map(|(_, i)| i).collect();
    assert!(items.contains("sample-soc-02"), "search `{words}` gave {items:?}");
    screenshot(&page, "#sec-items", "items.png");
    assert_eq!(page.requests(), [url]);
}

#[test]
fn a_deep_link_opens_its_item_with_the_rubric_hidden_until_revealed() {
    let (_dir, url) = write_report();
    let Some((_b, page)) = open(&url) else { return };
    let data = dataset();
    let ex = &data["sample-life-02"];
    page.goto(&format!("{url}#item=sample-life-02&condition=profile:3")).unwrap();
    page.wait_for("#item-detail[data-item='sample-life-02']", Duration::from_secs(5)).unwrap();
    assert_eq!(
        page.eval("document.getElementById('item-detail').dataset.run").unwrap(),
        "smol-profile-k3"
    );
    assert_eq!(
        page.eval("document.getElementById('d-question').textContent").unwrap(),
        ex["question"]
    );
    // The posts listed are the run's top-k, in its order, with their texts from the dataset.
    let o = outcomes("smol-profile-k3")
        .into_iter()
        .find(|o| o["example_id"] == "sample-life-02")
        .unwrap();
    let ids = page
        .eval("Array.from(document.querySelectorAll('#d-posts li')).map(li => li.dataset.post)")
        .unwrap();
    assert_eq!(ids, o["post_ids"], "posts in the run's rank order");
    // Both answers are shown, chosen marked.
    let chosen = page.eval("document.querySelector('.answer.is-chosen').textContent").unwrap();
    assert!(chosen.as_str().unwrap().ends_with(ex["chosen"].as_str().unwrap()));
    // The rubric and the narrative are not shown until revealed (innerText: what is rendered,
    // not the page's data script).
    let narrative = ex["narrative"].as_str().unwrap();
    let aspect = ex["rubric_aspects"][0]["aspect"].as_str().unwrap();
    let body = page.eval("document.body.innerText").unwrap();
    assert!(!body.as_str().unwrap().contains(narrative), "narrative visible before reveal");
    assert!(!body.as_str().unwrap().contains(aspect), "rubric visible before reveal");
    assert_eq!(
        page.eval("document.getElementById('d-narrative')").unwrap(),
        serde_json::Value::Null,
        "no narrative element before reveal"
    );
    page.click("#reveal").unwrap();
    assert_eq!(page.eval("document.getElementById('d-narrative').textContent").unwrap(), narrative);
    assert!(
        page.eval("document.body.innerText").unwrap().as_str().unwrap().contains(narrative),
        "shown after reveal"
    );
    let aspects = page
        .eval(
            "Array.from(document.querySelectorAll('#d-rubric li strong')).map(s => s.textContent)",
        )
        .unwrap();
    let want: Vec<&str> = ex["rubric_aspects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["aspect"].as_str().unwrap())
        .collect();
    assert_eq!(aspects, serde_json::json!(want));
    screenshot(&page, "#sec-items", "item.png");
    assert_eq!(page.requests(), [url]);
}

#[test]
fn hostile_text_from_data_renders_as_text() {
    let (_dir, url) = write_report();
    let Some((_b, page)) = open(&url) else { return };
    let scripts_before = page.eval("document.scripts.length").unwrap();
    page.goto(&format!("{url}#item=sample-art-01&condition=profile:3")).unwrap();
    page.wait_for("#item-detail[data-item='sample-art-01']", Duration::from_secs(5)).unwrap();
    page.click("#reveal").unwrap();
    let q = page.eval("document.getElementById('d-question').textContent").unwrap();
    assert!(
        q.as_str()
            .unwrap()
            .contains("<script>alert(1)</script> <img src=x onerror=alert(2)> </svg>"),
        "{q}"
    );
    let posts = page.eval("document.getElementById('d-posts').textContent").unwrap();
    assert!(posts.as_str().unwrap().contains("<img src=x onerror=alert(2)>"), "{posts}");
    assert!(page
        .eval("document.getElementById('d-narrative').textContent")
        .unwrap()
        .as_str()
        .unwrap()
        .contains("<script>alert(1)</script>"));
    assert_eq!(
        page.eval("document.scripts.length").unwrap(),
        scripts_before,
        "no script element was created"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('img').length").unwrap(),
        0,
        "no img element was created"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(page.dialogs().is_empty(), "a dialog opened: {:?}", page.dialogs());
    assert_eq!(page.requests(), [url]);
}

#[test]
fn run_vs_run_shows_the_agreement_table_and_mcnemar_p() {
    let (_dir, url) = write_report();
    let Some((_b, page)) = open(&url) else { return };
    let index = page
        .eval("JSON.parse(document.getElementById('prb-data').textContent).runs.map(r => r.id)")
        .unwrap();
    let pos =
        |id: &str| index.as_array().unwrap().iter().position(|v| v == id).unwrap().to_string();
    set_select(&page, "rv-a", &pos("smol-none"));
    set_select(&page, "rv-b", &pos("smol-oracle"));
    set_select(&page, "rv-metric", "primary");
    let (a, b) = (outcomes("smol-none"), outcomes("smol-oracle"));
    let (mut both, mut only_a, mut only_b, mut neither) = (0, 0, 0, 0);
    let mut disagree = BTreeSet::new();
    for x in &a {
        let y = b.iter().find(|y| y["example_id"] == x["example_id"]).unwrap();
        match (x["result"] == "correct", y["result"] == "correct") {
            (true, true) => both += 1,
            (true, false) => {
                only_a += 1;
                disagree.insert(x["example_id"].as_str().unwrap().to_string());
            }
            (false, true) => {
                only_b += 1;
                disagree.insert(x["example_id"].as_str().unwrap().to_string());
            }
            (false, false) => neither += 1,
        }
    }
    let cell =
        |id: &str| page.eval(&format!("document.getElementById('{id}').textContent")).unwrap();
    assert_eq!(cell("rv-both"), both.to_string());
    assert_eq!(cell("rv-only-a"), only_a.to_string());
    assert_eq!(cell("rv-only-b"), only_b.to_string());
    assert_eq!(cell("rv-neither"), neither.to_string());
    // Exact McNemar by hand: p = min(1, 2 P(X <= min(b, c))), X ~ Bin(b + c, 1/2).
    let n = only_a + only_b;
    let k = only_a.min(only_b);
    let choose = |n: u64, k: u64| (0..k).fold(1f64, |acc, i| acc * (n - i) as f64 / (i + 1) as f64);
    let p = if n == 0 {
        1.0
    } else {
        (2.0 * (0..=k).map(|j| choose(n, j)).sum::<f64>() / 2f64.powi(n as i32)).min(1.0)
    };
    assert_eq!(cell("rv-p"), format!("{p:.4}"));
    let listed = page
        .eval("Array.from(document.querySelectorAll('#rv-disagree li')).map(li => li.dataset.item)")
        .unwrap();
    let listed: BTreeSet<String> =
        listed.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert_eq!(listed, disagree);
    screenshot(&page, "#sec-runvsrun", "runvsrun.png");
    // A disagreement links to the browser.
    if !disagree.is_empty() {
        page.click("#rv-disagree li a").unwrap();
        page.wait_for("#item-detail[data-run='smol-none']", Duration::from_secs(5)).unwrap();
    }
    assert_eq!(page.requests(), [url]);
}

/// A `prbench build` folder (its manifest and report, as prbench-build writes them, here by
/// hand) beside the fixture's runs: the report gets a build section drawing the build's own
/// Markdown report, and hostile text in it stays text.
#[test]
fn a_build_folder_gets_a_section_whose_text_cannot_act() {
    let tmp = tempfile::tempdir().unwrap();
    let build = tmp.path().join("built");
    std::fs::create_dir_all(build.join("build")).unwrap();
    use prbench_records::build::{
        BuildManifest, BuildSettings, InputInfo, PromptHashes, StageCounts, StageTimes,
    };
    let qwen = || {
        serde_json::from_value(serde_json::json!({"spec": "gguf:/m/qwen.gguf", "engine": "llama.cpp", "file_hash": "", "chat_template_hash": "", "dtype": "Q4_1"})).unwrap()
    };
    let counts = |subset: &str, examples, kept| StageCounts {
        subset: subset.into(),
        examples,
        kept,
        ..StageCounts::default()
    };
    let manifest = BuildManifest {
        code_version: "0.1.0 (test)".into(),
        started: "2026-01-01T00:00:00Z".into(),
        finished: "2026-01-01T00:01:00Z".into(),
        input: InputInfo {
            source: "data/<b>sample</b>".into(),
            kind: "prb".into(),
            hash: "0".repeat(64),
            rows: 12,
            built: 12,
            limit: None,
        },
        retriever: "bm25".into(),
        generator: qwen(),
        judge: Some(qwen()),
        prompts: PromptHashes { chosen: "c".into(), rejected: "r".into(), audit: "a".into() },
        settings: BuildSettings::default(),
        counts: vec![counts("Art_and_Entertainment", 4, 1), counts("all", 12, 5)],
        cache: None,
        wall_seconds: StageTimes::default(),
        files: vec![],
    };
    std::fs::write(build.join("build/build.json"), serde_json::to_string(&manifest).unwrap())
        .unwrap();
    std::fs::write(
        build.join("build-report.md"),
        "# Build report\n\n- **kept 5 of 12 pairs (41.7%)**\n\n<script>window.pwned = 1</script>\n\n| subset | built | kept |\n|---|---:|---:|\n| Art | 4 | 1 |\n| all | 12 | 5 |\n\n\
         - `x<img src=x onerror=\"window.pwned=2\">`: dropped [see](javascript:window.pwned=3) <img src=x onerror=\"window.pwned=4\">\n",
    )
    .unwrap();
    let f = fixture();
    let sources = prbench_report::sources::load(&[f.join("runs/longer"), build.clone()])
        .expect("a run and a build load");
    assert_eq!(sources.builds.len(), 1);
    let opts = ReportOptions {
        data: vec![f.join("data").display().to_string()],
        title: None,
        generator: "test".into(),
        study: vec![],
    };
    let path = tmp.path().join("report.html");
    std::fs::write(&path, render(&sources, &opts).unwrap()).unwrap();
    let url = format!("file://{}", path.display());
    let Some((_b, page)) = open(&url) else { return };
    assert_eq!(
        page.eval("document.querySelectorAll('nav a[href=\"#sec-build\"]').length").unwrap(),
        1
    );
    let meta = page.eval("document.querySelector('#sec-build .meta').textContent").unwrap();
    assert_eq!(meta.as_str().unwrap(), "From data/<b>sample</b> by generator gguf:/m/qwen.gguf, audited by gguf:/m/qwen.gguf: 5 of 12 pairs kept. prbench 0.1.0 (test).");
    let cells = page.eval("Array.from(document.querySelectorAll('#sec-build .build-report table td')).map(td => td.textContent)").unwrap();
    assert_eq!(cells, serde_json::json!(["Art", "4", "1", "all", "12", "5"]));
    let text = page.eval("document.querySelector('#sec-build .build-report').textContent").unwrap();
    let text = text.as_str().unwrap();
    assert!(text.contains("<script>window.pwned = 1</script>"), "{text}");
    assert!(text.contains("x<img src=x onerror=\"window.pwned=2\">"), "{text}");
    assert!(text.contains("dropped see <img src=x onerror=\"window.pwned=4\">"), "{text}");
    assert_eq!(
        page.eval(
            "document.querySelectorAll('#sec-build img, #sec-build a, #sec-build script').length"
        )
        .unwrap(),
        0
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(page.eval("typeof window.pwned").unwrap(), "undefined");
    assert!(page.dialogs().is_empty(), "{:?}", page.dialogs());
    assert_eq!(page.requests(), [url]);
    screenshot(&page, "#sec-build", "build.png");
}

#[test]
fn an_annotation_folder_gets_a_human_evaluation_section_linking_each_disagreement_to_its_item() {
    use prbench_annotate::{AnswerRating, Opened, Store, StoreSpec, Submission};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ratings");
    let mut ex: Vec<prbench_data::Example> =
        prbench_data::load(&fixture().join("data").display().to_string(), &[]).unwrap().examples;
    ex.truncate(3);
    ex[1].question =
        "<script>window.pwned = 1</script> <img src=x onerror=\"window.pwned=2\">".into();
    let names: Vec<String> = vec!["ann".into(), "bob".into()];
    let spec = StoreSpec {
        examples: &ex,
        source: "fixture",
        dataset_hash: "h",
        annotators: &names,
        per_item: 2,
        seed: 1,
        selection: "all items",
    };
    let (store, Opened::Created(_)) = Store::open_or_create(&dir, &spec).unwrap() else {
        panic!("new")
    };
    // Both raters pick chosen on items 0 and 2 and rejected on item 1 (by the true label).
    for who in ["ann", "bob"] {
        for pos in 1..=3 {
            let v = store.item(who, pos).unwrap().unwrap();
            let idx = ex.iter().position(|e| e.id == v.item_id).unwrap();
            let chosen_is_1 = v.answers[0] == ex[idx].chosen;
            let picks_chosen = idx != 1;
            let a = |s: u8| AnswerRating {
                factuality: 5,
                relevance: 5,
                helpfulness: 4,
                rubric_fit: s,
                comment: format!("{who} <img src=x onerror=\"window.pwned=3\">"),
            };
            let (c, r) = if picks_chosen { (a(5), a(2)) } else { (a(2), a(4)) };
            let answers = if chosen_is_1 { [c, r] } else { [r, c] };
            let better = if picks_chosen == chosen_is_1 { 1 } else { 2 };
            store.submit(who, pos, &Submission { answers, better }).unwrap();
        }
    }
    drop(store);
    let sources = prbench_report::sources::load(std::slice::from_ref(&dir))
        .expect("an annotation folder loads");
    assert_eq!(sources.annotations.len(), 1);
    let path = tmp.path().join("report.html");
    std::fs::write(
        &path,
        render(
            &sources,
            &ReportOptions {
                data: Vec::new(),
                title: None,
                generator: "test".into(),
                study: Vec::new(),
            },
        )
        .unwrap(),
    )
    .unwrap();
    let url = format!("file://{}", path.display());
    let Some((_b, page)) = open(&url) else { return };
    assert_eq!(
        page.eval("document.querySelectorAll('nav a[href=\"#sec-annotate\"]').length").unwrap(),
        1
    );
    let meta = page.eval("document.querySelector('#sec-annotate .meta').textContent").unwrap();
    assert_eq!(
        meta.as_str().unwrap(),
        "6 of 6 assigned ratings saved by 2 annotators over 3 items of fixture."
    );
    // The one disagreement (item 1, both raters picked rejected) links to its item view.
    let id = &ex[1].id;
    let anchor = prbench_annotate::report::anchor(id);
    let links = page.eval("Array.from(document.querySelectorAll('#sec-annotate a[href]')).map(a => a.getAttribute('href'))").unwrap();
    assert_eq!(links, serde_json::json!([format!("#{anchor}")]));
    page.click(&format!("#sec-annotate a[href='#{anchor}']")).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(page.eval("location.hash").unwrap(), format!("#{anchor}"));
    let view = page
        .eval(&format!(
            "document.getElementById('{anchor}').parentElement.nextElementSibling.textContent"
        ))
        .unwrap();
    assert_eq!(view.as_str().unwrap(), format!("Item {id}"));
    let text = page.eval("document.querySelector('#sec-annotate').textContent").unwrap();
    let text = text.as_str().unwrap();
    assert!(
        text.contains("<script>window.pwned = 1</script>")
            && text.contains("onerror=\"window.pwned=3\""),
        "{text}"
    );
    assert!(!text.contains("| ann |"), "tables are drawn as tables, not left as Markdown text");
    assert_eq!(
        page.eval("document.querySelectorAll('#sec-annotate img, #sec-annotate script').length")
            .unwrap(),
        0
    );
    // The human-evaluation table: chosen's rubric fit is (5+5+2+5+5+2)/6 = 4.
    let cells = page.eval("Array.from(document.querySelectorAll('#sec-annotate table')[1].querySelectorAll('tr')).map(tr => Array.from(tr.children).map(c => c.textContent))").unwrap();
    assert_eq!(cells[1][2], "chosen");
    assert!(cells[1][6].as_str().unwrap().starts_with("4.00 ["), "{cells}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(page.eval("typeof window.pwned").unwrap(), "undefined");
    assert!(page.dialogs().is_empty(), "{:?}", page.dialogs());
    assert_eq!(page.requests(), [url.as_str()]);
    page.eval("location.hash = ''; window.scrollTo(0, 0)").unwrap();
    screenshot(&page, "#sec-annotate", "annotate-report.png");
}

/// A comparison of several benchmarks (`correlate --benchmark-set`, made here by the library on
/// CSVs) beside a run: the correlation section shows the paper-form table with the figures of
/// the comparison's JSON, the paired differences and two plots, and set names, model labels and
/// the downstream name holding markup render as text.
#[test]
fn a_comparison_of_benchmarks_shows_the_papers_table_and_its_text_cannot_act() {
    use prbench_report::correlation::{compare, interval_text, BenchmarkSet, ComparisonOptions};
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    let hostile = "<img src=x onerror=\"window.pwned=1\">";
    let down = [(hostile, 1.41), ("m2", 1.22), ("m3", 1.35), ("m4", 1.18), ("m5", 0.95)];
    let write = |name: &str, scores: [f64; 5]| {
        let mut text = String::from("model,score\n");
        for ((m, _), s) in down.iter().zip(scores) {
            text.push_str(&format!("{m},{s}\n"));
        }
        std::fs::write(p.join(name), text).unwrap();
    };
    write("down.csv", down.map(|d| d.1));
    write("prb.csv", [0.72, 0.65, 0.67, 0.63, 0.48]);
    write("arena.csv", [0.55, 0.61, 0.52, 0.66, 0.58]);
    let set =
        |name: &str, file: &str| BenchmarkSet { name: name.into(), paths: vec![p.join(file)] };
    let mut opts = ComparisonOptions::new(
        vec![set("<script>window.pwned=2</script>", "prb.csv"), set("Arena", "arena.csv")],
        vec![p.join("down.csv")],
    );
    opts.downstream_name = Some("<b onclick=\"window.pwned=3\">BoN</b>".into());
    opts.options.bootstrap = 1_000;
    opts.options.permutations = 1_000;
    let got = compare(&opts, &mut |_| {}).unwrap();
    let json = p.join("cmp.json");
    std::fs::write(&json, serde_json::to_string_pretty(&got).unwrap()).unwrap();
    let f = fixture();
    let sources = prbench_report::sources::load(&[f.join("runs/longer"), json]).unwrap();
    let report = ReportOptions {
        data: vec![f.join("data").display().to_string()],
        title: None,
        generator: "test".into(),
        study: vec![],
    };
    let path = p.join("report.html");
    std::fs::write(&path, render(&sources, &report).unwrap()).unwrap();
    let url = format!("file://{}", path.display());
    let Some((_b, page)) = open(&url) else { return };
    let rows = page.eval("Array.from(document.querySelectorAll('#sec-correlation table.comparison-paper tbody tr')).map(tr => Array.from(tr.cells).map(td => td.textContent))").unwrap();
    let want: Vec<Vec<String>> = got
        .sets
        .iter()
        .map(|s| {
            let b = &s.correlation.bootstrap.stats;
            let mut row = vec![s.name.clone(), "<b onclick=\"window.pwned=3\">BoN</b>".into()];
            row.extend(
                [b.ndcg, b.weighted_tau, b.spearman, b.kendall_tau_b, b.rbo]
                    .iter()
                    .map(interval_text),
            );
            row
        })
        .collect();
    assert_eq!(rows, serde_json::to_value(&want).unwrap());
    let diff = page.eval("Array.from(document.querySelectorAll('#sec-correlation table.comparison-differences tbody td')).map(td => td.textContent)").unwrap();
    assert_eq!(diff[0].as_str().unwrap(), "<script>window.pwned=2</script> − Arena");
    assert_eq!(
        diff[3].as_str().unwrap(),
        prbench_report::correlation::difference_text(&got.pairs[0].difference.spearman)
    );
    assert_eq!(
        page.eval("document.querySelectorAll('#sec-correlation article.comparison svg').length")
            .unwrap(),
        2
    );
    // The set names are drawn in the plot as text.
    let labels = page
        .eval("Array.from(document.querySelectorAll('#sec-correlation article.comparison svg text')).map(t => t.textContent).join(' | ')")
        .unwrap();
    assert!(labels.as_str().unwrap().contains("<script>window.pwned=2</script>"), "{labels}");
    assert_eq!(
        page.eval("document.querySelectorAll('#sec-correlation script, #sec-correlation img, #sec-correlation b').length")
            .unwrap(),
        0
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(page.eval("typeof window.pwned").unwrap(), "undefined");
    assert!(page.dialogs().is_empty(), "{:?}", page.dialogs());
    assert_eq!(page.requests(), [url]);
    screenshot(&page, "#sec-correlation article.comparison", "comparison.png");
}
