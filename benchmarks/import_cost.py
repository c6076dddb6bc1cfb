"""Extra milliseconds of `python -c "import zeropatch"` over `python -c pass`, the start-up hook's cost, and what a
process of a `zeropatch run` job adds (its record written at exit), and `import zeropatch` after a target it patches at
once (dataclasses); and `import zeropatch` with a synthetic catalogue
of 100 patches (a copy of the installed package whose index holds 100 entries: the built-in ones and clones of them
on targets that are never imported), which must cost what the real one does.

Each round starts fresh interpreters for every case, interleaved; medians over all rounds. The hook with
ZEROPATCH unset is one line of the installed .pth file, timed in-process (a difference of interpreter
start-ups could not resolve it).
Run: python benchmarks/import_cost.py [rounds]
"""

import compileall
import os
import pprint
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import interleaved_medians  # noqa: E402


NEUTRAL = tempfile.mkdtemp(prefix="zeropatch-import-cost-")
RUN_DIR = tempfile.mkdtemp(prefix="zeropatch-import-cost-run-")


def synthetic_catalogue(size):
    """A folder holding a copy of the installed zeropatch whose index lists ``size`` patches."""
    import zeropatch._index as index

    folder = tempfile.mkdtemp(prefix="zeropatch-catalogue-")
    package = os.path.dirname(os.path.abspath(index.__file__))
    shutil.copytree(package, os.path.join(folder, "zeropatch"), ignore=shutil.ignore_patterns("__pycache__"))
    entries = list(index.PATCHES)
    for number in range(size - len(entries)):
        module, fields = entries[number % len(index.PATCHES)]
        clone = dict(fields, name=f"synthetic_{number}", targets=(f"zeropatch_synthetic_{number}.module",),
                     default=True)
        entries.append((f"zeropatch.patches.synthetic.synthetic_{number}", clone))
    with open(os.path.join(folder, "zeropatch", "_index.py"), "w") as file:
        file.write("PATCHES = " + pprint.pformat(tuple(entries), width=120, sort_dicts=False) + "\n")
    compileall.compile_dir(folder, quiet=1)  # as pip compiles an installed package
    return folder


def interpreter(code, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ZEROPATCH")}
    environment.update(env)
    # from a neutral folder, so that the installed package is measured, not a source checkout in the cwd
    return lambda: subprocess.run([sys.executable, "-c", code], env=environment, check=True, cwd=NEUTRAL)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    cases = {
        "python -c pass": interpreter("pass"),
        "import zeropatch": interpreter("import zeropatch"),
        "import zeropatch, 100 patches": interpreter("import zeropatch", PYTHONPATH=synthetic_catalogue(100)),
        "ZEROPATCH=1 (start-up hook) + pass": interpreter("pass", ZEROPATCH="1"),
        # what each process of a `zeropatch run` job adds: its record written to the job's folder at exit
        "same, under zeropatch run (job record)": interpreter("pass", ZEROPATCH="1", ZEROPATCH_RUN_DIR=RUN_DIR),
        "same, 100 patches": interpreter("pass", ZEROPATCH="1", ZEROPATCH_RUN_DIR=RUN_DIR,
                                         PYTHONPATH=synthetic_catalogue(100)),
        # a target imported before zeropatch (dataclasses, which most programs import first): its patch module is
        # imported and applied at once, and the log line it writes imports logging
        "import dataclasses": interpreter("import dataclasses"),
        "import dataclasses, zeropatch": interpreter("import dataclasses, zeropatch"),
    }
    medians = interleaved_medians(cases, rounds)
    base = medians["python -c pass"]
    print(f"{rounds} interleaved rounds, medians, {sys.executable}")
    for label, seconds in medians.items():
        print(f"  {label:38s} {seconds * 1000:7.1f} ms   +{(seconds - base) * 1000:5.1f} ms  x{seconds / base:.2f}")
    first = medians["import dataclasses"]
    print(f"  zeropatch after dataclasses, over import dataclasses: "
          f"+{(medians['import dataclasses, zeropatch'] - first) * 1000:.1f} ms")
    pth = os.path.join(sysconfig.get_paths()["purelib"], "zeropatch_startup.pth")
    if os.path.isfile(pth):
        line = compile(open(pth).read(), pth, "exec")
        saved = {key: os.environ.pop(key) for key in list(os.environ) if key == "ZEROPATCH"}
        runs = 100_000
        seconds = min(timeit.repeat(lambda: exec(line, {}), number=runs, repeat=5)) / runs
        os.environ.update(saved)
        print(f"  start-up hook, ZEROPATCH unset (.pth line, in-process): {seconds * 1e6:.2f} us")
    else:
        print("  start-up hook not installed here (editable install): its unset cost is not measured")


if __name__ == "__main__":
    main()
