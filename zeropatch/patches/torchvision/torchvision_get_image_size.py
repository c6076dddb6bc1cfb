"""torchvision_get_image_size: ``torchvision.transforms.functional._get_image_size`` (renamed in 0.11) is back.

Breaks: torchvision 0.8-0.10's transforms read an image's ``[width, height]`` with the private
``F._get_image_size``, and code that subclassed them copied the call: MAE's ``util/crop.py`` (its linear-probing
``RandomResizedCrop``, copied into many ViT repositories). torchvision 0.11 made the function public as
``get_image_size`` and dropped the private name: "AttributeError: module 'torchvision.transforms.functional' has no
attribute '_get_image_size'".

Changes: where ``torchvision.transforms.functional`` lacks ``_get_image_size``, the name is put back as its own
``get_image_size`` (the same function: ``[width, height]`` of a PIL image or a tensor, as 0.10 returned); not listed
in ``dir()``. Where the private name is there, nothing changes.
"""

from zeropatch._core import NotNeeded, Patch, Skip, lacks


def apply(patcher, functional):
    if not lacks(functional, "_get_image_size"):
        raise NotNeeded("torchvision.transforms.functional still has _get_image_size (torchvision < 0.11)")
    if not callable(getattr(functional, "get_image_size", None)):
        raise Skip("torchvision.transforms.functional has no get_image_size to stand for it")
    patcher.put_back(functional, {"_get_image_size": functional.get_image_size})
    return "torchvision.transforms.functional._get_image_size is get_image_size again"


PATCH = Patch(
    "torchvision_get_image_size",
    since="0.4.0",
    summary="torchvision.transforms.functional._get_image_size (renamed get_image_size in 0.11) back, for MAE's "
    "crop and the transforms copied from torchvision 0.10",
    package="torchvision",
    affected="0.25.0-0.29.2 (swept)",
    targets=("torchvision.transforms.functional",),
    apply=apply,
    errors=(r"module 'torchvision\.transforms\.functional' has no attribute '_get_image_size'",),
    looks_for=("name torchvision.transforms.functional._get_image_size",),
)
