"""Release hygiene and the documentation's sources: the version written once, the changelog's patch lists written
from the declarations, README short and its test command the one CI runs. (The site itself is built strict by the
`docs` nox session: a broken link or a missing page fails it.)"""

import re
import sys

from conftest import ROOT, assert_ok, run_command

README_MAX_LINES = 250


def test_readme_is_short_and_its_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES, len(readme.splitlines())
    ci_command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert f"```bash\n{ci_command}\n```" in readme, ci_command


def _release(version):
    return tuple(int(part) for part in version.split("."))


def test_changelog_names_every_patch_in_the_release_that_brought_it():
    assert_ok(run_command([sys.executable, ROOT / "tools" / "write_changelog.py", "--check"]))
    changelog = (ROOT / "CHANGELOG.md").read_text()
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, flags=re.M)
    # a patch not released yet names the next release, listed under [Unreleased]
    unreleased = changelog.split("## [Unreleased]", 1)[1].split(f"## [{released[0]}]", 1)[0]
    coming = re.findall(r"<!-- patches-added:(\d+\.\d+\.\d+) -->", unreleased)
    assert all(_release(version) > _release(released[0]) for version in coming), (coming, released[0])
    from zeropatch._registry import _registry

    for name, entry in _registry().items():
        assert entry.patch.since in released + coming, (name, entry.patch.since)
        assert f"- `{name}`" in changelog, name


def test_the_version_is_written_once_and_is_the_newest_release():
    import zeropatch

    changelog = (ROOT / "CHANGELOG.md").read_text()
    newest = re.search(r"^## \[(\d+\.\d+\.\d+)\]", changelog, flags=re.M).group(1)
    assert zeropatch.__version__ == newest, (zeropatch.__version__, newest)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and 'path = "zeropatch/__init__.py"' in pyproject
    assert not re.search(r'^version\s*=', pyproject, flags=re.M)


def test_every_patch_has_its_section_in_the_patches_in_short():
    from zeropatch._core import valid_names

    text = (ROOT / "docs" / "patches-in-short.md").read_text()
    for name in valid_names():
        assert re.search(rf"^## {name}( .*\{{#{name}\}})?$", text, flags=re.M), name
