"""The core's contract, each case in a fresh interpreter with a sample patch on a module the test writes."""

import json
import os
import sys
import textwrap

import pytest

from conftest import CAPTURE_ZEROPATCH_LOG, ROOT, assert_ok, clean_environment, requires, run_command, run_python

pytestmark = pytest.mark.fresh_interpreter  # the core's laziness and hooks: what happens before a target is imported

SAMPLE_TARGET = '''
def greet():
    return "old"

class Thing:
    def size(self):
        return 1
'''

# A prelude every case runs: the sample target on sys.path and a sample patch registered.
PRELUDE = CAPTURE_ZEROPATCH_LOG.replace("{", "{{").replace("}", "}}") + '''
import sys
sys.path.insert(0, {folder!r})
import zeropatch
from zeropatch import _core

applied = []

def apply_sample(patcher, module):
    applied.append(module.__name__)
    if MODE == "raise":
        raise RuntimeError("sample patch exploded")
    patcher.wrap(module, "greet", lambda wrapped, instance, args, kwargs: "patched")
    patcher.wrap(module.Thing, "size" if MODE != "missing" else "volume",
                 lambda wrapped, instance, args, kwargs: 2)
    return "sample detail"

_core.register(_core.Patch("sample", summary="sample", package="sample-dist", affected="all",
                           targets=("sample_target",), apply=apply_sample,
                           errors=("sample failure text",), default=DEFAULT))
'''


@pytest.fixture
def sample(tmp_path):
    (tmp_path / "sample_target.py").write_text(SAMPLE_TARGET)

    def run(body, mode="ok", default=False, **env):
        prelude = f"MODE = {mode!r}\nDEFAULT = {default!r}\n" + PRELUDE.format(folder=str(tmp_path))
        return run_python(prelude + textwrap.dedent(body), env=clean_environment(**env))

    return run


def test_import_then_install(sample):
    assert_ok(sample('''
        import sample_target
        original = sample_target.greet
        assert zeropatch.status("sample")[0].state == "disabled"
        zeropatch.install("sample")
        assert sample_target.greet() == "patched" and sample_target.Thing().size() == 2
        record = zeropatch.status("sample")[0]
        assert (record.state, record.reason) == ("applied", "sample_target: sample detail"), record
        assert ("INFO", "zeropatch: applied sample to sample-dist unknown (sample detail)") in records, records
    '''))


def test_install_then_import_patches_before_the_import_returns(sample):
    assert_ok(sample('''
        zeropatch.install("sample")
        assert zeropatch.status("sample")[0].state == "waiting"
        assert "sample_target" not in sys.modules
        from sample_target import greet   # bound during the import statement: must be the patched one
        import sample_target
        assert greet() == "patched"
        assert zeropatch.status("sample")[0].state == "applied"
        # the module keeps its real loader: nothing of ours is visible on it
        assert type(sample_target.__loader__).__name__ == "SourceFileLoader", sample_target.__loader__
        assert sample_target.__spec__.loader is sample_target.__loader__
    '''))


def test_install_twice_is_one_install(sample):
    assert_ok(sample('''
        import sample_target
        zeropatch.install("sample")
        zeropatch.install("sample")
        zeropatch.install()
        assert applied == ["sample_target"], applied
        assert sample_target.greet() == "patched"
        assert not hasattr(sample_target.greet.__wrapped__, "__wrapped__")   # wrapped once, not twice
        assert sum(1 for level, message in records if level == "INFO" and " sample " in message) == 1
    '''))


def test_install_uninstall_install_restores_by_identity(sample):
    assert_ok(sample('''
        import sample_target
        original_greet, original_size = sample_target.greet, sample_target.Thing.__dict__["size"]
        zeropatch.install("sample")
        zeropatch.uninstall("sample")
        assert sample_target.greet is original_greet
        assert sample_target.Thing.__dict__["size"] is original_size
        assert sample_target.greet() == "old"
        assert zeropatch.status("sample")[0].state == "disabled"
        assert zeropatch.status("sample")[0].reason == "uninstalled"
        zeropatch.install("sample")
        assert sample_target.greet() == "patched"
        zeropatch.uninstall()
        assert sample_target.greet is original_greet
    '''))


def test_a_wrapped_method_read_through_its_class_and_stored_back_is_still_the_patch(sample):
    """DeepSpeed's ``zero.Init`` (ZeRO-3: the HF Trainer's ``--deepspeed`` with stage 3) saves every module class's
    ``__init__`` as ``cls._old_init = cls.__init__`` and stores it back on exit: wrapt's class-bound copy of a
    patch's wrapper, not the wrapper itself. It still calls the patch: status says applied, and uninstall puts the
    original back (before, status said "replaced" and uninstall left the patch in place)."""
    assert_ok(sample('''
        import sample_target
        original = sample_target.Thing.__dict__["size"]
        zeropatch.install("sample")
        Thing = sample_target.Thing
        wrapper, saved = Thing.__dict__["size"], Thing.size
        assert saved is not wrapper  # wrapt binds it to the class on the way out
        Thing.size = lambda self: 3
        Thing.size = saved
        assert Thing().size() == 2
        assert zeropatch.status("sample")[0].state == "applied", zeropatch.status("sample")
        zeropatch.uninstall("sample")
        assert Thing.__dict__["size"] is original and Thing().size() == 1
    '''))


def test_uninstall_before_the_target_arrives_leaves_it_untouched(sample):
    assert_ok(sample('''
        zeropatch.install("sample")
        zeropatch.uninstall("sample")
        import sample_target
        assert sample_target.greet() == "old" and applied == []
        assert zeropatch._core._WATCHER not in sys.meta_path or "sample_target" not in zeropatch._core._WATCHER.callbacks
    '''))


def test_a_default_patch_that_raises_never_breaks_the_import(sample):
    result = sample('''
        zeropatch.install()          # the configured set: sample is a default patch here
        import sample_target         # the patch raises inside the import hook
        assert sample_target.greet() == "old"
        record = zeropatch.status("sample")[0]
        assert record.state == "failed" and "RuntimeError: sample patch exploded" in record.reason, record
        warnings = [m for level, m in records if level == "WARNING"]
        assert len(warnings) == 1 and "sample patch exploded" in warnings[0], records
    ''', mode="raise", default=True)
    assert_ok(result)


def test_an_explicit_patch_that_raises_fails_loudly(sample):
    assert_ok(sample('''
        import sample_target
        try:
            zeropatch.install("sample")
        except zeropatch.PatchError as error:
            assert "sample patch exploded" in str(error)
        else:
            raise AssertionError("an explicitly named patch must raise")
        assert sample_target.greet() == "old"
    ''', mode="raise"))


def test_an_explicit_patch_failing_later_logs_an_error_but_keeps_the_import(sample):
    assert_ok(sample('''
        zeropatch.install("sample")
        import sample_target
        assert sample_target.greet() == "old"
        assert [level for level, message in records if " sample " in message] == ["ERROR"], records
    ''', mode="raise"))


def test_strict_mode_raises_every_failure(sample):
    result = sample('''
        zeropatch.install()
        import sample_target
    ''', mode="raise", default=True, ZEROPATCH_STRICT="1")
    assert result.returncode != 0
    assert "PatchError: zeropatch patch 'sample' failed on sample_target: RuntimeError: sample patch exploded" in result.stderr


def test_a_target_without_the_expected_attribute_is_skipped_and_rolled_back(sample):
    assert_ok(sample('''
        import sample_target
        original = sample_target.greet
        zeropatch.install("sample")
        record = zeropatch.status("sample")[0]
        assert record.state == "skipped" and "has no attribute 'volume'" in record.reason, record
        assert sample_target.greet is original     # the half-applied change was rolled back
    ''', mode="missing"))


def test_zeropatch_0_makes_everything_a_no_op(sample):
    assert_ok(sample('''
        import sample_target
        zeropatch.install("sample")
        assert sample_target.greet() == "old"
        record = zeropatch.status("sample")[0]
        assert record.state == "disabled" and "ZEROPATCH=0" in record.reason, record
        assert all(r.state == "disabled" for r in zeropatch.status())
        assert zeropatch._core._WATCHER not in sys.meta_path
    ''', ZEROPATCH="0"))


def test_disable_variable_subtracts(sample):
    assert_ok(sample('''
        import sample_target
        zeropatch.install("sample")
        assert sample_target.greet() == "old"
        assert zeropatch.status("sample")[0].reason == "ZEROPATCH_DISABLE names it"
    ''', ZEROPATCH_DISABLE="sample"))


def test_unknown_name_in_install_names_the_valid_choices(sample):
    assert_ok(sample('''
        try:
            zeropatch.install("sampel")
        except ValueError as error:
            assert "unknown patch 'sampel' (did you mean 'sample'?)" in str(error) and "sample" in str(error), error
        else:
            raise AssertionError("expected ValueError")
    '''))


def test_unknown_name_in_the_environment_is_one_clear_line_and_the_rest_applies():
    result = run_python("import zeropatch; print(zeropatch.status('pg_deepcopy')[0].state)",
                        env=clean_environment(ZEROPATCH="pg_deepcopy,pg_deepcoppy"))
    assert_ok(result)
    assert result.stdout.strip() == "waiting"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown patch 'pg_deepcoppy'" in lines[0] and "valid:" in lines[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["0,pg_deepcopy", "  ,", "ALL"])
def test_malformed_selections_never_raise(value):
    result = run_python("import zeropatch; print(sorted({r.state for r in zeropatch.status()}))",
                        env=clean_environment(ZEROPATCH=value))
    assert_ok(result)
    assert "Traceback" not in result.stderr


def test_import_does_not_import_any_target():
    result = run_python("import zeropatch, sys; print(sorted(m for m in ('torch', 'colossalai', 'deepspeed', "
                        "'accelerate', 'wrapt', 'logging') if m in sys.modules))")
    assert_ok(result)
    assert result.stdout.strip() == "[]"


def test_info_lines_only_on_rank_zero(sample):
    # only the sample's lines: default patches on the standard library (collections, threading) apply at the import too
    body = '''
        import sample_target
        zeropatch.install("sample")
        print([level for level, message in records if " sample " in message])
    '''
    assert sample(body, RANK="0").stdout.strip() == "['INFO']"
    assert sample(body, RANK="1").stdout.strip() == "['DEBUG']"


def test_status_command_lists_every_patch_and_versions():
    result = run_python("from zeropatch._cli import main; main(['status', '--json'])")
    assert_ok(result)
    report = json.loads(result.stdout)
    from zeropatch._cli import VERSIONED

    assert set(report["versions"]) == {"python", *VERSIONED}
    from zeropatch._core import STATES, valid_names

    assert [p["name"] for p in report["patches"]] == list(valid_names())
    assert all(p["state"] in STATES and p["reason"] for p in report["patches"])
    table = run_python("import sys; from zeropatch._cli import main; sys.exit(main(['status']))")
    assert_ok(table)
    for name in valid_names():
        assert name in table.stdout
    assert "torch" in table.stdout.splitlines()[0]


def test_the_catalogue_is_read_off_the_package_one_module_per_patch():
    """zeropatch/patches/<library>/<name>.py: the module is named as its patch, the folder as the package whose
    release brought the drift, and it opens with the docstring that says what breaks."""
    import importlib

    from zeropatch._core import patch_modules, valid_names

    modules = patch_modules()
    assert modules and len(modules) == len(valid_names())
    for module_name in modules:
        module = importlib.import_module(module_name)
        library, name = module_name.split(".")[-2:]
        assert module.PATCH.name == name, module_name
        assert module.PATCH.package.replace("-", "_") == library, module_name
        assert module.__doc__ and "Breaks" in module.__doc__ and "Changes" in module.__doc__, module_name


def test_a_provided_module_exists_only_while_a_patch_fills_it():
    """Patch(provides=True): a module no finder finds is created for the patch to fill; if the patch declines (or
    fails), the import fails as it would have; uninstall takes the module back out of sys.modules and its parent."""
    assert_ok(run_python('''
import importlib, sys, types, zeropatch
from zeropatch import _core
decline = []
def fill(patcher, module):
    if decline:
        raise _core.NotNeeded("the release has it")
    assert _core.is_provided(module)
    patcher.set(module, "answer", 42)
_core.register(_core.Patch("provider", summary="s", package="json", affected="all", targets=("json.gone",),
                           apply=fill, provides=True))
try:
    import json.gone
except ModuleNotFoundError:
    pass
else:
    raise AssertionError("not provided before install")
zeropatch.install("provider")
import json.gone
assert json.gone.answer == 42 and sys.modules["json.gone"] is json.gone
zeropatch.uninstall("provider")
assert "json.gone" not in sys.modules and not hasattr(sys.modules["json"], "gone")
decline.append(True)
zeropatch.install("provider")
try:
    importlib.import_module("json.gone")
except ModuleNotFoundError as error:
    assert error.name == "json.gone" and str(error) == "No module named 'json.gone'", error
else:
    raise AssertionError("a provider that declines must not leave an empty module")
assert "json.gone" not in sys.modules and zeropatch.status("provider")[0].state == "not-needed"
print("ok")
'''))


def test_a_library_that_is_not_installed_is_never_provided():
    """Patch(provides=(module, ...)): only the named targets (modules a release removed) are created when no finder
    finds them, never the library's package itself: where the library is not installed, ``try: import lib`` fails as
    it would have and no patch sees an empty module (evaluate's ``try: from transformers.pipelines import ...`` once
    made transformers_adamw fail on a machine without transformers), and status says that the library is missing."""
    assert_ok(run_python('''
import sys, zeropatch
from zeropatch import _core
seen = []
def fill(patcher, module):
    seen.append(module.__name__)
    patcher.set(module, "answer", 42)
_core.register(_core.Patch("half_provider", summary="s", package="zp_absent_lib", affected="all",
                           targets=("zp_absent_lib", "zp_absent_lib.gone"), apply=fill, provides=("zp_absent_lib.gone",)))
_core.register(_core.Patch("watcher", summary="s", package="zp_absent_lib", affected="all", targets=("zp_absent_lib",),
                           apply=fill))
zeropatch.install("half_provider", "watcher")
for name in ("zp_absent_lib", "zp_absent_lib.gone"):
    try:
        __import__(name)
    except ModuleNotFoundError as error:
        assert error.name == "zp_absent_lib", error
    else:
        raise AssertionError(f"{name} was provided though its library is not installed")
assert not seen and "zp_absent_lib" not in sys.modules, seen
records = {record.name: record for record in zeropatch.status()}
assert records["watcher"].state == "waiting"
# status says why: a provided submodule needs its library (not "applies when zp_absent_lib is imported")
assert records["half_provider"].reason == "zp_absent_lib is not installed", records["half_provider"].reason
# a module is provided only while a patch that provides it is installed, not while another one only watches it
_core.register(_core.Patch("provider", summary="s", package="json", affected="all", targets=("json.gone",),
                           apply=fill, provides=True))
_core.register(_core.Patch("changer", summary="s", package="json", affected="all", targets=("json.gone",), apply=fill))
zeropatch.install("provider", "changer")
zeropatch.uninstall("provider")
try:
    import json.gone
except ModuleNotFoundError:
    pass
else:
    raise AssertionError("json.gone was provided after its provider was uninstalled")
assert not seen and "json.gone" not in sys.modules, seen
print("ok")
'''))


def test_the_index_is_what_the_patch_modules_declare():
    """zeropatch/_index.py (what `import zeropatch` reads instead of importing every patch module) is exactly what
    tools/write_index.py writes from the modules' own declarations: run it after changing one."""
    result = run_command([sys.executable, ROOT / "tools" / "write_index.py", "--check"], env=clean_environment(ZEROPATCH="0"))
    assert result.returncode == 0, "zeropatch/_index.py is stale: run python tools/write_index.py"


def test_import_zeropatch_imports_no_patch_module_but_those_whose_targets_are_configured():
    result = run_python('''
import sys, zeropatch
print(sorted(name for name in sys.modules if name.startswith("zeropatch.patches.") and name.count(".") == 3))
''', env=clean_environment(ZEROPATCH="1"))
    assert_ok(result)
    assert result.stdout.strip().splitlines()[-1] == "['zeropatch.patches.torch.fused_ema']", result.stdout


def test_a_repository_s_own_package_of_a_library_s_name_is_not_patched(tmp_path):
    """A patch applies to the library it is for, not to whatever module carries its name: a repository's own folder
    of the same name found first on sys.path (DETR's and DDIM's ``datasets/``, beside the script) is skipped, status
    saying where it came from. The installed distribution is the library, from its folder or, installed editable, from
    its project folder (its direct_url.json)."""
    def distribution(site, url=None):
        info = site / "zp_lib-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zp_lib\nVersion: 1.0\n")
        if url:
            (info / "direct_url.json").write_text(json.dumps({"url": url.as_uri(), "dir_info": {"editable": True}}))
        return site

    def package(folder):
        (folder / "zp_lib").mkdir(parents=True)
        (folder / "zp_lib" / "__init__.py").write_text("")
        return folder

    def state(*path):
        result = run_python(f'''
import sys
sys.path[:0] = {[str(folder) for folder in path]!r}
import zeropatch
from zeropatch import _core
_core.register(_core.Patch("zp_lib_patch", summary="s", package="zp_lib", affected="all", targets=("zp_lib",),
                           apply=lambda patcher, module: patcher.set(module, "restored", 1)))
zeropatch.install("zp_lib_patch")
import zp_lib
record = zeropatch.status("zp_lib_patch")[0]
print(record.state, "|", record.reason, "|", hasattr(zp_lib, "restored"))
''')
        assert_ok(result)
        return result.stdout.strip().splitlines()[-1].split(" | ")

    installed = package(distribution(tmp_path / "site"))
    assert state(installed) == ["applied", "zp_lib: patched zp_lib", "True"]
    repository = package(tmp_path / "repository")
    copy = os.path.realpath(repository / "zp_lib" / "__init__.py")
    assert state(repository, installed) == ["skipped", f"zp_lib: zp_lib here is {copy}, not the installed zp_lib 1.0",
                                            "False"]
    assert state(repository) == ["skipped", f"zp_lib: zp_lib here is {copy}, and no zp_lib is installed", "False"]
    project = package(tmp_path / "project")
    assert state(distribution(tmp_path / "editable", url=project), project)[::2] == ["applied", "True"]


@requires("datasets")
def test_a_repository_s_own_datasets_package_is_left_alone(tmp_path):
    """The case it was found on, with the real library (any release: 2.x has its own load_metric, yet the patch was
    asked about the repository's package, which lacks it): DETR and DDIM keep their data loaders in a package of their
    own named ``datasets``, which their scripts import from the repository's folder (first on sys.path) while the
    Hugging Face datasets is installed too. No patch of datasets (datasets_load_metric, moved_names) touches it;
    status says whose package it is."""
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "__init__.py").write_text("def build_dataset(image_set):\n    return image_set\n")
    (tmp_path / "main.py").write_text('''
import zeropatch
from zeropatch import _core
import datasets
from datasets import build_dataset
assert not hasattr(datasets, "load_metric"), "datasets_load_metric put load_metric into the repository's package"
for name in ("datasets_load_metric", "moved_names"):
    state, reason, _ = _core._registry()[name].targets["datasets"]
    print(name, state, reason)
''')
    result = run_command([sys.executable, tmp_path / "main.py"], cwd=tmp_path)
    assert_ok(result)
    own = f"datasets here is {(tmp_path / 'datasets' / '__init__.py').resolve()}, not the installed datasets"
    lines = result.stdout.strip().splitlines()[-2:]
    assert [line.split(" ", 2)[:2] for line in lines] == [["datasets_load_metric", "skipped"], ["moved_names", "skipped"]]
    assert all(own in line for line in lines), lines
