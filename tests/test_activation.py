"""Activation without editing the script: the start-up hook of a regular install, the bootstrap
sitecustomize, `zeropatch run` (torchrun workers, spawn children, DataLoader workers), DeepSpeed's
multi-node launcher, `explain`, and the command line's handling of bad input."""

import os
import signal
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import ROOT, assert_ok, clean_environment, required_targets, requires, run_command, run_python

pytestmark = pytest.mark.fresh_interpreter  # activation at a real interpreter's start-up

PTH = Path(sysconfig.get_paths()["purelib"]) / "zeropatch_startup.pth"
PG_REPRO = ROOT / "patches" / "pg_deepcopy" / "repro.py"
ZEROPATCH_RUN = [sys.executable, "-m", "zeropatch", "run"]


def regular_install():
    present = PTH.is_file()
    if not present and required_targets():  # a nox session: the shipped hook must be tested
        raise RuntimeError(f"{PTH} missing: the test run needs a regular (non-editable) install of zeropatch")
    return present


needs_hook = pytest.mark.skipif(not regular_install(), reason="start-up hook not installed (editable install)")


@needs_hook
@requires("torch")
@pytest.mark.parametrize("value,works", [("1", True), ("pg_deepcopy", True), ("0", False), (None, False)])
def test_the_variable_alone_patches_an_unmodified_script(value, works):
    env = clean_environment() if value is None else clean_environment(ZEROPATCH=value)
    result = run_command([sys.executable, PG_REPRO], env=env)
    if works:
        assert_ok(result)
        assert "it shares the group: True" in result.stdout
    else:
        assert result.returncode != 0
        assert "cannot pickle 'torch._C._distributed_c10d.ProcessGroup' object" in result.stderr


@needs_hook
def test_an_unknown_name_is_one_line_naming_the_valid_patches():
    result = run_command([sys.executable, "-c", "print('script ran')"], env=clean_environment(ZEROPATCH="pg_deepcopi"))
    assert_ok(result)
    assert result.stdout.strip() == "script ran"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "unknown patch 'pg_deepcopi'" in lines[0] and "pg_deepcopy" in lines[0] and "param_store" in lines[0]


@needs_hook
def test_the_hook_run_twice_installs_once():
    result = run_python(f'''
        import site, sys
        from zeropatch import _core
        site.addpackage({str(PTH.parent)!r}, {PTH.name!r}, set())   # the .pth line again, as a second site dir would
        import zeropatch
        zeropatch.install()
        callbacks = _core._WATCHER.callbacks["torch.distributed"]
        targeting = [name for name, entry in _core._registry().items()
                     if entry.requested and "torch.distributed" in entry.patch.target_modules()]
        assert sorted(c.__qualname__ for c in callbacks) == sorted(f"zeropatch[{{name}}]" for name in targeting), callbacks
        print("ok")
    ''', env=clean_environment(ZEROPATCH="1"))
    assert_ok(result)


@needs_hook
def test_the_hook_is_harmless_when_the_package_is_gone():
    # -S: no site-packages on sys.path, so zeropatch cannot be found, as after `rm -rf site-packages/zeropatch`.
    line = PTH.read_text()
    result = run_command([sys.executable, "-S", "-c", f"exec({line!r}); print('interpreter alive')"],
                         env=clean_environment(ZEROPATCH="1"))
    assert_ok(result)
    assert result.stdout.strip() == "interpreter alive" and result.stderr == ""


def test_bootstrap_folder_chains_to_the_users_sitecustomize(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.USER_SITECUSTOMIZE = True\n")
    bootstrap = run_command([sys.executable, "-m", "zeropatch", "bootstrap-path"]).stdout.strip()
    env = clean_environment(ZEROPATCH="1", PYTHONPATH=os.pathsep.join([bootstrap, str(tmp_path)]))
    result = run_command([sys.executable, "-c", "import sys, builtins; print('zeropatch' in sys.modules, "
                          "getattr(builtins, 'USER_SITECUSTOMIZE', False))"], env=env)
    assert_ok(result)
    assert result.stdout.split() == ["True", "True"]


def test_run_passes_exit_codes_and_signals():
    assert run_command(ZEROPATCH_RUN + ["--", sys.executable, "-c", "import sys; sys.exit(7)"]).returncode == 7
    killed = run_command(ZEROPATCH_RUN + ["--", sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
    assert killed.returncode == -signal.SIGTERM


def test_run_rejects_bad_input_clearly():
    bad = run_command(ZEROPATCH_RUN + ["--patches", "pg_deepcopi", "--", sys.executable, "-c", "pass"])
    assert bad.returncode == 2 and "valid:" in bad.stderr and "pg_deepcopy" in bad.stderr
    assert "Traceback" not in bad.stderr
    empty = run_command(ZEROPATCH_RUN)
    assert empty.returncode == 2 and "no command given" in empty.stderr
    missing = run_command(ZEROPATCH_RUN + ["--", "no-such-command-zp"])
    assert missing.returncode == 127 and "command not found" in missing.stderr


@requires("torch")
def test_run_patches_both_torchrun_workers():
    result = run_command(ZEROPATCH_RUN + ["--", sys.executable, "-m", "torch.distributed.run", "--standalone",
                                          "--nproc_per_node", "2", PG_REPRO])
    assert_ok(result)
    assert result.stdout.count("it shares the group: True") == 2, result.stdout


@requires("torch")
def test_spawn_children_and_dataloader_workers_inherit_activation(tmp_path):
    script = tmp_path / "children.py"
    script.write_text('''
import sys
import torch
import torch.multiprocessing as mp

def active():
    module = sys.modules.get("zeropatch")
    return module is not None and module.status("pg_deepcopy")[0].state == "applied"

def child(rank):
    assert active(), "spawned child is not patched"

class Probe(torch.utils.data.Dataset):
    def __len__(self):
        return 2
    def __getitem__(self, index):
        return torch.tensor(float(active()))

if __name__ == "__main__":
    assert active()
    mp.spawn(child, nprocs=2)
    loader = torch.utils.data.DataLoader(Probe(), num_workers=2, multiprocessing_context="spawn")
    assert all(batch.item() == 1.0 for batch in loader), "a DataLoader worker is not patched"
    print("children patched")
''')
    result = run_command(ZEROPATCH_RUN + ["--", sys.executable, script])
    assert_ok(result)
    assert "children patched" in result.stdout


@requires("deepspeed")
def test_deepspeed_multinode_launcher_forwards_every_zeropatch_variable():
    # The repro (patches/ds_launcher_env) captures the command the launcher builds for the other nodes.
    result = run_python(f'''
        import sys; sys.path.insert(0, {str(ROOT / "patches" / "ds_launcher_env")!r})
        import zeropatch
        from repro import launcher_command
        print(launcher_command())
    ''', env=clean_environment(ZEROPATCH="1,colossalai_cpu", ZEROPATCH_DISABLE="fused_ema"))
    assert_ok(result)
    assert "export ZEROPATCH=1,colossalai_cpu;" in result.stdout, result.stdout
    assert "export ZEROPATCH_DISABLE=fused_ema;" in result.stdout


EXPLAINED = {
    "param_store": "AttributeError: 'LowLevelZeroOptimizer' object has no attribute '_param_store'",
    "pg_deepcopy": "TypeError: cannot pickle 'torch._C._distributed_c10d.ProcessGroup' object",
    "param_names": "ValueError: failed to find frozen Parameter containing:\ntensor(..., device='meta') in named params",
    "ds_scheduler": "AttributeError: 'DummyOptim' object has no attribute 'param_groups'",
    "colossalai_cpu": "AssertionError: device is required",
}


@pytest.mark.parametrize("name", list(EXPLAINED))
def test_explain_names_the_patch_for_its_error(name):
    result = run_command([sys.executable, "-m", "zeropatch", "explain", EXPLAINED[name]])
    assert_ok(result)
    assert result.stdout.startswith(f"{name}: "), result.stdout
    assert "turn it on" in result.stdout


def test_explain_reads_a_traceback_from_stdin_and_says_when_nothing_matches():
    import subprocess

    traceback = "Traceback (most recent call last):\n  File 'x.py'\n" + EXPLAINED["pg_deepcopy"] + "\n"
    piped = subprocess.run([sys.executable, "-m", "zeropatch", "explain"], input=traceback, capture_output=True,
                           text=True, env=clean_environment())
    assert piped.returncode == 0 and piped.stdout.startswith("pg_deepcopy: ")
    unknown = run_command([sys.executable, "-m", "zeropatch", "explain", "KeyError: 'something else'"])
    assert unknown.returncode == 1 and "zeropatch status" in unknown.stdout
