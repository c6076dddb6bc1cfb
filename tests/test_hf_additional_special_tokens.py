"""hf_additional_special_tokens on the real transformers: the same contract is asserted of 4.x's own properties (the
pinned session's 4.51.3, where the patch is not-needed) and of the restored ones on transformers 5: reading gives the
tokens added under the old key and their ids, assigning tokens or ids makes them special; uninstall takes them away;
`check` names a repository's reads."""

import sys

from conftest import ROOT, assert_ok, distribution_version, requires, run_command, run_python

pytestmark = requires("torch", "transformers")

CONTRACT = '''
import os, tempfile, zeropatch
from transformers import BertTokenizer
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "vocab.txt"), "w") as vocab:
    vocab.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]) + "\\n")
tokenizer = BertTokenizer(os.path.join(folder, "vocab.txt"))
assert tokenizer.additional_special_tokens == [] and tokenizer.additional_special_tokens_ids == []
tokenizer.add_special_tokens({"additional_special_tokens": ["<x>", "<y>"]})
ids = tokenizer.convert_tokens_to_ids(["<x>", "<y>"])
assert tokenizer.additional_special_tokens == ["<x>", "<y>"], tokenizer.additional_special_tokens
assert tokenizer.additional_special_tokens_ids == ids and min(ids) >= 7, (tokenizer.additional_special_tokens_ids, ids)
tokenizer.add_special_tokens({"additional_special_tokens": ["<z>"]}, replace_additional_special_tokens=False) \\
    if "replace_additional_special_tokens" in tokenizer.add_special_tokens.__code__.co_varnames else \\
    tokenizer.add_special_tokens({"additional_special_tokens": ["<z>"]}, replace_extra_special_tokens=False)
assert tokenizer.additional_special_tokens == ["<x>", "<y>", "<z>"], tokenizer.additional_special_tokens
tokenizer.additional_special_tokens_ids = ids[:1]
assert tokenizer.additional_special_tokens == ["<x>"], tokenizer.additional_special_tokens
tokenizer.additional_special_tokens = ["<y>"]
assert tokenizer.additional_special_tokens_ids == ids[1:] and "<y>" in tokenizer.all_special_tokens
assert "<x>" not in tokenizer.all_special_tokens and "additional_special_tokens" not in vars(tokenizer)
assert tokenizer.tokenize("a<y>b") == ["a", "<y>", "b"], tokenizer.tokenize("a<y>b")
print(zeropatch.status("hf_additional_special_tokens")[0].state)
'''


def test_the_old_names_keep_4x_contract():
    result = run_python(CONTRACT)
    assert_ok(result)
    expected = "not-needed" if distribution_version("transformers") < (5,) else "applied"
    assert result.stdout.strip() == expected, result.stdout


def test_uninstall_takes_the_properties_away():
    assert_ok(run_python('''
import zeropatch
from transformers.tokenization_utils_base import PreTrainedTokenizerBase as Base
if zeropatch.status("hf_additional_special_tokens")[0].state == "not-needed":
    assert "additional_special_tokens" in Base.SPECIAL_TOKENS_ATTRIBUTES  # answered by 4.x's __getattr__
    raise SystemExit(print("ok: 4.x has them"))
assert Base.additional_special_tokens.fget.__qualname__ == "PreTrainedTokenizerBase.additional_special_tokens"
zeropatch.uninstall("hf_additional_special_tokens")
assert not hasattr(Base, "additional_special_tokens") and not hasattr(Base, "additional_special_tokens_ids")
print("ok")
'''))


def test_check_names_the_reads(tmp_path):
    (tmp_path / "blip.py").write_text(
        "def init_tokenizer(tokenizer):\n"
        "    tokenizer.add_special_tokens({'additional_special_tokens': ['[ENC]']})\n"
        "    tokenizer.enc_token_id = tokenizer.additional_special_tokens_ids[0]\n"
        "    return tokenizer\n")
    result = run_command([sys.executable, "-m", "zeropatch", "check", tmp_path], cwd=ROOT)
    verdict = "fixed" if distribution_version("transformers") >= (5,) else "note"
    assert "blip.py:3" in result.stdout and "hf_additional_special_tokens" in result.stdout, result.stdout
    assert any(verdict in line for line in result.stdout.splitlines() if "blip.py:3" in line), result.stdout
