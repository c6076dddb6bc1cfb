"""torchvision_model_urls: ``torchvision.models.utils`` (gone in 0.11) and the models' ``model_urls`` (gone in 0.15,
but for the video ResNets') are back.

Breaks: backbones of 2019-2022 (fairseq and detection forks, perceptual losses, custom ResNets) load their pretrained
weights the old way: ``from torchvision.models.utils import load_state_dict_from_url`` ("No module named
'torchvision.models.utils'"), then ``load_state_dict_from_url(model_urls["resnet50"])`` with ``from
torchvision.models.resnet import model_urls`` ("cannot import name 'model_urls' from 'torchvision.models.resnet'").
0.13 made the weight enums (``ResNet50_Weights.IMAGENET1K_V1``) the way to name weights and kept ``model_urls`` as
deprecated dictionaries built from them; 0.15 removed them, but for ``torchvision.models.video.resnet``'s.

Changes, only where the installed release lacks them: ``torchvision.models.utils`` is provided with
``load_state_dict_from_url``, which was torch.hub's own function there (the same object now); ``model_urls`` is
back in the 24 modules that had it in 0.14, a plain dict with 0.14's keys, each URL read from today's weight enum
0.14 read it from (so the files are the ones today's model classes load). 0.10-0.12's dictionaries had the same
URLs, except EfficientNet's eight: 0.13 re-released those weights for its classes, and the dictionary gives the new
files (0.9 and earlier named older files for 13 models, which 0.10 replaced). Names put back are not listed in the
modules' ``dir()``.
"""

from zeropatch._core import NotNeeded, Patch, Skip, is_provided, lacks

UTILS = "torchvision.models.utils"
IMAGENET = "IMAGENET1K_V1"
COCO = "COCO_V1"
# module -> {0.14's key: its weight enum (IMAGENET1K_V1 unless "Enum.MEMBER"), or None where 0.14 had no weights}
MODEL_URLS = {
    "alexnet": {"alexnet": "AlexNet_Weights"},
    "densenet": {f"densenet{depth}": f"DenseNet{depth}_Weights" for depth in (121, 169, 201, 161)},
    "efficientnet": {f"efficientnet_b{size}": f"EfficientNet_B{size}_Weights" for size in range(8)},
    "googlenet": {"googlenet": "GoogLeNet_Weights"},
    "inception": {"inception_v3_google": "Inception_V3_Weights"},
    "mobilenetv2": {"mobilenet_v2": "MobileNet_V2_Weights"},
    "mobilenetv3": {"mobilenet_v3_large": "MobileNet_V3_Large_Weights",
                    "mobilenet_v3_small": "MobileNet_V3_Small_Weights"},
    "regnet": {f"regnet_{kind}_{size}": f"RegNet_{kind.upper()}_{size.upper()}_Weights" for kind in ("y", "x")
               for size in ("400mf", "800mf", "1_6gf", "3_2gf", "8gf", "16gf", "32gf")},
    "resnet": {"resnet18": "ResNet18_Weights", "resnet34": "ResNet34_Weights", "resnet50": "ResNet50_Weights",
               "resnet101": "ResNet101_Weights", "resnet152": "ResNet152_Weights",
               "resnext50_32x4d": "ResNeXt50_32X4D_Weights", "resnext101_32x8d": "ResNeXt101_32X8D_Weights",
               "wide_resnet50_2": "Wide_ResNet50_2_Weights", "wide_resnet101_2": "Wide_ResNet101_2_Weights"},
    "shufflenetv2": {"shufflenetv2_x0.5": "ShuffleNet_V2_X0_5_Weights",
                     "shufflenetv2_x1.0": "ShuffleNet_V2_X1_0_Weights",
                     "shufflenetv2_x1.5": None, "shufflenetv2_x2.0": None},  # 0.14: no weights for these two
    "squeezenet": {"squeezenet1_0": "SqueezeNet1_0_Weights", "squeezenet1_1": "SqueezeNet1_1_Weights"},
    "vgg": {name: f"{name.upper()}_Weights"
            for name in ("vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn")},
    "vision_transformer": {f"vit_{size}_{patch}": f"ViT_{size.upper()}_{patch}_Weights"
                           for size, patch in (("b", 16), ("b", 32), ("l", 16), ("l", 32))},
    "detection.faster_rcnn": {"fasterrcnn_resnet50_fpn_coco": f"FasterRCNN_ResNet50_FPN_Weights.{COCO}",
                              "fasterrcnn_mobilenet_v3_large_320_fpn_coco":
                                  f"FasterRCNN_MobileNet_V3_Large_320_FPN_Weights.{COCO}",
                              "fasterrcnn_mobilenet_v3_large_fpn_coco":
                                  f"FasterRCNN_MobileNet_V3_Large_FPN_Weights.{COCO}"},
    "detection.fcos": {"fcos_resnet50_fpn_coco": f"FCOS_ResNet50_FPN_Weights.{COCO}"},
    "detection.keypoint_rcnn": {"keypointrcnn_resnet50_fpn_coco_legacy":
                                    "KeypointRCNN_ResNet50_FPN_Weights.COCO_LEGACY",
                                "keypointrcnn_resnet50_fpn_coco": f"KeypointRCNN_ResNet50_FPN_Weights.{COCO}"},
    "detection.mask_rcnn": {"maskrcnn_resnet50_fpn_coco": f"MaskRCNN_ResNet50_FPN_Weights.{COCO}"},
    "detection.retinanet": {"retinanet_resnet50_fpn_coco": f"RetinaNet_ResNet50_FPN_Weights.{COCO}"},
    "detection.ssd": {"ssd300_vgg16_coco": f"SSD300_VGG16_Weights.{COCO}"},
    "detection.ssdlite": {"ssdlite320_mobilenet_v3_large_coco": f"SSDLite320_MobileNet_V3_Large_Weights.{COCO}"},
    "segmentation.deeplabv3": {f"deeplabv3_{backbone}_coco": f"DeepLabV3_{name}_Weights.COCO_WITH_VOC_LABELS_V1"
                               for backbone, name in (("resnet50", "ResNet50"), ("resnet101", "ResNet101"),
                                                      ("mobilenet_v3_large", "MobileNet_V3_Large"))},
    "segmentation.fcn": {f"fcn_{backbone}_coco": f"FCN_{name}_Weights.COCO_WITH_VOC_LABELS_V1"
                         for backbone, name in (("resnet50", "ResNet50"), ("resnet101", "ResNet101"))},
    "segmentation.lraspp": {"lraspp_mobilenet_v3_large_coco":
                                "LRASPP_MobileNet_V3_Large_Weights.COCO_WITH_VOC_LABELS_V1"},
    "video.resnet": {name: f"{enum}_Weights.KINETICS400_V1"
                     for name, enum in (("r3d_18", "R3D_18"), ("mc3_18", "MC3_18"), ("r2plus1d_18", "R2Plus1D_18"))},
}
MODULES = {f"torchvision.models.{name}": urls for name, urls in MODEL_URLS.items()}


def _url(module, weights):
    enum_name, _, member = weights.partition(".")
    return getattr(getattr(module, enum_name), member or IMAGENET).url


def apply(patcher, module):
    if module.__name__ == UTILS:
        if not is_provided(module):
            raise NotNeeded("torchvision still has torchvision.models.utils (torchvision < 0.11)")
        from torch.hub import load_state_dict_from_url

        patcher.set(module, "load_state_dict_from_url", load_state_dict_from_url)
        patcher.set(module, "__doc__", "torchvision < 0.11's torchvision.models.utils (provided by zeropatch)")
        return "torchvision.models.utils provided (torch.hub's load_state_dict_from_url)"
    if not lacks(module, "model_urls"):
        raise NotNeeded(f"{module.__name__} still has model_urls (torchvision < 0.15)")
    try:
        urls = {key: weights and _url(module, weights) for key, weights in MODULES[module.__name__].items()}
    except AttributeError as error:
        raise Skip(f"{module.__name__}: a weight enum 0.14 read its URLs from is missing ({error})")
    patcher.put_back(module, {"model_urls": urls})
    return f"model_urls back in {module.__name__} ({len(urls)} URLs, from its weight enums)"


PATCH = Patch(
    "torchvision_model_urls",
    since="0.4.0",
    summary="torchvision.models.utils (load_state_dict_from_url) and the models' model_urls back, from today's "
    "weight enums",
    package="torchvision",
    affected="0.25.0-0.29.2 (swept; the module and the dictionaries went in earlier releases)",
    targets=(UTILS, *MODULES),
    provides=(UTILS,),
    apply=apply,
    errors=(r"No module named 'torchvision\.models\.utils'",
            r"cannot import name 'model_urls' from 'torchvision\.models\.",
            r"module 'torchvision\.models\.[\w.]+' has no attribute 'model_urls'"),
    looks_for=(f"import {UTILS}", *(f"name {module}.model_urls" for module in MODULES)),
)
