"""Claims are runs: every release a patch's `affected` versions name was run by the release sweep (compat/results,
from `nox -s sweep`) to a real outcome, and the documentation's compatibility table (docs/compatibility.md) and the patch READMEs' verified releases
are exactly what those results say (tools/compat_table.py writes them; nobody edits them by hand)."""

import json
import re
import sys

import pytest

from conftest import ROOT, assert_ok, run_command

RESULTS = sorted((ROOT / "compat" / "results").glob("*.json"))
REAL_OUTCOMES = {"verified", "not-needed", "applied, not forced"}
pytestmark = pytest.mark.skipif(not RESULTS, reason="no sweep results in compat/results")


def swept(patch, package):
    """The versions of ``package`` on which ``patch``'s repro ran to a real outcome in the sweep."""
    found = set()
    for path in RESULTS:
        for row in json.loads(path.read_text())["rows"]:
            result = row["patches"].get(patch)
            version = (row.get("versions") or {}).get(package)
            if result and version and result["outcome"] in REAL_OUTCOMES:
                found.add(version)
    return found


def test_every_version_a_patch_claims_was_run():
    from zeropatch import _core

    for name, entry in _core._registry().items():
        if entry.patch.package == _core.HISTORY:  # its releases are the API history's, which tests/test_history.py checks
            continue
        claimed = re.findall(r"\d+\.\d+(?:\.\d+)?", entry.patch.affected)
        assert claimed, f"{name}: its affected versions name no release ({entry.patch.affected!r})"
        ran = swept(name, entry.patch.package)
        for version in claimed:
            assert any(run == version or run.startswith((version + ".", version + "+")) for run in ran), (
                f"{name} claims {entry.patch.package} {version}, which the sweep did not run (ran: {sorted(ran)})")


def test_no_patch_failed_on_a_swept_release():
    failed = [(path.stem, row["release"], patch, result.get("detail", "")[:200]) for path in RESULTS
              for row in json.loads(path.read_text())["rows"] for patch, result in row["patches"].items()
              if result["outcome"] == "FAILED" or "failed" in result.get("tests", {}).values()]
    assert not failed, failed


def test_the_tables_are_what_the_results_say():
    assert_ok(run_command([sys.executable, ROOT / "tools" / "compat_table.py", "--check"]))
