"""moved_names: imports of modules and names the API history records as moved (or as retired aliases) are answered
with their successors' very objects, on the real libraries, in fresh interpreters; removed names are not answered;
nothing shows in dir(); the libraries' own lazy loading and the hand-written patches come first."""

import pytest

from conftest import ROOT, assert_ok, clean_environment, distribution_version, requires, run_python

pytestmark = requires("transformers", "diffusers")

LEGACY = """
from transformers.modeling_utils import apply_chunking_to_forward, prune_linear_layer
import transformers.pytorch_utils as now
assert apply_chunking_to_forward is now.apply_chunking_to_forward and prune_linear_layer is now.prune_linear_layer
import diffusers.modeling_utils as old_module
import diffusers.models.modeling_utils as new_module
assert old_module is new_module and old_module.__spec__.name == "diffusers.models.modeling_utils"
from diffusers.modeling_utils import ModelMixin
assert ModelMixin is new_module.ModelMixin
print("answered")
"""


def needs(transformers=(4, 56), diffusers=(0, 12)):
    """Skips where the installed releases still have what the test imports from its old home (transformers 4.56
    moved the helpers out of modeling_utils; diffusers 0.12 moved modeling_utils, 0.38 the old pipelines)."""
    if distribution_version("transformers") < transformers or distribution_version("diffusers") < diffusers:
        pytest.skip(f"transformers < {transformers} or diffusers < {diffusers}: the names are still at home")


def test_moved_and_retired_imports_fail_without_and_are_answered_with_their_successors():
    needs()
    plain = run_python(LEGACY, env=clean_environment(ZEROPATCH="0"))
    assert plain.returncode != 0 and "cannot import name 'apply_chunking_to_forward'" in plain.stderr, plain.stderr
    assert_ok(run_python(LEGACY, env=clean_environment(ZEROPATCH="1")))


def test_torch_moves_are_answered_from_its_history_too():
    """torch 1.9 and 1.10 moved DDP's replicate helper and the profiler's tables out of the modules legacy code imported
    them from; its history is read from its macOS wheels (the same Python files)."""
    code = """
        from torch.nn.parallel.distributed import replicate
        from torch.autograd.profiler import StringTable
        import sys, torch.autograd.profiler_util as util
        assert replicate is sys.modules["torch.nn.parallel.replicate"].replicate and StringTable is util.StringTable
        print("answered")
    """
    plain = run_python(code, env=clean_environment(ZEROPATCH="0"))
    assert plain.returncode != 0 and "cannot import name 'replicate'" in plain.stderr, plain.stderr
    assert_ok(run_python(code, env=clean_environment(ZEROPATCH="1")))
    off = run_python(code, env=clean_environment(ZEROPATCH="1", ZEROPATCH_MOVED_NAMES_OFF="torch"))
    assert off.returncode != 0 and "cannot import name 'replicate'" in off.stderr, off.stderr


def test_answers_are_invisible_pickle_as_the_library_and_only_for_what_moved():
    needs(diffusers=(0,))
    result = run_python("""
        import pickle, sys, transformers, transformers.modeling_utils as m
        from zeropatch import _history
        from transformers.modeling_utils import apply_chunking_to_forward
        assert "apply_chunking_to_forward" not in dir(m) and "apply_chunking_to_forward" not in vars(m)
        assert pickle.loads(pickle.dumps(apply_chunking_to_forward)) is apply_chunking_to_forward
        assert apply_chunking_to_forward.__module__ == "transformers.pytorch_utils"
        # a name the release removed (not moved: its successor may differ) is not answered
        data = _history._history("transformers")["names"]["transformers.modeling_utils"]
        removed = [name for name, events in data.items() if events[-1][0] == "removed"
                   and _history.missing_here(_history.removal("transformers.modeling_utils", name))
                   and not hasattr(m, name)]
        assert removed
        try:
            exec(f"from transformers.modeling_utils import {removed[0]}")
        except ImportError as error:
            assert removed[0] in str(error)
        else:
            raise AssertionError(f"{removed[0]} was answered")
        # the library's own lazy loading answers its names first (a lazy module asks its class)
        assert transformers.BertConfig.__name__ == "BertConfig"
        from zeropatch import status
        print(status("moved_names")[0].state)
    """, env=clean_environment(ZEROPATCH="1"))
    assert_ok(result)
    assert result.stdout.strip().endswith("applied"), result.stdout


def test_a_removed_module_whose_names_moved_holds_just_those_and_a_moved_package_gives_no_second_copy():
    needs(transformers=(0,), diffusers=(0, 38))
    result = run_python("""
        import sys
        from zeropatch import _history
        # a module diffusers 0.25 removed while AutoencoderTiny moved (made again, holding the moved names only)
        from diffusers.models.autoencoder_tiny import AutoencoderTiny
        from diffusers.models.autoencoders.autoencoder_tiny import AutoencoderTiny as now
        import diffusers.models.autoencoder_tiny as made
        assert AutoencoderTiny is now and "moved_names" in made.__doc__ and "AutoencoderTiny" not in dir(made)
        # a package diffusers 0.38 moved under pipelines.deprecated: its submodules are the successor's (no copies)
        import diffusers.pipelines.audioldm.pipeline_audioldm as old
        assert old is sys.modules["diffusers.pipelines.deprecated.audioldm.pipeline_audioldm"]
        assert sys.modules["diffusers.pipelines.audioldm"].__name__ == "diffusers.pipelines.deprecated.audioldm"
        print("held")
    """, env=clean_environment(ZEROPATCH="1"))
    assert_ok(result)


def test_switched_off_per_library_and_bad_names_are_named():
    needs(diffusers=(0,))
    code = "from transformers.modeling_utils import apply_chunking_to_forward"
    off = run_python(code, env=clean_environment(ZEROPATCH="1", ZEROPATCH_MOVED_NAMES_OFF="transformers,difusers"))
    assert off.returncode != 0 and "cannot import name 'apply_chunking_to_forward'" in off.stderr, off.stderr
    assert "ZEROPATCH_MOVED_NAMES_OFF='transformers,difusers': difusers ignored (valid: PIL," in off.stderr, off.stderr
    status = run_python("import transformers, zeropatch; from zeropatch._registry import _registry; "
                        "print(*_registry()['moved_names'].targets['transformers'][:2])",
                        env=clean_environment(ZEROPATCH="1", ZEROPATCH_MOVED_NAMES_OFF="transformers"))
    assert_ok(status)
    assert "skipped ZEROPATCH_MOVED_NAMES_OFF leaves transformers alone" in status.stdout, status.stdout


def test_the_watched_modules_are_written_from_the_history_and_the_libraries_are_its_files():
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location("api_history_tool", ROOT / "tools" / "api_history.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert (ROOT / "zeropatch" / "_history_holders.py").read_text() == tool.holders_text(), (
        "zeropatch/_history_holders.py is stale: python tools/api_history.py --holders")
    from zeropatch.patches.api_history.moved_names import LIBRARIES

    files = sorted(name[:-len(".json.gz")] for name in os.listdir(ROOT / "zeropatch" / "_api_history"))
    assert list(LIBRARIES) == files


def test_check_calls_an_answered_import_fixed_and_a_removed_one_not(tmp_path):
    needs(diffusers=(0,))
    (tmp_path / "train.py").write_text("from transformers.modeling_utils import apply_chunking_to_forward\n"
                                       "from diffusers.models.vae import DiagonalGaussianDistribution\n")
    from conftest import run_command
    import sys

    result = run_command([sys.executable, "-m", "zeropatch", "check", str(tmp_path)])
    assert "fixed   train.py:1" in result.stdout, result.stdout
    assert "moved_names (default patch, on here" in result.stdout, result.stdout
    off = run_command([sys.executable, "-m", "zeropatch", "check", "--patches", "0", str(tmp_path)])
    assert "BREAKS  train.py:1" in off.stdout, off.stdout


def test_a_successor_in_a_module_a_patch_provides_is_answered_and_check_says_so(tmp_path):
    """torch 1.12 moved dataloader's string_classes to torch._six, which torch 2.0 removed and torch_six provides: the
    import is answered while torch_six is on, and check calls it fixed then only (the line is found in the wild:
    legacy collate helpers)."""
    import sys

    from conftest import run_command

    code = "from torch.utils.data.dataloader import string_classes\nassert string_classes == (str, bytes)\n"
    (tmp_path / "collate.py").write_text(code)
    assert_ok(run_python(code, env=clean_environment(ZEROPATCH="1")))
    without = run_python(code, env=clean_environment(ZEROPATCH="1", ZEROPATCH_DISABLE="torch_six"))
    assert without.returncode != 0 and "string_classes" in without.stderr, without.stderr
    both = run_command([sys.executable, "-m", "zeropatch", "check", str(tmp_path)])
    assert "fixed   collate.py:1" in both.stdout, both.stdout
    assert "the same definition is torch._six.string_classes" in both.stdout, both.stdout
    alone = run_command([sys.executable, "-m", "zeropatch", "check", "--patches", "moved_names", str(tmp_path)])
    assert "BREAKS  collate.py:1" in alone.stdout and "answered only with torch_six on" in alone.stdout, alone.stdout
