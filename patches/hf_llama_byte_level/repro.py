"""A 2023 fine-tuning script's tokenizer, `LlamaTokenizerFast.from_pretrained(path)` (alpaca-lora's
`LlamaTokenizer.from_pretrained` is the same class on transformers 5), pointed at a checkpoint of today's Llama family
whose tokenizer is byte-level BPE: Llama 3's layout, which DeepSeek-R1-Distill-Llama ships with
`"tokenizer_class": "LlamaTokenizerFast"`. A tiny tokenizer of that layout is trained here and saved.

Without zeropatch (transformers 5.0-5.24), no error: the tokenizer drops every space, and the ids differ from those of
the checkpoint's own tokenizer.json:
  repro: LlamaTokenizer lost the spaces: 'a cat in a garden' decodes to 'acatinagarden'
With `zeropatch run -- python repro.py` the ids are the file's own (4.x's LlamaTokenizerFast gave them), its
beginning-of-text token included, and every text decodes back to itself.
"""

import json
import os
import sys
import tempfile

import tokenizers
from tokenizers import decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaTokenizerFast

TEXTS = ["a cat in a garden", "The quick brown fox, 2 jumps!", "  spaces\tand\nnew lines  "]
BEGIN, END = "<|begin_of_text|>", "<|end_of_text|>"


def save_byte_level_checkpoint(folder):
    """Llama 3's tokenizer layout: a regex split, byte-level pre-tokenizer and decoder, a template adding BEGIN."""
    backend = tokenizers.Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(r"\s?\w+|\s?[^\w\s]+|\s+"), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=[BEGIN, END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(TEXTS * 10, trainer)
    backend.post_processor = processors.TemplateProcessing(single=f"{BEGIN} $A", pair=f"{BEGIN} $A {BEGIN} $B",
                                                           special_tokens=[(BEGIN, backend.token_to_id(BEGIN))])
    backend.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as file:
        json.dump({"tokenizer_class": "LlamaTokenizerFast", "bos_token": BEGIN, "eos_token": END}, file)
    return backend


def main():
    with tempfile.TemporaryDirectory() as folder:
        checkpoint = save_byte_level_checkpoint(folder)
        tokenizer = LlamaTokenizerFast.from_pretrained(folder)
    for text in TEXTS:
        ids = tokenizer(text).input_ids
        decoded = tokenizer.decode(ids, skip_special_tokens=True)
        if decoded != text:
            sys.exit(f"repro: {type(tokenizer).__name__} lost the spaces: {text!r} decodes to {decoded!r}")
        if ids != checkpoint.encode(text).ids:
            sys.exit(f"repro: {text!r} encodes to {ids}, the checkpoint's tokenizer to {checkpoint.encode(text).ids}")
    print(f"repro: {type(tokenizer).__name__} gave the checkpoint's own ids for {len(TEXTS)} texts, each decoding back")


if __name__ == "__main__":
    main()
