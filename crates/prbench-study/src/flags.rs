//! A plan's `options` tables turned into the flags of the verb a step runs, and parsed by that
//! verb's own clap definition, so a plan accepts exactly what the command line accepts and a
//! flag's checks (ranges, choices) are one definition.

use std::ops::Range;

use clap::{Args, FromArgMatches, Parser};

use crate::plan::{Options, PlanError, PlanFile};

/// Parses a verb's flags from an argument list without a binary name.
#[derive(Parser, Debug)]
#[command(no_binary_name = true, disable_help_flag = true)]
struct Flags<T: Args> {
    #[command(flatten)]
    inner: T,
}

/// A step's flags: the study's own `base` flags, then those of the plan's `options` table at
/// `key` (see [`argv`]), parsed by `T`'s clap definition as `prbench VERB` would parse them.
///
/// Returns the parsed flags and the whole argument list (the step's command line).
///
/// # Errors
/// [`PlanError::Invalid`] naming `key`, at the options table's line (at `at` when the plan has
/// no table): a flag in `reserved`, a value of the wrong type, or clap's refusal, reworded in
/// the plan's terms; a string given to a switch (`both-orders = "yes"`) says how to write a
/// switch.
pub fn parse_options<T: Args + FromArgMatches>(
    file: &PlanFile,
    verb: &str,
    base: Vec<String>,
    options: Option<&Options>,
    key: &str,
    reserved: &[(&str, &str)],
    at: Range<usize>,
) -> Result<(T, Vec<String>), PlanError> {
    let mut all = base;
    all.extend(argv(file, options, key, reserved)?);
    match parse::<T>(verb, &all) {
        Ok(parsed) => Ok((parsed, all)),
        Err(message) => {
            let switch = options.and_then(|o| {
                o.get_ref().iter().find_map(|(name, value)| match value {
                    toml::Value::String(s)
                        if message.contains(&format!("unexpected argument '{s}'")) =>
                    {
                        Some(format!(
                            "; `{name}` is a switch: write `{name} = true` to set it, or leave it out"
                        ))
                    }
                    _ => None,
                })
            });
            let span = options.map_or(at, |o| o.span());
            Err(file.invalid(span, key, format!("{message}{}", switch.unwrap_or_default())))
        }
    }
}

/// Parses `argv` as the flags `T` of `verb` (`eval`, `train bt`, `bon sample`).
///
/// # Errors
/// clap's message (its first line and its tips, such as a similar flag's name), prefixed with
/// the verb.
fn parse<T: Args + FromArgMatches>(verb: &str, argv: &[String]) -> Result<T, String> {
    Flags::<T>::try_parse_from(argv).map(|f| f.inner).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
        // clap's "tip: a similar argument exists" lines, without its usage block.
        let tips: Vec<&str> =
            text.lines().map(str::trim).filter(|l| l.starts_with("tip:")).collect();
        let tips = if tips.is_empty() { String::new() } else { format!(" ({})", tips.join("; ")) };
        format!("`prbench {verb}` refuses these flags: {first}{tips}")
    })
}

/// The flags an `options` table gives: `key = true` → `--key`, `key = false` → nothing,
/// `key = "v"`/number → `--key v`, `key = [a, b]` → `--key a --key b`. `reserved` are the flags
/// the study sets itself; naming one is an error saying which plan key sets it.
///
/// # Errors
/// [`PlanError::Invalid`] at the table for a reserved flag, a nested table or a date.
pub fn argv(
    file: &PlanFile,
    options: Option<&Options>,
    key: &str,
    reserved: &[(&str, &str)],
) -> Result<Vec<String>, PlanError> {
    let Some(options) = options else { return Ok(vec![]) };
    let mut out = Vec::new();
    for (name, value) in options.get_ref() {
        if let Some((_, instead)) = reserved.iter().find(|(r, _)| r == name) {
            return Err(file.invalid(
                options.span(),
                format!("{key}.{name}"),
                format!("the study sets `--{name}` itself; {instead}"),
            ));
        }
        let flag = format!("--{name}");
        let scalar = |v: &toml::Value| -> Option<String> {
            match v {
                toml::Value::String(s) => Some(s.clone()),
                toml::Value::Integer(i) => Some(i.to_string()),
                toml::Value::Float(f) => Some(f.to_string()),
                _ => None,
            }
        };
        match value {
            toml::Value::Boolean(true) => out.push(flag),
            toml::Value::Boolean(false) => {}
            toml::Value::Array(items) => {
                for item in items {
                    let Some(v) = scalar(item) else {
                        return Err(file.invalid(
                            options.span(),
                            format!("{key}.{name}"),
                            "a list of flag values holds strings or numbers only",
                        ));
                    };
                    out.push(flag.clone());
                    out.push(v);
                }
            }
            v => match scalar(v) {
                Some(s) => {
                    out.push(flag);
                    out.push(s);
                }
                None => {
                    return Err(file.invalid(
                        options.span(),
                        format!("{key}.{name}"),
                        "a flag's value is true/false, a string, a number or a list of them",
                    ))
                }
            },
        }
    }
    Ok(out)
}
