"""The harness's warm interpreter: it imports the heavy libraries once, then forks one child per case.

Most cases of the suite are a fresh interpreter that imports torch (4-5 s of a case's 6 on this machine kind) and then
does its work. A fork of an interpreter that already imported torch starts in milliseconds. The child is made to look
like a fresh ``python -c CODE`` / ``python SCRIPT`` to the case: its own process group, environment, working folder,
``sys.argv``, ``sys.path`` (the script's folder, then ``PYTHONPATH``), a new ``__main__``, standard streams on files,
the start-up hook run where ``ZEROPATCH`` asks for it (as the ``.pth`` line does), and the interpreter's exit sequence
(threads joined, ``atexit``, the exit code of ``SystemExit`` or 1 with the traceback through ``sys.excepthook``).

What it cannot make fresh, a case never gets from it (``tests/conftest.py`` decides, and starts a real interpreter
instead): an environment that differs in what the preloaded libraries or the interpreter read at start (``PYTHON*``
but ``PYTHONPATH``, ``TORCH*``, ``OMP_*``, ...), a ``sitecustomize`` on its ``PYTHONPATH``, a case marked
``fresh_interpreter`` (the import orderings, zeropatch's laziness, the start-up hook: what happens *before* torch is
imported), and anything but ``python -c`` or ``python SCRIPT``. The one thing every warm case shares: torch (and in
the colossalai and transformers servers, those libraries' modules the server preloads) was imported before zeropatch,
which is the "target first" order that every patch supports (the ordering matrix checks it,
and the other order, for the patches that change a library in every way a patch can; the release sweep for every
patch). The repros run warm too, in ``zeropatch run``'s environment with their records gathered as it gathers them.

Run as ``python forkserver.py FD MODULE ...``: it imports the modules, says ``ready`` on the file descriptor FD (a
pipe of the answers' own: what the libraries print goes to the server's stdout, a log), then reads one JSON request a line
on stdin (``id``, ``argv`` (after the interpreter), ``env``, ``cwd``, ``stdout``, ``stderr``: file paths) and answers
``started ID PID`` at once and ``exit PID CODE`` when the child ends (CODE as ``Popen.returncode``: minus the signal's
number for a killed child). It ends when its stdin closes.
"""

import json
import os
import select
import subprocess
import sys
import threading

ANSWERS = None  # the file descriptor the answers go to: a pipe of their own (what the libraries print goes to a log)


def answer(line):
    os.write(ANSWERS, (line + "\n").encode())


def reap():
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        answer(f"exit {pid} {os.waitstatus_to_exitcode(status)}")


def serve():
    pending = b""
    while True:
        readable, _, _ = select.select([0], [], [], 0.05)
        reap()
        if not readable:
            continue
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                become_the_case(request)  # never returns
            try:
                os.setpgid(pid, pid)  # (the child does it too: whichever runs first)
            except OSError:
                pass
            answer(f"started {request['id']} {pid}")


def become_the_case(request):
    code = 1
    try:
        os.close(ANSWERS)  # the case never writes there (and a server that died closes it for good)
        os.setpgid(0, 0)
        take_the_streams(request)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        code = run_main(request["argv"], request["env"].get("PYTHONPATH", ""))
    finally:
        os._exit(code)


def take_the_streams(request):
    import io

    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True,
                                                   write_through=True)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True,
                                                   write_through=True, errors="backslashreplace")


def run_main(argv, pythonpath):
    import atexit
    import builtins
    import gc
    import random
    import tempfile
    import threading
    import types

    random.seed()  # a fresh interpreter's own seed, not the server's
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    tempfile.tempdir = None  # TMPDIR read anew
    extra = [entry for entry in pythonpath.split(os.pathsep) if entry]
    script = argv[0] != "-c"
    first = os.path.dirname(os.path.abspath(argv[0])) if script else ""
    kept = [entry for entry in sys.path[1:] if entry not in extra and entry not in SERVERS_OWN]  # (the server's
    sys.path[:] = [first, *extra, *kept]  # PYTHONPATH is the server's, not the case's)
    sys.argv = list(argv) if script else ["-c", *argv[2:]]
    sys.orig_argv = [sys.executable, *argv]
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    if script:
        main.__file__ = argv[0]
    sys.modules["__main__"] = main
    if os.environ.get("ZEROPATCH", "").strip() not in ("", "0"):
        import zeropatch._startup  # noqa: F401  (what the .pth line does at a real start-up)
    code = 0
    try:
        if script:
            with open(argv[0], "rb") as source:
                exec(compile(source.read(), argv[0], "exec"), main.__dict__)
        else:
            exec(compile(argv[1], "<string>", "exec"), main.__dict__)
    except SystemExit as leaving:
        code = exit_code(leaving.code)
    except BaseException as error:
        error = error.with_traceback(the_case_s_own(error.__traceback__))
        sys.excepthook(type(error), error, error.__traceback__)
        code = 1
    # a real interpreter's exit, in its order: threads joined, atexit, then the main module's objects finalised
    # (a file the case left open is flushed, as at a real exit)
    threading._shutdown()
    atexit._run_exitfuncs()
    main.__dict__.clear()
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return code


def the_case_s_own(traceback):
    """The traceback from the case's first frame on, as a fresh interpreter prints it (without this file's)."""
    while traceback is not None and traceback.tb_frame.f_code.co_filename == os.path.abspath(__file__):
        traceback = traceback.tb_next
    return traceback


def exit_code(value):
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


# what a fresh interpreter, or a library the server imported, reads from the environment at start: a case whose
# environment differs from the server's in one of these gets a real interpreter
READ_AT_START = ("PYTHON", "TORCH", "PYTORCH", "CUDA", "HIP_", "OMP_", "MKL_", "KMP_", "OPENBLAS", "GOMP", "LD_", "TMPDIR",
                 "XDG_CACHE_HOME", "HF_", "HUGGINGFACE", "TRANSFORMERS", "TOKENIZERS", "ACCELERATE", "DS_",
                 "SAFETENSORS", "DIFFUSERS", "USE_")  # (transformers' USE_TORCH, USE_TF, ...)
# names among them that the libraries read only when called (torch.distributed's rendezvous), never at import: a case
# may set them (start_ranks sets the first, as torchrun does)
READ_WHEN_CALLED = ("TORCHELASTIC_USE_AGENT_STORE",)
STARTED_IN = 300  # seconds the server may take to import what it preloads


def can_serve(argv, env, server_env):
    """Whether a command (after the interpreter) in ``env`` can run in a fork of a server started in ``server_env``."""
    if not argv or not (argv[0] == "-c" and len(argv) > 1 or os.path.isabs(argv[0]) and os.path.isfile(argv[0])):
        return False
    for name in set(env) | set(server_env):
        if name != "PYTHONPATH" and name.startswith(READ_AT_START) and name not in READ_WHEN_CALLED and \
                env.get(name) != server_env.get(name):
            return False
    return not any(os.path.exists(os.path.join(entry, "sitecustomize.py"))
                   for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry)


class WarmInterpreter:
    """The client: one server per test process, started with ``env`` on first use; ``start`` gives a ``WarmCase``."""

    def __init__(self, preload, env, folder):
        self.env, self.folder, self.cases = env, folder, 0
        self.log = os.path.join(folder, f"warm-{os.getpid()}-{'-'.join(preload)}.log")  # what the server printed
        self.answers, answers = os.pipe()
        with open(self.log, "wb") as log:
            self.server = subprocess.Popen([sys.executable, os.path.abspath(__file__), str(answers), *preload],
                                           env=env, stdin=subprocess.PIPE, stdout=log, stderr=log, pass_fds=(answers,),
                                           start_new_session=True)
        os.close(answers)
        self.pending, self.started, self.exited, self.lock = b"", {}, {}, threading.Lock()
        ready = self.read(STARTED_IN, lambda: "ready" in self.started)
        if not ready:
            self.close()
            raise RuntimeError(f"the warm interpreter did not start within {STARTED_IN} s (preloading {preload}); "
                               f"it printed:\n{self.printed()}")

    def printed(self):
        with open(self.log, errors="replace") as log:
            return log.read()[-3000:]

    def alive(self):
        return self.server.poll() is None

    def read(self, timeout, done):
        """Take the server's answers until ``done()`` or ``timeout`` seconds; whether it is done. Threads may wait on
        cases of one server at once (a test starting two ranks from two threads): whichever reads an answer files it
        for all, and none holds the lock while it waits."""
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self.lock:
                if done():
                    return True
                while select.select([self.answers], [], [], 0)[0]:
                    self.take(os.read(self.answers, 1 << 16))
                if done():
                    return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            select.select([self.answers], [], [], 0.05 if left is None else min(left, 0.05))

    def take(self, chunk):
        if not chunk:
            raise RuntimeError(f"the warm interpreter ended (exit {self.server.wait()}); it printed:\n{self.printed()}")
        self.pending += chunk
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            kind, *words = line.decode().split()
            if kind == "ready":
                self.started["ready"] = None
            elif kind == "started":  # (an earlier case's exit under the same pid is over)
                self.started[words[0]] = int(words[1])
                self.exited.pop(int(words[1]), None)
            else:
                self.exited[int(words[0])] = int(words[1])

    def start(self, argv, env, cwd):
        with self.lock:
            self.cases += 1
            case = str(self.cases)
        streams = [os.path.join(self.folder, f"case-{os.getpid()}-{case}.{name}") for name in ("out", "err")]
        request = {"id": case, "argv": argv, "env": {name: os.fspath(value) for name, value in env.items()},
                   "cwd": os.fspath(cwd or os.getcwd()), "stdout": streams[0], "stderr": streams[1]}
        with self.lock:
            self.server.stdin.write((json.dumps(request) + "\n").encode())
            self.server.stdin.flush()
        self.read(STARTED_IN, lambda: case in self.started)
        with self.lock:
            pid = self.started.pop(case)
        return WarmCase(self, pid, [sys.executable, *argv], streams)

    def close(self):
        try:
            os.killpg(self.server.pid, 9)
        except ProcessLookupError:
            pass
        self.server.wait()
        os.close(self.answers)


class WarmCase:
    """A forked case, read as the harness reads a ``subprocess.Popen`` (``pid``, ``args``, ``returncode``,
    ``communicate(timeout)``, text); its group is its own, so ``os.killpg(case.pid, ...)`` ends it."""

    def __init__(self, server, pid, args, streams):
        self.server, self.pid, self.args, self.streams, self.returncode = server, pid, args, streams, None

    def poll(self):
        self.server.read(0, lambda: self.pid in self.server.exited)
        return self.wait(0) if self.pid in self.server.exited else None

    def wait(self, timeout=None):
        if self.returncode is not None:
            return self.returncode
        if not self.server.read(timeout, lambda: self.pid in self.server.exited):
            raise subprocess.TimeoutExpired(self.args, timeout)
        self.returncode = self.server.exited[self.pid]
        return self.returncode

    def communicate(self, timeout=None):
        self.wait(timeout)
        outputs = []
        for path in self.streams:
            with open(path, errors="replace") as stream:
                outputs.append(stream.read())
        return tuple(outputs)


if __name__ == "__main__":
    ANSWERS = int(sys.argv[1])
    SERVERS_OWN = {os.path.abspath(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry}
    for module in sys.argv[2:]:
        __import__(module)
    answer("ready")
    serve()
