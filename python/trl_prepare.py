"""Prepare a turnlake `export sft --for trl` file with TRL's own SFT data code.

TRL's SFTTrainer._prepare_dataset tokenizes each conversational
prompt/completion pair through the tokenizer's chat template and marks the
completion's tokens (`completion_mask`), which completion_only_loss trains.
For every pair the masked tokens must be exactly the completion as the
template renders it after the prompt's generation prompt.

Usage: trl_prepare.py PAIRS.jsonl chatml TOKENIZER_JSON
       trl_prepare.py PAIRS.jsonl model MODEL_DIR
"""

import json
import pathlib
import sys
import tempfile

from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from chat_template_ids import tokenizer, with_argument_objects  # noqa: E402



def main() -> None:
    pairs, mode, source = sys.argv[1], sys.argv[2], sys.argv[3]
    tok = tokenizer(mode, source)
    dataset = load_dataset("json", data_files=pairs, split="train")
    dataset = dataset.map(lambda p: {"prompt": with_argument_objects(p["prompt"]),
                                     "completion": with_argument_objects(p["completion"])})
    # TRL's own preparation, without a model: the trainer's data step alone.
    trainer = SFTTrainer.__new__(SFTTrainer)
    trainer._is_vlm = False
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(output_dir=out, report_to=[], completion_only_loss=True, use_cpu=True, bf16=False,
                         max_length=None)
        prepared = SFTTrainer._prepare_dataset(trainer, dataset, tok, args, False, None, "train")
    raw = [json.loads(line) for line in open(pairs)]
    assert len(prepared) == len(raw), (len(prepared), len(raw))
    boundary = 0
    for i, (example, pair) in enumerate(zip(prepared, raw)):
        ids, mask = example["input_ids"], example["completion_mask"]
        trained = tok.decode([t for t, m in zip(ids, mask) if m])
        whole = tok.apply_chat_template(with_argument_objects(pair["prompt"] + pair["completion"]),
                                        tools=pair.get("tools"), tokenize=False)
        prompt = tok.apply_chat_template(with_argument_objects(pair["prompt"]), tools=pair.get("tools"),
                                         tokenize=False, add_generation_prompt=True)
        assert whole.startswith(prompt), i
        want = whole[len(prompt):]
        if trained != want:
            # A token merged across the generation prompt's end (the king's
            # "<think>\n" + "\n</think>" gives one "\n\n"): TRL counts it
            # as prompt, so the completion loses that whitespace.
            assert want.endswith(trained) and not want[: len(want) - len(trained)].strip(), (i, trained[:200], want[:200])
            boundary += 1
        assert pair["completion"][0]["content"].strip() in trained, i
    print(f"ok: {len(prepared)} pairs, each training its completion; {boundary} lose a boundary token to the prompt")


if __name__ == "__main__":
    main()
