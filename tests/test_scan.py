"""`zeropatch check PATH` reads code without running it: every patch says what to look for, each patch's own repro is
found by it, and the forms of a signature (imports through aliases, classes derived in another file, keywords given
as None, launch options, configuration keys) each find what they should and nothing beside it."""

import sys
import textwrap

import pytest

from conftest import ROOT, assert_ok, requires, run_command
from zeropatch import _core
from zeropatch.check.dead_ends import dead_end
from zeropatch.check.findings import scan
from zeropatch.check.signatures import Signature

ZEROPATCH = [sys.executable, "-m", "zeropatch"]
PATCHES = [entry.patch for entry in _core._registry().values()]
# patches whose drift shows in no line of the code: what breaks depends on the run, not on what the code says
NOT_IN_CODE = {
    "ds_launcher_env": "DeepSpeed's multi-node launcher drops zeropatch's variables: a property of the launch",
    "param_names": "parameters replaced under DeepSpeed's engine (accelerate's offload): known only at run time",
    "fused_ema": "a speed-up of EMA loops, not a breakage",
    "pg_deepcopy": "copy.deepcopy of an object that holds a process group: what it holds is known only at run time",
    "t5_apex_norm": "a GPU machine with apex installed, whatever the code",
    "hf_llama_byte_level": "which checkpoint a LlamaTokenizer loads is data: byte-level ones break, SentencePiece not",
    "hf_llama_bos_default": "which checkpoint a LlamaTokenizer loads is data: those that do not give add_bos_token",
    "moved_names": "no signature: check names each import the installed release lacks through the API history itself",
    "colossalai_lr_scheduler": "a scheduler built on an object whose class (a ZeRO optimizer) is known only at run time",
}


def test_every_patch_says_what_check_looks_for_or_why_no_line_shows_it():
    for patch in PATCHES:
        assert bool(patch.looks_for) != (patch.name in NOT_IN_CODE), patch.name
        for text in patch.looks_for:
            Signature(text)  # raises on a malformed entry


@pytest.mark.parametrize("patch", [patch for patch in PATCHES if patch.looks_for], ids=lambda patch: patch.name)
def test_check_names_each_patch_in_its_own_repro(patch):
    repro = ROOT / "patches" / patch.name  # repro.py and the legacy code it runs beside it
    named = {finding.patch for finding in scan(str(repro), PATCHES).findings if finding.path.endswith(".py")}
    assert patch.name in named, f"{repro}: check found {sorted(filter(None, named))}"


def test_a_malformed_signature_names_the_valid_forms():
    for text in ("impor torch._six", "call", "override transformers.Trainer", "option evaluation_strategy", "key --x"):
        with pytest.raises(ValueError, match="valid forms are|starts with one of"):
            Signature(text)


class Sample:
    """A patch as the registry holds one, for the form tests."""

    def __init__(self, name, *looks_for, provides=False, package="sample"):
        self.name, self.looks_for, self.provides, self.package = name, looks_for, provides, package
        self.unfixable = ()


def found(tmp_path, files, *patches, python=None):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    findings = scan(str(tmp_path), list(patches), python).findings
    if patches:  # what the sample patches find; what no patch fixes is the last test's
        return sorted((finding.path, finding.line, finding.patch) for finding in findings if finding.patch)
    return sorted((finding.path, finding.line, finding.advice) for finding in findings)


def test_names_resolve_through_each_files_imports(tmp_path):
    files = {"a.py": """\
        import numpy as np
        from numpy import float as old_float
        import mylib.numpy as np2
        x = np.float
        y = np2.float
        z = np.float64
        """}
    assert found(tmp_path, files, Sample("aliases", "name numpy.float")) == [("a.py", 2, "aliases"), ("a.py", 4, "aliases")]


def test_imports_of_a_removed_module_and_its_submodules_but_not_a_guarded_provided_one(tmp_path):
    files = {"a.py": """\
        from torch._six import inf
        import torch._six.more
        from torch import _six
        import torch
        try:
            import xformers.ops
        except ImportError:
            xformers = None
        import xformers
        """}
    patches = (Sample("six", "import torch._six"), Sample("provided", "import xformers", provides=True))
    assert found(tmp_path, files, *patches) == [("a.py", 1, "six"), ("a.py", 2, "six"), ("a.py", 3, "six"),
                                                ("a.py", 9, "provided")]


def test_calls_through_classes_derived_in_another_file_with_and_without_keywords(tmp_path):
    files = {
        "pkg/trainer.py": """\
            import transformers
            class MyTrainer(transformers.Trainer):
                def compute_loss(self, model, inputs, return_outputs=False):
                    return 0
                def training_step(self, model, inputs, **kwargs):
                    return 0
            class Model(transformers.LlamaForCausalLM):
                pass
            """,
        "train.py": """\
            import torch
            from pkg.trainer import MyTrainer, Model
            trainer = MyTrainer(model=None, tokenizer=None)
            plain = MyTrainer(model=None, processing_class=None)
            a = Model.from_pretrained("path")
            b = Model.from_pretrained("path", torch_dtype=torch.float16 if True else None)
            c = Model.from_pretrained("path", torch_dtype=torch.float16)
            """}
    patches = (Sample("tokenizer", "call transformers.Trainer with tokenizer"),
               Sample("dtype", "call transformers.*ForCausalLM.from_pretrained without torch_dtype|dtype"),
               Sample("overrides", "override transformers.Trainer compute_loss", "override transformers.Trainer training_step"))
    assert found(tmp_path, files, *patches) == [("pkg/trainer.py", 3, "overrides"), ("train.py", 3, "tokenizer"),
                                                ("train.py", 5, "dtype"), ("train.py", 6, "dtype")]


def test_methods_of_unnamed_objects_attributes_definitions_and_dict_keys(tmp_path):
    files = {"a.py": """\
        import os
        from transformers import PreTrainedModel
        size = draw.textsize("caption")
        other = os.path.getsize("file")
        config.rope_scaling = {"type": "linear"}
        class Legacy(PreTrainedModel):
            def __init__(self, config):
                self.freqs.requires_grad = False
        class Modern(PreTrainedModel):
            def __init__(self, config):
                self.post_init()
        ds = {"zero_optimization": {"cpu_offload_params": True}}
        """}
    patches = (Sample("methods", "call *.textsize", "call *.getsize"), Sample("rope", "attribute rope_scaling"),
               Sample("post_init", "define transformers.PreTrainedModel __init__ without post_init"),
               Sample("frozen", "define transformers.PreTrainedModel __init__ with requires_grad"),
               Sample("keys", "key cpu_offload_params"))
    assert found(tmp_path, files, *patches) == [("a.py", 3, "methods"), ("a.py", 5, "rope"), ("a.py", 7, "frozen"),
                                                ("a.py", 7, "post_init"), ("a.py", 12, "keys")]


def test_a_keyword_given_the_value_that_breaks_or_one_that_may_hold_it(tmp_path):
    files = {"save.py": """\
        model.save_pretrained("out", safe_serialization=False)
        model.save_pretrained("out", safe_serialization=True)
        model.save_pretrained("out", safe_serialization=args.safe_serialization)
        model.save_pretrained("out", safe_serialization=0)
        model.save_pretrained("out")
        """}
    patches = (Sample("pickles", "call *.save_pretrained with safe_serialization=False"),)
    assert found(tmp_path, files, *patches) == [("save.py", 1, "pickles"), ("save.py", 3, "pickles")]
    with pytest.raises(ValueError, match="not a Python literal"):
        Signature("call *.save_pretrained with safe_serialization=no")


def test_launch_options_in_either_spelling_and_keys_in_configuration_files(tmp_path):
    files = {"scripts/finetune.sh": """\
                 torchrun train.py --evaluation_strategy "no" \\
                     --evaluation-strategy no --eval_strategy no --evaluation_strategy_x 1
                 """,
             "ds.json": '{"zero_optimization": {"cpu_offload_params": true, "offload_param": {}}}\n'}
    patches = (Sample("options", "option --evaluation_strategy"), Sample("keys", "key cpu_offload_params"))
    assert found(tmp_path, files, *patches) == [("ds.json", 1, "keys"), ("scripts/finetune.sh", 1, "options"),
                                                ("scripts/finetune.sh", 2, "options")]


def test_a_key_given_a_value_that_breaks_in_configuration_files_and_dict_literals(tmp_path):
    """``key NAME matching REGEX``: the value as written must match (ds_config_keys' fractional min_loss_scale), in a
    JSON / YAML file and a Python dict literal; whole numbers are left alone."""
    from zeropatch.patches.deepspeed.ds_config_keys import FRACTION

    files = {"ds.json": '{"fp16": {"min_loss_scale": 1e-10}}\n{"fp16": {"min_loss_scale": 1}}\n',
             "ds.yaml": "fp16:\n  min_loss_scale: 0.0001\n  min_loss_scale: 2.0\n",
             "train.py": 'CONFIG = {"fp16": {"min_loss_scale": 1e-10}}\nOTHER = {"min_loss_scale": 1}\n'}
    assert found(tmp_path, files, Sample("floor", f"key min_loss_scale matching {FRACTION}")) == [
        ("ds.json", 1, "floor"), ("ds.yaml", 2, "floor"), ("train.py", 1, "floor")]
    # a string value as a configuration file writes it, without its quotes (timm_legacy_optimizers' optimizer names)
    files = {"deit.yaml": "opt: radam\nopt: adamw\n", "main.py": 'ARGS = {"opt": "lookahead_nadam"}\nB = {"opt": "adamw"}\n'}
    assert found(tmp_path / "names", files, Sample("names", "key opt matching (lookahead_)?(radam|nadam)")) == [
        ("deit.yaml", 1, "names"), ("main.py", 1, "names")]
    with pytest.raises(ValueError, match="not a regular expression"):
        Signature("key min_loss_scale matching (")


def test_a_string_the_code_builds_a_value_from_but_not_a_docstring(tmp_path):
    """``string REGEX``: a literal, an f-string's text or a ``.format`` template, and a launch file's line
    (python_bracketed_host's bracketed host); an IPv6 literal is no match, nor a docstring (prose)."""
    looks_for = _core._registry()["python_bracketed_host"].patch.looks_for[0]
    files = {"launch.py": '''\
        """Starts the job at tcp://[MASTER]:PORT."""
        import os
        A = f"tcp://[{os.environ['MASTER_ADDR']}]:{os.environ['MASTER_PORT']}"
        B = "tcp://[{}]:{}".format("node-1", 29500)
        C = "tcp://[::1]:29500"
        D = "tcp://127.0.0.1:29500"
        ''', "run.sh": "python train.py --dist-url tcp://[$MASTER_ADDR]:29500\npython train.py --dist-url tcp://[fe80::1]:1\n"}
    assert found(tmp_path, files, Sample("brackets", looks_for)) == [
        ("launch.py", 3, "brackets"), ("launch.py", 4, "brackets"), ("run.sh", 1, "brackets")]
    with pytest.raises(ValueError, match="not a regular expression"):
        Signature("string tcp://[")


def test_an_option_of_a_librarys_command_line_only_where_the_repository_uses_that_command_line(tmp_path):
    """``option --NAME of DOTTED``: a diffusers-style script's own ``--logging_dir`` (its argparse defines it) is not
    TrainingArguments' option, nor one in a repository that never names HfArgumentParser / TrainingArguments; one that
    reaches HfArgumentParser is (the real hf_training_args signatures, then the form itself)."""
    own = {"train_dreambooth.py": """\
               import argparse
               import transformers
               parser = argparse.ArgumentParser()
               parser.add_argument("--logging_dir", type=str, default="logs")
               tokenizer = transformers.AutoTokenizer.from_pretrained("x")
               """,
           "launch.sh": "accelerate launch train_dreambooth.py --logging_dir=logs\n"}
    hf_training_args = [patch for patch in PATCHES if patch.name == "hf_training_args"]
    assert found(tmp_path / "own", own, *hf_training_args) == []
    assert found(tmp_path / "none", {"run.sh": "python train.py --logging_dir logs\n", "train.py": "import sys\n"},
                 *hf_training_args) == []
    parsed = {"train.py": """\
                  from transformers import HfArgumentParser, TrainingArguments
                  parser = HfArgumentParser((TrainingArguments,))
                  """,
              "run.sh": "torchrun train.py --logging-dir logs --evaluation_strategy no\n"}
    assert found(tmp_path / "parsed", parsed, *hf_training_args) == [("run.sh", 1, "hf_training_args")] * 2
    sample = Sample("options", "option --bf16 of transformers.*TrainingArguments|lightning.Trainer")
    derived = {"args.py": "import transformers\nclass Args(transformers.Seq2SeqTrainingArguments):\n    pass\n",
               "run.sh": "python args.py --bf16\n"}
    assert found(tmp_path / "derived", derived, sample) == [("run.sh", 1, "options")]
    with pytest.raises(ValueError, match="valid forms are"):
        Signature("option --bf16 for transformers.TrainingArguments")


def test_dataclass_fields_defaulting_to_an_unhashable_dataclass_of_the_repository(tmp_path):
    """``default dataclasses.dataclass``: fairseq's ``common: CommonConfig = CommonConfig()`` (the class in another
    file), ``field(default=...)``; not a frozen / unsafe_hash / eq=False class's instance, a default_factory, a
    library's class, nor a plain class's field."""
    files = {"configs/groups.py": """\
                 import dataclasses
                 @dataclasses.dataclass
                 class CommonConfig:
                     seed: int = 1
                 @dataclasses.dataclass(frozen=True)
                 class Frozen:
                     seed: int = 1
                 @dataclasses.dataclass(eq=False)
                 class Identity:
                     seed: int = 1
                 """,
             "configs/top.py": """\
                 from dataclasses import dataclass, field
                 from configs.groups import CommonConfig, Frozen, Identity
                 from library import LibraryConfig
                 @dataclass
                 class FairseqConfig:
                     common: CommonConfig = CommonConfig()
                     other: CommonConfig = field(default=CommonConfig(seed=2))
                     made: CommonConfig = field(default_factory=CommonConfig)
                     frozen: Frozen = Frozen()
                     identity: Identity = Identity()
                     library: LibraryConfig = LibraryConfig()
                 class Plain:
                     common: CommonConfig = CommonConfig()
                 """}
    sample = Sample("defaults", "default dataclasses.dataclass")
    assert found(tmp_path, files, sample) == [("configs/top.py", 6, "defaults"), ("configs/top.py", 7, "defaults")]


def test_python_s_own_drift_breaks_from_the_release_each_patch_names():
    from zeropatch.check.verdicts import breaks_here

    registry = _core._registry()
    defaults, removed = registry["python_dataclass_defaults"].patch, registry["python_removed_modules"].patch
    assert [breaks_here(defaults, python)[0] for python in ((3, 10), (3, 11), (3, 13))] == [False, True, True]
    assert [breaks_here(removed, python)[0] for python in ((3, 11), (3, 12))] == [False, True]


def test_a_release_newer_than_the_last_one_run_is_named_untested(monkeypatch):
    """A verdict outside the patch's own claim (hf_post_init declares 5.0.0-5.23.0; 5.25.0 installed) says so: it read
    "5.25.0 installed; affected: 5.0.0-5.23.0", as if the line contradicted itself."""
    from zeropatch.check import verdicts

    patch = _core._registry()["hf_post_init"].patch
    for version, says in (("4.51.3", "older than the drift"), ("5.10.1", "5.10.1 installed; affected"),
                          ("5.23.0", "5.23.0 installed; affected"), ("5.25.0", "untested on it (the last release run "
                                                                               "is 5.23.0): taken to break")):
        monkeypatch.setattr(verdicts, "installed_version", lambda package, version=version: version)
        assert says in verdicts.breaks_here(patch)[1], (version, verdicts.breaks_here(patch))


def test_files_that_start_with_a_byte_order_mark_are_read(tmp_path):
    (tmp_path / "train.py").write_text("\ufeffimport numpy as np\nx = np.float\n", encoding="utf-8")
    (tmp_path / "run.sh").write_text("\ufeff--evaluation_strategy no\n", encoding="utf-8")
    samples = [Sample("aliases", "name numpy.float"), Sample("options", "option --evaluation_strategy")]
    result = scan(str(tmp_path), samples)
    assert result.unreadable == [] and result.python_files == 1 and result.launch_files == 1
    assert sorted((finding.path, finding.line, finding.patch) for finding in result.findings) == [
        ("run.sh", 1, "options"), ("train.py", 2, "aliases")]


def test_pins_of_old_releases_of_another_library_in_the_repository_requirement_files(tmp_path):
    """``pin DIST<VERSION``: a requirement that admits only releases before VERSION (exact, upper-bounded, conda's
    ``=``); ``pin DIST``: any requirement of it, also a VCS install; in a folder's requirement files and those above it
    up to the repository's root, not beyond."""
    repository = tmp_path / "repository"
    (repository / ".git").mkdir(parents=True)
    (tmp_path / "requirements.txt").write_text("diffusers==0.20.0\n")  # above the repository: not its pin
    files = {"environment.yml": """\
                 dependencies:
                   - pip:
                     - diffusers[torch]==0.24.0
                     - -e git+https://github.com/openai/CLIP.git@main#egg=clip
                 """,
             "requirements.txt": "diffusers<0.28\ndiffusers>=0.24\ndiffusers<=0.29\ndiffusers~=0.27.0\nclipper\n",
             "sub/requirements.txt": "diffusers==0.20.0\n"}
    patches = (Sample("old_diffusers", "pin diffusers<0.29"), Sample("clip", "pin clip"))
    in_root = [("environment.yml", 3, "old_diffusers"), ("environment.yml", 4, "clip"),
               ("requirements.txt", 1, "old_diffusers"), ("requirements.txt", 4, "old_diffusers")]
    assert found(repository, files, *patches) == [*in_root, ("sub/requirements.txt", 1, "old_diffusers")]
    above = [(str(repository / name), line, patch) for name, line, patch in in_root]
    assert found(repository / "sub", {}, *patches) == sorted([*above, ("requirements.txt", 1, "old_diffusers")])
    for text in ("pin diffusers<0.x", "pin <0.29"):
        with pytest.raises(ValueError, match="is not a release|valid forms are"):
            Signature(text)


def test_what_no_patch_fixes_missing_installs_python_removals_compiled_extensions(tmp_path):
    files = {"train.py": """\
                 import imp
                 import local_helpers
                 from models.net import Net
                 import zp_not_installed_anywhere
                 try:
                     import zp_optional_accelerator
                 except ImportError:
                     pass
                 from torch.utils.cpp_extension import load
                 from torchtext.data.utils import get_tokenizer
                 """,
             "local_helpers.py": "",
             "models/net.py": "",
             "kernels/attention.cu": "__global__ void k() {}\n"}
    on_3_12 = [advice.split(":")[0] for _, _, advice in found(tmp_path, files, python=(3, 12))]
    no_build = ["torchtext"] if dead_end("torchtext") else []  # torch >= 2.4, every session's: its last build is 2.3's
    assert on_3_12 == ["CUDA source", "imp was removed in Python 3.12", "zp_not_installed_anywhere is not installed here",
                       "a compiled extension", *no_build], on_3_12
    on_3_11 = [advice.split(":")[0] for _, _, advice in found(tmp_path, files, python=(3, 11))]
    assert "imp was removed in Python 3.12" not in on_3_11 and len(on_3_11) == 3 + len(no_build)


def test_check_of_a_folder_breaks_without_zeropatch_and_is_fixed_with_it(tmp_path):
    (tmp_path / "train.py").write_text("import torch\nfrom torch._six import inf\nstate = torch.load('model.pt')\n")
    (tmp_path / "requirements.txt").write_text("torch==1.13.1\n")
    without = run_command(ZEROPATCH + ["check", "--patches", "0", tmp_path])
    assert without.returncode == 1, without.stdout + without.stderr
    assert "BREAKS  train.py:2  from torch._six import inf" in without.stdout, without.stdout
    assert "BREAKS  train.py:3" in without.stdout and "torch_load (default patch, off here" in without.stdout
    assert "pin     requirements.txt: torch==1.13.1, installed " in without.stdout, without.stdout
    with_zeropatch = run_command(ZEROPATCH + ["check", tmp_path])
    assert_ok(with_zeropatch)
    assert "fixed   train.py:2" in with_zeropatch.stdout and "2 breakages fixed by the selected patches, 0 not fixed" \
        in with_zeropatch.stdout, with_zeropatch.stdout
    bad = run_command(ZEROPATCH + ["check", "--python", "3", tmp_path])
    assert bad.returncode == 2 and "MAJOR.MINOR" in bad.stderr


def test_a_script_is_read_with_the_files_of_its_repository_it_reaches(tmp_path):
    """``check SCRIPT``: the script's own imports beside it (relative ones too), theirs in turn, and the modules that
    dotted paths name in its strings and in the configuration files it is given or names (latent-diffusion's
    ``--base x.yaml`` with ``target: ldm.models...``): their drift is found there; a file nothing reaches is not read."""
    files = {
        "main.py": "import sys\nfrom ldm.util import instantiate\nmodel = instantiate(sys.argv[1])\n",
        "ldm/util.py": "from .data import loader\nimport yaml\ndef instantiate(path):\n    return yaml.safe_load(path)\n",
        "ldm/data.py": "from torch._six import inf\n",
        "ldm/models/ddpm.py": "import numpy as np\nDTYPE = np.float\n",
        "ldm/unused.py": "from torch._six import string_classes\n",
        "configs/tiny.yaml": "model:\n  target: ldm.models.ddpm.LatentDiffusion\n",
        "train.py": "CONFIG = './configs/tiny.yaml'\nimport ldm.util\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    reached = {("ldm/data.py", 1, "torch_six"), ("ldm/models/ddpm.py", 2, "numpy_aliases")}
    for configuration in ("configs/tiny.yaml", str(tmp_path / "configs" / "tiny.yaml")):  # from the script's folder too
        found = {(finding.path, finding.line, finding.patch)
                 for finding in scan(str(tmp_path / "main.py"), PATCHES, arguments=["--base", configuration]).findings}
        assert found == reached, (configuration, found)
    found = {(finding.path, finding.line, finding.patch) for finding in scan(str(tmp_path / "main.py"), PATCHES).findings}
    assert found == {("ldm/data.py", 1, "torch_six")}, found  # no configuration: the model's module is not reached
    found = {(finding.path, finding.line, finding.patch) for finding in scan(str(tmp_path / "train.py"), PATCHES).findings}
    assert found == reached, found  # the configuration named in the script's strings


def test_a_release_asserted_at_run_time_is_named_when_another_is_installed(tmp_path):
    import importlib.metadata

    installed = importlib.metadata.version("wrapt")
    files = {"main_pretrain.py": f"""\
                 import wrapt as w
                 assert w.__version__ == "0.3.2"  # version check (MAE's, of timm)
                 assert w.__version__ == "{installed}"
                 assert w.__version__ >= "0.3"
                 """}
    assert found(tmp_path, files) == [
        ("main_pretrain.py", 2, f"asserts wrapt 0.3.2, {installed} is installed: the script stops here, and no patch "
                                "changes a version; run it with python -O (asserts skipped) or delete the line")]


def test_a_library_module_that_needs_another_distribution_names_it(tmp_path):
    """``torch.utils.tensorboard`` imports tensorboard, which torch does not require: where it is not installed, check
    names it (it named nothing for vits, ViT-pytorch and PyTorch-YOLOv3, whose training loggers import it)."""
    import importlib.util
    import sys

    from conftest import run_command

    if importlib.util.find_spec("tensorboard") is not None:
        pytest.skip("tensorboard is installed here")
    (tmp_path / "train.py").write_text("from torch.utils.tensorboard import SummaryWriter\n")
    result = run_command([sys.executable, "-m", "zeropatch", "check", "--static", str(tmp_path)])
    assert "NO FIX  train.py:1" in result.stdout and "tensorboard is not installed here" in result.stdout, result.stdout


def test_the_standard_modules_a_python_release_removed_are_named_with_what_stands_in(tmp_path):
    """PEP 594's dead batteries (3.12: asyncore, asynchat, smtpd; 3.13: imghdr, pipes, audioop, lib2to3, ...) read as
    what the job's Python removed, with the copy on PyPI to install, never as a distribution missing here; an import
    that a ``try`` guards is not a break; ``explain`` says the same of the error on such a Python."""
    from zeropatch.check.stdlib_removals import REMOVED, removals_for_error

    files = {"data.py": """\
                 import imghdr
                 from pipes import quote
                 import audioop
                 from asyncore import loop
                 import lib2to3.pgen2.driver
                 try:
                     import telnetlib
                 except ImportError:
                     telnetlib = None
                 """}
    on_3_13 = [advice for _, _, advice in found(tmp_path, files, python=(3, 13))]
    assert on_3_13 == [
        "imghdr was removed in Python 3.13: pip install standard-imghdr (3.12's module), or ask Pillow: "
        "Image.open(path).format",
        "pipes was removed in Python 3.13: pip install standard-pipes (3.12's module); its quote is shlex.quote",
        "audioop was removed in Python 3.13: pip install audioop-lts (the same functions, for 3.13 and later)",
        "asyncore was removed in Python 3.12: pip install standard-asyncore (3.11's module), or use asyncio",
        "lib2to3 was removed in Python 3.13: no copy of it is published: yapf >= 0.40 carries its own, black and "
        "libcst parse without it"], on_3_13
    on_3_12 = [advice.split(":")[0] for _, _, advice in found(tmp_path, files, python=(3, 12))]
    assert on_3_12 == ["asyncore was removed in Python 3.12"], on_3_12
    assert found(tmp_path, files, python=(3, 11)) == []
    assert all(module not in sys.stdlib_module_names or sys.version_info[:2] < release
               for module, (release, _) in REMOVED.items())  # the table agrees with this interpreter
    traceback = "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'imghdr'\n"
    assert removals_for_error(traceback, python=(3, 13)) == [("imghdr", (3, 13), REMOVED["imghdr"][1])]
    assert removals_for_error(traceback, python=(3, 12)) == []


def test_an_attribute_a_subclass_reads_that_the_installed_library_class_lacks_is_named(tmp_path):
    """SimCSE's TrainingArguments subclass reads ``self.no_cuda`` (transformers 5 removed the field): named at its line
    where the installed class and its bases lack it, never where anything could answer it: a field, a method or what a
    method assigns (its own, its bases', a repository class's between), what the repository sets on any object, a
    class with ``torch.nn.Module``'s ``__getattr__`` among its bases, or another library's."""
    import dataclasses

    import transformers

    from zeropatch.check.class_members import library_members

    files = {"train.py": """\
                 import torch
                 from sklearn.base import BaseEstimator
                 from transformers import TrainingArguments

                 class Ours(TrainingArguments):
                     def _setup(self):
                         self.cache = {}

                 class Arguments(Ours):
                     def device_kind(self):
                         if self.no_cuda:
                             return "cpu"
                         return self.output_dir, self.cache, self.to_dict(), self.set_elsewhere, self.no_cuda

                 class Net(torch.nn.Module):
                     def forward(self, x):
                         return self.no_cuda

                 class Estimator(BaseEstimator):
                     def fit(self):
                         return self.no_cuda

                 def configure(arguments):
                     arguments.set_elsewhere = True
                 """}
    removed = "no_cuda" not in {field.name for field in dataclasses.fields(transformers.TrainingArguments)}
    findings = [(line, advice.split(":")[0]) for _, line, advice in found(tmp_path, files) if "self." in advice]
    assert findings == ([(11, "self.no_cuda")] if removed else []), findings
    assert library_members("torch.nn.Module") is None  # its __getattr__ answers parameters and submodules
    assert {"output_dir", "to_dict"} <= library_members("transformers.TrainingArguments")


def test_imports_under_a_branch_the_installed_releases_never_take_are_no_breaks(tmp_path):
    """DPR (``if transformers.__version__.startswith("4")``), DETR (``version.parse(torchvision.__version__) <
    version.parse('0.7')``), Swin Transformer (a module-level major version compared): an import for another release
    is no break here. A test that cannot be read statically (a call it does not know, a name bound anywhere but once
    at the top level) leaves both branches read."""
    import importlib.metadata

    installed = importlib.metadata.version("wrapt")
    major = installed.split(".")[0]
    files = {"a.py": f"""\
        import sys
        import wrapt
        WRAPT_MAJOR = int(wrapt.__version__.split(".")[0])
        if wrapt.__version__.startswith("{major}."):
            import zp_missing_taken
        else:
            import zp_missing_not_taken
        if version.parse(wrapt.__version__) < version.parse("0.1"):
            import zp_missing_old
        elif WRAPT_MAJOR == {major} and sys.version_info >= (3, 0) and wrapt.__version__ >= "0.1":
            import zp_missing_elif_taken
        if wrapt.__version__ == wrapt.__version__.upper() or not callable(wrapt):
            import zp_missing_unread
        USE_OLD = WRAPT_MAJOR < 0
        def configure():
            global USE_OLD
            USE_OLD = True
        if USE_OLD:
            import zp_missing_rebound
        """}
    assert [(line, advice.split(" is not")[0]) for _, line, advice in found(tmp_path, files)] == [
        (5, "zp_missing_taken"), (11, "zp_missing_elif_taken"), (13, "zp_missing_unread"), (19, "zp_missing_rebound")]


@requires("transformers", "datasets")
def test_a_repository_s_own_package_of_a_library_s_name_and_a_module_a_lazy_library_never_had(tmp_path):
    """DETR and DDIM import their own ``datasets`` package (at the repository's root, found first), not the Hugging
    Face library of that name: no break. DPR imports ``transformers.modeling_bert`` (moved in 4.0, older than the API
    history): transformers' lazy ``__init__`` puts only itself in sys.modules, so the missing module is named."""
    files = {"main.py": "from datasets import build_dataset\nimport datasets.transforms as T\n"
                        "from transformers.modeling_bert import BertModel\n",
             "datasets/__init__.py": "def build_dataset(image_set):\n    return image_set\n",
             "datasets/transforms.py": ""}
    assert [(path, line, advice.split(" in the installed")[0]) for path, line, advice in found(tmp_path, files)] == [
        ("main.py", 3, "no module transformers.modeling_bert")]


def test_the_entry_points_path_comes_first_the_rest_by_cause_and_what_needs_a_gpu_apart(tmp_path):
    """Issue #54 item 3: a repository's entry points (its README's launch commands, console scripts, ``train*.py``)
    and what they reach are shown line by line first; its tests and the rest one line per cause (``--all``: line by
    line); what breaks here only because this machine has no GPU apart; a README's prose is no launch command, its
    code blocks are."""
    files = {"README.md": "Pass --bf16 for speed.\n\n```\ntorchrun --nproc_per_node 8 train.py --bf16\n```\n",
             "train.py": "import torch\nfrom models.net import Net\nstate = torch.load('x.pt')\nmodel = Net().cuda()\n",
             "models/__init__.py": "", "models/net.py": "from torch._six import inf\nNet = object\n",
             "tests/test_old.py": "from torch._six import string_classes\nimport zp_missing_lib\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    shown = run_command(ZEROPATCH + ["check", tmp_path])
    out = shown.stdout
    assert out.startswith("entry points: train.py (README.md)"), out
    entry, rest = out.split("the rest of the repository")
    assert "fixed   train.py:3" in entry and "fixed   models/net.py:1" in entry, out
    rest, gpu = rest.split("needs a GPU")
    assert "tests/test_old.py" not in entry and "NO FIX  1 line in 1 file (tests/test_old.py:2, ...): zp_missing_lib" \
        in rest and "fixed   1 line in 1 file (tests/test_old.py:1, ...): torch_six" in rest, out
    assert "2 lines in 2 files" in gpu and "cpu_rehearsal" in gpu and "README.md:1" not in out, out
    assert shown.returncode == 1 and "1 not fixed (0 of them on the entry points' path)" in out, out
    every = run_command(ZEROPATCH + ["check", "--all", tmp_path]).stdout
    assert "fixed   tests/test_old.py:1" in every and "README.md:4" in every, every


def test_a_missing_module_imported_only_under_an_option_is_a_note_that_says_so(tmp_path):
    """deep-text-recognition-benchmark imports warpctc_pytorch only ``if opt.baiduCTC:``: check cannot know whether a
    run takes that path, so the missing install is a note naming the condition, not a NO FIX; an import every run
    meets (at the top, or under ``if __name__ == "__main__":``) still is one."""
    files = {"train.py": """\
        import argparse

        def train(opt):
            if opt.baiduCTC:
                from zp_not_installed_ctc import CTCLoss
            else:
                import zp_not_installed_other

        if __name__ == "__main__":
            import zp_not_installed_main
        """}
    found_ = found(tmp_path, files)
    assert sorted(advice.split(",")[0].split(":")[0] for _, _, advice in found_) == [
        "zp_not_installed_ctc is not installed here", "zp_not_installed_main is not installed here",
        "zp_not_installed_other is not installed here"], found_
    advice = dict((advice.split(" ")[0], advice) for _, _, advice in found_)
    assert "imported only where `if opt.baiduCTC:` (train.py:4) holds" in advice["zp_not_installed_ctc"]
    assert "imported only where" in advice["zp_not_installed_other"]
    assert "imported only where" not in advice["zp_not_installed_main"]
    shown = run_command(ZEROPATCH + ["check", tmp_path]).stdout
    assert "note    train.py:5  from zp_not_installed_ctc import CTCLoss" in shown, shown
    assert "NO FIX  train.py:10  import zp_not_installed_main" in shown, shown
