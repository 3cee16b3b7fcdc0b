//! The checks of a plan that read its data (never a model): every benchmark loads, `pal:`
//! models (trained by the study or given) are evaluated only on data with user ids or history
//! pairs, and each
//! RL leg's policy answers (drawn, or to be drawn from `questions`) are items of the leg's
//! benchmark.

use std::collections::BTreeMap;

use prbench_downstream::bon::folder::BonFolder;

use crate::graph::{Action, LegKind, Study};
use crate::plan::PlanError;

/// Loads each benchmark's data and checks what depends on it, before any model loads.
///
/// # Errors
/// [`PlanError::Invalid`] naming the line and key: data that does not load
/// (`benchmarks.NAME.data`), a `pal:` model on a benchmark with an example without a user id
/// (`models.NAME.spec`), an RL policy folder that cannot be read or holds answers to items the
/// benchmark lacks (`downstream.LEG.policies.MODEL`), RL questions that do not load or hold
/// items the benchmark lacks (`downstream.LEG.questions`).
pub fn check_data(study: &Study) -> Result<(), PlanError> {
    let file = &study.file;
    for b in &study.benchmarks {
        let plan_b = file.plan.benchmarks[&b.name].get_ref();
        let key = format!("benchmarks.{}.data", b.name);
        let err = |e: prbench_data::DataError| {
            file.invalid(plan_b.data.span(), &key, format!("the data does not load: {e:#}"))
        };
        // Data with history pairs (P-Soups, SynthesizeMe) gives every user, each row its own
        // when there are no user ids, the pairs PAL learns the user's row from.
        let (data, has_history) =
            match prbench_data::load_with_history(&b.data, &plan_b.subsets).map_err(err)? {
                Some((data, _)) => (data, true),
                None => (prbench_data::load(&b.data, &plan_b.subsets).map_err(err)?, false),
            };
        let no_user = data.examples.iter().find(|e| e.user_id.is_none()).filter(|_| !has_history);
        for step in &study.steps {
            let Action::Eval(args) = &step.action else { continue };
            let is_pal = args.model.as_deref().is_some_and(|m| m.starts_with("pal:"));
            if !is_pal || !step.id.starts_with(&format!("eval/{}/", b.name)) {
                continue;
            }
            if let Some(ex) = no_user {
                let model = step.id.rsplit('/').next().unwrap_or_default();
                let span = file.plan.models[model].get_ref().spec.span();
                return Err(file.invalid(span, format!("models.{model}.spec"), format!("a PAL model learns one row per user from the user's preference pairs, but example `{}` of benchmark `{}` has no user id and the data has no history pairs; evaluate PAL on data with users or history pairs (P-Soups, PRISM, SynthesizeMe) or drop the benchmark from the model's `benchmarks`", ex.id, b.name)));
            }
        }
        // Each item's question by id: RL answers and held-out questions must be the benchmark's.
        let asked: BTreeMap<&str, &str> =
            data.examples.iter().map(|e| (e.id.as_str(), e.question.as_str())).collect();
        for leg in study.legs.iter().filter(|l| l.kind == LegKind::Rl && l.benchmark == b.name) {
            let d = file.plan.downstream[&leg.name].get_ref();
            if let Some(q) = &d.questions {
                let key = format!("downstream.{}.questions", leg.name);
                let questions = prbench_data::load(q.get_ref(), &plan_b.subsets).map_err(|e| {
                    file.invalid(q.span(), &key, format!("the questions do not load: {e:#}"))
                })?;
                for e in &questions.examples {
                    match asked.get(e.id.as_str()) {
                        None => return Err(file.invalid(q.span(), &key, format!("item `{}` is not one of benchmark `{}`'s; the held-out questions must be items of the leg's benchmark (a subset of its data)", e.id, b.name))),
                        Some(question) if *question != e.question => return Err(file.invalid(q.span(), &key, format!("item `{}` asks another question than benchmark `{}`'s item of that id; the held-out questions must be the benchmark's items as they are", e.id, b.name))),
                        Some(_) => {}
                    }
                }
            }
            for (model, folder) in &d.policies {
                let key = format!("downstream.{}.policies.{model}", leg.name);
                let manifest = BonFolder::new(folder.get_ref()).read_manifest().map_err(|e| {
                    file.invalid(
                        folder.span(),
                        &key,
                        format!("not a folder `prbench bon sample` wrote: {e}"),
                    )
                })?;
                if let Some(missing) =
                    manifest.example_ids.iter().find(|id| !asked.contains_key(id.as_str()))
                {
                    return Err(file.invalid(folder.span(), &key, format!("holds answers to item `{missing}`, which benchmark `{}` does not have; the leg's items must be the benchmark's (sample the policy with `--data` of that benchmark)", b.name)));
                }
            }
        }
    }
    Ok(())
}
