//! Runs a child process and measures it: wall seconds and peak resident memory. The peak is
//! `ru_maxrss` from `wait4(2)` when that is above this process's own peak; Linux folds the
//! spawning process's high-water mark into the child's `ru_maxrss` at `exec`, so a smaller
//! child is measured instead by reading its `VmHWM` (a high-water mark of its own address
//! space) from /proc every 5 ms while it runs, the last reading before it exits. Used by the benches that compare
//! prbench and a reference in separate processes, so each side's memory is its own.

use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// One measured child run.
#[derive(Debug, Clone)]
pub struct ChildRun {
    /// Wall time from spawn to exit, seconds.
    pub wall_s: f64,
    /// Peak resident set size of the child, MiB.
    pub peak_rss_mib: f64,
    /// How `peak_rss_mib` was read: `ru_maxrss` or `polled VmHWM`.
    pub rss_source: &'static str,
    /// Everything the child wrote to stdout.
    pub stdout: String,
}

/// Why a bench side was skipped, for a table cell: `skipped: ` plus the first line of the
/// error chain (what failed) and its last non-empty line (why), or just the first when they
/// are the same.
pub fn skipped_because(e: &anyhow::Error) -> String {
    let text = format!("{e:#}");
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    match (lines.first(), lines.last()) {
        (Some(a), Some(b)) if a != b => format!("skipped: {a} {b}"),
        (Some(a), _) => format!("skipped: {a}"),
        _ => "skipped".into(),
    }
}

/// A field of a /proc status file in KiB (`VmRSS:`, `VmHWM:`); `None` when unreadable (off
/// Linux, or the process is gone). The one place the benches read /proc memory figures.
pub fn status_kib(status_file: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(status_file).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A field of this process's `/proc/self/status` in KiB (`VmRSS:`, `VmHWM:`); `None` off Linux.
pub fn self_kib(field: &str) -> Option<u64> {
    status_kib("/proc/self/status", field)
}

/// `VmHWM` (peak RSS) from a /proc status file, MiB; `None` when unreadable.
fn hwm_mib(status_file: &str) -> Option<f64> {
    status_kib(status_file, "VmHWM:").map(|kib| kib as f64 / 1024.0)
}

/// This process's `VmHWM` (peak RSS), MiB (NaN off Linux).
pub fn self_hwm_mib() -> f64 {
    hwm_mib("/proc/self/status").unwrap_or(f64::NAN)
}

/// Spawns `cmd` with stdout and stderr sent to `<log>.out` / `<log>.err`, waits for it with
/// `wait4` and returns its wall time, peak RSS and stdout.
///
/// # Errors
/// When the child cannot be spawned, or exits unsuccessfully (the error quotes the end of its
/// stderr).
pub fn run_measured(cmd: &mut Command, log: &Path) -> Result<ChildRun> {
    let out_path = log.with_extension("out");
    let err_path = log.with_extension("err");
    let out =
        File::create(&out_path).with_context(|| format!("creating `{}`", out_path.display()))?;
    let err =
        File::create(&err_path).with_context(|| format!("creating `{}`", err_path.display()))?;
    let parent_hwm_mib = self_hwm_mib();
    let start = Instant::now();
    // The child dies with this process: a bench killed by pid (a scheduler, `kill PID`) must
    // not leave a worker burning CPU under the next measurement.
    // SAFETY: the hook runs in the forked child before exec and calls only `prctl` and
    // `getppid`, both async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() == 1 {
                return Err(std::io::Error::other(
                    "the bench process exited before its child started",
                ));
            }
            Ok(())
        });
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .with_context(|| format!("spawning {cmd:?}"))?;
    let pid = child.id() as libc::pid_t;
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let stop = stop.clone();
        let status = format!("/proc/{pid}/status");
        std::thread::spawn(move || {
            let mut last = f64::NAN;
            while !stop.load(Ordering::Relaxed) {
                if let Some(v) = hwm_mib(&status) {
                    last = v;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            last
        })
    };
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value; `wait4` fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own unreaped child (the `Child` handle is never waited on: dropping
    // it does not reap), and both out-pointers are valid for the call.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall_s = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let polled = poller.join().unwrap_or(f64::NAN);
    drop(child);
    if rc != pid {
        bail!("wait4 on {cmd:?} failed: {}", std::io::Error::last_os_error());
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        bail!(
            "{cmd:?} failed (wait status {status}); the end of its stderr ({}):\n{}",
            err_path.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    let stdout = std::fs::read_to_string(&out_path)
        .with_context(|| format!("reading `{}`", out_path.display()))?;
    let maxrss = usage.ru_maxrss as f64 / 1024.0;
    let (peak_rss_mib, rss_source) =
        if maxrss > parent_hwm_mib { (maxrss, "ru_maxrss") } else { (polled, "polled VmHWM") };
    Ok(ChildRun { wall_s, peak_rss_mib, rss_source, stdout })
}

/// Median of a non-empty list (mean of the middle two for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The machine line every bench table carries: `nproc` and the CPU model from /proc/cpuinfo.
pub fn machine() -> String {
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("nproc {nproc}, CPU \"{cpu}\"")
}
