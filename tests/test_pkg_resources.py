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
assert pkg_resources.resource_isdir("zeropatch", "patches")
assert "_core.py" in pkg_resources.resource_listdir("zeropatch", "")
requirements = os.path.join({str(tmp_path)!r}, "requirements.txt")   # CLIP's setup.py: install_requires from it
with open(requirements, "w") as file:
    file.write("# training\\nftfy\\nregex  # the tokenizer's\\ntqdm>=4.0,<5\\ntyping_extensions[x_y]==4.*\\n")
with open(requirements) as file:
    parsed = list(pkg_resources.parse_requirements(file))
assert [str(r) for r in parsed] == ["ftfy", "regex", "tqdm<5,>=4.0", "typing_extensions[x_y]==4.*"], parsed
assert (parsed[3].project_name, parsed[3].key, parsed[3].extras) == ("typing-extensions", "typing-extensions", ("x_y",))
assert sorted(parsed[2].specs) == [("<", "5"), (">=", "4.0")] and repr(parsed[0]) == "Requirement.parse('ftfy')"
assert pkg_resources.Requirement.parse("wrapt>=1 # why") == parsed[0].__class__("wrapt>=1")
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
import io, types, pkg_resources as real
from zeropatch.patches.setuptools.pkg_resources import PROVIDED, _build
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
for name in ("", "patches", "_core.py"):
    assert stand_in.resource_isdir("zeropatch", name) == real.resource_isdir("zeropatch", name), name
assert sorted(stand_in.resource_listdir("zeropatch", "")) == sorted(real.resource_listdir("zeropatch", ""))
assert set(PROVIDED) == set(_build()[0]) and all(hasattr(real, name) for name in PROVIDED)  # only real names
text = ("# a 2021 requirements.txt\\ntorch>=1.7.1\\nregex  # CLIP's tokenizer\\ntqdm==4.64.1 ; python_version >= '3'\\n"
        "typing_extensions>=4.0\\nPillow[extra_One]>=8,<10\\nmy.pkg_name~=1.2\\nnumpy \\\\\\n>=1.20\\n"
        "clip @ git+https://github.com/openai/CLIP.git\\nlast\\\\")
def parsed(module, source):
    return [(str(r), r.name, r.project_name, r.key, r.specs, tuple(r.extras), repr(r), r.url, str(r.marker))
            for r in module.parse_requirements(source)]
for source in (text, [text, ["a>1", ["b"]]], io.StringIO(text)):
    ours = parsed(stand_in, source)
    assert ours == parsed(real, io.StringIO(text) if isinstance(source, io.StringIO) else source), ours
for bad in ("-r other.txt", "--index-url https://x"):
    errors = []
    for module in (stand_in, real):
        try:
            list(module.parse_requirements(bad))
        except Exception as error:
            errors.append(type(error))
    assert len(errors) == 2 and errors[0] is errors[1], errors
for name in ("my_pkg.x--y", "A b"):
    assert stand_in.safe_name(name) == real.safe_name(name) and stand_in.safe_extra(name) == real.safe_extra(name)
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


@pytest.mark.skipif(REAL, reason="this setuptools has pkg_resources: nothing breaks")
def test_check_names_as_not_fixed_only_what_the_stand_in_lacks(tmp_path):
    """``import pkg_resources`` is fixed; so is a setup.py's ``parse_requirements``; a name the stand-in lacks (read,
    imported, or a submodule of the real one) is not fixed, with what to do instead."""
    (tmp_path / "setup.py").write_text("""\
import pkg_resources
from pkg_resources import DistributionNotFound, get_distribution
reqs = [str(r) for r in pkg_resources.parse_requirements(open("requirements.txt"))]
cache = pkg_resources.get_default_cache()
from pkg_resources import get_provider
from pkg_resources.extern import packaging
""")
    result = run_command([sys.executable, "-m", "zeropatch", "check", str(tmp_path)], env=clean_environment())
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line.split()[:2] for line in result.stdout.splitlines() if line.startswith("  ") and "setup.py:" in line]
    assert lines == [["fixed", "setup.py:1"], ["NO", "FIX"], ["NO", "FIX"]], result.stdout
    assert "NO FIX  setup.py:4  cache = pkg_resources.get_default_cache()   (and 2 more in this file)" in result.stdout
    assert "install setuptools<82 for the rest" in result.stdout and "2 not fixed" in result.stdout, result.stdout
    # and the API history of setuptools names the release that removed the submodule
    assert "module pkg_resources.extern was removed in setuptools 71.0" in result.stdout, result.stdout
