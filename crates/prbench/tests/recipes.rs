//! Judge recipes through the real binary: a recipe folder's prompt reaches the judge, its reader
//! reads the replies, the manifest and the cache keys record it, and the leakage guard checks its
//! text. The OpenAI judge runs against the loopback fault server, whose scripted replies are chosen
//! by markers the recipe's template writes; the local judge is the default GGUF model when it is
//! present.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::*;
use prbench_fault_server::{Fault, FaultRule, FaultServer, ServerConfig};
use prbench_models::judge::RATING_REPLY_SEPARATOR;
use prbench_models::verdict_reader::{RatingReader, VerdictReader};
use sha2::{Digest, Sha256};

/// `(chosen, rejected)` texts of the sample's examples, by id, read straight from its JSONL.
fn sample_pairs() -> HashMap<String, (String, String)> {
    let mut m = HashMap::new();
    for entry in std::fs::read_dir(sample()).unwrap() {
        let path = entry.unwrap().path();
        for line in std::fs::read_to_string(&path).unwrap().lines().filter(|l| !l.trim().is_empty())
        {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            m.insert(
                v["id"].as_str().unwrap().to_string(),
                (
                    v["chosen"].as_str().unwrap().to_string(),
                    v["rejected"].as_str().unwrap().to_string(),
                ),
            );
        }
    }
    m
}

fn read_outcomes(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("outcomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The answers in slots A and B of an outcome.
fn slot_texts<'a>(
    o: &serde_json::Value,
    pairs: &'a HashMap<String, (String, String)>,
) -> (&'a str, &'a str) {
    let (chosen, rejected) = &pairs[o["example_id"].as_str().unwrap()];
    match o["chosen_slot"].as_str().unwrap() {
        "A" => (chosen, rejected),
        _ => (rejected, chosen),
    }
}

/// Writes a recipe folder and returns its path.
fn recipe(dir: &Path, name: &str, system: &str, user: &str, toml: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("system.txt"), system).unwrap();
    std::fs::write(d.join("user.jinja"), user).unwrap();
    std::fs::write(d.join("recipe.toml"), toml).unwrap();
    d
}

/// sha256 over the texts, each prefixed by its byte length (u64 LE): the documented recipe hash.
fn hash_texts(texts: &[&str]) -> String {
    let mut h = Sha256::new();
    for t in texts {
        h.update((t.len() as u64).to_le_bytes());
        h.update(t.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A pairwise template that asks the server for the verdict "the longer answer wins": the marker
/// it writes picks the fault server's scripted reply. The replies are in MT-Bench's `[[X]]` form,
/// one with a quoted format and a verdict inside a reasoning block to skip.
const LONGER_USER: &str = "Question: {{ question }}\n{% if context %}About the user: {{ context }}\n{% endif %}[The Start of Assistant A's Answer]\n{{ response_a }}\n[The End of Assistant A's Answer]\n[The Start of Assistant B's Answer]\n{{ response_b }}\n[The End of Assistant B's Answer]\n{% if response_a|length > response_b|length %}MARK-FIRST-LONGER{% else %}MARK-SECOND-LONGER{% endif %}";

fn longer_server() -> FaultServer {
    FaultServer::start(
        ServerConfig::default()
            .with_reply(
                "MARK-FIRST-LONGER",
                "I answer [[A]] or [[B]]. Assistant A covers more. [[A]]",
            )
            .with_reply(
                "MARK-SECOND-LONGER",
                "<think>maybe [[A]]</think>Assistant B covers more.\n\n[[B]]",
            ),
    )
    .unwrap()
}

fn eval(tmp: &Path, model: &str, recipe: &Path, id: &str, extra: &[&str]) -> std::process::Output {
    let recipe = recipe.display().to_string();
    let data = sample();
    let mut args = vec![
        "eval",
        "--data",
        &data,
        "--model",
        model,
        "--judge-recipe",
        &recipe,
        "--run-id",
        id,
        "--bootstrap",
        "200",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    prbench(&args, tmp)
}

#[test]
fn a_pairwise_recipe_is_rendered_read_recorded_and_cached_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let server = longer_server();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let toml = "reader = \"brackets\"\n";
    let dir = recipe(tmp.path(), "longer", "You compare answers.", LONGER_USER, toml);
    let cache = tmp.path().join("c.sqlite").display().to_string();
    let out =
        eval(tmp.path(), &model, &dir, "brackets", &["--cache", &cache, "--verdict", "generate"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("0 hits, 12 calls"), "{stderr}");

    // Every verdict is the longer answer's slot, worked out here from the sample's texts.
    let pairs = sample_pairs();
    let outcomes = read_outcomes(&tmp.path().join("runs/brackets"));
    assert_eq!(outcomes.len(), 12);
    for o in &outcomes {
        let (a, b) = slot_texts(o, &pairs);
        let want = if a.chars().count() > b.chars().count() { "A" } else { "B" };
        assert_eq!(o["verdict"]["choice"], want, "{o}");
    }
    // The request carried the recipe's system message and template, nothing of ours.
    let requests: Vec<_> = server
        .log()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions") && r.body["max_tokens"] != 1)
        .collect();
    assert_eq!(requests.len(), 12);
    let messages = requests[0].body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"], "You compare answers.");
    assert!(messages[1]["content"].as_str().unwrap().starts_with("Question: "));
    assert!(!messages[1]["content"].as_str().unwrap().contains("Result:"));

    // The manifest records the recipe: its hash over the three files and its reader; the
    // template hash differs from a run with prbench's own prompt, and the decoding names it.
    let m = read_json(&tmp.path().join("runs/brackets/manifest.json"));
    assert_eq!(m["judge_recipe"]["reader"], "brackets");
    assert_eq!(m["judge_recipe"]["hash"], hash_texts(&["You compare answers.", LONGER_USER, toml]));
    assert_eq!(m["judge_recipe"]["folder"], dir.canonicalize().unwrap().display().to_string());
    assert_eq!(m["decoding"]["reader"], "brackets");
    // The run's HTML report names it in its provenance table.
    let html = std::fs::read_to_string(tmp.path().join("runs/brackets/report.html")).unwrap();
    assert!(
        html.contains("judge recipe reader</th><td><code>brackets</code>"),
        "the report names the recipe's reader"
    );
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &model,
            "--run-id",
            "ours",
            "--bootstrap",
            "200",
            "--quiet",
            "--no-cache",
            "--verdict",
            "generate",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ours = read_json(&tmp.path().join("runs/ours/manifest.json"));
    assert!(ours.get("judge_recipe").is_none());
    assert_ne!(ours["template_hash"], m["template_hash"]);
    assert!(ours["decoding"].get("reader").is_none());

    // The same recipe again: every verdict from the cache. The same prompt read by another
    // reader (a regex) is a new set of calls, and reads the same verdicts.
    let out =
        eval(tmp.path(), &model, &dir, "again", &["--cache", &cache, "--verdict", "generate"]);
    assert!(text(&out.stderr).contains("12 hits, 0 calls"), "{}", text(&out.stderr));
    let regex = recipe(
        tmp.path(),
        "regex",
        "You compare answers.",
        LONGER_USER,
        "reader = \"regex\"\npattern = '\\[\\[([AB])\\]\\]'\n",
    );
    let out =
        eval(tmp.path(), &model, &regex, "regex", &["--cache", &cache, "--verdict", "generate"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success() && stderr.contains("0 hits, 12 calls"), "{stderr}");
    let by_regex = read_outcomes(&tmp.path().join("runs/regex"));
    let choice = |os: &[serde_json::Value]| {
        os.iter().map(|o| o["verdict"]["choice"].clone()).collect::<Vec<_>>()
    };
    assert_eq!(choice(&by_regex), choice(&outcomes));
    // And a changed template is a new set of calls too.
    let edited = recipe(tmp.path(), "edited", "You compare answers carefully.", LONGER_USER, toml);
    let out =
        eval(tmp.path(), &model, &edited, "edited", &["--cache", &cache, "--verdict", "generate"]);
    assert!(text(&out.stderr).contains("0 hits, 12 calls"), "{}", text(&out.stderr));
}

#[test]
fn a_pairwise_recipe_reads_p_a_at_its_own_verdict_letter() {
    // The fault server's verdict rule (not a scripted reply) answers `Result: X` with
    // log-probabilities at the letter; a regex recipe reading that line finds the same letter.
    let tmp = tempfile::tempdir().unwrap();
    let server = FaultServer::start(ServerConfig::default()).unwrap();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let dir = recipe(
        tmp.path(),
        "re",
        "",
        "{{ question }}\nA: {{ response_a }}\nB: {{ response_b }}",
        "reader = \"regex\"\npattern = 'Result: (\\w)'\n",
    );
    let out = eval(tmp.path(), &model, &dir, "re", &["--no-cache"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for o in read_outcomes(&tmp.path().join("runs/re")) {
        let p = o["verdict"]["p_a"].as_f64().unwrap();
        let want = if o["verdict"]["choice"] == "A" { 0.8 } else { 0.2 };
        assert!((p - want).abs() < 1e-4, "{o}");
    }
    // An empty system.txt sends no system message.
    let first = server
        .log()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions") && r.body["max_tokens"] != 1)
        .unwrap();
    assert_eq!(first.body["messages"][0]["role"], "user");
}

#[test]
fn a_pointwise_recipe_rates_each_answer_and_counts_unreadable_ratings() {
    let tmp = tempfile::tempdir().unwrap();
    // Answers over 560 characters get no readable rating, over 500 a high one, the rest a low one.
    let server = FaultServer::start(
        ServerConfig::default()
            .with_reply("MARK-NONE", "I would rather not put a number on it.")
            .with_reply("MARK-HIGH", "Fits the user well.\n**Rating:** 8/10")
            .with_reply(
                "MARK-LOW",
                "<think>Rating: 9?</think>Too generic for this user.\nRating: 3",
            )
            .with_rule(FaultRule::new("MARK-HIGH", Fault::ServerError).times(1)),
    )
    .unwrap();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let user = "{{ question }}\n{{ response }}\n{% if response|length > 560 %}MARK-NONE{% elif response|length > 500 %}MARK-HIGH{% else %}MARK-LOW{% endif %}";
    let dir = recipe(
        tmp.path(),
        "rate",
        "You rate one answer.",
        user,
        "kind = \"pointwise\"\nreader = \"rating\"\n[rating]\nmin = 1\nmax = 10\n",
    );
    let out = eval(tmp.path(), &model, &dir, "rate", &["--no-cache"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The unparsed warning speaks of the recipe's format, not of `Result:`.
    assert!(
        stderr.contains("could not be parsed (no readable `Rating: N` in one of the two replies)"),
        "{stderr}"
    );
    let md = std::fs::read_to_string(tmp.path().join("runs/rate/summary.md")).unwrap();
    assert!(md.contains("(no readable `Rating: N` in one of the two replies)"), "{md}");

    let rating = |t: &str| {
        let n = t.chars().count();
        (n <= 560).then_some(if n > 500 { 8.0 } else { 3.0 })
    };
    let pairs = sample_pairs();
    let outcomes = read_outcomes(&tmp.path().join("runs/rate"));
    let mut unparsed = 0;
    for o in &outcomes {
        let (a, b) = slot_texts(o, &pairs);
        let want = match (rating(a), rating(b)) {
            (Some(x), Some(y)) if x > y => "A",
            (Some(x), Some(y)) if x < y => "B",
            (Some(_), Some(_)) => "Tie",
            _ => "Unparsed",
        };
        assert_eq!(o["verdict"]["choice"], want, "{o}");
        unparsed += usize::from(want == "Unparsed");
        // Both replies are kept, A's first.
        let raw = o["verdict"]["raw"].as_str().unwrap();
        assert_eq!(raw.matches(RATING_REPLY_SEPARATOR).count(), 1, "{raw}");
    }
    assert!(unparsed > 0, "the sample has an answer over 560 characters");
    let summary = read_json(&tmp.path().join("runs/rate/summary.json"));
    let overall = summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["n"] == 12)
        .expect("a row over all 12 pairs");
    assert_eq!(overall["unparsed"], unparsed, "{overall}");
    // Two requests per pair (one answer each), plus one retried 500 for each request rating a
    // high-rated answer (the fault rule fails every such request body once), plus the one-token
    // check at load that the server answers (before any item is sent).
    let high = pairs.values().flat_map(|(c, r)| [c, r]).filter(|t| rating(t) == Some(8.0)).count();
    assert!(high > 0);
    let calls = server.log().into_iter().filter(|r| r.path.ends_with("/chat/completions")).count();
    assert_eq!(calls, 1 + 24 + high);
    let m = read_json(&tmp.path().join("runs/rate/manifest.json"));
    assert_eq!(
        (m["judge_recipe"]["kind"].as_str(), m["decoding"]["verdict"].as_str()),
        (Some("pointwise"), Some("rating"))
    );
    // The order of the answers cannot matter to a pointwise judge.
    let out = eval(tmp.path(), &model, &dir, "both", &["--both-orders"]);
    assert!(
        !out.status.success() && text(&out.stderr).contains("pointwise"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_recipe_that_carries_hidden_text_is_refused_outside_oracle() {
    let tmp = tempfile::tempdir().unwrap();
    let server = longer_server();
    let model = format!("openai:fault-model@{}", server.openai_base());
    let first =
        std::fs::read_to_string(Path::new(&sample()).join("Art_and_Entertainment.jsonl")).unwrap();
    let ex: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let narrative: Vec<char> = ex["narrative"].as_str().unwrap().chars().collect();
    // Forty characters from the middle of the narrative, not the whole of it.
    let piece: String = narrative[30..70].iter().collect();
    let dir = recipe(
        tmp.path(),
        "leaky",
        &format!("Keep in mind: {piece}"),
        LONGER_USER,
        "reader = \"brackets\"\n",
    );
    let out = eval(tmp.path(), &model, &dir, "leaky", &["--no-cache", "--verdict", "generate"]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("system.txt holds text of example `sample-art-01`'s hidden narrative"),
        "{stderr}"
    );
    // Refused before any run folder is made or any request is sent.
    assert!(!tmp.path().join("runs/leaky").exists());
    assert_eq!(server.log().len(), 0);
    // The whole narrative is refused too (by the same check, and by the guard on every input).
    let whole: String = narrative.iter().collect();
    let dir2 = recipe(
        tmp.path(),
        "leaky2",
        "",
        &format!("{LONGER_USER}\n{whole}"),
        "reader = \"brackets\"\n",
    );
    let out = eval(tmp.path(), &model, &dir2, "leaky2", &["--no-cache", "--verdict", "generate"]);
    assert!(
        !out.status.success() && text(&out.stderr).contains("user.jinja holds text"),
        "{}",
        text(&out.stderr)
    );
    // Under the oracle condition the hidden rubric may be shown.
    let out = eval(
        tmp.path(),
        &model,
        &dir,
        "oracle",
        &["--no-cache", "--verdict", "generate", "--condition", "oracle", "--limit", "1"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn recipe_flags_that_cannot_apply_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = recipe(tmp.path(), "nolp", "", LONGER_USER, "reader = \"brackets\"\n");
    let d = dir.display().to_string();
    let cases: [(Vec<&str>, &str); 4] = [
        (
            vec!["--model", "baseline:longer", "--judge-recipe", "default"],
            "applies to generative judges",
        ),
        (
            vec!["--model", "gguf:/nonexistent.gguf", "--judge-recipe", "no-such"],
            "neither a built-in recipe",
        ),
        (
            vec![
                "--model",
                "openai:m@http://127.0.0.1:9/v1",
                "--judge-recipe",
                "rating",
                "--temperature",
                "0.7",
            ],
            "greedily",
        ),
        (
            vec![
                "--model",
                "openai:m@http://127.0.0.1:9/v1",
                "--judge-recipe",
                &d,
                "--both-orders",
                "--judge-recipe",
                "rating",
            ],
            "cannot be used multiple times",
        ),
    ];
    for (args, want) in cases {
        let data = sample();
        let mut a = vec!["eval", "--data", &data];
        a.extend(args.iter().copied());
        let out = prbench(&a, tmp.path());
        assert!(
            !out.status.success() && text(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// The default GGUF judge (SmolLM2-135M), when `scripts/fetch-models.sh` fetched it.
fn local_judge() -> Option<String> {
    prbench_testkit::smollm2().map(|gguf| format!("gguf:{}", gguf.display()))
}

#[test]
fn a_local_judge_reads_a_recipe_by_logprobs_by_generating_and_by_rating() {
    let Some(model) = local_judge() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let user = "Which answer fits the user better?\nQuestion: {{ question }}\n[A]\n{{ response_a }}\n[B]\n{{ response_b }}\nReply with [[A]] or [[B]].";
    let dir = recipe(
        tmp.path(),
        "mt",
        "You are a helpful judge.",
        user,
        "reader = \"brackets\"\n[logprob]\nprefix = \"[[\"\ncandidates = [\"A\", \"B\"]\n",
    );

    // Logprob verdict after the recipe's prefix: every verdict has p_A and its margin's sign.
    let out = eval(tmp.path(), &model, &dir, "lp", &["--limit", "1", "--no-cache"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m = read_json(&tmp.path().join("runs/lp/manifest.json"));
    assert_eq!(
        (m["decoding"]["prefix"].as_str(), m["decoding"]["candidates"][0].as_str()),
        (Some("[["), Some("A"))
    );
    for o in read_outcomes(&tmp.path().join("runs/lp")) {
        let (p, margin) =
            (o["verdict"]["p_a"].as_f64().unwrap(), o["verdict"]["margin"].as_f64().unwrap());
        assert!((p - 1.0 / (1.0 + (-margin).exp())).abs() < 1e-5, "{o}");
        assert_eq!(o["verdict"]["choice"], if margin > 0.0 { "A" } else { "B" });
    }

    // Generated: the verdict is what the brackets reader reads from the reply kept in `raw`.
    let out = eval(
        tmp.path(),
        &model,
        &dir,
        "gen",
        &["--limit", "1", "--no-cache", "--verdict", "generate", "--max-new-tokens", "48"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    for o in read_outcomes(&tmp.path().join("runs/gen")) {
        let raw = o["verdict"]["raw"].as_str().unwrap();
        let want = serde_json::to_value(VerdictReader::Brackets.read(raw)).unwrap();
        assert_eq!(o["verdict"]["choice"], want, "{o}");
    }

    // The built-in pointwise recipe: two replies per pair, each read by the rating reader.
    let out = prbench(
        &[
            "eval",
            "--data",
            &sample(),
            "--model",
            &model,
            "--judge-recipe",
            "rating",
            "--limit",
            "1",
            "--no-cache",
            "--max-new-tokens",
            "48",
            "--run-id",
            "rating",
            "--quiet",
            "--bootstrap",
            "200",
        ],
        tmp.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reader = RatingReader::new(1.0, 10.0).unwrap();
    for o in read_outcomes(&tmp.path().join("runs/rating")) {
        let raw = o["verdict"]["raw"].as_str().unwrap();
        let (a, b) = raw.split_once(RATING_REPLY_SEPARATOR).unwrap();
        let want = match (reader.read(a), reader.read(b)) {
            (Some(x), Some(y)) if x > y => "A",
            (Some(x), Some(y)) if x < y => "B",
            (Some(_), Some(_)) => "Tie",
            _ => "Unparsed",
        };
        assert_eq!(o["verdict"]["choice"], want, "{o}");
    }

    // A candidate that is not one token is refused when the model loads, not item by item.
    let multi = recipe(tmp.path(), "multi", "", user, "reader = \"brackets\"\n[logprob]\nprefix = \"[[\"\ncandidates = [\"Alpha response\", \"Beta response\"]\n");
    let out = eval(tmp.path(), &model, &multi, "multi", &["--limit", "1", "--no-cache"]);
    let stderr = text(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("exactly one token")
            && stderr.contains("Alpha response"),
        "{stderr}"
    );
    assert!(
        !tmp.path().join("runs/multi/outcomes.jsonl").exists()
            || read_outcomes(&tmp.path().join("runs/multi")).is_empty()
    );

    // The leaderboard tells the recipes apart.
    let out = prbench(&["leaderboard", "runs/lp", "runs/rating"], tmp.path());
    let table = text(&out.stdout);
    assert!(
        out.status.success() && table.contains("[recipe mt]") && table.contains("[recipe rating]"),
        "{table}{}",
        text(&out.stderr)
    );

    // Without a [logprob] section a local judge must generate, and says so.
    let plain = recipe(tmp.path(), "plain", "", user, "reader = \"brackets\"\n");
    let out = eval(tmp.path(), &model, &plain, "plain", &["--limit", "1", "--no-cache"]);
    assert!(
        !out.status.success() && text(&out.stderr).contains("--verdict generate"),
        "{}",
        text(&out.stderr)
    );
}
