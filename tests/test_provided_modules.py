"""A module zeropatch provides where the installed release has none (``Patcher.fill``) looks as the old release's module
looked: its names listed in ``dir()`` and ``__all__``, a function or class of zeropatch's among them named as the
module's own (no ``<locals>``, no ``zeropatch``) and pickled by reference; uninstall takes the module away. Where the
release still has the module, the patch leaves it alone. Checked for every patch that fills a provided module."""

import re

import pytest

from conftest import ROOT, assert_ok, clean_environment, installed, run_python

# patch -> the module it provides
FILLS = {
    "hf_attn_mask_utils": "transformers.modeling_attn_mask_utils",
    "hf_model_utils": "transformers.utils.model_parallel_utils",
    "hf_removed_names": "transformers.deepspeed",
    "hf_hub_legacy": "huggingface_hub.utils._errors",
    "pl_moved_names": "pytorch_lightning.utilities.distributed",
    "openai_object": "openai.openai_object",
    "pkg_resources": "pkg_resources",
    "python_removed_modules": "distutils.version",
    "timm_optimizers": "timm.optim.novograd",
    "colossalai_legacy_api": "colossalai.nn.parallel",
}
LIBRARY = {"pkg_resources": "setuptools", "python_removed_modules": "distutils"}  # where the module's top level is not its library's


def test_every_patch_that_fills_a_provided_module_is_checked():
    sources = sorted((ROOT / "zeropatch" / "patches").glob("*/*.py"))
    assert {path.stem for path in sources if re.search(r"\.fill\(", path.read_text())} == set(FILLS)


@pytest.mark.parametrize("name", list(FILLS))
def test_a_provided_module_lists_its_names_as_the_old_one_did(name):
    module = FILLS[name]
    library = LIBRARY.get(name, module.split(".")[0])
    if not installed(library):
        pytest.skip(f"not installed: {library}")
    result = run_python(f'''
import importlib, pickle, sys, types, zeropatch
from zeropatch._core import is_provided
from zeropatch._registry import _registry
zeropatch.install({name!r})
module = importlib.import_module({module!r})
if not is_provided(module):  # the release has the module: the patch leaves it as it is
    patchers = _registry()[{name!r}].patchers.values()
    assert not any(change[0] is module for patcher in patchers for change in patcher.changes()), module
    print("checked the library's own")
    sys.exit(0)
listed = module.__all__
assert listed and set(listed) <= set(dir(module)), (listed, dir(module))
assert module.__doc__ and "zeropatch" in module.__doc__, module.__doc__
for attr in listed:
    value = getattr(module, attr)
    if isinstance(value, (type, types.FunctionType)):
        assert "<locals>" not in value.__qualname__ and not value.__module__.startswith("zeropatch"), (attr, value)
        if "zeropatch" in getattr(getattr(value, "__code__", None), "co_filename", "") or isinstance(value, type) and \\
                value.__module__ == module.__name__:
            assert (value.__module__, value.__qualname__) == (module.__name__, attr), (attr, value.__qualname__)
        assert pickle.loads(pickle.dumps(value)) is value, attr
zeropatch.uninstall({name!r})
assert {module!r} not in sys.modules, "the provided module outlived its patch"
print("checked", len(listed), "names")
''', env=clean_environment(ZEROPATCH=name))
    assert_ok(result)
    assert result.stdout.splitlines()[-1].startswith("checked"), result.stdout


def test_a_name_a_provided_module_lacks_is_named_with_what_the_history_says():
    """``from numpy.lib.function_base import disp`` (numpy 2 removed both; moved_names makes the module again, holding
    the names that moved) and a name torch_six's ``torch._six`` never had: the error names the stand-in, what made it
    and the history's word, where Python said only "cannot import name ... (unknown location)"; ``hasattr`` stays
    False, an attribute read an AttributeError."""
    for library in ("numpy", "torch"):
        if not installed(library):
            pytest.skip(f"not installed: {library}")
    assert_ok(run_python('''
import numpy, zeropatch
if int(numpy.__version__.split(".")[0]) < 2:
    print("numpy 1 still has it")
    raise SystemExit(0)
try:
    from numpy.lib.function_base import disp
except ImportError as error:
    said = str(error)
else:
    raise AssertionError("disp imported")
assert "zeropatch's numpy.lib.function_base (moved_names" in said and "removed in numpy 2.0" in said, said
import numpy.lib.function_base as held
assert not hasattr(held, "disp") and "moved_names" in held.__doc__
try:
    held.disp
except AttributeError as error:
    assert "removed in numpy 2.0" in str(error), error
try:
    from torch._six import no_such_name
except ImportError as error:
    assert "zeropatch's torch._six (torch_six) does not provide it" in str(error), error
else:
    raise AssertionError("no_such_name imported")
print("named")
''', env=clean_environment(ZEROPATCH="1")))
