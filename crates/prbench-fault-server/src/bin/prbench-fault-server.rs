//! `prbench-fault-server [--port N] [--mode fast|slow-ms=N] [--verdict hash|a|b|garbage]`
//!
//! Serves on 127.0.0.1 until killed, without a request log and without scripted faults. Prints
//! one line `listening http://127.0.0.1:PORT` on stdout once the socket is listening (useful with
//! `--port 0`), then nothing else.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use prbench_fault_server::{FaultServer, Letter, ServerConfig, VerdictRule};

const USAGE: &str =
    "usage: prbench-fault-server [--port N] [--mode fast|slow-ms=N] [--verdict hash|a|b|garbage]";

fn parse(args: &[String]) -> Result<(u16, ServerConfig), String> {
    let mut port = 0u16;
    let mut cfg = ServerConfig::default().with_record(false);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag {
            "--port" => {
                let v = value()?;
                port = v.parse().map_err(|_| format!("bad --port {v:?}"))?;
            }
            "--mode" => {
                let v = value()?;
                cfg.delay = match v.as_str() {
                    "fast" => None,
                    other => match other.strip_prefix("slow-ms=") {
                        Some(ms) => Some(Duration::from_millis(
                            ms.parse().map_err(|_| format!("bad --mode {v:?}"))?,
                        )),
                        None => return Err(format!("bad --mode {v:?}\n{USAGE}")),
                    },
                };
            }
            "--verdict" => {
                let v = value()?;
                cfg.verdict = match v.to_ascii_lowercase().as_str() {
                    "hash" => VerdictRule::Hash,
                    "a" => VerdictRule::Always(Letter::A),
                    "b" => VerdictRule::Always(Letter::B),
                    "garbage" => VerdictRule::Garbage,
                    _ => return Err(format!("bad --verdict {v:?}\n{USAGE}")),
                };
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok((port, cfg))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (port, cfg) = match parse(&args) {
        Ok(p) => p,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let server = match FaultServer::start_on(SocketAddr::from((Ipv4Addr::LOCALHOST, port)), cfg) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("prbench-fault-server: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "listening {}", server.base_url());
    let _ = out.flush();
    drop(out);
    server.wait();
    ExitCode::SUCCESS
}
