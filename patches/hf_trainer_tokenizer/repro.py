"""alpaca-lora's Trainer call, small: ``Trainer(model=..., tokenizer=tokenizer, args=..., data_collator=
DataCollatorForSeq2Seq(tokenizer, padding=True))``, two steps on a tiny LLaMA, then ``trainer.tokenizer`` read back
(FastChat and LLaVA read it) and ``trainer.save_model()``, which saves the tokenizer beside the weights.

Without zeropatch, on transformers >= 5:
  TypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'
With `zeropatch run -- python repro.py` the tokenizer is the processing class, as on transformers 4.
"""

import os
import sys
import tempfile

import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers


def tiny_tokenizer():
    vocabulary = {word: index for index, word in enumerate(["<pad>", "<unk>", *"abcdefghijklmnopqrstuvwxyz"])}
    backend = Tokenizer(models.WordLevel(vocab=vocabulary, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>")


def main():
    torch.manual_seed(0)
    tokenizer = tiny_tokenizer()
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16)
    model = transformers.LlamaForCausalLM(config)
    texts = ["a b c", "d e f g h", "i j", "k l m n"]
    data = [dict(tokenizer(text), labels=tokenizer(text)["input_ids"]) for text in texts]
    output = tempfile.mkdtemp(prefix="zeropatch-repro-")
    args = transformers.TrainingArguments(output_dir=output, max_steps=2, per_device_train_batch_size=2,
                                          save_strategy="no", report_to=[], use_cpu=True, logging_steps=1)
    collator = transformers.DataCollatorForSeq2Seq(tokenizer, return_tensors="pt", padding=True)
    trainer = transformers.Trainer(model=model, tokenizer=tokenizer, args=args, train_dataset=data, data_collator=collator)
    if trainer.tokenizer is not tokenizer:
        raise SystemExit("repro: trainer.tokenizer is not the tokenizer passed")
    trainer.train()
    trainer.save_model(output)
    if not os.path.exists(os.path.join(output, "tokenizer.json")):
        raise SystemExit("repro: save_model wrote no tokenizer")
    print(f"repro: Trainer(tokenizer=...) trained {trainer.state.global_step} steps and saved the tokenizer")


if __name__ == "__main__":
    sys.exit(main())
