"""The ``zeropatch`` command: status, explain, run, bootstrap-path."""

import argparse
import json
import os
import re
import sys

from zeropatch import _core

VERSIONED = ("torch", "colossalai", "deepspeed", "accelerate", "wrapt")


def bootstrap_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")


def detected_versions():
    versions = {"python": sys.version.split()[0]}
    for distribution in VERSIONED:
        versions[distribution] = _core.installed_version(distribution) or "not installed"
    return versions


def _table(rows, headers):
    widths = [max(len(str(row[i])) for row in [headers] + rows) for i in range(len(headers))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [headers] + rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def cmd_status(args):
    records = _core.status()
    versions = detected_versions()
    if args.json:
        print(json.dumps({"versions": versions, "patches": [record.as_dict() for record in records]}, indent=2))
        return 0
    print("  ".join(f"{name} {version}" for name, version in versions.items()))
    print()
    rows = [(r.name, r.state, "default" if r.default else "opt-in", r.versions, r.reason) for r in records]
    print(_table(rows, ("patch", "state", "set", "affected versions", "reason")))
    return 0


def matching_patches(text):
    return [
        entry.patch
        for entry in _core._registry().values()
        if any(re.search(pattern, text) for pattern in entry.patch.errors)
    ]


def cmd_explain(args):
    text = " ".join(args.text) if args.text and args.text != ["-"] else sys.stdin.read()
    patches = matching_patches(text)
    if not patches:
        print("No zeropatch patch is known to fix this error. Run `zeropatch status` to see what is active.")
        return 1
    for patch in patches:
        record = _core.status(patch.name)[0]
        print(f"{patch.name}: {patch.summary}")
        print(f"  affected: {record.versions}")
        print(f"  here: {record.state} ({record.reason})")
        print("  turn it on:")
        if patch.default:
            print("    add `import zeropatch` at the top of the script (default patch), or")
        else:
            print(f"    add `import zeropatch; zeropatch.install({patch.name!r})`, or")
        print(f"    run with `zeropatch run --patches {patch.name} -- python train.py ...`, or")
        print(f"    set ZEROPATCH={'1' if patch.default else '1,' + patch.name} in the environment")
    return 0


def cmd_bootstrap_path(args):
    print(bootstrap_path())
    return 0


def run_environment(environ, patches):
    """The environment `zeropatch run` gives its command: the selection and the bootstrap folder."""
    env = dict(environ)
    if patches is not None:
        env[_core.ENV_SELECT] = patches
    elif env.get(_core.ENV_SELECT, "").strip() in ("", "0"):
        env[_core.ENV_SELECT] = "1"
    folder = bootstrap_path()
    paths = [path for path in env.get("PYTHONPATH", "").split(os.pathsep) if path and path != folder]
    env["PYTHONPATH"] = os.pathsep.join([folder] + paths)
    return env


def cmd_run(args):
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("zeropatch run: no command given; usage: zeropatch run [--patches a,b] -- CMD [ARGS...]", file=sys.stderr)
        return 2
    if args.patches is not None:
        names, problems = _core.parse_selection(args.patches)
        if problems or names is None:
            print(f"zeropatch run: --patches {args.patches!r}: {_core.choices_text()}", file=sys.stderr)
            return 2
    env = run_environment(os.environ, args.patches)
    try:
        os.execvpe(command[0], command, env)
    except FileNotFoundError:
        print(f"zeropatch run: command not found: {command[0]}", file=sys.stderr)
        return 127
    except PermissionError:
        print(f"zeropatch run: permission denied: {command[0]}", file=sys.stderr)
        return 126


def parser():
    root = argparse.ArgumentParser(prog="zeropatch", description=__doc__)
    commands = root.add_subparsers(dest="command_name", required=True)
    status = commands.add_parser("status", help="patches, their states and the detected library versions")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(handler=cmd_status)
    explain = commands.add_parser("explain", help="which patch fixes an error message (argument or stdin)")
    explain.add_argument("text", nargs="*", help="the error text; '-' or nothing reads stdin")
    explain.set_defaults(handler=cmd_explain)
    run = commands.add_parser("run", help="run a command with zeropatch active in every Python process")
    run.add_argument("--patches", help="comma list of patches (default: ZEROPATCH, else the default set)")
    run.add_argument("command", nargs=argparse.REMAINDER)
    run.set_defaults(handler=cmd_run)
    bootstrap = commands.add_parser("bootstrap-path", help="the sitecustomize folder for PYTHONPATH activation")
    bootstrap.set_defaults(handler=cmd_bootstrap_path)
    return root


def main(argv=None):
    args = parser().parse_args(argv)
    return args.handler(args)
