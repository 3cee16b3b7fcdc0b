#!/usr/bin/env python3
"""Writes the test fixtures of prbench-data's `synthesizeme:` and `prism:` adapters, in the
public layouts of the two datasets, small enough to check every mapped value by hand.

    ~/.cache/prbench/tools/pyref-pyarrow26.0.1-pyyaml6.0.4/bin/python tools/make_personal_fixtures.py

(the pinned venv `scripts/setup.sh --tests` builds). Outputs, under
crates/prbench-data/tests/fixtures/:

- `synthesizeme/{chatbot_arena,prism}_personalized_0125/data/{train,validation,test}-00000-of-00001.parquet`:
  SynthesizeMe's PersonalRewardBench layout (Hugging Face repos
  MichaelR207/chatbot_arena_personalized_0125 and MichaelR207/prism_personalized_0125): one row
  per preference pair with `conversation_id`, `user_id`, `context` (list of struct
  {content, role}), `chosen` and `rejected` (struct {content, role}), `turns`, `type`, `split`
  (the user's own train/val/test) and `flip`, plus score/prediction columns the adapter ignores.
  Each Hugging Face split holds its own users, as in the published data.
- `synthesizeme_bad/<case>/data/test-00000-of-00001.parquet`: one defect per file, one per
  error path of the adapter (the case name says which).
- `synthesizeme_odd_columns/odd_personalized_0125/data/test-00000-of-00001.parquet`: a valid
  row plus ignored columns of types the adapter never converts (timestamp, dictionary).
- `prism/conversations.jsonl` and `prism/survey.jsonl`: the layout of
  HannahRoseKirk/prism-alignment (one conversation / one participant per line).

Every text is our own. Rerunning rewrites the same values (parquet metadata names the pyarrow
version).
"""

import copy
import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "prbench-data", "tests", "fixtures")

MESSAGE = pa.struct([("content", pa.string()), ("role", pa.string())])
SCHEMA = pa.schema(
    [
        ("conversation_id", pa.string()),
        ("user_id", pa.string()),
        ("context", pa.list_(MESSAGE)),
        ("chosen", MESSAGE),
        ("rejected", MESSAGE),
        ("turns", pa.int64()),
        ("type", pa.string()),
        ("split", pa.string()),
        ("flip", pa.bool_()),
        # Columns SynthesizeMe's loader drops; prbench neither reads nor checks them.
        ("chosen_score", pa.float64()),
        ("rejected_score", pa.float64()),
        ("dataset", pa.string()),
        ("prediction_gemini/gemini-1.5-pro", pa.string()),
        ("agreement", pa.float64()),
    ]
)


def msg(role, content):
    return {"content": content, "role": role}


def pair(conv, user, context, chosen, rejected, split, type_, flip, turns=None):
    """One SynthesizeMe row; `context` is a list of (role, content)."""
    return {
        "conversation_id": conv,
        "user_id": user,
        "context": [msg(r, c) for r, c in context],
        "chosen": msg("model", chosen) if isinstance(chosen, str) else chosen,
        "rejected": msg("model", rejected) if isinstance(rejected, str) else rejected,
        "turns": turns if turns is not None else sum(1 for r, _ in context if r == "user"),
        "type": type_,
        "split": split,
        "flip": flip,
        "chosen_score": 1.0,
        "rejected_score": 0.0,
        "dataset": "fixture",
        "prediction_gemini/gemini-1.5-pro": "First",
        "agreement": 0.5,
    }


def write_parquet(path, rows, schema=SCHEMA):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path)


# --- SynthesizeMe ---------------------------------------------------------------------------

ARENA = {
    # Hugging Face split `test`: the users prbench evaluates by default.
    "test": [
        # arena-u1: two train pairs (one multi-turn), one val pair, three test pairs (two from
        # one conversation, the second of them multi-turn).
        pair("c-101", "arena-u1", [("user", "Name a fruit.")], "Mango 🥭", "Potato.", "train", "chat", True),
        pair(
            "c-102",
            "arena-u1",
            [("user", "Tell me a joke."), ("assistant", "Why did the chicken cross the road?"), ("user", "Why?")],
            "To get to the other side!",
            "I don't know.",
            "train",
            "chat",
            False,
        ),
        pair("c-103", "arena-u1", [("user", "Best tea?")], "Sencha.", "Coffee.", "val", "chat", True),
        pair(
            "c-104",
            "arena-u1",
            [("user", "Recommend a café in Paris — quiet, please.")],
            {"content": "Café de Flore, early in the morning.", "role": "assistant"},
            "Any Starbucks.",
            "test",
            None,
            True,
        ),
        pair(
            "c-104",
            "arena-u1",
            [
                ("user", "Recommend a café in Paris — quiet, please."),
                ("model", "Café de Flore, early in the morning."),
                ("user", "And for dinner?"),
            ],
            "Le Comptoir, book ahead.",
            "A fast-food place.",
            "test",
            "chat",
            False,
        ),
        # arena-u2: no train rows (an empty profile).
        pair("c-201", "arena-u2", [("user", "What is 2 + 2?")], "4.", "5.", "test", "math", False),
    ],
    # Other users, in the other Hugging Face splits: not read unless #train / #validation.
    "train": [
        pair("c-301", "arena-u3", [("user", "Say hi.")], "Hi!", "Go away.", "train", "chat", True),
        pair("c-302", "arena-u3", [("user", "Say bye.")], "Bye!", "Whatever.", "test", "chat", False),
    ],
    "validation": [
        pair("c-401", "arena-u4", [("user", "Pick a colour.")], "Blue.", "Beige.", "test", "chat", True),
    ],
}

PRISM_PERSONALIZED = {
    "test": [
        pair(
            "c3156",
            "user584",
            [("user", "My daughter wants gauges in her ears. What can I do?")],
            "Listen to her reasons first, then talk through the risks together.",
            "Forbid it.",
            "train",
            "values guided",
            False,
        ),
        pair(
            "c3157",
            "user584",
            [
                ("user", "Is it rude to recline my seat on a plane?"),
                ("model", "It depends on the flight and on who sits behind you."),
                ("user", "A night flight, a tall man behind me."),
            ],
            "Recline a little and check with him first.",
            "Recline fully, it is your right.",
            "test",
            "unguided",
            True,
        ),
    ],
    "train": [
        pair("c3158", "user585", [("user", "Is tea better than coffee?")], "Both have merits.", "Coffee, obviously.", "test", "controversy guided", False),
    ],
    "validation": [
        pair("c3159", "user586", [("user", "Tips for sleep?")], "Keep a regular bedtime.", "Stay up late.", "test", "unguided", True),
    ],
}


def write_synthesizeme():
    base = os.path.join(ROOT, "synthesizeme")
    shutil.rmtree(base, ignore_errors=True)
    for folder, splits in [("chatbot_arena_personalized_0125", ARENA), ("prism_personalized_0125", PRISM_PERSONALIZED)]:
        for split, rows in splits.items():
            write_parquet(os.path.join(base, folder, "data", f"{split}-00000-of-00001.parquet"), rows)


def good_row():
    return pair("c-9", "u-9", [("user", "Question?")], "Good answer.", "Bad answer.", "test", "chat", False)


def bad_cases():
    """(case, rows, schema) with one defect each; the row at index 1 is the bad one where it is a
    row defect (row 2 in the adapter's 1-based messages)."""
    cases = []

    def with_second(name, edit, schema=SCHEMA):
        second = good_row()
        second["conversation_id"] = "c-10"
        edit(second)
        cases.append((name, [good_row(), second], schema))

    with_second("context_ends_with_model", lambda r: r["context"].append(msg("model", "Sure.")))
    with_second("context_empty", lambda r: r.update(context=[]))
    with_second("context_unknown_role", lambda r: r["context"].insert(0, msg("bot", "Beep.")))
    with_second("chosen_role_user", lambda r: r["chosen"].update(role="user"))
    with_second("chosen_null", lambda r: r.update(chosen=None))
    with_second("rejected_content_empty", lambda r: r["rejected"].update(content="  "))
    with_second("split_unknown", lambda r: r.update(split="dev"))
    with_second("user_id_empty", lambda r: r.update(user_id=""))
    with_second("same_answers", lambda r: r.update(rejected=msg("model", "Good answer. ")))
    only_train = good_row()
    only_train["split"] = "train"
    cases.append(("no_test_rows", [only_train], SCHEMA))
    # Column-level defects.
    no_split = pa.schema([f for f in SCHEMA if f.name != "split"])
    rows = [good_row()]
    for r in rows:
        del r["split"]
    cases.append(("missing_split_column", rows, no_split))
    int_ids = pa.schema([pa.field("conversation_id", pa.int64()) if f.name == "conversation_id" else f for f in SCHEMA])
    rows = [good_row(), good_row()]
    rows[0]["conversation_id"] = 9
    rows[1]["conversation_id"] = 10
    cases.append(("conversation_id_integer", rows, int_ids))
    flip_str = pa.schema([pa.field("flip", pa.string()) if f.name == "flip" else f for f in SCHEMA])
    rows = [good_row(), copy.deepcopy(good_row())]
    rows[0]["flip"] = None
    rows[1]["conversation_id"] = "c-10"
    rows[1]["flip"] = "yes"
    cases.append(("flip_string", rows, flip_str))
    return cases


def write_synthesizeme_odd_columns():
    """One dataset whose ignored columns have types prbench's generic parquet conversion
    refuses (a timestamp, a dictionary-encoded string): the adapter reads only its own
    columns, so the file still loads."""
    base = os.path.join(ROOT, "synthesizeme_odd_columns")
    shutil.rmtree(base, ignore_errors=True)
    table = pa.Table.from_pylist([good_row()], schema=SCHEMA)
    table = table.append_column("generated_at", pa.array([0], type=pa.timestamp("us")))
    table = table.set_column(
        table.schema.get_field_index("dataset"), "dataset", pa.array(["fixture"]).dictionary_encode()
    )
    path = os.path.join(base, "odd_personalized_0125", "data", "test-00000-of-00001.parquet")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path)


def write_synthesizeme_bad():
    base = os.path.join(ROOT, "synthesizeme_bad")
    shutil.rmtree(base, ignore_errors=True)
    for name, rows, schema in bad_cases():
        write_parquet(os.path.join(base, name, "data", "test-00000-of-00001.parquet"), rows, schema)


# --- PRISM ------------------------------------------------------------------------------------


def user_entry(turn, content):
    return {"role": "user", "content": content, "turn": turn}


def model_entry(turn, within, content, chosen, model="model-x", score=50):
    return {
        "role": "model",
        "content": content,
        "turn": turn,
        "within_turn_id": within,
        "model_provider": "provider",
        "model_name": model,
        "score": score,
        "if_chosen": chosen,
    }


def conversation(conv, user, type_, history):
    return {
        "conversation_id": conv,
        "user_id": user,
        "included_in_balanced_subset": True,
        "conversation_type": type_,
        "opening_prompt": history[0]["content"],
        "generated_datetime": "2023-11-22 12:00:00",
        "timing_duration_s": 120.0,
        "timing_duration_mins": 2.0,
        "conversation_turns": max(e["turn"] for e in history) + 1,
        "conversation_history": history,
        "performance_attributes": {"values": 80, "fluency": 90},
        "choice_attributes": {"values": 70, "fluency": 60},
        "open_feedback": "Fine.",
    }


SURVEY = [
    {
        "user_id": "user0",
        "survey_only": False,
        "num_completed_conversations": 2,
        "lm_familiarity": "Very familiar",
        "self_description": "I am a nurse from Lagos who plays chess.",
        "system_string": "Be concise and kind.",
        "age": "25-34 years old",
        "stated_prefs": {
            "values": 100,
            "creativity": 57,
            "fluency": 80,
            "factuality": 100,
            "diversity": 81,
            "safety": 90,
            "personalisation": 34,
            "helpfulness": 100,
            "other": None,
        },
    },
    {
        "user_id": "user1",
        "survey_only": False,
        "num_completed_conversations": 1,
        "lm_familiarity": "Somewhat familiar",
        "self_description": "Étudiante à Lyon 🎓",
        "system_string": "   ",
        "age": "18-24 years old",
        "stated_prefs": None,
    },
    {
        "user_id": "user2",
        "survey_only": True,
        "num_completed_conversations": 0,
        "lm_familiarity": "Not familiar",
        "self_description": None,
        "system_string": None,
        "age": "65+ years old",
        "stated_prefs": {"values": 10},
    },
]

CONVERSATIONS = [
    conversation(
        "c0",
        "user0",
        "values guided",
        [
            user_entry(0, "Is it ever OK to lie?"),
            model_entry(0, 0, "Never.", False, "model-a", 20),
            model_entry(0, 1, "Sometimes, to protect someone.", False, "model-b", 60),
            model_entry(0, 2, "Rarely: a lie can spare harm, but trust suffers.", True, "model-c", 90),
            model_entry(0, 3, "Always, if it helps you.", False, "model-d", 5),
            user_entry(1, "What about white lies?"),
            model_entry(1, 0, "White lies are always fine.", False, "model-c", 30),
            model_entry(1, 1, "Small kind ones are usually forgiven.", True, "model-c", 80),
            user_entry(2, "Thanks!"),
            model_entry(2, 0, "You're welcome.", True, "model-c", 70),
            model_entry(2, 1, "OK.", False, "model-c", 40),
        ],
    ),
    conversation(
        "c1",
        "user1",
        "unguided",
        [
            user_entry(0, "Quel est le meilleur fromage ?"),
            model_entry(0, 0, "Le comté, sans hésiter.", False, "model-a", 40),
            model_entry(0, 1, "Cela dépend des goûts : comté, brie, roquefort…", True, "model-b", 85),
            model_entry(0, 2, "Le cheddar.", False, "model-e", 10),
        ],
    ),
    conversation(
        "c2",
        "user0",
        "controversy guided",
        [
            user_entry(0, "Should voting be compulsory?"),
            model_entry(0, 0, "There are good arguments on both sides.", True, "model-a", 75),
            model_entry(0, 1, "Yes.", False, "model-b", 30),
            model_entry(0, 2, "No.", False, "model-f", 30),
            model_entry(0, 3, "I cannot discuss politics.", False, "model-g", 1),
        ],
    ),
]


def write_jsonl(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_prism():
    base = os.path.join(ROOT, "prism")
    shutil.rmtree(base, ignore_errors=True)
    write_jsonl(os.path.join(base, "survey.jsonl"), SURVEY)
    write_jsonl(os.path.join(base, "conversations.jsonl"), CONVERSATIONS)


if __name__ == "__main__":
    write_synthesizeme()
    write_synthesizeme_bad()
    write_synthesizeme_odd_columns()
    write_prism()
    print(f"fixtures written under {os.path.normpath(ROOT)}")
