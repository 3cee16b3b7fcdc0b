//! `prbench study PLAN.toml`: [`prbench_study`] validates the plan, runs its steps and writes
//! the tables; this draws the progress (one line per step and the steps' own bars) and prints
//! `study.md`.

use anyhow::Result;
use prbench_report::plural::count;
use prbench_study::execute::{self, StepState, StudyReporter};
use prbench_study::graph::Study;
use prbench_study::plan::PlanFile;

use crate::cli::StudyArgs;
use crate::progress::Bar;

impl StudyReporter for Bar {
    fn step(&self, id: &str, command: &str, state: &StepState) {
        eprintln!("{}", step_line(id, command, state));
    }
}

/// One line per step: `<state> <id>`, with the command for a running step, the calls and
/// seconds of a finished one and the reason of a failed one.
fn step_line(id: &str, command: &str, state: &StepState) -> String {
    match state {
        StepState::Pending => format!("study: pending  {id}"),
        StepState::Cached => format!("study: cached   {id} (finished before, nothing to do)"),
        StepState::Running => format!("study: running  {id}: {command}"),
        StepState::Done { calls, seconds } => {
            format!("study: done     {id} ({calls} model calls, {seconds:.1} s)")
        }
        StepState::Changed => format!("study: changed  {id} (finished before with other settings)"),
        StepState::Failed(reason) => format!("study: failed   {id}: {reason}"),
    }
}

/// Runs `prbench study`.
pub fn run(args: StudyArgs) -> Result<()> {
    let file = PlanFile::read(&args.plan)?;
    let out = args.out.clone().unwrap_or_else(|| file.default_out());
    let study = Study::new(file, out)?;
    prbench_study::check::check_data(&study)?;
    if args.status {
        for (id, command, state) in execute::status(&study)? {
            println!("{}", step_line(&id, &command, &state));
        }
        return Ok(());
    }
    let bar = Bar::new(args.quiet);
    let version = crate::code_version();
    let counts = execute::run(&study, version, &bar)?;
    eprintln!(
        "prbench: study: {} run now, {} finished before; {}",
        count(counts.steps_run, "step", "steps"),
        counts.steps_cached,
        count(counts.model_calls as usize, "model call", "model calls")
    );
    let written = prbench_study::results::write(&study, &format!("prbench {version}"), &mut |n| {
        eprintln!("prbench: {n}")
    })?;
    println!("{}", std::fs::read_to_string(&written.markdown)?);
    eprintln!(
        "prbench: study tables in {} (CSV and LaTeX in {}/tables/)",
        written.markdown.display(),
        study.out.display()
    );
    match &written.html {
        Ok(p) => eprintln!("prbench: HTML report in {}; open it in a browser", p.display()),
        Err(e) => eprintln!("prbench: warning: the HTML report was not written: {e}"),
    }
    Ok(())
}
