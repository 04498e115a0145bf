"""PyTorch counterpart of scalebench's stylegan (workloads/stylegan.cpp, workloads/stylegan_networks.cpp), used by
pytorch_reference.py: NVlabs/stylegan's G_mapping, G_synthesis and D_basic (training/networks_stylegan.py) at lod 0
written out here in NCHW (channels_last memory), with equalized learning rate (weights multiplied at run time by
He's gain / sqrt(fan_in) times lrmul), the fused up/down 4 x 4 convs built from the padded 3 x 3 weight, the fixed
[1, 2, 1] blur, per-pixel noise, instance norm, style modulation, style mixing by per-sample crossover layers and
minibatch stddev (group 4, members strided as the reference's reshape). Losses of training/loss.py:
G_logistic_nonsaturating and D_logistic_simplegp with r1_gamma 10, the R1 gradient by
torch.autograd.grad(create_graph=True) (a double backward). The step is scalebench's one graph: D part (G(z1)
without grad, D(fake), D(real), R1) and G part (G(z2), D with its weights detached: no weight-gradient pass) summed
into one backward pass, then G's and D's Adam (beta1 0, beta2 0.99, eps 1e-8, lr 0.003), then the EMA copy Gs
(local, never reduced). D runs over the fakes and the reals apart, so R1's input gradient and double backward
cover the N reals only, and no weight gradient is computed inside R1's autograd.grad (no_weight_gradients). Under
DDP, G and D are wrapped separately (two reductions); the reals go through DDP's D, the fakes through its module,
and the G-loss pass calls D's module through torch.func.functional_call with detached weights, so DDP's D sees one
forward and one backward per step. Unused
ToRGB/FromRGB layers (lod > 0) enter the outputs times 0: zero gradients, reduced like scalebench's zero-filled
ones. Shapes, parameter names and counts are scalebench's. Imports nothing at module level; torch is passed in."""
import contextlib
import math

G_PARAMETERS = 26_219_627  # shared/WORKLOADS.md §5
D_PARAMETERS = 23_087_249
PARAMETERS = G_PARAMETERS + D_PARAMETERS
FROZEN_PARAMETERS = G_PARAMETERS  # Gs, the EMA copy
ADAM = dict(lr=0.003, betas=(0.0, 0.99), eps=1e-8)
R1_GAMMA = 10.0
STYLE_MIXING = 0.9
EMA_BETA = 0.5 ** (32 / 10000.0)  # G_smoothing_kimg 10 at minibatch 32
SLOPE = 0.2
MAPPING_LRMUL = 0.01
GAIN = math.sqrt(2.0)
MBSTD_GROUP = 4
# workloads/stylegan.cpp shape_for: log2 resolution, fmap_base, fmap_max, latent, mapping layers, first fused log2.
SHAPES = {"full": dict(top=10, fmap_base=8192, fmap_max=512, latent=512, mapping=8, fused=7),
          "tiny": dict(top=4, fmap_base=32, fmap_max=8, latent=8, mapping=2, fused=4)}


def nf(s, stage):
    return min(s["fmap_base"] >> stage, s["fmap_max"])


def layers(s):
    return 2 * s["top"] - 2


def expected_parameters(s):
    """(G, D) counted from the shapes, as networks_stylegan.py builds them (every ToRGB and FromRGB)."""
    top, latent = s["top"], s["latent"]
    g = s["mapping"] * (latent * latent + latent) + 16 * nf(s, 1)
    for layer in range(layers(s)):
        c = nf(s, layer // 2 + 1)
        g += 2 * c + 2 * c * latent + 2 * c  # noise strength, bias, style dense + bias
    g += 9 * nf(s, 1) ** 2
    for r in range(3, top + 1):
        g += 9 * nf(s, r - 2) * nf(s, r - 1) + 9 * nf(s, r - 1) ** 2
    g += sum(3 * nf(s, r - 1) + 3 for r in range(2, top + 1))
    d = sum(3 * nf(s, r - 1) + nf(s, r - 1) for r in range(2, top + 1))
    for r in range(top, 2, -1):
        c, nxt = nf(s, r - 1), nf(s, r - 2)
        d += 9 * c * c + c + 9 * c * nxt + nxt
    c4 = nf(s, 1)
    d += 9 * (c4 + 1) * c4 + c4 + 16 * c4 * nf(s, 0) + nf(s, 0) + nf(s, 0) + 1
    return g, d


def forward_macs(s):
    """(G, D) forward multiply-adds per image: convolutions and dense layers, as workloads/stylegan_networks.cpp
    counts them (a fused transposed conv: input pixels x 16 x C_in x C_out; a fused down conv: output pixels x 16 x
    C_in x C_out)."""
    top, latent = s["top"], s["latent"]
    g = s["mapping"] * latent * latent + 16 * 9 * nf(s, 1) ** 2
    g += sum(latent * 2 * nf(s, layer // 2 + 1) for layer in range(layers(s)))
    for r in range(3, top + 1):
        cin, cout, side = nf(s, r - 2), nf(s, r - 1), 2 ** r
        g += (side // 2) ** 2 * 16 * cin * cout if r >= s["fused"] else side * side * 9 * cin * cout
        g += side * side * 9 * cout * cout
    full = 2 ** top
    g += full * full * 3 * nf(s, top - 1)
    d = full * full * 3 * nf(s, top - 1)
    for r in range(top, 2, -1):
        c, nxt, side = nf(s, r - 1), nf(s, r - 2), 2 ** r
        d += side * side * 9 * c * c
        d += (side // 2) ** 2 * 16 * c * nxt if r >= s["fused"] else side * side * 9 * c * nxt
    c4 = nf(s, 1)
    d += 16 * 9 * (c4 + 1) * c4 + 16 * c4 * nf(s, 0) + nf(s, 0)
    return g, d


def train_matmul_flops(s, batch):
    """scalebench's matmul_flops of the step's graph (`scalebench list`), 2 FLOPs per multiply-add, per image:
    G forward twice (the D part's without gradient, the G part's) and the G part's backward (data and weight
    passes; the first mapping layer has no data pass: the latents are data); the mapping network runs on two
    latents per image (style mixing). D forward over fake and real, their backward (weight passes, data passes
    but FromRGB's: the images need none), R1's input gradient (one data pass of every layer, FromRGB's
    included) and its second order (two passes per layer: the last dense layer's seed is a constant, so one
    there), the G part's D forward and data-only backward (weights behind stop_gradient): 11 D less two FromRGB
    and one last-dense pass. shared/WORKLOADS.md §5: ~480 GMAC per image at 1024²."""
    g, d = forward_macs(s)
    mapping = s["mapping"] * s["latent"] ** 2  # per latent
    g_rest = g - mapping
    full = 2 ** s["top"]
    from_rgb, dense1 = full * full * 3 * nf(s, s["top"] - 1), nf(s, 0)
    g_total = 2 * (g_rest + 2 * mapping) + 2 * g_rest + 2 * mapping + 2 * mapping * (s["mapping"] - 1) / s["mapping"]
    d_total = 11 * d - 2 * from_rgb - dense1
    return 2.0 * batch * (g_total + d_total)


def build_regradable_conv2d(torch):
    """conv2d(x, w, bias, stride, padding) whose backward pass is made of autograd Functions again, so that R1's
    double backward runs ordinary convolutions. PyTorch's own second derivative of conv2d forms the weight-gradient
    term as a convolution whose kernel is the whole activation map: on H200 cuDNN took 70-250 ms per 1024^2 layer
    for it, ~500 of a 984 ms step. The idea is NVlabs stylegan2-ada-pytorch's conv2d_gradfix (written anew here):
    the input gradient of a conv is a transposed conv with the same weight and the reverse, and the weight
    gradient is bilinear in (dy, x), so its derivatives are those two convolutions with the incoming gradient as
    the weight."""
    F = torch.nn.functional
    ops = {}
    # A custom Function's ctx.needs_input_grad says whether w requires grad, not whether this backward pass wants
    # it: inside R1's autograd.grad(inputs=reals) every conv would compute its weight gradient for nothing (and
    # build a double-backward graph for it). no_weight_gradients() turns them off there, as conv2d_gradfix's
    # context manager of the same name does.
    weight_gradients = {"enabled": True}

    @contextlib.contextmanager
    def no_weight_gradients():
        weight_gradients["enabled"] = False
        try:
            yield
        finally:
            weight_gradients["enabled"] = True

    def input_gradient(transposed, stride, padding, dy, w, x):
        """dL/dx of y = conv(x, w) (or its transpose) from dy: the other kind of conv with the same weight. Going
        back through a strided conv, output_padding recovers the rows of x that the stride dropped."""
        if transposed:
            return conv_op(False, stride, padding).apply(dy, w)
        lost = x.shape[-1] - ((dy.shape[-1] - 1) * stride - 2 * padding + w.shape[-1])
        return conv_op(True, stride, padding, lost).apply(dy, w)

    def conv_op(transposed, stride, padding, output_padding=0):
        key = ("conv", transposed, stride, padding, output_padding)
        if key in ops:
            return ops[key]

        class Conv(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_backward(x, w)
                if transposed:
                    return F.conv_transpose2d(x, w, stride=stride, padding=padding, output_padding=output_padding)
                return F.conv2d(x, w, stride=stride, padding=padding)

            @staticmethod
            def backward(ctx, dy):
                x, w = ctx.saved_tensors
                dx = dw = None
                if ctx.needs_input_grad[0]:
                    dx = input_gradient(transposed, stride, padding, dy, w, x)
                if ctx.needs_input_grad[1] and weight_gradients["enabled"]:
                    dw = weight_gradient_op(transposed, stride, padding, output_padding).apply(dy, x, w)
                return dx, dw

        ops[key] = Conv
        return Conv

    def weight_gradient_op(transposed, stride, padding, output_padding):
        key = ("weight", transposed, stride, padding, output_padding)
        if key in ops:
            return ops[key]

        class WeightGradient(torch.autograd.Function):
            @staticmethod
            def forward(ctx, dy, x, w):
                ctx.save_for_backward(dy, x)
                return torch.ops.aten.convolution_backward(
                    dy, x, w, None, [stride] * 2, [padding] * 2, [1, 1], transposed, [output_padding] * 2, 1,
                    [False, True, False])[1]

            @staticmethod
            def backward(ctx, ddw):
                dy, x = ctx.saved_tensors
                ddy = dx = None
                if ctx.needs_input_grad[0]:  # d<ddw, dw>/d dy: the forward conv of x with ddw
                    ddy = conv_op(transposed, stride, padding, output_padding).apply(x, ddw)
                if ctx.needs_input_grad[1]:  # d<ddw, dw>/dx: the input gradient of that conv, from dy
                    dx = input_gradient(transposed, stride, padding, dy, ddw, x)
                return ddy, dx, None

        ops[key] = WeightGradient
        return WeightGradient

    def conv2d(x, w, bias=None, stride=1, padding=0):
        if torch.is_autocast_enabled(x.device.type):  # the Functions see one dtype in both passes
            dtype = torch.get_autocast_dtype(x.device.type)
            x, w = x.to(dtype), w.to(dtype)
        y = conv_op(False, stride, padding).apply(x, w)
        return y if bias is None else y + bias.view(1, -1, 1, 1).to(y.dtype)

    conv2d.no_weight_gradients = no_weight_gradients
    return conv2d


def build_model_class(torch, blur_as="depthwise", conv="regradable"):
    """The StyleGan module class. blur_as: "depthwise" (the reference's grouped conv with the fixed filter) or
    "separable" (the same [1, 2, 1] x [1, 2, 1] / 16 as shifted sums along W then H). conv: "regradable"
    (build_regradable_conv2d) or "native" (F.conv2d) for the 3 x 3 and strided down convs. The 1 x 1 RGB convs are
    matmuls over the channels: on H200 (torch 2.x, cuDNN 9) cuDNN's 3-channel 1 x 1 convs at 1024^2 took
    70-126 ms each in channels_last bf16, 650 of a 1,228 ms step."""
    nn, F = torch.nn, torch.nn.functional
    conv2d = build_regradable_conv2d(torch) if conv == "regradable" else F.conv2d
    # F.conv2d's derivatives are built-in: autograd.grad(inputs=reals) already skips their weight gradients.
    no_weight_gradients = getattr(conv2d, "no_weight_gradients", contextlib.nullcontext)

    def scaled(weight, fan_in, gain, lrmul=1.0):
        return weight * (gain / math.sqrt(fan_in) * lrmul)

    def lrelu(x):
        return F.leaky_relu(x, SLOPE)

    def depthwise_blur(x):
        c = x.shape[1]
        k = torch.tensor([1.0, 2.0, 1.0], device=x.device, dtype=x.dtype)
        k = (k[:, None] * k[None, :] / 16.0).expand(c, 1, 3, 3)
        return F.conv2d(x, k, padding=1, groups=c)

    def separable_blur(x):
        p = F.pad(x, (1, 1, 1, 1))
        p = p[..., :-2] + 2 * p[..., 1:-1] + p[..., 2:]
        return (p[..., :-2, :] + 2 * p[..., 1:-1, :] + p[..., 2:, :]) * (1.0 / 16.0)

    blur = {"depthwise": depthwise_blur, "separable": separable_blur}[blur_as]

    def fused_weight(w, factor):  # (O, I, 3, 3) -> (O, I, 4, 4): padded and summed over the four shifts
        w = F.pad(w, (1, 1, 1, 1))
        return (w[:, :, 1:, 1:] + w[:, :, :-1, 1:] + w[:, :, 1:, :-1] + w[:, :, :-1, :-1]) * factor

    def minibatch_stddev(x, parts):
        out = []
        for part in x.chunk(parts, 0):
            n, c, h, w = part.shape
            group = min(MBSTD_GROUP, n)
            y = part.float().reshape(group, -1, c, h, w)
            y = y - y.mean(0, keepdim=True)
            y = (y.square().mean(0) + 1e-8).sqrt().mean([1, 2, 3])  # (n / group)
            y = y.reshape(-1, 1, 1, 1).repeat(group, 1, h, w).to(part.dtype)
            out.append(torch.cat([part, y], 1))
        return torch.cat(out, 0)

    class Dense(nn.Module):
        def __init__(self, cin, cout, gain, lrmul=1.0):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(cout, cin))
            self.bias = nn.Parameter(torch.empty(cout))
            self.gain, self.lrmul = gain, lrmul

        def forward(self, x):
            return F.linear(x, scaled(self.weight, self.weight.shape[1], self.gain, self.lrmul), self.bias * self.lrmul)

    class Conv(nn.Module):
        """A 3 x 3 (or 1 x 1) conv weight (O, I, k, k) with the equalized-lr scale; bias optional."""

        def __init__(self, cin, cout, k, gain, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(cout, cin, k, k))
            self.bias = nn.Parameter(torch.empty(cout)) if bias else None
            self.gain = gain

        def w(self):
            return scaled(self.weight, self.weight[0].numel(), self.gain)

        def forward(self, x):
            if self.weight.shape[-1] == 1:  # ToRGB / FromRGB: a matmul over channels (NHWC view)
                return F.linear(x.permute(0, 2, 3, 1), self.w()[:, :, 0, 0], self.bias).permute(0, 3, 1, 2)
            return conv2d(x, self.w(), self.bias, padding=self.weight.shape[-1] // 2)

    class UpConv(nn.Module):
        """Conv0_up: fused (transposed 4 x 4 stride 2 from the padded 3 x 3 weight, stored (in, out, 3, 3)) or
        nearest x2 then a 3 x 3 conv (stored (out, in, 3, 3))."""

        def __init__(self, cin, cout, fused):
            super().__init__()
            self.fused = fused
            self.weight = nn.Parameter(torch.empty((cin, cout, 3, 3) if fused else (cout, cin, 3, 3)))
            self.fan_in = 9 * cin

        def forward(self, x):
            w = scaled(self.weight, self.fan_in, GAIN)
            if self.fused:
                return F.conv_transpose2d(x, fused_weight(w, 1.0), stride=2, padding=1)
            return F.conv2d(F.interpolate(x, scale_factor=2, mode="nearest"), w, padding=1)

    class Epilogue(nn.Module):
        def __init__(self, c, latent):
            super().__init__()
            self.noise_strength = nn.Parameter(torch.empty(c))
            self.bias = nn.Parameter(torch.empty(c))
            self.StyleMod = Dense(latent, 2 * c, 1.0)

        def forward(self, x, w):
            n, c, h, wd = x.shape
            noise = torch.randn(n, 1, h, wd, device=x.device, dtype=x.dtype)
            x = x + noise * self.noise_strength.view(1, -1, 1, 1).to(x.dtype)
            x = lrelu(x + self.bias.view(1, -1, 1, 1).to(x.dtype))
            x = F.instance_norm(x, eps=1e-8)
            style = self.StyleMod(w)
            return x * (1 + style[:, :c, None, None]) + style[:, c:, None, None]

    class Generator(nn.Module):
        def __init__(self, s):
            super().__init__()
            self.s = s
            latent, top = s["latent"], s["top"]
            self.mapping = nn.ModuleList(Dense(latent, latent, GAIN, MAPPING_LRMUL) for _ in range(s["mapping"]))
            self.const = nn.Parameter(torch.empty(1, nf(s, 1), 4, 4))
            self.epilogues = nn.ModuleList(Epilogue(nf(s, layer // 2 + 1), latent) for layer in range(layers(s)))
            self.conv4 = Conv(nf(s, 1), nf(s, 1), 3, GAIN, False)
            self.ups = nn.ModuleList(UpConv(nf(s, r - 2), nf(s, r - 1), r >= s["fused"]) for r in range(3, top + 1))
            self.convs = nn.ModuleList(Conv(nf(s, r - 1), nf(s, r - 1), 3, GAIN, False) for r in range(3, top + 1))
            self.to_rgb = nn.ModuleList(Conv(nf(s, r - 1), 3, 1, 1.0, True) for r in range(top, 1, -1))  # lod 0..

        def forward(self, z, crossover):
            x = z * torch.rsqrt(z.square().mean(1, keepdim=True) + 1e-8)
            for dense in self.mapping:
                x = lrelu(dense(x))
            n = crossover.shape[0]
            w1, w2 = x[:n], x[n:]
            dlatents = [torch.where((crossover > layer)[:, None], w1, w2) for layer in range(layers(self.s))]
            x = self.epilogues[0](self.const.expand(n, -1, -1, -1).to(w1.dtype), dlatents[0])
            x = self.epilogues[1](self.conv4(x), dlatents[1])
            for i, (up, conv) in enumerate(zip(self.ups, self.convs)):
                x = self.epilogues[2 * i + 2](blur(up(x)), dlatents[2 * i + 2])
                x = self.epilogues[2 * i + 3](conv(x), dlatents[2 * i + 3])
            unused = sum(p.sum() for rgb in self.to_rgb[1:] for p in rgb.parameters())
            return self.to_rgb[0](x) + unused * 0

    class Discriminator(nn.Module):
        def __init__(self, s):
            super().__init__()
            self.s = s
            top = s["top"]
            self.from_rgb = nn.ModuleList(Conv(3, nf(s, r - 1), 1, GAIN, True) for r in range(top, 1, -1))
            self.conv0 = nn.ModuleList(Conv(nf(s, r - 1), nf(s, r - 1), 3, GAIN, True) for r in range(top, 2, -1))
            self.conv1_down = nn.ModuleList(Conv(nf(s, r - 1), nf(s, r - 2), 3, GAIN, True) for r in range(top, 2, -1))
            c4 = nf(s, 1)
            self.final_conv = Conv(c4 + 1, c4, 3, GAIN, True)
            self.dense0 = Dense(16 * c4, nf(s, 0), GAIN)
            self.dense1 = Dense(nf(s, 0), 1, 1.0)

        def forward(self, images, parts=1):
            x = lrelu(self.from_rgb[0](images))
            for i, r in enumerate(range(self.s["top"], 2, -1)):
                x = blur(lrelu(self.conv0[i](x)))
                down = self.conv1_down[i]
                if r >= self.s["fused"]:
                    x = conv2d(x, fused_weight(down.w(), 0.25), down.bias, stride=2, padding=1)
                else:
                    x = F.avg_pool2d(conv2d(x, down.w(), padding=1), 2) + down.bias.view(1, -1, 1, 1)
                x = lrelu(x)
            x = lrelu(self.final_conv(minibatch_stddev(x, parts)))
            x = lrelu(self.dense0(x.flatten(1)))
            unused = sum(p.sum() for rgb in self.from_rgb[1:] for p in rgb.parameters())
            return self.dense1(x) + unused * 0

    class StyleGan(nn.Module):
        """G, D and the EMA copy Gs (buffers, not parameters); forward returns (loss_D, loss_G)."""

        def __init__(self, s):
            super().__init__()
            self.G, self.D = Generator(s), Discriminator(s)
            self.ema_started = False

        def start_ema(self):
            self.Gs = [p.detach().clone() for p in self.G.parameters()]

        def discriminator_module(self):
            return getattr(self.D, "module", self.D)

        def forward(self, reals, latents_d, crossover_d, latents_g, crossover_g):
            n = reals.shape[0]
            with torch.no_grad():  # the D part's fake images: no gradient to G
                fake_d = self.G(latents_d, crossover_d)
            reals = reals.detach().requires_grad_(True)
            d = self.discriminator_module()
            # D over the fakes and over the reals apart, so that R1's input gradient and its double backward cover
            # the N real images only (not a concatenation of 2N). The reals go through self.D (DDP's wrapper where
            # there is one: DDP sees one forward a step); the fakes through the module itself, the same parameters.
            fake_scores = d(fake_d.to(reals.dtype)).float()
            real_scores = self.D(reals).float()
            with no_weight_gradients():  # R1 needs d(score)/d(reals) only: no weight-gradient passes in there
                (gradient,) = torch.autograd.grad(real_scores.sum(), reals, create_graph=True)
            r1 = gradient.float().square().sum([1, 2, 3]).mean() * (R1_GAMMA / 2)
            loss_d = F.softplus(fake_scores).mean() + F.softplus(-real_scores).mean() + r1
            detached = {name: p.detach() for name, p in d.named_parameters()}
            fake_g = self.G(latents_g, crossover_g)
            loss_g = F.softplus(-torch.func.functional_call(d, detached, (fake_g,)).float()).mean()
            return loss_d, loss_g

    return StyleGan


def initialise(torch, model, seed):
    """As workloads/stylegan.cpp parameter_init (networks_stylegan.py with use_wscale): weights N(0, 1 / lrmul²)
    (the mapping network's N(0, 100²)), biases and noise strengths 0, the learned constant 1."""
    generator = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("const"):
                p.fill_(1.0)
            elif name.endswith("weight"):
                p.normal_(0.0, 1.0 / MAPPING_LRMUL if name.startswith("G.mapping.") else 1.0, generator=generator)
            else:
                p.zero_()


def make_optimizers(torch, model, lr, cuda):
    """G_opt and D_opt of train.py at learning rate lr (the reference's: ADAM["lr"]), fused on CUDA."""
    settings = dict(ADAM, lr=lr)
    return (torch.optim.Adam(model.G.parameters(), fused=cuda, **settings),
            torch.optim.Adam(model.D.parameters(), fused=cuda, **settings))


def make_step(torch, model, forward, optimizers, data, autocast):
    """scalebench's step: both parts' losses, one backward pass, both Adam updates, then the EMA of G."""
    optimizer_g, optimizer_d = optimizers
    plain = getattr(model, "_orig_mod", model)
    generator = lambda: getattr(plain.G, "module", plain.G)

    def step():
        optimizer_g.zero_grad(set_to_none=True)
        optimizer_d.zero_grad(set_to_none=True)
        with autocast():
            loss_d, loss_g = forward(**data)
        (loss_d + loss_g).backward()
        optimizer_g.step()
        optimizer_d.step()
        with torch.no_grad():
            params = [p.detach() for p in generator().parameters()]
            if not plain.ema_started:
                plain.Gs = [p.clone() for p in params]
                plain.ema_started = True
            else:
                torch._foreach_lerp_(plain.Gs, params, 1.0 - EMA_BETA)
        return (loss_d + loss_g).detach()
    return step


def synthesize(torch, s, batch, seed, device, channels_last=True):
    """As workloads/stylegan.cpp synthesize() in distribution: real images uniform in [-1, 1] (NCHW, in channels_last
    memory unless told otherwise), two latent pairs N(0, 1) (2N rows each: z1 then z2), crossover layers uniform in
    [1, layers) with probability 0.9, else `layers` (no mixing)."""
    generator = torch.Generator().manual_seed(seed)
    side, count = 2 ** s["top"], layers(s)

    def crossover():
        mix = torch.rand(batch, generator=generator) < STYLE_MIXING
        layer = torch.randint(1, count, (batch,), generator=generator)
        return torch.where(mix, layer, torch.full_like(layer, count)).to(device)
    reals = (torch.rand(batch, 3, side, side, generator=generator) * 2 - 1).to(device)
    layout = torch.channels_last if channels_last else torch.contiguous_format
    return dict(reals=reals.contiguous(memory_format=layout),
                latents_d=torch.randn(2 * batch, s["latent"], generator=generator).to(device),
                crossover_d=crossover(),
                latents_g=torch.randn(2 * batch, s["latent"], generator=generator).to(device),
                crossover_g=crossover())
