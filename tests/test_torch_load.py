"""torch_load on the real torch.load: legacy checkpoints with data-only objects load with weights_only still on, and
nothing that could run code gets through, with or without zeropatch. Each case saves real objects (argparse, numpy,
omegaconf, DeepSpeed) with torch.save and loads them in a fresh interpreter."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "numpy"),
              pytest.mark.skipif((distribution_version("torch") or (0,)) < (2, 6), reason="weights_only default: torch 2.6")]

SAVE_LEGACY = '''
import argparse, io, os, sys, tempfile, numpy as np, torch
np.random.seed(3)
legacy = {"args": argparse.Namespace(model="DiT-XL/2", lr=1e-4, layers=[1, 2]), "rng": np.random.get_state(),
          "scalars": [np.float64(0.5), np.int64(7), np.bool_(True), np.float32(2.0)],
          "arrays": [np.arange(6, dtype=np.uint8).reshape(2, 3), np.array(["a", "bc"]), np.array([1, "x"], dtype=object)]}
path = os.path.join(tempfile.mkdtemp(), "legacy.pt")
torch.save(legacy, path)
def same(a, b):
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
'''

# A pickle that runs a shell command when unpickled (os.system through REDUCE), and others that call code.
MALICIOUS = '''
import builtins, os, pickle, tempfile, torch
marker = os.path.join(tempfile.mkdtemp(), "pwned")
class Shell:
    def __reduce__(self):
        return (os.system, (f"touch {marker}",))
class Eval:
    def __reduce__(self):
        return (builtins.eval, ("__import__('os').system('touch %s')" % marker,))
class ViaNamespace:  # a listed class used as a callable with a payload: it may only build a Namespace
    def __reduce__(self):
        import argparse
        return (argparse.Namespace, (), {"x": Shell()})
payloads = {}
for name, payload in (("os.system", Shell()), ("eval", Eval()), ("namespace", ViaNamespace())):
    path = os.path.join(tempfile.mkdtemp(), name + ".pt")
    torch.save({"model": torch.ones(1), "extra": payload}, path)
    payloads[name] = path
def refused(path, **kwargs):
    try:
        torch.load(path, **kwargs)
    except pickle.UnpicklingError as error:
        return str(error)
    raise AssertionError(f"{path} loaded")
'''


def test_legacy_objects_load_equal_with_weights_only_still_on():
    assert_ok(run_python(SAVE_LEGACY + '''
try:
    torch.load(path)
except Exception as error:
    assert "Unsupported global" in str(error) or "Can only build" in str(error), error
else:
    raise AssertionError("torch refuses these without zeropatch")
import zeropatch
before = set(torch.serialization.get_safe_globals())
loaded = torch.load(path)
assert same(loaded, legacy), loaded
assert torch.load(io.BytesIO(open(path, "rb").read()))["args"] == legacy["args"]
assert set(torch.serialization.get_safe_globals()) == before  # nothing stays admitted after the load
assert zeropatch.status("torch_load")[0].state == "applied"
print("ok")
'''))


def test_code_is_refused_with_and_without_zeropatch():
    assert_ok(run_python(MALICIOUS + '''
plain = {name: refused(path) for name, path in payloads.items()}
import zeropatch
assert zeropatch.status("torch_load")[0].state == "applied"
for name, path in payloads.items():
    message = refused(path)
    assert message.startswith("Weights only load failed") and plain[name].startswith("Weights only load failed")
    assert "system" in message or "eval" in message, message  # refused at the callable, not before
    assert "zeropatch (torch_load)" in message and "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1" in message, message
    assert "zeropatch" not in refused(path, weights_only=True)
assert not os.path.exists(marker), "a payload ran"
print("ok")
'''))


def test_explicit_weights_only_and_torchs_own_switches_keep_torchs_behaviour():
    code = SAVE_LEGACY + '''
import zeropatch, pickle
try:
    torch.load(path, weights_only=True)
except pickle.UnpicklingError as error:
    assert "argparse.Namespace" in str(error) or "Can only build" in str(error)
    assert "zeropatch" not in str(error)
else:
    raise AssertionError("an explicit weights_only=True admits only what torch admits")
if os.environ.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD"):
    try:
        torch.load(path)
    except pickle.UnpicklingError:
        print("strict")
else:
    assert same(torch.load(path, weights_only=False), legacy)
    print("ok")
'''
    assert run_python(code).stdout.strip() == "ok"
    from conftest import clean_environment

    assert run_python(code, env=clean_environment(TORCH_FORCE_WEIGHTS_ONLY_LOAD="1")).stdout.strip() == "strict"


def test_the_users_own_safe_globals_survive_the_load():
    assert_ok(run_python(SAVE_LEGACY + '''
import argparse, zeropatch
torch.serialization.add_safe_globals([argparse.Namespace])
torch.load(path)
assert argparse.Namespace in torch.serialization.get_safe_globals()
print("ok")
'''))


@requires("omegaconf")
def test_omegaconf_configs_load_and_resolve():
    assert_ok(run_python('''
import os, tempfile, torch
from omegaconf import OmegaConf
config = OmegaConf.create({"model": {"depth": 28, "name": "DiT", "sizes": [1, 2.5]}, "lr": 1e-4, "run": "${model.name}-x"})
path = os.path.join(tempfile.mkdtemp(), "c.pt")
torch.save({"cfg": config, "list": OmegaConf.create([1, {"a": None}])}, path)
import zeropatch
loaded = torch.load(path)
assert loaded["cfg"] == config and loaded["cfg"].run == "DiT-x" and OmegaConf.to_container(loaded["list"]) == [1, {"a": None}]
print("ok")
'''))


@requires("deepspeed")
def test_deepspeed_state_loads_in_a_process_that_never_imported_deepspeed():
    saved = run_python('''
import os, sys, tempfile, torch
from deepspeed.runtime.fp16.loss_scaler import DynamicLossScaler, LossScaler
from deepspeed.runtime.zero.config import ZeroStageEnum
scaler = DynamicLossScaler(init_scale=2 ** 16, scale_window=1000, min_scale=1, delayed_shift=2, consecutive_hysteresis=False)
path = os.path.join(tempfile.mkdtemp(), "optim_states.pt")
torch.save({"loss_scaler": scaler, "static": LossScaler(128.0), "zero_stage": ZeroStageEnum(2), "step": 10}, path)
print(path)
''')
    assert_ok(saved)
    path = saved.stdout.strip().splitlines()[-1]
    assert_ok(run_python(f'''
import io, sys, torch, zeropatch
assert "deepspeed" not in sys.modules
state = torch.load({path!r})
assert state["loss_scaler"].cur_scale == 2 ** 16 and state["static"].cur_scale == 128.0 and int(state["zero_stage"]) == 2
assert torch.load(io.BytesIO(open({path!r}, "rb").read()))["step"] == 10  # a stream is read again from its start
print("ok")
'''))


@requires("pytorch_lightning")
def test_a_lightning_1x_checkpoint_names_its_callback_classes_but_cannot_build_one():
    """pytorch-lightning < 1.5 keyed callback states by class (the Stable Diffusion 1.x .ckpt files): the classes load
    as the keys they were; a file that builds a callback (its __init__ reads paths) is refused, also without zeropatch."""
    script = '''
import io, pickle, sys, torch
from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint
legacy, built = io.BytesIO(), io.BytesIO()
torch.save({"global_step": 470000, "state_dict": {"model.w": torch.ones(2)},
            "callbacks": {ModelCheckpoint: {"best_model_score": torch.tensor(0.5), "best_model_path": "a.ckpt"},
                          EarlyStopping: {"wait_count": 0}}}, legacy)
torch.save({"callback": ModelCheckpoint(dirpath="checkpoints")}, built)
if sys.argv[1] == "on":
    import zeropatch
    checkpoint = torch.load(io.BytesIO(legacy.getvalue()))
    assert list(checkpoint["callbacks"]) == [ModelCheckpoint, EarlyStopping], checkpoint["callbacks"]
    assert checkpoint["callbacks"][ModelCheckpoint]["best_model_path"] == "a.ckpt" and checkpoint["global_step"] == 470000
for data in ([built.getvalue()] if sys.argv[1] == "on" else [legacy.getvalue(), built.getvalue()]):
    try:
        torch.load(io.BytesIO(data))
    except pickle.UnpicklingError as error:
        assert "ModelCheckpoint" in str(error), str(error)[-500:]
    else:
        raise AssertionError("loaded")
print("ok")
'''
    for state in ("off", "on"):
        result = run_python(script, state)
        assert_ok(result)
        assert "ok" in result.stdout


def test_security_md_lists_every_admitted_global_and_why():
    from conftest import ROOT
    from zeropatch.patches.torch.torch_load import ALLOWED

    security = (ROOT / "SECURITY.md").read_text()
    assert all(f"| `{name}` | {why} |" in security for name, why in ALLOWED.items())


def test_a_strict_load_in_another_thread_never_sees_the_admitted_list_nor_waits():
    """The admitting load stays inside torch.load (its file blocks on read) while a strict load runs in another
    thread: the list is this thread's only, so the strict load refuses at once, without waiting for the other."""
    assert_ok(run_python(SAVE_LEGACY + '''
import pickle, threading, zeropatch
data = open(path, "rb").read()
reading, strict_done = threading.Event(), threading.Event()
outcome = {}
class SlowFile(io.BytesIO):
    def read(self, *args):
        if not reading.is_set():
            reading.set()
            outcome["strict finished meanwhile"] = strict_done.wait(30)
        return super().read(*args)
def admitting():
    outcome["admitting"] = torch.load(SlowFile(data))["args"] == legacy["args"]
def strict():
    reading.wait(30)
    try:
        torch.load(io.BytesIO(data), weights_only=True)
        outcome["strict"] = "loaded"
    except pickle.UnpicklingError:
        outcome["strict"] = "refused"
    strict_done.set()
threads = [threading.Thread(target=admitting), threading.Thread(target=strict)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(60)
assert outcome == {"admitting": True, "strict": "refused", "strict finished meanwhile": True}, outcome
print("ok")
'''))


# A program that registered a resolver (a Hydra idiom: one that evaluates expressions), and files that hand an
# omegaconf config holding it, or ${oc.env:...}, to an admitted callable while loading.
RESOLVING = '''
import argparse, collections, io, os, pickle, sys, torch, numpy as np
from omegaconf import DictConfig, ListConfig, OmegaConf
calls = []
OmegaConf.register_new_resolver("spy", lambda text: calls.append(text) or text)
os.environ["ZEROPATCH_TEST_SECRET"] = "s3cret"
mapping = OmegaConf.create({0: "${spy:int-key}", "dtype": "${spy:attribute}", "a": "${spy:item}", "b": "${oc.env:ZEROPATCH_TEST_SECRET}"})
sequence = OmegaConf.create(["${spy:element}", "${oc.env:ZEROPATCH_TEST_SECRET}"])
class Calls:
    def __init__(self, function, args, state=None):
        self.reduced = (function, args) if state is None else (function, args, state)
    def __reduce__(self):
        return self.reduced
def dumped(payload):
    buffer = io.BytesIO()
    torch.save({"weights": torch.ones(1), "extra": payload}, buffer)
    return buffer.getvalue()
def outcome(data, **kwargs):
    try:
        loaded = torch.load(io.BytesIO(data), **kwargs)
    except pickle.UnpicklingError as error:
        return "refused"
    return "loaded " + repr(loaded["extra"])[:60]
'''


@requires("omegaconf")
def test_a_config_handed_to_an_admitted_callable_is_never_resolved_during_the_load():
    """The crafted file of issue #29 (``dict`` called on a DictConfig: every interpolation resolved during
    torch.load), then every admitted callable, ours and torch's own, handed a DictConfig and a ListConfig in each
    argument position: the program's resolver never runs and the environment is never read, with or without
    zeropatch; each such file is refused."""
    code = RESOLVING + '''
import importlib
from zeropatch.patches.torch.torch_load import ALLOWED, DTYPE_CLASSES
callables = {}
for name in ALLOWED:
    if name != DTYPE_CLASSES:
        module, _, attr = name.rpartition(".")
        try:
            callables[name] = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):  # the other numpy spelling, or deepspeed where it is not installed
            pass
callables.update({f"numpy.dtypes.{cls.__name__}": cls for cls in {type(np.dtype(c)) for c in np.typecodes["All"]}})
callables.update({"collections.OrderedDict": collections.OrderedDict, "collections.Counter": collections.Counter,
                  "builtins.set": set, "builtins.bytearray": bytearray, "builtins.complex": complex,
                  "torch.Size": torch.Size, "torch.device": torch.device})
crafted = dumped(Calls(dict, (mapping,)))
results = {"crafted": outcome(crafted)}
for name, function in callables.items():
    for config in (mapping, sequence):
        for args in ((config,), (config, config), (1, config), (config, 1, 1), (np.ndarray, (1,), config)):
            results[f"{name}{tuple(type(a).__name__ for a in args)}"] = outcome(dumped(Calls(function, args)))
results["Namespace state"] = outcome(dumped(Calls(argparse.Namespace, (), mapping)))
assert not calls, f"a resolver ran during a load: {calls}"
assert all(result == "refused" for result in results.values()), {k: v for k, v in results.items() if v != "refused"}
print("ok", len(results), "files")
'''
    from conftest import clean_environment

    for zeropatch in ("1", "0"):
        result = run_python(code, env=clean_environment(ZEROPATCH=zeropatch))
        assert_ok(result)
        assert result.stdout.splitlines()[-1].startswith("ok"), result.stdout


@requires("omegaconf")
def test_a_config_that_calls_a_resolver_when_read_is_refused_one_that_refers_to_keys_loads():
    assert_ok(run_python(RESOLVING + '''
import zeropatch
for config in (mapping, sequence, OmegaConf.create({"nested": {"x": ["${oc.env:HOME}"]}})):
    try:
        torch.load(io.BytesIO(dumped(config)))
    except pickle.UnpicklingError as error:
        assert "calls a resolver" in str(error), error
    else:
        raise AssertionError("a config that calls a resolver when read loaded")
referring = OmegaConf.create({"dim": 8, "model": {"width": "${dim}", "name": "net-${dim}"}, "escaped": "\\${spy:x}"})
loaded = torch.load(io.BytesIO(dumped(referring)))["extra"]
assert isinstance(loaded, DictConfig) and loaded.model.width == 8 and loaded.model.name == "net-8"
assert loaded.escaped == "${spy:x}" and OmegaConf.to_container(loaded, resolve=True) == OmegaConf.to_container(referring, resolve=True)
assert loaded.model._get_parent() is loaded
assert not calls, calls
print("ok")
'''))



def test_explain_of_the_first_line_alone_says_the_patch_may_fix_it_and_what_decides():
    """torch's weights-only refusal cut after its first line does not name the global that decides whether torch_load
    admits it: `explain` says "may fix" and what to look at, never "fixes"; the whole message decides."""
    from zeropatch._explain import explanation

    here = lambda patch: ("torch (any)", "waiting")
    first_line = ("_pickle.UnpicklingError: Weights only load failed. This file can still be loaded, to do so you have "
                  "two options, do those steps only if you trust the source of the checkpoint.")
    lines, fixed = explanation(first_line, here)
    assert not fixed and lines[0].startswith("torch_load may fix this: it depends on the global torch refused"), lines
    assert not any("No zeropatch patch is known" in line for line in lines), lines
    whole = first_line + "\n WeightsUnpickler error: Unsupported global: GLOBAL argparse.Namespace was not an allowed global"
    lines, fixed = explanation(whole, here)
    assert fixed and lines[0].startswith("torch_load: ") and not any("may fix" in line for line in lines), lines
