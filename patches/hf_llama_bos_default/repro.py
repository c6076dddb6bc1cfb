"""alpaca-lora's `finetune.py` tokenizes its prompts with `LlamaTokenizer.from_pretrained(base_model)`; its default
base model, decapoda-research/llama-7b-hf (a conversion of March 2023), ships a SentencePiece `tokenizer.model`, no
`tokenizer.json`, and a `tokenizer_config.json` that does not mention `add_bos_token`. A tiny checkpoint of that
layout is trained here (SentencePiece BPE with byte fallback, as LLaMA's) and loaded the same way.

Without zeropatch (transformers 5.0-5.24; sentencepiece and protobuf installed, which read the model), no error: the
prompts are encoded without LLaMA's `<s>`, which transformers 4 added:
  repro: LlamaTokenizer added no beginning-of-sequence token: 'a cat in a garden' -> [260, 273, ...]
With `zeropatch run -- python repro.py` every text starts with `<s>` (id 1), as with transformers 4.51.3.
"""

import json
import os
import sys
import tempfile

import sentencepiece
from transformers import LlamaTokenizer

TEXTS = ["a cat in a garden", "hello world", "the quick brown fox jumps over the lazy dog"]


def save_sentencepiece_checkpoint(folder):
    """decapoda-research/llama-7b-hf's layout: tokenizer.model and a tokenizer_config.json without add_bos_token."""
    corpus = os.path.join(folder, "corpus.txt")
    with open(corpus, "w") as file:
        file.write("\n".join(TEXTS * 50))
    sentencepiece.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(folder, "tokenizer"), vocab_size=300, model_type="bpe",
        byte_fallback=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2)
    os.remove(os.path.join(folder, "tokenizer.vocab"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as file:
        json.dump({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
                  file)


def main():
    with tempfile.TemporaryDirectory() as folder:
        save_sentencepiece_checkpoint(folder)
        tokenizer = LlamaTokenizer.from_pretrained(folder)
    for text in TEXTS:
        ids = tokenizer(text).input_ids
        if ids[0] != tokenizer.bos_token_id:
            sys.exit(f"repro: LlamaTokenizer added no beginning-of-sequence token: {text!r} -> {ids}")
        if tokenizer.decode(ids, skip_special_tokens=True).strip() != text:
            sys.exit(f"repro: {text!r} decodes to {tokenizer.decode(ids, skip_special_tokens=True)!r}")
    print(f"repro: LlamaTokenizer began each of {len(TEXTS)} texts with {tokenizer.bos_token} "
          f"(id {tokenizer.bos_token_id}), as transformers 4 did")


if __name__ == "__main__":
    main()
