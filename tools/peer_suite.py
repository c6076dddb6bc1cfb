"""The libraries' own test suites with zeropatch off and on (issue #28): a practice like the release sweep, not CI.
Each suite runs twice in one environment, with ZEROPATCH=0 and with ZEROPATCH=1; every test whose outcome differs must
be listed, with the reason the patch means it to differ, in compat/peer_suites/<suite>.json. An unlisted difference
(collateral: a patch seen where it should not be) or a listed one that no longer happens fails the run.

  python tools/peer_suite.py SUITE       (run by `python3 -m nox -s peer_suites`; SUITE is one of SUITES)

A suite whose source release holds no tests (pytorch-lightning's, DeepSpeed's, transformers') takes them from its git
repository at the tag of the installed release; where GitHub cannot be reached, ZEROPATCH_PEER_GIT names a local
(bare) copy of that repository, or ZEROPATCH_PEER_TESTS a folder holding the repository's test files gathered
elsewhere (the results then name it as their source, in place of the tag).

The counts go to compat/peer_suites/<suite>-results.json, which the documentation's figures (docs/figures.md) quote.
"""

import importlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep import test_results  # noqa: E402  (one reader of pytest's junit XML)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE_SECONDS = 3600
PYTEST = ["-p", "no:cacheprovider", "-q", "-n", "2", "-o", "addopts="]
# suite -> (the package it tests, where its tests are: None for the installed package's own, else the folder of
#           the distribution's source release (its sdist, or GIT_SOURCES' tag, at the installed version) that holds
#           them, pytest arguments)
SUITES = {
    "numpy": ("numpy", None, [*PYTEST, "-m", "not slow"]),
    "pillow": ("PIL", "Tests", PYTEST),
    "pyyaml": ("yaml", "tests", PYTEST),
    "accelerate": ("accelerate", "tests", [*PYTEST, "--timeout", "300"]),
    "pytorch-lightning": ("pytorch_lightning", "tests", [*PYTEST, "--timeout", "300", "--continue-on-collection-errors"]),
    "deepspeed": ("deepspeed", "tests", [*PYTEST, "--timeout", "300", "--continue-on-collection-errors"]),
    "transformers": ("transformers", "tests", [*PYTEST, "--timeout", "300", "--continue-on-collection-errors"]),
}
# suite -> the folders of its tests that run, where not all (those that meet what the patches change)
SELECTIONS = {
    "pytorch-lightning": [f"tests_pytorch/{folder}" for folder in (
        "trainer", "checkpointing", "core", "callbacks", "loggers", "graveyard", "utilities")],
    # the configuration and the engine's set-up (ds_config_keys, ds_module_cast, param_names), its schedulers
    "deepspeed": [f"unit/runtime/{path}" for path in (
        "test_ds_config_dict.py", "test_ds_config_model.py", "zero/test_zero_config.py", "test_ds_initialize.py",
        "test_lr_schedulers.py")],
    # the Trainer, its arguments and callbacks; the utilities (the hub, imports, generic helpers the patches meet)
    "transformers": ["trainer", "utils"],
}
# suite -> (its git repository, the tag of a release, {import in the tests: import of the installed distribution})
GIT_SOURCES = {
    # the repository's tests import the unified `lightning` package; its CI rewrites them for the standalone one
    "pytorch-lightning": ("https://github.com/Lightning-AI/pytorch-lightning", "{version}",
                          {"lightning.pytorch": "pytorch_lightning", "lightning.fabric": "lightning_fabric"}),
    "deepspeed": ("https://github.com/deepspeedai/DeepSpeed", "v{version}", {}),
    "transformers": ("https://github.com/huggingface/transformers", "v{version}", {}),
}


def git_tests(suite, folder):
    """The tests of the installed ``suite`` distribution from its git repository at the release's tag, with their
    imports rewritten for the installed distribution: (the checkout's root, the tests)."""
    _, tests, _ = SUITES[suite]
    repository, tag, imports = GIT_SOURCES[suite]
    root, tag = os.path.join(folder, "source"), tag.format(version=importlib.metadata.version(suite))
    origin = os.environ.get("ZEROPATCH_PEER_GIT", repository)
    if os.environ.get("ZEROPATCH_PEER_TESTS"):
        shutil.copytree(os.environ["ZEROPATCH_PEER_TESTS"], root)
    elif "://" in origin:
        subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", tag, origin, root], check=True, timeout=600)
    else:  # a local copy (a mirror may lack large files the tests do not need): only the tests, from the tag
        os.makedirs(root)
        archive = subprocess.run(["git", f"--git-dir={origin}", "archive", tag, tests], check=True, timeout=600,
                                 capture_output=True).stdout
        subprocess.run(["tar", "x", "-C", root], input=archive, check=True, timeout=600)
    if not imports:
        return root, tests
    pattern = re.compile(r"\b(" + "|".join(re.escape(name) for name in imports) + r")\b")
    for directory, _, files in os.walk(os.path.join(root, tests)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as file:
                    text = file.read()
                with open(path, "w", encoding="utf-8") as file:
                    file.write(pattern.sub(lambda match: imports[match.group(1)], text))
    return root, tests


def source_tests(suite, folder):
    """The source release of the installed ``suite`` distribution, unpacked in ``folder``: (its root, the tests)."""
    if suite in GIT_SOURCES:
        return git_tests(suite, folder)
    package, tests, _ = SUITES[suite]
    version = importlib.metadata.version(suite)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    f"{suite}=={version}", "-d", folder], check=True, timeout=600)
    archive = next(name for name in os.listdir(folder) if name.endswith((".tar.gz", ".zip")))
    shutil.unpack_archive(os.path.join(folder, archive), folder)
    root = next(os.path.join(folder, name) for name in os.listdir(folder)
                if os.path.isdir(os.path.join(folder, name, tests)))
    return root, tests


def tests_source(suite):
    """Where the suite's tests came from, for the results."""
    if not SUITES[suite][1]:
        return "the installed package"
    if suite not in GIT_SOURCES:
        return "its source release"
    if os.environ.get("ZEROPATCH_PEER_TESTS"):
        return (f"test files gathered elsewhere (ZEROPATCH_PEER_TESTS; compat/peer_suites/{suite}-sources.json), "
                "not the tag")
    repository, tag, _ = GIT_SOURCES[suite]
    return f"{repository} at {tag.format(version=importlib.metadata.version(suite))}"


def run_suite(suite, zeropatch, folder, source):
    """{test id: (outcome, message)}: ids from the package's name on for an installed package's tests (where it is
    installed does not matter), from the tests folder on for a source release's (which run against the installed
    package: ``-P`` keeps the release's own source folder off the path)."""
    package, _, arguments = SUITES[suite]
    cwd, location = source or (folder, os.path.dirname(importlib.import_module(package).__file__))
    locations = [os.path.join(location, selected) for selected in SELECTIONS.get(suite, [""])]
    junit = os.path.join(folder, f"{suite}-{zeropatch}.xml")
    # offline: both runs see the same world (a test that would download fails, or skips, the same way twice); the
    # environment's commands (`accelerate launch`) first on the path, as in its nox session
    env = dict(os.environ, ZEROPATCH=zeropatch, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    subprocess.run([sys.executable, "-P", "-m", "pytest", *locations, f"--junitxml={junit}", *arguments], env=env, cwd=cwd,
                   timeout=SUITE_SECONDS, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = test_results(junit)
    if source:
        return results
    return {test[test.find(package + "."):]: outcome for test, outcome in results.items()}


def main(suite):
    folder = tempfile.mkdtemp(prefix=f"zeropatch-peer-{suite}-")
    source = source_tests(suite, folder) if SUITES[suite][1] else None
    off, on = run_suite(suite, "0", folder, source), run_suite(suite, "1", folder, source)
    differing = {test: [off.get(test, ("absent", ""))[0], on.get(test, ("absent", ""))[0]]
                 for test in sorted(set(off) | set(on)) if off.get(test, ("absent",))[0] != on.get(test, ("absent",))[0]}
    with open(os.path.join(ROOT, "compat", "peer_suites", f"{suite}.json")) as file:
        intended = json.load(file)
    unexplained = sorted(set(differing) - set(intended))
    stale = sorted(set(intended) - set(differing))
    outcome = {
        "suite": suite, "version": importlib.metadata.version(suite), "tests": len(on),
        "source": tests_source(suite),
        "passed": {"off": sum(o == "passed" for o, _ in off.values()), "on": sum(o == "passed" for o, _ in on.values())},
        "differing": len(differing), "intended": len(set(differing) & set(intended)), "unexplained": unexplained,
        "stale": stale, "differences": differing,
    }
    with open(os.path.join(ROOT, "compat", "peer_suites", f"{suite}-results.json"), "w") as file:
        json.dump(outcome, file, indent=1, sort_keys=True)
    print(f"{suite} {outcome['version']}: {len(on)} tests, {len(differing)} differ with zeropatch on, "
          f"{outcome['intended']} intended; unexplained: {unexplained or 'none'}; listed but not seen: {stale or 'none'}")
    return 1 if unexplained or stale else 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SUITES:
        sys.exit(f"usage: python tools/peer_suite.py SUITE (one of: {', '.join(SUITES)})")
    sys.exit(main(sys.argv[1]))
