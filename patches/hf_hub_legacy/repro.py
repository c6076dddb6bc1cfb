"""Latte's diffusers pin (0.24) on today's huggingface_hub: the VAE loaded by repo id from the local hub cache, as a
training script on an offline node does, plus the hub names legacy scripts call themselves and the errors they catch.

Without zeropatch (huggingface_hub >= 1.0):
  ImportError: cannot import name 'hf_cache_home' from 'huggingface_hub.constants'
(on 0.26-0.36: "cannot import name 'cached_download' from 'huggingface_hub'"; on 0.25: "No module named
'huggingface_hub.utils._errors'"; past the imports, diffusers 0.24 passes use_auth_token= to hf_hub_download).
With `zeropatch run -- python repro.py` diffusers imports and loads.
"""

import os
import tempfile

import torch

import diffusers
from diffusers import AutoencoderKL
from huggingface_hub import HfFolder, cached_download, hf_hub_download, hf_hub_url
from huggingface_hub.utils._errors import EntryNotFoundError  # the hub's errors by their home before 0.25

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def offline_hub_cache(model, cache, repo_id):
    """The hub cache layout a download leaves: snapshots/<commit>/<files>, refs/main -> commit."""
    repo = os.path.join(cache, "models--" + repo_id.replace("/", "--"))
    model.save_pretrained(os.path.join(repo, "snapshots", COMMIT))
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as file:
        file.write(COMMIT)


with tempfile.TemporaryDirectory() as cache:
    torch.manual_seed(0)
    vae = AutoencoderKL(block_out_channels=(8,), norm_num_groups=4, latent_channels=2, sample_size=8)
    offline_hub_cache(vae, cache, "legacy/tiny-vae")
    loaded = AutoencoderKL.from_pretrained("legacy/tiny-vae", cache_dir=cache, local_files_only=True)
    if not all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), vae.state_dict().values())):
        raise SystemExit("repro: the VAE loaded from the hub cache differs from the one saved")
    try:
        hf_hub_download("legacy/tiny-vae", "absent.json", cache_dir=cache, local_files_only=True)
    except EntryNotFoundError:  # the hub's LocalEntryNotFoundError, caught by its old base class
        pass
    else:
        raise SystemExit("repro: a file missing from the offline cache was found")
    url = hf_hub_url("legacy/tiny-vae", "config.json")
    if not callable(cached_download) or not url.endswith("/resolve/main/config.json"):
        raise SystemExit(f"repro: cached_download is {cached_download!r}; hf_hub_url gave {url!r}")
    if not (HfFolder.get_token() is None or isinstance(HfFolder.get_token(), str)):
        raise SystemExit(f"repro: HfFolder.get_token() gave {HfFolder.get_token()!r}, not a token or None")
print(f"repro: diffusers {diffusers.__version__} imported and loaded its VAE from the hub cache")
