"""PyTorch counterpart of scalebench's maskrcnn workload (workloads/maskrcnn.cpp, shared/WORKLOADS.md §6), for
scripts/pytorch_reference.py: torchvision's MaskRCNN with a ResNet-50-FPN backbone assembled as
maskrcnn_resnet50_fpn does for a pre-trained backbone (FrozenBatchNorm2d, conv1 and layer1 frozen:
trainable_backbone_layers=3), 81 classes, no weights loaded. (The builder itself, called with weights=None and
weights_backbone=None, falls back to trainable BatchNorm and all five stages trainable.) Images 800 x 1344 with the
transform's resize disabled (min 800, max 1344: the batch is already at scalebench's size), 8 synthetic instances
per image whose masks are the ellipses inscribed in their boxes, as scalebench's. torchvision's per-image RPN
settings (2000 pre-NMS per level, 2000 post-NMS) and sampler (512 RoIs, 25 % positive) are scalebench's; its mask
head takes every positive RoI (up to 128 per image) where scalebench fixes 64, and its box regression uses
smooth-L1 beta 1/9 where scalebench uses maskrcnn-benchmark's 1. Imported once torch is."""
import math

IMAGE_H, IMAGE_W = 800, 1344
CLASSES, BOXES = 81, 8
SMALLEST_BOX, LARGEST_BOX = 0.05, 0.5  # workloads/maskrcnn.cpp: log-uniform sides, fractions of the image
# scalebench's WorkloadInfo; trainable parameters (frozen conv1 + layer1: 222,400 more), and shared/WORKLOADS.md's
# forward multiply-adds per image (backbone + FPN 148.48, RPN 53.15, box head 7.33, mask head 33.9 at 64 positives).
MASKRCNN = dict(unit="images", batch=16, parameters=44_125_173, frozen=222_400, forward_gmac=243.0)
WEIGHT_DECAY, MOMENTUM = 1e-4, 0.9  # maskrcnn-benchmark R-50-FPN 1x; lr 0.02 for 16 images (--lr)


def train_flops_per_step(batch):
    """3 x the forward pass, 2 FLOPs per multiply-add (frozen stages need no weight gradients: a little less)."""
    return 3.0 * 2.0 * MASKRCNN["forward_gmac"] * 1e9 * batch


def build(torch):
    """The model as an nn.Module whose forward(images, targets) returns the sum of the five losses."""
    from torchvision.models import resnet50
    from torchvision.models.detection import MaskRCNN
    from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
    from torchvision.ops import misc as misc_nn_ops

    backbone = resnet50(weights=None, norm_layer=misc_nn_ops.FrozenBatchNorm2d)
    backbone = _resnet_fpn_extractor(backbone, 3)
    net = MaskRCNN(backbone, num_classes=CLASSES, min_size=IMAGE_H, max_size=IMAGE_W,
                   rpn_pre_nms_top_n_train=2000, rpn_post_nms_top_n_train=2000,
                   box_batch_size_per_image=512, box_positive_fraction=0.25)

    class Training(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, images, targets):
            return sum(self.net(images, targets).values())
    # scalebench's images are already normalised (uniform in [-1, 1)): no ImageNet mean and std on top.
    net.transform.image_mean, net.transform.image_std = [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]
    return Training()


def initialise_as_scalebench(torch, model, seed):
    """scalebench's start (workloads/maskrcnn.cpp, src/train/replica.cpp): trainable weights N(0, 0.02) and biases 0,
    the frozen convs (conv1, layer1) He-normal over their fan-in; FrozenBatchNorm stays scale 1, shift 0.
    torchvision's own initialisation (He over the fan-out) grows the unnormalised activations about 200-fold by
    layer4 from random weights: its first loss was 163 on H200 and the second step's 7e25 at lr 0.02."""
    generator = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.requires_grad:
                p.normal_(0.0, math.sqrt(2.0 / p[0].numel()), generator=generator)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.normal_(0.0, 0.02, generator=generator)


def trainable_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def synthesize(torch, batch, seed, device):
    """One fixed batch: images uniform in [-1, 1) as scalebench's (the transform's normalisation is off) and per
    image BOXES boxes, classes 1..80, ellipse masks."""
    generator = torch.Generator().manual_seed(seed)
    images = [(torch.rand(3, IMAGE_H, IMAGE_W, generator=generator) * 2 - 1).to(device) for _ in range(batch)]
    ys = torch.arange(IMAGE_H).view(-1, 1).float() + 0.5
    xs = torch.arange(IMAGE_W).view(1, -1).float() + 0.5
    targets = []
    for _ in range(batch):
        u = torch.rand(BOXES, 4, generator=generator)
        log_size = math.log(SMALLEST_BOX) + (math.log(LARGEST_BOX) - math.log(SMALLEST_BOX)) * u[:, :2]
        w, h = log_size[:, 0].exp() * IMAGE_W, log_size[:, 1].exp() * IMAGE_H
        x1, y1 = (IMAGE_W - w) * u[:, 2], (IMAGE_H - h) * u[:, 3]
        boxes = torch.stack([x1, y1, x1 + w, y1 + h], 1)
        masks = torch.zeros(BOXES, IMAGE_H, IMAGE_W, dtype=torch.uint8)
        for k in range(BOXES):
            rx, ry = w[k] / 2, h[k] / 2
            inside = ((xs - (x1[k] + rx)) / rx) ** 2 + ((ys - (y1[k] + ry)) / ry) ** 2 <= 1
            masks[k] = inside.to(torch.uint8)
        labels = torch.randint(1, CLASSES, (BOXES,), generator=generator)
        targets.append(dict(boxes=boxes.to(device), labels=labels.to(device), masks=masks.to(device)))
    return dict(images=images, targets=targets)


def make_optimizer(torch, parameters, lr, cuda):
    """SGD momentum 0.9, weight decay 1e-4 over the trainable parameters; fused on a GPU where this torch has it."""
    parameters = [p for p in parameters if p.requires_grad]
    settings = dict(lr=lr, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    try:
        return torch.optim.SGD(parameters, fused=cuda, **settings)
    except (TypeError, RuntimeError):
        return torch.optim.SGD(parameters, **settings)
