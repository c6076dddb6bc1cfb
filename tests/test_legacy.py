"""zeropatch._legacy: which release a repository's code was written for, read off its own pins in every file kind
the real repositories use (alpaca's requirements.txt, LLaVA's and FastChat's pyproject.toml, setup.py, conda's
environment.yml), from the script's folder up to the repository's root; what is not a pin of the package is not
read as one; a declared release (ZEROPATCH_LEGACY=transformers==4.40.2) decides as a pin of it; a declaration naming
nothing installed says what is valid."""

import pytest

from conftest import assert_ok, clean_environment, run_python
from zeropatch._pins import find_pin


def pin_in(tmp_path, name, text, package="transformers"):
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / name).write_text(text)
    found = find_pin(package, tmp_path)
    return None if found is None else found[1:]


@pytest.mark.parametrize("name, text, expected", [
    ("requirements.txt", "numpy\ntransformers>=4.28.1\ntorch\n", ("transformers>=4.28.1", (4, 28, 1), None)),
    ("requirements.txt", "transformers==4.37.2 # LLaVA\n", ("transformers==4.37.2", (4, 37, 2), None)),
    ("requirements.txt", "transformers >= 4.31, <4.40\n", ("transformers>= 4.31, <4.40", (4, 31), (4, 40))),
    ("requirements.txt", "transformers<5\n", ("transformers<5", None, (5,))),
    ("requirements-train.txt", "Transformers~=4.30.0\n", ("transformers~=4.30.0", (4, 30, 0), None)),
    ("pyproject.toml", 'dependencies = [\n  "torch==2.0.1", "transformers==4.37.2", "tokenizers==0.15.1",\n]\n',
     ("transformers==4.37.2", (4, 37, 2), None)),
    ("setup.py", 'install_requires=["transformers[sentencepiece]>=4.31.0", "fschat"]\n',
     ("transformers>=4.31.0", (4, 31, 0), None)),
    ("environment.yml", "dependencies:\n  - transformers=4.19.2\n  - pip:\n    - omegaconf\n",
     ("transformers=4.19.2", (4, 19, 2), None)),
    # a VCS install at a release tag pins that release
    ("requirements.txt", "transformers @ git+https://github.com/huggingface/transformers@v4.31.0\n",
     ("transformers @ v4.31.0", (4, 31, 0), None)),
    ("requirements.txt", "git+https://github.com/huggingface/transformers.git@4.28.1#egg=transformers\n",
     ("transformers @ 4.28.1", (4, 28, 1), None)),
])
def test_pins_as_real_repositories_write_them(tmp_path, name, text, expected):
    assert pin_in(tmp_path, name, text) == expected


@pytest.mark.parametrize("text", ["transformers\n", "sentence-transformers==2.2.2\n", "transformers_stream==1.0\n",
                                  "git+https://github.com/huggingface/transformers.git\n",
                                  "transformers @ git+https://github.com/huggingface/transformers.git@main\n"])
def test_what_is_not_a_versioned_pin_of_the_package_is_not_one(tmp_path, text):
    assert pin_in(tmp_path, "requirements.txt", text) is None


def test_a_vcs_install_at_a_commit_is_named_in_the_decision_not_taken_for_a_release(tmp_path):
    """``transformers @ git+...@c612628``: which release that commit led to cannot be read offline; the decision says
    so and how to declare it, where it said "no pin of transformers found"."""
    from zeropatch._legacy import decide_in
    from zeropatch._pins import find_commit

    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text(
        "torch\ntransformers @ git+https://github.com/huggingface/transformers@c612628\n")
    assert find_pin("transformers", tmp_path) is None
    assert find_commit("transformers", tmp_path) == (str(tmp_path / "requirements.txt"), "c612628")
    decision = decide_in("transformers", "5.0.0", str(tmp_path))
    assert "installs transformers at commit c612628" in decision.why and "ZEROPATCH_LEGACY=transformers==" in \
        decision.why, decision.why


def test_the_search_goes_up_to_the_repository_root_and_no_further(tmp_path):
    (tmp_path / "requirements.txt").write_text("transformers==4.28.1\n")  # outside the repository
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    (repository / "llava" / "train").mkdir(parents=True)
    assert find_pin("transformers", repository / "llava" / "train") is None
    (repository / "pyproject.toml").write_text('dependencies = ["transformers==4.37.2"]\n')
    assert find_pin("transformers", repository / "llava" / "train")[1:] == ("transformers==4.37.2", (4, 37, 2), None)



def test_a_declaration_naming_nothing_installed_says_what_is_valid():
    result = run_python("from zeropatch._legacy import decide; print(decide('wrapt', '99').legacy)",
                        env=clean_environment(ZEROPATCH_LEGACY="wrapt,transformer-s"))
    assert_ok(result)
    assert result.stdout.split() == ["True"], result.stdout
    assert "no installed distribution 'transformer-s' (valid: all, or the names of installed" in result.stderr, result.stderr


@pytest.mark.parametrize("declared, changed_in, legacy, why", [
    ("wrapt==1.14.1", "1.15", True, "declares 'wrapt==1.14.1': written for 1.14.1, before wrapt 1.15"),
    ("wrapt==1.14.1", "1.14", False, "declares 'wrapt==1.14.1': written for 1.14.1, not before wrapt 1.14"),
    ("pytest,wrapt>=1.10,<1.15", "1.15", True, "declares 'wrapt>=1.10,<1.15': written for 1.10, before wrapt 1.15"),
    ("wrapt<2", "2.0", True, "declares 'wrapt<2': written for releases before 2, before wrapt 2.0"),
    ("wrapt<2", "1.15", False, "declares 'wrapt<2': written for releases before 2, not before wrapt 1.15"),
    ("wrapt", "1.15", True, "declares this code written for an older wrapt"),
])
def test_a_declared_release_decides_as_a_pin_of_it(declared, changed_in, legacy, why):
    result = run_python(f"from zeropatch._legacy import decide; d = decide('wrapt', {changed_in!r}); "
                        "print(d.legacy); print(d.why)", env=clean_environment(ZEROPATCH_LEGACY=declared))
    assert_ok(result)
    assert result.stdout.splitlines() == [str(legacy), f"ZEROPATCH_LEGACY {why}"], result.stdout
    assert "no installed distribution" not in result.stderr, result.stderr


def test_a_console_script_is_decided_by_the_repository_of_the_code_it_runs(tmp_path):
    """A repository installed editable and launched through its entry point (``tool-train``, a script the installer
    wrote into the environment's bin/): the decision is its repository's pins, as `check` reads them, not the folder of
    the console script."""
    import sys

    from conftest import run_command

    repository = tmp_path / "tool"
    (repository / ".git").mkdir(parents=True)
    (repository / "requirements.txt").write_text("transformers==4.31.0\n")
    (repository / "tool").mkdir()
    (repository / "tool" / "__init__.py").write_text("")
    (repository / "tool" / "train.py").write_text(
        "def main():\n    from zeropatch._legacy import decide\n    decision = decide('transformers', '5.0')\n"
        "    print(decision.legacy, decision.why)\n")
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "tool-train"
    script.write_text(f"#!{sys.executable}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom tool.train import main\n"
                      "if __name__ == '__main__':\n    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
                      "    sys.exit(main())\n")
    result = run_command([sys.executable, str(script)], env=clean_environment(PYTHONPATH=repository), cwd=tmp_path)
    assert_ok(result)
    assert result.stdout.startswith("True ") and "requirements.txt pins 'transformers==4.31.0'" in result.stdout, \
        result.stdout
