"""pkg_resources: where setuptools has none, the stand-in answers what importlib.metadata answers and behaves as
setuptools 81's did; where setuptools has it, the stand-in's answers are compared with the real one's. And
`zeropatch check` names the patches a CLIP-era script needs."""

import sys

import pytest

from conftest import assert_ok, clean_environment, installed, requires, run_command, run_python

REAL = installed("setuptools") and run_python("import pkg_resources").returncode == 0


@pytest.mark.skipif(REAL, reason="this setuptools has pkg_resources")
def test_the_stand_in_while_installed(tmp_path):
    for folder in ("a", "b"):  # an old-style namespace package split over two folders
        package = tmp_path / folder / "legacyns"
        (package / f"part_{folder}").mkdir(parents=True)
        (package / "__init__.py").write_text("__import__('pkg_resources').declare_namespace(__name__)\n")
        (package / f"part_{folder}" / "__init__.py").write_text(f"NAME = {folder!r}\n")
    assert_ok(run_python(f'''
import importlib.metadata as metadata, os, sys, zeropatch
sys.path[:0] = [{str(tmp_path / "a")!r}, {str(tmp_path / "b")!r}]
import pkg_resources
from pkg_resources import packaging
assert packaging.version.parse("1.10") > packaging.version.parse("1.9")
assert pkg_resources.parse_version("2.0") == packaging.version.Version("2.0")
wrapt = pkg_resources.get_distribution("wrapt")
assert wrapt.version == metadata.version("wrapt") and wrapt.key == "wrapt" and str(wrapt) == f"wrapt {{wrapt.version}}"
assert os.path.isdir(wrapt.location)
names = {{dist.project_name.lower() for dist in pkg_resources.require("zeropatch")}}
assert {{"zeropatch", "wrapt"}} <= names, names   # the requirement's own requirements, as setuptools resolved them
for bad, error in (("wrapt<0.1", pkg_resources.VersionConflict), ("no-such-dist-zp", pkg_resources.DistributionNotFound)):
    try:
        pkg_resources.require(bad)
    except error as raised:
        assert isinstance(raised, pkg_resources.ResolutionError) and str(raised)
    else:
        raise AssertionError(bad)
assert "wrapt" in pkg_resources.working_set.by_key
scripts = {{entry.name: entry for entry in pkg_resources.iter_entry_points("console_scripts")}}
assert scripts["zeropatch"].resolve().__name__ == "main" and scripts["zeropatch"].module_name == "zeropatch._cli"
assert pkg_resources.resource_filename("zeropatch", "_core.py") == os.path.join(os.path.dirname(zeropatch.__file__), "_core.py")
assert pkg_resources.resource_exists("zeropatch", "_core.py") and pkg_resources.resource_string("zeropatch", "_core.py")
import legacyns.part_a, legacyns.part_b
assert legacyns.part_a.NAME == "a" and legacyns.part_b.NAME == "b"
try:
    pkg_resources.fixup_namespace_packages
except AttributeError as error:
    assert "setuptools >= 82 removed pkg_resources" in str(error)
zeropatch.uninstall("pkg_resources")
assert "pkg_resources" not in sys.modules
print("ok")
'''))


@pytest.mark.skipif(not REAL, reason="compares with a setuptools that has pkg_resources")
def test_the_stand_in_answers_as_the_real_pkg_resources():
    assert_ok(run_python('''
import types, pkg_resources as real
from zeropatch.patches.setuptools.pkg_resources import _build
stand_in = types.SimpleNamespace(**_build()[0])
for name in ("wrapt", "pytest", "packaging"):
    ours, theirs = stand_in.get_distribution(name), real.get_distribution(name)
    assert (ours.project_name, ours.key, ours.version) == (theirs.project_name, theirs.key, theirs.version), name
    assert sorted(map(str, ours.requires())) == sorted(map(str, theirs.requires())), name
for requirement in ("pytest", "zeropatch", "pytest>=1"):
    ours = sorted(dist.key for dist in stand_in.require(requirement))
    theirs = sorted(dist.key for dist in real.require(requirement))
    assert ours == theirs, (requirement, ours, theirs)
for bad in ("wrapt<0.1", "no-such-dist-zp"):
    kinds = []
    for module in (stand_in, real):
        try:
            module.require(bad)
        except module.ResolutionError as error:
            kinds.append(type(error).__name__)
    assert kinds[0] == kinds[1], kinds
for text in ("1.0.post1", "2.13.0+cpu", "0.5.0.dev1"):  # setuptools < 71 parses with its vendored packaging
    assert str(stand_in.parse_version(text)) == str(real.parse_version(text)), text
assert sorted(e.name for e in stand_in.iter_entry_points("console_scripts")) == sorted(e.name for e in real.iter_entry_points("console_scripts"))
assert stand_in.resource_filename("zeropatch", "_core.py") == real.resource_filename("zeropatch", "_core.py")
print("ok")
'''))


@requires("numpy")
def test_check_names_the_patches_a_clip_era_script_needs(tmp_path):
    script = tmp_path / "clip_score.py"
    script.write_text("import numpy as np\nfrom pkg_resources import packaging\nFRAME_DTYPE = np.float\nprint('body')\n")
    without = run_command([sys.executable, "-m", "zeropatch", "check", "--patches", "0", str(script)], env=clean_environment())
    assert without.returncode == 1, without.stdout
    assert "fixed by zeropatch's numpy_aliases" in without.stdout and "FRAME_DTYPE = np.float" in without.stdout, without.stdout
    if not REAL:
        assert "fixed by zeropatch's pkg_resources" in without.stdout, without.stdout
    assert "body" not in without.stdout
    fixed = run_command([sys.executable, "-m", "zeropatch", "check", str(script)], env=clean_environment())
    assert fixed.returncode == 0 and "2 imports and 1 module-level reads, 0 failed" in fixed.stdout, fixed.stdout
