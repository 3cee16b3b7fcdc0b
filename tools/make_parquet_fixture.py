#!/usr/bin/env python3
"""Writes the small parquet fixtures of crates/prbench-data/tests (run by hand, output committed).

    pip install pyarrow
    python3 tools/make_parquet_fixture.py

Outputs, under crates/prbench-data/tests/fixtures/:

- prb_hf/Art_and_Entertainment/test-00000-of-00001.parquet  2 rows, string + list<struct> types
- prb_hf/Society_and_Culture/test-00000-of-00001.parquet    3 rows, large_string + large_list
  types (the loader must accept both); row 3 has an empty profile and an empty rubric
- bad_parquet/missing_rejected.parquet   no `rejected` column
- bad_parquet/null_chosen.parquet        row 2 has a null `chosen`
- bad_parquet/profile_as_string.parquet  `profile` is a string column

The layout of prb_hf/ is the Hugging Face one (PROTOCOL.md §1). The tests hard-code values from
the rows below; change both together.
"""

import os

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "prbench-data", "tests", "fixtures"))


def post(pid, category, text):
    return {"category": category, "id": pid, "text": text}


def aspect(a, e, r):
    return {"aspect": a, "evidence": e, "reason": r}


ART = [
    {
        "id": "art-001",
        "question": "Which film should I watch tonight?",
        "profile": [
            post("p1", "Movies", "I loved Spirited Away and every Ghibli film."),
            post("p2", "Music", "Joe Hisaishi scores make me cry."),
            post("p3", "Movies", "Live-action remakes bore me."),
        ],
        "rubric_aspects": [
            aspect("Animated films", "loved Spirited Away", "the user enjoys animation"),
            aspect("Strong soundtrack", "Hisaishi scores", "music matters to the user"),
        ],
        "narrative": "A Ghibli fan who cares about film music.",
        "category": "Movies",
        "chosen": "Try Princess Mononoke: Ghibli animation with a Hisaishi score.",
        "rejected": "Watch the latest live-action superhero blockbuster.",
    },
    {
        "id": "art-002",
        "question": "Recommend a novel for a long flight — something gripping.",
        "profile": [post("p9", "Books", "Mysteries with unreliable narrators are my favourite (ça va).")],
        "rubric_aspects": [aspect("Mystery", "unreliable narrators", "stated favourite genre")],
        "narrative": "Reads mysteries.",
        "category": "Books",
        "chosen": "Gone Girl: a twisty mystery with two unreliable narrators.",
        "rejected": "A dense history of the Roman Empire.",
    },
]

SOCIETY = [
    {
        "id": "soc-001",
        "question": "How do I talk to my neighbour about noise?",
        "profile": [
            post("a", "Community", "I hate confrontation."),
            post("b", "Community", "Notes under the door feel passive-aggressive to me."),
        ],
        "rubric_aspects": [
            aspect("Gentle approach", "hate confrontation", "avoid conflict"),
            aspect("Face to face", "notes feel passive-aggressive", "prefers direct talk"),
            aspect("Concrete script", "asks how", "wants wording"),
        ],
        "narrative": "Conflict-averse, prefers a friendly chat.",
        "category": "Community",
        "chosen": "Knock on a calm afternoon and say: 'Hi, could we find quiet hours together?'",
        "rejected": "Leave a firm note under their door listing the dates of the noise.",
    },
    {
        "id": "soc-002",
        "question": "Is volunteering worth it?",
        "profile": [post("c", "Volunteering", "I volunteer at a food bank on weekends.")],
        "rubric_aspects": [aspect("Personal experience", "food bank", "already volunteers")],
        "narrative": "An active volunteer.",
        "category": "Volunteering",
        "chosen": "Yes — your food bank work already shows how much it gives back.",
        "rejected": "It depends on your goals; many people prefer paid work.",
    },
    {
        "id": "soc-003",
        "question": "What is a good first civic step?",
        "profile": [],
        "rubric_aspects": [],
        "narrative": "",
        "category": "Civics",
        "chosen": "Register to vote and attend one local council meeting.",
        "rejected": "Just read the news.",
    },
]


def schema(large):
    s = pa.large_string() if large else pa.string()
    lst = pa.large_list if large else pa.list_
    return pa.schema(
        [
            ("id", s),
            ("question", s),
            ("profile", lst(pa.struct([("category", s), ("id", s), ("text", s)]))),
            ("rubric_aspects", lst(pa.struct([("aspect", s), ("evidence", s), ("reason", s)]))),
            ("narrative", s),
            ("category", s),
            ("chosen", s),
            ("rejected", s),
        ]
    )


def write(rows, sch, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=sch)
    pq.write_table(table, path)
    print(path, os.path.getsize(path), "bytes", table.num_rows, "rows")


def main():
    hf = os.path.join(ROOT, "prb_hf")
    write(ART, schema(False), os.path.join(hf, "Art_and_Entertainment", "test-00000-of-00001.parquet"))
    write(SOCIETY, schema(True), os.path.join(hf, "Society_and_Culture", "test-00000-of-00001.parquet"))

    bad = os.path.join(ROOT, "bad_parquet")
    no_rejected = pa.schema([f for f in schema(False) if f.name != "rejected"])
    write([{k: v for k, v in r.items() if k != "rejected"} for r in ART], no_rejected,
          os.path.join(bad, "missing_rejected.parquet"))
    null_chosen = [dict(r) for r in ART]
    null_chosen[1]["chosen"] = None
    write(null_chosen, schema(False), os.path.join(bad, "null_chosen.parquet"))
    str_fields = [pa.field("profile", pa.string()) if f.name == "profile" else f for f in schema(False)]
    as_string = [dict(r, profile="I like films.") for r in ART]
    write(as_string, pa.schema(str_fields), os.path.join(bad, "profile_as_string.parquet"))


if __name__ == "__main__":
    main()
