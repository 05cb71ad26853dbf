"""Prepare a turnlake `export sft --for kto` file with TRL's own KTO data code.

KTOTrainer's dataset steps, in its order: maybe_extract_prompt,
maybe_unpair_preference_dataset, maybe_apply_chat_template, then its
_tokenize and _process_tokens. For every row the label is kept and the
tokens labelled for the loss are the completion as the template renders it
after the prompt (TRL appends an end-of-sequence token where the rendered
completion does not end with one).

Usage: trl_kto_prepare.py KTO.jsonl TOKENIZER_JSON
"""

import json
import pathlib
import sys

from datasets import load_dataset
from transformers import PreTrainedTokenizerFast
from trl.data_utils import maybe_apply_chat_template, maybe_extract_prompt, maybe_unpair_preference_dataset
from trl.experimental.kto.kto_trainer import _process_tokens, _tokenize

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from trl_prepare import CHATML  # noqa: E402


def main() -> None:
    rows_at, tokenizer_json = sys.argv[1], sys.argv[2]
    tok = PreTrainedTokenizerFast(tokenizer_file=tokenizer_json, chat_template=CHATML,
                                  eos_token="<|im_end|>", pad_token="<|endoftext|>")
    ds = load_dataset("json", data_files=rows_at, split="train")
    ds = ds.map(maybe_extract_prompt)
    ds = maybe_unpair_preference_dataset(ds, None)
    ds = ds.map(maybe_apply_chat_template, fn_kwargs={"tokenizer": tok})
    ds = ds.map(_tokenize, batched=True, fn_kwargs={"tokenizer": tok})
    ds = ds.map(_process_tokens, fn_kwargs={"prefix": "", "tokenizer": tok, "max_length": 1 << 30})
    raw = [json.loads(line) for line in open(rows_at)]
    assert len(ds) == len(raw), (len(ds), len(raw))
    for i, (example, row) in enumerate(zip(ds, raw)):
        assert example["label"] == row["label"], i
        trained = tok.decode([t for t in example["completion_labels"] if t != -100])
        want = "".join(m["content"] + "<|im_end|>\n" for m in row["completion"])
        assert trained in (want, want + "<|im_end|>"), (i, trained[:200], want[:200])
    positives = sum(1 for r in raw if r["label"])
    print(f"ok: {len(ds)} rows ({positives} desirable), each training exactly its completion")


if __name__ == "__main__":
    main()
