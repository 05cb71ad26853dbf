"""verl's multi-turn SFT dataset, trained on turnlake's train turns only.

`turnlake export verl` writes sft.parquet with a `train` flag on every
message: true for the turns whose label is true. verl's MultiTurnSFTDataset
trains every assistant message; this subclass adds a message to the loss only
when its flag is true. It also gives the chat template what templates take:
the run's `tools` (stored as JSON text) as a list, and each tool call's
`arguments` (recorded as JSON text) as an object. Use it from verl's SFT
trainer config:

    data.custom_cls.path=python/turnlake_verl.py
    data.custom_cls.name=TrainFlagSFTDataset

verl renders each message on its own and checks that the pieces concatenate
to the whole conversation; a template that refuses a lone message (the
Albedo king's raises "System message must be at the beginning." or "No user
query found") cannot be used this way: export `--for trl` or `--for axolotl`
for it instead.
"""

import json

from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset


class TrainFlagSFTDataset(MultiTurnSFTDataset):
    """MultiTurnSFTDataset whose loss mask leaves out messages with `train: false`."""

    def _read_files_and_process(self):
        super()._read_files_and_process()
        if self.tools is not None:
            # JSON text, or null (pandas' NA) for a run without tools.
            self.tools = [json.loads(t) if isinstance(t, str) else None for t in self.tools]

    def _build_messages(self, example):
        messages = super()._build_messages(example)
        for message in messages:
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                if isinstance(function.get("arguments"), str):
                    function["arguments"] = json.loads(function["arguments"])
        return messages

    def _process_single_message(self, index, message, full_message, tools=None, enable_thinking=None):
        input_ids, loss_mask, attention_mask, inputs = super()._process_single_message(
            index, message, full_message, tools=tools, enable_thinking=enable_thinking
        )
        if not message.get("train", True):
            loss_mask = loss_mask * 0
        return input_ids, loss_mask, attention_mask, inputs
