"""Test environments, each with the real targets on CPU (gloo), built once and reused.

- ``tests(colossalai='0.4.0')``: torch 2.13.0 (the CPU build, for speed), colossalai 0.4.0 (last release with
  ``_param_store``) with the transformers / peft it pins, pandas 2, numpy 1.26, setuptools 81 (the last with
  pkg_resources) and datasets 2.21 (the last with load_metric), diffusers 0.24 (Latte's pin): where the
  newer patches must report ``not-needed``, and the pkg_resources stand-in is compared with the real one. No
  xformers: the opt-in xformers_sdpa provides it.
- ``frozen``: not in CI; the stack ``today`` had when 0.6.0 was made, frozen: torch 2.13.0's CPU build, colossalai 0.5.0,
  transformers 5.24.0 / peft 0.21 / pandas 3.1 / numpy 2.4 / setuptools 84 (no pkg_resources) / datasets 5,
  diffusers 0.24, xformers 0.0.35 (built for torch 2.10 + CUDA: its operators do not load there). When ``today`` fails
  after an upstream release, it tells whether the drift did it. It was a CI session until 0.6.0: ``today`` holds
  colossalai 0.5.0 itself and the 0.4.0 session torch 2.13 and diffusers 0.24, so it ran again what those two run,
  and the tests of each library that had moved on since its pins (transformers 5.25 on 2026-12-04: 15 minutes and
  three skips over its budget, a failure made by no change of the project). It has no skip budget: what it skips
  depends on how far ``today`` has moved from it; it prints them.
- ``today``: everything unpinned, as a plain ``pip install`` gives it today: the registry's default torch (a CUDA
  build of several GB, which runs on a CPU machine), torchvision, transformers, peft, pandas, av, deepspeed,
  accelerate, yapf, omegaconf, xformers, timm (it needs torchvision: only here), diffusers, datasets, evaluate,
  sentencepiece (every session: the LLaMA fine-tuners' tokenizer.model, which transformers reads with it and protobuf,
  which tensorboardX brings);
  colossalai 0.5.0; mmcv 1.7.0 (PixArt-alpha's pin, built with setuptools < 70, see
  patches/mmcv_yapf). The versions it got are printed first.
- ``sweep``: the release sweep behind the documentation's compatibility table (``python3 -m nox -s sweep``).
- ``example``: the main job (on the ``today`` stack: its script imports torchvision).
- ``docs``: the documentation site (MkDocs with Material), built strict into build/site: the catalogue is written from
  the patch declarations (tools/docs_hooks.py), and a broken link, a missing page or a stale changelog list fails it.
- ``package``: the release artefacts: wheel and sdist built (``python -m build``), ``twine check``, the wheel installed
  into an empty environment where ``zeropatch --version`` and the start-up hook answer.
- ``peer_suites``: the libraries' own test suites with zeropatch off and on (``python3 -m nox -s peer_suites``; not CI):
  every difference is listed with its reason in compat/peer_suites/, or the run fails (tools/peer_suite.py).

The pinned session leaves out the ordering matrix (tests/test_orderings.py): the ``today`` session runs its cases for the
fewest patches that change a library in every way a patch can, and the release sweep runs every
patch's cases on each release of its stack. ``today``
runs first and records the release of every distribution it installed (``.nox/today-releases.json``); a pinned
session then runs again only what its releases can change (tests/conftest.py, ``runs_in_a_pinned_session``): ``today``
just ran the rest, and it exists for the releases ``today`` does not have. Where ``today`` never ran, a pinned session
runs all.

Each CI test session has a skip budget (SKIP_BUDGET): a run that skips more fails, naming what it skipped. Some install
an old release beside their own (REFERENCES: transformers 4.49.0 in 0.4.0, torchvision 0.25.0 in today), with which
the tests compare what a patch restores, bit for bit.

colossalai is installed with --no-deps (its metadata pins torch<=2.5.1 and transformers==4.51.3) and then only
what its import really needs. DeepSpeed is built from source with its shared-memory communication op compiled
at install time (DS_BUILD_SHM_COMM=1): nothing is JIT-compiled at run time, so no run reads or writes the user's
~/.cache/torch_extensions. Each DeepSpeed release is built once per Python and torch release, into a wheel kept beside
pip's cache (``wheel_cache``), which every session and later run with the same three installs. The CPU sessions go through tests/constraints.txt, so that no package can drag in
a CUDA build of torch.
"""

import glob
import os
import shutil
import tempfile
import time

import nox

nox.options.sessions = ["today", "tests", "docs", "package"]
nox.options.reuse_existing_virtualenvs = True

CONSTRAINTS = ("-c", "tests/constraints.txt")
COLOSSALAI_IMPORT_NEEDS = ["galore-torch", "bitsandbytes", "safetensors", "einops", "psutil", "numpy"]
LEGACY_DIFFUSERS = "diffusers==0.24.0"  # Latte's pin, which imports what huggingface_hub removed (hf_hub_legacy)
STACKS = {  # colossalai release -> the transformers / peft / pandas / numpy / setuptools / xformers stack it is tested with
    # (0.5.0: the frozen session's)
    "0.5.0": ["transformers==5.24.0", "peft==0.21.2", "pandas==3.1.1", "numpy==2.4.6", "setuptools==84.2.1",
              "xformers==0.0.35",  # built for torch 2.10 + CUDA: on torch 2.13's CPU build its operators do not load
              LEGACY_DIFFUSERS, "datasets==5.2.0"],
    "0.4.0": ["transformers==4.51.3", "peft==0.13.2", "pandas==2.3.3", "numpy==1.26.4", "setuptools==81.0.0",
              LEGACY_DIFFUSERS, "datasets==2.21.0",  # the last datasets with its own load_metric
              "pyarrow==21.0.0"],  # one that loads on numpy 1.26 (pyarrow 26 needs numpy 2)
}  # (no xformers with 0.4.0: there, xformers_sdpa provides it)
MMCV = "mmcv==1.7.0"
MMCV_BUILD = {"PIP_BUILD_CONSTRAINT": "tests/build_constraints.txt"}  # pip >= 25.3: the isolated build environment
DEEPSPEED = "deepspeed==0.19.8"
TEST_TOOLS = ("pytest", "pytest-timeout", "pytest-xdist")
REQUIRED_CPU = ("torch,deepspeed,accelerate,colossalai,transformers,pandas,pandarallel,numpy,omegaconf,openai,pytorch_lightning,"
                "tensorboardX,datasets,evaluate,sentencepiece")
REQUIRED = {"0.5.0": REQUIRED_CPU + ",xformers,diffusers", "0.4.0": REQUIRED_CPU + ",diffusers"}
REQUIRED_TODAY = REQUIRED_CPU + ",torchvision,torchaudio,soundfile,av,yapf,mmcv,xformers,timm,diffusers"
# the skips each session expects (tests of what its releases do not have: torchvision in the CPU sessions, the
# not-needed side of a patch, ...); more fails the run, listing the reasons (tests/conftest.py)
SKIP_BUDGET = {"0.4.0": 66, "today": 8}  # both: +1 the attention kernels' CUDA-only test, +1
# python_dataclass_defaults' comparison with a real Python 3.10 (where neither ZEROPATCH_TEST_PYTHON310, PATH nor
# pyenv has one), +1
# hf_attn_mask_utils (the module it provides is compared with the library's own where that still exists, < 5.24;
# today's has none); 0.4.0: +2 test_history's check against the installed diffusers (0.24, which does not import on
# its huggingface_hub without zeropatch) and timm (not installed), +1 check's pkg_resources findings (its setuptools
# 81 has the real module: nothing breaks), moved_names +1 (diffusers 0.24 still has its old pipelines) +5
# (transformers 4.51.3 still has the helpers in modeling_utils: four tests and the repro); +5 hf_load_in_8bit (transformers 4.51.3),
# +2 hf_fsdp_version's tests (transformers >= 5.10), +6 the datasets patches' tests of what datasets >= 3.0 lacks
# (datasets 2.21.0 there: their repros run not-needed), +1 peft_adapter_bin's repro (transformers 4.51.3's Trainer
# asks for safetensors itself), +10 the tests of what transformers 4.52 to 5.13 changed for remote-code models
# (hf_cache_legacy_api 5, hf_generation_mixin 2, hf_generate_position_ids 1, hf_generate_tuple_cache 1,
# hf_rope_scaling 1), +2 hf_safe_serialization (4.51.3 still writes .bin itself). The tests of what it lacks and
# `today` holds (timm, torchvision, torchaudio, yapf, xformers: 36 skips until 2026-12-07) are left to `today`
# each CI test session's share of time, in interpreter starts (tests/time_budget.py: the session's wall time over one
# fresh `python -c "import torch"` on the same machine, so that a slow machine does not fail it); over it, the session
# fails naming its slowest tests
# measured 348 and 185 on 2026-12-07 (77 patches); with 79 patches, on clean clones the same afternoon, 427 and 540
# for today (wall 1,524 and 1,552 s: the unit, measured then at the start only, was 3.57 and 2.87 s) and 203 for
# 0.4.0. The unit is now the slower of a start and an end measure (tests/time_budget.py)
TIME_BUDGET = {"today": 600, "0.4.0": 280}
# the old releases a session installs beside its own (pip --target, no dependencies; never on its path): the tests
# compare what a patch restores with the release that had it, bit for bit, or run one on the session's stack as a
# legacy repository pins it (tests/conftest.py: reference_release)
PILLOW_9 = "pillow==9.5.0"  # the last Pillow with textsize / getsize (pillow_aliases)
REFERENCES = {"0.5.0": [PILLOW_9],
              "0.4.0": ["transformers==4.49.0", PILLOW_9],  # the last transformers with its own AdamW (transformers_adamw)
              # the last torchvision with video I/O (torchvision_video), the last torchaudio with its own backends,
              # Latte's diffusers, whose pipelines import what transformers 5 removed (hf_removed_names)
              "today": ["torchvision==0.25.0", "torchaudio==2.8.0", PILLOW_9, LEGACY_DIFFUSERS,
                        # timm's own optimizers under their old names (1.0.11), and its NovoGrad (0.4.12)
                        "timm==1.0.11", "timm==0.4.12"]}
TARGETS = ("torch", "torchvision", "torchaudio", "soundfile", "colossalai", "deepspeed", "accelerate", "transformers",
           "peft", "pandas", "pandarallel", "av", "numpy", "setuptools", "yapf", "mmcv", "omegaconf", "xformers", "timm", "diffusers", "huggingface_hub", "pillow", "pyyaml", "openai", "pytorch-lightning", "datasets", "evaluate", "sentencepiece", "wrapt")
DS_OP_BUILT = (
    "import glob, os, sys, importlib.util; spec = importlib.util.find_spec('deepspeed'); "
    "sys.exit(0 if spec and glob.glob(os.path.join(os.path.dirname(spec.origin), 'ops', 'comm', "
    "'deepspeed_shm_comm_op*.so')) else 1)"
)


DS_AOT = {"DS_BUILD_OPS": "0", "DS_BUILD_SHM_COMM": "1", "DS_ACCELERATOR": "cpu"}
BUILT_AGAINST = "import sys, torch; print(f'py{sys.version_info[0]}{sys.version_info[1]}-torch-{torch.__version__}')"


def wheel_cache():
    """Where DeepSpeed's builds are kept between runs: beside pip's own cache (``ZEROPATCH_CI_WHEELS`` names another).
    A build is keyed by everything it was built against, and lands whole or not at all (built in a folder of its own,
    then renamed), so two runs at once never see half of one."""
    default = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "zeropatch-ci", "wheels")
    return os.environ.get("ZEROPATCH_CI_WHEELS", default)


def install_deepspeed(session, requirement, *pins):
    """DeepSpeed with its CPU communication op built at install (never JIT at run time), from a wheel built once per
    DeepSpeed, Python and torch release (``wheel_cache``): the sessions share it, and so do later runs on the machine
    (80 s a build here)."""
    if session.run_install("python", "-c", DS_OP_BUILT, success_codes=[0, 1], silent=True) in (True, None):
        return  # built already, or nothing is installed (``-R``: the environment is reused as it is)
    session.install(*pins, "setuptools", "wheel", "ninja", "packaging", "numpy")
    sources = tempfile.mkdtemp(prefix="deepspeed-sdist-")  # not nox's create_tmp: it would set the tests' TMPDIR
    session.run_install("python", "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", "deepspeed",
                        "--dest", sources, requirement)  # the release the requirement resolves to today, as its sdist
    sdist = glob.glob(os.path.join(sources, "deepspeed-*.tar.gz"))[0]
    against = session.run_install("python", "-c", BUILT_AGAINST, silent=True).split()[-1]  # (after any warning)
    folder = os.path.join(wheel_cache(), f"{os.path.basename(sdist)[:-len('.tar.gz')]}-{against}")
    if not glob.glob(os.path.join(folder, "*.whl")):
        os.makedirs(wheel_cache(), exist_ok=True)
        building = tempfile.mkdtemp(prefix="building-", dir=wheel_cache())
        session.run_install("python", "-m", "pip", "wheel", "--no-build-isolation", "--no-cache-dir", "--no-deps",
                            "--wheel-dir", building, sdist, env=DS_AOT)
        try:
            os.rename(building, folder)
        except OSError:  # another run put the same build there first
            shutil.rmtree(building)
    shutil.rmtree(sources)
    session.install("--force-reinstall", "--no-deps", *glob.glob(os.path.join(folder, "*.whl")))
    session.run_install("python", "-c", DS_OP_BUILT, silent=True)


def install_cpu_targets(session, colossalai):
    session.install(*CONSTRAINTS, "torch", "wrapt", "packaging", *TEST_TOOLS)
    install_deepspeed(session, DEEPSPEED, *CONSTRAINTS)
    session.install(*CONSTRAINTS, DEEPSPEED, "accelerate", "pandarallel", "omegaconf", "openai", "pytorch-lightning",
                    "tensorboardX", "evaluate", "sentencepiece", *COLOSSALAI_IMPORT_NEEDS, *STACKS[colossalai])
    session.install("--no-deps", f"colossalai=={colossalai}")
    session.install(*CONSTRAINTS, ".")  # a regular (non-editable) install: the start-up hook is tested as shipped


def install_references(session, requirements):
    """Each old release in its own folder of the environment, ``references/<name>-<version>``; the folders."""
    folders = []
    for requirement in requirements:
        folder = os.path.join(session.virtualenv.location, "references", requirement.replace("==", "-"))
        if not os.path.isdir(folder):
            session.install("--no-deps", "--target", folder, requirement)
        folders.append(folder)
    return folders


def today_releases_file(session):
    """Where the ``today`` session records the release of every distribution it installed (read by the pinned
    sessions: tests/conftest.py, ``pytest_collection_modifyitems``)."""
    return os.path.join(os.path.dirname(session.virtualenv.location), "today-releases.json")


def run_suite(session, began, required, skip_budget, time_budget, references=(), ignore=(), today_releases="",
              held_old=None):
    """The suite, after the session's set-up that began at ``began`` (``time.time()``): the time report names the set-up's
    share, and every test's time is kept in ``.nox/<session>-times.json`` (tests/time_budget.py)."""
    session.run("zeropatch", "status")
    # two workers: most tests wait on a fresh interpreter's imports, one core each (2-rank tests take both anyway);
    # a worker out of tests takes the other's (no idle tail); the slowest fifteen printed, for CI's budget; the
    # release sweep's end-to-end cases left to it (pyproject.toml's markers)
    session.run("pytest", *(session.posargs or ["-n", "2", "--dist", "worksteal", "--durations=15",
                                                "-m", "not release_sweep",
                                                *(f"--ignore={path}" for path in ignore), "tests"]),
                env={"ZEROPATCH_TEST_REQUIRE": required, "ZEROPATCH_TEST_SKIP_BUDGET": "" if skip_budget is None else str(skip_budget),
                     "ZEROPATCH_TEST_REFERENCES": os.pathsep.join(references),
                     "ZEROPATCH_TEST_TODAY_RELEASES": today_releases,
                     "ZEROPATCH_TEST_TIME_BUDGET": "" if time_budget is None else str(time_budget),
                     "ZEROPATCH_TEST_SET_UP_BEGAN": str(began),
                     "ZEROPATCH_TEST_TIMES": os.path.join(os.path.dirname(session.virtualenv.location),
                                                          f"{os.path.basename(session.virtualenv.location)}-times.json"),
                     **({} if held_old is None else {"ZEROPATCH_TEST_HELD_OLD": ",".join(held_old)})})


def install_today_targets(session):
    session.install("torch", "torchvision", "torchaudio", "soundfile", "wrapt", "packaging", *TEST_TOOLS)
    install_deepspeed(session, "deepspeed")
    session.install("deepspeed", "accelerate", "transformers", "peft", "pandas", "pandarallel", "av", "yapf", "omegaconf", "openai",
                    "pytorch-lightning", "tensorboardX", "xformers", "timm", "diffusers", "datasets", "evaluate",
                    "sentencepiece", *COLOSSALAI_IMPORT_NEEDS)
    session.install(MMCV, env=MMCV_BUILD)  # its setup.py imports pkg_resources: built with setuptools < 70
    session.install("--no-deps", "colossalai==0.5.0")
    session.install(".")
    session.run("python", "-c", "import importlib.metadata as m; print('today:', ', '.join("
                f"f'{{name}} {{m.version(name)}}' for name in {TARGETS!r}))")


RECORD_RELEASES = ("import importlib.metadata as m, json, sys; json.dump({d.metadata['Name'].lower().replace('_', '-'): "
                   "d.version for d in m.distributions()}, open(sys.argv[1], 'w'), indent=1, sort_keys=True)")


DOCS_TOOLS = ("mkdocs==1.6.1", "mkdocs-material==9.8.2")


@nox.session
def docs(session):
    """The documentation site, built strict into build/site (about a minute with its set-up)."""
    session.install(*DOCS_TOOLS)
    session.run("python", "tools/write_changelog.py", "--check")
    session.run("mkdocs", "build", "--strict", env={"NO_MKDOCS_2_WARNING": "1"})  # (Material's notice of its successor)


HOOK_ACTIVE = "import sys; sys.exit(0 if 'zeropatch' in sys.modules else 'the start-up hook did not activate zeropatch')"


@nox.session
def package(session):
    """The wheel and the sdist, ready to publish (nothing is published from here): built, checked by twine, and the
    wheel installed into an empty environment, where the command and the start-up hook answer."""
    session.install("build", "twine")
    out = os.path.join(session.create_tmp(), "dist")
    for old in glob.glob(os.path.join(out, "*")):
        os.remove(old)
    session.run("python", "-m", "build", "--outdir", out, ".")
    session.run("twine", "check", "--strict", *sorted(glob.glob(os.path.join(out, "*"))))
    empty = os.path.join(session.create_tmp(), "empty")
    session.run("python", "-m", "venv", "--clear", empty)
    python = os.path.join(empty, "bin", "python")
    session.run(python, "-m", "pip", "install", "--quiet", *glob.glob(os.path.join(out, "*.whl")), external=True)
    session.run(os.path.join(empty, "bin", "zeropatch"), "--version", external=True)
    session.run(python, "-c", HOOK_ACTIVE, env={"ZEROPATCH": "1"}, external=True)


@nox.session
def example(session):
    """The main job: the legacy training script, breakage by breakage, then whole under `zeropatch run`."""
    install_today_targets(session)
    session.run("python", "examples/main_job.py")


LIGHTNING_TESTS = ("tests/test_pytorch_lightning.py", "tests/test_pl_multiple_optimizers.py")


def pinned_suite(session, colossalai, skip_budget, time_budget):
    began = time.time()
    install_cpu_targets(session, colossalai)
    references = install_references(session, REFERENCES.get(colossalai, []))
    # the ordering matrix (a third of a session) runs on today's releases, and per release in the sweep; so do the
    # Lightning trainings: every session installs the same pytorch-lightning (the constraints' 2.6.6, today's). A
    # patch's own tests run here only where this session holds its library at another release than `today` did
    today = today_releases_file(session)
    run_suite(session, began, REQUIRED[colossalai], skip_budget, time_budget, references,
              ignore=["tests/test_orderings.py", *LIGHTNING_TESTS],
              today_releases=today if os.path.exists(today) else "",
              held_old=["colossalai", *(requirement.split("==")[0] for requirement in STACKS[colossalai])])


@nox.session
@nox.parametrize("colossalai", ["0.4.0"])
def tests(session, colossalai):
    """The suite on an old stack (colossalai 0.4.0 and the releases of its time), after `today`."""
    pinned_suite(session, colossalai, SKIP_BUDGET[colossalai], TIME_BUDGET[colossalai])


@nox.session
def frozen(session):
    """The suite on the stack `today` had when 0.6.0 was made (not in CI): whether a failure of `today` is drift."""
    pinned_suite(session, "0.5.0", None, None)


@nox.session
def today(session):
    """The whole suite on what `pip install` gives today (unpinned), with the versions it got printed first."""
    began = time.time()
    install_today_targets(session)
    session.run("python", "-c", RECORD_RELEASES, today_releases_file(session))
    run_suite(session, began, REQUIRED_TODAY, SKIP_BUDGET["today"], TIME_BUDGET["today"],
              install_references(session, REFERENCES["today"]))


SWEEP_BASES = {  # stack -> what its environment holds besides the releases tools/sweep.py installs one by one
    "colossalai": [*CONSTRAINTS, "torch", "transformers==4.51.3", "peft==0.13.2", *COLOSSALAI_IMPORT_NEEDS],
    "deepspeed": [*CONSTRAINTS, "torch", "transformers", "setuptools", "wheel", "ninja", "packaging", "numpy"],
    "transformers": [*CONSTRAINTS, "torch", "safetensors", "sentencepiece", "protobuf"],  # (what reads tokenizer.model)
    "pandas": [*CONSTRAINTS, "pandarallel"],
    "torchvision": ["av", "numpy"],
    "torchaudio": ["numpy", "soundfile"],  # the registry's torch builds, one release pair at a time
    "torch": [*CONSTRAINTS, "torch", "numpy"],  # the CPU build the test sessions use, for the torch-level patches
    "torch_releases": ["numpy", "omegaconf"],  # the registry's torch builds, one release pair at a time
    "numpy": [*CONSTRAINTS, "torch", "omegaconf"],
    "setuptools": [*CONSTRAINTS, "torch", "numpy", "packaging"],
    "yapf": [*CONSTRAINTS, "numpy"],  # + mmcv 1.7.0, built as the today session builds it
    "accelerate": [*CONSTRAINTS, "torch", "numpy"],
    "xformers": [*CONSTRAINTS, "torch", "numpy"],
    "timm": ["torch", "torchvision"],  # the registry's builds: timm imports torchvision, which has no CPU build here
    # with accelerate, as diffusers' users have it (diffusers 0.24 reads safetensors.torch, which accelerate imports)
    "huggingface_hub": [*CONSTRAINTS, "torch", "accelerate", LEGACY_DIFFUSERS],
    "diffusers": [*CONSTRAINTS, "torch", "numpy", "accelerate"],  # today's huggingface_hub: old releases need hf_hub_legacy
    "pillow": [*CONSTRAINTS, "numpy"],
    "pyyaml": [*CONSTRAINTS],
    "peft": [*CONSTRAINTS, "torch", "numpy"],
    "bitsandbytes": [*CONSTRAINTS, "torch", "numpy", "accelerate"],  # transformers' quantizers need accelerate
    "omegaconf": [*CONSTRAINTS],
    "openai": [*CONSTRAINTS],
    # this interpreter's row only: under Python 3.13 it runs in a Debian trixie chroot (README: the python stack);
    # torch for the patches of Python's drift met in torch's code (python_bracketed_host)
    "python": [*CONSTRAINTS, "torch", "packaging"],
    "datasets": [*CONSTRAINTS],
    # setuptools 81: pytorch-lightning 2.0-2.3 import pkg_resources at import (the probe runs without zeropatch)
    "pytorch_lightning": [*CONSTRAINTS, "torch", "numpy", "tensorboardX", "setuptools==81.0.0"],
}
SWEEP_REFERENCES = {"pillow": [PILLOW_9], "torchaudio": ["torchaudio==2.8.0"]}  # beside the stack's releases, as in the test sessions (REFERENCES)


@nox.session
@nox.parametrize("stack", list(SWEEP_BASES))
def sweep(session, stack):
    """The release sweep (about an hour on 2 cores): every patch's repro and tests on each release its claims name,
    then the documentation's compatibility table (docs/compatibility.md), written from the results (compat/results/) by tools/compat_table.py."""
    constraints = CONSTRAINTS if stack not in ("torchvision", "torchaudio", "torch_releases", "timm") else ()
    session.install(*SWEEP_BASES[stack], "wrapt", "pytest", "pytest-timeout")
    if stack == "yapf":
        session.install(MMCV, env=MMCV_BUILD)
    if stack == "transformers":  # ColossalAI's shardformer on each transformers release (shardformer_t5)
        session.install(*constraints, *COLOSSALAI_IMPORT_NEEDS, "peft==0.21.2")  # colossalai imports peft
        session.install("--no-deps", "colossalai==0.5.0")
    session.install(*constraints, ".")
    references = install_references(session, SWEEP_REFERENCES.get(stack, []))
    # after --: some releases, or only some patches (tools/sweep.py: `-- 5.24.0 --patch hf_safe_serialization`)
    session.run("python", "tools/sweep.py", stack, *session.posargs,
                env={"ZEROPATCH_TEST_REFERENCES": os.pathsep.join(references)})
    session.notify("compat_table")


@nox.session
def compat_table(session):
    """The documentation's compatibility table and each patch README's verified releases, from the sweep's results."""
    session.install(".")
    session.run("python", "tools/compat_table.py")


PEER_SUITES = {  # suite -> what its environment holds besides zeropatch and pytest
    "numpy": ["numpy==2.4.6", "hypothesis", "typing_extensions"],
    "pillow": ["pillow==13.0.0", "numpy", "packaging", "pytest-timeout"],  # its tests come from its source release
    "pyyaml": ["pyyaml==6.0.4"],
    # the release whose git tag holds the tests (tools/peer_suite.py)
    "pytorch-lightning": ["pytorch-lightning==2.6.5", "cloudpickle", "scikit-learn", "pandas", "psutil", "tensorboard",
                          "omegaconf", "jsonargparse[signatures]", "rich", "pytest-timeout"],
    "accelerate": ["accelerate==1.15.0", "transformers", "datasets", "evaluate", "scipy", "scikit-learn",
                   "parameterized", "pytest-subtests", "pytest-order", "pytest-timeout"],
    # the last release with a tag in DeepSpeed's repository here (its tests come from the tag)
    "deepspeed": ["deepspeed==0.19.5", "pytest-timeout"],
    # its tests come from the v5.24.0 tag (tools/peer_suite.py); what tests/trainer and tests/utils import
    "transformers": ["transformers==5.24.0", "accelerate", "datasets", "evaluate", "peft", "parameterized",
                     "pytest-timeout", "pytest-rerunfailures", "sentencepiece", "protobuf", "scikit-learn"],
}
# their environments take the CPU torch first
PEER_SUITES_ON_TORCH = {"pytorch-lightning", "accelerate", "deepspeed", "transformers"}


@nox.session
@nox.parametrize("suite", list(PEER_SUITES))
def peer_suites(session, suite):
    """A library's own test suite with zeropatch off and on (about 15 min for numpy's 48,021 tests on 2 cores)."""
    if suite in PEER_SUITES_ON_TORCH:
        session.install(*CONSTRAINTS, "torch")
    if suite == "deepspeed":
        install_deepspeed(session, PEER_SUITES[suite][0], *CONSTRAINTS)
    session.install(*PEER_SUITES[suite], "pytest", "pytest-xdist", "wrapt", ".")
    session.run("python", "tools/peer_suite.py", suite)
