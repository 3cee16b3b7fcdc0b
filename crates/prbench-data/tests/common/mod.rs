//! Helpers shared by the integration tests: valid PRB rows and file writers.
#![allow(dead_code)]

pub mod pyref;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// A valid PRB row with two posts and one aspect.
pub fn row(id: &str) -> Value {
    json!({
        "id": id,
        "question": format!("question of {id}?"),
        "profile": [
            {"category": "Cat", "id": "p1", "text": format!("first post of {id}")},
            {"category": "Cat", "id": "p2", "text": "second post"}
        ],
        "rubric_aspects": [{"aspect": "Brevity", "evidence": "post p1", "reason": "likes short answers"}],
        "narrative": "likes short answers",
        "category": "Cat",
        "chosen": format!("short answer for {id}"),
        "rejected": format!("a very long and winding answer for {id}"),
    })
}

/// Writes rows as JSONL (one per line, final newline).
pub fn write_jsonl(path: &Path, rows: &[Value]) -> PathBuf {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

/// Writes rows as a pretty-printed JSON array.
pub fn write_json(path: &Path, rows: &[Value]) -> PathBuf {
    std::fs::write(path, serde_json::to_string_pretty(&Value::Array(rows.to_vec())).unwrap())
        .unwrap();
    path.to_path_buf()
}

/// The documented content hash, computed here from scratch: for each (name, path) in order,
/// sha256 over name, a NUL byte, the length as 8 little-endian bytes, then the bytes.
pub fn expected_hash(files: &[(&str, &Path)]) -> String {
    let mut h = Sha256::new();
    for (name, path) in files {
        let bytes = std::fs::read(path).unwrap();
        h.update(name.as_bytes());
        h.update([0u8]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    hex::encode(h.finalize())
}

/// `tests/fixtures/<rel>` in this crate.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

/// Subset names as the `load` API takes them.
pub fn names(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

/// A valid question row (input for `prbench build`): [`row`] without `chosen`/`rejected`.
pub fn question_row(id: &str) -> Value {
    let mut r = row(id);
    let o = r.as_object_mut().unwrap();
    o.remove("chosen");
    o.remove("rejected");
    r
}

/// Writes `rows` as a parquet file: each of `strings` becomes a Utf8 column (a missing or null
/// value is null), each `(name, fields)` of `lists` a `list<struct<fields: Utf8>>` column.
pub fn write_parquet(
    path: &Path,
    rows: &[Value],
    strings: &[&str],
    lists: &[(&str, &[&str])],
) -> PathBuf {
    use std::sync::Arc;

    use arrow_array::builder::{ArrayBuilder, ListBuilder, StringBuilder, StructBuilder};
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field};

    let mut columns: Vec<(String, ArrayRef)> = Vec::new();
    for name in strings {
        let values: StringArray =
            rows.iter().map(|r| r.get(*name).and_then(Value::as_str)).collect();
        columns.push((name.to_string(), Arc::new(values)));
    }
    for (name, fields) in lists {
        let struct_fields: Vec<Field> =
            fields.iter().map(|f| Field::new(*f, DataType::Utf8, true)).collect();
        let builders: Vec<Box<dyn ArrayBuilder>> = fields
            .iter()
            .map(|_| Box::new(StringBuilder::new()) as Box<dyn ArrayBuilder>)
            .collect();
        let mut list = ListBuilder::new(StructBuilder::new(struct_fields, builders));
        for r in rows {
            for item in r[*name].as_array().unwrap() {
                let s = list.values();
                for (k, f) in fields.iter().enumerate() {
                    s.field_builder::<StringBuilder>(k)
                        .unwrap()
                        .append_option(item.get(*f).and_then(Value::as_str));
                }
                s.append(true);
            }
            list.append(true);
        }
        columns.push((name.to_string(), Arc::new(list.finish())));
    }
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path.to_path_buf()
}

/// Examples with text that trips writers up (unicode, emoji, newlines, quotes, backslashes, a
/// NUL, YAML/JSON-looking text), an empty profile and rubric, in two subsets (a PRB config and
/// P-Soups' `friendly_unfriendly`) given interleaved: the export and a load give the PRB config
/// first, then `friendly_unfriendly`, rows in this order within each.
pub fn tricky_examples() -> Vec<prbench_data::Example> {
    use prbench_data::ExampleBuilder;
    vec![
        ExampleBuilder::new("pf-001")
            .subset("friendly_unfriendly")
            .question("Say \"hi\" — 'nicely'?\nSecond line\r\nthird\tline")
            .post("p1", "Chat", "I like 😀 and 👩‍👩‍👧 emoji; ça va, 日本語, Ελληνικά")
            .post("p2", "Chat", "back\\slash, nul \u{0} byte, {\"json\": [1, 2]}")
            .aspect("Friendly: yes", "- a list item?", "null")
            .narrative("---\nnot: a card\n...")
            .category("yes")
            .chosen("Hi there! 👋")
            .rejected("What do you want.")
            .build(),
        ExampleBuilder::new("art-001")
            .subset("Art_and_Entertainment")
            .question("Which film tonight?")
            .post("a1", "Movies", "I loved Spirited Away.")
            .aspect("Animation", "Spirited Away", "likes Ghibli")
            .aspect("Short", "", "")
            .narrative("A Ghibli fan.")
            .category("Movies")
            .chosen("Princess Mononoke.")
            .rejected("A superhero film.")
            .build(),
        ExampleBuilder::new("pf-002")
            .subset("friendly_unfriendly")
            .question("Empty profile and rubric?")
            .chosen("Sure, happy to help!")
            .rejected("No.")
            .build(),
        ExampleBuilder::new("art-002")
            .subset("Art_and_Entertainment")
            .question("A novel for a flight?")
            .post("b1", "Books", "Mysteries")
            .post("b2", "Books", " padded \n")
            .aspect("Mystery", "b1", "favourite genre")
            .narrative("Reads mysteries.")
            .category("Books")
            .chosen("Gone Girl.")
            .rejected("A history of Rome.")
            .build(),
    ]
}

/// [`tricky_examples`] in the order a load of their export returns them.
pub fn tricky_examples_load_order() -> Vec<prbench_data::Example> {
    let ex = tricky_examples();
    vec![ex[1].clone(), ex[3].clone(), ex[0].clone(), ex[2].clone()]
}
