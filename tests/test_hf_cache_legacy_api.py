"""hf_cache_legacy_api on the real transformers cache: the 4.4x names answer as 4.57 (or 4.53) did, computed by hand
here; ``get_max_length`` answers each caller in the meaning it was written for; a subclass written for 4.36 keeps its
own count and lists; uninstall takes the names away. The repro decodes a 2024-style model with and without a cache."""

import ast

import pytest

from conftest import assert_ok, clean_environment, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (4, 54),
                                 reason="transformers >= 4.54 (the cache keeps layers, the 4.4x names are gone)")]

PAST = '''
import torch
from transformers.cache_utils import DynamicCache
torch.manual_seed(0)
past = tuple((torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)) for _ in range(2))
'''


def test_the_old_names_answer_as_before():
    assert_ok(run_python('import zeropatch' + PAST + '''
cache = DynamicCache.from_legacy_cache(past)
assert cache.get_seq_length() == 3 and cache.get_usable_length(5, 1) == 3 and cache.seen_tokens == 3
assert all(torch.equal(a, b) for pair, again in zip(past, cache.to_legacy_cache()) for a, b in zip(pair, again))
assert len(cache.to_legacy_cache()) == 2 and cache.to_legacy_cache()[1][0] is cache.layers[1].keys
assert torch.equal(cache[0][0], past[0][0]) and cache[-1][1] is cache.layers[1].values
try:
    cache[2]
except KeyError as error:
    assert "only has 2 layers" in str(error)
else:
    raise AssertionError("cache[2] of a 2-layer cache answered")
assert len(cache.key_cache) == 2 and cache.value_cache[1] is cache.layers[1].values
cache.key_cache[0] = torch.zeros(1, 2, 3, 4)  # written through to the layer, not to a copy
assert cache.layers[0].keys.abs().sum() == 0
cache.update(torch.ones(1, 2, 1, 4), torch.ones(1, 2, 1, 4), 0)
assert cache.seen_tokens == 4 and cache.get_usable_length(1) == 4
empty = DynamicCache.from_legacy_cache(None)
assert empty.seen_tokens == 0 and empty.to_legacy_cache() == ()
assert DynamicCache.from_legacy_cache.__qualname__ == "DynamicCache.from_legacy_cache"
assert DynamicCache.from_legacy_cache.__module__ == "transformers.cache_utils"
print("ok")
'''))


def test_a_subclass_written_for_4_36_keeps_its_own_count_and_lists():
    assert_ok(run_python('import zeropatch' + PAST + '''
class Own(DynamicCache):
    def __init__(self):
        super().__init__()
        self.seen_tokens = 0
        self.key_cache, self.value_cache = [], []
own = Own()
own.seen_tokens += 7
own.key_cache.append(past[0][0])
assert own.seen_tokens == 7 and own.key_cache == [past[0][0]] and own.value_cache == []
print("ok")
'''))


@pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5, 13), reason="5.13's get_max_length (-1)")
@pytest.mark.parametrize("legacy", ["", "transformers"])
def test_get_max_length_answers_each_caller_in_its_own_meaning(legacy, tmp_path):
    """A function that also reads seen_tokens was written before 5.13: None. transformers' own code: -1. Other code:
    -1 with a warning, unless declared legacy (None)."""
    assert_ok(run_python('import zeropatch' + PAST + '''
import sys, types
cache = DynamicCache.from_legacy_cache(past)
def written_in_2024(cache):
    return cache.seen_tokens, cache.get_max_length()
def other(cache):
    return cache.get_max_length()
inside = types.ModuleType("transformers.somewhere")
exec("def ask(cache):\\n    return cache.get_max_length()", inside.__dict__)
assert written_in_2024(cache) == (3, None) and written_in_2024(DynamicCache()) == (0, None)
assert inside.ask(cache) == -1
assert other(cache) == (None if sys.argv[1] else -1), other(cache)
assert cache.get_max_length(0) == -1  # a layer asked for: 5.13's call, 5.13's answer
print("ok")
''', legacy, env=clean_environment(ZEROPATCH_LEGACY=legacy), cwd=tmp_path))


def test_uninstall_takes_the_names_away():
    """After uninstall a DynamicCache answers exactly the names the release itself has."""
    names = ("from_legacy_cache", "to_legacy_cache", "seen_tokens", "get_usable_length", "get_max_length", "key_cache",
             "value_cache", "__getitem__")
    answered = f"""
import inspect
from transformers.cache_utils import DynamicCache
print(sorted(name for name in {names!r} if inspect.getattr_static(DynamicCache(), name, None) is not None))
"""
    native = run_python(answered, env=clean_environment(ZEROPATCH="0"))
    assert_ok(native)
    after = run_python("import zeropatch\nzeropatch.uninstall('hf_cache_legacy_api')" + answered,
                       env=clean_environment())
    assert_ok(after)
    assert after.stdout.splitlines()[-1] == native.stdout.splitlines()[-1], (after.stdout, native.stdout)
    installed = run_python("import zeropatch" + answered, env=clean_environment())
    assert_ok(installed)
    assert set(ast.literal_eval(installed.stdout.splitlines()[-1])) == set(names)  # all answered while installed
