//! A `prbench serve-reward` process on a free loopback port, for the RL example tests
//! (`trl_grpo.rs`, `verl_reward_fn.rs`): they include this file with `#[path]`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

/// A running `prbench serve-reward`; killed when dropped.
pub struct Served {
    child: Child,
    /// `127.0.0.1:PORT`, read from the start line.
    pub addr: String,
    stderr: Receiver<String>,
}

impl Served {
    /// Starts `prbench serve-reward ARGS --port 0 --quiet` and reads its address from stderr.
    pub fn start(args: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_prbench"))
            .arg("serve-reward")
            .args(args)
            .args(["--port", "0", "--quiet"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary starts");
        let (tx, rx) = channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // From here the process is owned by `served`, whose Drop kills and reaps it.
        let mut served = Served { child, addr: String::new(), stderr: rx };
        let mut seen = Vec::new();
        for _ in 0..5 {
            let Ok(line) = served.stderr.recv_timeout(Duration::from_secs(30)) else { break };
            if let Some(at) = line.find("http://") {
                served.addr = line[at + 7..]
                    .split(|c: char| c.is_whitespace() || c == ';')
                    .next()
                    .unwrap()
                    .to_string();
                return served;
            }
            seen.push(line);
        }
        panic!("no address on stderr: {seen:?}")
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `GET /health` as JSON.
    pub fn health(&self) -> serde_json::Value {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(s, "GET /health HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n", self.addr)
            .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {reply}"))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
