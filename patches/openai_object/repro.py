"""stanford_alpaca's utils.py (imported by its train.py, which never calls OpenAI) and the instruction-tuning repos
that copied it: `from openai import openai_object` at import, OpenAIObject in its types and its completion helper.

Without zeropatch, on openai >= 1.0:
  ImportError: cannot import name 'openai_object' from 'openai'
With `zeropatch run -- python repro.py` it runs: OpenAIObject is openai 0.28's data type (keys as attributes).
"""

import sys
from typing import Union

import openai  # noqa: F401  (as utils.py has it)
from openai import openai_object

StrOrOpenAIObject = Union[str, openai_object.OpenAIObject]


def completions_of(batch):
    """The bookkeeping of alpaca's openai_completion, on a response as openai 0.x returned it."""
    choices = batch.choices
    for choice in choices:
        choice["total_tokens"] = batch.usage.total_tokens
    return [choice.text for choice in choices], choices


def main():
    batch = openai_object.OpenAIObject.construct_from(
        {"id": "cmpl-1", "object": "text_completion", "choices": [{"text": " a", "index": 0}, {"text": " b", "index": 1}],
         "usage": {"total_tokens": 7}})
    texts, choices = completions_of(batch)
    if texts != [" a", " b"] or choices[1].total_tokens != 7 or not isinstance(choices[0], openai_object.OpenAIObject):
        sys.exit(f"repro: the response reads {texts}, {choices}")
    print(f"repro: alpaca's utils imported and its completion bookkeeping ran ({len(texts)} choices)")


if __name__ == "__main__":
    main()
