"""Names a patch puts back into a library module are invisible to introspection (issue #28): reachable by attribute
access and import, never listed in the module's dir() / __all__; a function or class of zeropatch's carries the
library's __module__ and a plain __qualname__ and pickles by reference; uninstall takes them away again. Checked for
every patch that puts names back, on whatever the installed release lacks."""

import re

import pytest

from conftest import ROOT, assert_ok, clean_environment, installed, run_python

# patch -> (modules to import, with the patch installed)
PUTS_BACK = {
    "numpy_aliases": ("numpy",),
    "hf_hub_legacy": ("huggingface_hub", "huggingface_hub.constants"),
    "pandas_groupby_names": ("pandas.core.window.expanding", "pandas.core.window.rolling"),
    "torchvision_video": ("torchvision.io",),
    "peft_int8_training": ("peft",),
    "torchvision_model_urls": ("torchvision.models.resnet", "torchvision.models.detection.faster_rcnn"),
    "transformers_adamw": ("transformers.optimization",),
    "datasets_load_metric": ("datasets", "datasets.load"),
    "transformers_shard_checkpoint": ("transformers.modeling_utils",),
    "hf_trainer_names": ("transformers.trainer",),
    "hf_model_utils": ("transformers.modeling_utils", "transformers.pytorch_utils"),
    "hf_removed_names": ("transformers.generation.utils", "transformers.utils", "transformers.file_utils",
                         "transformers.modeling_utils",
                         *(f"transformers.models.{model}.modeling_{model}" for model in ("llama", "clip"))),
    "pillow_aliases": ("PIL.Image",),
    "diffusers_legacy_names": ("diffusers.utils", "diffusers.models.embeddings", "diffusers.models.attention_processor"),
    "pl_moved_names": ("pytorch_lightning.loggers", "pytorch_lightning.utilities.seed"),
    "timm_legacy_api": ("timm.optim.optim_factory", "timm.data.transforms"),
    "torchvision_get_image_size": ("torchvision.transforms.functional",),
    "torchaudio_backends": ("torchaudio",),
    "python_removed_names": ("collections", "inspect", "fractions", "base64"),  # and Thread.isAlive (add_methods)
    "torch_removed_names": ("torch._utils",),
    "timm_optimizers": ("timm.optim", "timm.optim.nadam", "timm.optim.radam", "timm.optim.adamw"),
    "colossalai_legacy_api": ("colossalai", "colossalai.tensor", "colossalai.zero", "colossalai.zero.gemini"),
}
# patches that change more than the names they put back: applied with nothing put back on a release that has the names
# (timm 0.5: qk_scale went, add_weight_decay not yet)
CHANGES_MORE = {"timm_legacy_api"}
# patch -> {module, or module.name: the library module that defined the names (the name) put back there, where it is
# another}
HOMES = {"torchvision_video": {"torchvision.io": "torchvision.io.video"},
         "colossalai_legacy_api": {"colossalai.zero": "colossalai.zero.gemini"},  # gemini is imported, and named, first
         "timm_optimizers": {"timm.optim": "timm.optim.novograd"},
         "peft_int8_training": {"peft": "peft.utils.other", "peft.utils": "peft.utils.other"},
         "datasets_load_metric": {"datasets": "datasets.load"},
         "hf_removed_names": {f"transformers.{module}.{name}": f"transformers.utils.{home}"
                              for module in ("utils", "file_utils")
                              for name, home in (("cached_property", "generic"), ("torch_required", "import_utils"))}}


def test_every_patch_that_puts_names_back_is_checked():
    sources = sorted((ROOT / "zeropatch" / "patches").glob("*/*.py"))
    putting_back = {path.stem for path in sources if re.search(r"\.put_back\(", path.read_text())}
    assert putting_back == set(PUTS_BACK)


@pytest.mark.parametrize("name", list(PUTS_BACK))
def test_names_put_back_are_reachable_picklable_and_not_listed(name):
    """Each name reachable and importable, not listed, pickled by reference; a function of zeropatch's named as the
    module's own, or as the library module that defined it (HOMES)."""
    modules, homes = PUTS_BACK[name], HOMES.get(name, {})
    if not all(installed(module.split(".")[0]) for module in modules):
        pytest.skip(f"not installed: {modules[0].split('.')[0]}")
    result = run_python(f'''
import importlib, pickle, sys, zeropatch
from zeropatch._core import _PutBack
zeropatch.install({name!r})
modules = [importlib.import_module(module) for module in {modules!r}]
checked = {{}}
libraries = {{module.split(".")[0] for module in {modules!r}}}  # one library, or the standard modules a patch names
for module in [module for name, module in list(sys.modules.items()) if name.split(".")[0] in libraries]:
    getter = vars(module).get("__getattr__")
    while isinstance(getter, _PutBack):
        for attr, value in getter.names.items():
            assert getattr(module, attr) is value, attr
            namespace = {{}}
            exec(f"from {{module.__name__}} import {{attr}}", namespace)
            assert namespace[attr] is value, attr
            assert attr not in dir(module) and attr not in (getattr(module, "__all__", None) or ()), attr
            if isinstance(value, type) or callable(value) and hasattr(value, "__code__"):
                assert "<locals>" not in value.__qualname__ and "zeropatch" not in value.__module__, (attr, value)
                if "zeropatch" in getattr(getattr(value, "__code__", None), "co_filename", ""):  # zeropatch's stand-in
                    home = {homes!r}.get(f"{{module.__name__}}.{{attr}}", {homes!r}.get(module.__name__))
                    assert value.__module__ in (module.__name__, home), (attr, value.__module__)
                assert pickle.loads(pickle.dumps(value)) is value, attr
            checked[f"{{module.__name__}}.{{attr}}"] = value
        getter = getter.previous
state = zeropatch.status({name!r})[0].state
assert state in ("applied", "not-needed") and (bool(checked) == (state == "applied")
                                              or {name!r} in {CHANGES_MORE!r} and not checked), (state, checked)
zeropatch.uninstall({name!r})
for path in checked:
    module, _, attr = path.rpartition(".")
    current = sys.modules.get(module)  # None: a module zeropatch provided is gone with the patch
    assert current is None or not hasattr(current, attr) or getattr(current, attr) is not checked[path], path
print("checked", state, len(checked), sorted(checked)[:3])
''', env=clean_environment(ZEROPATCH=f"hf_hub_legacy,{name}" if name == "diffusers_legacy_names" else name))
    assert_ok(result)
    assert result.stdout.splitlines()[-1].startswith("checked"), result.stdout


def test_putting_back_twice_into_one_module_is_one_change_that_reverts_whole():
    assert_ok(run_python('''
import types
from zeropatch._core import Patcher
module = types.ModuleType("legacy_library")
patcher = Patcher()
patcher.put_back(module, {"first": 1})
patcher.put_back(module, {"second": 2})
assert (module.first, module.second) == (1, 2)
assert len(patcher.changes()) == 1 and not patcher.replaced(), (patcher.changes(), patcher.replaced())
patcher.revert()
assert "__getattr__" not in vars(module) and not hasattr(module, "first") and not hasattr(module, "second")
print("ok")
''', env=clean_environment(ZEROPATCH="0")))


def test_names_put_back_into_a_lazy_module_follow_the_module_the_library_puts_in_its_place():
    """A library may put a new lazy module object in place of the one patched, outside the import system
    (transformers' processing_utils runs transformers/__init__.py again): both objects answer the names, through the
    lazy class, after its own lazy loading; not listed, pickled by reference; revert takes them and the class's
    wrapper away."""
    assert_ok(run_python('''
import pickle, sys, types
from zeropatch._core import Patcher

class Lazy(types.ModuleType):
    def __getattr__(self, name):
        if name == "lazy":
            return "loaded"
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

lazy_getattr = Lazy.__dict__["__getattr__"]
def removed():
    pass
removed.__module__ = "legacy_lazy"  # the library's own function (one of zeropatch's is named so by put_back)

patched = sys.modules["legacy_lazy"] = Lazy("legacy_lazy")
patcher = Patcher()
patcher.put_back(patched, {"removed": removed})
successor = sys.modules["legacy_lazy"] = Lazy("legacy_lazy")   # re-created: no getter of its own
other = Lazy("another_lazy")
for module in (patched, successor):
    assert module.removed is removed and module.lazy == "loaded" and "removed" not in dir(module)
    exec("from legacy_lazy import removed as imported; assert imported is removed", {"removed": removed})
assert pickle.loads(pickle.dumps(removed)) is removed
assert not hasattr(other, "removed")
assert not patcher.replaced(), patcher.replaced()
patcher.revert()
assert Lazy.__dict__["__getattr__"] is lazy_getattr and "__getattr__" not in vars(patched)
assert not hasattr(patched, "removed") and not hasattr(successor, "removed") and successor.lazy == "loaded"
print("ok")
''', env=clean_environment(ZEROPATCH="0")))
