"""Test harness: fresh interpreters and multi-rank gloo jobs on loopback.

Patches and process groups are process-global, so every test that installs a patch or starts a group
runs its body in a subprocess of its own.
"""

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ZEROPATCH_VARIABLES = ("ZEROPATCH", "ZEROPATCH_DISABLE", "ZEROPATCH_STRICT", "ZEROPATCH_EMA_TARGETS")


def clean_environment(**overrides):
    env = {key: value for key, value in os.environ.items() if key not in ZEROPATCH_VARIABLES}
    env.update({"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"})
    env.update({key: str(value) for key, value in overrides.items()})
    return env


def run_command(command, env=None, cwd=None, timeout=600):
    """Run a command line (a list) with the clean environment; returns the CompletedProcess (text)."""
    return subprocess.run(
        [str(part) for part in command],
        env=env if env is not None else clean_environment(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_python(code, *args, env=None, cwd=None, timeout=600):
    """Run ``code`` (dedented) in a fresh interpreter; returns the CompletedProcess (text)."""
    return run_command([sys.executable, "-c", textwrap.dedent(code), *args], env=env, cwd=cwd, timeout=timeout)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_ranks(code, world_size, env=None, timeout=600, cwd=None):
    """Run ``code`` as ``world_size`` gloo ranks on 127.0.0.1 (torchrun's variables); returns the results."""
    port = free_port()
    base = env if env is not None else clean_environment()
    processes = []
    for rank in range(world_size):
        rank_env = dict(base, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                        LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_WORLD_SIZE=str(world_size))
        processes.append(subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code)], env=rank_env, cwd=cwd,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))
    results = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            raise
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return results


def assert_ok(result):
    """Assert a CompletedProcess (or a list of them) exited 0, showing its output otherwise."""
    for one in result if isinstance(result, list) else [result]:
        assert one.returncode == 0, f"exit {one.returncode}\n--- stdout\n{one.stdout}\n--- stderr\n{one.stderr}"


def installed(module):
    """Whether ``module`` can be imported, without importing it. Under ZEROPATCH_TEST_REQUIRE_ALL=1
    (set by the nox sessions) a missing target is an error, so that CI can never pass by skipping."""
    import importlib.util

    found = importlib.util.find_spec(module) is not None
    if not found and os.environ.get("ZEROPATCH_TEST_REQUIRE_ALL") == "1":
        raise RuntimeError(f"{module} must be installed for this test run (ZEROPATCH_TEST_REQUIRE_ALL=1)")
    return found


def requires(*modules):
    missing = [module for module in modules if not installed(module)]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}")
