"""Load a turnlake verl export with verl's own datasets and check the loss.

rl.parquet through RLHFDataset (every row, its prompt a chat list);
sft.parquet through the shipped TrainFlagSFTDataset (python/turnlake_verl.py),
a subclass of verl's MultiTurnSFTDataset: for every row, the tokens in the
loss are exactly those of the messages flagged `train` (their content and
end of turn). The tokenizer is turnlake's shipped one with ChatML.

Usage: verl_datasets.py EXPORT_DIR TOKENIZER_JSON
"""

import pathlib
import sys

import pyarrow.parquet as pq
from transformers import PreTrainedTokenizerFast

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from turnlake_verl import TrainFlagSFTDataset  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402

CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def main() -> None:
    export, tokenizer_json = pathlib.Path(sys.argv[1]), sys.argv[2]
    tok = PreTrainedTokenizerFast(tokenizer_file=tokenizer_json, chat_template=CHATML,
                                  eos_token="<|im_end|>", pad_token="<|endoftext|>")
    rl = RLHFDataset(str(export / "rl.parquet"), tok, {"max_prompt_length": 1 << 20, "filter_overlong_prompts": False,
                                                       "cache_dir": str(export / "cache")})
    rows = pq.read_table(export / "rl.parquet").num_rows
    assert len(rl) == rows, (len(rl), rows)
    for i in range(len(rl)):
        assert isinstance(rl[i]["raw_prompt"], list) and rl[i]["raw_prompt"], i

    sft = TrainFlagSFTDataset(str(export / "sft.parquet"), tok,
                              {"pad_mode": "no_padding", "max_length": 1 << 20, "truncation": "error"})
    table = pq.read_table(export / "sft.parquet").column("messages").to_pylist()
    assert len(sft) == len(table)
    trained_rows = 0
    for i, messages in enumerate(table):
        item = sft[i]
        ids, mask = item["input_ids"], item["loss_mask"]
        got = tok.decode(ids[mask.bool()].tolist())
        want = "".join(m["content"] + "<|im_end|>\n" for m in messages if m["train"])
        assert got == want, (i, got[:200], want[:200])
        trained_rows += bool(want)
    assert trained_rows > 0, "no row trains anything"
    print(f"ok: {len(rl)} RL rows, {len(sft)} SFT rows, {trained_rows} with trained messages")


if __name__ == "__main__":
    main()
