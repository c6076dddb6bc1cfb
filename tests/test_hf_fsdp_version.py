"""hf_fsdp_version on the real transformers: TrainingArguments built the 4.x way (``fsdp="full_shard auto_wrap"``)
ask accelerate for FSDP1 where the script's repository pins transformers below 5.10 (or ZEROPATCH_LEGACY says so),
and for FSDP2, with one line naming the switch, where it is not known to be legacy; a strategy only FSDP1 takes
(``hybrid_shard``, refused under 5.10's FSDP2) asks for FSDP1 with no legacy decision; a version given in
fsdp_config and 5.x's ``fsdp=True`` are never touched; status says which contract applied and why. The repro runs
FastChat's FSDP save through the Trainer (one rank, rehearsed on the CPU)."""

import sys

import pytest

from conftest import (assert_ok, clean_environment, distribution_version, requires, run_command,
                      script_in_a_repository)

pytestmark = [requires("torch", "transformers", "accelerate"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5, 10),
                                 reason="transformers >= 5.10")]

SCRIPT = '''
import sys, zeropatch
from transformers import TrainingArguments
versions = []
for fsdp, config in eval(sys.argv[1]) if len(sys.argv) > 1 else [("full_shard auto_wrap", None)]:
    arguments = TrainingArguments(output_dir="out", fsdp=fsdp, fsdp_config=config, report_to="none")
    versions.append(str(arguments.fsdp_plugin_args["fsdp_version"]))
status = zeropatch.status("hf_fsdp_version")[0]
print("versions", " ".join(versions))
print("status", status.state, status.reason)
'''


def versions(script, *args, **env):
    result = run_command([sys.executable, str(script), *args], env=clean_environment(**env), cwd=str(script.parent))
    assert_ok(result)
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.startswith(("versions", "status")))
    return lines["versions"], lines["status"], result.stderr


def test_a_repository_pinned_below_5_10_runs_fsdp1_and_a_given_version_is_never_touched(tmp_path):
    script = script_in_a_repository(tmp_path, SCRIPT, "transformers>=4.31.0")  # FastChat's pin
    launches = ("[('full_shard auto_wrap', None), (['full_shard', 'auto_wrap'], {'fsdp_version': 2}),"
                " ('full_shard', {'version': 2}), (True, None)]")
    found, status, _ = versions(script, launches)
    assert found == "1 2 2 2", (found, status)
    assert status.startswith("applied") and "old contract" in status and "requirements.txt" in status, status
    assert versions(script, ZEROPATCH="0")[0] == "2"  # what transformers >= 5.10 does without the patch


def test_code_not_known_to_be_legacy_runs_fsdp2_and_is_told_the_switch(tmp_path):
    script = script_in_a_repository(tmp_path, SCRIPT)  # no pin (every pin kind: tests/test_legacy.py)
    found, status, stderr = versions(script)
    assert found == "2" and "new contract kept" in status, status
    assert "ZEROPATCH_LEGACY=transformers" in stderr and stderr.count("hf_fsdp_version:") == 1, stderr[-2000:]
    assert versions(script, ZEROPATCH_LEGACY="transformers")[0] == "1"  # declared legacy


def test_an_fsdp1_only_strategy_runs_fsdp1_for_any_code(tmp_path):
    """``--fsdp hybrid_shard`` (and the other strategies FSDP2 refuses): transformers >= 5.10 refuses the launch
    without ``version: 1``, so no code written for it makes one: FSDP1 with no pin, even for code declared written for
    today's transformers; a version given is kept."""
    script = script_in_a_repository(tmp_path, SCRIPT)  # no pin
    launches = ("[('hybrid_shard auto_wrap', None), (['no_shard'], {}), ('full_shard', None),"
                " ('hybrid_shard', {'version': 1})]")
    for declared in ({}, {"ZEROPATCH_LEGACY": "-transformers"}):
        found, status, stderr = versions(script, launches, **declared)
        assert found == "1 1 2 1", (declared, found, status)
        assert "FSDP1-only strategy: FSDP1" in status, status
    unpatched = run_command([sys.executable, str(script), "[('hybrid_shard auto_wrap', None)]"],
                            env=clean_environment(ZEROPATCH="0"), cwd=str(script.parent))
    assert unpatched.returncode != 0 and "is only available with FSDP1" in unpatched.stderr, unpatched.stderr[-2000:]
