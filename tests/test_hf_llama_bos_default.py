"""hf_llama_bos_default on the real transformers (5.24 in the today session; the sweep runs 4.46-5.23, 4.x giving the
ids without zeropatch): a SentencePiece checkpoint that does not give add_bos_token begins every text with <s> through
every way a script loads it, said once; a value the checkpoint or the call gives, and a tokenizer.json checkpoint, are
left exactly as transformers loads them."""

from conftest import ROOT, assert_ok, clean_environment, distribution_version, requires, run_python

pytestmark = requires("transformers", "sentencepiece", "google.protobuf")  # what reads a tokenizer.model

REPRO = ROOT / "patches" / "hf_llama_bos_default"
WARNING = "hf_llama_bos_default: LlamaTokenizer adds '<s>'"
TRANSFORMERS_5 = distribution_version("transformers") >= (5,)
CHECKPOINT = f'''
import json, os, sys, tempfile
sys.path.insert(0, {str(REPRO)!r})
from repro import TEXTS, save_sentencepiece_checkpoint
folder = tempfile.mkdtemp()
save_sentencepiece_checkpoint(folder)
'''


def test_a_checkpoint_that_does_not_give_add_bos_token_begins_every_text_with_bos():
    result = run_python(CHECKPOINT + f'''
import sentencepiece, zeropatch
from transformers import AutoTokenizer, LlamaTokenizer
model = sentencepiece.SentencePieceProcessor(model_file=os.path.join(folder, "tokenizer.model"))
for loader in (LlamaTokenizer, AutoTokenizer):
    tokenizer = loader.from_pretrained(folder)
    assert tokenizer.add_bos_token, loader
    for text in TEXTS:  # LLaMA's own SentencePiece ids after <s>, as transformers 4 encoded them
        assert tokenizer(text).input_ids == [1] + model.encode(text), (loader, text, tokenizer(text).input_ids)
    assert tokenizer("a", "b").input_ids == [1, *model.encode("a"), 1, *model.encode("b")], loader
state = zeropatch.status("hf_llama_bos_default")[0].state
assert state == {"applied" if TRANSFORMERS_5 else "not-needed"!r}, state
print("ok")
''')
    assert_ok(result)
    assert result.stderr.count(WARNING) == (1 if TRANSFORMERS_5 else 0), result.stderr[-3000:]


def test_a_value_given_and_a_tokenizer_json_checkpoint_load_as_without_zeropatch():
    code = CHECKPOINT + '''
from transformers import LlamaTokenizer
said = os.path.join(tempfile.mkdtemp(), "said")
os.makedirs(said)
for name in ("tokenizer.model", "tokenizer_config.json"):
    os.link(os.path.join(folder, name), os.path.join(said, name))
config = json.load(open(os.path.join(folder, "tokenizer_config.json")))
os.remove(os.path.join(said, "tokenizer_config.json"))
json.dump(dict(config, add_bos_token=False), open(os.path.join(said, "tokenizer_config.json"), "w"))
converted = os.path.join(tempfile.mkdtemp(), "converted")
LlamaTokenizer.from_pretrained(folder, add_bos_token=True).save_pretrained(converted)  # writes a tokenizer.json
for path, given in ((said, {}), (folder, {"add_bos_token": False}), (converted, {})):
    tokenizer = LlamaTokenizer.from_pretrained(path, **given)
    print(tokenizer("a cat in a garden").input_ids, tokenizer("a", "b").input_ids)
if "zeropatch" in sys.modules:
    print("hf_llama_bos_default:", sys.modules["zeropatch"].status("hf_llama_bos_default")[0].state, file=sys.stderr)
'''
    plain = run_python(code, env=clean_environment(ZEROPATCH="0"))
    patched = run_python(code, env=clean_environment(ZEROPATCH="1"))
    assert_ok(plain)
    assert_ok(patched)
    assert patched.stdout == plain.stdout
    assert f"hf_llama_bos_default: {'applied' if TRANSFORMERS_5 else 'not-needed'}" in patched.stderr
    assert WARNING not in patched.stderr, patched.stderr[-2000:]
