//! `prism:DIR`: the raw PRISM alignment dataset (Kirk et al., "The PRISM Alignment Project",
//! arXiv 2404.16019; Hugging Face dataset `HannahRoseKirk/prism-alignment`, code
//! github.com/HannahKirk/prism-alignment), its rated conversations turned into preference pairs
//! and mapped onto the PRB schema. These examples are not Personalized-RewardBench data: the
//! dataset's `kind` is [`KIND_PRISM`], so reports say so.
//!
//! # Layout
//!
//! `DIR` holds `conversations.jsonl` (one conversation per line) and `survey.jsonl` (one
//! participant per line), as the dataset repo ships them. Either may instead be a JSON array of
//! the same objects named `conversations.json` / `survey.json` (one of the two names per file;
//! a row is then an array element, 1-based). Both are read (survey first) and hashed under
//! their names. All examples form one subset, [`PRISM_SUBSET`].
//!
//! A conversation line has `conversation_id` and `user_id` (non-empty strings),
//! `conversation_type` (optional string) and `conversation_history`: entries in order, each with
//! `role` (`user` or `model`), `content` (string) and `turn` (integer, from 0); a `model` entry
//! also has `within_turn_id` (integer or string) and `if_chosen` (boolean). `model_name`,
//! `model_provider`, `score` and every other field are not read (prbench never shows a model
//! under test which model wrote an answer).
//!
//! A survey line has `user_id` (non-empty string, one line per user) and the keys
//! `stated_prefs` (an object of attribute → rating: numbers, strings or null), `self_description`
//! and `system_string` (strings), each of which may be null; other fields are not read.
//!
//! # Mapping
//!
//! Each turn of a conversation is its user message (the turn's first entry) and the model
//! replies after it with the same `turn`. The opening turn has up to four replies from
//! different models, later turns two from the model the conversation continued with. Per turn,
//! `chosen` is the reply with `if_chosen` true, and each other reply of the turn is a `rejected`:
//! up to three pairs for the opening turn, one for a later turn. A turn with no reply gives no
//! pair.
//!
//! | PRB field | from |
//! |---|---|
//! | `id` | `"{conversation_id}-t{turn}-{within_turn_id}"`, `within_turn_id` of the rejected reply |
//! | `subset` | `prism` |
//! | `question` | the turn's user message; from the second turn on, the earlier turns (each user message and the chosen reply the conversation continued with) come first as a labelled transcript ([`crate::dialogue`]) |
//! | `chosen`, `rejected` | `content` of the chosen and of the rejected reply |
//! | `profile` | the user's survey line, up to three posts (a null or blank value gives none): `id = "stated_prefs"`, `category = "survey: stated preferences"`, text [`STATED_PREFS_INTRO`] then `name: value` for each non-null attribute in name order, joined by `; `; `id = "self_description"`, `category = "survey: self-description"`, the text as written; `id = "system_string"`, `category = "survey: system string"`, the text as written |
//! | `category` | `conversation_type` (e.g. `unguided`, `values guided`, `controversy guided`), else `prism` |
//! | `rubric_aspects`, `narrative` | empty: the dataset has no scoring standard besides the choice, so the `oracle` condition is refused for it |
//! | `user_id` | `user_id` |
//!
//! Rules whose breach is an error naming the file, line and field path (e.g.
//! `conversation_history[4].if_chosen`): a turn's first entry is the user's; turns increase;
//! a reply carries its user message's `turn`; a turn with replies has exactly one chosen reply;
//! `within_turn_id`s differ within a turn; a rejected reply's text differs from the chosen one's;
//! every conversation's `user_id` has a survey line; survey `user_id`s are unique;
//! `conversation_id`s are unique (a repeated conversation would repeat every example id).
//!
//! # What was and was not confirmed
//!
//! Confirmed from the dataset card (`data/prism_datacard.md` of the code repo: the file names,
//! one conversation or participant per line, `user_id` linking the two, the four-then-two reply
//! structure) and from the release scripts (`src/data_processing/process_conversations.py`,
//! `prepare_survey.py`): the entry fields `turn` (0-based), `role` (`user`/`model`), `content`,
//! `model_provider`, `model_name`, `score`, `if_chosen` (a boolean) and `within_turn_id` (the
//! opening turn's answer id, then 0 and 1), user entries carrying only `turn`, `role` and
//! `content`; the survey keys `user_id`, `self_description`, `system_string` and `stated_prefs`
//! (a mapping from attribute, e.g. `values`, `creativity`, `fluency`, `factuality`,
//! `diversity`, `safety`, `personalisation`, `helpfulness`, to a slider rating). Not confirmed
//! (the released files themselves were not read here): the JSON type of the opening turn's
//! `within_turn_id`, the value range of the ratings, and how often a later turn has two
//! identical replies (both then marked chosen: such a turn is refused with a message, since the
//! choice cannot be told apart).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::dialogue::{render_question, Speaker};
use crate::error::DataError;
use crate::json_rows::{visit_json, visit_jsonl, RowCtx};
use crate::load::{select_subsets, RowShape};
use crate::rows::{finish, ContentHash, RawRow};
use crate::schema::{Dataset, Example, ProfilePost};

/// Dataset `kind` of PRISM data.
pub const KIND_PRISM: &str = "prism";

/// The one subset of PRISM data.
pub const PRISM_SUBSET: &str = "prism";

/// The conversations file in `DIR`, as released (JSON lines); [`CONVERSATIONS_ARRAY_FILE`] is
/// read in its place when that is the one present.
pub const CONVERSATIONS_FILE: &str = "conversations.jsonl";

/// The conversations as one JSON array, the alternative to [`CONVERSATIONS_FILE`].
pub const CONVERSATIONS_ARRAY_FILE: &str = "conversations.json";

/// The survey file in `DIR`, as released (JSON lines); [`SURVEY_ARRAY_FILE`] is read in its
/// place when that is the one present.
pub const SURVEY_FILE: &str = "survey.jsonl";

/// The survey as one JSON array, the alternative to [`SURVEY_FILE`].
pub const SURVEY_ARRAY_FILE: &str = "survey.json";

/// The first words of the stated-preferences post.
pub const STATED_PREFS_INTRO: &str =
    "How much this user wants each quality in an AI model's answers (survey rating, higher = more important): ";

/// The survey fields that become profile posts: (key, post category).
const SURVEY_POSTS: [(&str, &str); 3] = [
    ("stated_prefs", "survey: stated preferences"),
    ("self_description", "survey: self-description"),
    ("system_string", "survey: system string"),
];

/// One survey line, read.
struct SurveyUser {
    profile: Vec<ProfilePost>,
    row: usize,
}

/// The stated-preferences post text, or `None` when every rating is null.
fn stated_prefs_text(ctx: RowCtx, prefs: &Map<String, Value>) -> Result<Option<String>, DataError> {
    let mut parts = Vec::new();
    for (name, v) in prefs {
        let value = match v {
            Value::Null => continue,
            Value::Number(n) => n.to_string(),
            Value::String(s) if s.trim().is_empty() => continue,
            Value::String(s) => s.clone(),
            other => {
                return Err(ctx.wrong(
                    &format!("stated_prefs.{name}"),
                    "a number, a string or null",
                    other,
                ))
            }
        };
        parts.push(format!("{name}: {value}"));
    }
    Ok((!parts.is_empty()).then(|| format!("{STATED_PREFS_INTRO}{}", parts.join("; "))))
}

/// Parses one survey line: its user id and profile posts.
fn survey_row(v: &Value, ctx: RowCtx) -> Result<(String, Vec<ProfilePost>), DataError> {
    let obj = ctx.object(v, "(row)")?;
    let user_id = ctx.text(obj, "user_id", "user_id")?;
    let mut profile = Vec::new();
    for (key, category) in SURVEY_POSTS {
        let text = match obj.get(key) {
            None => return Err(ctx.missing(key)),
            Some(Value::Null) => None,
            Some(Value::Object(prefs)) if key == "stated_prefs" => stated_prefs_text(ctx, prefs)?,
            Some(v) if key == "stated_prefs" => {
                return Err(ctx.wrong(key, "an object (attribute → rating) or null", v))
            }
            Some(Value::String(s)) => (!s.trim().is_empty()).then(|| s.clone()),
            Some(v) => return Err(ctx.wrong(key, "a string or null", v)),
        };
        if let Some(text) = text {
            profile.push(ProfilePost { id: key.to_string(), category: category.to_string(), text });
        }
    }
    Ok((user_id, profile))
}

/// One model reply of a turn.
struct Reply {
    /// Index in `conversation_history`.
    index: usize,
    /// `within_turn_id` as written (an integer or a string).
    within: String,
    content: String,
    chosen: bool,
}

/// One turn: its user message and replies.
struct Turn {
    number: i64,
    /// Index of the user entry.
    index: usize,
    user: String,
    replies: Vec<Reply>,
}

/// A parsed conversation line.
struct Conversation {
    conversation_id: String,
    user_id: String,
    category: Option<String>,
    turns: Vec<Turn>,
}

/// `within_turn_id` of a model entry: an integer or a non-empty string, as text.
fn within_turn_id(ctx: RowCtx, o: &Map<String, Value>, path: &str) -> Result<String, DataError> {
    match o.get("within_turn_id") {
        None => Err(ctx.missing(path)),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(v) => Err(ctx.wrong(path, "an integer or a non-empty string", v)),
    }
}

/// Parses one conversation line into turns, checking the structure rules of the module docs.
fn conversation(v: &Value, ctx: RowCtx) -> Result<Conversation, DataError> {
    let obj = ctx.object(v, "(row)")?;
    let conversation_id = ctx.text(obj, "conversation_id", "conversation_id")?;
    let user_id = ctx.text(obj, "user_id", "user_id")?;
    let category = ctx.opt_string(obj, "conversation_type")?.filter(|t| !t.trim().is_empty());
    let mut turns: Vec<Turn> = Vec::new();
    for (i, entry) in
        ctx.list(obj, "conversation_history", "conversation_history")?.iter().enumerate()
    {
        let path = format!("conversation_history[{i}]");
        let o = ctx.object(entry, &path)?;
        let role_path = format!("{path}.role");
        let role = ctx.string(o, "role", &role_path)?;
        let turn_path = format!("{path}.turn");
        let turn = ctx.integer(o, "turn", &turn_path)?;
        let content = ctx.string(o, "content", &format!("{path}.content"))?;
        match role.as_str() {
            "user" => {
                if let Some(prev) = turns.last().filter(|t| turn <= t.number) {
                    return Err(ctx.invalid(
                        &turn_path,
                        format!(
                            "is {turn}, but the user message before it (conversation_history[{}]) has turn {}; each user message starts a new, higher turn: fix the turn numbers",
                            prev.index, prev.number
                        ),
                    ));
                }
                if content.trim().is_empty() {
                    return Err(ctx.empty(&format!("{path}.content")));
                }
                turns.push(Turn { number: turn, index: i, user: content, replies: Vec::new() });
            }
            "model" => {
                let Some(current) = turns.last_mut() else {
                    return Err(ctx.invalid(&role_path, "is `model`, but no user message comes before it; a turn starts with the user's message: fix the order of the entries"));
                };
                if turn != current.number {
                    return Err(ctx.invalid(
                        &turn_path,
                        format!(
                            "is {turn}, but this reply follows the user message of turn {} (conversation_history[{}]); a reply carries its user message's turn: fix the turn number or the order of the entries",
                            current.number, current.index
                        ),
                    ));
                }
                let within_path = format!("{path}.within_turn_id");
                let within = within_turn_id(ctx, o, &within_path)?;
                if let Some(same) = current.replies.iter().find(|r| r.within == within) {
                    return Err(ctx.invalid(
                        &within_path,
                        format!(
                            "is {within}, as is conversation_history[{}].within_turn_id of the same turn; replies of one turn need distinct ids (they name the examples): fix one of them",
                            same.index
                        ),
                    ));
                }
                let chosen = ctx.boolean(o, "if_chosen", &format!("{path}.if_chosen"))?;
                if content.trim().is_empty() {
                    return Err(ctx.empty(&format!("{path}.content")));
                }
                current.replies.push(Reply { index: i, within, content, chosen });
            }
            _ => {
                return Err(ctx.wrong(&role_path, "`user` or `model`", &Value::String(role)));
            }
        }
    }
    Ok(Conversation { conversation_id, user_id, category, turns })
}

/// The chosen reply of `turn` (exactly one when it has replies), or `None` for a turn without
/// replies.
fn chosen_reply<'t>(ctx: RowCtx, turn: &'t Turn) -> Result<Option<&'t Reply>, DataError> {
    let chosen: Vec<&Reply> = turn.replies.iter().filter(|r| r.chosen).collect();
    match (chosen.as_slice(), turn.replies.first()) {
        (_, None) => Ok(None),
        ([one], _) => Ok(Some(one)),
        ([], Some(first)) => Err(ctx.invalid(
            &format!("conversation_history[{}].if_chosen", first.index),
            format!(
                "is false, as for every reply of turn {}; one reply of a turn must have if_chosen true to make pairs: mark the chosen reply or remove the conversation",
                turn.number
            ),
        )),
        ([first, second, ..], _) => Err(ctx.invalid(
            &format!("conversation_history[{}].if_chosen", second.index),
            format!(
                "is true, as is conversation_history[{}].if_chosen of the same turn {}; one reply per turn is chosen, so the pairs would be ambiguous: keep one chosen reply or remove the conversation",
                first.index, turn.number
            ),
        )),
    }
}

/// The examples of one conversation (line `ctx.row`), with `profile` as every example's profile.
fn conversation_examples(
    ctx: RowCtx,
    c: &Conversation,
    profile: &[ProfilePost],
) -> Result<Vec<Example>, DataError> {
    let mut out = Vec::new();
    let mut earlier: Vec<(Speaker, &str)> = Vec::new();
    for turn in &c.turns {
        let question = render_question(&earlier, &turn.user);
        let chosen = chosen_reply(ctx, turn)?;
        if let Some(chosen) = chosen {
            for r in turn.replies.iter().filter(|r| !r.chosen) {
                if r.content.trim() == chosen.content.trim() {
                    return Err(ctx.invalid(
                        &format!("conversation_history[{}].content", r.index),
                        format!(
                            "is the same text as the chosen reply conversation_history[{}].content, so the pair ranks nothing: fix or remove the reply",
                            chosen.index
                        ),
                    ));
                }
                out.push(Example {
                    id: format!("{}-t{}-{}", c.conversation_id, turn.number, r.within),
                    subset: PRISM_SUBSET.to_string(),
                    question: question.clone(),
                    profile: profile.to_vec(),
                    rubric_aspects: Vec::new(),
                    narrative: String::new(),
                    category: c.category.clone().unwrap_or_else(|| PRISM_SUBSET.to_string()),
                    chosen: chosen.content.clone(),
                    rejected: r.content.clone(),
                    user_id: Some(c.user_id.clone()),
                });
            }
        }
        earlier.push((Speaker::User, turn.user.as_str()));
        if let Some(chosen) = chosen {
            earlier.push((Speaker::Assistant, chosen.content.as_str()));
        }
    }
    Ok(out)
}

/// One of the two PRISM files as found in `DIR`: the released JSON-lines name, or the JSON-array
/// name in its place.
struct PrismFile {
    path: PathBuf,
    /// The file name, hashed with the content.
    name: &'static str,
    /// True for the JSON-array form.
    array: bool,
}

impl PrismFile {
    /// Finds `dir/lines_name` or `dir/array_name` (exactly one of them); `source` is the spec,
    /// for the error.
    ///
    /// # Errors
    /// [`DataError::MissingFile`] when neither is there; [`DataError::BadSpec`] when both are (which one
    /// is meant cannot be told).
    fn find(
        dir: &Path,
        lines_name: &'static str,
        array_name: &'static str,
        source: &str,
    ) -> Result<Self, DataError> {
        let (lines, array) = (dir.join(lines_name), dir.join(array_name));
        match (lines.is_file(), array.is_file()) {
            (true, false) => Ok(Self { path: lines, name: lines_name, array: false }),
            (false, true) => Ok(Self { path: array, name: array_name, array: true }),
            (true, true) => Err(DataError::BadSpec {
                spec: source.to_string(),
                detail: format!(
                    "`{}` holds both {lines_name} and {array_name}; prism:DIR reads one of the two (JSON lines, or the same rows as one JSON array): remove or move the other",
                    dir.display()
                ),
            }),
            (false, false) => Err(DataError::MissingFile {
                file: lines.display().to_string(),
                detail: format!(
                    "prism:DIR needs {CONVERSATIONS_FILE} and {SURVEY_FILE} from HannahRoseKirk/prism-alignment \
                     ({array_name} holding the same rows as one JSON array may stand in for {lines_name})"
                ),
            }),
        }
    }

    /// Hands each row to `f` with its 1-based row (line, or array element), as
    /// [`visit_jsonl`] / [`visit_json`] do.
    fn visit(
        &self,
        hash: &mut ContentHash,
        f: impl FnMut(usize, Value) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        if self.array {
            visit_json(&self.path, self.name, hash, f)
        } else {
            visit_jsonl(&self.path, self.name, hash, f)
        }
    }
}

/// Loads `DIR/conversations.jsonl` and `DIR/survey.jsonl` (or their `.json` array forms) as
/// benchmark pairs (see the module docs). `subsets` may name [`PRISM_SUBSET`] (or be empty);
/// `source` becomes the dataset's `source`.
///
/// # Errors
/// [`DataError::BadSpec`] when `dir` is not a directory or holds both forms of a file;
/// [`DataError::MissingFile`] for a missing file;
/// [`DataError::NoData`] when no conversation gives a pair; and every row error, naming the
/// file, 1-based line and field.
pub fn load_prism(dir: &Path, subsets: &[String], source: &str) -> Result<Dataset, DataError> {
    if !dir.is_dir() {
        return Err(DataError::BadSpec {
            spec: source.to_string(),
            detail: format!(
                "`{}` is not a directory; prism:DIR takes the folder holding {CONVERSATIONS_FILE} and {SURVEY_FILE} \
                 (HannahRoseKirk/prism-alignment)",
                dir.display()
            ),
        });
    }
    select_subsets(source, subsets, &[PRISM_SUBSET.to_string()])?;
    let mut hash = ContentHash::new();
    let survey = PrismFile::find(dir, SURVEY_FILE, SURVEY_ARRAY_FILE, source)?;
    let conversations = PrismFile::find(dir, CONVERSATIONS_FILE, CONVERSATIONS_ARRAY_FILE, source)?;
    let survey_file = survey.path.display().to_string();
    let mut users: HashMap<String, SurveyUser> = HashMap::new();
    survey.visit(&mut hash, |row, v| {
        let ctx = RowCtx {
            file: &survey_file,
            row,
        };
        let (user_id, profile) = survey_row(&v, ctx)?;
        if let Some(first) = users.get(&user_id) {
            return Err(ctx.invalid(
                "user_id",
                format!("is {user_id:?}, as in row {}; the survey has one row per user: remove one of the two", first.row),
            ));
        }
        users.insert(user_id, SurveyUser { profile, row });
        Ok(())
    })?;
    let file = conversations.path.display().to_string();
    let mut rows = Vec::new();
    let mut conversation_rows: HashMap<String, usize> = HashMap::new();
    conversations.visit(
        &mut hash,
        |row, v| {
            let ctx = RowCtx { file: &file, row };
            let c = conversation(&v, ctx)?;
            if let Some(first) = conversation_rows.insert(c.conversation_id.clone(), row) {
                return Err(ctx.invalid(
                    "conversation_id",
                    format!(
                        "is {:?}, as in row {first}; each conversation is one row (its turns are in conversation_history): remove one of the two",
                        c.conversation_id
                    ),
                ));
            }
            let user = users.get(&c.user_id).ok_or_else(|| {
            ctx.invalid(
                "user_id",
                format!(
                    "is {:?}, which has no row in {survey_file}; the profile comes from the user's survey row: use the survey released with these conversations",
                    c.user_id
                ),
            )
        })?;
            for example in conversation_examples(ctx, &c, &user.profile)? {
                rows.push(RawRow {
                    example,
                    subset_field: None,
                    file: file.clone(),
                    row,
                    extra: Default::default(),
                });
            }
            Ok(())
        },
    )?;
    finish(rows, source, KIND_PRISM, hash, RowShape::Pairs)
}
