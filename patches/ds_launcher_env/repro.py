"""`ZEROPATCH=1 deepspeed --hostfile hosts train.py`: what the multi-node launcher runs on the other nodes.

No second machine is needed: pdsh is not started; the command the launcher builds for the nodes is
captured and searched for the zeropatch selection.
Without zeropatch:  the command carries no `export ZEROPATCH=...`, so remote ranks run unpatched (exit 1).
With `zeropatch run -- python repro.py` the selection travels with the command.
"""

import os
import sys
import tempfile


def launcher_command(hosts=("node1", "node2")):
    import deepspeed.launcher.multinode_runner as multinode
    import deepspeed.launcher.runner as runner

    workdir = tempfile.mkdtemp()
    with open(os.path.join(workdir, "hostfile"), "w") as hostfile:
        hostfile.writelines(f"{host} slots=1\n" for host in hosts)
    multinode.PDSHRunner.backend_exists = lambda self: True  # pdsh need not be installed here
    captured = {}

    class CapturedPopen:  # stands for the process that would run pdsh
        returncode = 0

        def __init__(self, cmd, env=None, **kwargs):
            captured["cmd"] = " ".join(cmd)

        def wait(self):
            return 0

    runner.subprocess.Popen = CapturedPopen
    here = os.getcwd()
    os.chdir(workdir)
    try:
        runner.main(["--hostfile", "hostfile", "--launcher", "pdsh", "--no_ssh_check", "--master_addr", "127.0.0.1",
                     "train.py"])
    finally:
        os.chdir(here)
    return captured["cmd"]


def main():
    selection = os.environ.setdefault("ZEROPATCH", "1")
    command = launcher_command()
    if f"export ZEROPATCH={selection};" not in command:
        sys.exit(f"repro: the launcher does not forward ZEROPATCH to the other nodes:\n{command}")
    print(f"repro: the launcher forwards ZEROPATCH={selection} to every node")


if __name__ == "__main__":
    main()
