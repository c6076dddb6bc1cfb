"""hf_hub_legacy: what huggingface_hub 0.25, 0.26 and 1.0 removed - ``utils._errors``, ``cached_download``,
``HfFolder``, ``use_auth_token=``, ``constants.hf_cache_home``, ``Repository`` - back on today's hub API, so that legacy
code and old diffusers pins import and load.

Breaks: hub 0.26 removed ``cached_download``; hub 1.0 removed ``HfFolder``, the ``use_auth_token`` argument of every
hub function and ``constants.hf_cache_home``. diffusers <= 0.25 imports all three at module level: ``import
diffusers`` with Latte's pin (0.24) on hub >= 1.0 dies with "cannot import name 'hf_cache_home' from
'huggingface_hub.constants'" (then ``HfFolder``, ``cached_download``), and its ``from_pretrained`` passes
``use_auth_token=`` to ``hf_hub_download``: "got an unexpected keyword argument 'use_auth_token'". Code that catches
the hub's errors by their old home, ``from huggingface_hub.utils._errors import RepositoryNotFoundError``, stops
with "No module named 'huggingface_hub.utils._errors'" since 0.25 (the classes moved to ``huggingface_hub.errors``).
The 2022-2023 training scripts (diffusers' examples and their forks, transformers' ``*_no_trainer.py``) import
``Repository`` at the top (``from huggingface_hub import HfFolder, Repository, create_repo, whoami``), to push only
with ``--push_to_hub``: "cannot import name 'Repository' from 'huggingface_hub'" since 1.0 stops every run.

Changes: ``huggingface_hub.constants.hf_cache_home`` is ``HF_HOME`` (its old value); ``HfFolder`` saves, reads and
deletes the token file as it did (``get_token`` is today's ``get_token``: the environment first); ``use_auth_token``
becomes ``token`` in every hub function that validates its arguments (the rule ``transformers_use_auth_token``
applies too, ``_auth_token.py``: a different ``token`` also given is refused, where hub 0.2x let it win);
``cached_download(url, ...)`` resolves a Hub URL through ``hf_hub_download`` (same cache, offline modes, token) and
fetches any other URL into the hub cache once, without sending the token; ``huggingface_hub.utils._errors`` is
provided with 0.24's names, the hub's own classes (and ``hf_raise_for_status``), so ``except`` clauses catch what the
hub raises. ``Repository`` imports again but is not brought back: it was a git clone of a Hub repository pushed
with git-lfs, which hub 1.0 dropped for its HTTP API; building one raises, naming ``upload_folder``, so a run without
``--push_to_hub`` trains and one with it stops before training, saying what to use. Each only where the hub lacks it.
"""

from zeropatch._core import NotNeeded, Patch, Skip, is_provided
from zeropatch.patches.huggingface_hub._auth_token import token_for_use_auth_token

OTHER_URLS = "zeropatch-cached-downloads"  # folder of the hub cache for cached_download's non-Hub URLs
ERRORS_MODULE = "huggingface_hub.utils._errors"
# what 0.24's utils._errors defined (the classes live in huggingface_hub.errors since 0.24, hf_raise_for_status in utils)
ERRORS = ("FileMetadataError", "HfHubHTTPError", "RepositoryNotFoundError", "GatedRepoError", "DisabledRepoError",
          "RevisionNotFoundError", "EntryNotFoundError", "LocalEntryNotFoundError", "BadRequestError")


class HfFolder:
    """huggingface_hub < 1.0's token store: the token file at ``constants.HF_TOKEN_PATH``."""

    @classmethod
    def save_token(cls, token):
        import os

        from huggingface_hub import constants

        os.makedirs(os.path.dirname(constants.HF_TOKEN_PATH), exist_ok=True)
        with open(constants.HF_TOKEN_PATH, "w") as file:
            file.write(token)

    @classmethod
    def get_token(cls):
        from huggingface_hub import get_token

        return get_token()

    @classmethod
    def delete_token(cls):
        import os

        from huggingface_hub import constants

        try:
            os.remove(constants.HF_TOKEN_PATH)
        except FileNotFoundError:
            pass


class Repository:
    """huggingface_hub < 1.0's git-based repository: importable, so that the scripts importing it run; refused where
    one is built (hub 1.0 removed the git workflow; its HTTP API replaces it)."""

    def __init__(self, local_dir, *args, **kwargs):
        import huggingface_hub

        raise RuntimeError(
            f"huggingface_hub {huggingface_hub.__version__} has no Repository (the git clone pushed with git-lfs went "
            f"in 1.0) and zeropatch does not bring it back: push {local_dir!r} with huggingface_hub.upload_folder("
            f"repo_id=..., folder_path=...), or run without pushing (--push_to_hub off)")


def cached_download(url, *, library_name=None, library_version=None, cache_dir=None, user_agent=None,
                    force_download=False, force_filename=None, proxies=None, etag_timeout=10, resume_download=None,
                    token=None, use_auth_token=None, local_files_only=False, legacy_cache_layout=False):
    """huggingface_hub < 0.26's ``cached_download``: the local path of ``url``, downloaded once into the cache."""
    import re

    from huggingface_hub import constants, hf_hub_download

    token = token if token is not None else use_auth_token
    hub_url = re.match(rf"^{re.escape(constants.ENDPOINT)}/(?:(datasets|spaces)/)?(.+?)/resolve/([^/]+)/(.+)$", url)
    if hub_url:
        kind, repo_id, revision, filename = hub_url.groups()
        return hf_hub_download(repo_id, filename, revision=revision, repo_type=kind[:-1] if kind else None,
                               cache_dir=cache_dir, force_download=force_download, token=token,
                               local_files_only=local_files_only, library_name=library_name,
                               library_version=library_version, user_agent=user_agent, etag_timeout=etag_timeout)
    return _download_once(url, cache_dir or constants.HF_HUB_CACHE, force_download,
                          local_files_only or constants.HF_HUB_OFFLINE, user_agent)


def _download_once(url, cache_dir, force_download, offline, user_agent):
    import hashlib
    import os
    import tempfile

    from huggingface_hub.errors import LocalEntryNotFoundError
    from huggingface_hub.file_download import http_get

    folder = os.path.join(cache_dir, OTHER_URLS)
    path = os.path.join(folder, hashlib.sha256(url.encode()).hexdigest())
    if os.path.isfile(path) and not force_download:
        return path
    if offline:
        raise LocalEntryNotFoundError(f"{url} is not in the cache ({path}) and downloads are off (local_files_only "
                                      "or HF_HUB_OFFLINE)")
    os.makedirs(folder, exist_ok=True)
    headers = {"user-agent": user_agent if isinstance(user_agent, str) else "huggingface_hub (zeropatch)"}
    with tempfile.NamedTemporaryFile(dir=folder, delete=False) as temporary:
        try:
            http_get(url, temporary, headers=headers)
        except BaseException:
            os.unlink(temporary.name)
            raise
    os.replace(temporary.name, path)
    return path


def _use_auth_token_as_token(wrapped, instance, args, kwargs):
    """Around hub's ``smoothly_deprecate_legacy_arguments(fn_name=..., kwargs=...)``, which every validated hub
    function calls with the keywords it was given."""
    given = kwargs.get("kwargs")
    if isinstance(given, dict):
        kwargs = dict(kwargs, kwargs=token_for_use_auth_token(given, "hf_hub_legacy", kwargs.get("fn_name")))
    return wrapped(*args, **kwargs)


def _fill_errors_module(patcher, module):
    if not is_provided(module):
        raise NotNeeded("huggingface_hub still has utils._errors (hub < 0.25)")
    from huggingface_hub import errors, utils

    names = {attr: getattr(errors, attr) for attr in ERRORS if hasattr(errors, attr)}
    names["hf_raise_for_status"] = utils.hf_raise_for_status
    patcher.fill(module, names, "huggingface_hub < 0.25's home of the hub's errors, over huggingface_hub.errors "
                                "(provided by zeropatch)")
    return f"{ERRORS_MODULE} provided over huggingface_hub.errors ({len(names)} names)"


def apply(patcher, module):
    name = module.__name__
    if name == ERRORS_MODULE:
        return _fill_errors_module(patcher, module)
    if name == "huggingface_hub.constants":
        if hasattr(module, "hf_cache_home"):
            raise NotNeeded("huggingface_hub.constants still has hf_cache_home (hub < 1.0)")
        patcher.put_back(module, {"hf_cache_home": module.HF_HOME})
        return "constants.hf_cache_home = HF_HOME"
    if name == "huggingface_hub.utils._validators":
        if hasattr(module, "smoothly_deprecate_use_auth_token"):
            raise NotNeeded("huggingface_hub still turns use_auth_token into token itself (hub < 1.0)")
        if not callable(getattr(module, "smoothly_deprecate_legacy_arguments", None)):
            raise Skip("huggingface_hub's argument validation has no smoothly_deprecate_legacy_arguments")
        patcher.wrap(module, "smoothly_deprecate_legacy_arguments", _use_auth_token_as_token)
        return "use_auth_token= becomes token= in every validated hub function"
    missing = [attr for attr in ("HfFolder", "cached_download", "Repository")
               if attr not in dir(module)]  # dir(): the lazily imported names too, without importing them
    if not missing:
        raise NotNeeded("huggingface_hub still has HfFolder, cached_download and Repository (hub < 0.26)")
    patcher.put_back(module, {attr: globals()[attr] for attr in missing})
    return f"{', '.join(missing)} back"


PATCH = Patch(
    "hf_hub_legacy",
    since="0.3.0",
    summary="huggingface_hub's removed cached_download, HfFolder, use_auth_token=, constants.hf_cache_home and "
    "utils._errors back on today's API, Repository importable (old diffusers pins and 2023 training scripts run)",
    package="huggingface_hub",
    affected="0.25.2-2.4.0 (swept; utils._errors went in 0.25, cached_download in 0.26, the rest in 1.0)",
    targets=("huggingface_hub", "huggingface_hub.constants", "huggingface_hub.utils._validators", ERRORS_MODULE),
    provides=(ERRORS_MODULE,),
    apply=apply,
    errors=(r"cannot import name '(cached_download|HfFolder|Repository)' from 'huggingface_hub'",
            r"cannot import name 'hf_cache_home' from 'huggingface_hub\.constants'",
            r"No module named 'huggingface_hub\.utils\._errors'",
            r"(hf_hub_download|snapshot_download|hf_hub_url|model_info|list_repo_files|create_repo|upload_file|"
            r"upload_folder|whoami)\(\) got an unexpected keyword argument 'use_auth_token'"),
    unfixable=((r"has no Repository \(the git clone pushed with git-lfs went in 1\.0\)",
                "huggingface_hub >= 1.0 has no Repository (a git clone pushed with git-lfs), and zeropatch imports it "
                "but does not bring it back: push with huggingface_hub.upload_folder(repo_id=..., folder_path=...), or "
                "run without pushing (--push_to_hub off)", ("call huggingface_hub.Repository",), "1.0"),),
    looks_for=("name huggingface_hub.cached_download", "name huggingface_hub.HfFolder",
               "name huggingface_hub.Repository",
               "name huggingface_hub.constants.hf_cache_home", f"import {ERRORS_MODULE}",
               *(f"call huggingface_hub.{function} with use_auth_token" for function in (
                   "hf_hub_download", "snapshot_download", "hf_hub_url", "model_info", "list_repo_files", "create_repo",
                   "upload_file", "upload_folder", "whoami")),
               "pin diffusers<0.29"),  # diffusers 0.24-0.28.2 import cached_download (0.24-0.25 also HfFolder, ...)
)
