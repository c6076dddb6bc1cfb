"""hf_hub_legacy on the real huggingface_hub (2.4 in one session, 0.36 in the other): the token store, use_auth_token
as token, cached_download of a Hub URL from the cache and of any other URL over HTTP (a local server; the token is
never sent there), offline refusal, and hf_cache_home."""

from conftest import assert_ok, requires, run_python

pytestmark = requires("huggingface_hub")


def test_hf_folder_keeps_the_token_file(tmp_path):
    env_path = tmp_path / "token"
    assert_ok(run_python(f'''
import os
os.environ.pop("HF_TOKEN", None); os.environ.pop("HUGGING_FACE_HUB_TOKEN", None)
os.environ["HF_TOKEN_PATH"] = {str(env_path)!r}
import zeropatch
from huggingface_hub import HfFolder, constants
assert HfFolder.get_token() is None
HfFolder.save_token("hf_legacy")
assert open({str(env_path)!r}).read() == "hf_legacy" and HfFolder.get_token() == "hf_legacy"
HfFolder.delete_token()
HfFolder.delete_token()  # twice: nothing to delete is fine, as before
assert not os.path.exists({str(env_path)!r}) and HfFolder.get_token() is None
assert constants.hf_cache_home == constants.HF_HOME
print("ok")
'''))


def test_use_auth_token_becomes_token_by_the_rule_transformers_use_auth_token_applies_too():
    """One rule for both libraries (patches/huggingface_hub/_auth_token.py): None dropped, the value as the token,
    a different token given too refused, naming what to keep."""
    assert_ok(run_python('''
import zeropatch, huggingface_hub
from huggingface_hub.utils import _validators
if hasattr(_validators, "smoothly_deprecate_legacy_arguments"):
    convert = _validators.smoothly_deprecate_legacy_arguments
    assert convert(fn_name="f", kwargs={"use_auth_token": "a"}) == {"token": "a"}
    assert convert(fn_name="f", kwargs={"use_auth_token": "a", "token": "a"}) == {"token": "a"}
    assert convert(fn_name="f", kwargs={"use_auth_token": None, "revision": "main"}) == {"revision": "main"}
    try:
        convert(fn_name="f", kwargs={"use_auth_token": "a", "token": "b"})
    except ValueError as error:
        assert "Please set only the argument `token`" in str(error), error
    else:
        raise AssertionError("a different token given too was accepted")
    assert zeropatch.status("hf_hub_legacy")[0].state == "applied"
print("ok")
'''))


def test_cached_download_of_a_hub_url_and_of_any_other_url(tmp_path):
    assert_ok(run_python(f'''
import http.server, os, threading
os.environ.pop("HF_HUB_OFFLINE", None); os.environ.pop("TRANSFORMERS_OFFLINE", None)  # only a local server is reached
import zeropatch
from huggingface_hub import cached_download, hf_hub_url
if not cached_download.__module__.startswith("zeropatch"):
    print("this huggingface_hub has its own cached_download (< 0.26)"); raise SystemExit(0)
from huggingface_hub.errors import LocalEntryNotFoundError

cache = {str(tmp_path)!r}
snapshot = os.path.join(cache, "models--legacy--repo", "snapshots", "0" * 40)
os.makedirs(snapshot); os.makedirs(os.path.join(cache, "models--legacy--repo", "refs"))
open(os.path.join(snapshot, "config.json"), "w").write("{{}}")
open(os.path.join(cache, "models--legacy--repo", "refs", "main"), "w").write("0" * 40)
path = cached_download(hf_hub_url("legacy/repo", "config.json"), cache_dir=cache, local_files_only=True,
                       use_auth_token=False)
assert path == os.path.join(snapshot, "config.json"), path

seen = []
class Serve(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        seen.append(dict(self.headers))
        body = b"print('community pipeline')"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Serve)  # port 0: a free one
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{{server.server_port}}/pipeline.py"
first = cached_download(url, cache_dir=cache, token="hf_secret")
assert open(first).read() == "print('community pipeline')"
assert not any("hf_secret" in str(headers) for headers in seen), seen  # the token stays with the Hub
server.shutdown()
assert cached_download(url, cache_dir=cache) == first and len(seen) == 1  # from the cache, once
try:
    cached_download(url + "?other", cache_dir=cache, local_files_only=True)
except LocalEntryNotFoundError:
    pass
else:
    raise AssertionError("downloaded with local_files_only")
print("ok")
'''))


def test_the_errors_module_holds_the_hubs_own_classes(tmp_path):
    """huggingface_hub.utils._errors (gone in 0.25): provided with 0.24's names, the very classes the hub raises, so an
    old ``except RepositoryNotFoundError`` still catches; where the hub has the module, it is left alone."""
    assert_ok(run_python(f'''
import importlib, sys, zeropatch
import huggingface_hub
from huggingface_hub import errors, hf_hub_download, utils
from huggingface_hub.utils._errors import (BadRequestError, DisabledRepoError, EntryNotFoundError, FileMetadataError,
    GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError,
    hf_raise_for_status)
legacy = sys.modules["huggingface_hub.utils._errors"]
assert hf_raise_for_status is utils.hf_raise_for_status and RepositoryNotFoundError is errors.RepositoryNotFoundError
assert issubclass(GatedRepoError, RepositoryNotFoundError) and issubclass(LocalEntryNotFoundError, EntryNotFoundError)
try:
    hf_hub_download("legacy/absent", "config.json", cache_dir={str(tmp_path)!r}, local_files_only=True)
except EntryNotFoundError as error:
    assert type(error).__module__.startswith("huggingface_hub"), type(error)
else:
    raise AssertionError("an offline miss was not raised")
state = zeropatch.status("hf_hub_legacy")[0]
provided = zeropatch._core.is_provided(legacy)
assert provided == ("huggingface_hub.utils._errors" in state.reason), (provided, state.reason)
zeropatch.uninstall("hf_hub_legacy")
assert provided == ("huggingface_hub.utils._errors" not in sys.modules), "uninstall left the provided module"
print("ok")
'''))


def test_repository_imports_as_the_2023_training_scripts_import_it_and_is_refused_where_one_is_built(tmp_path):
    """diffusers' 2023 training examples import Repository at the top and build one only to push: with zeropatch the
    import works on every hub, and where the hub lacks it building one refuses, naming what to use; where the hub
    still has it (< 1.0) it is the hub's own."""
    assert_ok(run_python(f'''
import zeropatch, huggingface_hub
from huggingface_hub import HfFolder, Repository, create_repo, whoami
if "Repository" in dir(huggingface_hub):
    assert Repository.__module__.startswith("huggingface_hub.repository"), Repository.__module__
else:
    try:
        Repository({str(tmp_path)!r}, clone_from="user/model")
    except RuntimeError as error:
        assert "upload_folder" in str(error) and "--push_to_hub" in str(error), error
    else:
        raise AssertionError("a Repository was built")
    zeropatch.uninstall("hf_hub_legacy")
    try:
        from huggingface_hub import Repository
    except ImportError as error:
        assert "cannot import name 'Repository'" in str(error), error
    else:
        raise AssertionError("Repository is still importable after uninstall")
print("ok")
'''))


def test_check_names_the_import_as_fixed_and_building_a_repository_as_refused(tmp_path):
    """`zeropatch check` before the run: the import line is fixed; the line that builds one (a run with
    --push_to_hub) is named as not fixed, with what to use, where the hub lacks Repository; `explain` of the refusal
    gives the same advice."""
    import sys

    from conftest import distribution_version, run_command

    (tmp_path / "train.py").write_text("import argparse\nfrom huggingface_hub import Repository, create_repo\n"
                                       "args = argparse.Namespace(push_to_hub=True)\n"
                                       "if args.push_to_hub:\n    repo = Repository('out', clone_from='me/model')\n")
    result = run_command([sys.executable, "-m", "zeropatch", "check", "--static", tmp_path / "train.py"])
    if distribution_version("huggingface_hub") < (1,):  # the hub's own Repository
        assert_ok(result)
        assert "note    train.py:5" in result.stdout, result.stdout
        assert "still has it (it fails from 1.0)" in result.stdout, result.stdout
        return
    assert result.returncode == 1, result.stdout + result.stderr
    assert "fixed   train.py:2  from huggingface_hub import Repository" in result.stdout, result.stdout
    assert "NO FIX  train.py:5  repo = Repository('out', clone_from='me/model')" in result.stdout, result.stdout
    assert "upload_folder" in result.stdout and "1 not fixed" in result.stdout, result.stdout
    refused = run_python(f"import zeropatch\nfrom huggingface_hub import Repository\nRepository({str(tmp_path)!r})")
    explained = run_command([sys.executable, "-m", "zeropatch", "explain", refused.stderr.strip().splitlines()[-1]])
    assert "hf_hub_legacy" in explained.stdout and "upload_folder" in explained.stdout, explained.stdout
