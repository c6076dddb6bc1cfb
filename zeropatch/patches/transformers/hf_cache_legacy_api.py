"""hf_cache_legacy_api: the key-value cache API that 2024 model code calls (``get_usable_length``, ``seen_tokens``,
``from_legacy_cache`` / ``to_legacy_cache``, ``key_cache``, ``get_max_length``) is back, with its last meaning.

Breaks: the Hub's remote-code models of 2024 (Phi-3, MiniCPM, InternLM2, DeepSeek-V2, Qwen forks; copies vendored in
InternVL, LLaVA-style repositories) were written against transformers 4.36-4.45's ``DynamicCache``, which transformers
then took apart: ``get_max_length`` went in 4.49.0, ``seen_tokens`` and ``get_usable_length`` in 4.54.0, the
``key_cache`` / ``value_cache`` lists in 4.56.0, ``from_legacy_cache`` / ``to_legacy_cache`` and indexing a cache in
5.0.0 ("AttributeError: 'DynamicCache' object has no attribute 'get_usable_length'", "... 'seen_tokens'", "...
'from_legacy_cache'", "'DynamicCache' object is not subscriptable"). Silently, 5.13.0 brought ``get_max_length`` back
meaning something else: -1, not None, for a cache without a maximum. The 2024 ``prepare_inputs_for_generation``
(``if max_cache_length is not None and cache_length + new > max_cache_length: attention_mask =
attention_mask[:, -max_cache_length:]``) then cuts the first token out of the mask at every step, with no error.

Changes, each only where the installed release lacks the name:
- ``Cache.get_usable_length(new_seq_length, layer_idx=0)``: 4.53's arithmetic - the cached length of the layer, or
  ``max - new_seq_length`` where a cache with a maximum would overflow.
- ``Cache.seen_tokens``: the tokens the cache has seen (its length on layer 0, which counts every token a sliding
  layer has seen); a subclass that keeps its own count, as 4.36's did, sets and reads it as before.
- ``Cache.get_max_length()``: None for a cache without a maximum, else its length (4.48's contract).
- ``Cache.key_cache`` / ``value_cache``: the per-layer key and value tensors as a list that reads and writes the
  layers; a subclass that assigns its own lists keeps them.
- ``DynamicCache.from_legacy_cache(past_key_values=None)`` / ``to_legacy_cache()``: a cache from (and to) a tuple of
  (key, value) per layer, built through ``update`` as 4.57 built it; ``Cache[i]``: layer i's (key, value).
Where ``get_max_length`` is the 5.13 one, it keeps its meaning for transformers itself and for code written for
today's release; it answers None for no maximum to code written for an older one: a calling function that also
uses ``seen_tokens`` or ``get_usable_length`` (gone before 5.13, so written before it), or code that pins or declares
an older transformers (``ZEROPATCH_LEGACY``, as for ``hf_checkpoint_dtype``). The decision is in the job report.
Not restored: iterating a DynamicCache yields (key, value, sliding window) since 5.0 (DataParallel relies on it);
``crop(max_length)``, whose argument means tokens to remove since 5.15.
"""

import inspect
import operator
import sys

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, version_tuple, warn_once
from zeropatch._legacy import Tally, decide

MAX_LENGTH_CHANGED_IN = "5.13"  # get_max_length came back, -1 (not None) meaning no maximum
PRE_5_13_NAMES = frozenset({"seen_tokens", "get_usable_length"})  # a function naming these was written before 5.13
_TALLY = Tally()
_decisions = {}  # code object -> (legacy, why): one decision per calling function
_native = {}  # "maximum": the installed release's own reading of a cache's maximum on layer 0 (set by apply)


class _LayerTensors:
    """``cache.key_cache`` / ``value_cache``: the layers' ``keys`` (or ``values``), read and written in place."""

    __slots__ = ("_layers", "_field")

    def __init__(self, layers, field):
        self._layers, self._field = layers, field

    def __len__(self):
        return len(self._layers)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [getattr(layer, self._field) for layer in self._layers[index]]
        return getattr(self._layers[index], self._field)

    def __setitem__(self, index, tensor):
        setattr(self._layers[index], self._field, tensor)

    def __iter__(self):
        return (getattr(layer, self._field) for layer in self._layers)

    def __repr__(self):
        return repr(list(self))


def _layer_tensors(field):
    name = f"{field}_cache"

    def read(self):
        own = vars(self).get(name)  # a subclass written for 4.4x keeps its own lists
        return own if own is not None else _LayerTensors(self.layers, field + "s")

    def write(self, value):
        vars(self)[name] = value

    return property(read, write, doc=f"Each layer's {field} tensor (transformers < 4.56's ``{name}``).")


def _cache_maximum(cache):
    """The cache's maximum length on layer 0, None where it has none (the contract before 5.13)."""
    if getattr(cache, "layers", None) == []:  # a DynamicCache before its first update (5.13's max() of nothing fails)
        return None
    value = _native["maximum"](cache)
    return None if value is None or value < 0 else value


def get_usable_length(self, new_seq_length, layer_idx=0):
    previous = self.get_seq_length(layer_idx)
    maximum = _cache_maximum(self)
    if maximum is not None and previous + new_seq_length > maximum:
        return maximum - new_seq_length
    return previous


def _read_seen_tokens(self):
    own = vars(self).get("_seen_tokens")
    return own if own is not None else self.get_seq_length()


def _write_seen_tokens(self, value):
    vars(self)["_seen_tokens"] = value


def get_max_length(self):
    return _cache_maximum(self)


def from_legacy_cache(cls, past_key_values=None):
    cache = cls()
    for layer_idx, (key, value) in enumerate(past_key_values or ()):
        cache.update(key, value, layer_idx)
    return cache


def to_legacy_cache(self):
    return tuple((layer.keys, layer.values) for layer in self.layers)


def layer_pair(self, layer_idx):
    if not -len(self.layers) <= layer_idx < len(self.layers):
        raise KeyError(f"Cache only has {len(self.layers)} layers, attempted to access layer with index {layer_idx}")
    layer = self.layers[layer_idx]
    return layer.keys, layer.values


def _caller():
    """The frame of the code that called the cache method (past wrapt's and zeropatch's own frames)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in ("wrapt", "zeropatch"):
        frame = frame.f_back
    return frame


def _written_before_5_13(code):
    if code not in _decisions:
        if PRE_5_13_NAMES & set(code.co_names):
            _decisions[code] = (True, f"{code.co_name} also uses {', '.join(sorted(PRE_5_13_NAMES & set(code.co_names)))}, "
                                      f"gone before 5.13")
        else:
            # legacy decision: a changed default (get_max_length() -1, not None, for no maximum since 5.13), which
            # code written for 5.13 relies on; the removed names need none (gone, no new code reads them)
            decision = decide("transformers", MAX_LENGTH_CHANGED_IN)
            _decisions[code] = (decision.legacy, decision.why)
    return _decisions[code]


def _max_length_as_the_caller_expects(wrapped, instance, args, kwargs):
    frame = _caller()
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    if frame is None or args or kwargs or module == "transformers" or module.startswith("transformers."):
        return wrapped(*args, **kwargs)
    legacy, why = _written_before_5_13(frame.f_code)
    if not legacy:
        _TALLY.count("get_max_length: -1 for no maximum (5.13)")
        warn_once(f"hf_cache_legacy_api: {frame.f_code.co_name} ({module}) gets get_max_length() -1 for a cache without "
                  f"a maximum, transformers 5.13's meaning; before 5.13 it was None, and 2024 model code given -1 cuts "
                  f"its attention mask ({why})")
        return wrapped(*args, **kwargs)
    _TALLY.count("get_max_length: None for no maximum (before 5.13)")
    inform_once(f"hf_cache_legacy_api: {frame.f_code.co_name} ({module}) gets get_max_length() None for a cache "
                f"without a maximum, as before transformers 5.13 ({why})")
    return _cache_maximum(instance)


def report():
    return _TALLY.report("get_max_length() as the calling code expects: None (before 5.13) or -1 (5.13)"
                         if _TALLY.counts else None)


def _native_maximum(cache_class):
    """How the installed release reads a cache's maximum on layer 0 (each cache class its own way): 5.13's
    get_max_length, else get_max_cache_shape (4.46-5.19), which took a layer index from 4.54."""
    name = "get_max_length" if "get_max_length" in vars(cache_class) else "get_max_cache_shape"
    takes_a_layer = "layer_idx" in inspect.signature(getattr(cache_class, name)).parameters
    return operator.methodcaller(name, 0) if takes_a_layer else operator.methodcaller(name)


def _has(owner, name):
    """Whether ``owner`` has ``name``, without running it (4.39-4.53's ``seen_tokens`` warns when read)."""
    return inspect.getattr_static(owner, name, _has) is not _has


def apply(patcher, cache_utils):
    cache, dynamic = getattr(cache_utils, "Cache", None), getattr(cache_utils, "DynamicCache", None)
    if cache is None or dynamic is None or not hasattr(cache, "get_seq_length"):
        raise Skip("transformers.cache_utils has no Cache / DynamicCache with get_seq_length")
    if not hasattr(cache, "get_max_length") and not hasattr(cache, "get_max_cache_shape"):
        raise Skip("Cache has neither get_max_length nor get_max_cache_shape to read a maximum from")
    on_cache = {"get_usable_length": get_usable_length, "seen_tokens": property(_read_seen_tokens, _write_seen_tokens),
                "get_max_length": get_max_length, "key_cache": _layer_tensors("key"),
                "value_cache": _layer_tensors("value"), "__getitem__": layer_pair}
    on_dynamic = {"from_legacy_cache": classmethod(from_legacy_cache), "to_legacy_cache": to_legacy_cache}
    probe = dynamic()  # what legacy code asks: a DynamicCache (4.4x kept key_cache on the instance)
    missing_on_cache = {name: value for name, value in on_cache.items() if not _has(probe, name)}
    missing_on_dynamic = {name: value for name, value in on_dynamic.items() if not _has(dynamic, name)}
    import transformers

    max_length_changed = version_tuple(transformers.__version__) >= version_tuple(MAX_LENGTH_CHANGED_IN)
    if not (missing_on_cache or missing_on_dynamic or max_length_changed):
        raise NotNeeded("transformers' Cache still has the 4.4x API")
    native_max_length = "get_max_length" in vars(cache)
    _native["maximum"] = _native_maximum(cache)  # before get_max_length is put back or wrapped
    patcher.add_methods(cache, missing_on_cache)
    patcher.add_methods(dynamic, missing_on_dynamic)
    done = sorted(missing_on_cache) + sorted(missing_on_dynamic)
    if max_length_changed and native_max_length:
        patcher.wrap(cache, "get_max_length", _max_length_as_the_caller_expects)
        done.append("get_max_length as the caller expects")
    return ", ".join(done)


PATCH = Patch(
    "hf_cache_legacy_api",
    since="0.4.0",
    summary="the 2024 KV-cache API remote-code models call (get_usable_length, seen_tokens, from_legacy_cache, "
    "key_cache, get_max_length None for no maximum) back on transformers' Cache",
    package="transformers",
    affected="4.49.0-5.24.0 (swept: 4.49.0, 4.51.3, 4.57.3, 5.13.0, 5.24.0; 4.46.3 not-needed)",
    targets=("transformers.cache_utils",),
    apply=apply,
    report=report,
    errors=(r"'\w*Cache' object has no attribute '(get_usable_length|seen_tokens|get_max_length|from_legacy_cache|"
            r"to_legacy_cache|key_cache|value_cache)'",
            r"type object 'DynamicCache' has no attribute '(from_legacy_cache|to_legacy_cache)'",
            r"'\w*Cache' object is not subscriptable"),
    looks_for=("attribute get_usable_length", "attribute seen_tokens", "attribute from_legacy_cache",
               "attribute to_legacy_cache", "attribute get_max_length"),
)
