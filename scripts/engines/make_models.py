#!/usr/bin/env python3
"""Makes the two Hugging Face model folders the real-engine tests serve, from the SmolLM2 GGUF
that scripts/fetch-models.sh caches. Run by scripts/engines.sh with the engines venv's Python
(transformers, torch, gguf from scripts/engines/requirements.lock); deterministic: the same
pins rewrite the same weights.

    python make_models.py GGUF OUT_DIR

OUT_DIR/smollm2-135m-instruct/
    SmolLM2-135M-Instruct converted from the GGUF by transformers (its Q4_1 weights
    dequantized, saved as float32 safetensors), with the GGUF's tokenizer and chat template.
    vLLM serves it for chat (vLLM has no CPU kernel for GGUF), TRL trains it (examples/trl-grpo).

OUT_DIR/seqcls-llama-h64/
    A tiny random LlamaForSequenceClassification (num_labels 1) over the SmolLM2 tokenizer:
    hidden 64, 2 layers, 2 heads of head_dim 32 (vLLM's CPU attention refuses head_dim 8 and 16,
    which the committed parity fixtures use), 1 KV head, intermediate 128, float32.
    Weights drawn with torch.manual_seed(0) and scaled so logits are O(1) and depend on the text.
    The tokenizer is written as a plain tokenizer.json with tokenizer_class
    PreTrainedTokenizerFast, so transformers, vLLM, OpenRLHF and prbench's `dir:` loader all
    tokenize with exactly that file (a tokenizer_class that transformers rebuilds from vocab and
    merges, such as Qwen2Tokenizer, merges "\\n\\n" differently). The script checks this on a few
    texts and stops otherwise.
"""
import json
import pathlib
import sys

import torch
from tokenizers import Tokenizer
from transformers import (AutoModelForCausalLM, AutoTokenizer, LlamaConfig,
                          LlamaForSequenceClassification)

CHECK_TEXTS = [
    "Hello world",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\nFour.\n\nReally.<|im_end|>\n",
    "Résumé: naïve café, 12345 tokens\t\ttabs   spaces\n\n\nend",
]


def smollm2(gguf: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    dest = out / "smollm2-135m-instruct"
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                  dtype=torch.float32)
    # transformers marks a model loaded from GGUF as quantized and refuses to save it; its
    # weights are already dequantized, so copy them into a plain model of the same config.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    model.save_pretrained(dest, safe_serialization=True)
    tok.save_pretrained(dest)
    return dest


def seqcls(chat: pathlib.Path, out: pathlib.Path) -> None:
    dest = out / "seqcls-llama-h64"
    dest.mkdir(parents=True, exist_ok=True)
    fast = Tokenizer.from_file(str(chat / "tokenizer.json"))
    fast.save(str(dest / "tokenizer.json"))
    chat_cfg = json.loads((chat / "tokenizer_config.json").read_text())
    template = chat_cfg.get("chat_template")
    if template is None and (chat / "chat_template.jinja").exists():
        template = (chat / "chat_template.jinja").read_text()
    if template is None:
        sys.exit("make_models: the converted SmolLM2 tokenizer has no chat template")
    vocab = fast.get_vocab_size(with_added_tokens=True)
    pad = fast.token_to_id("<|endoftext|>")
    bos = fast.token_to_id("<|im_start|>")
    eos = fast.token_to_id("<|im_end|>")
    (dest / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>", "add_bos_token": False, "add_eos_token": False,
        "model_max_length": 8192, "chat_template": template,
    }, indent=2) + "\n")
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32,
        max_position_embeddings=8192, rms_norm_eps=1e-6, tie_word_embeddings=False,
        num_labels=1, pad_token_id=pad, bos_token_id=bos, eos_token_id=eos,
        rope_theta=10000.0)
    model = LlamaForSequenceClassification(config).to(torch.float32)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name == "score.weight":
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.copy_(0.2 * torch.randn_like(p))
    model.save_pretrained(dest, safe_serialization=True)
    auto = AutoTokenizer.from_pretrained(str(dest))
    for text in CHECK_TEXTS:
        a = auto(text, add_special_tokens=False)["input_ids"]
        b = fast.encode(text, add_special_tokens=False).ids
        if a != b:
            sys.exit(f"make_models: transformers and tokenizer.json disagree on {text!r}:\n{a}\n{b}")


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: make_models.py GGUF OUT_DIR")
    torch.set_num_threads(1)
    gguf, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    chat = smollm2(gguf, out)
    seqcls(chat, out)
    print(f"make_models: wrote {chat} and {out / 'seqcls-llama-h64'}")


if __name__ == "__main__":
    main()
