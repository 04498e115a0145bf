"""PyTorch counterparts of scalebench's convolutional workloads, for scripts/pytorch_reference.py: the same
architectures, input shapes, losses and SGD settings as workloads/deeplabv3.cpp, nasnet_large.cpp and
yolov3.cpp (shared/WORKLOADS.md §1-3), built from the libraries a PyTorch user would take them from:
  deeplabv3      torchvision's DeepLabV3 + ResNet-101 at output stride 16 (layer4 dilated, multi-grid rates
                 2, 4, 8), ASPP rates 6, 12, 18: scalebench's shape (torchvision's own builder is OS8)
  deeplabv3_os8  torchvision.models.segmentation.deeplabv3_resnet101 as shipped (OS8, rates 12, 24, 36, 3.5x
                 the FLOPs): the model behind shared/ANCHORS.md's 142.5 img/s
  nasnet_large   timm's nasnetalarge (Cadene's port of TF-slim, TF-"SAME" padding), 1000 classes, dropout 0.5
  yolov3         Darknet-53 and the three-scale head of darknet's yolov3.cfg written here (torchvision and timm
                 have no YOLOv3), with darknet's loss as src/cpu/yolo_loss.h states it
Images are channels_last (NHWC, as scalebench's tensors) and the models are moved to that memory format.
Imported only once torch is; the functions take the torch module so --help works without it."""
import math

# scalebench's WorkloadInfo (unit, default batch, parameter count) and shared/WORKLOADS.md's measured forward
# multiply-adds per image at the reference resolution, the FLOP count reported beside the throughput.
CNN_WORKLOADS = {
    "deeplabv3": dict(unit="images", batch=16, parameters=58_630_997, image=513, forward_gmac=71.70),
    "deeplabv3_os8": dict(unit="images", batch=16, parameters=58_630_997, image=513, forward_gmac=248.67),
    "nasnet_large": dict(unit="images", batch=64, parameters=88_753_150, image=331, forward_gmac=23.810),
    "yolov3": dict(unit="images", batch=16, parameters=61_949_149, image=608, forward_gmac=70.35),
}
# Weight decay of each reference recipe (each workload's reference_optimizer in workloads/*.cpp); SGD momentum 0.9.
WEIGHT_DECAY = {"deeplabv3": 1e-4, "deeplabv3_os8": 1e-4, "nasnet_large": 5e-5, "yolov3": 5e-4}
SEGMENTATION_CLASSES, IGNORE_LABEL, IGNORE_BORDER = 21, 255, 8  # VOC: 21 classes, a band of 255 round objects
YOLO_CLASSES, YOLO_BOXES, YOLO_IGNORE_IOU = 80, 8, 0.7
# yolov3.cfg's nine anchors in pixels of a 608 x 608 input; anchors 6-8 serve the 19 x 19 head.
YOLO_ANCHORS = [(10, 13), (16, 30), (33, 23), (30, 61), (62, 45), (59, 119), (116, 90), (156, 198), (373, 326)]


def train_flops_per_step(workload, batch):
    """3 x the forward pass (backward = data and weight gradients), 2 FLOPs per multiply-add."""
    return 3.0 * 2.0 * CNN_WORKLOADS[workload]["forward_gmac"] * 1e9 * batch


def build(torch, workload):
    """The model as an nn.Module whose forward(**data) returns the training loss."""
    nn, F = torch.nn, torch.nn.functional
    if workload in ("deeplabv3", "deeplabv3_os8"):
        net = deeplab(torch, workload == "deeplabv3_os8")

        class Segmentation(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, images, labels):  # torchvision upsamples "out" to the input size (bilinear)
                return F.cross_entropy(self.net(images)["out"], labels, ignore_index=IGNORE_LABEL)
        return Segmentation()
    if workload == "nasnet_large":
        import timm
        net = timm.create_model("nasnetalarge", pretrained=False, num_classes=1000, drop_rate=0.5)

        class Classification(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, images, labels):
                return F.cross_entropy(self.net(images), labels, label_smoothing=0.1)
        return Classification()
    if workload == "yolov3":
        return yolov3(torch)
    raise ValueError(workload)


def deeplab(torch, os8):
    from torchvision.models import resnet101
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation import deeplabv3_resnet101
    from torchvision.models.segmentation.deeplabv3 import DeepLabHead, DeepLabV3
    if os8:
        return deeplabv3_resnet101(weights=None, weights_backbone=None, num_classes=SEGMENTATION_CLASSES,
                                   aux_loss=False)
    backbone = resnet101(weights=None, replace_stride_with_dilation=[False, False, True])
    for block, rate in zip(backbone.layer4, (2, 4, 8)):  # multi-grid (1, 2, 4) x rate 2
        block.conv2.dilation, block.conv2.padding = (rate, rate), (rate, rate)
    backbone = IntermediateLayerGetter(backbone, return_layers={"layer4": "out"})
    return DeepLabV3(backbone, DeepLabHead(2048, SEGMENTATION_CLASSES, atrous_rates=(6, 12, 18)), None)


def yolov3(torch):
    nn, F = torch.nn, torch.nn.functional

    def conv(cin, cout, k, stride=1):  # darknet's [convolutional] with batch_normalize=1, leaky
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout),
                             nn.LeakyReLU(0.1, inplace=True))

    class Residual(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.f = nn.Sequential(conv(c, c // 2, 1), conv(c // 2, c, 3))

        def forward(self, x):
            return x + self.f(x)

    def stage(cin, cout, repeats):  # a stride-2 3x3 then `repeats` residual pairs
        return nn.Sequential(conv(cin, cout, 3, 2), *[Residual(cout) for _ in range(repeats)])

    def neck(cin, c):  # five alternating 1x1 c / 3x3 2c convolutions; the fifth output feeds the branch
        return nn.Sequential(conv(cin, c, 1), conv(c, 2 * c, 3), conv(2 * c, c, 1), conv(c, 2 * c, 3),
                             conv(2 * c, c, 1))

    def output(c):  # 3x3 2c then the linear 1x1 to 3 anchors x (4 box + 1 objectness + 80 classes)
        return nn.Sequential(conv(c, 2 * c, 3), nn.Conv2d(2 * c, 3 * (5 + YOLO_CLASSES), 1, bias=True))

    class YoloV3(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = conv(3, 32, 3)
            self.s1, self.s2, self.s3 = stage(32, 64, 1), stage(64, 128, 2), stage(128, 256, 8)  # s3: 76 x 76
            self.s4, self.s5 = stage(256, 512, 8), stage(512, 1024, 4)  # 38 x 38, 19 x 19
            self.neck0, self.out0 = neck(1024, 512), output(512)
            self.lateral1, self.neck1, self.out1 = conv(512, 256, 1), neck(256 + 512, 256), output(256)
            self.lateral2, self.neck2, self.out2 = conv(256, 128, 1), neck(128 + 256, 128), output(128)

        def forward(self, images, boxes, targets):
            route76 = self.s3(self.s2(self.s1(self.stem(images))))
            route38 = self.s4(route76)
            x = self.neck0(self.s5(route38))
            head0 = self.out0(x)
            x = self.neck1(torch.cat([F.interpolate(self.lateral1(x), scale_factor=2.0), route38], 1))
            head1 = self.out1(x)
            x = self.neck2(torch.cat([F.interpolate(self.lateral2(x), scale_factor=2.0), route76], 1))
            head2 = self.out2(x)
            return yolo_loss(torch, (head0, head1, head2), boxes, targets)
    return YoloV3()


def yolo_loss(torch, heads, boxes, targets):
    """src/cpu/yolo_loss.h in tensors: objectness BCE over every prediction (ignoring unassigned ones whose box
    overlaps a ground-truth box by IoU > 0.7), darknet's scaled MSE on tx, ty, tw, th and multi-label class BCE
    at the assigned slots; summed, divided by the batch. In fp32 (exp(tw) of a bf16 logit overflows early)."""
    F = torch.nn.functional
    n = boxes.shape[0]
    total = 0.0
    for s, head in enumerate(heads):
        g = head.shape[-1]
        p = head.float().view(n, 3, 5 + YOLO_CLASSES, g, g).permute(0, 1, 3, 4, 2)  # N, 3, gy, gx, 85
        anchors = torch.tensor(YOLO_ANCHORS[6 - 3 * s: 9 - 3 * s], device=p.device) / 608.0
        cells = torch.arange(g, device=p.device, dtype=torch.float32)
        sx, sy = torch.sigmoid(p[..., 0]), torch.sigmoid(p[..., 1])
        with torch.no_grad():  # the ignore mask is not differentiated
            bx, by = (cells.view(1, 1, 1, g) + sx) / g, (cells.view(1, 1, g, 1) + sy) / g
            bw = anchors[:, 0].view(1, 3, 1, 1) * torch.exp(p[..., 2])
            bh = anchors[:, 1].view(1, 3, 1, 1) * torch.exp(p[..., 3])
            t = boxes.view(n, 1, 1, 1, YOLO_BOXES, 5)
            overlap_w = (torch.minimum(bx.unsqueeze(-1) + bw.unsqueeze(-1) / 2, t[..., 1] + t[..., 3] / 2) -
                         torch.maximum(bx.unsqueeze(-1) - bw.unsqueeze(-1) / 2, t[..., 1] - t[..., 3] / 2)).clamp(min=0)
            overlap_h = (torch.minimum(by.unsqueeze(-1) + bh.unsqueeze(-1) / 2, t[..., 2] + t[..., 4] / 2) -
                         torch.maximum(by.unsqueeze(-1) - bh.unsqueeze(-1) / 2, t[..., 2] - t[..., 4] / 2)).clamp(min=0)
            inter = overlap_w * overlap_h
            iou = inter / ((bw * bh).unsqueeze(-1) + t[..., 3] * t[..., 4] - inter)
            ignore = iou.amax(-1) > YOLO_IGNORE_IOU
        index, wanted = targets[s]  # (image, anchor, gy, gx) of assigned slots; (tx, ty, tw, th, class, scale)
        positive = torch.zeros_like(ignore)
        positive[index[:, 0], index[:, 1], index[:, 2], index[:, 3]] = True
        objectness = F.binary_cross_entropy_with_logits(p[..., 4], positive.float(), reduction="none")
        total = total + (objectness * (positive | ~ignore)).sum()
        slot = p[index[:, 0], index[:, 1], index[:, 2], index[:, 3]]  # (P, 85)
        box = ((torch.sigmoid(slot[:, 0]) - wanted[:, 0]) ** 2 + (torch.sigmoid(slot[:, 1]) - wanted[:, 1]) ** 2 +
               (slot[:, 2] - wanted[:, 2]) ** 2 + (slot[:, 3] - wanted[:, 3]) ** 2)
        total = total + (wanted[:, 5] * box).sum()
        classes = F.one_hot(wanted[:, 4].long(), YOLO_CLASSES).float()
        total = total + F.binary_cross_entropy_with_logits(slot[:, 5:], classes, reduction="sum")
    return total / n


def yolo_targets(torch, boxes, image):
    """Each box to the anchor of best width/height IoU at its cell of that anchor's head (a later box
    overwrites an earlier one in the same slot, as darknet): per head, the slots and their targets."""
    slots = [dict() for _ in range(3)]
    for b, rows in enumerate(boxes.tolist()):
        for cls, cx, cy, w, h in rows:
            ious = []
            for aw, ah in YOLO_ANCHORS:
                aw, ah = aw / 608.0, ah / 608.0
                inter = min(w, aw) * min(h, ah)
                ious.append(inter / (w * h + aw * ah - inter))
            best = max(range(9), key=lambda k: (ious[k], -k))
            head, anchor = 2 - best // 3, best % 3
            g = math.ceil(image / (32 >> head))
            gx, gy = min(int(cx * g), g - 1), min(int(cy * g), g - 1)
            aw, ah = YOLO_ANCHORS[best][0] / 608.0, YOLO_ANCHORS[best][1] / 608.0
            slots[head][(b, anchor, gy, gx)] = [cx * g - gx, cy * g - gy, math.log(w / aw), math.log(h / ah), cls,
                                                2.0 - w * h]
    return [(torch.tensor(list(s.keys()), dtype=torch.long).view(-1, 4),
             torch.tensor(list(s.values()), dtype=torch.float32).view(-1, 6)) for s in slots]


def synthesize(torch, workload, batch, seed, device):
    """One fixed batch: N(0, 1) images (normalised pixels) in channels_last, and the workload's labels."""
    info = CNN_WORKLOADS[workload]
    generator = torch.Generator().manual_seed(seed)
    h = w = info["image"]
    images = torch.randn(batch, 3, h, w, generator=generator).contiguous(memory_format=torch.channels_last)
    if workload.startswith("deeplabv3"):
        # Square blobs of a class on a background, then a fixed-width band of the ignore label at the image
        # border: the same ignored count in every image, as scalebench's synthesize().
        labels = torch.zeros(batch, h, w, dtype=torch.long)
        for b in range(batch):
            for _ in range(4):
                cls = int(torch.randint(1, SEGMENTATION_CLASSES, (1,), generator=generator))
                y, x = (int(v) for v in torch.randint(0, h - 64, (2,), generator=generator))
                labels[b, y:y + 128, x:x + 128] = cls
        labels[:, :IGNORE_BORDER, :] = labels[:, -IGNORE_BORDER:, :] = IGNORE_LABEL
        labels[:, :, :IGNORE_BORDER] = labels[:, :, -IGNORE_BORDER:] = IGNORE_LABEL
        data = dict(images=images, labels=labels)
    elif workload == "nasnet_large":
        data = dict(images=images, labels=torch.randint(0, 1000, (batch,), generator=generator))
    else:
        u = torch.rand(batch, YOLO_BOXES, 4, generator=generator)
        cls = torch.randint(0, YOLO_CLASSES, (batch, YOLO_BOXES, 1), generator=generator).float()
        size = 0.02 + 0.48 * u[..., 2:]  # widths and heights 2-50% of the image
        centre = size / 2 + (1 - size) * u[..., :2]  # the box inside the image
        boxes = torch.cat([cls, centre, size], -1)
        targets = yolo_targets(torch, boxes, h)
        return dict(images=images.to(device), boxes=boxes.to(device),
                    targets=[(i.to(device), t.to(device)) for i, t in targets])
    return {k: v.to(device) for k, v in data.items()}


def make_optimizer(torch, workload, parameters, lr, cuda):
    """SGD momentum 0.9 with the recipe's weight decay; fused on a GPU where this torch has it."""
    settings = dict(lr=lr, momentum=0.9, weight_decay=WEIGHT_DECAY[workload])
    parameters = list(parameters)  # a generator would be spent by the first attempt
    try:
        return torch.optim.SGD(parameters, fused=cuda, **settings)
    except (TypeError, RuntimeError):
        return torch.optim.SGD(parameters, **settings)
