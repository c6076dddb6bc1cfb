"""The API history (``zeropatch._history``, built by ``tools/api_history.py`` from the libraries' released wheels): what
it says about famous removals, checked against the installed releases where they are installed; what ``explain`` and
``check`` print from it; that ``import zeropatch`` reads none of it; and the tool's reading of re-exports, lazy
modules, moves and aliases on two small releases written here."""

import importlib
import importlib.util
import re
import sys
import zipfile

import pytest

from conftest import ROOT, assert_ok, clean_environment, run_command, run_python
from zeropatch import _history
from zeropatch._versions import installed_version

ZEROPATCH = [sys.executable, "-m", "zeropatch"]


def _tool():
    spec = importlib.util.spec_from_file_location("api_history", ROOT / "tools" / "api_history.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the recorded data ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("module, name, kind, first, successor", [
    ("diffusers.utils", "randn_tensor", "moved", "0.21", "diffusers.utils.torch_utils:randn_tensor"),
    ("huggingface_hub", "cached_download", "removed", "0.26", "huggingface_hub.file_download:hf_hub_download"),
    ("huggingface_hub", "ModelFilter", "removed", "0.24", ""),
    ("transformers", "AdamW", "removed", "4.50", "torch.optim:AdamW"),  # its deprecation warning named it
    ("transformers.modeling_utils", "Conv1D", "moved", "4.56", "transformers.pytorch_utils:Conv1D"),
    ("timm.models.layers.helpers", None, "moved", "0.9", "timm.layers.helpers"),  # every definition the same
    ("pytorch_lightning.utilities.distributed", None, "removed", "2.0", ""),
    # the engines (issue 55): ColossalAI read at every release, as its 0.2-0.3 APIs moved between patch releases
    ("colossalai.zero", "ColoInitContext", "moved", "0.3", "colossalai.legacy.zero.gemini.colo_init_context:ColoInitContext"),
    ("colossalai.nn.parallel", "ZeroDDP", "removed", "0.3", "colossalai.zero.gemini.gemini_ddp:ZeroDDP"),
    ("trl", "PPOTrainer", "removed", "0.29", "trl.experimental.ppo.ppo_trainer:PPOTrainer"),
    ("deepspeed.runtime.zero.stage2", None, "removed", "0.5", ""),
])
def test_famous_removals_are_recorded_with_their_release_and_successor(module, name, kind, first, successor):
    record = _history.removal(module, name)
    assert record is not None, (module, name)
    assert (record.kind, record.first.startswith(first + "."), record.successor) == (kind, True, successor), record


def test_a_module_of_aliases_is_recorded_with_its_successor_and_so_are_its_names():
    """diffusers 0.26-0.28 kept diffusers.models.unet_2d_condition as shims (``class UNet2DConditionModel(
    UNet2DConditionModel)`` that warns) of diffusers.models.unets.unet_2d_condition; 0.29 removed it."""
    record = _history.removal("diffusers.models.unet_2d_condition")
    assert record is not None and record.name is None
    assert (record.kind, record.first[:5], record.successor) == (
        "alias", "0.29.", "diffusers.models.unets.unet_2d_condition"), record
    named = _history.removal("diffusers.models.unet_2d_condition", "UNet2DConditionModel")
    assert (named.kind, named.successor) == (
        "alias", "diffusers.models.unets.unet_2d_condition:UNet2DConditionModel"), named
    assert _history.removal("diffusers.models", "unet_2d_condition") == record  # `from diffusers.models import ...`
    gone = _history.removal("diffusers.models.cross_attention")
    assert _history.removal("diffusers.models.cross_attention", "NoSuchName") == gone  # a removed module's name


def test_what_was_never_removed_has_no_record():
    assert _history.removal("diffusers", "UNet2DConditionModel") is None
    assert _history.removal("transformers", "BertModel") is None  # re-exported through lazy modules all along
    assert _history.removal("pytorch_lightning", "seed_everything") is None  # lightning_fabric's, re-exported
    assert _history.removal("diffusers.utils.torch_utils", "randn_tensor") is None
    assert _history.removal("no_such_library_zp.module", "name") is None
    assert _history.removal("../etc", "passwd") is None


@pytest.mark.parametrize("top", ["diffusers", "huggingface_hub", "timm", "pytorch_lightning", "accelerate", "peft",
                                 "transformers", "torch", "setuptools", "colossalai", "deepspeed", "bitsandbytes"])
def test_what_the_history_says_the_installed_release_lacks_is_missing_there_and_moves_land(top):
    """The history against the real installed library (zeropatch off, so nothing is put back): each top-level name it
    says the installed release lacks is missing there, and a moved name's successor in a public module (unless the
    history says it went later too) is there. Top-level names only: importing every module of a library would take
    minutes."""
    if _history._history(top) is None or installed_version(_history._history(top)["library"]) is None:
        pytest.skip(f"no history of {top}, or {top} is not installed in this session")
    result = run_python(f"""
        import importlib, sys, types
        from zeropatch import _history
        try:
            library = importlib.import_module({top!r})
        except ImportError as error:  # a session's old pin on a newer stack (Latte's diffusers 0.24, today's hub)
            print("does not import without zeropatch:", error)
            sys.exit(0)
        ANSWERED = ("Tokenizer", "TokenizerFast", "ImageProcessorFast")
        missing = moved = 0
        for name in _history._history({top!r})["names"].get({top!r}, {{}}):
            record = _history.removal({top!r}, name)
            if not _history.missing_here(record):
                continue
            module, _, successor = record.successor.partition(":")
            if hasattr(library, name) and {top!r} == "transformers" and name.endswith(ANSWERED):
                continue  # transformers 5's lazy module maps old tokenizer names at run time: not read statically
            if isinstance(getattr(library, name, None), types.ModuleType):
                continue  # a submodule of that name now (colossalai.initialize): the record is of the old definition
            if hasattr(library, name):  # the library answers it itself: only with the successor the history names
                assert record.kind != "removed" and successor, record
                assert getattr(library, name) is getattr(importlib.import_module(module), successor), record
                continue
            missing += 1
            later = _history.removal(module, successor) if successor else None
            private = any(part.startswith("_") for part in module.split("."))  # whose changes are not recorded
            if record.kind == "moved" and not private and (later is None or not _history.missing_here(later)):
                assert hasattr(importlib.import_module(module), successor), record
                moved += 1
        print("missing", missing, "moved", moved)
    """, env=clean_environment(ZEROPATCH="0"))
    assert_ok(result)
    if "does not import without zeropatch" in result.stdout:
        pytest.skip(f"the installed {top} {result.stdout.strip()}")
    assert "missing" in result.stdout


def test_import_zeropatch_opens_no_history_file():
    result = run_python("""
        import sys
        opened = []
        sys.addaudithook(lambda event, args: event == "open" and "_api_history" in str(args[0]) and opened.append(args))
        import zeropatch
        zeropatch.status()
        assert "zeropatch._history" not in sys.modules, "import zeropatch imported the history"
        assert not opened, opened
        from zeropatch import _history
        assert not opened, opened  # importing the lookup reads nothing either
        assert _history.removal("huggingface_hub", "cached_download") is not None
        assert any("huggingface_hub.json.gz" in str(args[0]) for args in opened), opened
        print("ok")
    """, env=clean_environment(ZEROPATCH="1"))
    assert_ok(result)
    assert "ok" in result.stdout


# -- explain and check ------------------------------------------------------------------------------------------------

def test_explain_names_the_release_that_removed_a_name_and_its_successor():
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
            "ImportError: cannot import name 'ModelFilter' from 'huggingface_hub' (/venv/huggingface_hub/__init__.py)")
    result = run_command(ZEROPATCH + ["explain", text])
    assert result.returncode == 1, result.stdout + result.stderr  # no patch fixes it
    assert "API history: huggingface_hub.ModelFilter was removed in huggingface_hub 0.24 (0.23.5 was the last " \
           "release with it)" in result.stdout, result.stdout


def test_explain_gives_the_history_beside_the_patch_that_fixes_it():
    result = run_command(ZEROPATCH + ["explain", "ImportError: cannot import name 'randn_tensor' from "
                                                 "'diffusers.utils' (/venv/diffusers/utils/__init__.py)"])
    assert_ok(result)
    assert "API history: diffusers.utils.randn_tensor moved in diffusers 0.21" in result.stdout, result.stdout
    assert "the same definition is diffusers.utils.torch_utils.randn_tensor" in result.stdout
    assert "diffusers_legacy_names:" in result.stdout  # the patch that puts it back


def test_explain_reads_a_missing_module_and_a_missing_attribute():
    result = run_command(ZEROPATCH + ["explain", "ModuleNotFoundError: No module named "
                                                 "'diffusers.models.unet_2d_condition'\nAttributeError: module "
                                                 "'huggingface_hub' has no attribute 'ModelFilter'"])
    assert "API history: module diffusers.models.unet_2d_condition " in result.stdout, result.stdout
    assert "diffusers.models.unets.unet_2d_condition" in result.stdout
    assert "API history: huggingface_hub.ModelFilter was removed" in result.stdout


def test_check_names_what_the_history_says_and_never_counts_it_fixed(tmp_path):
    """A name no patch puts back: NO FIX with the release that removed it. A name a patch puts back: the patch's finding
    alone (fixed where it is on), the history adds no second one."""
    if installed_version("huggingface_hub") is None or not _history.missing_here(
            _history.removal("huggingface_hub", "ModelFilter")):
        pytest.skip("the installed huggingface_hub still has ModelFilter")
    script = tmp_path / "train.py"
    script.write_text("from huggingface_hub import ModelFilter\nfrom huggingface_hub import cached_download\n")
    result = run_command(ZEROPATCH + ["check", "--static", script])
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    first = next(index for index, line in enumerate(lines) if "train.py:1" in line)
    assert lines[first].lstrip().startswith("NO FIX"), result.stdout
    assert "huggingface_hub.ModelFilter was removed in huggingface_hub 0.24" in lines[first + 1], result.stdout
    second = [line for line in lines if "train.py:2" in line]
    assert len(second) == 1 and second[0].lstrip().startswith("fixed"), result.stdout


def test_check_leaves_a_name_the_package_still_answers_though_a_submodule_of_that_name_went(tmp_path):
    """huggingface_hub 0.11 renamed its submodule ``snapshot_download`` (the history records the module's removal),
    but the package still answers ``from huggingface_hub import snapshot_download`` with the function: not a break
    (seen on AnimateDiff's utils/util.py). A submodule that really went is still named."""
    if installed_version("huggingface_hub") is None or installed_version("diffusers") is None:
        pytest.skip("needs huggingface_hub and diffusers installed")
    record = _history.removal("huggingface_hub", "snapshot_download")
    assert record is not None and record.name is None and _history.missing_here(record), record  # the module's
    script = tmp_path / "util.py"
    script.write_text("from huggingface_hub import snapshot_download\nfrom diffusers.models import unet_2d_condition\n")
    result = run_command(ZEROPATCH + ["check", "--static", "--patches", "0", script])
    assert "util.py:1" not in result.stdout, result.stdout
    if _history.missing_here(_history.removal("diffusers.models", "unet_2d_condition")):  # a patch's, or history's
        assert re.search(r"(BREAKS|NO FIX) +util\.py:2 ", result.stdout), result.stdout


def test_check_reads_the_other_names_of_a_line_a_patch_fixes_and_the_installed_module_itself(tmp_path):
    """A 2021 ``from transformers.file_utils import tf_required, ..., is_torch_tpu_available``: hf_removed_names puts
    back the last name (and torch_required, not TensorFlow's decorator), so the line is "part" fixed and its other
    removed name NO FIX, counted not fixed (SimCSE's line was called fixed). A name the history calls removed because
    it left the module's public names, while the installed module still defines it (transformers 4.48's
    RobertaLMHead), is not named."""
    if installed_version("transformers") is None or not _history.missing_here(
            _history.removal("transformers.file_utils", "tf_required")):
        pytest.skip("the installed transformers still has file_utils.tf_required")
    script = tmp_path / "train.py"
    script.write_text("from transformers.file_utils import tf_required, is_torch_tpu_available\n"
                      "from transformers.models.roberta.modeling_roberta import RobertaLMHead\n")
    result = run_command(ZEROPATCH + ["check", "--static", script])
    lines = result.stdout.splitlines()
    assert any(line.lstrip().startswith("part ") and "train.py:1" in line for line in lines), result.stdout
    assert any(line.lstrip().startswith("NO FIX") and "train.py:1" in line for line in lines), result.stdout
    assert "tf_required was removed in transformers 4.26" in result.stdout, result.stdout
    assert "train.py:2" not in result.stdout and "0 breakages fixed" in result.stdout, result.stdout


def test_check_calls_a_fix_of_a_refusal_fixed_without_a_pin(tmp_path):
    """python_dataclass_defaults restores what Python 3.11 refuses at class definition, which no code written for 3.11
    reaches: it needs no legacy decision, so a repository with no python pin is fixed, as one whose environment.yml
    pins python=3.8 (deepspeech.pytorch's configuration), and no switch is named."""
    if sys.version_info < (3, 11):
        pytest.skip("Python < 3.11 takes these defaults")
    code = ("from dataclasses import dataclass\n\n@dataclass\nclass Spect:\n    rate: int = 16000\n\n\n"
            "@dataclass\nclass Train:\n    spect: Spect = Spect()\n")
    for folder, pin in (("plain", None), ("pinned", "dependencies:\n  - python=3.8\n")):
        (tmp_path / folder / ".git").mkdir(parents=True)
        (tmp_path / folder / "config.py").write_text(code)
        if pin:
            (tmp_path / folder / "environment.yml").write_text(pin)
        result = run_command(ZEROPATCH + ["check", str(tmp_path / folder)], env=clean_environment())
        assert re.search(r"fixed +config\.py:10", result.stdout), result.stdout
        assert "ZEROPATCH_LEGACY" not in result.stdout, result.stdout


def test_check_resolves_imports_of_the_known_libraries_against_their_installed_files(tmp_path):
    """Beyond the history (public names of releases since 2021): a private name a module no longer binds
    (SimCSE's ``transformers.trainer._model_unwrap``) and a module that is no file of the installed library
    (nerf_pl's ``pytorch_lightning.logging``, gone before 1.1) are NO FIX, read from the files; today's common imports,
    star-imported names, lazy modules' names and names a module makes at run time (Pillow's resampling constants,
    which the history saw leave in 9.x and which came back as enum members) are not named."""
    if installed_version("transformers") is None or installed_version("pytorch-lightning") is None:
        pytest.skip("needs transformers and pytorch-lightning installed")
    script = tmp_path / "train.py"
    script.write_text("from transformers.trainer import _model_unwrap\n"
                      "from pytorch_lightning.logging import TestTubeLogger\n"
                      "from torch.nn import Module\nfrom torch.utils.data import DataLoader\n"
                      "from transformers import BertModel, Trainer\nfrom torch.optim.lr_scheduler import LambdaLR\n"
                      "import torch.nn.functional as F\nfrom pytorch_lightning import Trainer as PLTrainer\n"
                      "from PIL import Image\nImage.open, Image.BILINEAR, Image.LANCZOS\n")
    result = run_command(ZEROPATCH + ["check", "--static", "--patches", "0", script])
    assert "transformers.trainer has no _model_unwrap in the installed transformers" in result.stdout, result.stdout
    assert "no module pytorch_lightning.logging in the installed pytorch-lightning" in result.stdout, result.stdout
    assert not any(f"train.py:{line}" in result.stdout for line in range(3, 11)), result.stdout


# -- the tool ---------------------------------------------------------------------------------------------------------

OLD = {
    "lib/__init__.py": "from .utils import helper, Old\n_import_structure = {'models.a': ['ModelA']}\n",
    "lib/utils.py": "def helper(x):\n    return x + 1\n\n\nclass New:\n    size = 1\n\n\nOld = New\n",
    "lib/models/__init__.py": "",
    "lib/models/a.py": "class ModelA:\n    def forward(self):\n        return 1\n",
    "lib/models/gone.py": "def bye():\n    return 0\n",
    "lib/shim.py": "import warnings\nfrom .utils import New\n\n\nclass Legacy(New):\n    def __init__(self, *args):\n"
                   "        warnings.warn('Legacy is deprecated: use New')\n        super().__init__(*args)\n",
    "lib/legacy.py": "from .utils import New, deprecate\n\n\nclass New(New):\n"
                     "    message = 'import it from lib.utils'\n    deprecate('New', '1.1', message)\n",
    "lib/errors.py": "class BaseError(Exception):\n    pass\n\n\nclass OldError(BaseError):\n    'Its own type.'\n",
    "lib/outputs.py": "from .utils import New, deprecate\n\n\nclass Output(New):\n    def __init__(self, *args):\n"
                      "        message = f'Output is deprecated: {args}'\n        deprecate('Output', '1.1', message)\n"
                      "        super().__init__(*args)\n",
    "lib/dep_util.py": "import warnings\nfrom .utils import New\n\n\ndef __getattr__(name):\n"
                       "    warnings.warn('dep_util is deprecated: use `lib.modified` instead')\n"
                       "    return getattr(New, name)\n",
    "lib/queues.py": "class EmptyQueue(Exception):\n    pass\n",
    "lib/train.py": "import logging\nlogger = logging.getLogger(__name__)\n\n\ndef fit():\n    return 2\n",
    "lib/log.py": "import logging\nlogger = logging.getLogger(__name__)\n",
    "lib/image.py": "def isPath(f):\n    return isinstance(f, str)\n",
    "lib/flags.py": "HAS_TRITON = False\nHAS_CUDA = False\n",
    "lib/ops.py": "__all__ = ['add']\n__all__.append('sqrt')\n\n\ndef add(a, b):\n    return a + b\n\n\n"
                  "def sqrt(a):\n    return a ** 0.5\n",
}
NEW = {
    "lib/__init__.py": "from .utils import New\n_import_structure = {'models.sub.a': ['ModelA']}\n",
    "lib/utils/__init__.py": "from .torch_utils import New\n",
    "lib/utils/torch_utils.py": "def helper(x):\n    return x + 1\n\n\nclass New:\n    size = 1\n",
    "lib/models/__init__.py": "",
    "lib/models/sub/__init__.py": "",
    "lib/models/sub/a.py": "class ModelA:\n    def forward(self):\n        return 1\n",
    "lib/shim.py": "from .utils import New\n",
    "lib/errors.py": "class BaseError(Exception):\n    pass\n",
    "lib/outputs.py": "",
    "lib/modified.py": "def newer(a, b):\n    return a > b\n",
    "lib/cuda.py": "class DeferredError(Exception):\n    pass\n",
    "lib/train.py": "def fit():\n    return 2\n",
    "lib/log.py": "import logging\nlogger = logging.getLogger(__name__)\n",
    "lib/flags.py": ("def __getattr__(name):\n    if name == 'HAS_TRITON':\n        return False\n"
                     "    raise AttributeError(name)\n"),
    "lib/image.py": "def is_path(f):\n    return isinstance(f, str)\n",
}


def test_the_tool_reads_moves_aliases_and_removals_between_two_releases(tmp_path):
    tool = _tool()
    archives = {}
    for version, files in (("1.0", OLD), ("1.1", NEW)):
        path = tmp_path / f"lib-{version}-py3-none-any.whl"
        with zipfile.ZipFile(path, "w") as wheel:
            for name, text in files.items():
                wheel.writestr(name, text)
        archives[version] = tool.Release(tool.python_files(str(path), ("lib",)), ("lib",)).build(
            tool._packages(str(path), ("lib",)))
    assert archives["1.0"]["lib"]["ModelA"][:2] == ["class", "lib.models.a"]  # through _import_structure
    assert sorted(archives["1.0"]["lib.ops"]) == ["add", "sqrt"]  # __all__.append (torch's sym_sqrt)
    changes = tool.history(("lib",), ["1.0", "1.1"], archives.__getitem__)
    names, modules = changes["names"], changes["modules"]
    assert names["lib"]["helper"] == [["moved", "1.0", "1.1", "lib.utils.torch_utils:helper"]]
    assert names["lib"]["Old"] == [["alias", "1.0", "1.1", "lib.utils.torch_utils:New"]]
    assert names["lib.shim"]["Legacy"] == [["alias", "1.0", "1.1", "lib.utils.torch_utils:New"]]
    assert modules["lib.models.a"] == [["moved", "1.0", "1.1", "lib.models.sub.a"]]
    assert modules["lib.models.gone"] == [["removed", "1.0", "1.1"]]
    assert modules["lib.legacy"] == [["alias", "1.0", "1.1", "lib.utils.torch_utils"]]  # a module of shims
    assert "ModelA" not in names.get("lib", {})  # still importable from the top level
    assert names["lib.errors"]["OldError"] == [["removed", "1.0", "1.1"]]  # an empty subclass is another type
    assert names["lib.outputs"]["Output"] == [["alias", "1.0", "1.1", "lib.utils.torch_utils:New"]]  # it warned
    # what a module answered through __getattr__ cannot be read: not where its other names went (setuptools.dep_util)
    assert modules["lib.dep_util"] == [["removed", "1.0", "1.1", "lib.modified",
                                        "it answered names through __getattr__; its warning named lib.modified"]]
    # the same source is the same definition only where it names one: an empty body under another name is another
    # class (torch's EmptyQueue is no DeferredCudaCallError), a value built per module another object (lib.log's
    # logger is not lib.train's); a renamed function of a body found once before and once after is a move
    assert modules["lib.queues"] == [["removed", "1.0", "1.1"]] and "lib.queues" not in names
    assert names["lib.train"]["logger"] == [["removed", "1.0", "1.1", "lib.log:logger", "a different definition"]]
    assert names["lib.image"]["isPath"] == [["moved", "1.0", "1.1", "lib.image:is_path"]]
    # a name the module's __getattr__ compares its argument with is still answered (deepspeed's lazy HAS_TRITON);
    # one it does not name went
    assert names["lib.flags"] == {"HAS_CUDA": [["removed", "1.0", "1.1"]]}
