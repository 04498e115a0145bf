"""PyTorch counterpart of scalebench's pix2pixhd (workloads/pix2pixhd.cpp), used by pytorch_reference.py: the
modules of NVIDIA/pix2pixHD models/networks.py written out here (LocalEnhancer with one enhancer, ResnetBlock,
3-scale NLayerDiscriminator with getIntermFeat, VGG19 features[:30] built locally with frozen random weights: no
download), the losses of models/pix2pixHD_model.py (LSGAN, feature matching x 10, VGG x 10) and the step of
train.py: loss_G.backward(); optimizer_G.step(); loss_D.backward(); optimizer_D.step(), two Adam(2e-4, (0.5,
0.999)). Shapes, parameter names and counts are scalebench's. Under DDP, G and D are wrapped separately (two
reductions); D's loss passes over (label, fake.detach()) and (label, real) run as one forward over both halves
(instance norm is per sample, so the numbers are those of two passes), and the G-loss pass reads D's weights as
fresh leaves (p.detach().requires_grad_()) through torch.func.functional_call: their gradients are computed and
dropped, as the reference's loss_G.backward() fills D's .grad before optimizer_D.zero_grad(), and DDP's D sees
one forward and one backward per step. Imports nothing at module level; torch is passed in."""

PARAMETERS = 191_261_862  # G 182,857,059 + D 8,404,803 (shared/WORKLOADS.md §4)
FROZEN_PARAMETERS = 12_944_960  # VGG19 features[:30]
DISCRIMINATORS, D_LAYERS = 3, 3
FEATURE_WEIGHT = 10.0  # --lambda_feat
VGG_WEIGHTS = (1.0 / 32, 1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0)
VGG_CONVS = (2, 2, 4, 4, 1)  # per stage of features[:30]
ADAM = dict(lr=2e-4, betas=(0.5, 0.999), eps=1e-8)
# workloads/pix2pixhd.cpp shape_for.
SHAPES = {"full": dict(height=1024, width=2048, label=36, ngf=32, down=4, global_blocks=9, local_blocks=3, ndf=64,
                       vgg=(64, 128, 256, 512, 512)),
          "tiny": dict(height=32, width=64, label=4, ngf=4, down=2, global_blocks=1, local_blocks=1, ndf=4,
                       vgg=(4, 8, 8, 16, 16))}


def conv_layers(s, batch):
    """Every convolution of one training step as (multiply-adds, input gradient computed, weight gradient
    computed, trainable parameters or 0 for repeated passes and frozen weights), in scalebench's accounting:
    transposed convs count input elements x C_out x k^2; nothing is computed for the label's and the real
    image's own gradients, the VGG pass over the real image has no backward pass and VGG no weight gradient."""
    layers = []
    h, w = s["height"], s["width"]

    def conv(c_in, c_out, k, stride, pad, hh, ww, dx, dw=True, count=True):
        ho, wo = (hh + 2 * pad - k) // stride + 1, (ww + 2 * pad - k) // stride + 1
        layers.append((batch * ho * wo * c_out * k * k * c_in, dx, dw, (c_out * k * k * c_in + c_out) if count else 0))
        return ho, wo

    def transposed(c_in, c_out, hh, ww):  # k 3, stride 2, padding 1, output_padding 1
        layers.append((batch * hh * ww * c_in * c_out * 9, True, True, c_in * c_out * 9 + c_out))
        return 2 * hh, 2 * ww

    # G: the global generator on the half-resolution label, then the local enhancer.
    hh, ww, width = (h + 1) // 2, (w + 1) // 2, 2 * s["ngf"]
    conv(s["label"], width, 7, 1, 3, hh, ww, dx=False)
    for _ in range(s["down"]):
        hh, ww = conv(width, 2 * width, 3, 2, 1, hh, ww, dx=True)
        width *= 2
    for _ in range(2 * s["global_blocks"]):
        conv(width, width, 3, 1, 1, hh, ww, dx=True)
    for _ in range(s["down"]):
        hh, ww = transposed(width, width // 2, hh, ww)
        width //= 2
    conv(s["label"], s["ngf"], 7, 1, 3, h, w, dx=False)
    hh, ww = conv(s["ngf"], 2 * s["ngf"], 3, 2, 1, h, w, dx=True)
    for _ in range(2 * s["local_blocks"]):
        conv(2 * s["ngf"], 2 * s["ngf"], 3, 1, 1, hh, ww, dx=True)
    transposed(2 * s["ngf"], s["ngf"], hh, ww)
    conv(s["ngf"], 3, 7, 1, 3, h, w, dx=True)
    # D: the detached-fake and real passes (weight gradients; no input gradient into the data), the fake pass
    # (input gradients; weight gradients computed and dropped). Parameters counted once.
    for fake_pass, count in ((False, True), (False, False), (True, False)):
        hh, ww = h, w
        for _ in range(DISCRIMINATORS):
            c_in, c_out, sh, sw = s["label"] + 3, s["ndf"], hh, ww
            for j, stride in enumerate((2, 2, 2, 1, 1)):
                c_out = 1 if j == D_LAYERS + 1 else c_out
                sh, sw = conv(c_in, c_out, 4, stride, 2, sh, sw, dx=fake_pass or j > 0, count=count)
                c_in, c_out = c_out, min(2 * c_out, 8 * s["ndf"])
            hh, ww = (hh + 1) // 2, (ww + 1) // 2  # AvgPool2d(3, 2, 1)
    # VGG19[:30] over the real image (forward only) and the fake one (input gradients only).
    for fake_pass in (False, True):
        hh, ww, c_in = h, w, 3
        for stage, convs in enumerate(VGG_CONVS):
            if stage:
                hh, ww = hh // 2, ww // 2
            for _ in range(convs):
                conv(c_in, s["vgg"][stage], 3, 1, 1, hh, ww, dx=fake_pass, dw=False, count=False)
                c_in = s["vgg"][stage]
    return layers


def expected_parameters(s):
    return sum(layer[3] for layer in conv_layers(s, 1))


def train_matmul_flops(s, batch):
    """scalebench's matmul_flops of the training graph: 2 FLOPs per multiply-add of every forward pass, input-
    gradient pass and weight-gradient pass that the step computes (conv_layers)."""
    return 2.0 * sum(macs * (1 + dx + dw) for macs, dx, dw, _ in conv_layers(s, batch))


def build_model_class(torch):
    nn, F = torch.nn, torch.nn.functional

    def norm_relu(c):
        return [nn.InstanceNorm2d(c, affine=False), nn.ReLU(True)]

    class ResnetBlock(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.conv_block = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3), *norm_relu(dim),
                                            nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3), nn.InstanceNorm2d(dim))

        def forward(self, x):
            return x + self.conv_block(x)

    class LocalEnhancer(nn.Module):
        """networks.LocalEnhancer(n_local_enhancers=1): model (GlobalGenerator without its last three layers),
        model1_1 (downsampling at full resolution), model1_2 (ResnetBlocks, upsampling, output)."""

        def __init__(self, s):
            super().__init__()
            width, ngf = 2 * s["ngf"], s["ngf"]
            g = [nn.ReflectionPad2d(3), nn.Conv2d(s["label"], width, 7), *norm_relu(width)]
            for _ in range(s["down"]):
                g += [nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), *norm_relu(2 * width)]
                width *= 2
            g += [ResnetBlock(width) for _ in range(s["global_blocks"])]
            for _ in range(s["down"]):
                g += [nn.ConvTranspose2d(width, width // 2, 3, stride=2, padding=1, output_padding=1),
                      *norm_relu(width // 2)]
                width //= 2
            self.model = nn.Sequential(*g)
            self.model1_1 = nn.Sequential(nn.ReflectionPad2d(3), nn.Conv2d(s["label"], ngf, 7), *norm_relu(ngf),
                                          nn.Conv2d(ngf, 2 * ngf, 3, stride=2, padding=1), *norm_relu(2 * ngf))
            self.model1_2 = nn.Sequential(
                *[ResnetBlock(2 * ngf) for _ in range(s["local_blocks"])],
                nn.ConvTranspose2d(2 * ngf, ngf, 3, stride=2, padding=1, output_padding=1), *norm_relu(ngf),
                nn.ReflectionPad2d(3), nn.Conv2d(ngf, 3, 7), nn.Tanh())
            self.downsample = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)

        def forward(self, label):
            return self.model1_2(self.model1_1(label) + self.model(self.downsample(label)))

    class MultiscaleDiscriminator(nn.Module):
        """networks.MultiscaleDiscriminator(num_D 3, n_layers 3, getIntermFeat): scale{num_D - 1 - i} sees the
        i-th downsampling of the input; every layer's output is returned."""

        def __init__(self, s):
            super().__init__()
            for i in range(DISCRIMINATORS):
                c_in, c_out = s["label"] + 3, s["ndf"]
                for j, stride in enumerate((2, 2, 2, 1, 1)):
                    if j == D_LAYERS + 1:
                        layer = [nn.Conv2d(c_in, 1, 4, stride=stride, padding=2)]
                    else:
                        layer = [nn.Conv2d(c_in, c_out, 4, stride=stride, padding=2)]
                        layer += ([nn.InstanceNorm2d(c_out)] if j else []) + [nn.LeakyReLU(0.2, True)]
                    setattr(self, f"scale{i}_layer{j}", nn.Sequential(*layer))
                    c_in, c_out = c_out, min(2 * c_out, 8 * s["ndf"])
            self.downsample = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)

        def forward(self, x):
            result = []
            for i in range(DISCRIMINATORS):
                outputs = [x]
                for j in range(D_LAYERS + 2):
                    outputs.append(getattr(self, f"scale{DISCRIMINATORS - 1 - i}_layer{j}")(outputs[-1]))
                result.append(outputs[1:])
                if i != DISCRIMINATORS - 1:
                    x = self.downsample(x)
            return result

    class FrozenVgg19(nn.Module):
        """torchvision vgg19().features[:30] with random He-normal weights held as buffers (frozen, not
        parameters: no gradient, not in the optimizers or the parameter count); returns relu1_1 .. relu5_1."""

        def __init__(self, s):
            super().__init__()
            c_in, index = 3, 0
            self.layers = []
            for stage, convs in enumerate(VGG_CONVS):
                if stage:
                    index += 1
                    self.layers.append(None)  # max pool
                for k in range(convs):
                    c_out = s["vgg"][stage]
                    weight = torch.randn(c_out, c_in, 3, 3) * (2.0 / (9 * c_in)) ** 0.5
                    self.register_buffer(f"w{index}", weight)
                    self.register_buffer(f"b{index}", torch.randn(c_out) * 0.01)
                    self.layers.append((index, k == 0))
                    c_in, index = c_out, index + 2

        def forward(self, x):
            features = []
            for layer in self.layers:
                if layer is None:
                    x = F.max_pool2d(x, 2)
                    continue
                index, first_of_stage = layer
                x = F.relu(F.conv2d(x, getattr(self, f"w{index}"), getattr(self, f"b{index}"), padding=1))
                if first_of_stage:
                    features.append(x)
            return features

    class Pix2PixHD(nn.Module):
        """netG, netD and the frozen VGG; forward returns (loss_G, loss_D) as pix2pixHD_model.forward sums them."""

        def __init__(self, s):
            super().__init__()
            self.netG, self.netD, self.vgg = LocalEnhancer(s), MultiscaleDiscriminator(s), FrozenVgg19(s)

        def discriminator_module(self):
            return getattr(self.netD, "module", self.netD)  # under DDP, the wrapped module

        def forward(self, label, real):
            mse, l1 = F.mse_loss, F.l1_loss
            fake = self.netG(label)
            batch = label.shape[0]
            # D(label, fake.detach()) and D(label, real) as one pass over both halves (through DDP when wrapped).
            both = self.netD(torch.cat([torch.cat([label, fake.detach()], 1), torch.cat([label, real], 1)], 0))
            pred_fake_pool = [[x[:batch] for x in scale] for scale in both]
            pred_real = [[x[batch:] for x in scale] for scale in both]
            d = self.discriminator_module()
            leaves = {name: p.detach().requires_grad_() for name, p in d.named_parameters()}
            pred_fake = torch.func.functional_call(d, leaves, (torch.cat([label, fake], 1),))
            loss_d_fake = sum(mse(scale[-1], torch.zeros_like(scale[-1])) for scale in pred_fake_pool)
            loss_d_real = sum(mse(scale[-1], torch.ones_like(scale[-1])) for scale in pred_real)
            loss_g_gan = sum(mse(scale[-1], torch.ones_like(scale[-1])) for scale in pred_fake)
            feature_weight = FEATURE_WEIGHT * (4.0 / (D_LAYERS + 1)) / DISCRIMINATORS
            loss_g_feat = sum(feature_weight * l1(f, r.detach())
                              for fs, rs in zip(pred_fake, pred_real) for f, r in zip(fs[:-1], rs[:-1]))
            with torch.no_grad():
                vgg_real = self.vgg(real)
            loss_g_vgg = sum(FEATURE_WEIGHT * w * l1(f, r) for w, f, r in zip(VGG_WEIGHTS, self.vgg(fake), vgg_real))
            return loss_g_gan + loss_g_feat + loss_g_vgg, (loss_d_fake + loss_d_real) * 0.5

    return Pix2PixHD


def make_optimizers(torch, model, lr, cuda):
    """optimizer_G and optimizer_D of pix2pixHD_model.py at learning rate lr (the reference's: ADAM["lr"]), fused
    on CUDA."""
    settings = dict(ADAM, lr=lr)
    return (torch.optim.Adam(model.netG.parameters(), fused=cuda, **settings),
            torch.optim.Adam(model.netD.parameters(), fused=cuda, **settings))


def make_step(forward, optimizers, data, autocast):
    """train.py's step: both losses from one forward, then G's backward and update, then D's."""
    optimizer_g, optimizer_d = optimizers

    def step():
        optimizer_g.zero_grad(set_to_none=True)
        optimizer_d.zero_grad(set_to_none=True)
        with autocast():
            loss_g, loss_d = forward(**data)
        loss_g.backward()
        optimizer_g.step()
        loss_d.backward()
        optimizer_d.step()
        return (loss_g + loss_d).detach()
    return step


def synthesize(torch, s, batch, seed, device):
    """As workloads/pix2pixhd.cpp synthesize(): per pair a label map of 12 random rectangles of random classes over
    a background class, one-hot plus the instance-boundary channel, and an image of one colour per class plus
    uniform noise in [-1, 1]; NCHW in channels_last memory."""
    generator = torch.Generator().manual_seed(seed)
    h, w, classes = s["height"], s["width"], s["label"] - 1
    labels, images = [], []
    for _ in range(batch):
        draw = lambda high: int(torch.randint(high, (1,), generator=generator))
        class_map = torch.full((h, w), draw(classes), dtype=torch.long)
        for _ in range(12):
            top, bottom = sorted((draw(h), draw(h)))
            left, right = sorted((draw(w), draw(w)))
            class_map[top:bottom + 1, left:right + 1] = draw(classes)
        edges = torch.zeros(h, w, dtype=torch.bool)
        edges[:, 1:] |= class_map[:, 1:] != class_map[:, :-1]
        edges[:, :-1] |= class_map[:, 1:] != class_map[:, :-1]
        edges[1:, :] |= class_map[1:, :] != class_map[:-1, :]
        edges[:-1, :] |= class_map[1:, :] != class_map[:-1, :]
        one_hot = torch.nn.functional.one_hot(class_map, classes).permute(2, 0, 1).float()
        labels.append(torch.cat([one_hot, edges[None].float()], 0))
        colours = torch.rand(classes, 3, generator=generator) * 1.6 - 0.8
        noise = torch.rand(3, h, w, generator=generator) * 0.4 - 0.2
        images.append(colours[class_map].permute(2, 0, 1) + noise)
    as_device = lambda x: x.to(device).contiguous(memory_format=torch.channels_last)
    return dict(label=as_device(torch.stack(labels)), real=as_device(torch.stack(images)))
