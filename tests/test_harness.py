"""The harness itself: a case run in a fork of the warm interpreter (tests/forkserver.py) sees what a fresh
interpreter would (argv, __main__, sys.path, working folder, environment, exit codes, tracebacks, the exit sequence),
compared here with a real one case by case; and what a pinned session runs again (tests/conftest.py)."""

import os
import sys
from types import SimpleNamespace

import pytest

from conftest import clean_environment, requires, run_command, run_python, runs_in_a_pinned_session

pytestmark = requires("torch")

SNIPPETS = {
    "argv, name and path": "import sys; print(sys.argv, __name__, repr(sys.path[0]), '__file__' in globals())",
    "folder and environment": "import os; print(os.getcwd() == os.environ['EXPECTED_FOLDER'], os.environ['A_SETTING'])",
    "exit code": "import sys; print('leaving'); sys.exit(3)",
    "exit message": "import sys; sys.exit('a message')",
    "uncaught exception": "def fail():\n    raise ValueError('boom')\nfail()",
    "exit sequence": "import atexit, threading, time, sys\n"
                     "atexit.register(lambda: print('atexit ran'))\n"
                     "threading.Thread(target=lambda: (time.sleep(0.5), print('thread joined'))).start()\n"
                     "log = open(sys.argv[1], 'w'); log.write('flushed at exit')\n",
}


def both_ways(monkeypatch, run):
    """``run()`` in a real interpreter and in a warm one: (real, warm) results."""
    results = []
    for warm in ("0", "1"):
        monkeypatch.setenv("ZEROPATCH_TEST_WARM", warm)
        results.append(run())
    return results


def test_a_warm_case_is_a_fork_of_an_interpreter_that_imported_torch(monkeypatch):
    real, warm = both_ways(monkeypatch, lambda: run_python("import sys; print('torch' in sys.modules)"))
    assert (real.stdout, warm.stdout) == ("False\n", "True\n"), (real, warm)


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_a_warm_case_sees_what_a_fresh_interpreter_sees(name, monkeypatch, tmp_path):
    log = tmp_path / "log.txt"
    env = clean_environment(EXPECTED_FOLDER=str(tmp_path), A_SETTING="set")

    def observed():
        run = run_python(SNIPPETS[name], str(log), env=env, cwd=tmp_path)
        written = log.read_text() if log.exists() else None
        if log.exists():
            log.unlink()
        return run.returncode, run.stdout, run.stderr, written

    real, warm = both_ways(monkeypatch, observed)
    assert real == warm, (real, warm)


def test_a_script_sees_its_folder_first_and_its_own_file(monkeypatch, tmp_path):
    (tmp_path / "helper_module.py").write_text("VALUE = 'imported from the script folder'\n")
    script = tmp_path / "script.py"
    script.write_text("import sys, helper_module\nprint(__file__ == sys.argv[0], sys.argv[1:], helper_module.VALUE)\n"
                      "raise SystemExit(helper_module.VALUE[:3] == 'imp' and 4)\n")
    real, warm = both_ways(monkeypatch, lambda: run_command([sys.executable, str(script), "an argument"]))
    assert (real.returncode, real.stdout, real.stderr) == (warm.returncode, warm.stdout, warm.stderr) and \
        real.returncode == 4, (real, warm)


def case(path, name="test_something"):
    return SimpleNamespace(fspath=path, originalname=name)


def test_a_pinned_session_runs_again_what_its_releases_can_change():
    repro = case("tests/test_repros.py", "test_repro_fails_without_the_patch_and_passes_with_it")
    held_old = {"transformers"}
    assert runs_in_a_pinned_session(repro, "torch", "2.13.0", "2.14.1", held_old)  # any release that differs
    assert not runs_in_a_pinned_session(repro, "torch", "2.14.1", "2.14.1", held_old)
    assert runs_in_a_pinned_session(case("tests/test_hf_x.py"), "transformers", "4.51.3", "5.25.0", held_old)
    assert not runs_in_a_pinned_session(case("tests/test_gloo_exit.py"), "torch", "2.13.0", "2.14.1", held_old)
    # a library `today` held and this session lacks: today ran them, here they could only skip
    assert not runs_in_a_pinned_session(case("tests/test_torchvision_x.py"), "torchvision", None, "0.29.1", held_old)
    assert not runs_in_a_pinned_session(repro, "timm", None, "1.0.31", held_old)
    assert runs_in_a_pinned_session(case("tests/test_moved_names.py"), "api-history", None, None, held_old)
    assert not runs_in_a_pinned_session(case("tests/test_scan.py"), None, None, None, held_old)
    assert runs_in_a_pinned_session(case("tests/test_put_back.py"), None, None, None, held_old)
    assert not runs_in_a_pinned_session(case("tests/test_python_x.py"), "python", None, None, held_old)


def test_a_case_s_pythonpath_is_its_own(monkeypatch, tmp_path):
    """The case's PYTHONPATH comes after its script's folder, and replaces (never adds to) the server's."""
    env = clean_environment(PYTHONPATH=tmp_path)
    real, warm = both_ways(monkeypatch, lambda: run_python(
        "import os, sys; print(sys.path[:2], [entry for entry in sys.path[2:] if entry in os.environ['OTHER']])",
        env=dict(env, OTHER=os.environ.get("PYTHONPATH", "-"))))
    assert real.stdout == warm.stdout == f"['', {str(tmp_path)!r}] []\n", (real, warm)


@requires("transformers")
def test_a_case_that_sets_what_a_preloaded_library_reads_at_import_gets_a_real_interpreter(monkeypatch):
    """transformers' Trainer imports the hub and datasets, which read HF_* at import: a case that sets one before its
    own imports (a repro's offline cache) sees its value, as in a real interpreter."""
    code = ("import os\nos.environ['HF_HUB_OFFLINE'] = '0'\nimport transformers, huggingface_hub.constants as c\n"
            "print(c.HF_HUB_OFFLINE)")
    real, warm = both_ways(monkeypatch, lambda: run_python(code))
    assert real.stdout == warm.stdout == "False\n", (real, warm)


def test_the_session_s_temporary_folder_leaves_room_for_sockets_under_a_deep_tmpdir(tmp_path):
    """A CI checkout's nox session had TMPDIR five folders deep, and multiprocessing's manager (pandarallel's) could
    not bind its socket four folders under the tests' TMPDIR (AF_UNIX paths end at 107 bytes): the session's folder
    is made where such a socket still fits, whatever TMPDIR the session was started with."""
    deep = tmp_path / ("a-checkout-folder-" * 4) / ".nox" / "today" / "tmp"
    deep.mkdir(parents=True)
    code = ("import multiprocessing, shutil, sys, tempfile\n"
            f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
            "import conftest\n"
            "tempfile.tempdir = tempfile.mkdtemp(prefix='example-', dir=conftest.TEMPORARY)\n"
            "manager = multiprocessing.Manager()\n"
            "print(manager.list([1, 2]))\n"
            "manager.shutdown()\n"
            "shutil.rmtree(conftest.SESSION_FOLDER)\n")
    result = run_python(code, env=clean_environment(TMPDIR=deep), step="a manager's socket under a deep TMPDIR")
    assert result.returncode == 0 and result.stdout == "[1, 2]\n", result
