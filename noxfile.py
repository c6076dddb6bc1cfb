"""Test environments: one per ColossalAI release, each with the real torch (CPU), DeepSpeed and accelerate.

colossalai is installed with --no-deps (its metadata pins torch<=2.5.1 and transformers==4.51.3) and
then only what its import really needs. Everything goes through tests/constraints.txt so that no
package can drag in a CUDA build of torch.
"""

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

COLOSSALAI_RELEASES = ["0.5.0", "0.4.0"]  # new optimizer API / last release with _param_store
CONSTRAINTS = ("-c", "tests/constraints.txt")
COLOSSALAI_IMPORT_NEEDS = ["transformers", "peft", "galore-torch", "bitsandbytes", "safetensors", "einops", "psutil", "numpy"]


def install_targets(session, colossalai):
    session.install(*CONSTRAINTS, "torch", "wrapt", "packaging", "pytest")
    session.install(*CONSTRAINTS, "deepspeed", "accelerate", env={"DS_BUILD_OPS": "0"})
    session.install(*CONSTRAINTS, *COLOSSALAI_IMPORT_NEEDS)
    session.install("--no-deps", f"colossalai=={colossalai}")
    session.install(*CONSTRAINTS, ".")  # a regular (non-editable) install: the start-up hook is tested as shipped


@nox.session
def example(session):
    """The main job: the legacy training script crashes plainly and completes under `zeropatch run`."""
    install_targets(session, COLOSSALAI_RELEASES[0])
    script = "examples/legacy_train.py"
    session.log("1/2 the legacy script as it is: it must crash")
    session.run("python", script, env={"ZEROPATCH": "0"}, success_codes=[1])
    session.log("2/2 the same script, unmodified, under zeropatch, on two ranks")
    session.run("zeropatch", "run", "--patches", "all,colossalai_cpu", "--",
                "torchrun", "--standalone", "--nproc_per_node", "2", script)


@nox.session
@nox.parametrize("colossalai", COLOSSALAI_RELEASES)
def tests(session, colossalai):
    install_targets(session, colossalai)
    session.run("zeropatch", "status")
    session.run("pytest", *(session.posargs or ["tests"]), env={"ZEROPATCH_TEST_REQUIRE_ALL": "1"})
