"""BLIP's ``init_tokenizer`` (``models/blip.py``) and Qwen-1's chat formatting, small: special tokens added under the
old key, then looked up through ``tokenizer.additional_special_tokens_ids``; and a collator that assigns them.

Without zeropatch, on transformers >= 5.0:
  AttributeError: BertTokenizer has no attribute additional_special_tokens_ids
With `zeropatch run -- python repro.py` the ids are the tokens' own, as on transformers 4.x.
"""

import os
import sys
import tempfile

from transformers import BertTokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "photo", "of", "cat"]


def main():
    folder = tempfile.mkdtemp(prefix="repro-vocab-")
    with open(os.path.join(folder, "vocab.txt"), "w") as vocab:
        vocab.write("\n".join(VOCAB) + "\n")
    tokenizer = BertTokenizer(os.path.join(folder, "vocab.txt"))
    # BLIP's init_tokenizer
    tokenizer.add_special_tokens({"bos_token": "[DEC]"})
    tokenizer.add_special_tokens({"additional_special_tokens": ["[ENC]"]})
    enc_token_id = tokenizer.additional_special_tokens_ids[0]
    if enc_token_id != tokenizer.convert_tokens_to_ids("[ENC]") or enc_token_id < len(VOCAB):
        raise SystemExit(f"repro: [ENC] has id {enc_token_id}, not the one added for it")
    # Qwen-1's chat format reads its two markers back in order
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    im_start, im_end = tokenizer.additional_special_tokens_ids
    if tokenizer.additional_special_tokens != ["<|im_start|>", "<|im_end|>"]:
        raise SystemExit(f"repro: the additional special tokens are {tokenizer.additional_special_tokens}")
    encoded = tokenizer("<|im_start|> a photo of cat <|im_end|>", add_special_tokens=False)["input_ids"]
    if (encoded[0], encoded[-1]) != (im_start, im_end):
        raise SystemExit(f"repro: the markers were split: {encoded}")
    # assigned, as collators do: the tokens become special, and are never split
    tokenizer.additional_special_tokens = ["[ENC]"]
    if tokenizer.additional_special_tokens_ids != [enc_token_id] or "[ENC]" not in tokenizer.all_special_tokens:
        raise SystemExit("repro: the assigned additional special tokens are not the tokenizer's special tokens")
    print(f"repro: BLIP's [ENC] is token {enc_token_id}, Qwen's markers {im_start} and {im_end}, read and assigned")


if __name__ == "__main__":
    sys.exit(main())
