"""torch_load's whole objects on the real torch.load: a checkpoint holding a model itself, saved by a repository's own
code, loads with weights_only still on (its classes and torch.nn's built as shells, none of their code run during the
load), equal to what was saved; anything else a file names (a function, another package's class, a class the
repository only imports) is refused, a file that calls a repository class is refused before its code runs, and
``ZEROPATCH_TORCH_LOAD=data`` refuses every class beyond the data list. Each case is a small repository of its own
(``.git`` at its root) run as a script in a fresh interpreter."""

import json
import sys

import pytest

from conftest import assert_ok, clean_environment, distribution_version, requires, run_command

pytestmark = [requires("torch"),
              pytest.mark.skipif((distribution_version("torch") or (0,)) < (2, 6), reason="weights_only default: torch 2.6")]

MODELS = '''
import os, subprocess, torch, torch.nn as nn
from subprocess import Popen  # imported, not defined here: never admitted under this module's name

class Conv(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.conv, self.bn, self.act = nn.Conv2d(a, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.SiLU()
    def forward(self, x):
        return self.act(self.bn(self.conv(x)))

class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(Conv(3, 4), nn.Upsample(scale_factor=2), nn.MaxPool2d(2), nn.Dropout(0.1))
        self.heads = nn.ModuleList([nn.utils.weight_norm(nn.Linear(4, 2)), nn.Identity()])
        self.register_buffer("stride", torch.tensor([8.0, 16.0]))
        self.names, self.yaml = ["cat", "dog"], {"nc": 2, "depth": 0.33}
    def forward(self, x):
        return self.heads[0](self.body(x).mean((2, 3)))

class Marker:
    """Its code leaves a file behind whenever it runs; its __setstate__ says whether it ran inside the unpickler."""
    def __init__(self, path):
        open(path, "w").close()
        self.path = path
    def __setstate__(self, state):
        import sys
        frame, during = sys._getframe(1), False
        while frame:
            during, frame = during or frame.f_code.co_filename.endswith("_weights_only_unpickler.py"), frame.f_back
        open(state["path"] + (".during" if during else ".after"), "w").close()
        self.__dict__.update(state)
'''

SAVE = '''
import sys, torch
sys.path.insert(0, {repository!r})
from models import Detector
torch.manual_seed(0)
model = Detector().eval()
state = {{key: value.clone() for key, value in model.state_dict().items()}}
torch.save({{"model": model.half(), "epoch": 3, "state": state}}, {path!r})
'''

LOAD = '''
import sys, torch
from models import Conv  # the program imports the module the classes are in, as detection repositories do
checkpoint = torch.load(sys.argv[1], map_location="cpu")
model, state = checkpoint["model"], checkpoint["state"]
assert type(model).__module__ == "models" and type(model).__name__ == "Detector", type(model)
assert model.yaml == {"nc": 2, "depth": 0.33} and model.names == ["cat", "dog"] and not model.training
assert next(model.parameters()).dtype == torch.float16
loaded = model.state_dict()
assert loaded.keys() == state.keys(), (loaded.keys(), state.keys())
assert all(torch.equal(loaded[key], value.to(loaded[key].dtype)) for key, value in state.items())
x = torch.randn(2, 3, 8, 8)
print(model.float()(x).shape, isinstance(model.body[0], Conv), model.heads[0].weight_g.shape)
'''


def repository(tmp_path, **files):
    """A repository of its own: ``.git`` at its root, ``models.py`` and the given files."""
    root = tmp_path / "repository"
    (root / ".git").mkdir(parents=True)
    (root / "models.py").write_text(MODELS)
    for name, text in files.items():
        (root / f"{name}.py").write_text(text)
    return root


def python(*arguments, cwd, **env):
    return run_command([sys.executable, *map(str, arguments)], cwd=cwd, env=clean_environment(**env))


def saved_model(tmp_path, root):
    path = tmp_path / "detector.pt"
    assert_ok(python("-c", SAVE.format(repository=str(root), path=str(path)), cwd=tmp_path))
    return path


def test_a_whole_model_loads_equal_with_weights_only_on_and_the_report_names_its_classes(tmp_path):
    root = repository(tmp_path, load=LOAD)
    path = saved_model(tmp_path, root)
    plain = python(root / "load.py", path, cwd=root)
    assert plain.returncode != 0 and "Unsupported global: GLOBAL models.Detector" in plain.stderr, plain.stderr
    report = tmp_path / "report.json"
    patched = run_command([sys.executable, "-m", "zeropatch", "run", "--", sys.executable, root / "load.py", path],
                          cwd=root, env=clean_environment(ZEROPATCH_REPORT=report))
    assert_ok(patched)
    assert patched.stdout.startswith("torch.Size([2, 2]) True torch.Size([2, 1])"), patched.stdout
    built = json.loads(report.read_text())["reports"]["torch_load"]["counts"]
    assert list(built) == [f"{path}: models.Conv, models.Detector and 11 torch.nn classes"], built  # ten layers, weight_norm's hook


CRAFTED = '''
import os, pickle, subprocess, sys, torch, zeropatch
import models
here = os.path.dirname(os.path.abspath(__file__))
marker = os.path.join(here, "ran")
class Calls:  # calls a repository class with arguments: Marker(marker) would leave a file
    def __reduce__(self):
        return (models.Marker, (marker,))
class Named:  # names models.Popen, which the module only imports (it is subprocess.Popen)
    def __reduce__(self):
        return (Popen, (["touch", marker],))
class Popen:
    pass
Popen.__module__ = "models"
class System:
    def __reduce__(self):
        return (os.system, (f"touch {marker}",))
class Other:  # a class of another package (torch, not torch.nn)
    def __reduce__(self):
        return (torch.optim.SGD, ([torch.zeros(1)],))
models.Popen = Popen  # while saving, so that pickle writes the name
for name, payload in {"calls": Calls(), "popen": Named(), "system": System(), "other": Other()}.items():
    torch.save({"model": torch.ones(1), "extra": payload}, os.path.join(here, name + ".pt"))
models.Popen = subprocess.Popen
for name in ("calls", "popen", "system", "other"):
    try:
        torch.load(os.path.join(here, name + ".pt"))
    except pickle.UnpicklingError as error:
        print(name, "refused:", str(error).replace("\\n", " "))
    else:
        print(name, "LOADED")
print("ran" if any(os.path.exists(marker + end) for end in ("", ".during", ".after")) else "nothing ran")
'''


def test_a_crafted_file_can_build_the_repository_s_classes_and_call_nothing(tmp_path):
    root = repository(tmp_path, crafted=CRAFTED)
    result = python(root / "crafted.py", cwd=root)
    assert_ok(result)
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.split(" ", 1)[0] in
                 ("calls", "popen", "system", "other"))
    assert set(lines) == {"calls", "popen", "system", "other"}, result.stdout
    assert all(line.startswith("refused:") for line in lines.values()), lines
    assert lines["calls"].startswith("refused: Weights only load failed: the file calls models.Marker with arguments")
    assert "models.Popen is not on it, nor is it a class of this job's repository" in lines["popen"], lines["popen"]
    assert "not a class defined in" in lines["popen"] and "torch.optim.sgd.SGD is not on it" in lines["other"]
    assert result.stdout.rstrip().endswith("nothing ran"), result.stdout


def test_a_built_class_gets_its_state_after_the_load_as_pickle_gives_it(tmp_path):
    """A repository class built from the file (no arguments) runs none of its code while the file is read; its own
    __setstate__ runs once the load is over, as pickle's would, and the state is its."""
    code = '''
import os, torch, zeropatch
import models
marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "state")
saved = object.__new__(models.Marker)
saved.__dict__.update(path=marker, value=3)
torch.save({"marker": saved}, marker + ".pt")
loaded = torch.load(marker + ".pt")["marker"]
print(type(loaded) is models.Marker, loaded.value, os.path.exists(marker + ".during"), os.path.exists(marker + ".after"))
'''
    root = repository(tmp_path, built=code)
    result = python(root / "built.py", cwd=root)
    assert_ok(result)
    assert result.stdout == "True 3 False True\n", result.stdout


def test_the_data_switch_refuses_every_class_beyond_the_list(tmp_path):
    root = repository(tmp_path, load=LOAD)
    path = saved_model(tmp_path, root)
    result = run_command([sys.executable, "-m", "zeropatch", "run", "--", sys.executable, root / "load.py", path],
                         cwd=root, env=clean_environment(ZEROPATCH_TORCH_LOAD="data"))
    assert result.returncode != 0 and "Unsupported global: GLOBAL models.Detector" in result.stderr
    assert "ZEROPATCH_TORCH_LOAD=data refuses every class beyond it" in result.stderr, result.stderr


def test_a_module_outside_the_repository_is_never_imported_for_a_file(tmp_path):
    """The file names a module beside the repository (not under its root) that the program never imported."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "beside.py").write_text("open(__file__ + '.imported', 'w').close()\nclass Thing:\n    pass\n")
    code = f'''
import os, pickle, sys, torch, zeropatch
sys.path.insert(0, {str(outside)!r})
import importlib
beside = importlib.import_module("beside")
torch.save({{"thing": beside.Thing()}}, "thing.pt")
os.remove(beside.__file__ + ".imported")
del sys.modules["beside"]
try:
    torch.load("thing.pt")
except pickle.UnpicklingError as error:
    print("refused", "not a class defined in the job's repository" in str(error))
print(os.path.exists(beside.__file__ + ".imported"))
'''
    root = repository(tmp_path, outside=code)
    result = python(root / "outside.py", cwd=root)
    assert_ok(result)
    assert result.stdout == "refused True\nFalse\n", result.stdout


def test_a_repository_module_the_program_has_not_imported_is_imported_from_its_root(tmp_path):
    """An evaluation script that loads what train.py saved, without importing the model's module itself."""
    root = repository(tmp_path, evaluate='''
import sys, torch, zeropatch
model = torch.load(sys.argv[1])["model"]
print(type(model).__module__, "models" in sys.modules)
''')
    path = saved_model(tmp_path, root)
    result = python(root / "evaluate.py", path, cwd=root)
    assert_ok(result)
    assert result.stdout == "models True\n", result.stdout


def test_classes_of_the_running_script_load_as_plain_pickle_would(tmp_path):
    code = '''
import os, sys, torch, zeropatch
class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 1)
if sys.argv[1] == "save":
    torch.save(Head(), "head.pt")
else:
    head = torch.load("head.pt")
    print(type(head) is Head, head.linear.weight.shape)
'''
    root = repository(tmp_path, script=code)
    assert_ok(python(root / "script.py", "save", cwd=root))
    result = python(root / "script.py", "load", cwd=root)
    assert_ok(result)
    assert result.stdout == "True torch.Size([1, 2])\n", result.stdout
