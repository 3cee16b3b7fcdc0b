#!/usr/bin/env python3
"""Writes the sequence-classification parity fixtures of crates/prbench-rm/tests (run by hand,
output committed).

    pip install torch transformers          # tokenizers and safetensors come with transformers
    python3 tools/make_seqcls_fixtures.py

Made with torch 2.15.0 (CPU), transformers 5.24.0, tokenizers 0.23.3, Python 3.11; the versions
used are recorded in expected.json. The script is deterministic (fixed torch seeds, one thread,
deterministic algorithms): rerunning it with the same versions rewrites byte-identical files.
Other versions may train a different tokenizer or change the last bits of the scores.

What it makes, under crates/prbench-rm/tests/fixtures/seqcls/ (the directory is wiped first):

- Byte-level BPE tokenizers (vocab 512 including 6 special tokens <|endoftext|> <|im_start|>
  <|im_end|> <s> </s> <pad>, ids 0-5) trained here with `tokenizers` on the questions, answers and
  profile posts of data/sample/*.jsonl, each with the normalizer and pre-tokenizer of the family's
  real hub tokenizer.json, and wrapped per model in a tokenizer.json + tokenizer_config.json with its
  own bos/eos/pad tokens, post-processor, chat template and the tokenizer_class the family declares:
    qwen2, qwen3   NFC + Sequence[Split(Qwen regex, Isolated), ByteLevel(add_prefix_space=false,
                   use_regex=false)] (digits one by one), BPE with "" prefix/suffix, tokenizer_class
                   Qwen2Tokenizer. AutoTokenizer REBUILDS this class's backend from vocab + merges
                   with its own normalizer and pre-tokenizer (transformers 5 forces it for qwen2 even
                   if the config names another class), so the file carries exactly what it builds:
                   the regex is asserted equal to transformers' PRETOKENIZE_REGEX.
    llama          Llama-3 style: Sequence[Split(Llama-3 regex, digits in runs of <= 3), ByteLevel(
                   use_regex=false)], ignore_merges, post-processor Sequence[ByteLevel, add <s>],
                   tokenizer_class PreTrainedTokenizerFast (loaded as TokenizersBackend: as is).
    mistral,       plain ByteLevel (GPT-2 regex), tokenizer_class TokenizersBackend (loaded as is).
    gemma2         NOT what their hub repos hold: those are SentencePiece-style (Metaspace,
                   byte fallback) with tokenizer_class LlamaTokenizer/GemmaTokenizer, classes that
                   rebuild a Metaspace backend on load, which a ByteLevel vocab cannot feed.
  For every model and conversation, the ids of AutoTokenizer.from_pretrained(dir) (what the
  references are computed with) are checked equal to tokenizers.Tokenizer.from_file(tokenizer.json)
  .encode(text, add_special_tokens=False) (what the Rust side does); the script stops otherwise.
- Tiny random *ForSequenceClassification models in Hugging Face layout:

    llama-{f32,bf16}    pad_token_id null; the tokenizer's post-processor ADDS <s>, so a naive encode
                        of the rendered chat gives two BOS (apply_chat_template does not add it
                        again); llama3 rope scaling, rope_theta 500000; template in
                        tokenizer_config.json. config.json is rewritten with the legacy `rope_theta`
                        + `rope_scaling` keys (what hub checkpoints made before transformers 5 carry)
                        instead of transformers 5's `rope_parameters`; transformers reads both alike.
    qwen2-{f32,bf16,f16} ChatML, pad <|endoftext|>, eos <|im_end|>, no bos, q/k/v biases;
                        template in chat_template.jinja.
    qwen2-sharded       the f32 qwen2 weights in 3 safetensors shards + model.safetensors.index.json.
    qwen2-2labels       qwen2 with num_labels=2 (config.json then has NO id2label: 2 is the
                        transformers default). Row 0 of its score head is qwen2's, so logits[0]
                        equals qwen2-f32's logit.
    qwen3-{f32,bf16}    ChatML whose messages are joined by "\n" with no newline after the last one,
                        so every rendered conversation ends with <|im_end|> = eos = pad: transformers
                        pools at the rightmost token != pad_token_id, i.e. the token BEFORE the
                        trailing <|im_end|>. q/k RMSNorm, head_dim 16 != 32/4.
    mistral-{f32,bf16}  [INST] template in tokenizer_config.json, bos <s>, eos </s>, pad <pad>,
                        sliding_window 8 (shorter than every conversation).
    gemma2-{f32,bf16}   Gemma template (<start_of_turn> as plain text) that emits <s> (the
                        post-processor adds one too on naive encodes), pad <pad>, template in
                        chat_template.jinja; layer_types [sliding, full] with sliding_window 8,
                        attn_logit_softcapping 50, final_logit_softcapping 30 (NOT applied by
                        Gemma2ForSequenceClassification), query_pre_attn_scalar 24 != head_dim 8,
                        gelu_pytorch_tanh.
    unsupported         config.json of a GPT2ForSequenceClassification only (no weights).

  All: hidden 32, 2 layers, 4 heads, 2 KV heads, intermediate 64, max_position_embeddings 512,
  tie_word_embeddings false, eps 1e-6. Weights are re-drawn after init: N(0, 0.2), RMSNorm weights
  1 + N(0, 0.1) (Gemma's (1 + w) norms: N(0, 0.1)), score head N(0, 0.15) so that logits are O(1)
  (|logit| < 4) and input-dependent; Gemma's embeddings N(0, 0.2 / sqrt(32)) (it multiplies them
  by sqrt(32)) and q/k projections N(0, 0.5) (attention scores large enough for the softcap at 50
  to matter). The bf16/f16 directories hold the f32 weights rounded to that dtype.

- expected.json:
    {generator, torch_version, transformers_version, tokenizers_version,
     conversations: [{name, messages: [{role, content}, ...]}],
     models: [{dir, architecture, weights_dtype, compute_dtype, tolerance, num_labels,
               pad_token_id, bos_token_id, eos_token_id,   # as in config.json
               batch_pad_token_id,       # the id the batches were padded with (<pad> if pad is null)
               single: [{conversation, text, input_ids, pooled_index, logits: [num_labels]}],
               batches: [{padding_side, conversations: [i, j, k], input_ids, attention_mask,
                          pooled_index: [..], logits: [[num_labels] x 3]}],
               sdpa_check: {max_abs_diff} | {error},                  # f32 models only
               upcast_f32: {tolerance, single_logits, batches_logits}, # bf16/f16 models only
               notes: [..]}]}                                         # when there is something to say
  `text` is apply_chat_template(messages, tokenize=False), `input_ids` apply_chat_template(...,
  tokenize=True), both of AutoTokenizer.from_pretrained(dir) (checked equal to encoding `text`
  without special tokens, by it and by the `tokenizers` library on tokenizer.json). `logits` are those of
  transformers (eager attention, eval mode, no_grad, models reloaded from the directories written)
  computed in the weights' dtype (compute_dtype). `pooled_index` is the position transformers reads
  the score at. `upcast_f32` holds the same bf16/f16 weights loaded as float32 and computed in f32.
  tolerance: 1e-4 for f32 compute; for bf16/f16 compute max(2e-2, twice the largest |half - upcast
  f32| of transformers itself on these conversations, rounded up to 0.01), since bf16 rounding of a
  random model is not below 2e-2 (see the notes of each entry).

The script also checks, and fails otherwise: batched logits == single logits within tolerance,
sdpa == eager within 1e-5 for f32 (Gemma2 refuses sdpa), the pooled position, and that llama3 rope
scaling, the sliding windows, the attention softcap and query_pre_attn_scalar each change the scores
while final_logit_softcapping does not.
"""

import copy
import glob
import json
import math
import os
import shutil
import sys

import tokenizers
import torch
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    Gemma2Config,
    Gemma2ForSequenceClassification,
    GPT2Config,
    LlamaConfig,
    LlamaForSequenceClassification,
    MistralConfig,
    MistralForSequenceClassification,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForSequenceClassification,
    Qwen3Config,
    Qwen3ForSequenceClassification,
)

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(REPO, "crates", "prbench-rm", "tests", "fixtures", "seqcls")
GENERATOR = "tools/make_seqcls_fixtures.py"

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<s>", "</s>", "<pad>"]
VOCAB_SIZE = 512
TOL_F32 = 1e-4
TOL_HALF = 2e-2
SDPA_TOL = 1e-5
WEIGHT_STD = 0.2  # every weight and bias except norms and the score head
NORM_STD = 0.1  # RMSNorm weights: 1 + N(0, NORM_STD) (Gemma: N(0, NORM_STD), used as 1 + w)
GEMMA_QK_GAIN = 2.5  # Gemma q_proj/k_proj: WEIGHT_STD * GEMMA_QK_GAIN
SCORE_STD = 0.15  # score head: logits O(1) (|logit| < 4, so bf16 rounds them by < 0.008)

# ----------------------------------------------------------------------------------------------
# Conversations (contents must not contain special-token strings: see check_conversations)
# ----------------------------------------------------------------------------------------------

CONVERSATIONS = [
    {
        "name": "tiny",
        "messages": [
            {"role": "user", "content": "Hi!"},
            {"role": "assistant", "content": "Hello."},
        ],
    },
    {
        "name": "about-me",
        "messages": [
            {"role": "user", "content": "### About me\nI bake at altitude.\n\n### My question\nWhy does my loaf sink?"},
            {"role": "assistant", "content": "Proof it less and bake hotter."},
        ],
    },
    {
        "name": "latin",
        "messages": [
            {"role": "user", "content": "Is Latin worth learning before Italian?"},
            {"role": "assistant", "content": "Not really; start with Italian."},
        ],
    },
    {
        "name": "capital",
        "messages": [
            {"role": "user", "content": "Capital of France in 2024?"},
            {"role": "assistant", "content": "Paris, 2.1 million people (75001-75020)."},
        ],
    },
    {
        "name": "hamburg",
        "messages": [
            {"role": "user", "content": "How do I plan quiet days in Hamburg?"},
            {"role": "assistant", "content": "Stay near the Alster and see the Kunsthalle early on a weekday."},
        ],
    },
    {
        "name": "unicode",
        "messages": [
            {"role": "user", "content": "Is a café au lait naïve?"},
            {"role": "assistant", "content": "No — it is coffee with milk (3 €)."},
        ],
    },
    {
        # Long enough (150-300 tokens) that attention runs in several query blocks and the
        # sliding windows (8) cut deep into the sequence, also inside padded batches.
        "name": "long-profile",
        "messages": [
            {
                "role": "user",
                "content": (
                    "### About me\n"
                    "I shoot indoor basketball with an old crop-sensor camera and a 50mm f/1.8 lens. "
                    "I edit in darktable, I never buy new gear, and I sit at the baseline. "
                    "Last season most of my photos were blurred by motion; the gym looked bright.\n\n"
                    "### My question\nHow do I stop my game photos from coming out blurry?"
                ),
            },
            {
                "role": "assistant",
                "content": (
                    "Shoot wide open at 1/500s in manual mode and let the ISO rise to 3200. "
                    "Expose a stop dark in RAW, then lift it and denoise gently in darktable. "
                    "Frame from the baseline and pre-focus on the spot under the hoop."
                ),
            },
        ],
    },
]

# (padding side, conversation indices); every batch mixes three different lengths
BATCHES = [
    ("left", [0, 1, 2]),
    ("left", [3, 4, 5]),
    ("left", [6, 0, 1]),
    ("right", [4, 0, 2]),
    ("right", [1, 5, 3]),
    ("right", [2, 6, 3]),
]

# ----------------------------------------------------------------------------------------------
# Chat templates
# ----------------------------------------------------------------------------------------------

LLAMA_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '<|im_end|>\\n\\n' + (message['content'] | trim) + '<|endoftext|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_end|>\\n\\n' }}{% endif %}"
)

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# ChatML, but no newline after the last message: the text ends with <|im_end|> (= eos = pad).
QWEN3_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' }}"
    "{% if not loop.last %}{{ '\\n' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '\\n<|im_start|>assistant\\n' }}{% endif %}"
)

MISTRAL_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'] + eos_token }}"
    "{% endif %}"
    "{% endfor %}"
)

GEMMA_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\\n' + (message['content'] | trim) + '<end_of_turn>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)

# ----------------------------------------------------------------------------------------------
# Model specs
# ----------------------------------------------------------------------------------------------

COMMON = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=64,
    max_position_embeddings=512,
    tie_word_embeddings=False,
    num_labels=1,
)

# seed: torch seed of the model weights. post: tokenizer post-processor kind.
# template_in: "tokenizer_config" (key chat_template) or "jinja" (chat_template.jinja).
SPECS = {
    "llama": dict(
        seed=1001,
        config_cls=LlamaConfig,
        model_cls=LlamaForSequenceClassification,
        bos="<s>",
        eos="</s>",
        pad=None,
        pretok="llama3",
        tokenizer_class="PreTrainedTokenizerFast",
        post="add_bos",
        template=LLAMA_TEMPLATE,
        template_in="tokenizer_config",
        config=dict(
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 16,
            },
            rope_theta=500000.0,
        ),
        legacy_rope_keys=True,
    ),
    "qwen2": dict(
        seed=1002,
        config_cls=Qwen2Config,
        model_cls=Qwen2ForSequenceClassification,
        bos=None,
        eos="<|im_end|>",
        pad="<|endoftext|>",
        pretok="qwen",
        tokenizer_class="Qwen2Tokenizer",
        post="byte_level",
        template=CHATML_TEMPLATE,
        template_in="jinja",
        config=dict(),
    ),
    "qwen3": dict(
        seed=1003,
        config_cls=Qwen3Config,
        model_cls=Qwen3ForSequenceClassification,
        bos=None,
        eos="<|im_end|>",
        pad="<|im_end|>",
        pretok="qwen",
        tokenizer_class="Qwen2Tokenizer",
        post="byte_level",
        template=QWEN3_TEMPLATE,
        template_in="jinja",
        config=dict(head_dim=16),
    ),
    "mistral": dict(
        seed=1004,
        config_cls=MistralConfig,
        model_cls=MistralForSequenceClassification,
        bos="<s>",
        eos="</s>",
        pad="<pad>",
        pretok="gpt2",
        tokenizer_class="TokenizersBackend",
        post="none",
        template=MISTRAL_TEMPLATE,
        template_in="tokenizer_config",
        config=dict(sliding_window=8),
    ),
    "gemma2": dict(
        seed=1005,
        config_cls=Gemma2Config,
        model_cls=Gemma2ForSequenceClassification,
        bos="<s>",
        eos="</s>",
        pad="<pad>",
        pretok="gpt2",
        tokenizer_class="TokenizersBackend",
        post="add_bos",
        template=GEMMA_TEMPLATE,
        template_in="jinja",
        config=dict(
            head_dim=8,
            sliding_window=8,
            attn_logit_softcapping=50.0,
            final_logit_softcapping=30.0,
            query_pre_attn_scalar=24,
            hidden_activation="gelu_pytorch_tanh",
        ),
    ),
}

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def log(*args):
    print(*args, flush=True)


# ----------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------


def corpus():
    texts = []
    for path in sorted(glob.glob(os.path.join(REPO, "data", "sample", "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                row = json.loads(line)
                texts.append(row["question"])
                texts.append(row["chosen"])
                texts.append(row["rejected"])
                texts.extend(p["text"] for p in row["profile"])
    if not texts:
        sys.exit("no text found in data/sample/*.jsonl")
    return texts


# The pre-tokenizer regexes of the real hub tokenizer.json files. QWEN_PATTERN is transformers'
# models/qwen2/tokenization_qwen2.py PRETOKENIZE_REGEX (Qwen2Tokenizer rebuilds exactly this on load:
# NFC + Split(Isolated) + ByteLevel(add_prefix_space=False, use_regex=False)); digits one by one.
# LLAMA3_PATTERN is Meta-Llama-3's tokenizer.json Split pattern: digits in runs of up to three.
QWEN_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX as _QWEN2_REGEX  # noqa: E402

assert QWEN_PATTERN == _QWEN2_REGEX, "transformers' Qwen2Tokenizer regex changed"


def split_then_byte_level(pattern, trim_offsets):
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=trim_offsets, use_regex=False),
        ]
    )


def train_tokenizer(pretok):
    """Byte-level BPE trained with the pre-tokenizer (and normalizer) of the family's real files:
    "gpt2" plain ByteLevel (GPT-2 regex inside), "qwen" NFC + Qwen split + ByteLevel without regex,
    "llama3" Llama-3 split + ByteLevel without regex."""
    if pretok == "qwen":
        # Qwen's BPE spells the empty prefix/suffix out, as Qwen2Tokenizer builds it
        tok = Tokenizer(models.BPE(continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False, byte_fallback=False))
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = split_then_byte_level(QWEN_PATTERN, trim_offsets=False)
        tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    elif pretok == "llama3":
        tok = Tokenizer(models.BPE(fuse_unk=False, byte_fallback=False, ignore_merges=True))
        tok.pre_tokenizer = split_then_byte_level(LLAMA3_PATTERN, trim_offsets=True)
        tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    else:
        assert pretok == "gpt2", pretok
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    for i, t in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(t) == i, (t, tok.token_to_id(t))
    assert tok.get_vocab_size() == VOCAB_SIZE, (pretok, tok.get_vocab_size())
    return tok


def make_hf_tokenizer(base, spec):
    tok = Tokenizer.from_str(base.to_str())
    if spec["post"] == "add_bos":
        bos = spec["bos"]
        add_bos = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))]
        )
        if spec["pretok"] == "llama3":  # Meta-Llama-3: Sequence[ByteLevel(trim_offsets=False), TemplateProcessing]
            add_bos = processors.Sequence(
                [processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True), add_bos]
            )
        tok.post_processor = add_bos
    elif spec["post"] == "byte_level":
        tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    else:
        tok.post_processor = None  # transformers installs a no-op TemplateProcessing
    kwargs = dict(tokenizer_object=tok, eos_token=spec["eos"], chat_template=spec["template"])
    if spec["bos"] is not None:
        kwargs["bos_token"] = spec["bos"]
    if spec["pad"] is not None:
        kwargs["pad_token"] = spec["pad"]
    return PreTrainedTokenizerFast(**kwargs)


def save_tokenizer(hf_tok, spec, d):
    hf_tok.save_pretrained(d)
    jinja = os.path.join(d, "chat_template.jinja")
    cfg_path = os.path.join(d, "tokenizer_config.json")
    with open(cfg_path, encoding="utf-8") as f:
        cfg = json.load(f)
    # What the family's hub repos declare. Qwen2Tokenizer rebuilds its backend on load (from the
    # vocab/merges, with its own normalizer and pre-tokenizer), so our tokenizer.json carries exactly
    # what it builds; the other two classes load tokenizer.json as is (checked in compute_entry).
    cfg["tokenizer_class"] = spec["tokenizer_class"]
    if spec["tokenizer_class"] == "Qwen2Tokenizer":
        cfg.update(add_prefix_space=False, bos_token=None, errors="replace", split_special_tokens=False, unk_token=None)
    if spec["template_in"] == "tokenizer_config":
        if os.path.exists(jinja):
            os.remove(jinja)
        cfg["chat_template"] = spec["template"]
    else:
        cfg.pop("chat_template", None)
        with open(jinja, "w", encoding="utf-8") as f:
            f.write(spec["template"])
    with open(cfg_path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")
    # The template must be in exactly one place, and transformers must still find it.
    assert os.path.exists(jinja) == (spec["template_in"] == "jinja")
    reloaded = AutoTokenizer.from_pretrained(d)
    assert reloaded.chat_template == spec["template"], d
    msgs = CONVERSATIONS[0]["messages"]
    assert reloaded.apply_chat_template(msgs, tokenize=False) == hf_tok.apply_chat_template(msgs, tokenize=False)


# ----------------------------------------------------------------------------------------------
# Models
# ----------------------------------------------------------------------------------------------


def build_config(spec, vocab_size, hf_tok, num_labels=1):
    kw = dict(COMMON)
    kw.update(spec["config"])
    kw["num_labels"] = num_labels
    kw["vocab_size"] = vocab_size
    kw["bos_token_id"] = hf_tok.convert_tokens_to_ids(spec["bos"]) if spec["bos"] else None
    kw["eos_token_id"] = hf_tok.convert_tokens_to_ids(spec["eos"])
    kw["pad_token_id"] = hf_tok.convert_tokens_to_ids(spec["pad"]) if spec["pad"] else None
    return spec["config_cls"](**kw)


@torch.no_grad()
def randomize(model, seed, gemma_norms):
    """Re-draw every parameter so that the scores are O(1) and depend on the input."""
    g = torch.Generator().manual_seed(seed)
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        if "norm" in name:
            centre = 0.0 if gemma_norms else 1.0
            p.copy_(centre + NORM_STD * torch.randn(p.shape, generator=g))
        elif name.startswith("score."):
            p.copy_(SCORE_STD * torch.randn(p.shape, generator=g))
        elif gemma_norms and name.endswith("embed_tokens.weight"):
            # Gemma multiplies the embeddings by sqrt(hidden_size): keep the residual stream at the
            # same scale as the other models, or the embedding swamps the attention/MLP updates.
            p.copy_(WEIGHT_STD / math.sqrt(p.shape[1]) * torch.randn(p.shape, generator=g))
        elif gemma_norms and (".q_proj." in name or ".k_proj." in name):
            # larger attention scores (up to ~20), so that the softcap at 50 changes them measurably
            p.copy_(GEMMA_QK_GAIN * WEIGHT_STD * torch.randn(p.shape, generator=g))
        else:
            p.copy_(WEIGHT_STD * torch.randn(p.shape, generator=g))


def make_model(spec, config):
    torch.manual_seed(spec["seed"])
    model = spec["model_cls"](config)
    randomize(model, spec["seed"], gemma_norms=config.model_type == "gemma2")
    return model.eval()


def rewrite_legacy_rope(d):
    """config.json: transformers-5 `rope_parameters` -> `rope_theta` + `rope_scaling` (hub style)."""
    path = os.path.join(d, "config.json")
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    rope = dict(cfg.pop("rope_parameters"))
    theta = rope.pop("rope_theta")
    out = {}
    for k, v in cfg.items():
        out[k] = v
        if k == "rms_norm_eps":
            out["rope_scaling"] = rope
            out["rope_theta"] = theta
    assert "rope_scaling" in out
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2, sort_keys=True)
        f.write("\n")


def save_model(model, d, dtype, spec, hf_tok, **kwargs):
    os.makedirs(d, exist_ok=True)
    m = copy.deepcopy(model).to(DTYPES[dtype])
    m.save_pretrained(d, **kwargs)
    if spec.get("legacy_rope_keys"):
        rewrite_legacy_rope(d)
    save_tokenizer(hf_tok, spec, d)


# ----------------------------------------------------------------------------------------------
# Scores
# ----------------------------------------------------------------------------------------------


def to_list(t):
    return [[float(x) for x in row] for row in t.float().tolist()]


@torch.no_grad()
def run(model, input_ids, attention_mask):
    ids = torch.tensor(input_ids, dtype=torch.long)
    mask = torch.tensor(attention_mask, dtype=torch.long)
    return model(input_ids=ids, attention_mask=mask).logits


def pad_batch(seqs, side, pad_id):
    n = max(len(s) for s in seqs)
    ids, mask = [], []
    for s in seqs:
        k = n - len(s)
        if side == "left":
            ids.append([pad_id] * k + s)
            mask.append([0] * k + [1] * len(s))
        else:
            ids.append(s + [pad_id] * k)
            mask.append([1] * len(s) + [0] * k)
    return ids, mask


def pooled_index(ids, pad_id):
    """Where GenericForSequenceClassification reads the score (modeling_layers.py)."""
    if pad_id is None:
        return len(ids) - 1
    keep = [i for i, t in enumerate(ids) if t != pad_id]
    return keep[-1] if keep else 0


def load(d, dtype, attn="eager"):
    return AutoModelForSequenceClassification.from_pretrained(d, dtype=DTYPES[dtype], attn_implementation=attn).eval()


def max_abs(a, b):
    return float((torch.tensor(a, dtype=torch.float64) - torch.tensor(b, dtype=torch.float64)).abs().max())


def score_all(path, dtype, singles_ids, pad_id, batch_pad_id, attn="eager"):
    """Logits of transformers for each conversation alone, then for each padded batch of BATCHES."""
    model = load(path, dtype, attn)
    singles = [to_list(run(model, [ids], [[1] * len(ids)]))[0] for ids in singles_ids]
    if pad_id is None:
        # transformers raises "Cannot handle batch sizes > 1 if no padding token is defined"
        model.config.pad_token_id = batch_pad_id
    batches = []
    for side, conv in BATCHES:
        ids, mask = pad_batch([singles_ids[i] for i in conv], side, batch_pad_id)
        batches.append((side, conv, ids, mask, to_list(run(model, ids, mask))))
    return model, singles, batches


def batch_vs_single(singles, batches):
    delta = {"left": 0.0, "right": 0.0}
    for side, conv, _, _, logits in batches:
        for row, i in enumerate(conv):
            delta[side] = max(delta[side], max_abs([logits[row]], [singles[i]]))
    return delta


def ceil_cents(x):
    """x rounded up to a multiple of 0.01."""
    return math.ceil(round(x * 100, 6)) / 100


tokenizer_classes = {}  # dir -> class AutoTokenizer loaded


def no_offsets(component):
    """A tokenizers component as JSON without `trim_offsets` (offsets only, never the ids): the real
    Qwen tokenizer.json says false, Qwen2Tokenizer builds ByteLevel with the default true."""

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "trim_offsets"}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return strip(json.loads(component.__getstate__()))


def compute_entry(d, arch_key, weights_dtype, summary):
    path = os.path.join(OUT, d)
    tok = AutoTokenizer.from_pretrained(path)
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    pad_id = cfg.get("pad_token_id")
    batch_pad_id = pad_id if pad_id is not None else tok.convert_tokens_to_ids("<pad>")
    compute_dtype = weights_dtype  # transformers computes in the dtype it loads the weights in
    notes = []

    # transformers as users run it (AutoTokenizer on the directory) vs the `tokenizers` library on
    # tokenizer.json (what the Rust side does): they must give the same ids for every rendered text.
    with open(os.path.join(path, "tokenizer_config.json"), encoding="utf-8") as f:
        declared = json.load(f)["tokenizer_class"]
    want_cls = "Qwen2Tokenizer" if declared == "Qwen2Tokenizer" else "TokenizersBackend"
    assert type(tok).__name__ == want_cls, (d, declared, type(tok).__name__)
    raw = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    assert no_offsets(tok.backend_tokenizer.pre_tokenizer) == no_offsets(raw.pre_tokenizer), d
    tok_norm = tok.backend_tokenizer.normalizer
    raw_norm = raw.normalizer
    assert (tok_norm is None) == (raw_norm is None), d
    if tok_norm is not None:
        assert json.loads(tok_norm.__getstate__()) == json.loads(raw_norm.__getstate__()), d
    tokenizer_classes[d] = type(tok).__name__

    texts, singles_ids = [], []
    for conv in CONVERSATIONS:
        text = tok.apply_chat_template(conv["messages"], tokenize=False)
        ids = tok.apply_chat_template(conv["messages"], tokenize=True)["input_ids"]
        assert ids == tok(text, add_special_tokens=False)["input_ids"], (d, conv["name"])
        raw_ids = raw.encode(text, add_special_tokens=False).ids
        if raw_ids != ids:
            k = next((i for i, (a, b) in enumerate(zip(ids, raw_ids)) if a != b), min(len(ids), len(raw_ids)))
            sys.exit(
                f"{d} {conv['name']}: AutoTokenizer ({type(tok).__name__}) and tokenizers.Tokenizer.from_file differ "
                f"at token {k}: {ids[k:k + 8]} vs {raw_ids[k:k + 8]} ({text!r})"
            )
        if batch_pad_id != cfg.get("eos_token_id"):  # qwen3: pad == eos, which every text contains
            assert batch_pad_id not in ids, (d, conv["name"], "batch pad id occurs in the text")
        assert len(ids) < cfg["max_position_embeddings"]
        texts.append(text)
        singles_ids.append(ids)
    # the template emits <s> once (llama, mistral, gemma2); qwen has no bos
    bos = cfg.get("bos_token_id")
    for ids in singles_ids:
        assert (ids[0] == bos and ids[1] != bos) if bos is not None else (3 not in ids), (d, ids[:3])
    naive = tok(texts[0])["input_ids"]  # with add_special_tokens=True
    if arch_key in ("llama", "gemma2"):  # the post-processor adds <s> again: two BOS
        assert naive[:2] == [bos, bos] and naive[1:] == singles_ids[0], (d, naive[:3])
    else:
        assert naive == singles_ids[0], (d, naive[:3])

    model, singles, batches = score_all(path, weights_dtype, singles_ids, pad_id, batch_pad_id)
    if pad_id is None:
        notes.append(
            f"config pad_token_id is null: transformers refuses batches > 1, so the batches were computed with "
            f"model.config.pad_token_id temporarily set to batch_pad_token_id {batch_pad_id} (<pad>, absent from "
            f"every text); the singles with pad_token_id null (score read at the last token)"
        )
    side_delta = batch_vs_single(singles, batches)

    # pooled position: reproduce the score from the hidden state at pooled_index
    pidx = [pooled_index(ids, pad_id) for ids in singles_ids]
    if compute_dtype == "float32":
        with torch.no_grad():
            for ids, p, logit in zip(singles_ids, pidx, singles):
                h = getattr(model, model.base_model_prefix)(input_ids=torch.tensor([ids])).last_hidden_state
                assert max_abs([model.score(h[0, p]).tolist()], [logit]) <= 1e-6, (d, p)
    if arch_key == "qwen3":
        for ids, p in zip(singles_ids, pidx):
            assert ids[-1] == pad_id and p == len(ids) - 2, (d, ids[-3:], p)
        notes.append(
            "pad_token_id == eos_token_id and every text ends with <|im_end|>: transformers reads the score at "
            "the rightmost token != pad_token_id, i.e. the token before the trailing <|im_end|> (pooled_index)"
        )

    row = {"dir": d, "left": side_delta["left"], "right": side_delta["right"], "half_vs_f32": None, "sdpa": None}
    extra = {}
    if compute_dtype == "float32":
        tol = TOL_F32
        try:
            _, sdpa_singles, sdpa_batches = score_all(path, "float32", singles_ids, pad_id, batch_pad_id, attn="sdpa")
        except Exception as e:  # Gemma2 declares _supports_sdpa = False
            extra["sdpa_check"] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
            row["sdpa"] = "refused"
        else:
            delta = max_abs(sdpa_singles, singles)
            for x, y in zip(sdpa_batches, batches):
                delta = max(delta, max_abs(x[4], y[4]))
            assert delta <= SDPA_TOL, (d, "sdpa", delta)
            extra["sdpa_check"] = {"max_abs_diff": delta}
            row["sdpa"] = delta
    else:
        _, up_singles, up_batches = score_all(path, "float32", singles_ids, pad_id, batch_pad_id)
        up_delta = batch_vs_single(up_singles, up_batches)
        assert max(up_delta.values()) <= TOL_F32, (d, "upcast batch", up_delta)
        noise = max_abs(singles, up_singles)
        for x, y in zip(batches, up_batches):
            noise = max(noise, max_abs(x[4], y[4]))
        tol = max(TOL_HALF, ceil_cents(2 * noise))
        if tol > TOL_HALF:
            notes.append(
                f"tolerance raised from {TOL_HALF} to {tol}: twice the largest |{compute_dtype} - f32| of transformers "
                f"itself on these weights ({noise:.4f})"
            )
        assert max(side_delta.values()) <= tol, (d, side_delta, tol)
        extra["upcast_f32"] = {
            "tolerance": TOL_F32,
            "single_logits": up_singles,
            "batches_logits": [b[4] for b in up_batches],
        }
        row["half_vs_f32"] = noise
    assert max(side_delta.values()) <= tol, (d, side_delta, tol)

    entry = {
        "dir": d,
        "architecture": cfg["architectures"][0],
        "weights_dtype": weights_dtype,
        "compute_dtype": compute_dtype,
        "tolerance": tol,
        "num_labels": len(singles[0]),
        "pad_token_id": pad_id,
        "bos_token_id": cfg.get("bos_token_id"),
        "eos_token_id": cfg.get("eos_token_id"),
        "batch_pad_token_id": batch_pad_id,
        "single": [
            {"conversation": i, "text": texts[i], "input_ids": singles_ids[i], "pooled_index": pidx[i], "logits": singles[i]}
            for i in range(len(CONVERSATIONS))
        ],
        "batches": [
            {
                "padding_side": side,
                "conversations": conv,
                "input_ids": ids,
                "attention_mask": mask,
                "pooled_index": [pooled_index(r, batch_pad_id) for r in ids],
                "logits": logits,
            }
            for side, conv, ids, mask, logits in batches
        ],
    }
    entry.update(extra)
    if notes:
        entry["notes"] = notes
    row["tol"] = tol
    summary.append(row)
    return entry


# ----------------------------------------------------------------------------------------------
# Behaviour checks (the things a reimplementation must get right actually matter here)
# ----------------------------------------------------------------------------------------------


@torch.no_grad()
def behaviour_checks(singles_ids_by_dir):
    """Each feature a reimplementation must get right changes the recorded scores (f32 models)."""
    out = []

    def delta_with(d, **overrides):
        path = os.path.join(OUT, d)
        ids = torch.tensor([max(singles_ids_by_dir[d], key=len)])  # the longest conversation
        base = load(path, "float32")(input_ids=ids).logits
        cfg = transformers.AutoConfig.from_pretrained(path)
        for k, v in overrides.items():
            setattr(cfg, k, v)
        m = AutoModelForSequenceClassification.from_pretrained(path, config=cfg, attn_implementation="eager").eval()
        return float((m(input_ids=ids).logits - base).abs().max())

    def expect_effect(d, what, **overrides):
        delta = delta_with(d, **overrides)
        assert delta > 10 * TOL_F32, (d, what, "has no effect", delta)
        out.append(f"{d}: {what} changes the longest conversation's logit by {delta:.4f}")

    # the legacy rope keys of llama's config.json were read as llama3 scaling
    cfg = transformers.AutoConfig.from_pretrained(os.path.join(OUT, "llama-f32"))
    rope = dict(SPECS["llama"]["config"]["rope_scaling"], rope_theta=SPECS["llama"]["config"]["rope_theta"])
    assert dict(cfg.rope_parameters) == rope, cfg.rope_parameters
    expect_effect("llama-f32", "plain rope (theta 500000) instead of llama3 scaling",
                  rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    expect_effect("mistral-f32", "disabling sliding_window", sliding_window=None)
    expect_effect("gemma2-f32", "sliding_window 4096 instead of 8 (layer 0)", sliding_window=4096)
    expect_effect("gemma2-f32", "removing attn_logit_softcapping", attn_logit_softcapping=None)
    expect_effect("gemma2-f32", "query_pre_attn_scalar = head_dim (8) instead of 24", query_pre_attn_scalar=8)
    delta = delta_with("gemma2-f32", final_logit_softcapping=None)
    assert delta == 0.0, ("final_logit_softcapping is applied by the seq-cls head?", delta)
    out.append("gemma2-f32: final_logit_softcapping is NOT applied by Gemma2ForSequenceClassification (delta 0)")
    return out


# ----------------------------------------------------------------------------------------------


def check_conversations():
    specials = set(SPECIAL_TOKENS) | {"[INST]", "[/INST]", "<start_of_turn>", "<end_of_turn>"}
    for conv in CONVERSATIONS:
        for m in conv["messages"]:
            for s in specials:
                assert s not in m["content"], (conv["name"], s)


def main():
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, tokenizers {tokenizers.__version__}")
    transformers.utils.logging.disable_progress_bar()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)

    base_toks = {}
    for spec in SPECS.values():
        if spec["pretok"] not in base_toks:
            base_toks[spec["pretok"]] = train_tokenizer(spec["pretok"])
    vocab = VOCAB_SIZE
    log(f"tokenizers: {sorted(base_toks)}, vocab {vocab} each, specials {SPECIAL_TOKENS}")
    check_conversations()

    plan = []  # (dir, arch key, weights dtype)
    for key, spec in SPECS.items():
        hf_tok = make_hf_tokenizer(base_toks[spec["pretok"]], spec)
        assert len(hf_tok) == vocab, (key, len(hf_tok))
        config = build_config(spec, vocab, hf_tok)
        model = make_model(spec, config)
        for dtype, suffix in (("float32", "f32"), ("bfloat16", "bf16")):
            save_model(model, os.path.join(OUT, f"{key}-{suffix}"), dtype, spec, hf_tok)
            plan.append((f"{key}-{suffix}", key, dtype))
        if key == "qwen2":
            save_model(model, os.path.join(OUT, "qwen2-f16"), "float16", spec, hf_tok)
            plan.append(("qwen2-f16", key, "float16"))
            d = os.path.join(OUT, "qwen2-sharded")
            save_model(model, d, "float32", spec, hf_tok, max_shard_size="64KB")
            shards = sorted(glob.glob(os.path.join(d, "model-*.safetensors")))
            assert len(shards) >= 2 and os.path.exists(os.path.join(d, "model.safetensors.index.json")), shards
            plan.append(("qwen2-sharded", key, "float32"))
            # two labels: row 0 of the head is qwen2's head
            config2 = build_config(spec, vocab, hf_tok, num_labels=2)
            model2 = make_model(dict(spec, seed=spec["seed"] + 100), config2)
            with torch.no_grad():
                sd = {k: v for k, v in model.state_dict().items() if not k.startswith("score.")}
                model2.load_state_dict(sd, strict=False)
                model2.score.weight[0].copy_(model.score.weight[0])
            save_model(model2, os.path.join(OUT, "qwen2-2labels"), "float32", spec, hf_tok)
            plan.append(("qwen2-2labels", key, "float32"))

    # unsupported architecture: config.json only
    d = os.path.join(OUT, "unsupported")
    os.makedirs(d)
    gcfg = GPT2Config(
        n_embd=32, n_layer=2, n_head=4, n_positions=128, vocab_size=vocab, num_labels=1,
        bos_token_id=4, eos_token_id=4, pad_token_id=5,
    )
    gcfg.architectures = ["GPT2ForSequenceClassification"]
    gcfg.save_pretrained(d)

    summary, entries, singles_ids_by_dir = [], [], {}
    for d, key, dtype in plan:
        log(f"scoring {d} ...")
        e = compute_entry(d, key, dtype, summary)
        entries.append(e)
        singles_ids_by_dir[d] = [s["input_ids"] for s in e["single"]]

    # qwen2 family consistency
    by = {e["dir"]: e for e in entries}
    q = [s["logits"] for s in by["qwen2-f32"]["single"]]
    assert [s["logits"] for s in by["qwen2-sharded"]["single"]] == q
    assert max_abs([[s["logits"][0]] for s in by["qwen2-2labels"]["single"]], q) <= 1e-6

    checks = behaviour_checks(singles_ids_by_dir)

    expected = {
        "generator": GENERATOR,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "tokenizers_version": tokenizers.__version__,
        "conversations": CONVERSATIONS,
        "models": entries,
    }
    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False)
        f.write("\n")

    log("")
    log("AutoTokenizer class per model (ids checked equal to tokenizers.Tokenizer.from_file(tokenizer.json)):")
    for e in entries:
        if e["dir"].endswith("-f32"):
            log(f"  {e['dir']:<14} {tokenizer_classes[e['dir']]}")
    log("")
    log("conversation lengths (tokens) per model:")
    for e in entries:
        if e["weights_dtype"] == "float32" and e["dir"].endswith("-f32"):
            log(f"  {e['dir']:<14} {[len(s['input_ids']) for s in e['single']]}")
    log("")
    log(f"{'model':<15}{'compute':<10}{'tol':>8}{'|single-left|':>15}{'|single-right|':>16}{'|half-f32|':>13}{'sdpa vs eager':>15}")
    for r, e in zip(summary, entries):
        hv = "-" if r["half_vs_f32"] is None else f"{r['half_vs_f32']:.2e}"
        sd = "-" if r["sdpa"] is None else (r["sdpa"] if isinstance(r["sdpa"], str) else f"{r['sdpa']:.2e}")
        log(f"{r['dir']:<15}{e['compute_dtype']:<10}{r['tol']:>8.2g}{r['left']:>15.2e}{r['right']:>16.2e}{hv:>13}{sd:>15}")
    log("")
    for c in checks:
        log("check: " + c)
    log("")
    log("wrote:")
    total = 0
    for root, _, files in sorted(os.walk(OUT)):
        for name in sorted(files):
            p = os.path.join(root, name)
            size = os.path.getsize(p)
            total += size
            log(f"  {os.path.relpath(p, REPO)}  {size} bytes")
    log(f"total {total} bytes")
    assert total < 5_000_000


if __name__ == "__main__":
    main()
