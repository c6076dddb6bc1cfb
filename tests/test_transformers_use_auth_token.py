"""transformers_use_auth_token on the real transformers 5: the value reaches every loader as ``token`` (seen by the
hub download it makes), None is dropped, both given is refused with 4.x's message."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5,), reason="transformers >= 5")]


def test_use_auth_token_reaches_the_hub_as_token(tmp_path):
    assert_ok(run_python(f'''
import zeropatch, transformers.utils.hub as hub
from transformers import AutoConfig, AutoModel, BertConfig, BertModel
BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                     vocab_size=10)).save_pretrained({str(tmp_path)!r})
tokens = []
original = hub.cached_files
def spy(*args, **kwargs):
    tokens.append(kwargs.get("token"))
    return original(*args, **kwargs)
hub.cached_files = spy
AutoConfig.from_pretrained({str(tmp_path)!r}, use_auth_token="hf_old")
AutoModel.from_pretrained({str(tmp_path)!r}, use_auth_token="hf_old")
BertModel.from_pretrained({str(tmp_path)!r}, use_auth_token=None)
assert "hf_old" in tokens, tokens
try:
    BertModel.from_pretrained({str(tmp_path)!r}, use_auth_token="a", token="b")
except ValueError as error:
    assert "Please set only the argument `token`" in str(error)
else:
    raise AssertionError("both accepted")
print("ok", tokens)
'''))
