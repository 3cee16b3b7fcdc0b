//! `synthesizeme:DIR[#SPLIT]` on the fixtures `tools/make_personal_fixtures.py` writes in
//! SynthesizeMe's parquet layout (`tests/fixtures/synthesizeme*`). Every expected value below
//! was worked out by hand from the script's rows and the mapping in the module docs.

mod common;

use std::path::{Path, PathBuf};

use common::{expected_hash, fixture, names};
use prbench_data::psoups::history_text;
use prbench_data::synthesizeme::{
    load_synthesizeme, load_synthesizeme_with_history, KIND_SYNTHESIZEME,
};
use prbench_data::{dataset_warnings, load, load_questions, Example, ExampleBuilder, ProfilePost};

const FILE: &str = "test-00000-of-00001.parquet";

fn spec(dir: &Path) -> String {
    format!("synthesizeme:{}", dir.display())
}

fn post(id: &str, category: &str, text: &str) -> ProfilePost {
    ProfilePost { id: id.into(), category: category.into(), text: text.into() }
}

/// An example as the adapter builds it: no rubric, no narrative.
#[allow(clippy::too_many_arguments)] // one argument per field the tests vary
fn example(
    id: &str,
    subset: &str,
    question: &str,
    profile: Vec<ProfilePost>,
    category: &str,
    chosen: &str,
    rejected: &str,
    user: &str,
) -> Example {
    ExampleBuilder::new(id)
        .subset(subset)
        .question(question)
        .profile(profile)
        .category(category)
        .chosen(chosen)
        .rejected(rejected)
        .user_id(user)
        .build()
}

/// arena-u1's two `train` rows as profile posts (its `val` row c-103 is not among them).
fn arena_u1_profile() -> Vec<ProfilePost> {
    vec![
        post("1", "chat", "Q: Name a fruit.\nPreferred: Mango 🥭\nNot preferred: Potato."),
        post(
            "2",
            "chat",
            "Q: Conversation so far:\nUser: Tell me a joke.\nAssistant: Why did the chicken cross the road?\n\nLatest user message:\nWhy?\nPreferred: To get to the other side!\nNot preferred: I don't know.",
        ),
    ]
}

/// The four `test` rows of the two datasets' Hugging Face `test` split.
fn expected_test_split() -> Vec<Example> {
    vec![
        // c-104's first pair: single-message context, so the question is the message itself;
        // `flip` is true but chosen stays the `chosen` column; `type` is null → the subset;
        // `chosen.role` is `assistant` (the others say `model`).
        example(
            "arena-u1-c-104-0",
            "chatbot_arena",
            "Recommend a café in Paris — quiet, please.",
            arena_u1_profile(),
            "chatbot_arena",
            "Café de Flore, early in the morning.",
            "Any Starbucks.",
            "arena-u1",
        ),
        // c-104's second pair (n = 1): the earlier turns go above the latest message.
        example(
            "arena-u1-c-104-1",
            "chatbot_arena",
            "Conversation so far:\nUser: Recommend a café in Paris — quiet, please.\nAssistant: Café de Flore, early in the morning.\n\nLatest user message:\nAnd for dinner?",
            arena_u1_profile(),
            "chat",
            "Le Comptoir, book ahead.",
            "A fast-food place.",
            "arena-u1",
        ),
        // arena-u2 has no train rows: an empty profile.
        example("arena-u2-c-201-0", "chatbot_arena", "What is 2 + 2?", vec![], "math", "4.", "5.", "arena-u2"),
        example(
            "user584-c3157-0",
            "prism",
            "Conversation so far:\nUser: Is it rude to recline my seat on a plane?\nAssistant: It depends on the flight and on who sits behind you.\n\nLatest user message:\nA night flight, a tall man behind me.",
            vec![post(
                "1",
                "values guided",
                "Q: My daughter wants gauges in her ears. What can I do?\nPreferred: Listen to her reasons first, then talk through the risks together.\nNot preferred: Forbid it.",
            )],
            "unguided",
            "Recline a little and check with him first.",
            "Recline fully, it is your right.",
            "user584",
        ),
    ]
}

fn split_file(dataset: &str, split: &str) -> (String, PathBuf) {
    let name = format!("{dataset}/data/{split}-00000-of-00001.parquet");
    let path = fixture("synthesizeme").join(&name);
    (name, path)
}

#[test]
fn the_test_split_maps_every_field() {
    let dir = fixture("synthesizeme");
    let data = load(&spec(&dir), &[]).unwrap();
    assert_eq!(data.examples, expected_test_split());
    assert_eq!(data.kind, KIND_SYNTHESIZEME, "marked as not Personalized-RewardBench");
    assert_eq!(data.source, spec(&dir));
    assert_eq!(data.profile_ranking, None);
    let files = [
        split_file("chatbot_arena_personalized_0125", "test"),
        split_file("prism_personalized_0125", "test"),
    ];
    let files: Vec<(&str, &Path)> = files.iter().map(|(n, p)| (n.as_str(), p.as_path())).collect();
    assert_eq!(
        data.hash,
        expected_hash(&files),
        "the hash covers the split's files, named relative to DIR"
    );
    // `#test` is the default.
    assert_eq!(load(&format!("{}#TEST", spec(&dir)), &[]).unwrap().examples, data.examples);
}

#[test]
fn history_pairs_line_up_with_profile_posts() {
    let dir = fixture("synthesizeme");
    let (data, histories) =
        load_synthesizeme_with_history(&dir.display().to_string(), &[], "s").unwrap();
    assert_eq!(data.examples, expected_test_split());
    let ids: Vec<&str> = histories.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(
        ids,
        ["arena-u1-c-104-0", "arena-u1-c-104-1", "arena-u2-c-201-0", "user584-c3157-0"]
    );
    let sizes: Vec<usize> = histories.iter().map(|h| h.pairs.len()).collect();
    assert_eq!(sizes, [2, 2, 0, 1]);
    let first = &histories[0].pairs[1];
    assert_eq!(first.prompt, "Conversation so far:\nUser: Tell me a joke.\nAssistant: Why did the chicken cross the road?\n\nLatest user message:\nWhy?");
    assert_eq!(first.chosen, "To get to the other side!");
    assert_eq!(first.rejected, "I don't know.");
    // Pair k is post k + 1 of the same example.
    for (ex, h) in data.examples.iter().zip(&histories) {
        for (k, p) in h.pairs.iter().enumerate() {
            let post = ex.profile.iter().find(|q| q.id == (k + 1).to_string()).unwrap();
            assert_eq!(post.text, history_text(&p.prompt, &p.chosen, &p.rejected), "{}", ex.id);
        }
    }
}

#[test]
fn other_splits_hold_other_users() {
    let dir = fixture("synthesizeme");
    let train = load(&format!("{}#train", spec(&dir)), &[]).unwrap();
    assert_eq!(
        train.examples,
        vec![
            example(
                "arena-u3-c-302-0",
                "chatbot_arena",
                "Say bye.",
                vec![post("1", "chat", "Q: Say hi.\nPreferred: Hi!\nNot preferred: Go away.")],
                "chat",
                "Bye!",
                "Whatever.",
                "arena-u3",
            ),
            example(
                "user585-c3158-0",
                "prism",
                "Is tea better than coffee?",
                vec![],
                "controversy guided",
                "Both have merits.",
                "Coffee, obviously.",
                "user585"
            ),
        ]
    );
    let validation = load(&format!("{}#validation", spec(&dir)), &[]).unwrap();
    let ids: Vec<&str> = validation.examples.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["arena-u4-c-401-0", "user586-c3159-0"]);
}

#[test]
fn datasets_are_subsets_selected_by_name_and_a_single_folder_works() {
    let dir = fixture("synthesizeme");
    let prism = load(&spec(&dir), &names(&["prism"])).unwrap();
    assert_eq!(prism.examples, expected_test_split()[3..].to_vec());
    let (name, path) = split_file("prism_personalized_0125", "test");
    assert_eq!(
        prism.hash,
        expected_hash(&[(name.as_str(), path.as_path())]),
        "only the selected dataset is read"
    );
    let arena = load(&spec(&dir), &names(&["chat"])).unwrap();
    assert_eq!(arena.examples, expected_test_split()[..3].to_vec());
    let err = load(&spec(&dir), &names(&["lmsys"])).unwrap_err().to_string();
    assert!(
        err.contains("subset \"lmsys\" is not present (available: chatbot_arena, prism)"),
        "{err}"
    );

    // One dataset's own folder: the subset is that folder's name.
    let one = load(&spec(&dir.join("prism_personalized_0125")), &[]).unwrap();
    assert_eq!(one.examples, expected_test_split()[3..].to_vec());
    assert_eq!(one.hash, expected_hash(&[("data/test-00000-of-00001.parquet", path.as_path())]));
}

#[test]
fn warnings_count_the_empty_profile_and_the_missing_rubric() {
    let data = load(&spec(&fixture("synthesizeme")), &[]).unwrap();
    assert_eq!(
        dataset_warnings(&data),
        [
            "warning: 1 of 4 examples has an empty profile (profile:k renders them as none; first: arena-u2-c-201-0)",
            "warning: 4 of 4 examples have an empty rubric (the data has no rubric, so oracle is refused; first: arena-u1-c-104-0, arena-u1-c-104-1, arena-u2-c-201-0, …)",
        ]
    );
}

#[test]
fn ignored_columns_of_any_type_do_not_matter() {
    let dir = fixture("synthesizeme_odd_columns");
    let data = load_synthesizeme(&dir.display().to_string(), &[], "s").unwrap();
    let ids: Vec<(&str, &str)> =
        data.examples.iter().map(|e| (e.id.as_str(), e.subset.as_str())).collect();
    assert_eq!(ids, [("u-9-c-9-0", "odd")]);
}

/// The error for `synthesizeme_bad/<case>`, with `{file}` standing for its parquet file.
fn bad(case: &str) -> (String, String) {
    let dir = fixture("synthesizeme_bad").join(case);
    let file = dir.join("data").join(FILE).display().to_string();
    (load(&spec(&dir), &[]).unwrap_err().to_string(), file)
}

#[test]
fn malformed_rows_name_file_row_and_field() {
    let cases = [
        ("context_ends_with_model", "row 2: field `context[1].role` is not `user`, but the last message of the context must be the user's (the message both answers reply to): fix or remove the row"),
        ("context_empty", "row 2: field `context` is an empty list; it must end with the user message both answers reply to: fix or remove the row"),
        ("context_unknown_role", "row 2: field `context[0].role` must be one of `user`, `assistant`, `model` or `system` but is a string (\"bot\"); fix the value or remove the row"),
        ("chosen_role_user", "row 2: field `chosen.role` must be `model` or `assistant` (an answer is the model's message) but is a string (\"user\"); fix the value or remove the row"),
        ("chosen_null", "row 2: required field `chosen` is missing or null; add it or remove the row"),
        ("rejected_content_empty", "row 2: field `rejected.content` is empty (or whitespace only); fill it in or remove the row"),
        ("split_unknown", "row 2: field `split` is \"dev\", but SynthesizeMe's per-user split is one of train, val, test: fix the value or remove the row"),
        ("user_id_empty", "row 2: field `user_id` is empty (or whitespace only); fill it in or remove the row"),
        ("same_answers", "row 2: fields `chosen` and `rejected` are identical, so the pair cannot be ranked; fix or remove the row"),
        ("conversation_id_integer", "row 1: field `conversation_id` must be a string but is a number (9); fix the value or remove the row"),
        ("flip_string", "row 2: field `flip` must be a boolean (true or false) but is a string (\"yes\"); fix the value or remove the row"),
        (
            "missing_split_column",
            "all rows: required column `split` is missing (columns present: conversation_id, user_id, context, chosen, rejected, turns, type, flip, chosen_score, rejected_score, dataset, prediction_gemini/gemini-1.5-pro, agreement); this file is not in the SynthesizeMe (PersonalRewardBench) layout: point the spec at the dataset's own files",
        ),
    ];
    for (case, message) in cases {
        let (err, file) = bad(case);
        assert_eq!(err, format!("{file}: {message}"), "{case}");
    }
}

#[test]
fn bad_specs_and_missing_files_are_explained() {
    let dir = fixture("synthesizeme");
    let err = load(&format!("{}#dev", spec(&dir)), &[]).unwrap_err().to_string();
    assert!(err.contains("unknown SynthesizeMe split `dev`; write synthesizeme:DIR#SPLIT with SPLIT one of train, validation, test"), "{err}");
    let err = load("synthesizeme:/no/such/dir", &[]).unwrap_err().to_string();
    assert!(
        err.starts_with("spec `synthesizeme:/no/such/dir`: `/no/such/dir` is not a directory;"),
        "{err}"
    );
    let empty = tempfile::tempdir().unwrap();
    let err = load(&spec(empty.path()), &[]).unwrap_err().to_string();
    assert!(
        err.contains(
            "no SynthesizeMe files of split `test` found: expected DIR/data/test-*.parquet"
        ),
        "{err}"
    );
    // Files of other splits are not read.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("x_personalized_0125/data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(
        split_file("prism_personalized_0125", "test").1,
        data.join("validation-00000-of-00001.parquet"),
    )
    .unwrap();
    let err = load(&spec(tmp.path()), &[]).unwrap_err().to_string();
    assert!(err.contains("no SynthesizeMe files of split `test` found"), "{err}");
    // A split whose rows are all train/val rows has nothing to evaluate.
    let dir = fixture("synthesizeme_bad/no_test_rows");
    let err = load(&spec(&dir), &[]).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}: the files of split `test` hold no row whose per-user `split` is `test`, so there is nothing to evaluate; choose another split with synthesizeme:DIR#SPLIT",
            spec(&dir)
        )
    );
    // Two folders that name the same dataset.
    let twin = tempfile::tempdir().unwrap();
    for folder in ["prism_personalized_0125", "prism_personalized_1023"] {
        std::fs::create_dir_all(twin.path().join(folder).join("data")).unwrap();
        std::fs::copy(
            split_file("prism_personalized_0125", "test").1,
            twin.path().join(folder).join("data").join(FILE),
        )
        .unwrap();
    }
    let err = load(&spec(twin.path()), &[]).unwrap_err().to_string();
    assert!(
        err.contains(
            "both prism_personalized_0125/ and prism_personalized_1023/ hold subset \"prism\""
        ),
        "{err}"
    );
}

#[test]
fn build_refuses_synthesizeme_data() {
    let err = load_questions(&spec(&fixture("synthesizeme")), &[]).unwrap_err().to_string();
    assert!(err.contains("SynthesizeMe data has no rubric aspects, and `prbench build` writes its answers from them"), "{err}");
}
