"""torchvision_model_urls on the installed torchvision: torchvision.models.utils is torch.hub's function again, and
every module that had model_urls in 0.14 has 0.14's keys, with the URLs torchvision 0.12 wrote out literally (a
sample of them here, one per family) and EfficientNet's re-released files; nothing is listed in dir()."""

from conftest import assert_ok, requires, run_python

TORCHVISION_0_12 = {  # module: {key: URL}, as torchvision 0.12's source wrote them
    "resnet": {"resnet50": "https://download.pytorch.org/models/resnet50-0676ba61.pth"},
    "vgg": {"vgg16": "https://download.pytorch.org/models/vgg16-397923af.pth"},
    "inception": {"inception_v3_google": "https://download.pytorch.org/models/inception_v3_google-0cc3c7bd.pth"},
    "densenet": {"densenet121": "https://download.pytorch.org/models/densenet121-a639ec97.pth"},
    "mobilenetv2": {"mobilenet_v2": "https://download.pytorch.org/models/mobilenet_v2-b0353104.pth"},
    "vision_transformer": {"vit_b_16": "https://download.pytorch.org/models/vit_b_16-c867db91.pth"},
    "detection.faster_rcnn": {
        "fasterrcnn_resnet50_fpn_coco": "https://download.pytorch.org/models/fasterrcnn_resnet50_fpn_coco-258fb6c6.pth"},
    "segmentation.deeplabv3": {
        "deeplabv3_resnet50_coco": "https://download.pytorch.org/models/deeplabv3_resnet50_coco-cd0a2569.pth"},
    "video.resnet": {"r3d_18": "https://download.pytorch.org/models/r3d_18-b3b3357e.pth"},
}


@requires("torch", "torchvision")
def test_model_urls_as_0_14_had_them():
    assert_ok(run_python(f'''
import importlib, torch.hub, zeropatch
from torchvision.models.utils import load_state_dict_from_url
from zeropatch.patches.torchvision.torchvision_model_urls import MODULES
assert load_state_dict_from_url is torch.hub.load_state_dict_from_url
keys = 0
for name, expected in MODULES.items():
    module = importlib.import_module(name)
    urls = module.model_urls
    assert isinstance(urls, dict) and set(urls) == set(expected), name
    assert ("model_urls" in vars(module)) == (name == "torchvision.models.video.resnet"), name  # torchvision's own
    keys += len(urls)
assert keys == 78, keys  # torchvision 0.14.1's 24 dictionaries
for name, sample in {TORCHVISION_0_12!r}.items():
    urls = importlib.import_module("torchvision.models." + name).model_urls
    assert all(urls[key] == url for key, url in sample.items()), (name, urls)
from torchvision.models import efficientnet
assert efficientnet.model_urls["efficientnet_b0"].endswith("efficientnet_b0_rwightman-7f5810bc.pth")  # 0.13's file
from torchvision.models import shufflenetv2
assert shufflenetv2.model_urls["shufflenetv2_x2.0"] is None  # 0.14: no weights
print("OK")
'''))
