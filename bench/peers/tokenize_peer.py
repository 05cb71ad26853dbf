"""The Python `tokenizers` peer of `turnlake validate` (bench/reference.sh).

Usage: python tokenize_peer.py JSONL TOKENIZER_JSON

Reads an SFT export (`turnlake export sft --out X.jsonl`) in chunks, renders
each row in ChatML as turnlake does (data/chatml.toml, src/tokenize/template.rs:
`<|im_start|>{role}\\n{content}<|im_end|>\\n` per message, content untrimmed),
tokenizes every conversation with `encode_batch` (special-token text parsed
as special tokens, offsets on), then for each train message takes the tokens
whose offsets lie inside its content, decodes them and compares with the
content (a token straddling the content's edge is a mismatch, as in
src/tokenize/validate.rs). Prints rows, tokens, mismatches, seconds and
tokens/s for the whole check and for encode_batch alone.
"""
import json
import sys
import time

import tokenizers
from tokenizers import Tokenizer

CHUNK = 2000  # rows per encode_batch: memory stays bounded


def render(messages):
    text, spans = [], []
    at = 0
    for m in messages:
        start = f"<|im_start|>{m['role']}\n"
        text.append(start)
        at += len(start)
        content = m["content"]
        text.append(content)
        spans.append((at, at + len(content)))
        at += len(content)
        text.append("<|im_end|>\n")
        at += len("<|im_end|>\n")
    return "".join(text), spans


def check(tok, rows, stats):
    rendered = [render(r["messages"]) for r in rows]
    t0 = time.perf_counter()
    encs = tok.encode_batch([t for t, _ in rendered], add_special_tokens=False)
    stats["encode_s"] += time.perf_counter() - t0
    labels, wants = [], []
    for row, (_, spans), enc in zip(rows, rendered, encs):
        stats["tokens"] += len(enc.ids)
        offsets = enc.offsets
        for m, (a, b) in zip(row["messages"], spans):
            if not m.get("train"):
                continue
            stats["train_turns"] += 1
            if any(s < a < e or s < b < e for s, e in offsets):
                stats["boundary_merges"] += 1
                continue
            label = [i for i, (s, e) in zip(enc.ids, offsets) if s >= a and e <= b and e > s]
            stats["trainable"] += len(label)
            labels.append(label)
            wants.append(m["content"])
    for got, want in zip(tok.decode_batch(labels, skip_special_tokens=False), wants):
        stats["mismatches"] += got != want


def main():
    path, tokenizer_json = sys.argv[1], sys.argv[2]
    started = time.perf_counter()
    tok = Tokenizer.from_file(tokenizer_json)
    stats = dict(rows=0, tokens=0, trainable=0, train_turns=0, mismatches=0, boundary_merges=0, encode_s=0.0)
    chunk = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                chunk.append(json.loads(line))
            if len(chunk) == CHUNK:
                check(tok, chunk, stats)
                stats["rows"] += len(chunk)
                chunk = []
    if chunk:
        check(tok, chunk, stats)
        stats["rows"] += len(chunk)
    secs = time.perf_counter() - started
    s = stats
    print(f"python tokenizers {tokenizers.__version__}: {s['rows']} rows, {s['train_turns']} train turns, "
          f"{s['tokens']} tokens ({s['trainable']} trainable), "
          f"{s['mismatches'] + s['boundary_merges']} mismatches ({s['boundary_merges']} boundary merges)")
    print(f"whole check: {secs:.2f} s, {s['tokens'] / max(secs, 1e-9):.0f} tokens/s")
    print(f"encode_batch only: {s['encode_s']:.2f} s, {s['tokens'] / max(s['encode_s'], 1e-9):.0f} tokens/s")


if __name__ == "__main__":
    main()
