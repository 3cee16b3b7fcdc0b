//! `prism:DIR` on the fixture `tools/make_personal_fixtures.py` writes in the layout of
//! HannahRoseKirk/prism-alignment (`tests/fixtures/prism`), and on malformed lines written here.
//! Every expected value was worked out by hand from the script's conversations and survey and
//! the mapping in the module docs.

mod common;

use std::path::Path;

use common::{expected_hash, fixture, names};
use prbench_data::prism::{KIND_PRISM, STATED_PREFS_INTRO};
use prbench_data::{load, load_questions, Example, ExampleBuilder, ProfilePost};
use serde_json::{json, Value};

fn spec(dir: &Path) -> String {
    format!("prism:{}", dir.display())
}

fn post(id: &str, category: &str, text: &str) -> ProfilePost {
    ProfilePost { id: id.into(), category: category.into(), text: text.into() }
}

fn user0_profile() -> Vec<ProfilePost> {
    vec![
        // Ratings in name order; `other: null` is left out.
        post(
            "stated_prefs",
            "survey: stated preferences",
            &format!("{STATED_PREFS_INTRO}creativity: 57; diversity: 81; factuality: 100; fluency: 80; helpfulness: 100; personalisation: 34; safety: 90; values: 100"),
        ),
        post("self_description", "survey: self-description", "I am a nurse from Lagos who plays chess."),
        post("system_string", "survey: system string", "Be concise and kind."),
    ]
}

/// user1: `stated_prefs` is null and `system_string` blank, so only the self-description.
fn user1_profile() -> Vec<ProfilePost> {
    vec![post("self_description", "survey: self-description", "Étudiante à Lyon 🎓")]
}

fn example(
    id: &str,
    question: &str,
    profile: Vec<ProfilePost>,
    category: &str,
    chosen: &str,
    rejected: &str,
    user: &str,
) -> Example {
    ExampleBuilder::new(id)
        .subset("prism")
        .question(question)
        .profile(profile)
        .category(category)
        .chosen(chosen)
        .rejected(rejected)
        .user_id(user)
        .build()
}

fn expected() -> Vec<Example> {
    let lie = "Rarely: a lie can spare harm, but trust suffers.";
    let white = "Small kind ones are usually forgiven.";
    let t1 = format!("Conversation so far:\nUser: Is it ever OK to lie?\nAssistant: {lie}\n\nLatest user message:\nWhat about white lies?");
    let t2 = format!(
        "Conversation so far:\nUser: Is it ever OK to lie?\nAssistant: {lie}\nUser: What about white lies?\nAssistant: {white}\n\nLatest user message:\nThanks!"
    );
    let cheese = "Cela dépend des goûts : comté, brie, roquefort…";
    let both = "There are good arguments on both sides.";
    let v = "values guided";
    vec![
        // c0, opening turn: four replies, #2 chosen → three pairs.
        example("c0-t0-0", "Is it ever OK to lie?", user0_profile(), v, lie, "Never.", "user0"),
        example(
            "c0-t0-1",
            "Is it ever OK to lie?",
            user0_profile(),
            v,
            lie,
            "Sometimes, to protect someone.",
            "user0",
        ),
        example(
            "c0-t0-3",
            "Is it ever OK to lie?",
            user0_profile(),
            v,
            lie,
            "Always, if it helps you.",
            "user0",
        ),
        // Later turns: two replies → one pair each; the context is the earlier turns with the
        // reply the conversation continued with.
        example("c0-t1-0", &t1, user0_profile(), v, white, "White lies are always fine.", "user0"),
        example("c0-t2-1", &t2, user0_profile(), v, "You're welcome.", "OK.", "user0"),
        // c1: three opening replies → two pairs.
        example(
            "c1-t0-0",
            "Quel est le meilleur fromage ?",
            user1_profile(),
            "unguided",
            cheese,
            "Le comté, sans hésiter.",
            "user1",
        ),
        example(
            "c1-t0-2",
            "Quel est le meilleur fromage ?",
            user1_profile(),
            "unguided",
            cheese,
            "Le cheddar.",
            "user1",
        ),
        // c2: the same user again, the first reply chosen.
        example(
            "c2-t0-1",
            "Should voting be compulsory?",
            user0_profile(),
            "controversy guided",
            both,
            "Yes.",
            "user0",
        ),
        example(
            "c2-t0-2",
            "Should voting be compulsory?",
            user0_profile(),
            "controversy guided",
            both,
            "No.",
            "user0",
        ),
        example(
            "c2-t0-3",
            "Should voting be compulsory?",
            user0_profile(),
            "controversy guided",
            both,
            "I cannot discuss politics.",
            "user0",
        ),
    ]
}

#[test]
fn conversations_become_one_pair_per_rejected_reply() {
    let dir = fixture("prism");
    let data = load(&spec(&dir), &[]).unwrap();
    assert_eq!(data.examples, expected());
    assert_eq!(data.kind, KIND_PRISM, "marked as not Personalized-RewardBench");
    assert_eq!(
        data.hash,
        expected_hash(&[
            ("survey.jsonl", &dir.join("survey.jsonl")),
            ("conversations.jsonl", &dir.join("conversations.jsonl"))
        ]),
        "the hash covers survey then conversations"
    );
    assert_eq!(load(&spec(&dir), &names(&["PRISM"])).unwrap().examples.len(), 10);
    let err = load(&spec(&dir), &names(&["arena"])).unwrap_err().to_string();
    assert!(err.contains("subset \"arena\" is not present (available: prism)"), "{err}");
}

#[test]
fn build_refuses_prism_data() {
    let err = load_questions(&spec(&fixture("prism")), &[]).unwrap_err().to_string();
    assert!(err.contains("PRISM data has no rubric aspects"), "{err}");
}

fn user(turn: i64, content: &str) -> Value {
    json!({"role": "user", "content": content, "turn": turn})
}

fn reply(turn: i64, within: Value, content: &str, chosen: bool) -> Value {
    json!({"role": "model", "content": content, "turn": turn, "within_turn_id": within, "model_name": "m", "score": 50, "if_chosen": chosen})
}

fn conv(id: &str, user_id: &str, history: Vec<Value>) -> Value {
    json!({"conversation_id": id, "user_id": user_id, "conversation_type": "unguided", "conversation_history": history})
}

/// A valid conversation of user0 (line 1 of every case below).
fn good() -> Value {
    conv(
        "g",
        "user0",
        vec![
            user(0, "Hi?"),
            reply(0, json!(0), "Hello!", true),
            reply(0, json!(1), "Go away.", false),
        ],
    )
}

/// Writes `DIR/survey.jsonl` (`survey` lines) and `DIR/conversations.jsonl` (`conversations`).
fn write(dir: &Path, survey: &[Value], conversations: &[Value]) {
    let lines = |rows: &[Value]| rows.iter().map(|r| format!("{r}\n")).collect::<String>();
    std::fs::write(dir.join("survey.jsonl"), lines(survey)).unwrap();
    std::fs::write(dir.join("conversations.jsonl"), lines(conversations)).unwrap();
}

fn survey_user(id: &str) -> Value {
    json!({"user_id": id, "stated_prefs": {"values": 50}, "self_description": "Me.", "system_string": null})
}

/// Loads `conversations` (after [`good`]) with a survey of user0; the error message.
fn conversation_error(bad: Value) -> (String, String) {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), &[survey_user("user0")], &[good(), bad]);
    let file = tmp.path().join("conversations.jsonl").display().to_string();
    (load(&spec(tmp.path()), &[]).unwrap_err().to_string(), file)
}

#[test]
fn malformed_conversations_name_file_line_and_field() {
    let h = |entries: Vec<Value>| conv("b", "user0", entries);
    let cases = [
        (
            h(vec![reply(0, json!(0), "Hello!", true), user(0, "Hi?")]),
            "field `conversation_history[0].role` is `model`, but no user message comes before it; a turn starts with the user's message: fix the order of the entries",
        ),
        (
            h(vec![json!({"role": "assistant", "content": "x", "turn": 0})]),
            "field `conversation_history[0].role` must be `user` or `model` but is a string (\"assistant\"); fix the value or remove the row",
        ),
        (
            h(vec![user(0, "Hi?"), reply(0, json!(0), "A", true), reply(0, json!(1), "B", false), user(0, "Again?")]),
            "field `conversation_history[3].turn` is 0, but the user message before it (conversation_history[0]) has turn 0; each user message starts a new, higher turn: fix the turn numbers",
        ),
        (
            h(vec![user(0, "Hi?"), reply(1, json!(0), "A", true)]),
            "field `conversation_history[1].turn` is 1, but this reply follows the user message of turn 0 (conversation_history[0]); a reply carries its user message's turn: fix the turn number or the order of the entries",
        ),
        (
            h(vec![user(0, "Hi?"), reply(0, json!(0), "A", false), reply(0, json!(1), "B", false)]),
            "field `conversation_history[1].if_chosen` is false, as for every reply of turn 0; one reply of a turn must have if_chosen true to make pairs: mark the chosen reply or remove the conversation",
        ),
        (
            h(vec![user(0, "Hi?"), reply(0, json!(0), "A", true), reply(0, json!(1), "B", true)]),
            "field `conversation_history[2].if_chosen` is true, as is conversation_history[1].if_chosen of the same turn 0; one reply per turn is chosen, so the pairs would be ambiguous: keep one chosen reply or remove the conversation",
        ),
        (
            h(vec![user(0, "Hi?"), json!({"role": "model", "content": "A", "turn": 0, "within_turn_id": 0, "if_chosen": "True"})]),
            "field `conversation_history[1].if_chosen` must be a boolean (true or false) but is a string (\"True\"); fix the value or remove the row",
        ),
        (
            h(vec![user(0, "Hi?"), json!({"role": "model", "content": "A", "turn": 0, "if_chosen": true})]),
            "required field `conversation_history[1].within_turn_id` is missing or null; add it or remove the row",
        ),
        (
            h(vec![user(0, "Hi?"), reply(0, json!(0), "A", true), reply(0, json!(0), "B", false)]),
            "field `conversation_history[2].within_turn_id` is 0, as is conversation_history[1].within_turn_id of the same turn; replies of one turn need distinct ids (they name the examples): fix one of them",
        ),
        (
            h(vec![user(0, "Hi?"), reply(0, json!(0), "Same.", true), reply(0, json!(1), " Same.", false)]),
            "field `conversation_history[2].content` is the same text as the chosen reply conversation_history[1].content, so the pair ranks nothing: fix or remove the reply",
        ),
        (
            h(vec![json!({"role": "user", "content": "Hi?", "turn": "0"})]),
            "field `conversation_history[0].turn` must be an integer but is a string (\"0\"); fix the value or remove the row",
        ),
        (
            h(vec![user(0, "Hi?"), reply(0, json!(0), " ", true)]),
            "field `conversation_history[1].content` is empty (or whitespace only); fill it in or remove the row",
        ),
        (json!({"conversation_id": "b", "user_id": "user0"}), "required field `conversation_history` is missing or null; add it or remove the row"),
        (json!({"conversation_id": "", "user_id": "user0", "conversation_history": []}), "field `conversation_id` is empty (or whitespace only); fill it in or remove the row"),
    ];
    for (bad, message) in cases {
        let (err, file) = conversation_error(bad.clone());
        assert_eq!(err, format!("{file}: row 2: {message}"), "{bad}");
    }
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), &[survey_user("user0")], &[good(), conv("b", "user9", vec![user(0, "Hi?")])]);
    let err = load(&spec(tmp.path()), &[]).unwrap_err().to_string();
    let survey = tmp.path().join("survey.jsonl").display().to_string();
    assert_eq!(
        err,
        format!(
            "{}: row 2: field `user_id` is \"user9\", which has no row in {survey}; the profile comes from the user's survey row: use the survey released with these conversations",
            tmp.path().join("conversations.jsonl").display()
        )
    );
}

#[test]
fn malformed_survey_lines_name_file_line_and_field() {
    let mut no_description = survey_user("user1");
    no_description.as_object_mut().unwrap().remove("self_description");
    let cases = [
        (survey_user("user0"), "field `user_id` is \"user0\", as in row 1; the survey has one row per user: remove one of the two"),
        (no_description, "required field `self_description` is missing or null; add it or remove the row"),
        (
            json!({"user_id": "user1", "stated_prefs": [1, 2], "self_description": null, "system_string": null}),
            "field `stated_prefs` must be an object (attribute → rating) or null but is a list of 2 items; fix the value or remove the row",
        ),
        (
            json!({"user_id": "user1", "stated_prefs": {"values": true}, "self_description": null, "system_string": null}),
            "field `stated_prefs.values` must be a number, a string or null but is a boolean (true); fix the value or remove the row",
        ),
        (
            json!({"user_id": "user1", "stated_prefs": null, "self_description": 5, "system_string": null}),
            "field `self_description` must be a string or null but is a number (5); fix the value or remove the row",
        ),
    ];
    for (bad, message) in cases {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), &[survey_user("user0"), bad.clone()], &[good()]);
        let err = load(&spec(tmp.path()), &[]).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("{}: row 2: {message}", tmp.path().join("survey.jsonl").display()),
            "{bad}"
        );
    }
}

#[test]
fn replies_without_a_pair_and_string_reply_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let c = conv(
        "s",
        "user0",
        vec![
            user(0, "Hi?"),
            reply(0, json!("a"), "Hello!", true),
            reply(0, json!("b"), "Go away.", false),
            // A turn with only its chosen reply, and a last user message with no reply: no pairs.
            user(1, "More?"),
            reply(1, json!(0), "Sure.", true),
            user(2, "Bye."),
        ],
    );
    write(
        tmp.path(),
        &[
            json!({"user_id": "user0", "stated_prefs": null, "self_description": null, "system_string": null}),
        ],
        &[c],
    );
    let data = load(&spec(tmp.path()), &[]).unwrap();
    let got: Vec<(&str, &str, usize)> = data
        .examples
        .iter()
        .map(|e| (e.id.as_str(), e.rejected.as_str(), e.profile.len()))
        .collect();
    assert_eq!(got, [("s-t0-b", "Go away.", 0)], "a survey line of nulls gives an empty profile");
}

#[test]
fn missing_files_and_bad_dirs_are_explained() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("conversations.jsonl"), format!("{}\n", good())).unwrap();
    let e = load(&spec(tmp.path()), &[]).unwrap_err();
    let err = e.to_string();
    assert!(
        err.starts_with(&format!(
            "required file {} is missing: prism:DIR needs conversations.jsonl and survey.jsonl",
            tmp.path().join("survey.jsonl").display()
        )),
        "{err}"
    );
    // Nothing failed underneath: no cause line would repeat the message.
    assert!(std::error::Error::source(&e).is_none(), "{e:?}");
    let err = load("prism:/no/such/dir", &[]).unwrap_err().to_string();
    assert!(err.starts_with("spec `prism:/no/such/dir`: `/no/such/dir` is not a directory; prism:DIR takes the folder holding conversations.jsonl and survey.jsonl"), "{err}");
}

/// A conversation given twice is named by its source field `conversation_id` and both rows, not
/// by the derived example id (`g-t0-1`) that would repeat.
#[test]
fn a_repeated_conversation_is_named_by_conversation_id() {
    let (err, file) = conversation_error(good());
    assert_eq!(
        err,
        format!(
            "{file}: row 2: field `conversation_id` is \"g\", as in row 1; each conversation is one row (its turns are in conversation_history): remove one of the two"
        )
    );
}

/// The fixture's rows as one JSON array each (`survey.json`, `conversations.json`) load to the
/// same examples as the released JSON-lines files; the hash covers the files read, under their
/// names. A `.jsonl` holding an array is refused with advice (rename to `.json`) that works.
#[test]
fn json_array_files_stand_in_for_the_jsonl_ones() {
    let src = fixture("prism");
    let tmp = tempfile::tempdir().unwrap();
    let as_array = |name: &str| -> String {
        let text = std::fs::read_to_string(src.join(name)).unwrap();
        let rows: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        serde_json::to_string_pretty(&rows).unwrap()
    };
    // First the mistake: arrays under the .jsonl names.
    std::fs::write(tmp.path().join("survey.jsonl"), as_array("survey.jsonl")).unwrap();
    std::fs::write(tmp.path().join("conversations.jsonl"), as_array("conversations.jsonl"))
        .unwrap();
    let err = load(&spec(tmp.path()), &[]).unwrap_err().to_string();
    assert!(err.contains("survey.jsonl") && err.contains("rename the file to .json"), "{err}");
    // Following the advice, for both files.
    for name in ["survey", "conversations"] {
        std::fs::rename(
            tmp.path().join(format!("{name}.jsonl")),
            tmp.path().join(format!("{name}.json")),
        )
        .unwrap();
    }
    let data = load(&spec(tmp.path()), &[]).unwrap();
    assert_eq!(data.examples, expected());
    assert_eq!(
        data.hash,
        expected_hash(&[
            ("survey.json", &tmp.path().join("survey.json")),
            ("conversations.json", &tmp.path().join("conversations.json"))
        ])
    );
    // Row numbers of an array are its elements, 1-based.
    let mut rows: Vec<Value> = serde_json::from_str(&as_array("conversations.jsonl")).unwrap();
    rows.push(rows[0].clone());
    std::fs::write(tmp.path().join("conversations.json"), serde_json::to_string(&rows).unwrap())
        .unwrap();
    let err = load(&spec(tmp.path()), &[]).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}: row {}: field `conversation_id` is \"c0\", as in row 1; each conversation is one row (its turns are in conversation_history): remove one of the two",
            tmp.path().join("conversations.json").display(),
            rows.len()
        )
    );
    // Both forms of one file: which is meant cannot be told.
    std::fs::write(
        tmp.path().join("survey.jsonl"),
        std::fs::read_to_string(src.join("survey.jsonl")).unwrap(),
    )
    .unwrap();
    let err = load(&spec(tmp.path()), &[]).unwrap_err().to_string();
    assert!(
        err.contains(&format!(
            "`{}` holds both survey.jsonl and survey.json; prism:DIR reads one of the two",
            tmp.path().display()
        )),
        "{err}"
    );
}
