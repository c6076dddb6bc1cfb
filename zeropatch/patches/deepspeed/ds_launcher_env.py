"""ds_launcher_env: DeepSpeed's multi-node launcher forwards the zeropatch selection to every node.

Breaks: every DeepSpeed release: ``deepspeed --hostfile ...`` (pdsh, OpenMPI, MPICH, Slurm, MVAPICH
launchers) exports to remote nodes only the variables whose names start with one of ``EXPORT_ENVS``
(MLFLOW, PYTHON, MV2, UCX, plus the accelerator's) or that are listed in ``.deepspeed_env``. ``PYTHONPATH``
(and so zeropatch's bootstrap folder) travels, ``ZEROPATCH`` does not: remote ranks run unpatched.

Changes: ``ZEROPATCH`` joins the forwarded prefixes (so ZEROPATCH, ZEROPATCH_DISABLE, ZEROPATCH_STRICT and
ZEROPATCH_EMA_TARGETS travel). Nothing else is forwarded.
"""

from zeropatch._core import NotNeeded, Patch, Skip

PREFIX = "ZEROPATCH"


def apply(patcher, runner):
    exports = getattr(runner, "EXPORT_ENVS", None)
    if not isinstance(exports, list):
        raise Skip("deepspeed.launcher.runner has no EXPORT_ENVS list")
    if any(PREFIX.startswith(prefix) for prefix in exports):
        raise NotNeeded(f"EXPORT_ENVS already forwards {PREFIX}*")
    patcher.set(runner, "EXPORT_ENVS", exports + [PREFIX])
    return "the multi-node launcher forwards ZEROPATCH* variables"


PATCH = Patch(
    "ds_launcher_env",
    since="0.1.0",
    summary="DeepSpeed's multi-node launcher forwards ZEROPATCH* variables to every node",
    package="deepspeed",
    affected="0.16.9-0.19.8 (EXPORT_ENVS lacks ZEROPATCH)",
    targets=("deepspeed.launcher.runner",),
    apply=apply,
)
