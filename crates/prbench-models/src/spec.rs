//! Model specs as typed on the command line (DESIGN.md, model specs).

use std::path::PathBuf;

use crate::error::ModelError;

/// A parsed `--model` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// `gguf:PATH`: a local causal LM in GGUF, used as a judge.
    Gguf(PathBuf),
    /// `baseline:NAME`: a control baseline (`longer`, `shorter`, `random`, `profile-overlap`, `slot-a`).
    Baseline(String),
    /// `hf:ORG/NAME[@REV]`: a Hugging Face model repo through the hf-hub cache (the text after
    /// `hf:`; a sequence-classification reward model).
    Hf(String),
    /// `dir:PATH`: the same, from a local directory in the Hugging Face layout.
    Dir(PathBuf),
    /// `bt:PATH`: a Bradley-Terry head trained by `prbench train bt` (its output directory).
    Bt(PathBuf),
    /// `pal:PATH`: a PAL-A or PAL-B personalized reward model trained by `prbench train pal`
    /// (its output directory).
    Pal(PathBuf),
    /// `openai:MODEL[@BASE_URL[,BASE_URL…]]`: an OpenAI-compatible chat endpoint used as a
    /// judge; several base URLs are replicas of the same model. Without a URL,
    /// [`OPENAI_DEFAULT_BASE_URL`].
    OpenAi {
        /// Model name sent in each request.
        model: String,
        /// Base URLs (ending in `/v1` or wherever `/chat/completions` hangs), one per replica.
        base_urls: Vec<String>,
    },
    /// `vllm-classify:MODEL@BASE_URL[,BASE_URL…]`: a sequence-classification reward model served
    /// by vLLM (its classify/pooling API).
    VllmClassify {
        /// Model name sent in each request.
        model: String,
        /// Server base URLs (without `/v1`), one per replica.
        base_urls: Vec<String>,
    },
    /// `reward-server:URL[,URL…]`: a reward model behind the HTTP reward protocol
    /// (PROTOCOL.md §7: `POST URL/score`).
    RewardServer(Vec<String>),
    /// `sglang-classify:MODEL@URL…`, `tei:MODEL@URL…` or `openrlhf:MODEL@URL…`: a reward model
    /// behind an engine that takes pre-rendered text; prbench renders each conversation with
    /// MODEL's chat template (the hub repo or, with `--chat-template`, another source).
    Templated {
        /// Which engine serves it.
        engine: TextEngine,
        /// The served model (a Hugging Face repo name, where its chat template comes from).
        model: String,
        /// Server base URLs, one per replica.
        base_urls: Vec<String>,
    },
}

/// Engines that score text with the chat template already applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextEngine {
    /// SGLang's native `/classify` (spec kind `sglang-classify`).
    Sglang,
    /// text-embeddings-inference's `/predict` (spec kind `tei`).
    Tei,
    /// OpenRLHF's `serve_rm.py` `/get_reward` (spec kind `openrlhf`).
    OpenRlhf,
}

impl TextEngine {
    /// The spec kind (text before the first `:`).
    pub fn kind(self) -> &'static str {
        match self {
            TextEngine::Sglang => "sglang-classify",
            TextEngine::Tei => "tei",
            TextEngine::OpenRlhf => "openrlhf",
        }
    }

    fn from_kind(kind: &str) -> Option<Self> {
        [TextEngine::Sglang, TextEngine::Tei, TextEngine::OpenRlhf].into_iter().find(|e| e.kind() == kind)
    }
}

/// Base URL for `openai:MODEL` without `@URL`.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Splits `MODEL@URL,URL` at the last `@` (so model names holding `@` survive when a URL
/// follows); `None` for the URLs when there is no `@`. The URLs are checked by [`check_urls`]:
/// text after the `@` that is not an `http://` or `https://` URL is an error, never part of the
/// model name (a typo must not send requests, with the API key, to the default host).
fn split_model_urls(rest: &str) -> (String, Option<Vec<String>>) {
    match rest.rfind('@') {
        Some(i) => (rest[..i].to_string(), Some(parse_urls(&rest[i + 1..]))),
        None => (rest.to_string(), None),
    }
}

fn parse_urls(list: &str) -> Vec<String> {
    list.split(',').map(|u| u.trim().trim_end_matches('/').to_string()).filter(|u| !u.is_empty()).collect()
}

fn check_urls(spec: &str, urls: &[String]) -> Result<(), ModelError> {
    match urls.iter().find(|u| !(u.starts_with("http://") || u.starts_with("https://"))) {
        Some(bad) => Err(ModelError::Spec {
            spec: spec.into(),
            reason: format!("`{bad}` is not an http:// or https:// URL (the text after the last `@` names the server, e.g. `http://127.0.0.1:8080/v1`)"),
        }),
        None => check_distinct(spec, urls),
    }
}

/// Refuses a URL given twice: replicas are distinct servers, and a repeated one would also change
/// the run's cache identity (the URL list is part of it) without changing what is scored. URLs
/// are compared as parsed (trailing `/` dropped), with the scheme and host in any case.
fn check_distinct(spec: &str, urls: &[String]) -> Result<(), ModelError> {
    let key = |u: &str| match u.find("://") {
        Some(i) => {
            let end = u[i + 3..].find('/').map_or(u.len(), |j| i + 3 + j);
            format!("{}{}", u[..end].to_ascii_lowercase(), &u[end..])
        }
        None => u.to_string(),
    };
    for (i, u) in urls.iter().enumerate() {
        if let Some(first) = urls[..i].iter().find(|v| key(v) == key(u)) {
            return Err(ModelError::Spec {
                spec: spec.into(),
                reason: format!(
                    "the server URL `{first}` is given twice (URLs {} and {}); replica URLs must be distinct servers: list each once",
                    urls[..i].iter().position(|v| key(v) == key(u)).unwrap_or(0) + 1,
                    i + 1
                ),
            });
        }
    }
    Ok(())
}

impl ModelSpec {
    /// True for specs whose backend is a pairwise judge (`gguf:`, `openai:` and
    /// `baseline:slot-a`).
    pub fn is_judge(&self) -> bool {
        matches!(self, ModelSpec::Gguf(_) | ModelSpec::OpenAi { .. }) || *self == ModelSpec::Baseline("slot-a".into())
    }

    /// True for engines reached over HTTP (`openai:`, `vllm-classify:`, `reward-server:`,
    /// `sglang-classify:`, `tei:`, `openrlhf:`).
    pub fn is_remote(&self) -> bool {
        matches!(self, ModelSpec::OpenAi { .. } | ModelSpec::VllmClassify { .. } | ModelSpec::RewardServer(_) | ModelSpec::Templated { .. })
    }
}

impl ModelSpec {
    /// Parses a spec.
    ///
    /// # Errors
    /// [`ModelError::Spec`] naming the spec and the forms this version accepts; the forms
    /// every form this version accepts.
    pub fn parse(spec: &str) -> Result<Self, ModelError> {
        let (kind, rest) = spec.split_once(':').ok_or_else(|| ModelError::Spec {
            spec: spec.into(),
            reason: "expected KIND:VALUE, e.g. `gguf:PATH` or `baseline:longer`".into(),
        })?;
        match kind {
            "gguf" if !rest.is_empty() => Ok(Self::Gguf(PathBuf::from(rest))),
            "baseline" if !rest.is_empty() => Ok(Self::Baseline(rest.to_string())),
            "hf" if !rest.is_empty() => Ok(Self::Hf(rest.to_string())),
            "dir" if !rest.is_empty() => Ok(Self::Dir(PathBuf::from(rest))),
            "bt" if !rest.is_empty() => Ok(Self::Bt(PathBuf::from(rest))),
            "pal" if !rest.is_empty() => Ok(Self::Pal(PathBuf::from(rest))),
            "openai" if !rest.is_empty() => {
                let (model, base_urls) = split_model_urls(rest);
                if model.is_empty() {
                    return Err(ModelError::Spec { spec: spec.into(), reason: "expected `openai:MODEL[@BASE_URL[,BASE_URL…]]`; the model name is empty".into() });
                }
                let base_urls = match base_urls {
                    None => vec![OPENAI_DEFAULT_BASE_URL.to_string()],
                    Some(urls) if urls.is_empty() => {
                        return Err(ModelError::Spec { spec: spec.into(), reason: "nothing follows `@`; give a base URL such as `http://127.0.0.1:8080/v1`, or drop the `@` for the default host".into() })
                    }
                    Some(urls) => urls,
                };
                check_urls(spec, &base_urls)?;
                Ok(Self::OpenAi { model, base_urls })
            }
            "vllm-classify" if !rest.is_empty() => {
                let (model, base_urls) = split_model_urls(rest);
                let base_urls = base_urls.unwrap_or_default();
                if model.is_empty() || base_urls.is_empty() {
                    return Err(ModelError::Spec { spec: spec.into(), reason: "expected `vllm-classify:MODEL@BASE_URL[,BASE_URL…]`, e.g. `vllm-classify:Skywork/Skywork-Reward-V2-Llama-3.1-8B@http://127.0.0.1:8000`".into() });
                }
                check_urls(spec, &base_urls)?;
                Ok(Self::VllmClassify { model, base_urls })
            }
            k if TextEngine::from_kind(k).is_some() && !rest.is_empty() => {
                let engine = TextEngine::from_kind(k).expect("checked");
                let (model, base_urls) = split_model_urls(rest);
                let base_urls = base_urls.unwrap_or_default();
                if model.is_empty() || base_urls.is_empty() {
                    return Err(ModelError::Spec {
                        spec: spec.into(),
                        reason: format!("expected `{k}:MODEL@BASE_URL[,BASE_URL…]`, MODEL naming the served Hugging Face repo (its chat template renders the conversation), e.g. `{k}:Skywork/Skywork-Reward-V2-Llama-3.1-8B@http://127.0.0.1:8000`"),
                    });
                }
                check_urls(spec, &base_urls)?;
                Ok(Self::Templated { engine, model, base_urls })
            }
            "reward-server" if !rest.is_empty() => {
                let urls = parse_urls(rest);
                check_urls(spec, &urls)?;
                Ok(Self::RewardServer(urls))
            }
            _ => Err(ModelError::Spec {
                spec: spec.into(),
                reason: "known kinds: `gguf:PATH` (judge), `openai:MODEL[@BASE_URL]` (remote judge), `hf:ORG/NAME[@REV]` and `dir:PATH` (sequence-classification reward model), `vllm-classify:MODEL@BASE_URL`, `sglang-classify:MODEL@BASE_URL`, `tei:MODEL@BASE_URL`, `openrlhf:MODEL@BASE_URL` and `reward-server:URL` (remote reward models), `bt:PATH` (Bradley-Terry head from `prbench train bt`), `pal:PATH` (PAL model from `prbench train pal`), `baseline:NAME` (longer, shorter, random, profile-overlap, slot-a)".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_kinds_and_names_unknown_ones() {
        assert_eq!(ModelSpec::parse("gguf:/m/x.gguf").unwrap(), ModelSpec::Gguf("/m/x.gguf".into()));
        assert_eq!(ModelSpec::parse("baseline:longer").unwrap(), ModelSpec::Baseline("longer".into()));
        assert_eq!(ModelSpec::parse("hf:org/name@v1").unwrap(), ModelSpec::Hf("org/name@v1".into()));
        assert_eq!(ModelSpec::parse("dir:/m/rm").unwrap(), ModelSpec::Dir("/m/rm".into()));
        assert_eq!(ModelSpec::parse("bt:runs/bt").unwrap(), ModelSpec::Bt("runs/bt".into()));
        assert_eq!(ModelSpec::parse("pal:runs/pal").unwrap(), ModelSpec::Pal("runs/pal".into()));
        assert!(ModelSpec::parse("pal:").is_err());
        assert_eq!(
            ModelSpec::parse("openai:gpt-4o").unwrap(),
            ModelSpec::OpenAi { model: "gpt-4o".into(), base_urls: vec![OPENAI_DEFAULT_BASE_URL.into()] }
        );
        assert_eq!(
            ModelSpec::parse("openai:me@org/m@http://127.0.0.1:8080/v1/,http://127.0.0.1:8081/v1").unwrap(),
            ModelSpec::OpenAi {
                model: "me@org/m".into(),
                base_urls: vec!["http://127.0.0.1:8080/v1".into(), "http://127.0.0.1:8081/v1".into()]
            }
        );
        assert_eq!(
            ModelSpec::parse("vllm-classify:org/rm@http://h:8000").unwrap(),
            ModelSpec::VllmClassify { model: "org/rm".into(), base_urls: vec!["http://h:8000".into()] }
        );
        assert!(ModelSpec::parse("vllm-classify:org/rm").is_err());
        for (kind, engine) in [("sglang-classify", TextEngine::Sglang), ("tei", TextEngine::Tei), ("openrlhf", TextEngine::OpenRlhf)] {
            let spec = ModelSpec::parse(&format!("{kind}:org/rm@http://h:1/,http://h:2")).unwrap();
            assert_eq!(spec, ModelSpec::Templated { engine, model: "org/rm".into(), base_urls: vec!["http://h:1".into(), "http://h:2".into()] });
            assert!(spec.is_remote() && !spec.is_judge());
            assert!(ModelSpec::parse(&format!("{kind}:org/rm")).unwrap_err().to_string().contains("MODEL@BASE_URL"));
            assert!(ModelSpec::parse(&format!("{kind}:org/rm@h:1")).is_err());
        }
        assert!(ModelSpec::parse("openai:@http://h/v1").is_err());
        // A URL without its scheme is refused, never read as part of the model name.
        for bad in ["openai:m@127.0.0.1:8080/v1", "openai:m@ftp://h", "openai:m@", "openai:m@http://a,b:9"] {
            assert!(ModelSpec::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(ModelSpec::parse("reward-server:http://h:9/").unwrap(), ModelSpec::RewardServer(vec!["http://h:9".into()]));
        assert!(ModelSpec::parse("reward-server:h:9").unwrap_err().to_string().contains("not an http"));
        assert!(ModelSpec::parse("hf:").is_err());
        // A replica URL given twice (as parsed: trailing `/`, scheme and host case) is refused.
        for spec in [
            "openai:m@http://127.0.0.1:18001/v1,http://127.0.0.1:18001/v1",
            "vllm-classify:m@http://127.0.0.1:18001,http://127.0.0.1:18001",
            "sglang-classify:m@http://127.0.0.1:18001,http://127.0.0.1:18001/",
            "tei:m@http://localhost:18001,http://127.0.0.1:18002,http://LOCALHOST:18001",
            "openrlhf:m@http://127.0.0.1:18001, http://127.0.0.1:18001",
            "reward-server:http://127.0.0.1:18001,http://127.0.0.1:18001",
        ] {
            let err = ModelSpec::parse(spec).unwrap_err().to_string();
            assert!(err.contains(":18001") && err.contains("is given twice") && err.contains("list each once"), "{spec}: {err}");
        }
        assert!(ModelSpec::parse("tei:m@http://127.0.0.1:18001,http://127.0.0.1:18001/other").is_ok());
        assert!(ModelSpec::parse("nonsense").is_err());
        assert!(ModelSpec::parse("gguf:").is_err());
    }
}
