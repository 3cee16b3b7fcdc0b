//! Bad plans are refused before any model loads, naming the plan file's line and key. Each
//! case's expected line is found in the plan text by a marker, independently of the code under
//! test; no case here loads a model (the specs are baselines and a GGUF path that does not
//! exist: a plan error must come before any attempt to load it).

use std::path::{Path, PathBuf};

use prbench_study::check::check_data;
use prbench_study::graph::Study;
use prbench_study::plan::{PlanError, PlanFile};

fn sample() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/sample").display().to_string()
}

/// The 1-based line of the first line of `text` containing `marker`.
fn line_of(text: &str, marker: &str) -> usize {
    text.lines().position(|l| l.contains(marker)).expect("marker in plan") + 1
}

fn study(text: &str) -> Result<Study, PlanError> {
    let file = PlanFile::parse(Path::new("plan.toml"), text.to_string())?;
    let study = Study::new(file, PathBuf::from("/nonexistent/study"))?;
    check_data(&study)?;
    Ok(study)
}

/// The error of `text`, which must be an [`PlanError::Invalid`] at `marker`'s line for `key`.
fn invalid_at(text: &str, marker: &str, key: &str) -> String {
    let err = study(text).expect_err("plan must be refused");
    let want = line_of(text, marker);
    match &err {
        PlanError::Invalid { line, key: k, .. } => {
            assert_eq!((*line, k.as_str()), (want, key), "{err}");
        }
        other => panic!("expected an Invalid error at line {want}, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains(&format!("line {want}")) && text.contains(key), "{text}");
    text
}

/// A file that exists and starts with the GGUF magic (a `gguf:` spec's file is checked to be
/// one; nothing here loads it).
fn any_file() -> String {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let p =
            std::env::temp_dir().join(format!("prbench-plan-errors-{}.gguf", std::process::id()));
        std::fs::write(&p, b"GGUF\x03\x00\x00\x00").unwrap();
        p
    })
    .display()
    .to_string()
}

fn base() -> String {
    format!(
        "seed = 7\n\n[benchmarks.sample]\ndata = \"{}\"\n\n[models.longer]\nspec = \"baseline:longer\"\n",
        sample()
    )
}

#[test]
fn a_good_plan_lays_out_its_steps() {
    let text = base()
        + "\n[models.shorter]\nspec = \"baseline:shorter\"\nconditions = [\"none\", \"oracle\"]\n";
    let s = study(&text).unwrap();
    let ids: Vec<&str> = s.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["eval/sample/longer", "eval/sample/shorter"]);
    let names: Vec<&str> = s.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["longer", "shorter.none", "shorter.oracle"]);
}

#[test]
fn an_unknown_key_is_refused_with_its_line() {
    let text = base() + "sepc = \"baseline:shorter\"\n";
    let err = study(&text).expect_err("unknown key");
    let msg = err.to_string();
    let want = line_of(&text, "sepc");
    assert!(matches!(err, PlanError::Syntax { .. }), "{msg}");
    assert!(msg.contains(&format!("line {want}")) && msg.contains("sepc"), "{msg}");
}

#[test]
fn an_unknown_spec_is_refused() {
    let text = base() + "\n[models.x]\nspec = \"nosuch:thing\"\n";
    invalid_at(&text, "nosuch:thing", "models.x.spec");
}

#[test]
fn a_model_named_twice_is_refused() {
    // The same table twice is TOML's own error, with the line.
    let text = base() + "\n[models.longer]\nspec = \"baseline:shorter\"\n";
    let msg = study(&text).expect_err("duplicate table").to_string();
    let want =
        text.lines().enumerate().filter(|(_, l)| l.contains("[models.longer]")).nth(1).unwrap().0
            + 1;
    assert!(msg.contains(&format!("line {want}")), "{msg}");
    // The same model under another name would count twice in every ranking.
    let text = base() + "\n[models.again]\nspec = \"baseline:longer\"\n";
    let msg = invalid_at(&text, "[models.again]", "models.again");
    assert!(msg.contains("models.longer"), "{msg}");
}

#[test]
fn a_downstream_leg_naming_a_model_not_on_its_benchmark_is_refused() {
    let text = base()
        + "\n[downstream.bon]\nkind = \"best-of-n\"\nbenchmark = \"sample\"\nn = 2\nmodels = [\"longer\", \"ghost\"]\n";
    invalid_at(&text, "models = [", "downstream.bon.models");
    let text =
        base() + "\n[downstream.bon]\nkind = \"best-of-n\"\nbenchmark = \"elsewhere\"\nn = 2\n";
    invalid_at(&text, "benchmark = \"elsewhere\"", "downstream.bon.benchmark");
    let text = base() + "\n[downstream.bon]\nkind = \"best-of-m\"\nbenchmark = \"sample\"\n";
    invalid_at(&text, "best-of-m", "downstream.bon.kind");
}

#[test]
fn an_rl_policy_folder_that_is_not_a_bon_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let text = three()
        + &format!(
            "\n[downstream.rl]\nkind = \"rl\"\nbenchmark = \"sample\"\n[downstream.rl.policies]\nlonger = \"{d}\"\nshorter = \"{d}\"\nrandom = \"{d}\"\n"
        );
    let msg = invalid_at(&text, "longer = \"", "downstream.rl.policies.longer");
    assert!(msg.contains("prbench bon sample"), "{msg}");
}

#[test]
fn a_pal_model_on_data_without_user_ids_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = base() + &format!("\n[models.pal]\nspec = \"pal:{}\"\n", dir.path().display());
    let msg = invalid_at(&text, "spec = \"pal:", "models.pal.spec");
    assert!(msg.contains("no user id"), "{msg}");
}

#[test]
fn flags_the_verb_refuses_are_refused_at_the_options_line() {
    let text = base().replace(
        "spec = \"baseline:longer\"\n",
        &format!("spec = \"gguf:{}\"\noptions = {{ verdict = \"maybe\" }}\n", any_file()),
    );
    let msg = invalid_at(&text, "options = {", "models.longer.options");
    assert!(msg.contains("maybe"), "{msg}");
    // A flag the study sets itself says which plan key sets it.
    let text = base().replace(
        "spec = \"baseline:longer\"\n",
        "spec = \"baseline:longer\"\noptions = { seed = 3 }\n",
    );
    let msg = invalid_at(&text, "options = {", "models.longer.options.seed");
    assert!(msg.contains("plan's `seed`"), "{msg}");
    // A misspelt flag gets clap's suggestion.
    let text = base().replace(
        "spec = \"baseline:longer\"\n",
        "spec = \"baseline:longer\"\noptions = { max-error-rat = 0.5 }\n",
    );
    let msg = invalid_at(&text, "options = {", "models.longer.options");
    assert!(msg.contains("--max-error-rate"), "{msg}");
    // A flag that does not apply to the model (eval's own check).
    let text = base().replace(
        "spec = \"baseline:longer\"\n",
        "spec = \"baseline:longer\"\noptions = { judge-recipe = \"rating\" }\n",
    );
    invalid_at(&text, "options = {", "models.longer.options");
    // A string given to a switch says how a switch is written.
    let text = base().replace(
        "spec = \"baseline:longer\"\n",
        &format!("spec = \"gguf:{}\"\noptions = {{ both-orders = \"yes\" }}\n", any_file()),
    );
    let msg = invalid_at(&text, "options = {", "models.longer.options");
    assert!(msg.contains("`both-orders = true`"), "{msg}");
}

#[test]
fn bad_conditions_and_training_steps_are_refused() {
    let text = base() + "conditions = [\"profile:0\"]\n";
    invalid_at(&text, "profile:0", "models.longer.conditions");
    let text = base() + "\n[models.bt]\nspec = \"bt\"\n";
    invalid_at(&text, "spec = \"bt\"", "models.bt.spec");
    let text = base() + "\n[models.bt]\nspec = \"bt\"\ntrain = { method = \"pal\" }\n";
    invalid_at(&text, "train = {", "models.bt.train.method");
    let text = base()
        + "\n[models.bt]\nspec = \"bt\"\ntrain = { method = \"bt\", options = { epochs = 0 } }\n";
    invalid_at(&text, "train = {", "models.bt.train.options");
}

#[test]
fn bad_data_is_refused_at_the_data_line() {
    let text = base().replace(&sample(), "/nonexistent/data-folder");
    invalid_at(&text, "/nonexistent/data-folder", "benchmarks.sample.data");
}

#[test]
fn bad_correlation_settings_are_refused() {
    let text = base() + "\n[correlation]\nstatistics = [\"ndcg\", \"kendall\"]\n";
    invalid_at(&text, "statistics", "correlation.statistics");
    let text = base() + "\n[correlation]\nmetric = \"f1\"\n";
    invalid_at(&text, "metric", "correlation.metric");
}

#[test]
fn the_committed_plans_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/study");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "toml") {
            let file = PlanFile::read(&path).unwrap_or_else(|e| panic!("{e}"));
            // The data of psoups.toml and prb.toml is not in the clone: the plan only.
            Study::new(file, PathBuf::from("/nonexistent/study")).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 3, "examples/study holds {n} plans");
}

#[test]
fn specs_are_checked_before_anything_runs() {
    let text = base() + "\n[models.x]\nspec = \"baseline:longest\"\n";
    invalid_at(&text, "baseline:longest", "models.x.spec");
    let text = base() + "\n[models.x]\nspec = \"gguf:/nonexistent/judge.gguf\"\n";
    let msg = invalid_at(&text, "/nonexistent/judge.gguf", "models.x.spec");
    assert!(msg.contains("does not exist"), "{msg}");
    // A file or folder that is not GGUF is refused by its magic, not hours later on load.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    for not_gguf in [manifest.join("Cargo.toml"), manifest.join("src")] {
        let text = base() + &format!("\n[models.x]\nspec = \"gguf:{}\"\n", not_gguf.display());
        let msg = invalid_at(&text, "spec = \"gguf:", "models.x.spec");
        assert!(msg.contains("not a GGUF file"), "{msg}");
    }
    let text = base() + "\n[models.x]\nspec = \"baseline:shorter\"\nbenchmarks = []\n";
    invalid_at(&text, "benchmarks = []", "models.x.benchmarks");
    // score-options are checked even when no Best-of-N leg reads them.
    let text = base() + "score-options = { both-orders = true }\n";
    invalid_at(&text, "score-options", "models.longer.score-options");
}

#[test]
fn remote_steps_out_of_range_are_refused() {
    for v in [0, 65] {
        let text = base().replace("seed = 7", &format!("seed = 7\nremote-steps = {v}"));
        let msg = invalid_at(&text, "remote-steps", "remote-steps");
        assert!(msg.contains("1 to 64"), "{msg}");
    }
}

#[test]
fn settings_out_of_range_name_their_own_key() {
    let text = base().replace("seed = 7", "seed = 7\nbootstrap = 5");
    invalid_at(&text, "bootstrap = 5", "bootstrap");
    let text = base().replace("[models.longer]", "limit = 0\n\n[models.longer]");
    invalid_at(&text, "[benchmarks.sample]", "benchmarks.sample.limit");
    let text = base().replace("[models.longer]", "sample = true\n\n[models.longer]");
    invalid_at(&text, "[benchmarks.sample]", "benchmarks.sample.sample");
    let text = base() + "\n[correlation]\nbootstrap = 200\n";
    invalid_at(&text, "[correlation]", "correlation.bootstrap");
}

fn three() -> String {
    base() + "\n[models.shorter]\nspec = \"baseline:shorter\"\n\n[models.random]\nspec = \"baseline:random\"\n"
}

#[test]
fn best_of_n_legs_need_three_pointwise_entries() {
    let leg = "\n[downstream.bon]\nkind = \"best-of-n\"\nbenchmark = \"sample\"\nn = 2\n";
    // Two entries cannot be rank-correlated.
    let msg = invalid_at(
        &(base() + "\n[models.shorter]\nspec = \"baseline:shorter\"\n" + leg),
        "[downstream.bon]",
        "downstream.bon",
    );
    assert!(msg.contains("at least 3"), "{msg}");
    let s = study(&(three() + leg)).unwrap();
    assert_eq!(s.legs[0].entries.len(), 3);
    // A pairwise judge is left out of a leg by default, and refused when named.
    let with_slot = three() + "\n[models.slot]\nspec = \"baseline:slot-a\"\n";
    let s = study(&(with_slot.clone() + leg)).unwrap();
    assert!(s.legs[0].entries.iter().all(|e| e.0 != "slot"), "{:?}", s.legs[0].entries);
    let named = with_slot + leg + "models = [\"longer\", \"shorter\", \"slot\"]\n";
    let msg = invalid_at(&named, "models = [", "downstream.bon.models");
    assert!(msg.contains("pairwise"), "{msg}");
    // A leg's scalar settings are refused at their own line, not the leg's.
    let msg = invalid_at(&(three() + &leg.replace("n = 2", "n = 0")), "n = 0", "downstream.bon.n");
    assert!(msg.contains("1 to 256"), "{msg}");
    let msg = invalid_at(
        &(three() + leg + "policy = \"baseline:longer\"\n"),
        "policy = ",
        "downstream.bon.policy",
    );
    assert!(msg.contains("generates text"), "{msg}");
    let msg = invalid_at(&(three() + leg + "k = 3\n"), "k = 3", "downstream.bon.k");
    assert!(msg.contains("outside 1..=n (2)"), "{msg}");
}

#[test]
fn rl_checkpoints_are_checked_before_anything_samples() {
    let leg = "\n[downstream.rl]\nkind = \"rl\"\nbenchmark = \"sample\"\n";
    let gguf = format!("gguf:{}", any_file());
    let checkpoints = format!(
        "[downstream.rl.checkpoints]\nlonger = \"{gguf}\"\nshorter = \"openai:ckpt@http://127.0.0.1:9/v1\"\nrandom = \"{gguf}\"\n"
    );
    // A good leg: each checkpoint is sampled (4 answers per question by default), then judged.
    let s = study(&(three() + leg + &checkpoints)).unwrap();
    let ids: Vec<&str> = s.steps.iter().map(|s| s.id.as_str()).collect();
    assert!(
        ids.contains(&"rl-sample/rl/shorter") && ids.contains(&"rl-judge/rl/shorter"),
        "{ids:?}"
    );
    let step = s.steps.iter().find(|s| s.id == "rl-sample/rl/shorter").unwrap();
    assert!(
        step.command.contains("--n 4") && step.command.contains("--policy openai:ckpt@"),
        "{}",
        step.command
    );
    assert!(!step.local, "a served checkpoint runs beside the local steps");
    let judge = s.steps.iter().find(|s| s.id == "rl-judge/rl/shorter").unwrap();
    assert_eq!(judge.after, ["rl-sample/rl/shorter"]);
    // A checkpoint that cannot generate text.
    let bad = checkpoints.replace(
        "shorter = \"openai:ckpt@http://127.0.0.1:9/v1\"",
        "shorter = \"baseline:shorter\"",
    );
    let msg = invalid_at(
        &(three() + leg + &bad),
        "shorter = \"baseline",
        "downstream.rl.checkpoints.shorter",
    );
    assert!(msg.contains("generates text"), "{msg}");
    // A model with a checkpoint and a policy folder.
    let both = three() + leg + &checkpoints + "[downstream.rl.policies]\nlonger = \"somewhere\"\n";
    let msg = invalid_at(&both, "longer = \"somewhere\"", "downstream.rl.policies.longer");
    assert!(msg.contains("once"), "{msg}");
    // Sampling settings on a leg that samples nothing.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let folders = format!(
        "[downstream.rl.policies]\nlonger = \"{d}\"\nshorter = \"{d}\"\nrandom = \"{d}\"\n"
    );
    let msg = invalid_at(&(three() + leg + "n = 2\n" + &folders), "n = 2", "downstream.rl.n");
    assert!(msg.contains("checkpoints"), "{msg}");
    let msg = invalid_at(&(three() + leg + "k = 2\n" + &folders), "k = 2", "downstream.rl.k");
    assert!(msg.contains("best-of-n"), "{msg}");
    // Held-out questions that are not the benchmark's items.
    let held = tempfile::tempdir().unwrap();
    let first = std::fs::read_to_string(Path::new(&sample()).join("Art_and_Entertainment.jsonl"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .replace("\"sample-art-01\"", "\"not-in-the-sample\"");
    std::fs::write(held.path().join("Art_and_Entertainment.jsonl"), first + "\n").unwrap();
    let q = format!("questions = \"{}\"\n", held.path().display());
    let msg =
        invalid_at(&(three() + leg + &q + &checkpoints), "questions = ", "downstream.rl.questions");
    assert!(msg.contains("not-in-the-sample"), "{msg}");
    // The benchmark's id with another question.
    let text = std::fs::read_to_string(held.path().join("Art_and_Entertainment.jsonl")).unwrap();
    let mut row: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    row["id"] = "sample-art-01".into();
    row["question"] = "Another question?".into();
    std::fs::write(held.path().join("Art_and_Entertainment.jsonl"), format!("{row}\n")).unwrap();
    let msg =
        invalid_at(&(three() + leg + &q + &checkpoints), "questions = ", "downstream.rl.questions");
    assert!(msg.contains("another question"), "{msg}");
}

#[test]
fn a_value_of_the_wrong_type_names_its_key_path() {
    let text = three()
        + "\n[downstream.bon]\nkind = \"best-of-n\"\nbenchmark = \"sample\"\nn = \"eight\"\n";
    let err = study(&text).expect_err("a string where a number goes");
    let msg = err.to_string();
    assert!(matches!(err, PlanError::Syntax { .. }), "{msg}");
    let line = line_of(&text, "n = \"eight\"");
    assert!(msg.contains(&format!("line {line}")), "{msg}");
    assert!(msg.contains("(key `downstream.bon.n`)"), "{msg}");
}

#[test]
fn a_dotted_name_gets_a_hint() {
    let text = base() + "\n[models.qwen2.5]\nspec = \"baseline:shorter\"\n";
    let msg = study(&text).expect_err("a dotted name").to_string();
    let want = line_of(&text, "[models.qwen2.5]");
    assert!(msg.contains(&format!("line {want}")), "{msg}");
    assert!(msg.contains("a `.` splits a TOML key") && msg.contains("`qwen2_5`"), "{msg}");
    // A legal nested table gets none.
    let text = base() + "sepc = 1\n";
    assert!(!study(&text).expect_err("unknown key").to_string().contains("hint"));
}
