"""The core's names in one place: what patch modules, the command line and the tests import. Each lives in its own
room (see ARCHITECTURE.md):

- ``_contract``: the ``Patch`` declaration, ``Skip`` / ``NotNeeded`` / ``PatchError``, the states, ``PatchStatus``;
- ``_patcher``: ``Patcher``, which records every change of a patch and reverts it, and puts removed names back;
- ``_registry``: the known patches, read from the index without importing patch modules;
- ``_config``: the ``ZEROPATCH*`` variables;
- ``_hooks``: the import watcher that applies patches as their targets arrive, and provides removed modules;
- ``_lifecycle``: install, uninstall, apply with failures contained, activation at import;
- ``_status``: status records, the job record, error texts to patches;
- ``_log`` and ``_versions``: the log, once per process and rank 0 first; installed versions.

Everything here is cheap to import: no logging, dataclasses, typing, re or wrapt at module level, because
`import zeropatch` (and the start-up hook) must cost almost nothing. Targets are never imported by the core.
"""

from zeropatch._config import (  # noqa: F401
    DEFAULT_WORDS, ENV_DISABLE, ENV_REHEARSAL_ON_GPU, ENV_RUN_DIR, ENV_SELECT, ENV_STRICT, OFF_WORDS, choices_text,
    parse_disable, parse_selection, strict, unknown_name, valid_names,
)
from zeropatch._contract import (  # noqa: F401
    APPLIED, DISABLED, FAILED, HISTORY, NOT_NEEDED, SKIPPED, STATES, WAITING, NotNeeded, Patch, PatchError, PatchStatus,
    Skip,
)
from zeropatch._hooks import _WATCHER, is_provided, provide_as  # noqa: F401
from zeropatch._lifecycle import activate_from_environment, install, uninstall  # noqa: F401
from zeropatch._log import inform_once, logger, warn_once  # noqa: F401
from zeropatch._patcher import _ABSENT, Patcher, _PutBack, lacks  # noqa: F401
from zeropatch._registry import PATCHES_FOLDER, _registry, patch_modules, register  # noqa: F401
from zeropatch._status import advice_for_error, patches_for_error, patches_that_may_fix, report_to_job, status  # noqa: F401
from zeropatch._versions import installed_version, version_tuple  # noqa: F401
