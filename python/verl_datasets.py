"""Load a turnlake verl export with verl's own datasets and check the loss.

rl.parquet through RLHFDataset (every row, its prompt a chat list that
verl's own length filter renders with the tokenizer's template: a row the
template cannot render would be filtered out); sft.parquet through the
shipped TrainFlagSFTDataset (python/turnlake_verl.py), a subclass of verl's
MultiTurnSFTDataset: for every row, the tokens in the loss are exactly those
of the messages flagged `train` (their content and end of turn).

With ChatML (turnlake's shipped tokenizer) both files load. With a model
folder (the Albedo king's template) rl.parquet loads, and the multi-turn SFT
dataset refuses as turnlake_verl.py documents: verl renders each message on
its own, which that template does not allow.

Usage: verl_datasets.py EXPORT_DIR chatml TOKENIZER_JSON
       verl_datasets.py EXPORT_DIR model MODEL_DIR
"""

import pathlib
import sys

import pyarrow.parquet as pq
from jinja2.exceptions import TemplateError

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from chat_template_ids import tokenizer  # noqa: E402
from turnlake_verl import TrainFlagSFTDataset  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402



def main() -> None:
    export, mode, source = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    tok = tokenizer(mode, source)
    rl = RLHFDataset(str(export / "rl.parquet"), tok, {"max_prompt_length": 1 << 20, "filter_overlong_prompts": True,
                                                       "filter_overlong_prompts_workers": 1,
                                                       "cache_dir": str(export / "cache")})
    rows = pq.read_table(export / "rl.parquet").num_rows
    assert len(rl) == rows, (len(rl), rows)
    for i in range(len(rl)):
        assert isinstance(rl[i]["raw_prompt"], list) and rl[i]["raw_prompt"], i

    config = {"pad_mode": "no_padding", "max_length": 1 << 20, "truncation": "error"}
    if mode != "chatml":
        try:
            sft = TrainFlagSFTDataset(str(export / "sft.parquet"), tok, config)
            sft[0]
        except Exception as e:
            # The template's own raise_exception (verl may wrap it).
            refusal = e if isinstance(e, TemplateError) else e.__cause__ or e.__context__
            assert isinstance(refusal, TemplateError), repr(e)
            print(f"ok: {len(rl)} RL rows; the multi-turn SFT dataset refuses the template: {refusal}")
            return
        raise AssertionError("the multi-turn SFT dataset rendered the model's template message by message")
    sft = TrainFlagSFTDataset(str(export / "sft.parquet"), tok, config)
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
