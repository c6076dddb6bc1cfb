"""Bad input everywhere a user can give it: what was tried and what the user gets, one test per row. SECURITY.md holds
the same table (the last test checks that every row is there): never a traceback at start-up, never a silent
ignore, and a message that names the valid choices."""

import sys

import pytest

from conftest import ROOT, assert_ok, clean_environment, run_command, run_python

Z = [sys.executable, "-m", "zeropatch"]

# (where, what was tried, how it is run, what the user must get). "how": ("env", {variables}) runs a script
# under the start-up hook; ("cli", [arguments]); ("python", code). "expect": (exit code, text in the output,
# whether the script itself still ran).
ROWS = [
    ("ZEROPATCH", "an unknown patch name: `ZEROPATCH=pg_deepcopi`", ("env", {"ZEROPATCH": "pg_deepcopi"}),
     (0, "unknown patch 'pg_deepcopi' (did you mean 'pg_deepcopy'?) ignored (valid: 1, all, 0, ", True)),
    ("ZEROPATCH", "off combined with names: `ZEROPATCH=0,pg_deepcopy`", ("env", {"ZEROPATCH": "0,pg_deepcopy"}),
     (0, "'0' turns zeropatch off and cannot be combined with names", True)),
    ("ZEROPATCH", "only separators: `ZEROPATCH=' , '`", ("env", {"ZEROPATCH": " , "}), (0, "", True)),
    ("ZEROPATCH_DISABLE", "an unknown name: `ZEROPATCH_DISABLE=nonsense`", ("env", {"ZEROPATCH": "1", "ZEROPATCH_DISABLE": "nonsense"}),
     (0, "unknown patch 'nonsense' ignored (valid: ", True)),
    ("ZEROPATCH_STRICT", "a word it does not know: `ZEROPATCH_STRICT=maybe`", ("env", {"ZEROPATCH": "1", "ZEROPATCH_STRICT": "maybe"}),
     (0, "ZEROPATCH_STRICT='maybe' not understood, strict mode stays off (valid: 1, true, yes, on", True)),
    ("ZEROPATCH_EMA_TARGETS", "no function: `ZEROPATCH_EMA_TARGETS=trainer.utils`", ("env", {"ZEROPATCH": "1", "ZEROPATCH_EMA_TARGETS": "trainer.utils"}),
     (0, "'trainer.utils' ignored; expected pkg.module:function", True)),
    ("ZEROPATCH_EMA_TARGETS", "not an identifier: `ZEROPATCH_EMA_TARGETS=trainer:update-ema`",
     ("env", {"ZEROPATCH": "1", "ZEROPATCH_EMA_TARGETS": "trainer:update-ema"}), (0, "'trainer:update-ema' ignored", True)),
    ("ZEROPATCH_EMA_TARGETS", "an alias that wraps nothing: `ZEROPATCH_EMA_TARGETS=os.path:nothere`",
     ("python", "import os, zeropatch; r = zeropatch.status('fused_ema')[0]; print(r.state, r.reason)",
      {"ZEROPATCH_EMA_TARGETS": "os.path:nothere"}),
     (0, "skipped posixpath: posixpath is not a configured EMA home", None)),
    ("ZEROPATCH_TORCH_LOAD", "a word it does not know: `ZEROPATCH_TORCH_LOAD=everything`",
     ("python", "import io, torch, zeropatch; b = io.BytesIO(); torch.save(torch.nn.Linear(1, 1), b); b.seek(0); "
                "torch.load(b)", {"ZEROPATCH_TORCH_LOAD": "everything"}),
     (1, "ZEROPATCH_TORCH_LOAD='everything' is not understood; loads admit data only (valid: objects: ", None)),
    ("ZEROPATCH_REPORT", "a folder that does not exist", ("cli", ["run", "--", sys.executable, "-c", "pass"], {"ZEROPATCH_REPORT": "/nonexistent-zp/r.json"}),
     (0, "could not write ZEROPATCH_REPORT='/nonexistent-zp/r.json'", None)),
    ("command line", "no command: `zeropatch`", ("cli", []), (2, "usage: zeropatch", None)),
    ("command line", "an unknown command: `zeropatch frobnicate`", ("cli", ["frobnicate"]), (2, "invalid choice: 'frobnicate'", None)),
    ("command line", "`zeropatch run` without a command", ("cli", ["run"]), (2, "no command given; usage", None)),
    ("command line", "`zeropatch run --patches pg_deepcopi -- ...`", ("cli", ["run", "--patches", "pg_deepcopi", "--", "true"]),
     (2, "zeropatch: run --patches 'pg_deepcopi': valid: 1, all, 0, ", None)),
    ("command line", "`zeropatch run -- no-such-command`", ("cli", ["run", "--", "no-such-command-zp"]), (127, "command not found", None)),
    ("command line", "`zeropatch check missing.py`", ("cli", ["check", "missing-zp.py"]), (2, "no such script or folder: missing-zp.py", None)),
    ("command line", "`zeropatch explain` with text no patch knows", ("cli", ["explain", "KeyError: 'x'"]),
     (1, "No zeropatch patch is known to fix this error", None)),
    ("command line", "`zeropatch status --bogus`", ("cli", ["status", "--bogus"]), (2, "unrecognized arguments: --bogus", None)),
    ("install()", "an unknown name: `install('pg_deepcopi')`", ("python", "import zeropatch; zeropatch.install('pg_deepcopi')"),
     (1, "ValueError: zeropatch: unknown patch 'pg_deepcopi' (did you mean 'pg_deepcopy'?); valid: ", None)),
    ("install()", "not a name: `install(42)`", ("python", "import zeropatch; zeropatch.install(42)"),
     (1, "ValueError: zeropatch: unknown patch 42; valid: ", None)),
    ("uninstall()", "an unknown name: `uninstall('nope')`", ("python", "import zeropatch; zeropatch.uninstall('nope')"),
     (1, "ValueError: zeropatch: unknown patch 'nope'; valid:", None)),
    ("status()", "an unknown name: `status('nope')`", ("python", "import zeropatch; zeropatch.status('nope')"),
     (1, "ValueError: zeropatch: unknown patch 'nope'; valid:", None)),
    ("fused_update_ema", "a decay outside [0, 1]: `decay=1.5`",
     ("python", "import torch, zeropatch; m = torch.nn.Linear(2, 2); zeropatch.fused_update_ema(m, m, decay=1.5)"),
     (1, "ValueError: fused_update_ema: decay must be a number between 0 and 1", None)),
    ("fused_update_ema", "a decay that is not a number: `decay='0.9x'`",
     ("python", "import torch, zeropatch; m = torch.nn.Linear(2, 2); zeropatch.fused_update_ema(m, m, decay='0.9x')"),
     (1, "ValueError: fused_update_ema: decay must be a number between 0 and 1", None)),
    ("fused_update_ema", "a state dict instead of a model", ("python", "import torch, zeropatch; m = torch.nn.Linear(2, 2); "
                                                             "zeropatch.fused_update_ema(m.state_dict(), m)"),
     (1, "TypeError: fused_update_ema: ema_model must be a torch.nn.Module, got OrderedDict", None)),
    ("fused_update_ema", "an EMA model that lacks a parameter",
     ("python", "import torch, zeropatch; zeropatch.fused_update_ema(torch.nn.Linear(2, 2, bias=False), torch.nn.Linear(2, 2), sharded=False)"),
     (1, "KeyError: \"the EMA model has no parameter 'bias'\"", None)),
    ("fused_update_ema", "sharded=True for bf16 parameters without an optimizer",
     ("python", "import torch, zeropatch; m = torch.nn.Linear(2, 2).bfloat16(); e = torch.nn.Linear(2, 2); zeropatch.fused_update_ema(e, m)"),
     (1, "TypeError: sharded=True takes the EMA source of non-fp32 parameters from the optimizer's fp32 masters: pass optimizer=", None)),
    ("fused_update_ema", "an optimizer without master weights (torch's AdamW)",
     ("python", "import torch, zeropatch; m = torch.nn.Linear(2, 2).bfloat16(); e = torch.nn.Linear(2, 2); "
                "zeropatch.fused_update_ema(e, m, optimizer=torch.optim.AdamW(m.parameters()))"),
     (1, "sharded EMA needs the optimizer's master weights, but AdamW has neither", None)),
]
SCRIPT = "print('script ran')"


def run_row(how, expect):
    kind = how[0]
    if kind == "env":
        return run_command([sys.executable, "-c", SCRIPT], env=clean_environment(**how[1]))
    if kind == "cli":
        return run_command(Z + how[1], env=clean_environment(**(how[2] if len(how) > 2 else {})))
    return run_python(how[1], env=clean_environment(**(how[2] if len(how) > 2 else {})))


@pytest.mark.parametrize("where,tried,how,expect", ROWS, ids=[f"{row[0]}: {row[1]}" for row in ROWS])
def test_bad_input_gets_a_clear_answer(where, tried, how, expect):
    code, text, script_runs = expect
    result = run_row(how, expect)
    output = result.stdout + result.stderr
    assert result.returncode == code, output
    assert text in output, output
    if script_runs:
        assert result.stdout.strip() == "script ran"
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) <= 1, result.stderr
    if how[0] == "cli":
        assert "Traceback" not in output, output


def test_security_md_lists_every_row():
    security = (ROOT / "SECURITY.md").read_text()
    missing = [tried for _, tried, _, _ in ROWS if tried not in security]
    assert not missing, missing


def test_a_malformed_environment_never_breaks_the_script():
    assert_ok(run_command([sys.executable, "-c", SCRIPT], env=clean_environment(
        ZEROPATCH=",,,pg_deepcopi,0,ALL", ZEROPATCH_DISABLE=";;", ZEROPATCH_STRICT="??", ZEROPATCH_EMA_TARGETS=":::")))
