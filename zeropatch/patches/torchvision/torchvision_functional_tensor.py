"""torchvision_functional_tensor: ``torchvision.transforms.functional_tensor``, removed in 0.17, is back.

Breaks: torchvision 0.15 renamed the module to ``torchvision.transforms._functional_tensor`` and kept a deprecated
shim under the old name; 0.17 removed the shim. pytorchvideo (``import torchvision.transforms.functional_tensor
as F_t`` in its augmentations, whose last release predates the change) and basicsr / Real-ESRGAN / GFPGAN
(``from torchvision.transforms.functional_tensor import rgb_to_grayscale``) then die at import: "No module named
'torchvision.transforms.functional_tensor'".

Changes: when the old module is imported and torchvision has none, zeropatch provides it as 0.15-0.16's shim was:
a module whose names are ``_functional_tensor``'s own functions (the very same objects, looked up live), public
ones in ``__all__`` for ``import *``. Where torchvision still has the module (< 0.17), it is left alone.
"""

from zeropatch._core import NotNeeded, Patch, Skip, is_provided, provide_as

RENAMED = "torchvision.transforms._functional_tensor"


def apply(patcher, old_module):
    if not is_provided(old_module):
        raise NotNeeded("torchvision still has transforms.functional_tensor (torchvision < 0.17)")
    import importlib

    try:
        renamed = importlib.import_module(RENAMED)
    except ImportError as error:
        raise Skip(f"{RENAMED} does not import ({error})")

    provide_as(patcher, old_module, renamed, f"torchvision < 0.17's name for {RENAMED} (provided by zeropatch)")
    return f"torchvision.transforms.functional_tensor provided over {RENAMED}"


PATCH = Patch(
    "torchvision_functional_tensor",
    since="0.3.0",
    summary="torchvision.transforms.functional_tensor (removed in 0.17) back, over _functional_tensor "
    "(pytorchvideo, basicsr)",
    package="torchvision",
    affected="0.21.0-0.29.2 (swept; the module went in an earlier release)",
    targets=("torchvision.transforms.functional_tensor",),
    provides=True,
    apply=apply,
    errors=(r"No module named 'torchvision\.transforms\.functional_tensor'",),
    looks_for=("import torchvision.transforms.functional_tensor",),
)
