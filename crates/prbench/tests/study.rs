//! `prbench study` end to end on fake engines (a loopback fault server as the `openai:` judge
//! and the `reward-server:` reward model, the control baselines) and the SmolLM2 GGUF as the
//! Best-of-N policy and rubric judge:
//!
//! - a rerun of a finished study makes no model call: the study says 0, and the fault server,
//!   which counts every request it gets, got none;
//! - the proxy-gap figures are those of `prbench correlate --benchmark-set` on the files the
//!   study wrote;
//! - a study SIGKILLed at a random point resumes and ends with the same tables as the
//!   uninterrupted one.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{prbench, sample, text};
use prbench_fault_server::{FaultServer, ServerConfig};

/// The sample's 12 rows in one file, with chosen and rejected swapped in every fourth row (from
/// row `swap`), so that the baselines' accuracies differ (the sample is balanced to give each of them 50%), and
/// three users (`u0`, `u1`, `u2`, row i belonging to u(i mod 3)).
fn uneven_data(dir: &Path, folder: &str, swap: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    for subset in
        ["Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture"]
    {
        let text =
            std::fs::read_to_string(Path::new(&sample()).join(format!("{subset}.jsonl"))).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            v["user_id"] = format!("u{}", i % 3).into();
            if i % 4 == swap {
                let chosen = v["chosen"].take();
                v["chosen"] = v["rejected"].take();
                v["rejected"] = chosen;
            }
            i += 1;
            out += &format!("{v}\n");
        }
    }
    let path = dir.join(folder);
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(path.join("Art_and_Entertainment.jsonl"), out).unwrap();
    path.display().to_string()
}

fn plan(server: &FaultServer, smol: &Path, data: &str, other: &str, heldout: &str) -> String {
    format!(
        r#"seed = 42

[benchmarks.sample]
data = "{data}"
title = '<b>Sample</b> <script>alert(1)</script>'

# A second benchmark: the paired differences between the two against each leg.
[benchmarks.other]
data = "{other}"
title = "Other"

[models.longer]
spec = "baseline:longer"

[models.shorter]
spec = "baseline:shorter"

[models.overlap]
spec = "baseline:profile-overlap"

[models.rs]
spec = "reward-server:{base}"

[models.judge]
spec = "openai:fault-model@{openai}"
conditions = ["none", "oracle"]

[downstream.bon]
kind = "best-of-n"
benchmark = "sample"
n = 2
policy = "gguf:{smol}"
judge = "gguf:{smol}"
models = ["longer", "shorter", "overlap", "rs"]
sample = {{ limit = 3, max-new-tokens = 16 }}

[downstream.rl]
kind = "rl"
title = "RL"
benchmark = "sample"
judge = "gguf:{smol}"
questions = "{heldout}"
n = 1
sample = {{ max-new-tokens = 16 }}

[downstream.rl.policies]
longer = "policies/longer"
shorter = "policies/shorter"
overlap = "policies/overlap"

# A trained policy the study samples itself: a served checkpoint (the fake server), one answer
# to each held-out question.
[downstream.rl.checkpoints]
rs = "openai:fault-policy@{openai}"

# Three policies with the same answers: a constant downstream side, which no rank statistic
# is defined on. The leg gets a row saying so; the study still finishes and writes every table.
[downstream.same]
kind = "rl"
benchmark = "sample"
judge = "gguf:{smol}"

[downstream.same.policies]
longer = "policies/longer"
shorter = "policies/longer"
overlap = "policies/longer"

[correlation]
bootstrap = 1000
permutations = 1000
"#,
        base = server.base_url(),
        openai = server.openai_base(),
        smol = smol.display(),
    )
}

/// The first 3 rows of `data` (a folder `uneven_data` wrote) as the RL leg's held-out questions.
fn heldout(dir: &Path, data: &str) -> String {
    let file = "Art_and_Entertainment.jsonl";
    let text = std::fs::read_to_string(Path::new(data).join(file)).unwrap();
    let path = dir.join("heldout");
    std::fs::create_dir_all(&path).unwrap();
    let rows: Vec<&str> = text.lines().take(3).collect();
    std::fs::write(path.join(file), rows.join("\n") + "\n").unwrap();
    path.display().to_string()
}

fn run_study(dir: &Path, out: &str) -> (String, f64) {
    let started = Instant::now();
    let o = prbench(&["study", "plan.toml", "--out", out, "--quiet"], dir);
    let err = text(&o.stderr);
    assert!(o.status.success(), "study failed:\n{err}");
    (err, started.elapsed().as_secs_f64())
}

/// Every file of `dir` (recursively) as (relative path, contents).
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        out.push((
            p.file_name().unwrap().to_string_lossy().into_owned(),
            std::fs::read_to_string(&p).unwrap(),
        ));
    }
    out.sort();
    out
}

#[test]
fn a_study_reruns_with_no_call_matches_correlate_and_resumes_after_sigkill() {
    let Some(smol) = prbench_testkit::smollm2() else { return };
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let data = uneven_data(dir, "uneven", 0);
    let other = uneven_data(dir, "uneven-other", 2);
    // The RL leg's "trained policies": answers that `bon sample` wrote, one seed per model so
    // that they differ (a real run takes them from examples/trl-grpo/sample.py).
    for (i, name) in ["longer", "shorter", "overlap"].iter().enumerate() {
        let seed = (7 + i).to_string();
        let policy = format!("gguf:{}", smol.display());
        let out = format!("policies/{name}");
        let o = prbench(
            &[
                "bon",
                "sample",
                "--data",
                &data,
                "--policy",
                &policy,
                "--n",
                "1",
                "--limit",
                "3",
                "--max-new-tokens",
                "16",
                "--seed",
                &seed,
                "--out",
                &out,
                "--quiet",
            ],
            dir,
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let held = heldout(dir, &data);
    std::fs::write(dir.join("plan.toml"), plan(&server, &smol, &data, &other, &held)).unwrap();

    // 1. The whole study.
    let (err, seconds) = run_study(dir, "a");
    let first = server.requests();
    assert!(first > 0, "the fake engines were never called:\n{err}");
    assert!(!err.contains(" 0 steps run now"), "{err}");

    // 2. A rerun: no step runs, no model call, not one request at the server.
    let (err, _) = run_study(dir, "a");
    assert!(err.contains("prbench: study: 0 steps run now"), "{err}");
    assert!(err.contains("; 0 model calls"), "{err}");
    assert_eq!(server.requests(), first, "the rerun called the fake engines:\n{err}");
    let status = text(&prbench(&["study", "plan.toml", "--out", "a", "--status"], dir).stdout);
    assert!(!status.is_empty() && status.lines().all(|l| l.contains("cached")), "{status}");

    // 3. The proxy-gap figures are correlate's on the files the study wrote.
    let o = prbench(
        &[
            "correlate",
            "--benchmark-set",
            "<b>Sample</b> <script>alert(1)</script>=a/proxy/bon-sample.csv",
            "--benchmark-set",
            "Other=a/proxy/bon-other.csv",
            "--downstream",
            "a/bon/bon/bon-study-rubric.json",
            "--downstream-name",
            "bon",
            "--k",
            "2",
            "--bootstrap",
            "1000",
            "--permutations",
            "1000",
            "--seed",
            "42",
            "--json",
        ],
        dir,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let correlate: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let study: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("a/proxy/bon.json")).unwrap())
            .unwrap();
    assert_eq!(correlate["models"], study["models"]);
    for i in 0..2 {
        assert_eq!(
            correlate["sets"][i]["correlation"]["bootstrap"],
            study["sets"][i]["correlation"]["bootstrap"]
        );
    }
    // The paired difference between the two benchmarks, and its row in the study's table.
    assert_eq!(correlate["pairs"], study["pairs"]);
    let d = &correlate["pairs"][0]["difference"]["spearman"];
    let want = format!(
        "{:+.3} [{:.2}, {:.2}]",
        d["point"].as_f64().unwrap(),
        d["ci"]["lo"].as_f64().unwrap(),
        d["ci"]["hi"].as_f64().unwrap()
    );
    let diffs = std::fs::read_to_string(dir.join("a/tables/proxy-gap-differences.csv")).unwrap();
    assert!(diffs.contains(&want), "rho difference {want} not in\n{diffs}");
    let stats = &correlate["sets"][0]["correlation"]["bootstrap"]["stats"];
    let table = std::fs::read_to_string(dir.join("a/tables/proxy-gap.csv")).unwrap();
    let ndcg = &stats["ndcg"];
    let want = format!(
        "{:.3} [{:.2}, {:.2}]",
        ndcg["point"].as_f64().unwrap(),
        ndcg["ci"]["lo"].as_f64().unwrap(),
        ndcg["ci"]["hi"].as_f64().unwrap()
    );
    assert!(table.contains(&want), "NDCG {want} not in the proxy-gap table:\n{table}");
    // The benchmark CSV holds each entry's figure as its run's summary reports it.
    let bench = std::fs::read_to_string(dir.join("a/proxy/bon-sample.csv")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("a/runs/sample-longer/summary.json")).unwrap(),
    )
    .unwrap();
    let micro = summary["rows"].as_array().unwrap().iter().find(|r| r["label"] == "micro").unwrap();
    let line = bench.lines().find(|l| l.starts_with("longer,")).unwrap();
    assert_eq!(line["longer,".len()..].parse::<f64>().unwrap(), micro["strict"].as_f64().unwrap());
    // The entries the Best-of-N leg ranks: the judge is left out by the plan.
    assert_eq!(bench.lines().count(), 1 + 4, "{bench}");

    // 3'. The RL leg: each policy's mean rubric score, from its judgements by hand, is the
    // downstream side correlate reads.
    let rl = std::fs::read_to_string(dir.join("a/proxy/rl-downstream.csv")).unwrap();
    for name in ["longer", "shorter", "overlap", "rs"] {
        // Every policy's answers are judged inside the study folder: the three folders drawn
        // outside it are copied in, and get no file written into them.
        let judged = std::fs::read_to_string(
            dir.join(format!("a/rl/rl/{name}/judgements/study-rubric.jsonl")),
        )
        .unwrap();
        if name != "rs" {
            assert!(!dir.join(format!("policies/{name}/judgements")).exists());
            assert_eq!(
                std::fs::read(dir.join(format!("policies/{name}/samples.jsonl"))).unwrap(),
                std::fs::read(dir.join(format!("a/rl/rl/{name}/samples.jsonl"))).unwrap()
            );
        }
        let means: Vec<f64> = judged
            .lines()
            .map(|l| {
                let j: serde_json::Value = serde_json::from_str(l).unwrap();
                let s: Vec<f64> =
                    j["scores"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
                s.iter().sum::<f64>() / s.len() as f64
            })
            .collect();
        assert_eq!(means.len(), 3, "{name}: one answer for each of 3 questions");
        let mean = means.iter().sum::<f64>() / 3.0;
        let line = rl.lines().find(|l| l.starts_with(&format!("{name},"))).unwrap();
        let got: f64 = line.split(',').nth(1).unwrap().parse().unwrap();
        assert!((got - mean).abs() < 1e-12, "{name}: {got} vs {mean} by hand");
    }
    let rl_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("a/proxy/rl.json")).unwrap())
            .unwrap();
    assert_eq!(rl_json["models"].as_array().unwrap().len(), 4, "{rl_json}");
    // The checkpoint's answers are to the held-out questions, in the study's cache.
    let drawn = std::fs::read_to_string(dir.join("a/rl/rl/rs/samples.jsonl")).unwrap();
    let held_ids: Vec<String> =
        std::fs::read_to_string(Path::new(&held).join("Art_and_Entertainment.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
    for line in drawn.lines() {
        let s: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(held_ids.iter().any(|id| s["example_id"] == id.as_str()), "{line}");
    }

    // 3''. The constant leg: no comparison, a row that says why, no stale comparison file.
    let md = std::fs::read_to_string(dir.join("a/study.md")).unwrap();
    assert!(md.contains("Leg `same` has no comparison"), "{md}");
    let same: Vec<&str> = table.lines().filter(|l| l.contains(",same,")).collect();
    assert_eq!(same.len(), 2, "one row per benchmark:\n{table}");
    assert!(same.iter().all(|l| l.contains("undefined: ") && l.contains("constant")), "{same:?}");
    assert!(!dir.join("a/proxy/same.json").exists());

    // 3a. The per-user table, from the outcomes and the user ids by hand.
    let outcomes =
        std::fs::read_to_string(dir.join("a/runs/sample-longer/outcomes.jsonl")).unwrap();
    let mut per_user: std::collections::BTreeMap<String, (f64, f64)> = Default::default();
    for line in outcomes.lines() {
        let o: serde_json::Value = serde_json::from_str(line).unwrap();
        let n: usize =
            o["example_id"].as_str().unwrap().rsplit('-').next().unwrap().parse().unwrap();
        // sample ids end in 01..04 per subset; row i = subset index * 4 + (n - 1)
        let subset = ["art", "life", "soc"]
            .iter()
            .position(|s| o["example_id"].as_str().unwrap().contains(s))
            .unwrap();
        let i = subset * 4 + n - 1;
        let e = per_user.entry(format!("u{}", i % 3)).or_default();
        e.0 += 1.0;
        e.1 += f64::from(o["result"] == "correct");
    }
    let mut accs: Vec<f64> = per_user.values().map(|(n, c)| c / n).collect();
    accs.sort_by(f64::total_cmp);
    assert_eq!(accs.len(), 3);
    let mean = accs.iter().sum::<f64>() / 3.0 * 100.0;
    let p25 = (accs[0] + 0.5 * (accs[1] - accs[0])) * 100.0;
    let p75 = (accs[1] + 0.5 * (accs[2] - accs[1])) * 100.0;
    let want = format!("longer,none,3,{mean:.1},{p25:.1},{:.1},{p75:.1},", accs[1] * 100.0);
    let per_user_csv = std::fs::read_to_string(dir.join("a/tables/per-user-sample.csv")).unwrap();
    assert!(per_user_csv.contains(&want), "{want} not in\n{per_user_csv}");

    // 3b. The HTML report shows every table, cell for cell as the CSV, and the hostile title
    // as text.
    check_report(dir);

    // 4. Killed at a random point, then resumed: the same tables.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let at = Duration::from_secs_f64(
        0.2 + (nanos.subsec_nanos() % 1000) as f64 / 1000.0 * seconds * 0.9,
    );
    eprintln!("killing the study after {at:?} (the whole study took {seconds:.1} s)");
    let mut child = Command::new(env!("CARGO_BIN_EXE_prbench"))
        .args(["study", "plan.toml", "--out", "b", "--quiet"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while started.elapsed() < at && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (err, _) = run_study(dir, "b");
    eprintln!(
        "{}",
        err.lines().filter(|l| l.starts_with("prbench: study:")).collect::<Vec<_>>().join("\n")
    );
    assert_eq!(files(&dir.join("a/tables")), files(&dir.join("b/tables")));
    assert_eq!(
        std::fs::read_to_string(dir.join("a/proxy/bon-sample.csv")).unwrap(),
        std::fs::read_to_string(dir.join("b/proxy/bon-sample.csv")).unwrap()
    );
}

#[test]
fn a_changed_plan_is_refused_naming_the_step() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let plan = format!(
        "[benchmarks.sample]\ndata = \"{}\"\n\n[models.longer]\nspec = \"baseline:longer\"\n",
        sample()
    );
    std::fs::write(dir.join("plan.toml"), &plan).unwrap();
    run_study(dir, "s");
    std::fs::write(
        dir.join("plan.toml"),
        plan.replace("[models.longer]", "[benchmarks.sample.x]\n[models.longer]"),
    )
    .unwrap();
    // An unknown key is refused before anything runs.
    let o = prbench(&["study", "plan.toml", "--out", "s"], dir);
    assert!(!o.status.success());
    std::fs::write(dir.join("plan.toml"), plan.replace("data = ", "limit = 2\ndata = ")).unwrap();
    let o = prbench(&["study", "plan.toml", "--out", "s"], dir);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("step `eval/sample/longer` finished before with other settings"), "{err}");
    assert!(err.contains("--limit 2"), "{err}");
    // Adding a model runs only the new model's step.
    std::fs::write(
        dir.join("plan.toml"),
        plan.clone() + "\n[models.shorter]\nspec = \"baseline:shorter\"\n",
    )
    .unwrap();
    let (err, _) = run_study(dir, "s");
    assert!(err.contains("prbench: study: 1 step run now, 1 finished before"), "{err}");
}

/// The study section of `a/report.html` in headless Chromium: one article per table CSV, the
/// reward-model table's cells equal to its CSV's, and the benchmark title (markup) as text.
fn check_report(dir: &Path) {
    let Some(browser) = prbench_browser::chromium_or_skip() else { return };
    let url = format!("file://{}", dir.join("a/report.html").display());
    let page = browser.open(&url).expect("report opens");
    page.wait_for("body[data-ready='1']", Duration::from_secs(10))
        .expect("the report's script ran");
    let csvs = std::fs::read_dir(dir.join("a/tables"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "csv"))
        .count();
    let n =
        page.eval("document.querySelectorAll('#sec-study article.study-table').length").unwrap();
    assert_eq!(n.as_u64().unwrap() as usize, csvs);
    let cells = page
        .eval("Array.from(document.querySelectorAll('#sec-study article.study-table')).filter(a => a.querySelector('h3').textContent.startsWith('Reward models')).map(a => Array.from(a.querySelectorAll('tr')).map(r => Array.from(r.cells).map(c => c.textContent)))[0]")
        .unwrap();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(dir.join("a/tables/reward-models-sample.csv"))
        .unwrap();
    let want: Vec<Vec<String>> =
        reader.records().map(|r| r.unwrap().iter().map(String::from).collect()).collect();
    assert_eq!(cells, serde_json::json!(want));
    let title = page.eval("document.querySelector('#sec-study h3').textContent").unwrap();
    assert_eq!(
        title.as_str().unwrap(),
        "Reward models on <b>Sample</b> <script>alert(1)</script>: strict accuracy, %"
    );
    // Backticks in a title are code spans (`none`), not literal backticks.
    let code = page
        .eval("Array.from(document.querySelectorAll('#sec-study h3')).filter(h => h.textContent.startsWith('Conditioning')).map(h => [h.textContent, Array.from(h.querySelectorAll('code')).map(c => c.textContent)])[0]")
        .unwrap();
    assert!(!code[0].as_str().unwrap().contains('`'), "{code}");
    assert_eq!(code[1], serde_json::json!(["none"]), "{code}");
    // Under the proxy-gap table, each leg's `correlate` command, as study.md gives it.
    let commands = page
        .eval("Array.from(document.querySelectorAll('#sec-study pre.command')).map(p => p.textContent)")
        .unwrap();
    let md = std::fs::read_to_string(dir.join("a/study.md")).unwrap();
    let want: Vec<&str> = md
        .split("reproduced by:\n\n```sh\n")
        .skip(1)
        .map(|rest| rest.split("\n```").next().unwrap())
        .collect();
    assert!(!want.is_empty(), "study.md names no command");
    assert_eq!(commands, serde_json::json!(want));
    let markup =
        page.eval("document.querySelectorAll('#sec-study b, #sec-study script').length").unwrap();
    assert_eq!(markup.as_u64(), Some(0), "markup from the plan rendered as markup");
}
