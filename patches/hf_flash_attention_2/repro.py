"""LLaVA's train_mem.py, `train(attn_implementation="flash_attention_2")`, which loads its LLaMA with
`from_pretrained(path, attn_implementation=attn_implementation)`, on a machine where flash-attn 2 cannot run (no
build for today's torch; any CPU). A tiny LLaMA is saved, loaded that way, and trained one step on a padded batch.

Without zeropatch:
  ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: the package
  for FlashAttention2 doesn't seem to be installed.   (4.46-4.51: "the package flash_attn seems to be not installed")
With `zeropatch run -- python repro.py` it loads with transformers' sdpa attention: on the padded batch its logits
equal those of the same weights loaded with the eager attention (the same softmax(QK^T / sqrt(d)) V, written out in
plain torch), and it trains.
"""

import sys
import tempfile

import torch
import transformers


def main():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    batch = {"input_ids": torch.randint(1, 64, (2, 9)),
             "attention_mask": torch.tensor([[1] * 9, [0, 0, 0] + [1] * 6])}  # left-padded, as generation pads
    with tempfile.TemporaryDirectory() as folder:
        transformers.LlamaForCausalLM(config).save_pretrained(folder)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="flash_attention_2")
        eager = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager")
    kept = batch["attention_mask"].bool()
    with torch.no_grad():
        difference = (model(**batch).logits - eager(**batch).logits)[kept].abs().max().item()
    if difference > 1e-5:
        sys.exit(f"repro: the loaded model's attention is not the eager attention (largest difference {difference})")
    before = [parameter.detach().clone() for parameter in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(**batch, labels=batch["input_ids"].masked_fill(~kept, -100)).loss.backward()
    optimizer.step()
    if all(torch.equal(old, new) for old, new in zip(before, model.parameters())):
        sys.exit("repro: the step changed no weight")
    print(f"repro: the flash_attention_2 model loaded with {model.config._attn_implementation} attention, equal to the "
          f"eager one on a padded batch, and trained a step")


if __name__ == "__main__":
    main()
