"""The ``zeropatch`` command: status, explain, run, check, bootstrap-path."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap

import zeropatch
from zeropatch import _core, _explain, _job
from zeropatch._explain import REHEARSAL

VERSIONED = ("torch", "torchvision", "colossalai", "deepspeed", "accelerate", "transformers", "pandas", "numpy",
             "setuptools", "wrapt")
REASON_MIN_WIDTH = 48  # the longest module name in a reason fits unbroken


def detected_versions():
    versions = {"python": sys.version.split()[0]}
    for distribution in VERSIONED:
        versions[distribution] = _core.installed_version(distribution) or "not installed"
    return versions


def _terminal_width():
    return max(shutil.get_terminal_size(fallback=(100, 24)).columns, 60)


def status_table(records, versions, width):
    """Rows of ``patch state set reason``, the reason (with the affected and found versions) wrapped to ``width``:
    beside the row where there is room for it, under the row on a narrow terminal."""
    lines = textwrap.wrap("  ".join(f"{name} {version}" for name, version in versions.items()), width)
    headers = ("patch", "state", "set")
    rows = [(r.name, r.state, "default" if r.default else "opt-in") for r in records]
    widths = [max(len(row[i]) for row in rows + [headers]) for i in range(len(headers))]
    indent = sum(widths) + 2 * len(widths)
    beside = width - indent >= REASON_MIN_WIDTH
    indent, reason_width = (indent, width - indent) if beside else (4, width - 4)
    lines += ["", ("  ".join(h.ljust(w) for h, w in zip(headers, widths)) + ("  reason" if beside else "")).rstrip()]
    for row, record in zip(rows, records):
        wrapped = textwrap.wrap(f"{record.reason} [{record.versions}]", reason_width, break_on_hyphens=False) or [""]
        head = "  ".join(cell.ljust(w) for cell, w in zip(row, widths))
        lines += [head + "  " + wrapped.pop(0)] if beside else [head.rstrip()]
        lines += [" " * indent + more for more in wrapped]
    return lines


def cmd_status(args):
    records = _core.status()
    versions = detected_versions()
    if args.json:
        print(json.dumps({"versions": versions, "patches": [record.as_dict() for record in records]}, indent=2))
    else:
        print("\n".join(status_table(records, versions, _terminal_width())))
    return 0


def cmd_explain(args):
    if args.text and args.text != ["-"]:
        text = " ".join(args.text)
    elif sys.stdin.isatty():
        print("zeropatch explain: give the error text as an argument, or pipe a traceback in:\n"
              "  zeropatch explain \"AttributeError: 'DummyOptim' object has no attribute 'param_groups'\"\n"
              "  python train.py 2>&1 | zeropatch explain", file=sys.stderr)
        return 2
    else:
        text = sys.stdin.read()
    lines, fixed = _explain.explanation(text)
    print("\n".join(lines))
    return 0 if fixed else 1


def cmd_bootstrap_path(args):
    print(_job.bootstrap_path())
    return 0


def _command(args):
    return args.command[1:] if args.command[:1] == ["--"] else args.command


def _valid_selection(option, value):
    names, problems = _core.parse_selection(value)
    if problems or names is None:
        print(f"zeropatch: {option} {value!r}: {_core.choices_text()}", file=sys.stderr)
        return False
    return True


def cmd_run(args):
    command = _command(args)
    if not command:
        print("zeropatch run: no command given; usage: zeropatch run [--cpu] [--patches a,b] -- CMD [ARGS...]", file=sys.stderr)
        return 2
    if args.patches is not None and not _valid_selection("run --patches", args.patches):
        return 2
    patches = args.patches
    if args.cpu:  # asked for at the command: also where CUDA is available
        chosen = patches if patches is not None else os.environ.get(_core.ENV_SELECT, "").strip()
        patches = ",".join(part for part in (chosen if chosen not in ("", "0") else "1", REHEARSAL) if part)
        os.environ[_core.ENV_REHEARSAL_ON_GPU] = "1"
    return _job.run(command, patches, everything=args.report == "all")


def cmd_check(args):
    if not os.path.exists(args.path):
        print(f"zeropatch check: no such script or folder: {args.path}", file=sys.stderr)
        return 2
    # unlike `run`, a check may be asked for without zeropatch (ZEROPATCH=0 or --patches 0): what fails, and what fixes it
    patches = args.patches if args.patches is not None else os.environ.get(_core.ENV_SELECT, "").strip() or "1"
    if patches != "0" and not _valid_selection("check --patches", patches):
        return 2
    python = _python_release(args.python)
    if python is None:
        return 2
    from zeropatch.check.report import report

    code = report(args.path, _core.parse_selection(patches)[0], python=python, arguments=args.script_args,
                  everything=args.all)
    if os.path.isdir(args.path) or args.static:
        return code
    sys.stdout.flush()
    env = _job.run_environment(os.environ, patches)
    dry_run = subprocess.call([sys.executable, "-m", "zeropatch.check.dry_run", args.path, *args.script_args], env=env)
    return max(code, dry_run)


def _python_release(text):
    if text is None:
        return sys.version_info[:2]
    parts = text.split(".")
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        print(f"zeropatch check: --python {text!r}: give a release as MAJOR.MINOR (for example 3.12)", file=sys.stderr)
        return None
    return int(parts[0]), int(parts[1])


def parser():
    root = argparse.ArgumentParser(prog="zeropatch", description=__doc__)
    root.add_argument("--version", action="version", version=f"zeropatch {zeropatch.__version__}")
    commands = root.add_subparsers(dest="command_name", required=True, metavar="COMMAND")
    status = commands.add_parser("status", help="patches, their states and the detected library versions")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(handler=cmd_status)
    explain = commands.add_parser("explain", help="which patch fixes an error message (argument or stdin)")
    explain.add_argument("text", nargs="*", help="the error text; '-' or nothing reads a piped traceback")
    explain.set_defaults(handler=cmd_explain)
    run = commands.add_parser("run", help="run a command with zeropatch active in every Python process; report at the end")
    run.add_argument("--patches", help="comma list of patches (default: ZEROPATCH, else the default set)")
    run.add_argument("--cpu", action="store_true",
                     help=f"rehearse a GPU job on the CPU: adds {REHEARSAL} (and what it brings) to the patches")
    run.add_argument("--report", choices=_job.REPORT_CHOICES, default="short",
                     help="the job report: short (what applied, what the patches did and decided, a failure explained; "
                          "the default) or all (also every patch not reached or not needed)")
    run.add_argument("command", nargs=argparse.REMAINDER)
    run.set_defaults(handler=cmd_run)
    check = commands.add_parser("check", help="what will break, before the job is queued: reads a script or a repository "
                                              "(file:line, and the patch that fixes it); for a script, then an "
                                              "import-time dry run")
    check.add_argument("--patches", help="comma list of patches, or 0 for none (default: ZEROPATCH, else the default set)")
    check.add_argument("--static", action="store_true", help="a script: only read it, no import-time dry run")
    check.add_argument("--all", action="store_true", help="a repository: every line found, not only the entry points' "
                       "line by line and the rest by cause")
    check.add_argument("--python", metavar="MAJOR.MINOR", help="the Python release the job will run on (default: this one)")
    check.add_argument("path", metavar="PATH")
    check.add_argument("script_args", nargs=argparse.REMAINDER)
    check.set_defaults(handler=cmd_check)
    bootstrap = commands.add_parser("bootstrap-path", help="the sitecustomize folder for PYTHONPATH activation")
    bootstrap.set_defaults(handler=cmd_bootstrap_path)
    return root


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        code = args.handler(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # `zeropatch status | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
