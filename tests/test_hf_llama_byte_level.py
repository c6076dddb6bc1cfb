"""hf_llama_byte_level on the real transformers (5.24 in one session, 4.51.3 in another; the sweep runs 4.46-5.23): a
byte-level BPE checkpoint declaring LlamaTokenizerFast gets its own tokenizer.json's ids through every way a script
loads it, the class kept and the decision said once, as transformers 4 gave them without zeropatch (not-needed there);
a SentencePiece one (Metaspace) gets the very backend it got without zeropatch."""

from conftest import ROOT, assert_ok, clean_environment, distribution_version, requires, run_python

pytestmark = requires("transformers", "tokenizers")

REPRO = ROOT / "patches" / "hf_llama_byte_level"
WARNING = "hf_llama_byte_level: LlamaTokenizer loads"
TRANSFORMERS_5 = distribution_version("transformers") >= (5,)  # where LlamaTokenizerFast is LlamaTokenizer
STATE = "applied" if TRANSFORMERS_5 else "not-needed"


def test_every_way_of_loading_gives_the_files_ids_and_keeps_the_class():
    result = run_python(f'''
import sys, tempfile, zeropatch
sys.path.insert(0, {str(REPRO)!r})
from repro import TEXTS, save_byte_level_checkpoint
from transformers import AutoTokenizer, LlamaTokenizer, LlamaTokenizerFast
folder = tempfile.mkdtemp()
checkpoint = save_byte_level_checkpoint(folder)
# transformers 4's LlamaTokenizer is the SentencePiece class, which needs a tokenizer.model: not for this checkpoint
for loader in (LlamaTokenizer, LlamaTokenizerFast, AutoTokenizer)[0 if {TRANSFORMERS_5!r} else 1:]:
    tokenizer = loader.from_pretrained(folder)
    if loader is not AutoTokenizer:  # (5.23 and later send AutoTokenizer to TokenizersBackend themselves)
        assert isinstance(tokenizer, LlamaTokenizerFast), type(tokenizer)
    for text in TEXTS:
        assert tokenizer(text).input_ids == checkpoint.encode(text).ids, (loader, text)
        assert tokenizer.decode(tokenizer(text).input_ids, skip_special_tokens=True) == text, (loader, text)
assert zeropatch.status("hf_llama_byte_level")[0].state == {STATE!r}
print("ok")
''')
    assert_ok(result)
    assert result.stderr.count(WARNING) == (1 if TRANSFORMERS_5 else 0), result.stderr[-3000:]


SENTENCEPIECE_CHECKPOINT = '''
import json, os, sys, tempfile
import tokenizers
from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers
folder = tempfile.mkdtemp()
backend = tokenizers.Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\\u2581", prepend_scheme="first", split=False)
backend.decoder = decoders.Sequence([decoders.Replace("\\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(content=" ", left=1)])
backend.train_from_iterator(["a cat in a garden", "hello world"] * 10,
                            trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<s>", "</s>"]))
backend.save(os.path.join(folder, "tokenizer.json"))
json.dump({"tokenizer_class": "LlamaTokenizerFast"}, open(os.path.join(folder, "tokenizer_config.json"), "w"))
from transformers import LlamaTokenizerFast
tokenizer = LlamaTokenizerFast.from_pretrained(folder)
print(tokenizer("a cat in a garden").input_ids, tokenizer.backend_tokenizer.to_str())
if "zeropatch" in sys.modules:
    print("hf_llama_byte_level:", sys.modules["zeropatch"].status("hf_llama_byte_level")[0].state, file=sys.stderr)
'''


def test_a_sentencepiece_checkpoint_loads_exactly_as_without_zeropatch():
    plain = run_python(SENTENCEPIECE_CHECKPOINT, env=clean_environment(ZEROPATCH="0"))
    patched = run_python(SENTENCEPIECE_CHECKPOINT, env=clean_environment(ZEROPATCH="1"))
    assert_ok(plain)
    assert_ok(patched)
    assert f"hf_llama_byte_level: {STATE}" in patched.stderr, patched.stderr[-2000:]
    assert patched.stdout == plain.stdout
    assert WARNING not in patched.stderr, patched.stderr[-2000:]
