"""PyTorch counterpart of scalebench's conv_seq2seq (workloads/conv_seq2seq.cpp), used by pytorch_reference.py:
fairseq's fconv_wmt_en_de as fairseq/models/fconv.py runs it in training (weight-normalised Linear and ConvTBC
layers through torch.conv_tbc in time-major layout, GLU, (x + residual) * sqrt(0.5), the encoder's padding masks,
an attention layer per decoder block with the per-sentence length scaling, GradMultiply), with scalebench's
shapes, synthetic batch and loss. Imports nothing at module level; torch is passed in."""
import math
import random

import scalebench_random

PAD, EOS, FIRST_WORD = 1, 2, 4  # fairseq's dictionary: bos, pad, eos, unk first
# WORKLOADS.md's proxy table for §8: "real lengths ~27", credited "non-pad target tokens (~13.5k)" at 500 pairs.
SOURCE_MEAN_LENGTH, TARGET_MEAN_LENGTH = 27.0, 27.0
DROPOUT = 0.2
LABEL_SMOOTHING = 0.1
PARAMETERS = 216_005_176
# workloads/conv_seq2seq.cpp shape_for: vocabularies, embedding, decoder_out_embed_dim, position rows, tokens a
# side, and the widths of the [(a, 3)] x 9 + [(b, 3)] x 4 + [(c, 1)] x 2 blocks.
SHAPES = {"full": dict(source_vocab=42243, target_vocab=43676, embed=768, out_embed=512, positions=1024, time=32,
                       widths=(512, 1024, 2048)),
          "tiny": dict(source_vocab=40, target_vocab=48, embed=8, out_embed=8, positions=16, time=6,
                       widths=(4, 6, 8))}


def blocks(s):
    a, b, c = s["widths"]
    return [(a, 3)] * 9 + [(b, 3)] * 4 + [(c, 1)] * 2


def forward_macs(s):
    """Multiply-adds per source position and per target position, as workloads/conv_seq2seq.cpp counts them."""
    e, t = s["embed"], s["time"]
    source = target = 0
    channels = blocks(s)[0][0]
    source += e * channels
    target += e * channels
    for width, kernel in blocks(s):
        stack = kernel * channels * 2 * width + (channels * width if channels != width else 0)
        source += stack
        target += stack + 2 * width * e + 2 * e * t  # attention projections, scores and context
        channels = width
    source += channels * e
    target += channels * s["out_embed"] + s["out_embed"] * s["target_vocab"]
    return source, target


def expected_parameters(s):
    """The analytic count of shared/WORKLOADS.md §8 (weight-norm g vectors included), for any shape."""
    e = s["embed"]
    linear = lambda fan_in, out: fan_in * out + 2 * out  # v, g, bias
    stack, channels, attention = 0, blocks(s)[0][0], 0
    for width, kernel in blocks(s):
        stack += kernel * channels * 2 * width + 2 * 2 * width + (linear(channels, width) if channels != width else 0)
        attention += linear(width, e) + linear(e, width)
        channels = width
    first = blocks(s)[0][0]
    encoder = (s["source_vocab"] + s["positions"]) * e + linear(e, first) + stack + linear(channels, e)
    decoder = ((s["target_vocab"] + s["positions"]) * e + linear(e, first) + stack + attention +
               linear(channels, s["out_embed"]) + linear(s["out_embed"], s["target_vocab"]))
    return encoder + decoder


def train_matmul_flops(s, batch):
    """Forward convolution and GEMM FLOPs x 3 (backward = data + weight gradients), 2 per multiply-add: the count
    of `scalebench list` (every input of every product needs its gradient here)."""
    source, target = forward_macs(s)
    return 3.0 * 2.0 * batch * s["time"] * (source + target)


def estimated_units_per_step(s, batch, scale):
    """build()'s estimate of the credited target tokens (the credit itself is counted in the batch)."""
    return float(batch) * (TARGET_MEAN_LENGTH if scale == "full" else s["time"] - 1)


def build_model_class(torch):
    nn, F = torch.nn, torch.nn.functional
    half = math.sqrt(0.5)  # normalization_constant 0.5

    class GradMultiply(torch.autograd.Function):
        """fairseq.modules.GradMultiply: identity forward, gradient x scale backward."""

        @staticmethod
        def forward(ctx, x, scale):
            ctx.scale = scale
            return x.view_as(x)  # no copy: scalebench's grad_multiply is a view too

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.scale, None

    class WeightNormed(nn.Module):
        """torch.nn.utils.weight_norm's parameterisation: weight = g * v / ||v|| with one norm per output channel
        (dim 0 for Linear, 2 for ConvTBC's (k, in, out) weight), via the same fused torch._weight_norm. g (fairseq's
        weight_g) is named weight_norm as in scalebench, so pytorch_reference.initialise makes it a gain of 1."""

        def __init__(self, v_shape, out, dim):
            super().__init__()
            self.dim = dim
            self.weight_v = nn.Parameter(torch.empty(v_shape))
            g_shape = [1] * len(v_shape)
            g_shape[dim] = out
            self.weight_norm = nn.Parameter(torch.empty(g_shape))
            self.bias = nn.Parameter(torch.empty(out))

        def weight(self):
            return torch._weight_norm(self.weight_v, self.weight_norm, self.dim)

    class Linear(WeightNormed):
        def __init__(self, fan_in, out):
            super().__init__((out, fan_in), out, 0)

        def forward(self, x):
            return F.linear(x, self.weight(), self.bias)

    class ConvTBC(WeightNormed):
        """fairseq ConvTBC (time, batch, channel) over torch.conv_tbc; causal: LinearizedConvolution's padding
        k - 1 with the last k - 1 outputs removed."""

        def __init__(self, fan_in, out, kernel, causal):
            super().__init__((kernel, fan_in, out), out, 2)
            self.kernel, self.causal = kernel, causal

        def forward(self, x):
            pad = self.kernel - 1 if self.causal else (self.kernel - 1) // 2
            y = torch.conv_tbc(x.contiguous(), self.weight(), self.bias, pad)
            return y[:-pad] if self.causal and pad > 0 else y

    class FConvSide(nn.Module):
        def __init__(self, s, vocab, decoder):
            super().__init__()
            e = s["embed"]
            self.embed_tokens = nn.Embedding(vocab, e, padding_idx=PAD)
            self.embed_positions = nn.Embedding(s["positions"], e, padding_idx=PAD)
            channels = blocks(s)[0][0]
            self.fc1 = Linear(e, channels)
            self.projections, self.convolutions = nn.ModuleList(), nn.ModuleList()
            self.attention = nn.ModuleList() if decoder else None
            for width, kernel in blocks(s):
                self.projections.append(Linear(channels, width) if channels != width else None)
                self.convolutions.append(ConvTBC(channels, 2 * width, kernel, decoder))
                if decoder:
                    self.attention.append(nn.ModuleDict(dict(in_projection=Linear(width, e),
                                                             out_projection=Linear(e, width))))
                channels = width
            self.fc2 = Linear(channels, s["out_embed"] if decoder else e)
            self.fc3 = Linear(s["out_embed"], vocab) if decoder else None

        def embed(self, ids, positions):
            x = self.embed_tokens(ids) + self.embed_positions(positions)
            return F.dropout(x, DROPOUT, self.training)

    class FConv(nn.Module):
        def __init__(self, s):
            super().__init__()
            self.s = s
            self.encoder = FConvSide(s, s["source_vocab"], False)
            self.decoder = FConvSide(s, s["target_vocab"], True)

        def encode(self, source, source_positions, source_pad):
            enc = self.encoder
            input_embedding = enc.embed(source, source_positions)
            x = enc.fc1(input_embedding).transpose(0, 1)  # (T, B, C)
            pad = source_pad.t().unsqueeze(-1)  # (T, B, 1)
            for projection, conv in zip(enc.projections, enc.convolutions):
                residual = x if projection is None else projection(x)
                x = F.dropout(x.masked_fill(pad, 0), DROPOUT, self.training)
                x = F.glu(conv(x), dim=2)
                x = (x + residual) * half
            x = enc.fc2(x.transpose(1, 0)).masked_fill(source_pad.unsqueeze(-1), 0)  # (B, S, E)
            x = GradMultiply.apply(x, 1.0 / (2.0 * len(enc.convolutions)))
            return x, (x + input_embedding) * half

        def forward(self, source, source_positions, source_pad, target_input, target_positions, targets):
            keys, values = self.encode(source, source_positions, source_pad)
            keys = keys.transpose(1, 2)  # (B, E, S), transposed once as fairseq
            valid = (source_pad.size(1) - source_pad.sum(dim=1)).to(values.dtype).view(-1, 1, 1)  # s per sentence
            dec = self.decoder
            target_embedding = dec.embed(target_input, target_positions)
            x = dec.fc1(target_embedding).transpose(0, 1)
            for projection, conv, attention in zip(dec.projections, dec.convolutions, dec.attention):
                residual = x if projection is None else projection(x)
                x = F.glu(conv(F.dropout(x, DROPOUT, self.training)), dim=2).transpose(1, 0)  # (B, T, C)
                attended = x
                q = (attention["in_projection"](x) + target_embedding) * half
                scores = torch.bmm(q, keys).float().masked_fill(source_pad.unsqueeze(1), float("-inf"))
                context = torch.bmm(F.softmax(scores, dim=-1).type_as(q), values)
                context = context * (valid * valid.rsqrt())  # s * sqrt(1 / s)
                x = (attention["out_projection"](context) + attended) * half
                x = (x.transpose(1, 0) + residual) * half
            x = F.dropout(dec.fc2(x.transpose(1, 0)), DROPOUT, self.training)
            logits = dec.fc3(x)
            v = self.s["target_vocab"]
            # fairseq's smoothing (target 1 - eps, others eps / (V - 1)) as torch's eps * V / (V - 1), as for
            # transformer_big; mean over non-padding targets as scalebench.
            return F.cross_entropy(logits.reshape(-1, v).float(), targets.reshape(-1), ignore_index=PAD,
                                   label_smoothing=LABEL_SMOOTHING * v / (v - 1))

    return FConv


def draw_sentence_pairs(t, batch, seed, source_vocab, target_vocab, source_mean, target_mean):
    """The translation workloads' synthetic pairs (workloads/transformer_big.cpp and conv_seq2seq.cpp
    synthesize()): right-padded to t, lengths ~ N(source_mean | target_mean, 2.5) clamped to [2, t] at full scale
    (t = 32), N(t - 1.5, 1) tiny, drawn from scalebench's own per-sample streams (scalebench_random: the same lengths,
    so the same credited token count); EOS last, decoder input = targets shifted right behind EOS. Returns source,
    decoder input and target rows and the two length lists."""
    rng = random.Random(seed)  # the words: any will do
    src, tgt_in, targets = ([[PAD] * t for _ in range(batch)] for _ in range(3))
    src_len, tgt_len = [], []
    for b in range(batch):
        lengths = scalebench_random.sample_random(seed, b)
        src_len.append(scalebench_random.sentence_length(lengths, source_mean, t))
        tgt_len.append(scalebench_random.sentence_length(lengths, target_mean, t))
        for i in range(src_len[b]):
            src[b][i] = EOS if i + 1 == src_len[b] else rng.randint(FIRST_WORD, source_vocab - 1)
        for i in range(tgt_len[b]):
            targets[b][i] = EOS if i + 1 == tgt_len[b] else rng.randint(FIRST_WORD, target_vocab - 1)
        tgt_in[b][0] = EOS
        for i in range(1, tgt_len[b]):
            tgt_in[b][i] = targets[b][i - 1]
    return src, tgt_in, targets, src_len, tgt_len


def synthesize(torch, s, batch, seed):
    """workloads/conv_seq2seq.cpp synthesize(): draw_sentence_pairs with fairseq's positions (PAD + 1 + i)."""
    t = s["time"]
    src, tgt_in, targets, src_len, tgt_len = draw_sentence_pairs(t, batch, seed, s["source_vocab"], s["target_vocab"],
                                                                  SOURCE_MEAN_LENGTH, TARGET_MEAN_LENGTH)
    steps = torch.arange(t)
    positions = lambda lengths: torch.where(steps < lengths[:, None], PAD + 1 + steps, PAD)
    src_len, tgt_len = torch.tensor(src_len), torch.tensor(tgt_len)
    data = dict(source=torch.tensor(src), source_positions=positions(src_len),
                source_pad=steps[None, :] >= src_len[:, None], target_input=torch.tensor(tgt_in),
                target_positions=positions(tgt_len), targets=torch.tensor(targets))
    return data, int(tgt_len.sum())
