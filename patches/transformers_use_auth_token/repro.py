"""A 2023 fine-tuning script: every load passes the token the old way (use_auth_token=True: "use my stored token").

Without zeropatch, on transformers >= 5:
  TypeError: BertForSequenceClassification.__init__() got an unexpected keyword argument 'use_auth_token'
With `zeropatch run -- python repro.py` it means token=True again and the model loads.
"""

import tempfile

import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, BertConfig, BertForSequenceClassification

with tempfile.TemporaryDirectory() as folder:
    torch.manual_seed(0)
    saved = BertForSequenceClassification(BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                                     intermediate_size=16, vocab_size=32, num_labels=3))
    saved.save_pretrained(folder)
    config = AutoConfig.from_pretrained(folder, use_auth_token=True)
    if hasattr(config, "use_auth_token"):
        raise SystemExit("repro: the config kept the token as an attribute")
    model = AutoModelForSequenceClassification.from_pretrained(folder, config=config, use_auth_token=True)
    if not all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), saved.state_dict().values())):
        raise SystemExit("repro: the loaded model's weights differ from those saved")
print("repro: config and model loaded with use_auth_token=True")
