//! A plan validated as a whole and turned into its steps, before any model loads: each step is
//! one library call of an existing verb (`train bt|pal`, `eval`, `bon sample|judge|score`) with
//! the flags that verb's parser accepted, its folder inside the study folder and the steps it
//! needs first. Nothing here reads a model or writes a file.
//!
//! Folders inside the study folder `OUT`: `models/<model>` (trained heads), `runs/` (run
//! folders `<benchmark>-<model>[-<condition>]`, one cache `runs/cache.sqlite`), `bon/<leg>`
//! (a Best-of-N folder per leg, its cache `bon/cache.sqlite`), `steps/` (one record per
//! finished step), and the tables.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use prbench_downstream::bon::options::{JudgeOptions, SampleOptions, ScoreOptions};
use prbench_engines::evaluate::EvalArgs;
use prbench_eval::condition::Condition;
use prbench_models::spec::ModelSpec;
use prbench_train::flags::{TrainBtArgs, TrainPalArgs};

use crate::flags;
use crate::plan::{Family, PlanError, PlanFile};

/// What a step runs.
#[derive(Debug)]
pub enum Action {
    /// `prbench train bt`.
    TrainBt(Box<TrainBtArgs>),
    /// `prbench train pal`.
    TrainPal(Box<TrainPalArgs>),
    /// `prbench eval` of one model on one benchmark, every condition of it.
    Eval(Box<EvalArgs>),
    /// `prbench bon sample` of a Best-of-N leg.
    BonSample(Box<SampleOptions>),
    /// `prbench bon judge` (a Best-of-N leg's samples, or an RL leg's policy answers).
    BonJudge(Box<JudgeOptions>),
    /// `prbench bon score` of one entry on a Best-of-N leg.
    BonScore(Box<ScoreOptions>),
    /// An RL leg's policy answers drawn outside the study (`policies`), copied into the
    /// study folder (`samples.jsonl` and its manifest) so that judging them writes nothing
    /// outside it.
    ImportSamples {
        /// The folder `prbench bon sample` wrote.
        from: PathBuf,
        /// Its copy under `rl/LEG/ENTRY`.
        to: PathBuf,
    },
}

/// One step of a study.
#[derive(Debug)]
pub struct Step {
    /// Its id, e.g. `eval/psoups/bt`, `bon-score/bon/bt.oracle`.
    pub id: String,
    /// The verb it runs, as typed on the command line (for the status and the record).
    pub command: String,
    /// What it runs.
    pub action: Action,
    /// The steps it needs finished first.
    pub after: Vec<String>,
    /// Runs a local engine (one at a time) rather than only remote calls.
    pub local: bool,
}

/// One ranked unit: a model under one condition on one benchmark.
#[derive(Debug, Clone)]
pub struct Entry {
    /// `model` when the model has one condition on the benchmark, else `model.<condition slug>`
    /// (`bt.oracle`, `bt.profile-k10`): its name in the rankings and the Best-of-N tables.
    pub name: String,
    /// The plan's model name.
    pub model: String,
    /// Its family.
    pub family: Family,
    /// The benchmark.
    pub benchmark: String,
    /// The condition.
    pub condition: String,
    /// The eval step that scores it.
    pub eval_step: String,
}

/// A benchmark as the study runs it.
#[derive(Debug, Clone)]
pub struct BenchmarkRun {
    /// The plan's key.
    pub name: String,
    /// Its name in the tables.
    pub title: String,
    /// `--data`.
    pub data: String,
}

/// The kind of a downstream leg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegKind {
    /// Best-of-N: the expected rubric score of the reward model's pick among k samples.
    BestOfN,
    /// RL: the mean rubric score of the policy trained against each reward model.
    Rl,
}

/// A downstream leg as the study runs it.
#[derive(Debug, Clone)]
pub struct Leg {
    /// The plan's key.
    pub name: String,
    /// Its name in the tables.
    pub title: String,
    /// Its kind.
    pub kind: LegKind,
    /// The benchmark its questions come from.
    pub benchmark: String,
    /// Best-of-N: its folder. RL: none.
    pub folder: Option<PathBuf>,
    /// The k of the downstream score (Best-of-N).
    pub k: Option<usize>,
    /// The entries it ranks, and for RL the judge step of each entry's policy answers.
    pub entries: Vec<(String, String)>,
}

/// A plan checked as a whole, with its steps in an order that runs each after its needs.
#[derive(Debug)]
pub struct Study {
    /// The plan.
    pub file: PlanFile,
    /// The study folder.
    pub out: PathBuf,
    /// The benchmarks, in plan order.
    pub benchmarks: Vec<BenchmarkRun>,
    /// The ranked entries, benchmark by benchmark in plan order.
    pub entries: Vec<Entry>,
    /// The downstream legs.
    pub legs: Vec<Leg>,
    /// The steps, needs first.
    pub steps: Vec<Step>,
}

/// The rubric judges' judgement name inside every Best-of-N folder the study judges.
pub const JUDGEMENTS: &str = "study-rubric";

/// The verbs' flags the study sets itself, and the plan key that sets each instead.
const EVAL_RESERVED: &[(&str, &str)] = &[
    ("model", "set `spec`"),
    ("data", "set the benchmark's `data`"),
    ("subset", "set the benchmark's `subsets`"),
    ("condition", "set the model's or the benchmark's `conditions`"),
    ("out", "the study folder is `--out` of `prbench study`"),
    ("run-id", "the study names its runs"),
    ("cache", "the study keeps one cache per folder"),
    ("no-cache", "a study always caches, so that a rerun makes no call"),
    ("seed", "set the plan's `seed`"),
    ("bootstrap", "set the plan's `bootstrap`"),
    ("limit", "set the benchmark's `limit`"),
    ("sample", "set the benchmark's `sample`"),
    ("quiet", "`prbench study` draws the progress"),
    ("json", "the study writes its own tables"),
    ("no-report", "the study writes its own report"),
    ("preflight", "run `prbench eval --preflight` by hand"),
];

const TRAIN_RESERVED: &[(&str, &str)] = &[
    ("data", "set `train.benchmark`"),
    ("subset", "set the benchmark's `subsets`"),
    ("out", "the study trains into its `models/` folder"),
    ("seed", "set the plan's `seed`"),
    ("quiet", "`prbench study` draws the progress"),
];

const BON_RESERVED: &[(&str, &str)] = &[
    ("data", "set the leg's `benchmark` (an RL leg's held-out items: `questions`)"),
    ("out", "the study names its folders"),
    ("samples", "the study names its folders"),
    ("policy", "set the leg's `policy`"),
    ("n", "set the leg's `n`"),
    ("judge", "set the leg's `judge`"),
    ("model", "set the model's `spec`"),
    ("condition", "set the model's `conditions`"),
    ("name", "the study names its files"),
    ("cache", "the study keeps one cache per folder"),
    ("no-cache", "a study always caches, so that a rerun makes no call"),
    ("seed", "set the plan's `seed`"),
    ("quiet", "`prbench study` draws the progress"),
    ("subset", "set the benchmark's `subsets`"),
];

impl Study {
    /// Checks `file` as a whole and lays out its steps with `out` as the study folder.
    ///
    /// # Errors
    /// [`PlanError::Invalid`] naming the line and key: no benchmark or model; a condition,
    /// spec or family that does not parse; a model evaluated under the same settings as another;
    /// a `train` whose spec is not a bare `bt`/`pal` (or a bare one without `train`); a
    /// downstream leg of an unknown kind, on an unknown benchmark or naming a model not
    /// evaluated on it; `pal:` models on data without user ids (checked on load, later); flags
    /// any verb refuses.
    pub fn new(file: PlanFile, out: PathBuf) -> Result<Study, PlanError> {
        let plan = &file.plan;
        if plan.benchmarks.is_empty() {
            return Err(file.invalid(0..0, "benchmarks", "the plan names no benchmark; add a `[benchmarks.NAME]` table with `data = \"...\"`"));
        }
        if plan.models.is_empty() {
            return Err(file.invalid(
                0..0,
                "models",
                "the plan names no model; add a `[models.NAME]` table with `spec = \"...\"`",
            ));
        }
        if !(1..=64).contains(&plan.remote_steps) {
            let at = file.text.find("remote-steps").unwrap_or(0);
            return Err(file.invalid(
                at..at + 1,
                "remote-steps",
                format!(
                    "remote-steps = {}: steps that only call servers run 1 to 64 at once",
                    plan.remote_steps
                ),
            ));
        }
        for name in plan.benchmarks.keys().chain(plan.models.keys()).chain(plan.downstream.keys()) {
            check_name(&file, name)?;
        }
        if let Some(b) =
            plan.bootstrap.filter(|b| !(100..=prbench_stats::bootstrap::MAX_RESAMPLES).contains(b))
        {
            let at = find_key(&file.text, "bootstrap");
            return Err(file.invalid(
                at..at,
                "bootstrap",
                format!(
                    "{b} bootstrap resamples: the benchmark CIs take 100 to {}",
                    prbench_stats::bootstrap::MAX_RESAMPLES
                ),
            ));
        }
        for (name, b) in &plan.benchmarks {
            let (span, b) = (b.span(), b.get_ref());
            if b.limit == Some(0) {
                return Err(file.invalid(span, format!("benchmarks.{name}.limit"), "limit = 0 evaluates nothing; give at least 1 (examples per subset), or leave it out for all"));
            }
            if b.sample && b.limit.is_none() {
                return Err(file.invalid(
                    span,
                    format!("benchmarks.{name}.sample"),
                    "`sample = true` draws `limit` examples per subset at random: give `limit` too",
                ));
            }
        }
        let seed = plan.seed.to_string();
        let bootstrap = plan.bootstrap.map(|b| b.to_string());
        let runs = out.join("runs");
        let mut benchmarks = Vec::new();
        let mut bench_conditions: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (name, b) in &plan.benchmarks {
            let b = b.get_ref();
            let conds = match &b.conditions {
                Some(c) => {
                    check_conditions(&file, c, &format!("benchmarks.{name}.conditions"))?;
                    c.get_ref().clone()
                }
                None => vec!["none".into()],
            };
            if b.title.as_deref().is_some_and(|t| t.contains('=') || t.trim().is_empty()) {
                let at = find_key(&file.text, "title");
                return Err(file.invalid(at..at, format!("benchmarks.{name}.title"), "a benchmark's title names it in the tables and in `prbench correlate --benchmark-set TITLE=CSV`: it cannot be blank or hold `=`"));
            }
            bench_conditions.insert(name, conds);
            benchmarks.push(BenchmarkRun {
                name: name.clone(),
                title: b.title.clone().unwrap_or_else(|| name.clone()),
                data: b.data.get_ref().clone(),
            });
        }
        let bench_args = |name: &str| -> Vec<String> {
            let b = plan.benchmarks[name].get_ref();
            let mut v = vec!["--data".to_string(), b.data.get_ref().clone()];
            for s in &b.subsets {
                v.extend(["--subset".to_string(), s.clone()]);
            }
            v
        };
        let mut steps = Vec::new();
        let mut entries = Vec::new();
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (name, m) in &plan.models {
            let m_span = m.span();
            let m = m.get_ref();
            let key = format!("models.{name}");
            let spec_text = m.spec.get_ref().trim().to_string();
            let mut after = Vec::new();
            let spec = match (&m.train, spec_text.as_str()) {
                (Some(t), "bt" | "pal") => {
                    let t_ref = t.get_ref();
                    let method = t_ref.method.get_ref().as_str();
                    if method != spec_text {
                        return Err(file.invalid(t_ref.method.span(), format!("{key}.train.method"), format!("the model's spec is `{spec_text}`, so it trains with `method = \"{spec_text}\"`")));
                    }
                    let bench = match &t_ref.benchmark {
                        Some(b) => {
                            known_benchmark(
                                &file,
                                b.get_ref(),
                                b.span(),
                                &format!("{key}.train.benchmark"),
                            )?;
                            b.get_ref().clone()
                        }
                        None => plan.benchmarks.keys().next().cloned().unwrap_or_default(),
                    };
                    let dir = out.join("models").join(name);
                    let mut base = bench_args(&bench);
                    base.extend([
                        "--out".into(),
                        dir.display().to_string(),
                        "--seed".into(),
                        seed.clone(),
                        "--quiet".into(),
                    ]);
                    let at = format!("{key}.train.options");
                    let options = t_ref.options.as_ref();
                    let (action, argv) = if method == "bt" {
                        let (args, argv) = flags::parse_options::<TrainBtArgs>(
                            &file,
                            "train bt",
                            base,
                            options,
                            &at,
                            TRAIN_RESERVED,
                            t.span(),
                        )?;
                        (Action::TrainBt(Box::new(args)), argv)
                    } else {
                        let (args, argv) = flags::parse_options::<TrainPalArgs>(
                            &file,
                            "train pal",
                            base,
                            options,
                            &at,
                            TRAIN_RESERVED,
                            t.span(),
                        )?;
                        (Action::TrainPal(Box::new(args)), argv)
                    };
                    let id = format!("train/{name}");
                    steps.push(Step {
                        id: id.clone(),
                        command: format!("prbench train {method} {}", argv.join(" ")),
                        action,
                        after: vec![],
                        local: true,
                    });
                    after.push(id);
                    format!("{method}:{}", dir.display())
                }
                (Some(t), _) => {
                    return Err(file.invalid(t.span(), format!("{key}.train"), format!("a model the study trains has `spec = \"bt\"` or `spec = \"pal\"` (the study fills in the path); `{spec_text}` is a model already trained: drop `train`")));
                }
                (None, "bt" | "pal") => {
                    return Err(file.invalid(m.spec.span(), format!("{key}.spec"), format!("`{spec_text}` without a path is a model the study trains: add `train = {{ method = \"{spec_text}\" }}`, or give `{spec_text}:PATH`")));
                }
                (None, _) => spec_text.clone(),
            };
            let parsed = ModelSpec::parse(&spec)
                .map_err(|e| file.invalid(m.spec.span(), format!("{key}.spec"), e.to_string()))?;
            if m.train.is_none() {
                check_spec(&parsed)
                    .map_err(|e| file.invalid(m.spec.span(), format!("{key}.spec"), e))?;
            }
            if let Some(o) = &m.score_options {
                // Checked here too when no Best-of-N leg reads them: a flag never silently dropped.
                let base =
                    vec!["--samples".to_string(), "x".into(), "--model".into(), spec.clone()];
                flags::parse_options::<ScoreOptions>(
                    &file,
                    "bon score",
                    base,
                    Some(o),
                    &format!("{key}.score-options"),
                    BON_RESERVED,
                    o.span(),
                )?;
            }
            let family = m.family.unwrap_or_else(|| Family::of_spec(&spec));
            let benches: Vec<String> = match &m.benchmarks {
                Some(list) => {
                    if list.get_ref().is_empty() {
                        return Err(file.invalid(list.span(), format!("{key}.benchmarks"), "an empty list evaluates the model nowhere; name at least one benchmark, or leave the key out for all"));
                    }
                    for b in list.get_ref() {
                        known_benchmark(&file, b, list.span(), &format!("{key}.benchmarks"))?;
                    }
                    list.get_ref().clone()
                }
                None => plan.benchmarks.keys().cloned().collect(),
            };
            for bench in &benches {
                let conds = match &m.conditions {
                    Some(c) => {
                        check_conditions(&file, c, &format!("{key}.conditions"))?;
                        c.get_ref().clone()
                    }
                    None => bench_conditions[bench.as_str()].clone(),
                };
                let b = plan.benchmarks[bench].get_ref();
                let mut argv = bench_args(bench);
                argv.extend([
                    "--model".into(),
                    spec.clone(),
                    "--condition".into(),
                    conds.join(","),
                    "--out".into(),
                    runs.display().to_string(),
                    "--run-id".into(),
                    format!("{bench}-{name}"),
                    "--cache".into(),
                    runs.join("cache.sqlite").display().to_string(),
                    "--seed".into(),
                    seed.clone(),
                    "--no-report".into(),
                ]);
                if let Some(bs) = &bootstrap {
                    argv.extend(["--bootstrap".into(), bs.clone()]);
                }
                if let Some(l) = b.limit {
                    argv.extend(["--limit".into(), l.to_string()]);
                }
                if b.sample {
                    argv.push("--sample".into());
                }
                let base_len = argv.len();
                let (args, argv): (EvalArgs, _) = flags::parse_options(
                    &file,
                    "eval",
                    argv,
                    m.options.as_ref(),
                    &format!("{key}.options"),
                    EVAL_RESERVED,
                    m_span.clone(),
                )?;
                let options = &argv[base_len..];
                let opt_span = m.options.as_ref().map_or(m_span.clone(), |o| o.span());
                let parsed_conds = Condition::parse_list(&args.condition).map_err(|e| {
                    file.invalid(m_span.clone(), format!("{key}.conditions"), e.to_string())
                })?;
                let recipe = None;
                args.check(&parsed, &parsed_conds, recipe).map_err(|e| {
                    file.invalid(opt_span.clone(), format!("{key}.options"), e.to_string())
                })?;
                // The same model under the same settings twice would count twice in every ranking.
                let same =
                    format!("{bench}\0{parsed:?}\0{}\0{}", conds.join(","), options.join("\0"));
                if let Some(other) = seen.insert(same, name.clone()) {
                    return Err(file.invalid(m_span.clone(), key.clone(), format!("evaluates `{spec}` on `{bench}` under the same conditions and options as `models.{other}`; a model counted twice would weigh twice in every ranking: remove one")));
                }
                let id = format!("eval/{bench}/{name}");
                for c in &parsed_conds {
                    let entry = if parsed_conds.len() == 1 {
                        name.clone()
                    } else {
                        format!("{name}.{}", c.slug())
                    };
                    if entries.iter().any(|e: &Entry| e.benchmark == *bench && e.name == entry) {
                        return Err(file.invalid(m_span.clone(), key.clone(), format!("its entry `{entry}` (model `{name}` under `{c}`) has the name of another entry on `{bench}`; rename the model")));
                    }
                    entries.push(Entry {
                        name: entry,
                        model: name.clone(),
                        family,
                        benchmark: bench.clone(),
                        condition: c.to_string(),
                        eval_step: id.clone(),
                    });
                }
                let local = matches!(
                    parsed,
                    ModelSpec::Gguf(_)
                        | ModelSpec::Hf { .. }
                        | ModelSpec::Dir(_)
                        | ModelSpec::Bt(_)
                        | ModelSpec::Pal(_)
                );
                steps.push(Step {
                    id,
                    command: format!("prbench eval {}", argv.join(" ")),
                    action: Action::Eval(Box::new(args)),
                    after: after.clone(),
                    local,
                });
            }
        }
        let mut legs = Vec::new();
        for (name, d) in &plan.downstream {
            let d_span = d.span();
            let d = d.get_ref();
            let key = format!("downstream.{name}");
            known_benchmark(
                &file,
                d.benchmark.get_ref(),
                d.benchmark.span(),
                &format!("{key}.benchmark"),
            )?;
            let bench = d.benchmark.get_ref().clone();
            let on_bench: Vec<&Entry> = entries.iter().filter(|e| e.benchmark == bench).collect();
            let wanted: Option<BTreeSet<&String>> =
                d.models.as_ref().map(|m| m.get_ref().iter().collect());
            if let Some(list) = &d.models {
                for m in list.get_ref() {
                    if !on_bench.iter().any(|e| &e.model == m) {
                        return Err(file.invalid(list.span(), format!("{key}.models"), format!("`{m}` is not a model evaluated on benchmark `{bench}`; a downstream leg ranks models the benchmark ranks too")));
                    }
                }
            }
            let kind = match d.kind.get_ref().as_str() {
                "best-of-n" => LegKind::BestOfN,
                "rl" => LegKind::Rl,
                other => {
                    return Err(file.invalid(
                        d.kind.span(),
                        format!("{key}.kind"),
                        format!("unknown kind `{other}`; expected `best-of-n` or `rl`"),
                    ))
                }
            };
            let title = d.title.clone().unwrap_or_else(|| name.clone());
            for (what, value) in [("policy", &d.policy), ("judge", &d.judge)] {
                if let Some(v) = value {
                    let (at, v) = (v.span(), v.get_ref());
                    let parsed = ModelSpec::parse(v).map_err(|e| {
                        file.invalid(at.clone(), format!("{key}.{what}"), e.to_string())
                    })?;
                    if !matches!(parsed, ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. }) {
                        return Err(file.invalid(at, format!("{key}.{what}"), format!("the {what} generates text: `gguf:PATH` or `openai:MODEL@URL`, not `{v}`")));
                    }
                    check_spec(&parsed)
                        .map_err(|e| file.invalid(at.clone(), format!("{key}.{what}"), e))?;
                }
            }
            let judge_argv = |samples: &Path| -> Result<(JudgeOptions, String), PlanError> {
                let mut argv = vec![
                    "--samples".to_string(),
                    samples.display().to_string(),
                    "--name".into(),
                    JUDGEMENTS.into(),
                    "--quiet".into(),
                ];
                if let Some(j) = &d.judge {
                    argv.extend(["--judge".into(), j.get_ref().clone()]);
                }
                let (opts, argv): (JudgeOptions, _) = flags::parse_options(
                    &file,
                    "bon judge",
                    argv,
                    d.judge_options.as_ref(),
                    &format!("{key}.judge-options"),
                    BON_RESERVED,
                    d_span.clone(),
                )?;
                Ok((opts, format!("prbench bon judge {}", argv.join(" "))))
            };
            // `prbench bon sample` of a policy into `folder`: a Best-of-N leg's samples, or an RL
            // leg's answers of one trained policy.
            let sample_step = |id: String,
                               data: Vec<String>,
                               folder: &Path,
                               n: usize,
                               policy: Option<&str>,
                               cache: &str|
             -> Result<Step, PlanError> {
                let mut argv = data;
                argv.extend([
                    "--out".into(),
                    folder.display().to_string(),
                    "--n".into(),
                    n.to_string(),
                    "--seed".into(),
                    seed.clone(),
                    "--cache".into(),
                    cache.to_string(),
                    "--quiet".into(),
                ]);
                if let Some(p) = policy {
                    argv.extend(["--policy".into(), p.to_string()]);
                }
                let (sample, argv): (SampleOptions, _) = flags::parse_options(
                    &file,
                    "bon sample",
                    argv,
                    d.sample.as_ref(),
                    &format!("{key}.sample"),
                    BON_RESERVED,
                    d_span.clone(),
                )?;
                Ok(Step {
                    id,
                    command: format!("prbench bon sample {}", argv.join(" ")),
                    action: Action::BonSample(Box::new(sample)),
                    after: vec![],
                    local: policy.is_none_or(|p| p.starts_with("gguf:")),
                })
            };
            match kind {
                LegKind::BestOfN => {
                    let rl_key = [
                        ("policies", !d.policies.is_empty()),
                        ("checkpoints", !d.checkpoints.is_empty()),
                        ("questions", d.questions.is_some()),
                    ]
                    .into_iter()
                    .find_map(|(k, set)| set.then_some(k));
                    if let Some(k) = rl_key {
                        let at = match (k, &d.questions) {
                            ("questions", Some(q)) => q.span(),
                            _ => d_span,
                        };
                        return Err(file.invalid(at, format!("{key}.{k}"), "`policies`, `checkpoints` and `questions` name an RL leg's trained policies; a best-of-n leg samples its own (`kind = \"rl\"`?)"));
                    }
                    let n_at = d.n.as_ref().ok_or_else(|| {
                        file.invalid(
                            d_span.clone(),
                            format!("{key}.n"),
                            "a best-of-n leg needs `n`, the samples per question",
                        )
                    })?;
                    let n = *n_at.get_ref();
                    if !(1..=256).contains(&n) {
                        return Err(file.invalid(
                            n_at.span(),
                            format!("{key}.n"),
                            format!("n = {n} samples per question: a best-of-n leg takes 1 to 256"),
                        ));
                    }
                    if let Some(k) = d.k.as_ref().filter(|k| *k.get_ref() == 0 || *k.get_ref() > n)
                    {
                        return Err(file.invalid(
                            k.span(),
                            format!("{key}.k"),
                            format!("k = {} is outside 1..=n ({n})", k.get_ref()),
                        ));
                    }
                    let folder = out.join("bon").join(name);
                    let cache = out.join("bon").join("cache.sqlite").display().to_string();
                    let sample_id = format!("bon-sample/{name}");
                    steps.push(sample_step(
                        sample_id.clone(),
                        bench_args(&bench),
                        &folder,
                        n,
                        d.policy.as_ref().map(|p| p.get_ref().as_str()),
                        &cache,
                    )?);
                    let (mut judge, cmd) = judge_argv(&folder)?;
                    judge.stage.cache.cache = Some(PathBuf::from(&cache));
                    let judge_id = format!("bon-judge/{name}");
                    let judge_local =
                        d.judge.as_ref().is_none_or(|p| p.get_ref().starts_with("gguf:"));
                    steps.push(Step {
                        id: judge_id.clone(),
                        command: format!("{cmd} --cache {cache}"),
                        action: Action::BonJudge(Box::new(judge)),
                        after: vec![sample_id.clone()],
                        local: judge_local,
                    });
                    let mut leg_entries = Vec::new();
                    let pointwise =
                        |e: &Entry| !pairwise_only(eval_spec(&steps, &e.eval_step).as_str());
                    if let Some(list) = &d.models {
                        if let Some(e) = on_bench
                            .iter()
                            .find(|e| list.get_ref().contains(&e.model) && !pointwise(e))
                        {
                            return Err(file.invalid(list.span(), format!("{key}.models"), format!("`{}` is a pairwise judge: it picks the better of two answers and gives no reward for one answer, so it cannot pick among N; leave it out of the leg", e.model)));
                        }
                    }
                    let eligible: Vec<Entry> = on_bench
                        .iter()
                        .filter(|e| wanted.as_ref().is_none_or(|w| w.contains(&e.model)))
                        .filter(|e| pointwise(e))
                        .map(|e| (*e).clone())
                        .collect();
                    for e in &eligible {
                        let m = plan.models[&e.model].get_ref();
                        let spec = eval_spec(&steps, &e.eval_step);
                        let argv = vec![
                            "--samples".to_string(),
                            folder.display().to_string(),
                            "--model".into(),
                            spec.clone(),
                            "--condition".into(),
                            e.condition.clone(),
                            "--name".into(),
                            e.name.clone(),
                            "--cache".into(),
                            cache.clone(),
                            "--quiet".into(),
                        ];
                        let (score, argv): (ScoreOptions, _) = flags::parse_options(
                            &file,
                            "bon score",
                            argv,
                            m.score_options.as_ref(),
                            &format!("models.{}.score-options", e.model),
                            BON_RESERVED,
                            d_span.clone(),
                        )?;
                        let id = format!("bon-score/{name}/{}", e.name);
                        let mut needs = vec![sample_id.clone()];
                        needs.extend(
                            steps
                                .iter()
                                .find(|s| s.id == e.eval_step)
                                .map(|s| s.after.clone())
                                .unwrap_or_default(),
                        );
                        let local =
                            steps.iter().find(|s| s.id == e.eval_step).is_some_and(|s| s.local);
                        steps.push(Step {
                            id: id.clone(),
                            command: format!("prbench bon score {}", argv.join(" ")),
                            action: Action::BonScore(Box::new(score)),
                            after: needs,
                            local,
                        });
                        leg_entries.push((e.name.clone(), id));
                    }
                    check_leg_size(&file, d_span.clone(), &key, &leg_entries)?;
                    legs.push(Leg {
                        name: name.clone(),
                        title,
                        kind,
                        benchmark: bench,
                        folder: Some(folder),
                        k: Some(d.k.as_ref().map_or(n, |k| *k.get_ref())),
                        entries: leg_entries,
                    });
                }
                LegKind::Rl => {
                    if d.policies.is_empty() && d.checkpoints.is_empty() {
                        return Err(file.invalid(d_span, format!("{key}.policies"), "an RL leg names each model's trained policy: `[downstream.NAME.checkpoints]` with `MODEL = \"SPEC\"` (a `gguf:` file or an `openai:MODEL@URL` server the study samples), or `[downstream.NAME.policies]` with `MODEL = \"FOLDER\"`, answers `prbench bon sample` already wrote (examples/trl-grpo/sample.py writes one)"));
                    }
                    if let Some((k, at)) = [
                        ("k", d.k.as_ref().map(|k| k.span())),
                        ("policy", d.policy.as_ref().map(|p| p.span())),
                    ]
                    .into_iter()
                    .find_map(|(k, at)| at.map(|at| (k, at)))
                    {
                        return Err(file.invalid(at, format!("{key}.{k}"), "`k` and `policy` are a best-of-n leg's; an RL leg names each model's policy in `checkpoints` or `policies`"));
                    }
                    let sampling = [
                        ("n", d.n.as_ref().map(|n| n.span())),
                        ("sample", d.sample.as_ref().map(|s| s.span())),
                        ("questions", d.questions.as_ref().map(|q| q.span())),
                    ]
                    .into_iter()
                    .find_map(|(k, at)| at.map(|at| (k, at)));
                    if let (true, Some((k, at))) = (d.checkpoints.is_empty(), sampling) {
                        return Err(file.invalid(at, format!("{key}.{k}"), "`n`, `sample` and `questions` say how the study samples the policies in `checkpoints`; this leg has none (its `policies` hold answers already drawn)"));
                    }
                    let n = d.n.as_ref().map_or(4, |n| *n.get_ref());
                    if !(1..=256).contains(&n) {
                        return Err(file.invalid(
                            d.n.as_ref().map_or(d_span.clone(), |n| n.span()),
                            format!("{key}.n"),
                            format!("n = {n} answers per question: an RL leg takes 1 to 256"),
                        ));
                    }
                    let questions = match &d.questions {
                        Some(q) => vec!["--data".to_string(), q.get_ref().clone()],
                        None => bench_args(&bench),
                    };
                    let cache = out.join("rl").join("cache.sqlite");
                    let mut leg_entries = Vec::new();
                    let policies = d
                        .checkpoints
                        .iter()
                        .map(|(m, spec)| (m, spec, "checkpoints"))
                        .chain(d.policies.iter().map(|(m, f)| (m, f, "policies")));
                    for (model, value, table) in policies {
                        let at = format!("{key}.{table}.{model}");
                        let Some(e) = on_bench.iter().find(|e| &e.name == model) else {
                            return Err(file.invalid(value.span(), at, format!("`{model}` is not an entry of benchmark `{bench}` (entries: {}); a model evaluated under several conditions is named `MODEL.CONDITION`", on_bench.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", "))));
                        };
                        if leg_entries.iter().any(|(n, _)| n == model) {
                            return Err(file.invalid(value.span(), at, format!("`{model}` has a checkpoint and a policy folder; name its policy once")));
                        }
                        let mut after = vec![];
                        let folder = out.join("rl").join(name).join(model);
                        let dir = if table == "checkpoints" {
                            let spec = value.get_ref();
                            let parsed = ModelSpec::parse(spec).map_err(|e| {
                                file.invalid(value.span(), at.clone(), e.to_string())
                            })?;
                            if !matches!(parsed, ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. }) {
                                return Err(file.invalid(value.span(), at, format!("a policy generates text: `gguf:PATH` or `openai:MODEL@URL` (a served checkpoint), not `{spec}`")));
                            }
                            check_spec(&parsed)
                                .map_err(|e| file.invalid(value.span(), at.clone(), e))?;
                            let id = format!("rl-sample/{name}/{model}");
                            steps.push(sample_step(
                                id.clone(),
                                questions.clone(),
                                &folder,
                                n,
                                Some(spec),
                                &cache.display().to_string(),
                            )?);
                            after.push(id);
                            folder
                        } else {
                            let from = PathBuf::from(value.get_ref());
                            let id = format!("rl-import/{name}/{model}");
                            steps.push(Step {
                                id: id.clone(),
                                command: format!(
                                    "cp {0}/{{manifest.json,samples.jsonl}} {1}/",
                                    from.display(),
                                    folder.display()
                                ),
                                action: Action::ImportSamples { from, to: folder.clone() },
                                after: vec![],
                                local: false,
                            });
                            after.push(id);
                            folder
                        };
                        let (mut judge, cmd) = judge_argv(&dir)?;
                        judge.stage.cache.cache = Some(cache.clone());
                        let id = format!("rl-judge/{name}/{model}");
                        let judge_local =
                            d.judge.as_ref().is_none_or(|p| p.get_ref().starts_with("gguf:"));
                        steps.push(Step {
                            id: id.clone(),
                            command: format!("{cmd} --cache {}", cache.display()),
                            action: Action::BonJudge(Box::new(judge)),
                            after,
                            local: judge_local,
                        });
                        leg_entries.push((e.name.clone(), id));
                    }
                    check_leg_size(&file, d_span.clone(), &key, &leg_entries)?;
                    legs.push(Leg {
                        name: name.clone(),
                        title,
                        kind,
                        benchmark: bench,
                        folder: None,
                        k: None,
                        entries: leg_entries,
                    });
                }
            }
        }
        if let Some(c) = &plan.correlation {
            let c_ref = c.get_ref();
            if let Some(m) = &c_ref.metric {
                if !matches!(m.get_ref().as_str(), "auto" | "accuracy" | "debiased") {
                    return Err(file.invalid(
                        m.span(),
                        "correlation.metric",
                        format!(
                            "unknown metric `{}`; expected `auto`, `accuracy` or `debiased`",
                            m.get_ref()
                        ),
                    ));
                }
            }
            if let Some(s) = &c_ref.statistics {
                for stat in s.get_ref() {
                    if !crate::proxy::STATISTICS.contains(&stat.as_str()) {
                        return Err(file.invalid(
                            s.span(),
                            "correlation.statistics",
                            format!(
                                "unknown statistic `{stat}`; expected some of {}",
                                crate::proxy::STATISTICS.join(", ")
                            ),
                        ));
                    }
                }
            }
            for (what, value, lo, hi) in [
                ("bootstrap", c_ref.bootstrap, 1_000, 1_000_000),
                ("permutations", c_ref.permutations, 1_000, 10_000_000),
            ] {
                if let Some(v) = value.filter(|v| !(lo..=hi).contains(v)) {
                    return Err(file.invalid(
                        c.span(),
                        format!("correlation.{what}"),
                        format!("{v}: `prbench correlate --{what}` takes {lo} to {hi}"),
                    ));
                }
            }
            if let Some(p) = c_ref.rbo_p.filter(|p| !(*p > 0.0 && *p < 1.0)) {
                return Err(file.invalid(
                    c.span(),
                    "correlation.rbo-p",
                    format!("RBO persistence must be in (0, 1), got {p}"),
                ));
            }
        }
        Ok(Study { file, out, benchmarks, entries, legs, steps })
    }

    /// The step `id`.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }
}

/// The `--model` of the eval step `id` (the trained model's path filled in).
fn eval_spec(steps: &[Step], id: &str) -> String {
    steps
        .iter()
        .find_map(|s| match (&s.action, s.id == id) {
            (Action::Eval(a), true) => a.model.clone(),
            _ => None,
        })
        .unwrap_or_default()
}

/// A spec's checks that need no model loaded: a known baseline, a local model file or folder
/// that exists.
fn check_spec(spec: &ModelSpec) -> Result<(), String> {
    match spec {
        ModelSpec::Baseline(name) if name == "slot-a" => Ok(()),
        ModelSpec::Baseline(name) => prbench_models::baselines::Baseline::from_name(name, 0)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        ModelSpec::Gguf(p) if p.exists() => {
            // A GGUF file starts with the magic `GGUF`; a folder or another file would load
            // only to fail when its step runs, hours into a study.
            let mut magic = [0u8; 4];
            let is_gguf = std::fs::File::open(p)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
                .is_ok()
                && &magic == b"GGUF";
            if is_gguf {
                Ok(())
            } else {
                Err(format!(
                    "`{}` is not a GGUF file (it does not start with the `GGUF` magic); a `gguf:` spec names a .gguf model file",
                    p.display()
                ))
            }
        }
        ModelSpec::Gguf(p) | ModelSpec::Dir(p) | ModelSpec::Bt(p) | ModelSpec::Pal(p)
            if !p.exists() =>
        {
            Err(format!(
                "`{}` does not exist (a model file or folder is checked before anything runs)",
                p.display()
            ))
        }
        _ => Ok(()),
    }
}

/// A spec that only compares two answers (`baseline:slot-a`): it cannot score one answer.
fn pairwise_only(spec: &str) -> bool {
    ModelSpec::parse(spec).is_ok_and(|s| s == ModelSpec::Baseline("slot-a".into()))
}

/// Rank statistics need at least 3 entries with a downstream score.
fn check_leg_size(
    file: &PlanFile,
    span: std::ops::Range<usize>,
    key: &str,
    entries: &[(String, String)],
) -> Result<(), PlanError> {
    if entries.len() >= 3 {
        return Ok(());
    }
    let names: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
    Err(file.invalid(
        span,
        key,
        format!(
            "the leg ranks {} entr{} ({}); rank correlations need at least 3: add models",
            entries.len(),
            if entries.len() == 1 { "y" } else { "ies" },
            names.join(", ")
        ),
    ))
}

/// Names become folder and file names, and entry names join them to a condition with `.`:
/// letters, digits, `-` and `_` only.
fn check_name(file: &PlanFile, name: &str) -> Result<(), PlanError> {
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if ok {
        return Ok(());
    }
    let at = find_key(&file.text, name);
    Err(file.invalid(at..at, name.to_string(), "a name in a plan becomes a folder name and, joined to a condition by `.`, an entry name: use ASCII letters, digits, `-` and `_` only (a dot would also split a TOML key)"))
}

/// The byte offset of the first line declaring `name` as a table or key (0 if none).
fn find_key(text: &str, name: &str) -> usize {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.contains(name) {
            return at;
        }
        at += line.len();
    }
    0
}

fn known_benchmark(
    file: &PlanFile,
    name: &str,
    span: std::ops::Range<usize>,
    key: &str,
) -> Result<(), PlanError> {
    if file.plan.benchmarks.contains_key(name) {
        return Ok(());
    }
    let known: Vec<&str> = file.plan.benchmarks.keys().map(String::as_str).collect();
    Err(file.invalid(
        span,
        key,
        format!("no benchmark `{name}` in the plan (benchmarks: {})", known.join(", ")),
    ))
}

fn check_conditions(
    file: &PlanFile,
    c: &toml::Spanned<Vec<String>>,
    key: &str,
) -> Result<(), PlanError> {
    if c.get_ref().is_empty() {
        return Err(file.invalid(c.span(), key, "an empty list of conditions evaluates nothing; name at least one (`none`, `profile:K`, `planner`, `oracle`)"));
    }
    Condition::parse_list(c.get_ref()).map_err(|e| file.invalid(c.span(), key, e.to_string()))?;
    Ok(())
}
