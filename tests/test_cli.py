"""What the user sees: `zeropatch check` (an import-time dry run that never runs the script's body), the job report of
`zeropatch run`, and the rough edges of a first try (each item of the list has its test here)."""

import json
import os
import pty
import re
import subprocess
import sys
import tomllib

import pytest

from conftest import ROOT, assert_ok, clean_environment, distribution_version, requires, run_command, run_python

ZEROPATCH = [sys.executable, "-m", "zeropatch"]


def write(path, text):
    path.write_text(text)
    return path


def test_check_names_a_missing_module_and_its_line_and_never_runs_the_body(tmp_path):
    marker = tmp_path / "body-ran"
    script = write(tmp_path / "train.py", f'''import os
import json
from missing_package_zp import trainer   # line 3
open({str(marker)!r}, "w").write("the body ran")
''')
    result = run_command(ZEROPATCH + ["check", script])
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train.py:3" in result.stdout and "No module named 'missing_package_zp'" in result.stdout, result.stdout
    assert "no patch known" in result.stdout
    assert not marker.exists()


@requires("transformers")
def test_check_s_dry_run_names_what_the_api_history_says_of_a_name_no_patch_fixes(tmp_path):
    """The dry run's verdict is explain's: a removed name no patch restores is named with the release that removed
    it (it said only "no patch known")."""
    script = write(tmp_path / "train.py", "from transformers.file_utils import cached_path\n")
    result = run_command(ZEROPATCH + ["check", script])
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("no patch known; API history: transformers.file_utils.cached_path was removed in transformers 4.22"
            in result.stdout), result.stdout


def test_check_passes_a_clean_script_runs_its_path_setup_and_treats_guarded_imports_as_optional(tmp_path):
    helpers = tmp_path / "helpers"
    helpers.mkdir()
    write(helpers / "local_util.py", "VALUE = 1\n")
    marker = tmp_path / "body-ran"
    script = write(tmp_path / "train.py", f'''import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "helpers"))
import local_util
try:
    import apex_zp_optional
except ImportError:
    apex_zp_optional = None
if __name__ == "__main__":
    open({str(marker)!r}, "w").write("the body ran")
''')
    result = run_command(ZEROPATCH + ["check", script, "--some-flag", "1"])
    assert_ok(result)
    assert "note  train.py:6" in result.stdout and "optional" in result.stdout, result.stdout
    assert "3 imports, 0 failed" in result.stdout, result.stdout
    assert not marker.exists()


def test_check_says_it_cannot_tell_where_the_path_comes_from_a_line_it_does_not_run(tmp_path):
    """A driver that puts a repository on the path from a variable (``sys.path.insert(0, REPO)`` under ``REPO =
    os.environ.get(...)``) and reads an attribute of a value it built: the dry run runs neither the assignment nor the
    body, so it cannot know; it failed them as "NameError ... no patch known" (and the repository's imports after)."""
    repository = tmp_path / "repo"
    (repository / "models").mkdir(parents=True)
    write(repository / "models" / "__init__.py", "")
    write(repository / "models" / "med.py", "VALUE = 1\n")
    script = write(tmp_path / "driver.py", f'''import os, sys
REPO = os.environ.get("REPO_ZP", {str(repository)!r})
sys.path.insert(0, REPO)
from models.med import VALUE
import json
from missing_package_zp import thing
tok = json.JSONDecoder()
STRICT = tok.strict
''')
    result = run_command(ZEROPATCH + ["check", script])
    out = result.stdout
    assert "note  driver.py:3" in out and "cannot tell here: name 'REPO' is not defined" in out, out
    assert "note  driver.py:4" in out and "path set up at driver.py:3 did not run here" in out, out
    assert "note  driver.py:6" in out, out  # nothing installed holds it, so the path might
    assert "driver.py:8" not in out and "FAIL" not in out and "4 imports, 0 failed" in out, out
    assert result.returncode == 0, out + result.stderr


@requires("pandas", "pandarallel")
@pytest.mark.skipif((distribution_version("pandas") or (0,)) < (3, 1), reason="the import only fails on pandas >= 3.1")
def test_check_on_a_legacy_script_fails_without_zeropatch_and_passes_with_it(tmp_path):
    marker = tmp_path / "body-ran"
    script = write(tmp_path / "build_buckets.py", f'''import pandas as pd
from pandarallel import pandarallel
open({str(marker)!r}, "w").write("the body ran")
''')
    without = run_command(ZEROPATCH + ["check", script], env=clean_environment(ZEROPATCH="0"))
    assert without.returncode == 1, without.stdout
    assert "build_buckets.py:2" in without.stdout and "cannot import name 'ExpandingGroupby'" in without.stdout
    assert re.search(r"raised at .*pandarallel.*:\d+", without.stdout), without.stdout
    assert "fixed by zeropatch's pandas_groupby_names (default patch; here disabled" in without.stdout, without.stdout
    with_zeropatch = run_command(ZEROPATCH + ["check", script])
    assert_ok(with_zeropatch)
    assert "patches applied while importing:" in with_zeropatch.stdout and "pandas_groupby_names" in with_zeropatch.stdout
    assert not marker.exists()


@requires("numpy")
def test_check_reads_a_script_and_its_modules_that_start_with_a_byte_order_mark(tmp_path):
    """Windows editors save UTF-8 with a byte-order mark, which Python itself reads: so does check (not 'unread')."""
    (tmp_path / "helpers.py").write_text("\ufeffimport numpy as np\nDTYPE = np.float\n", encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text("\ufeff# -*- coding: utf-8 -*-\nimport os\nimport helpers\n", encoding="utf-8")
    result = run_command(ZEROPATCH + ["check", "--patches", "0", script])
    assert "unread" not in result.stdout and "SyntaxError" not in result.stdout + result.stderr, result.stdout
    assert "helpers.py:2  DTYPE = np.float" in result.stdout, result.stdout  # read statically, despite its mark
    assert "2 imports, 1 failed, 0 not fixed by any patch" in result.stdout, result.stdout  # run: np.float fails


def test_check_reports_a_package_that_failed_once_not_a_key_error_for_each_import_under_it(tmp_path):
    """A package whose ``__init__`` failed leaves the submodules it had imported in sys.modules (here a folder without
    ``__init__.py``): importing under it again raised ``KeyError: 'pkg'``. The first failure is shown, the imports under
    it are named as not tried, and the repository's own package that does not import counts as not fixed."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pkg" / "ops").mkdir(parents=True)
    write(tmp_path / "pkg" / "__init__.py", "from pkg.ops import kernels\nraise ValueError('pkg needs a GPU')\n")
    for module in ("kernels", "layers", "losses"):
        write(tmp_path / "pkg" / "ops" / f"{module}.py", "VALUE = 1\n")
    (tmp_path / "tools").mkdir()
    script = write(tmp_path / "tools" / "train.py", "import os\nimport pkg.ops.kernels\nimport pkg.ops.layers\n"
                                                    "from pkg.ops.losses import VALUE\nimport json\n")
    result = run_command(ZEROPATCH + ["check", script], env=clean_environment(PYTHONPATH=tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "KeyError" not in result.stdout and result.stdout.count("ValueError: pkg needs a GPU") == 1, result.stdout
    assert result.stdout.count("not tried: pkg did not import (train.py:2, above)") == 2, result.stdout
    assert ("5 imports, 3 failed (2 of them under a package that failed above), 1 not fixed by any patch (among "
            "them this repository's own pkg, which does not import)") in result.stdout, result.stdout


def test_check_says_what_it_needs():
    missing = run_command(ZEROPATCH + ["check", "no-such-script.py"])
    assert missing.returncode == 2 and "no such script" in missing.stderr
    bad = run_command(ZEROPATCH + ["check", "--patches", "pg_deepcopi", __file__])
    assert bad.returncode == 2 and "valid:" in bad.stderr


@requires("torch")
def test_run_ends_with_a_job_report_of_every_rank(tmp_path):
    report = tmp_path / "report.json"
    repro = ROOT / "patches" / "pg_deepcopy" / "repro.py"
    result = run_command(ZEROPATCH + ["run", "--", sys.executable, "-m", "torch.distributed.run", "--standalone",
                                      "--nproc_per_node", "2", repro], env=clean_environment(ZEROPATCH_REPORT=report))
    assert_ok(result)
    summary = result.stderr[result.stderr.index("zeropatch: job report"):]
    assert "3 Python processes (ranks 0, 1)" in summary, summary   # torchrun's launcher and its two workers
    assert re.search(r"applied: .*pg_deepcopy \(in 3\)", summary) and "gloo_exit (in 3)" in summary, summary
    data = json.loads(report.read_text())
    assert data["returncode"] == 0 and sorted(str(p["rank"]) for p in data["processes"]) == ["0", "1", "None"]
    assert data["patches"]["pg_deepcopy"]["states"]["applied"] == 3


def test_run_says_when_the_report_cannot_be_written(tmp_path):
    result = run_command(ZEROPATCH + ["run", "--", sys.executable, "-c", "pass"],
                         env=clean_environment(ZEROPATCH_REPORT=tmp_path / "missing-folder" / "report.json"))
    assert result.returncode == 0 and "could not write ZEROPATCH_REPORT" in result.stderr, result.stderr


def test_strict_maybe_is_rejected_with_the_valid_values_and_strict_stays_off():
    result = run_python("import zeropatch; from zeropatch import _core; print(_core.strict())",
                        env=clean_environment(ZEROPATCH_STRICT="maybe"))
    assert_ok(result)
    assert result.stdout.strip() == "False"
    assert "ZEROPATCH_STRICT='maybe' not understood" in result.stderr and "valid: 1, true, yes, on" in result.stderr


def test_an_ema_target_that_wraps_nothing_is_skipped_with_the_reason():
    result = run_python("import zeropatch; r = zeropatch.status('fused_ema')[0]; print(r.state, '|', r.reason)",
                        env=clean_environment(ZEROPATCH_EMA_TARGETS="os.path:nothere"))
    assert_ok(result)
    state, reason = result.stdout.strip().split(" | ")
    assert state == "skipped" and "posixpath" in reason, result.stdout


@pytest.mark.parametrize("command", [["status", "--json"], ["status"], ["explain", "device is required"]])
def test_a_closed_pipe_is_no_traceback(command):
    result = run_command(["bash", "-c", f"{' '.join(ZEROPATCH + command)!s} | head -c 10 > /dev/null; echo done"])
    assert result.stdout.strip() == "done"
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr


def test_explain_with_no_input_on_a_terminal_prints_usage_instead_of_waiting():
    terminal, other_end = pty.openpty()
    try:
        process = subprocess.run(ZEROPATCH + ["explain"], stdin=other_end, capture_output=True, text=True, timeout=60,
                                 env=clean_environment())
    finally:
        os.close(terminal)
        os.close(other_end)
    assert process.returncode == 2 and "pipe a traceback" in process.stderr, process.stderr


def test_explain_for_an_opt_in_patch_keeps_the_defaults_on():
    result = run_command(ZEROPATCH + ["explain", "AssertionError: device is required"])
    assert_ok(result)
    assert "--patches all,colossalai_cpu" in result.stdout and "ZEROPATCH=all,colossalai_cpu" in result.stdout
    assert "--patches colossalai_cpu " not in result.stdout


def test_explain_says_what_to_do_where_no_build_of_a_library_loads():
    """torchtext's last build is torch 2.3's: every session's torch (2.13 and later) refuses its compiled library."""
    traceback = 'OSError: Could not load this library: /venv/site-packages/torchtext/lib/libtorchtext.so'
    result = run_command(ZEROPATCH + ["explain", traceback])
    assert result.returncode == 1, result.stdout + result.stderr  # no patch fixes it
    assert "No patch can fix this (torchtext has no build for the installed torch)" in result.stdout, result.stdout
    assert "run the job on torch 2.3" in result.stdout


def test_explain_knows_every_symptom_its_readmes_list():
    symptoms = {
        "colossalai_cpu": "AttributeError: 'LowLevelZeroOptimizer' object has no attribute 'grad_handles'",
        "colossalai_kwargs": "TypeError: ShardConfig.__init__() got an unexpected keyword argument 'enable_sequence_overlap'",
        "gloo_exit": "terminate called without an active exception",
        "torchvision_video": "ImportError: cannot import name 'write_video' from 'torchvision.io'",
        "hf_post_init": "AttributeError: 'STDiT3' object has no attribute 'all_tied_weights_keys'",
        "pandas_groupby_names": "ImportError: cannot import name 'ExpandingGroupby' from 'pandas.core.window.expanding'",
        "t5_apex_norm": "AssertionError: Recovering T5LayerNorm requires the original layer to be apex's Fused RMS Norm.",
    }
    for name, text in symptoms.items():
        result = run_command(ZEROPATCH + ["explain", text])
        assert result.returncode == 0 and result.stdout.startswith(f"{name}: "), (name, result.stdout)


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_status_fits_the_terminal(columns):
    result = run_command(ZEROPATCH + ["status"], env=clean_environment(COLUMNS=columns))
    assert_ok(result)
    assert max(len(line) for line in result.stdout.splitlines()) <= columns, result.stdout


def test_no_install_extra_pulls_in_a_target():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {})
    targets = {"torch", "torchvision", "colossalai", "deepspeed", "accelerate", "transformers", "pandas"}
    assert not any(re.split(r"[<>=!~\[ ;]", requirement)[0] in targets for group in extras.values() for requirement in group)


def test_package_metadata_shows_the_license_and_where_to_report():
    import importlib.metadata

    metadata = importlib.metadata.metadata("zeropatch")
    assert metadata.get("License-Expression") == "Apache-2.0" or metadata.get("License") == "Apache-2.0"
    assert "LICENSE" in (metadata.get_all("License-File") or [])
    security = (ROOT / "SECURITY.md").read_text()
    assert "security advisory form" not in security   # a channel that does not exist is not a channel


def test_the_pickle_error_users_see_is_the_one_the_readme_shows():
    shown = [line.strip() for line in (ROOT / "patches" / "pg_deepcopy" / "README.md").read_text().splitlines()
             if "a torch.distributed handle is a live connection" in line and "Error:" in line]
    result = run_python('''
import os, pickle
import zeropatch, torch.distributed as dist
os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
dist.init_process_group("gloo")
try:
    pickle.dumps(dist.group.WORLD)
except Exception as error:
    print(f"{type(error).__module__}.{type(error).__qualname__}: {error}")
dist.destroy_process_group()
''')
    assert_ok(result)
    raised = result.stdout.strip().split(":")[0]
    assert shown and all(line.startswith(raised + ":") for line in shown), (raised, shown)


def test_job_report_sums_what_patches_did_and_skips_those_that_did_nothing(tmp_path):
    """Library-free: two processes' records; a report of None (the patch did nothing there) adds no line."""
    from zeropatch import _job, _status

    for pid, counts in ((1, {"A.compute_loss": 1}), (2, None)):
        record = {"pid": pid, "rank": str(pid - 1), "argv": ["train.py"], "patches": [],
                  "reports": {"hf_trainer_overrides": counts and {"note": "called as 4.x", "counts": counts, "first": {}},
                              "hf_checkpoint_dtype": {"note": "not known to be legacy", "counts": {}, "first": {}}}}
        (tmp_path / f"{pid}{_status.RECORD_SUFFIX}").write_text(repr(record))
    report = _job.gather(str(tmp_path), ["train.py"], 0)
    assert report["reports"]["hf_trainer_overrides"]["counts"] == {"A.compute_loss": 1}
    lines = _job.summary_lines(report)
    assert "  hf_trainer_overrides: called as 4.x; summed over the processes:" in lines
    assert "    A.compute_loss x1" in lines
    assert "  hf_checkpoint_dtype: not known to be legacy" in lines


def test_job_report_names_the_put_back_names_the_code_read(tmp_path):
    """Issue #54 item 4: a patch that puts names back says which ones the job read, and how often (numpy_aliases:
    ``np.float`` three times, ``np.int`` once), not only "applied"."""
    if run_python("import numpy, sys; sys.exit(0 if hasattr(numpy, 'float') else 1)").returncode == 0:
        pytest.skip("this numpy still has numpy.float: nothing is put back")
    script = tmp_path / "aliases.py"
    script.write_text("import numpy as np\nfor _ in range(3):\n    x = np.float(1)\nprint('read', x, np.int(2))\n")
    result = run_command(ZEROPATCH + ["run", "--", sys.executable, script], cwd=tmp_path)
    assert_ok(result)
    assert "numpy_aliases: the names it put back that the code read" in result.stderr, result.stderr
    assert "    numpy.float read x3" in result.stderr and "    numpy.int read x1" in result.stderr, result.stderr


def test_job_report_counts_what_was_not_reached_or_not_needed_and_lists_it_on_request(tmp_path):
    """Library-free: the short report keeps what applied and what failed or was skipped; the patches not needed or
    never reached are counted on one line, and listed with --report all (everything=True)."""
    from zeropatch import _job, _status

    patches = [{"name": "torch_load", "state": "applied", "reason": "patched torch"},
               {"name": "numpy_aliases", "state": "not-needed", "reason": "numpy 1.23 has the aliases"},
               {"name": "timm_layers", "state": "waiting", "reason": "applies when timm is imported"},
               {"name": "yaml_load", "state": "skipped", "reason": "yaml.load changed"}]
    record = {"pid": 1, "rank": None, "argv": ["train.py"], "patches": patches, "reports": {}, "error": None}
    (tmp_path / f"1{_status.RECORD_SUFFIX}").write_text(repr(record))
    report = _job.gather(str(tmp_path), ["train.py"], 0)
    short = _job.summary_lines(report)
    assert "  applied: torch_load (in 1)" in short and "  skipped: yaml_load: yaml.load changed" in short, short
    assert not any("numpy_aliases" in line or "timm_layers" in line for line in short), short
    assert any(line.startswith("  also 1 not needed and 1 not reached") and "--report all" in line
               for line in short), short
    everything = _job.summary_lines(report, everything=True)
    assert "  not-needed: numpy_aliases: numpy 1.23 has the aliases" in everything, everything
    assert "  not reached (their targets were never imported): timm_layers" in everything, everything
    assert not any(line.startswith("  also ") for line in everything), everything


def test_run_explains_the_exception_a_failed_job_died_of(tmp_path):
    """A job that dies of an uncaught exception: the report names the process, the exception's last line and what
    `zeropatch explain` says about it (here: the patch that fixes it, its state in this job, how to turn it on); the
    JSON report keeps the traceback's end. The exception is still printed by Python as before."""
    script = write(tmp_path / "train.py", "def build():\n"
                                          "    raise AttributeError(\"'DummyOptim' object has no attribute 'param_groups'\")\n"
                                          "build()\n")
    report = tmp_path / "report.json"
    result = run_command(ZEROPATCH + ["run", "--", sys.executable, script], env=clean_environment(ZEROPATCH_REPORT=report))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback (most recent call last)" in result.stderr, result.stderr  # Python's own print, untouched
    summary = result.stderr[result.stderr.index("zeropatch: job report"):]
    assert "  the job failed (exit 1):" in summary, summary
    assert re.search(r"    pid \d+: AttributeError: 'DummyOptim' object has no attribute 'param_groups'", summary), summary
    assert "      zeropatch explain:" in summary and "      ds_scheduler: " in summary, summary
    assert "        here: not reached in this job (its targets were never imported)" in summary, summary
    errors = json.loads(report.read_text())["errors"]
    assert len(errors) == 1 and 'line 2, in build' in errors[0]["error"], errors


def test_run_says_when_a_failed_job_left_no_exception(tmp_path):
    script = write(tmp_path / "train.py", "import sys\nsys.exit(3)\n")
    result = run_command(ZEROPATCH + ["run", "--", sys.executable, script])
    assert result.returncode == 3, result.stdout + result.stderr
    assert "the job failed (exit 3); no Python process of it died of an uncaught exception" in result.stderr, result.stderr


def test_version_is_the_package_version():
    import zeropatch

    result = run_command(ZEROPATCH + ["--version"])
    assert_ok(result)
    assert result.stdout.strip() == f"zeropatch {zeropatch.__version__}", result.stdout
