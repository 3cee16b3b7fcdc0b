//! The llama.cpp side of `bench generate`: llama.cpp's own HTTP server (the pinned `xllamacpp`
//! wheel, started by `scripts/llama-server.sh`) with `--parallel` slots, every request sent at
//! once and streamed, so the time to each request's first token is seen.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use prbench_models::ChatRequest;

use super::SideOutput;
use crate::child::status_kib;

/// The server started by the script, stopped (with its process group) when dropped.
struct Server<'a> {
    script: &'a Path,
    url: String,
    pid: u32,
}

impl Drop for Server<'_> {
    fn drop(&mut self) {
        let _ =
            Command::new("bash").arg(self.script).arg("stop").arg(self.pid.to_string()).status();
    }
}

fn start<'a>(
    script: &'a Path,
    model: &Path,
    parallel: usize,
    n_ctx: usize,
    threads: usize,
) -> Result<Server<'a>> {
    let out = Command::new("bash")
        .arg(script)
        .arg("start")
        .env("PRBENCH_LLAMA_SERVER_MODEL", model)
        .env("PRBENCH_LLAMA_SERVER_PARALLEL", parallel.to_string())
        .env("PRBENCH_LLAMA_SERVER_CTX", n_ctx.to_string())
        .env("PRBENCH_LLAMA_SERVER_THREADS", threads.to_string())
        .output()
        .with_context(|| format!("running `bash {} start`", script.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = |key: &str| {
        stdout.lines().find_map(|l| l.strip_prefix(&format!("export {key}=")).map(str::to_string))
    };
    if !out.status.success() {
        bail!(
            "`bash {} start` failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let (Some(url), Some(pid)) =
        (value("PRBENCH_LLAMA_SERVER_URL"), value("PRBENCH_LLAMA_SERVER_PID"))
    else {
        bail!("`bash {} start` printed no URL and PID export lines: {stdout}", script.display());
    };
    let pid = pid.parse().with_context(|| format!("the server pid `{pid}`"))?;
    Ok(Server { script, url, pid })
}

/// One streamed reply.
#[derive(Default)]
struct Streamed {
    text: String,
    first_token_s: Option<f64>,
    completion_tokens: Option<usize>,
    prompt_tokens: Option<usize>,
    chunks: usize,
}

fn body(req: &ChatRequest, stream: bool) -> serde_json::Value {
    let messages: Vec<serde_json::Value> = req
        .prompt
        .messages
        .iter()
        .map(|m| serde_json::json!({ "role": m.role.as_str(), "content": m.content }))
        .collect();
    serde_json::json!({
        "model": "smollm2",
        "messages": messages,
        "max_tokens": req.max_new_tokens,
        "temperature": req.temperature,
        "top_p": req.top_p,
        // llama.cpp reads a 32-bit seed; folded as prbench's `openai:` client folds it.
        "seed": req.seed & 0x7fff_ffff,
        "stream": stream,
        "stream_options": { "include_usage": true },
    })
}

/// Reads one server-sent event's JSON into `s`.
fn read_event(data: &str, s: &mut Streamed, start: Instant) -> Result<()> {
    let v: serde_json::Value = serde_json::from_str(data)
        .with_context(|| format!("a stream event that is not JSON: {data}"))?;
    if let Some(content) = v["choices"][0]["delta"]["content"].as_str() {
        if !content.is_empty() {
            s.first_token_s.get_or_insert_with(|| start.elapsed().as_secs_f64());
            s.text.push_str(content);
            s.chunks += 1;
        }
    }
    if let Some(n) = v["usage"]["completion_tokens"].as_u64() {
        s.completion_tokens = Some(n as usize);
    } else if let Some(n) = v["timings"]["predicted_n"].as_u64() {
        s.completion_tokens = Some(n as usize);
    }
    if let Some(n) = v["usage"]["prompt_tokens"].as_u64() {
        s.prompt_tokens = Some(n as usize);
    }
    Ok(())
}

async fn send(
    client: &reqwest::Client,
    url: &str,
    req: &ChatRequest,
    start: Instant,
) -> Result<Streamed> {
    let mut resp = client
        .post(format!("{url}/chat/completions"))
        .json(&body(req, true))
        .send()
        .await?
        .error_for_status()?;
    let mut s = Streamed::default();
    let mut pending = String::new();
    while let Some(chunk) = resp.chunk().await? {
        pending.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = pending.find('\n') {
            let line: String = pending.drain(..=end).collect();
            let line = line.trim();
            if let Some(data) = line.strip_prefix("data:") {
                let data = data.trim();
                if data != "[DONE]" {
                    read_event(data, &mut s, start)?;
                }
            }
        }
    }
    Ok(s)
}

/// Starts the server with `parallel` slots of `slot_ctx` tokens each, warms it up, sends every
/// request at once and measures until the last reply (see the parent module).
///
/// # Errors
/// The server does not start, or the warm-up request fails. A request that fails later is
/// counted in `failed` and printed.
pub(super) fn measure(
    script: &Path,
    model: &Path,
    parallel: usize,
    slot_ctx: usize,
    threads: usize,
    requests: &[ChatRequest],
) -> Result<SideOutput> {
    let server = start(script, model, parallel, parallel * slot_ctx, threads)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // A connection per request: a pooled one left idle by the warm-up can be closed by the
    // server just as a timed request reuses it ("connection closed before message completed").
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build()?;
    rt.block_on(async {
        if let Some(first) = requests.first() {
            let warm = ChatRequest { max_new_tokens: 4, ..first.clone() };
            send(&client, &server.url, &warm, Instant::now())
                .await
                .context("the warm-up request")?;
        }
        let start = Instant::now();
        let replies = futures::future::join_all(
            requests.iter().map(|r| send(&client, &server.url, r, start)),
        )
        .await;
        let wall_s = start.elapsed().as_secs_f64();
        let vm_hwm_mib = status_kib(&format!("/proc/{}/status", server.pid), "VmHWM:")
            .map_or(f64::NAN, |k| k as f64 / 1024.0);
        let mut out = SideOutput {
            prompt_tokens: 0,
            gen_tokens: 0,
            wall_s,
            ttft_s: Vec::new(),
            texts: Vec::new(),
            failed: 0,
            vm_hwm_mib,
            reused_prompt_tokens: None,
        };
        for reply in replies {
            match reply {
                Ok(s) => {
                    out.gen_tokens += s.completion_tokens.unwrap_or(s.chunks);
                    out.prompt_tokens += s.prompt_tokens.unwrap_or(0);
                    out.ttft_s.extend(s.first_token_s);
                    out.texts.push(s.text);
                }
                Err(e) => {
                    eprintln!("bench generate: a llama.cpp server request failed: {e:#}");
                    out.failed += 1;
                    out.texts.push(String::new());
                }
            }
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_events_give_text_first_token_and_usage() {
        let start = Instant::now();
        let mut s = Streamed::default();
        read_event(r#"{"choices":[{"delta":{"role":"assistant"}}]}"#, &mut s, start).unwrap();
        assert!(s.first_token_s.is_none());
        read_event(r#"{"choices":[{"delta":{"content":"Hel"}}]}"#, &mut s, start).unwrap();
        read_event(r#"{"choices":[{"delta":{"content":"lo"}}]}"#, &mut s, start).unwrap();
        read_event(
            r#"{"choices":[],"usage":{"completion_tokens":3,"prompt_tokens":11}}"#,
            &mut s,
            start,
        )
        .unwrap();
        assert_eq!(s.text, "Hello");
        assert!(s.first_token_s.is_some());
        assert_eq!((s.completion_tokens, s.prompt_tokens, s.chunks), (Some(3), Some(11), 2));
        assert!(read_event("not json", &mut s, start).is_err());
    }
}
