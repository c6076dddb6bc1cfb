"""Test harness: fresh interpreters and multi-rank gloo jobs on loopback, every one of them bounded.

Patches and process groups are process-global, so every test that installs a patch or starts a group
runs its body in a subprocess of its own. Every subprocess gets a private cache folder (XDG_CACHE_HOME,
TORCH_EXTENSIONS_DIR) and temporary folder (TMPDIR) made for this test session and removed at its end, so nothing reads or writes the user's caches: a stale
JIT lock left in ~/.cache by a killed run elsewhere can never stall a test, and two runs at once never
share a build folder. A step that outlives its bound is killed with its whole process group and the test
fails naming the step, with the last lines it printed.

The suite is a CPU suite: a machine's GPUs are hidden from it and from every subprocess (CUDA_VISIBLE_DEVICES,
HIP_VISIBLE_DEVICES), so that a GPU machine runs exactly what CI runs. Run there, tests written for a machine
without a GPU failed on what a real GPU answers (13 on an H200, 2026-11-26: the rehearsal's "without" halves,
xformers' bias objects made on the GPU, accelerate's two ranks asking for a second GPU).
benchmarks/gpu_check.sh checks the GPU side; it runs the tests written for a GPU (those named ``on_a_gpu``, which skip
on a CPU) with ZEROPATCH_TEST_GPUS=1, which leaves the GPUs visible.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import forkserver

ROOT = Path(__file__).resolve().parent.parent
STAND_INS = Path(__file__).resolve().parent / "stand_ins"
ZEROPATCH_VARIABLES = ("ZEROPATCH", "ZEROPATCH_DISABLE", "ZEROPATCH_STRICT", "ZEROPATCH_EMA_TARGETS", "ZEROPATCH_REPORT",
                      "ZEROPATCH_LEGACY", "ZEROPATCH_TORCH_LOAD")
STEP_SECONDS = 300  # the default bound of one subprocess step
# AF_UNIX socket paths end at 107 bytes, and the subprocesses make sockets four folders under TEMPORARY
# (multiprocessing's managers: .../example-*/pymp-*/listener-*): under a deep TMPDIR (nox's, in a CI checkout) the
# session's files go to the system's own temporary folder instead
SHORT_ENOUGH = 24
_base = tempfile.gettempdir()
if len(_base) > SHORT_ENOUGH and os.access("/tmp", os.W_OK):
    _base = "/tmp"
SESSION_FOLDER = tempfile.mkdtemp(prefix="zeropatch-test-", dir=_base)  # this test session's files, removed at its end
PRIVATE_CACHE = os.path.join(SESSION_FOLDER, "cache")  # shared with nothing else
# TMPDIR of every subprocess; pytest's own tmp_path is left where pytest puts it, since tests make sockets under it
TEMPORARY = os.path.join(SESSION_FOLDER, "tmp")
os.makedirs(TEMPORARY)
os.environ["XDG_CACHE_HOME"] = PRIVATE_CACHE  # what this process itself keeps (check's names of installed files)
if os.environ.get("ZEROPATCH_TEST_GPUS") != "1":
    os.environ.update(CUDA_VISIBLE_DEVICES="", HIP_VISIBLE_DEVICES="")  # before torch is imported here or anywhere below


_time_budget = []  # the controller's TimeBudget, where the session has a share (tests/time_budget.py)


def pytest_sessionstart(session):
    if os.environ.get("ZEROPATCH_TEST_TIME_BUDGET") and not hasattr(session.config, "workerinput"):
        from time_budget import TimeBudget

        _time_budget.append(TimeBudget(os.environ["ZEROPATCH_TEST_TIME_BUDGET"], clean_environment()))


def pytest_runtest_logreport(report):
    for budget in _time_budget:
        budget.record(report)


def pytest_sessionfinish(session):
    for budget in _time_budget:
        budget.finish()
    for server in _warm["servers"].values():
        server.close()
    shutil.rmtree(SESSION_FOLDER, ignore_errors=True)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    over_budget = skips_over_budget(session.config)
    if over_budget:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter.write_line(over_budget, red=True)
    for budget in _time_budget:
        if reporter:
            reporter.ensure_newline()
        if budget.report(reporter.write_line if reporter else lambda line, **_: print(line)):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


TESTED_LIBRARY = {  # files not named after a patch, and tests about another library than their file's patch
    "test_colossalai": "colossalai", "test_hf_local_rank": "transformers"}
# tests of zeropatch itself that read what the installed releases have (which patches apply, put names back, provide
# modules; what the API history records as gone): a pinned session runs them on its releases too
READS_THE_INSTALLED_RELEASES = ("test_put_back", "test_provided_modules", "test_history")


def tested_library(item, packages):
    """The distribution whose patch a test is about (``packages``: patch name -> distribution): its parameter
    (`test_repros[name]`), TESTED_LIBRARY's entry for the test, its file (`test_<patch>.py`) or TESTED_LIBRARY's entry
    for the file; None for the tests of zeropatch itself."""
    stem = Path(str(item.fspath)).stem
    parameters = getattr(getattr(item, "callspec", None), "params", {})
    if parameters.get("name") in packages:
        return packages[parameters["name"]]
    by_file = packages.get(stem.removeprefix("test_"), TESTED_LIBRARY.get(stem))
    return TESTED_LIBRARY.get(f"{stem}::{item.originalname}", by_file)


def runs_in_a_pinned_session(item, library, release, today_release, held_old):
    """Whether a pinned session runs ``item`` (``library``: what ``tested_library`` says; ``release`` here, None where
    the session lacks it; ``today_release``: `today`'s; ``held_old``: the distributions the session holds at old
    releases on purpose, or None for all that differ). `today` ran every test on the same code; a pinned session runs
    again what its releases can change: every repro whose library it holds at another release (the patch must be
    not-needed there, or fixes the old release's own failure); a patch's other tests where it holds the patch's library
    at an old release on purpose; and the tests of zeropatch itself that read the installed releases. A library
    `today` held and the session lacks leaves its tests to `today` (here they could only skip); one neither has (a
    patch's own name for what it answers, as the API history's) keeps them."""
    if library is None:
        return Path(str(item.fspath)).stem in READS_THE_INSTALLED_RELEASES
    if library == "python":
        return False  # the sessions share one interpreter
    if release is None:
        return today_release is None
    if release == today_release:
        return False
    return item.originalname == "test_repro_fails_without_the_patch_and_passes_with_it" or held_old is None or \
        library in held_old


def pytest_collection_modifyitems(config, items):
    """A pinned session (noxfile.py) exists for the releases it holds that `today` does not. Given the releases the
    `today` session installed (ZEROPATCH_TEST_TODAY_RELEASES) and the distributions the session holds at old releases
    on purpose (ZEROPATCH_TEST_HELD_OLD), it leaves out what `today` ran and its releases cannot change
    (``runs_in_a_pinned_session``)."""
    path = os.environ.get("ZEROPATCH_TEST_TODAY_RELEASES")
    if not path:
        return
    import importlib.metadata
    import json

    from zeropatch._index import PATCHES

    with open(path) as file:
        today = json.load(file)
    held_old = os.environ.get("ZEROPATCH_TEST_HELD_OLD")
    held_old = None if held_old is None else set(held_old.split(","))
    packages = {declaration["name"]: declaration["package"] for _, declaration in PATCHES}
    kept, left_out = [], []
    for item in items:
        library = tested_library(item, packages)
        try:
            release = None if library is None else importlib.metadata.version(library)
        except importlib.metadata.PackageNotFoundError:
            release = None
        runs = runs_in_a_pinned_session(item, library, release, today.get(library), held_old)
        (kept if runs else left_out).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


def skips_over_budget(config):
    """A nox session states how many skips it expects (ZEROPATCH_TEST_SKIP_BUDGET: the tests whose target release
    does not have the bug, or lacks what they compare with); more than that fails the run, naming the reasons, so
    that a session can never pass by skipping what it was meant to run. Only the controller counts (pytest-xdist)."""
    budget = os.environ.get("ZEROPATCH_TEST_SKIP_BUDGET")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if not budget or hasattr(config, "workerinput") or reporter is None:
        return None
    skipped = reporter.stats.get("skipped", [])
    if len(skipped) <= int(budget):
        return None
    reasons = {}
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reasons[reason] = reasons.get(reason, 0) + 1
    listed = "\n".join(f"  {count} x {reason}" for reason, count in sorted(reasons.items(), key=lambda item: -item[1]))
    return (f"{len(skipped)} tests skipped, over this session's budget of {budget} (ZEROPATCH_TEST_SKIP_BUDGET); "
            f"skipped:\n{listed}")


def script_in_a_repository(root, script, pin=None, path="train.py"):
    """``script`` written to ``root/path`` in a repository of its own (``root`` has .git), with ``pin`` in the root's
    requirements.txt: what zeropatch._legacy reads to decide which release the code was written for."""
    (root / ".git").mkdir(exist_ok=True)
    if pin:
        (root / "requirements.txt").write_text(f"torch\n{pin}\n")
    written = root / path
    written.parent.mkdir(parents=True, exist_ok=True)
    written.write_text(script)
    return written


def clean_environment(**overrides):
    env = {key: value for key, value in os.environ.items() if key not in ZEROPATCH_VARIABLES}
    env.update({
        "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
        "XDG_CACHE_HOME": PRIVATE_CACHE, "TORCH_EXTENSIONS_DIR": os.path.join(PRIVATE_CACHE, "torch_extensions"),
        # (torch sets this one in the test process that imports its inductor, to the user's shared /tmp folder: the
        # cases would share it, and the warm interpreters started before would no longer serve them)
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(PRIVATE_CACHE, "torchinductor"),
        "HF_HUB_OFFLINE": "1", "HF_HOME": os.path.join(PRIVATE_CACHE, "huggingface"), "TMPDIR": TEMPORARY,
    })
    env.update({key: str(value) for key, value in overrides.items()})
    return env


class StepHung(AssertionError):
    pass


def _tail(text, lines=15):
    return "\n".join((text or "").splitlines()[-lines:])


def _finish(process, step, timeout, hung):
    """Wait for ``process``; on timeout kill its process group and record the hang. Returns (out, err)."""
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(process)
        out, err = process.communicate()
        hung.append(f"{step} hung for more than {timeout} s and was killed; last output:\n{_tail(out)}\n{_tail(err)}")
        return out, err


# Cases run in a fork of a warm interpreter that imported these already (tests/forkserver.py), where they can: a case
# whose code names colossalai in the one that imported its ZeRO optimizer and booster (10 s of imports a process,
# each rank of a two-rank case one), one that names transformers in the one that imported its Trainer, the others in
# torch's. ZEROPATCH_TEST_WARM=0 starts every case in a real interpreter, a test marked ``fresh_interpreter`` its own
WARM_SERVERS = {"torch": ("torch",), "transformers": ("torch", "transformers.trainer"),
                "colossalai": ("torch", "colossalai.zero.low_level.low_level_optim", "colossalai.booster.plugin")}
# a case that sets environment variables before its imports (HF_HOME, offline modes): a real interpreter where it sets
# one a preloaded library reads at import, else torch's server (transformers' Trainer imports datasets and the hub)
WRITES_THE_ENVIRONMENT = re.compile(r"os\.environ(\[[^]]*\]\s*=[^=]|\.update|\.setdefault)|putenv")
# a variable name that begins with what a preloaded library reads at import (``HF_HOME``; not ``WORLD_SIZE``, which
# holds ``LD_``)
READ_AT_START_NAME = re.compile(r"(?<![\w])(?:" + "|".join(map(re.escape, forkserver.READ_AT_START)) + ")")
_warm = {"servers": {}, "fresh_only": False}


def pytest_runtest_setup(item):
    _warm["fresh_only"] = item.get_closest_marker("fresh_interpreter") is not None


def _case_source(argv):
    if argv[1] == "-c":
        return argv[2] if len(argv) > 2 else ""
    try:
        with open(argv[1], errors="replace") as script:
            return script.read()
    except OSError:
        return ""


def _warm_interpreter(argv, env):
    """The warm interpreter that can run ``argv`` in ``env``, started on first use; None where a case needs a real one."""
    if _warm["fresh_only"] or os.environ.get("ZEROPATCH_TEST_WARM") == "0" or argv[0] != sys.executable or \
            len(argv) < 2:
        return None
    source = _case_source(argv)
    if WRITES_THE_ENVIRONMENT.search(source):  # what the server's libraries read at import, set by the case itself
        if READ_AT_START_NAME.search(source):
            return None
        kind = "torch"
    else:
        kind = "colossalai" if "colossalai" in source else "transformers" if re.search(r"\btransformers\b", source) \
            else "torch"
    if not all(installed(module.split(".")[0]) for module in WARM_SERVERS[kind]):
        kind = "torch"
        if not installed("torch"):
            return None
    server = _warm["servers"].get(kind)
    if server is None or not server.alive():
        server = _warm["servers"][kind] = forkserver.WarmInterpreter(WARM_SERVERS[kind], clean_environment(),
                                                                     TEMPORARY)
    return server if forkserver.can_serve(argv[1:], env, server.env) else None


def _start(command, env, cwd):
    argv = [str(part) for part in command]
    warm = _warm_interpreter(argv, env)
    if warm is not None:
        return warm.start(argv[1:], env, cwd)
    return subprocess.Popen([str(part) for part in command], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def run_command(command, env=None, cwd=None, timeout=STEP_SECONDS, step=None):
    """Run a command line (a list) with the clean environment, bounded; returns the CompletedProcess (text)."""
    step = step or " ".join(str(part) for part in command)[:200]
    process = _start(command, env if env is not None else clean_environment(), cwd)
    hung = []
    out, err = _finish(process, step, timeout, hung)
    if hung:
        raise StepHung(hung[0])
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def run_python(code, *args, env=None, cwd=None, timeout=STEP_SECONDS, step=None):
    """Run ``code`` (dedented) in a fresh interpreter; returns the CompletedProcess (text)."""
    code = textwrap.dedent(code)
    return run_command([sys.executable, "-c", code, *args], env=env, cwd=cwd, timeout=timeout,
                       step=step or f"python -c {code.strip().splitlines()[0][:80]!r}...")


def start_ranks(code, world_size, env=None, cwd=None):
    """Start ``code`` as ``world_size`` gloo ranks on 127.0.0.1 (torchrun's variables; rank 0 hosts the store on a
    port the kernel picks, see RENDEZVOUS_PRELUDE); returns the processes, one per rank."""
    base = env if env is not None else clean_environment()
    rendezvous = tempfile.mkdtemp(prefix="rendezvous-", dir=TEMPORARY)
    code = textwrap.dedent(code)
    processes = []
    for rank in range(world_size):
        rank_env = dict(base, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size),
                        LOCAL_WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1", ZEROPATCH_TEST_RENDEZVOUS=rendezvous,
                        TORCHELASTIC_USE_AGENT_STORE="True")  # every rank joins rank 0's store, as under torchrun
        processes.append(_start([sys.executable, "-c", RENDEZVOUS_PRELUDE + code], rank_env, cwd))
    return processes


def kill(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_ranks(code, world_size, env=None, timeout=STEP_SECONDS, cwd=None, step="ranks"):
    """Run ``code`` as ``world_size`` ranks (``start_ranks``), bounded; returns the results, one per rank."""
    processes = start_ranks(code, world_size, env, cwd)
    results, hung = [], []
    for rank, process in enumerate(processes):
        out, err = _finish(process, f"{step}: rank {rank} of {world_size}", timeout, hung)
        if hung:  # the others would wait for the hung rank: stop them too
            for other in processes:
                kill(other)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    if hung:
        raise StepHung("\n".join(hung))
    return results


# Rank 0 hosts the job's TCPStore on port 0 (the kernel picks a free one) and publishes the port in a file; every
# rank, rank 0 included, then joins it as a client (TORCHELASTIC_USE_AGENT_STORE, torchrun's own arrangement).
# No port is chosen before it is bound, so two test runs at once can never collide.
RENDEZVOUS_PRELUDE = '''
import os as _os, time as _time
def _zeropatch_test_rendezvous():
    folder = _os.environ["ZEROPATCH_TEST_RENDEZVOUS"]
    published = _os.path.join(folder, "port")
    if _os.environ["RANK"] == "0":
        from torch.distributed import TCPStore
        import datetime
        store = TCPStore("127.0.0.1", 0, int(_os.environ["WORLD_SIZE"]), True, datetime.timedelta(seconds=120),
                         wait_for_workers=False)
        with open(published + ".tmp", "w") as file:
            file.write(str(store.port))
        _os.replace(published + ".tmp", published)
        _os.environ["MASTER_PORT"] = str(store.port)
        return store
    deadline = _time.monotonic() + 120
    while not _os.path.exists(published):
        if _time.monotonic() > deadline:
            raise TimeoutError("rank 0 never published its store port")
        _time.sleep(0.05)
    _os.environ["MASTER_PORT"] = open(published).read()
    return None
_ZEROPATCH_TEST_STORE = _zeropatch_test_rendezvous()
'''


# Code a case runs first to see what zeropatch logs: `records` holds (level name, message) of every record.
CAPTURE_ZEROPATCH_LOG = '''
import logging
records = []
class _Keep(logging.Handler):
    def emit(self, record):
        records.append((record.levelname, record.getMessage()))
logging.getLogger("zeropatch").addHandler(_Keep())
logging.getLogger("zeropatch").setLevel(logging.DEBUG)
'''


def assert_ok(result):
    """Assert a CompletedProcess (or a list of them) exited 0, showing its output otherwise."""
    for one in result if isinstance(result, list) else [result]:
        assert one.returncode == 0, f"exit {one.returncode}\n--- stdout\n{one.stdout}\n--- stderr\n{one.stderr}"


def required_targets():
    """The modules this test session must have (ZEROPATCH_TEST_REQUIRE, set by the nox sessions): a missing one is
    an error, not a skip, so that CI can never pass by skipping."""
    return {name.strip() for name in os.environ.get("ZEROPATCH_TEST_REQUIRE", "").split(",") if name.strip()}


def installed(module):
    """Whether ``module`` can be imported, without importing it (an error if the session requires it)."""
    import importlib.util

    found = importlib.util.find_spec(module) is not None
    if not found and module in required_targets():
        raise RuntimeError(f"{module} must be installed for this test session (ZEROPATCH_TEST_REQUIRE)")
    return found


def requires(*modules):
    missing = [module for module in modules if not installed(module)]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}")


def reference_release(name, release=""):
    """The folder of an old release of ``name`` (``release``: that one, where the session holds several) that this nox
    session installed beside its own (a folder named ``<name>-<version>`` in ZEROPATCH_TEST_REFERENCES), to compare a
    restored behaviour with the release that had it; None where the session has none. A folder the session names but
    lacks is an error, never a skip."""
    folders = [folder for folder in os.environ.get("ZEROPATCH_TEST_REFERENCES", "").split(os.pathsep) if folder]
    for folder in folders:
        found = os.path.basename(folder)
        if found == f"{name}-{release}" if release else found.startswith(f"{name}-"):
            if not os.path.isdir(folder):
                raise RuntimeError(f"{folder} is missing: this test session installs {name} there (noxfile.py)")
            return folder
    return None


def distribution_version(name):
    """The installed version tuple of a distribution, or None."""
    import importlib.metadata

    from zeropatch._core import version_tuple

    try:
        return version_tuple(importlib.metadata.version(name))
    except importlib.metadata.PackageNotFoundError:
        return None
