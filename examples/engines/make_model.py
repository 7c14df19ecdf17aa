#!/usr/bin/env python3
"""Create a randomly initialised Llama-style model and a byte-level BPE tokenizer, fully offline.

Writes three things (deterministic for a given --size/--seed):
  * <out>/                      a transformers checkpoint (config, generation_config, safetensors, tokenizer)
  * <hf-cache>/models--<org>--<name>/snapshots/<rev>/   the same files laid out as a Hugging Face hub cache,
                                so `transformers serve <org>/<name>` loads it with HF_HUB_OFFLINE=1 and lists it
                                in GET /v1/models (gpushare sends the first listed id as `model`)
  * <out>/model.gguf            (with --gguf) the same weights for llama.cpp, written with gguf-py

The tokenizer is trained on synthetic text (syllable words plus "hello"/"world", the words gpushare's
synthetic prompts are made of), ASCII-only alphabet, so every non-special token decodes to non-empty text.
The model has no EOS in its generation config: a random model never stops before max_tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class Size:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int


SIZES: dict[str, Size] = {
    "tiny": Size(hidden=256, layers=4, heads=4, kv_heads=4, intermediate=704, vocab=4096),  # ~6M, CPU tests
    "0.1b": Size(hidden=768, layers=12, heads=12, kv_heads=4, intermediate=2048, vocab=16384),  # ~110M
    "0.5b": Size(hidden=1024, layers=24, heads=16, kv_heads=4, intermediate=4096, vocab=32768),  # ~440M
}


def synthetic_corpus(seed: int, lines: int) -> list[str]:
    rng = random.Random(seed)
    cons = "bcdfghjklmnprstvwz"
    vows = "aeiou"
    syll = [c + v for c in cons for v in vows] + [c + v + k for c in cons[:9] for v in vows for k in "nrst"]
    words = ["".join(rng.choice(syll) for _ in range(rng.randint(1, 4))) for _ in range(60000)]
    # Zipf-ish word frequencies, plus the prompt words and a little punctuation/digits.
    cum: list[float] = []
    acc = 0.0
    for i in range(len(words)):
        acc += 1.0 / (i + 10)
        cum.append(acc)
    common = ["hello", "world", "the", "a", "of", "and", "to", "in", "is", "it"]
    out: list[str] = []
    for _ in range(lines):
        n = rng.randint(5, 25)
        ws = rng.choices(words, cum_weights=cum, k=n)
        for j in range(n):
            if rng.random() < 0.3:
                ws[j] = rng.choice(common)
        line = " ".join(ws)
        if rng.random() < 0.3:
            line = line.capitalize() + rng.choice([".", ",", "!", "?", ":", " 1", " 42", " 2026"])
        out.append(line)
    return out


def build_tokenizer(vocab: int, seed: int, workdir: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    # No initial_alphabet: only the (ASCII) bytes seen in the corpus become base tokens.
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIAL, show_progress=False, min_frequency=2)
    corpus = synthetic_corpus(seed, 200000)
    tok.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    return tok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(SIZES), default="0.1b")
    ap.add_argument("--out", type=Path, default=None, help="checkpoint folder (default /tmp/model-<size>)")
    ap.add_argument(
        "--hf-cache",
        type=Path,
        default=Path("/tmp/hf-cache"),
        help="also lay the checkpoint out as a hub cache here (HF_HUB_CACHE); '' to skip",
    )
    ap.add_argument("--repo-id", default=None, help="hub-cache id (default gpushare/llama-<size>)")
    ap.add_argument("--gguf", action="store_true", help="also write <out>/model.gguf (f16) for llama.cpp")
    ap.add_argument("--gguf-py", type=Path, default=None, help="path to llama.cpp's gguf-py if gguf is not importable")
    ap.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    t0 = time.time()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    size = SIZES[args.size]
    out: Path = args.out or Path(f"/tmp/model-{args.size}")
    repo_id: str = args.repo_id or f"gpushare/llama-{args.size}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    torch.manual_seed(args.seed)
    random.seed(args.seed)

    raw = build_tokenizer(size.vocab, args.seed, out)
    n_vocab = raw.get_vocab_size()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)

    config = LlamaConfig(
        vocab_size=n_vocab,
        hidden_size=size.hidden,
        intermediate_size=size.intermediate,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        num_key_value_heads=size.kv_heads,
        max_position_embeddings=4096,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=SPECIAL.index("<|endoftext|>"),
    )
    config.dtype = args.dtype
    model = LlamaForCausalLM(config).to(getattr(torch, args.dtype))
    model.generation_config = GenerationConfig(
        do_sample=False,
        eos_token_id=None,
        bos_token_id=None,
        pad_token_id=config.pad_token_id,
        suppress_tokens=list(range(len(SPECIAL))),  # never emit the (textless) special tokens
    )
    model.save_pretrained(out)
    n_params = sum(p.numel() for p in model.parameters())

    if args.gguf:
        write_gguf(out / "model.gguf", model, raw, config, args.gguf_py)

    if str(args.hf_cache):
        org, name = repo_id.split("/")
        base = args.hf_cache / f"models--{org}--{name}"
        rev = "0" * 40
        if base.exists():
            shutil.rmtree(base)
        snap = base / "snapshots" / rev
        snap.mkdir(parents=True)
        (base / "refs").mkdir()
        (base / "refs" / "main").write_text(rev)
        (base / "blobs").mkdir()
        for f in out.iterdir():
            if f.is_file() and f.suffix != ".gguf":
                os.link(f, snap / f.name) if f.stat().st_dev == snap.stat().st_dev else shutil.copy2(f, snap / f.name)

    print(
        json.dumps(
            {
                "out": str(out),
                "repo_id": repo_id,
                "hf_cache": str(args.hf_cache),
                "params": n_params,
                "vocab": n_vocab,
                "dtype": args.dtype,
                "gguf": str(out / "model.gguf") if args.gguf else None,
                "seconds": round(time.time() - t0, 1),
            }
        )
    )
    return 0


def write_gguf(path: Path, model, raw_tok, config, gguf_py: Path | None) -> None:
    """Write the model as GGUF (arch llama, f16 weights, gpt2-style BPE vocab) with llama.cpp's gguf-py."""
    if gguf_py is not None:
        sys.path.insert(0, str(gguf_py))
    import gguf  # type: ignore[import-not-found]
    import numpy as np

    vocab = raw_tok.get_vocab()
    tokens = [""] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    types = [gguf.TokenType.CONTROL if t in SPECIAL else gguf.TokenType.NORMAL for t in tokens]
    merges = json.loads(raw_tok.to_str())["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("gpushare-random-llama")
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    w.add_rope_freq_base(float(getattr(config, "rope_theta", None) or config.rope_parameters["rope_theta"]))
    w.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    w.add_vocab_size(len(tokens))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_eos_token_id(SPECIAL.index("<|im_end|>"))
    w.add_pad_token_id(SPECIAL.index("<|endoftext|>"))
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    sd = {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}
    nh, nkv = config.num_attention_heads, config.num_key_value_heads

    def permute(wt: np.ndarray, n_head: int) -> np.ndarray:  # HF rotary layout -> llama.cpp's (as convert_hf_to_gguf)
        return wt.reshape(n_head, 2, wt.shape[0] // n_head // 2, *wt.shape[1:]).swapaxes(1, 2).reshape(wt.shape)

    def add(name: str, arr: np.ndarray, f32: bool = False) -> None:
        w.add_tensor(name, arr.astype(np.float32 if f32 else np.float16))

    add("token_embd.weight", sd["model.embed_tokens.weight"])
    add("output_norm.weight", sd["model.norm.weight"], f32=True)
    add("output.weight", sd["lm_head.weight"])
    for i in range(config.num_hidden_layers):
        p = f"model.layers.{i}."
        add(f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"], f32=True)
        add(f"blk.{i}.attn_q.weight", permute(sd[p + "self_attn.q_proj.weight"], nh))
        add(f"blk.{i}.attn_k.weight", permute(sd[p + "self_attn.k_proj.weight"], nkv))
        add(f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"])
        add(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        add(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"], f32=True)
        add(f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
        add(f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"])
        add(f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    sys.exit(main())
