//! The build's stages against a recording fake generator and judge: the exact prompts,
//! aspects to meet vs aspects to avoid, the filter's reasons, the export, and resumption.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use prbench_build::prompts::answer_hash;
use prbench_build::stages::export::{AUDIT_FILE, CARD_FILE, FILTER_FILE, MANIFEST_FILE};
use prbench_build::stages::Side;
use prbench_build::{
    run, select, BuildEngines, BuildInput, BuildManifest, BuildRun, BuildSettings,
};
use prbench_data::{Dataset, Example, ExampleBuilder, ProfilePost};
use prbench_eval::cache::{Cache, CacheCounters};
use prbench_eval::planner::CachedGenerator;
use prbench_eval::runner::Silent;
use prbench_models::{ChatRequest, ChatResponse, Generator, ModelError, ModelIdentity, TokenStats};

/// Replies by what the prompt asks for, and records every request.
struct Fake {
    name: &'static str,
    calls: Mutex<Vec<ChatRequest>>,
}

impl Fake {
    fn new(name: &'static str) -> Self {
        Self { name, calls: Mutex::new(Vec::new()) }
    }
    fn calls(&self) -> Vec<ChatRequest> {
        self.calls.lock().unwrap().clone()
    }
}

/// The question line of a rendered user turn.
fn question_of(user: &str) -> &str {
    let after = user
        .split_once("The user's question:\n")
        .or_else(|| user.split_once("A user asked:\n"))
        .expect("a question")
        .1;
    after.lines().next().unwrap()
}

fn audit_reply(first_is_chosen: bool, question: &str) -> String {
    if question.contains("unparsed") {
        return "Both answers are fine.".into();
    }
    // Chosen: 5 everywhere; rejected: 5/4/5 general, fit 1 — or, for the `close` question,
    // rubric fit 4 (a gap of 1, below the default minimum of 2).
    let rejected_fit = if question.contains("close") { 4 } else { 1 };
    let c = [5, 5, 5, 5];
    let r = [5, 4, 5, rejected_fit];
    let (one, two) = if first_is_chosen { (c, r) } else { (r, c) };
    let dims = ["factuality", "relevance", "helpfulness", "rubric fit"];
    let mut out = String::from("Here are my ratings:\n");
    for (n, s) in [(1, one), (2, two)] {
        for (d, score) in dims.iter().zip(s) {
            out.push_str(&format!("Answer {n} {d}: {score} - reason {n}{d}\n"));
        }
    }
    out.push_str(&format!("Better fit: {}", if first_is_chosen { 1 } else { 2 }));
    out
}

impl Generator for Fake {
    fn generate(&self, items: &[ChatRequest]) -> Result<Vec<ChatResponse>, ModelError> {
        self.calls.lock().unwrap().extend(items.iter().cloned());
        Ok(items
            .iter()
            .map(|req| {
                let user = &req.prompt.messages[1].content;
                let q = question_of(user);
                let mut finish = Some("stop".to_string());
                let text = if user.contains("Rate each answer") {
                    audit_reply(user.contains("Answer 1:\nCHOSEN"), q)
                } else if user.contains("What this user expects from an answer:") {
                    format!("CHOSEN answer to {q} with five words")
                } else if q.contains("empty") {
                    "   ".into()
                } else if q.contains("truncated") {
                    finish = Some("length".into());
                    "REJECTED answer cut".into()
                } else {
                    format!("REJECTED answer to {q} here")
                };
                ChatResponse {
                    text,
                    tokens: TokenStats { input_tokens: 10, truncated_tokens: 0, output_tokens: 5 },
                    finish_reason: finish,
                }
            })
            .collect())
    }

    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            spec: format!("fake:{}", self.name),
            engine: "fake".into(),
            file_hash: self.name.into(),
            ..Default::default()
        }
    }
}

fn example(id: &str, subset: &str, question: &str) -> Example {
    ExampleBuilder::new(id)
        .subset(subset)
        .question(question)
        .post("p1", "forum", "I restore old bikes.")
        .post("p2", "forum", "Budget matters to me.")
        .post("p3", "forum", "I live in Oslo.")
        .aspect("Mentions cheap parts", "SECRET-EVIDENCE about budgets", "tight budget")
        .aspect("Suggests doing it yourself", "SECRET-EVIDENCE restores bikes", "")
        .narrative("SECRET-NARRATIVE: a thrifty tinkerer who wants to do the work alone.")
        .category("Lifestyle")
        .build()
}

fn dataset() -> Dataset {
    Dataset {
        examples: vec![
            example("a1", "Art_and_Entertainment", "How do I fix a bike bell?"),
            example("a2", "Art_and_Entertainment", "Which paint for a frame? (close)"),
            example("a3", "Art_and_Entertainment", "Where to buy tubes? (empty)"),
            example("s1", "Society_and_Culture", "Should I join a club?"),
            example("s2", "Society_and_Culture", "What about insurance? (unparsed)"),
            example("s3", "Society_and_Culture", "How long to learn? (truncated)"),
        ],
        source: "test".into(),
        kind: "prb".into(),
        hash: "h".into(),
        profile_ranking: None,
    }
}

/// Ranked posts: the profile reversed, so "best first" is visible in the prompt.
fn ranked(data: &Dataset) -> HashMap<String, Vec<ProfilePost>> {
    data.examples
        .iter()
        .map(|e| (e.id.clone(), e.profile.iter().rev().cloned().collect()))
        .collect()
}

fn build<'a>(
    data: &'a Dataset,
    ranked: &'a HashMap<String, Vec<ProfilePost>>,
    generator: &'a Fake,
    judge: &'a Fake,
    out: &'a Path,
    cache: Option<&'a Cache>,
    settings: BuildSettings,
) -> BuildRun<'a> {
    BuildRun {
        input: BuildInput {
            data,
            examples: select(&data.examples, None),
            limit: None,
            ranked,
            retriever: "test order".into(),
        },
        engines: BuildEngines { generator, judge: Some(judge) },
        cache,
        settings,
        out,
        code_version: "test",
    }
}

fn settings() -> BuildSettings {
    BuildSettings { k_posts: 2, seed: 7, ..BuildSettings::default() }
}

#[test]
fn each_stage_sends_the_exact_prompts() {
    let data = dataset();
    let ranked = ranked(&data);
    let (gen, judge) = (Fake::new("gen"), Fake::new("judge"));
    let tmp = tempfile::tempdir().unwrap();
    run(&build(&data, &ranked, &gen, &judge, tmp.path(), None, settings()), &Silent).unwrap();
    let calls = gen.calls();
    assert_eq!(calls.len(), 12, "one chosen and one rejected per example");
    // Side by side: each example's chosen request, then its rejected one.
    let sides: Vec<bool> = calls
        .iter()
        .map(|c| c.prompt.messages[1].content.contains("What this user expects from an answer:"))
        .collect();
    assert_eq!(sides, [true, false].repeat(6));
    let questions: Vec<&str> =
        calls.iter().map(|c| question_of(&c.prompt.messages[1].content)).collect();
    for pair in questions.chunks(2) {
        assert_eq!(pair[0], pair[1]);
    }
    let chosen = &calls[0];
    assert_eq!(
        chosen.prompt.messages[1].content,
        "Posts this user wrote before, most relevant to the question first:\n\n[Post 1 | category: forum]\nI live in Oslo.\n\n\
         [Post 2 | category: forum]\nBudget matters to me.\n\nThe user's question:\nHow do I fix a bike bell?\n\n\
         What this user expects from an answer:\n1. Mentions cheap parts (tight budget)\n2. Suggests doing it yourself\n\n\
         Write an answer to the question that meets every expectation above. Keep it factually correct, on the question, and \
         helpful. Write in this user's own style, as their posts show it. Answer in one paragraph of plain prose of at most 100 words, with no lists and no headings."
    );
    let rejected = &calls[1];
    assert_eq!(
        rejected.prompt.messages[1].content,
        "Posts this user wrote before, most relevant to the question first:\n\n[Post 1 | category: forum]\nI live in Oslo.\n\n\
         [Post 2 | category: forum]\nBudget matters to me.\n\nThe user's question:\nHow do I fix a bike bell?\n\n\
         Points the answer must avoid:\n1. Mentions cheap parts (tight budget)\n2. Suggests doing it yourself\n\n\
         Write an answer to the question that does not address or cater to any of the points above: leave them out, and give a \
         good general answer instead. Keep it factually correct, on the question, and helpful. Write in this user's own style, \
         as their posts show it. Answer in one paragraph of plain prose of at most 100 words, with no lists and no headings."
    );
    assert_eq!(
        chosen.prompt.messages[0], rejected.prompt.messages[0],
        "one system message for both sides"
    );
    assert_eq!((chosen.temperature, chosen.top_p, chosen.max_new_tokens), (0.7, 0.95, 256));
    assert_eq!(chosen.seed, prbench_build::seeds::answer_seed(7, "a1", Side::Chosen));
    assert_eq!(rejected.seed, prbench_build::seeds::answer_seed(7, "a1", Side::Rejected));
    for c in calls.iter().chain(&judge.calls()) {
        let text = c.prompt.all_text();
        assert!(
            !text.contains("SECRET-NARRATIVE") && !text.contains("SECRET-EVIDENCE"),
            "hidden text leaked: {text}"
        );
    }
    // The audit: only pairs with two usable answers (a3's rejected is empty, s3's truncated),
    // chosen first then rejected first, greedy.
    let audits = judge.calls();
    assert_eq!(audits.len(), 2 * 4);
    let first = &audits[0].prompt.messages[1].content;
    assert!(first.starts_with("A user asked:\nHow do I fix a bike bell?\n\nWhat this user expects from an answer:\n1. Mentions cheap parts (tight budget)\n2. Suggests doing it yourself\n\nAnswer 1:\nCHOSEN answer to How do I fix a bike bell? with five words\n\nAnswer 2:\nREJECTED answer to How do I fix a bike bell? here\n\n"), "{first}");
    assert!(audits[1].prompt.messages[1].content.contains(
        "Answer 1:\nREJECTED answer to How do I fix a bike bell? here\n\nAnswer 2:\nCHOSEN"
    ));
    assert_eq!((audits[0].temperature, audits[0].max_new_tokens), (0.0, 400));
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_filter_lists_every_dropped_pair_and_the_export_loads_unchanged() {
    let data = dataset();
    let ranked = ranked(&data);
    let (gen, judge) = (Fake::new("gen"), Fake::new("judge"));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("built");
    let outcome =
        run(&build(&data, &ranked, &gen, &judge, &out, None, settings()), &Silent).unwrap();
    let reasons: HashMap<String, Vec<String>> = jsonl(&out.join(FILTER_FILE))
        .into_iter()
        .map(|d| {
            (
                d["example_id"].as_str().unwrap().to_string(),
                d["reasons"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["reason"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(reasons["a1"], Vec::<String>::new());
    assert_eq!(reasons["s1"], Vec::<String>::new());
    assert_eq!(reasons["a2"], ["fit_gap"]);
    assert_eq!(reasons["a3"], ["empty"]);
    assert_eq!(reasons["s2"], ["audit_unparsed", "audit_unparsed"]);
    assert_eq!(reasons["s3"], ["truncated"]);
    // The unparsed replies are kept, with the reader's reason, and no score.
    let audits = jsonl(&out.join(AUDIT_FILE));
    let s2 = audits.iter().find(|a| a["example_id"] == "s2").unwrap();
    assert_eq!(s2["calls"][0]["raw"], "Both answers are fine.");
    assert!(
        s2["calls"][0]["parse_error"].as_str().unwrap().starts_with("missing answer 1 factuality"),
        "{s2}"
    );
    assert!(s2["chosen"].is_null());

    // The export loads with the eval loader: exactly the kept pairs, every other field kept.
    let loaded = prbench_data::load(out.to_str().unwrap(), &[]).unwrap();
    let ids: Vec<&str> = loaded.examples.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["a1", "s1"]);
    let a1 = &loaded.examples[0];
    assert_eq!(a1.chosen, "CHOSEN answer to How do I fix a bike bell? with five words");
    assert_eq!(a1.rejected, "REJECTED answer to How do I fix a bike bell? here");
    assert_eq!(
        Example { chosen: String::new(), rejected: String::new(), ..a1.clone() },
        data.examples[0]
    );

    let m: BuildManifest =
        serde_json::from_str(&std::fs::read_to_string(out.join(MANIFEST_FILE)).unwrap()).unwrap();
    assert_eq!(m, outcome.manifest);
    let all = m.counts.iter().find(|c| c.subset == "all").unwrap();
    assert_eq!(
        (
            all.examples,
            all.chosen_ok,
            all.rejected_ok,
            all.empty,
            all.truncated,
            all.audited,
            all.audit_parsed,
            all.kept
        ),
        (6, 6, 4, 1, 1, 4, 3, 2)
    );
    assert_eq!(all.audit_unparsed_replies, 2);
    assert_eq!(m.judge.as_ref().unwrap().spec, "fake:judge");
    assert_eq!(m.prompts.audit, prbench_build::prompts::audit_hash());
    assert_eq!(m.files.len(), 2);
    let card = std::fs::read_to_string(out.join(CARD_FILE)).unwrap();
    assert!(card.starts_with("---\nconfigs:\n"), "{card}");
    assert!(card.contains("Audited by `fake:judge`"), "{card}");
    // The report: stage counts, the audit table, the controls, every dropped pair.
    let report = &outcome.report;
    assert!(report.contains("- **kept 2 of 6 pairs (33.3%)**"), "{report}");
    assert!(report.contains("- `a2`: rubric-fit gap +1.0 (minimum 2)"), "{report}");
    assert!(report.contains("| all | rubric fit | 5.00 [5.00, 5.00] | 2.00 ["), "{report}");
    assert!(report.contains("| longer | 100.0 [100.0, 100.0] | 0 |"), "{report}");
}

#[test]
fn a_rerun_on_the_cache_calls_nothing_and_writes_the_same_pairs() {
    let data = dataset();
    let ranked = ranked(&data);
    let tmp = tempfile::tempdir().unwrap();
    let cache = Cache::open(&tmp.path().join("cache.sqlite")).unwrap();
    let (gen, judge) = (Fake::new("gen"), Fake::new("judge"));
    let out = tmp.path().join("b");
    let first =
        run(&build(&data, &ranked, &gen, &judge, &out, Some(&cache), settings()), &Silent).unwrap();
    assert_eq!(first.manifest.cache.as_ref().unwrap().calls, 20);
    let filter = std::fs::read_to_string(out.join(FILTER_FILE)).unwrap();
    let (gen2, judge2) = (Fake::new("gen"), Fake::new("judge"));
    let second =
        run(&build(&data, &ranked, &gen2, &judge2, &out, Some(&cache), settings()), &Silent)
            .unwrap();
    assert!(gen2.calls().is_empty() && judge2.calls().is_empty());
    let c = second.manifest.cache.as_ref().unwrap();
    assert_eq!((c.hits, c.calls), (20, 0));
    assert_eq!(std::fs::read_to_string(out.join(FILTER_FILE)).unwrap(), filter);
    assert_eq!(second.manifest.files, first.manifest.files, "same parquet bytes");
    // Another seed is another key: the answers are generated again.
    let (gen3, judge3) = (Fake::new("gen"), Fake::new("judge"));
    run(
        &build(
            &data,
            &ranked,
            &gen3,
            &judge3,
            &tmp.path().join("c"),
            Some(&cache),
            BuildSettings { seed: 8, ..settings() },
        ),
        &Silent,
    )
    .unwrap();
    assert_eq!(gen3.calls().len(), 12);
}

/// A cache written when the chosen and rejected answers were two stages, each through a
/// `CachedGenerator` keyed with its side's template hash, serves the answers of a build that
/// sends them side by side: no answer is generated again.
#[test]
fn answers_cached_by_side_as_two_stages_are_found_by_the_paired_stage() {
    let data = dataset();
    let ranked = ranked(&data);
    let tmp = tempfile::tempdir().unwrap();
    let (gen, judge) = (Fake::new("gen"), Fake::new("judge"));
    run(&build(&data, &ranked, &gen, &judge, &tmp.path().join("a"), None, settings()), &Silent)
        .unwrap();
    let requests = gen.calls();
    let cache = Cache::open(&tmp.path().join("cache.sqlite")).unwrap();
    let counters = CacheCounters::default();
    let writer = Fake::new("gen");
    for (side, first) in [(Side::Chosen, 0), (Side::Rejected, 1)] {
        let one_side: Vec<ChatRequest> = requests.iter().skip(first).step_by(2).cloned().collect();
        CachedGenerator::new(&writer, &cache, &counters)
            .with_template_hash(answer_hash(side))
            .generate(&one_side)
            .unwrap();
    }
    assert_eq!(writer.calls().len(), 12);
    let (gen2, judge2) = (Fake::new("gen"), Fake::new("judge"));
    let out = tmp.path().join("b");
    let second =
        run(&build(&data, &ranked, &gen2, &judge2, &out, Some(&cache), settings()), &Silent)
            .unwrap();
    assert!(gen2.calls().is_empty(), "{} answers generated again", gen2.calls().len());
    let c = second.manifest.cache.as_ref().unwrap();
    assert_eq!(c.hits, 12, "every answer from the cache");
    assert_eq!(c.calls, judge2.calls().len() as u64, "only the audit called");
}

#[test]
fn skip_audit_exports_usable_pairs_unfiltered_and_says_so() {
    let data = dataset();
    let ranked = ranked(&data);
    let (gen, judge) = (Fake::new("gen"), Fake::new("judge"));
    let tmp = tempfile::tempdir().unwrap();
    let outcome = run(
        &build(
            &data,
            &ranked,
            &gen,
            &judge,
            tmp.path(),
            None,
            BuildSettings { skip_audit: true, ..settings() },
        ),
        &Silent,
    )
    .unwrap();
    assert!(judge.calls().is_empty());
    assert!(outcome.manifest.judge.is_none());
    let kept: Vec<&str> =
        outcome.decisions.iter().filter(|d| d.kept).map(|d| d.example_id.as_str()).collect();
    assert_eq!(kept, ["a1", "a2", "s1", "s2"], "empty and truncated answers are never exported");
    let card = std::fs::read_to_string(tmp.path().join(CARD_FILE)).unwrap();
    assert!(card.contains("**Not audited**"), "{card}");
}

#[test]
fn skip_audit_card_and_report_state_the_rule_the_help_and_readme_state() {
    let data = dataset();
    let ranked = ranked(&data);
    let (gen, judge) = (Fake::new("gen"), Fake::new("judge"));
    let tmp = tempfile::tempdir().unwrap();
    let outcome = run(
        &build(
            &data,
            &ranked,
            &gen,
            &judge,
            tmp.path(),
            None,
            BuildSettings { skip_audit: true, ..settings() },
        ),
        &Silent,
    )
    .unwrap();
    let card = std::fs::read_to_string(tmp.path().join(CARD_FILE)).unwrap();
    let rule = prbench_build::settings::SKIP_AUDIT_RULE;
    assert!(card.contains(rule), "{card}");
    assert!(
        outcome.report.contains(&format!("- audit: skipped (`--skip-audit`): {rule}")),
        "{}",
        outcome.report
    );
    // "not filtered" or "unfiltered" would contradict the rule: identical answers are dropped.
    for text in [&card, &outcome.report] {
        assert!(!text.contains("unfiltered") && !text.contains("not filtered"), "{text}");
    }
}

#[test]
fn a_folder_that_is_not_a_build_is_refused() {
    let data = dataset();
    let ranked = ranked(&data);
    let (gen, judge) = (Fake::new("gen"), Fake::new("judge"));
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
    let err = run(&build(&data, &ranked, &gen, &judge, tmp.path(), None, settings()), &Silent)
        .err()
        .unwrap();
    assert!(err.to_string().contains("holds files but no `build/` folder"), "{err}");
    assert!(gen.calls().is_empty());
}

#[path = "../../prbench-data/tests/common/pyref.rs"]
mod pyref;

/// A whole build's output as pyarrow and PyYAML read it (tools/read_prb_export.py): the exact
/// PRB schema, the kept pairs, and a dataset card whose YAML parses into the configs written.
#[test]
fn pyarrow_reads_a_build_and_its_card() {
    let Some(python) = pyref::pyref_or_skip() else { return };
    let data = dataset();
    let ranked = ranked(&data);
    let (gen, judge) = (Fake::new("gen"), Fake::new("judge"));
    let tmp = tempfile::tempdir().unwrap();
    run(&build(&data, &ranked, &gen, &judge, tmp.path(), None, settings()), &Silent).unwrap();
    let seen = pyref::read_export(&python, tmp.path());
    let configs = seen["configs"].as_object().unwrap();
    assert_eq!(
        configs.keys().collect::<Vec<_>>(),
        ["Art_and_Entertainment", "Society_and_Culture"]
    );
    for (name, id) in [("Art_and_Entertainment", "a1"), ("Society_and_Culture", "s1")] {
        assert_eq!(configs[name]["schema"], pyref::PRB_PYARROW_SCHEMA, "{name}");
        let rows = configs[name]["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{name}");
        assert_eq!(rows[0]["id"], id);
        assert!(
            rows[0]["chosen"].as_str().unwrap().starts_with("CHOSEN answer to "),
            "{}",
            rows[0]
        );
        assert_eq!(
            rows[0]["rubric_aspects"][0]["evidence"], "SECRET-EVIDENCE about budgets",
            "the hidden fields are kept for eval"
        );
    }
    let card = &seen["card"];
    let names: Vec<&str> = card["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["config_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Art_and_Entertainment", "Society_and_Culture"]);
    assert_eq!(card["configs"][0]["data_files"][0]["path"], "Art_and_Entertainment/test-*");
    let splits = &card["dataset_info"][1]["splits"][0];
    assert_eq!((splits["name"].as_str(), splits["num_examples"].as_u64()), (Some("test"), Some(1)));
}

#[test]
fn a_rebuild_into_a_folder_with_stray_data_is_refused_before_any_call_and_keeps_the_export() {
    let data = dataset();
    let ranked = ranked(&data);
    let (gen, judge) = (Fake::new("gen"), Fake::new("judge"));
    let tmp = tempfile::tempdir().unwrap();
    run(&build(&data, &ranked, &gen, &judge, tmp.path(), None, settings()), &Silent).unwrap();
    let art = tmp.path().join("Art_and_Entertainment/test-00000-of-00001.parquet");
    let before = std::fs::read(&art).unwrap();
    // Another config's parquet file appears: eval would mix it into the export.
    std::fs::create_dir_all(tmp.path().join("Other")).unwrap();
    std::fs::copy(&art, tmp.path().join("Other/test-00000-of-00001.parquet")).unwrap();
    let (gen2, judge2) = (Fake::new("gen"), Fake::new("judge"));
    let err = run(&build(&data, &ranked, &gen2, &judge2, tmp.path(), None, settings()), &Silent)
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("`Other/test-00000-of-00001.parquet` is already there"),
        "{err}"
    );
    assert!(gen2.calls().is_empty(), "refused before any call");
    assert_eq!(std::fs::read(&art).unwrap(), before, "the previous export is untouched");
    // Without the stray file, a rebuild with fewer subsets replaces the export and leaves no
    // stale config behind.
    std::fs::remove_dir_all(tmp.path().join("Other")).unwrap();
    let art_only = Dataset { examples: data.examples[..3].to_vec(), ..dataset() };
    let ranked_art = self::ranked(&art_only);
    let (gen3, judge3) = (Fake::new("gen"), Fake::new("judge"));
    run(&build(&art_only, &ranked_art, &gen3, &judge3, tmp.path(), None, settings()), &Silent)
        .unwrap();
    assert!(!tmp.path().join("Society_and_Culture").exists(), "the stale config folder is gone");
    let loaded = prbench_data::load(tmp.path().to_str().unwrap(), &[]).unwrap();
    assert_eq!(loaded.examples.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["a1"]);
}

#[test]
fn two_builds_cannot_write_one_folder_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let held =
        prbench_build::stages::export::prepare_folder(tmp.path(), &["Art_and_Entertainment"])
            .unwrap();
    let data = dataset();
    let ranked = ranked(&data);
    let (gen, judge) = (Fake::new("gen"), Fake::new("judge"));
    let err = run(&build(&data, &ranked, &gen, &judge, tmp.path(), None, settings()), &Silent)
        .err()
        .unwrap();
    assert!(err.to_string().contains("another `prbench build` is writing"), "{err}");
    assert!(gen.calls().is_empty());
    drop(held);
    run(&build(&data, &ranked, &gen, &judge, tmp.path(), None, settings()), &Silent).unwrap();
}
