"""verl's multi-turn SFT dataset, trained on turnlake's train turns only.

`turnlake export verl` writes sft.parquet with a `train` flag on every
message: true for the turns whose label is true. verl's MultiTurnSFTDataset
trains every assistant message; this subclass adds a message to the loss only
when its flag is true. Use it from verl's SFT trainer config:

    data.custom_cls.path=python/turnlake_verl.py
    data.custom_cls.name=TrainFlagSFTDataset
"""

from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset


class TrainFlagSFTDataset(MultiTurnSFTDataset):
    """MultiTurnSFTDataset whose loss mask leaves out messages with `train: false`."""

    def _process_single_message(self, index, message, full_message, tools=None, enable_thinking=None):
        input_ids, loss_mask, attention_mask, inputs = super()._process_single_message(
            index, message, full_message, tools=tools, enable_thinking=enable_thinking
        )
        if not message.get("train", True):
            loss_mask = loss_mask * 0
        return input_ids, loss_mask, attention_mask, inputs
