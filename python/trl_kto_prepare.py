"""Prepare a turnlake `export sft --for kto` file with TRL's own KTO data code.

KTOTrainer's dataset steps, in its order: maybe_extract_prompt,
maybe_unpair_preference_dataset, maybe_apply_chat_template, then its
_tokenize and _process_tokens. For every row the label is kept and the
tokens labelled for the loss are the completion as the template renders it
after the prompt (TRL appends an end-of-sequence token where the rendered
completion does not end with one).

Usage: trl_kto_prepare.py KTO.jsonl chatml TOKENIZER_JSON
       trl_kto_prepare.py KTO.jsonl model MODEL_DIR
"""

import json
import pathlib
import sys

from datasets import load_dataset
from trl.data_utils import maybe_apply_chat_template, maybe_extract_prompt, maybe_unpair_preference_dataset
from trl.experimental.kto.kto_trainer import _process_tokens, _tokenize

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from chat_template_ids import tokenizer, with_argument_objects  # noqa: E402


def main() -> None:
    rows_at, mode, source = sys.argv[1], sys.argv[2], sys.argv[3]
    tok = tokenizer(mode, source)
    raw = [json.loads(line) for line in open(rows_at)]
    ds = load_dataset("json", data_files=rows_at, split="train")
    ds = ds.map(lambda r: {"prompt": with_argument_objects(r["prompt"]),
                           "completion": with_argument_objects(r["completion"])})
    ds = ds.map(maybe_extract_prompt)
    ds = maybe_unpair_preference_dataset(ds, None)
    # KTOTrainer hands every row the config's one `tools`; each row here has its run's.
    ds = ds.map(lambda r, i: maybe_apply_chat_template({k: r[k] for k in ("prompt", "completion", "label")}, tok,
                                                       tools=raw[i].get("tools")), with_indices=True)
    ds = ds.map(_tokenize, batched=True, fn_kwargs={"tokenizer": tok})
    ds = ds.map(_process_tokens, fn_kwargs={"prefix": "", "tokenizer": tok, "max_length": 1 << 30})
    assert len(ds) == len(raw), (len(ds), len(raw))
    boundary = 0
    for i, (example, row) in enumerate(zip(ds, raw)):
        assert example["label"] == row["label"], i
        trained = tok.decode([t for t in example["completion_labels"] if t != -100])
        tools = row.get("tools")
        whole = tok.apply_chat_template(with_argument_objects(row["prompt"] + row["completion"]), tools=tools,
                                        tokenize=False)
        prompt = tok.apply_chat_template(with_argument_objects(row["prompt"]), tools=tools, tokenize=False,
                                         add_generation_prompt=True)
        assert whole.startswith(prompt), i
        want = whole[len(prompt):]
        # TRL appends the end-of-sequence token where the completion lacks it.
        trained = trained.removesuffix(tok.eos_token) if not want.endswith(trained) else trained
        if trained != want:
            # A token merged across the generation prompt's end (the king's
            # "<think>\n" + "\n</think>" gives one "\n\n"): KTO's tokenizing
            # counts it as completion, so the completion gains that whitespace.
            extra = trained[: len(trained) - len(want)]
            assert trained.endswith(want) and prompt.endswith(extra) and not extra.strip(), \
                (i, trained[:200], want[:200])
            boundary += 1
    positives = sum(1 for r in raw if r["label"])
    print(f"ok: {len(ds)} rows ({positives} desirable), each training exactly its completion; "
          f"{boundary} take a boundary token from the prompt")

if __name__ == "__main__":
    main()
