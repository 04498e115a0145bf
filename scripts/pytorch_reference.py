#!/usr/bin/env python3
"""PyTorch counterpart of scalebench's transformer_big and bert_base workloads (same layers, shapes, tied
embeddings, losses, synthetic-data distributions and AdamW settings as workloads/*.cpp), of conv_seq2seq
(scripts/pytorch_convs2s_model.py: fairseq's fconv layers), of pix2pixhd (scripts/pytorch_pix2pixhd_model.py:
pix2pixHD's generator, discriminators, frozen VGG and two-optimizer step), of stylegan
(scripts/pytorch_stylegan_model.py: StyleGAN's G and D at lod 0, R1 by double backward, EMA of G), of its convolutional ones
(scripts/pytorch_cnn_models.py: torchvision, timm, SGD momentum, channels_last) and of maskrcnn
(scripts/pytorch_maskrcnn_model.py: torchvision's MaskRCNN, ResNet-50-FPN, FrozenBatchNorm), trained on one device
so a GPU job can report it beside `scalebench run`; with --ddp, one process per GPU times the same step alone
and under DistributedDataParallel for the data-parallel scaling efficiency. Prints one JSON line on stdout (rank 0
only under --ddp), progress on stderr.
  python3 scripts/pytorch_reference.py --workload transformer_big [--batch 500] [--precision bf16] [--compile]
  python3 scripts/pytorch_reference.py --workload bert_base --device cpu --scale tiny --steps 3 --warmup 0
  mpirun -np 2 --bind-to none python3 scripts/pytorch_reference.py --workload bert_base --ddp [--bucket-mb 25]
Exit 2: bad arguments; 3: CUDA requested but absent, or out of device memory. Needs only torch and stdlib."""
import argparse
import gc
import json
import math
import os
import random
import sys
import time

import gpu_peaks
import pytorch_bert_tasks_model as bert_tasks
import pytorch_cnn_models as cnn
import pytorch_convs2s_model as convs2s
import pytorch_maskrcnn_model as maskrcnn
import pytorch_pix2pixhd_model as p2p
import pytorch_stylegan_model as sg
import pytorch_unsupmt_model as unsupmt

# Full and tiny shapes of workloads/transformer_big.cpp and workloads/bert_base.cpp (shape_for).
TRANSFORMER_SHAPES = {"full": dict(vocab=32768, model=1024, heads=16, ffn=4096, layers=6, time=32),
                      "tiny": dict(vocab=64, model=32, heads=4, ffn=64, layers=2, time=8)}
BERT_SHAPES = {"full": dict(vocab=30522, model=768, heads=12, ffn=3072, layers=12, max_positions=512, time=128,
                            predictions=20),
               "tiny": dict(vocab=1100, model=32, heads=4, ffn=64, layers=2, max_positions=16, time=16,
                            predictions=3)}
# scalebench's WorkloadInfo: unit, default batch and the full-scale parameter count its registry test pins.
WORKLOADS = {"transformer_big": dict(unit="tokens", batch=500, parameters=209_911_808),
             "bert_base": dict(unit="sequences", batch=128, parameters=110_106_428),
             "bert_finetune": dict(unit="sequences", batch=48, parameters=bert_tasks.FINETUNE_PARAMETERS),
             "mt_dnn": dict(unit="sequences", batch=8, parameters=bert_tasks.MT_DNN_PARAMETERS),
             "conv_seq2seq": dict(unit="tokens", batch=500, parameters=convs2s.PARAMETERS),
             "pix2pixhd": dict(unit="pairs", batch=2, parameters=p2p.PARAMETERS),
             "stylegan": dict(unit="images", batch=16, parameters=sg.PARAMETERS),
             "maskrcnn": dict(unit="images", batch=maskrcnn.MASKRCNN["batch"], parameters=maskrcnn.MASKRCNN["parameters"]),
             "unsupmt": dict(unit="words", batch=275, parameters=unsupmt.PARAMETERS),
             **{name: dict(unit=w["unit"], batch=w["batch"], parameters=w["parameters"])
                for name, w in cnn.CNN_WORKLOADS.items()}}
PAD, EOS, FIRST_WORD = 1, 2, 4  # fairseq's dictionary: bos, pad, eos, unk first
SOURCE_MEAN_LENGTH, TARGET_MEAN_LENGTH = 29.5, 30.6  # WMT16 en-de tokens per sentence, WORKLOADS.md §7
MASK = 103  # BERT uncased vocabulary's [MASK]; [PAD] 0 below
CLS, SEP, FIRST_WORDPIECE = bert_tasks.CLS, bert_tasks.SEP, bert_tasks.FIRST_WORDPIECE
# cuDNN's algorithm search pays off where every step has the same shapes; maskrcnn's mask head sees a different
# number of positive RoIs each step, so with the flag on cuDNN searches again nearly every step (921 against
# 263 ms a step on H200 in the 2026-12-01 audit). Off there, as detectron2 and torchvision's references run it.
CUDNN_BENCHMARK_OFF = {"maskrcnn": "the mask head's RoI batch changes every step"}
# include/scalebench/optimizer.h: decay on every parameter (LayerNorm and biases too), as scalebench applies it.
ADAMW = dict(betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
DDP_BUCKET_MB = 25.0  # DistributedDataParallel's own bucket_cap_mb default
DDP_MASTER_PORT = "29517"  # the rendezvous port when MASTER_PORT is unset (rank 0 listens on 127.0.0.1)


class UsageParser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like scalebench's UsageError
        print(f"pytorch_reference.py: {message} (run with --help)", file=sys.stderr)
        sys.exit(2)


def parse_arguments(argv):
    p = UsageParser(description=__doc__.split("\n")[0])
    p.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    p.add_argument("--batch", type=int, default=0, help="per-step batch (default: scalebench's reference batch)")
    p.add_argument("--steps", type=int, default=30, help="timed steps")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps (torch.compile compiles here)")
    p.add_argument("--precision", default="bf16", choices=["bf16", "fp32", "tf32"])
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model and loss (default mode); where compiling fails, the run falls back "
                        "to eager and says why (JSON: compiled false, compile_error)")
    p.add_argument("--compile-mode", choices=["default", "reduce-overhead"], default="default",
                   help="torch.compile's mode with --compile: reduce-overhead also replays the compiled graphs as "
                        "CUDA graphs (PyTorch's answer to a host-bound step; scalebench replays its steps too)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--scale", default="full", choices=["full", "tiny"])
    p.add_argument("--seed", type=int, default=1, help="data seed; weights use seed + 1000, as scalebench")
    p.add_argument("--lr", type=float, default=None,
                   help="learning rate (default: scalebench's 1e-4; pix2pixhd's and stylegan's reference Adam rates, "
                        "2e-4 and 0.003)")
    p.add_argument("--count-only", action="store_true",
                   help="build the model on the meta device, check its parameter count, print and exit")
    p.add_argument("--ddp", action="store_true",
                   help="one process per GPU (mpirun or torchrun): time --batch per rank alone, then under "
                        "DistributedDataParallel over NCCL; rank 0 prints the scaling efficiency")
    p.add_argument("--zero1", action="store_true",
                   help="with --ddp: the dp phase's optimizer sharded across the ranks by PyTorch's "
                        "ZeroRedundancyOptimizer (ZeRO stage 1), beside scalebench --strategy zero1")
    p.add_argument("--fsdp2", default=None, choices=["zero2", "zero3"],
                   help="with --ddp: the dp phase under PyTorch FSDP2 (fully_shard, per layer, then the whole model) "
                        "instead of DDP: zero2 keeps the gathered parameters from the forward to the backward pass "
                        "(reshard_after_forward=False, ZeRO stage 2), zero3 frees them after the forward and gathers "
                        "again for the backward (ZeRO stage 3); beside scalebench --strategy zero2/zero3")
    p.add_argument("--max-batch", action="store_true",
                   help="find the largest batch that trains (2 steps each, from --batch: doubling until out of "
                        "memory, then bisecting), as scalebench maxbatch does; prints every attempt")
    p.add_argument("--profile", default=None, metavar="PATH",
                   help="after the timed steps, profile one more step (torch.profiler) and write its ops by CUDA "
                        "time to PATH")
    p.add_argument("--stylegan-blur", default="separable", choices=["depthwise", "separable"],
                   help="stylegan's [1, 2, 1] blur as two shifted sums or a depthwise conv (the reference's; 8.5x "
                        "slower on H200 with R1's double backward)")
    p.add_argument("--stylegan-conv", default="regradable", choices=["regradable", "native"],
                   help="stylegan's convs with a backward made of convs again (cheap double backward) or F.conv2d")
    p.add_argument("--stylegan-layout", default="channels_last", choices=["channels_last", "nchw"],
                   help="stylegan's activation memory layout")
    p.add_argument("--bucket-mb", type=float, default=None,
                   help="DDP gradient bucket size in MiB (bucket_cap_mb; default %g)" % DDP_BUCKET_MB)
    a = p.parse_args(argv)
    if a.batch < 0:
        p.error("--batch must not be negative")
    if a.steps < 1:
        p.error("--steps must be at least 1")
    if a.warmup < 0:
        p.error("--warmup must not be negative")
    if a.lr is None:
        a.lr = {"pix2pixhd": p2p.ADAM["lr"], "stylegan": sg.ADAM["lr"]}.get(a.workload, 1e-4)
    if not a.lr > 0:
        p.error("--lr must be positive")
    if a.precision == "tf32" and a.device != "cuda":
        p.error("--precision tf32 needs the cuda device")
    if a.bucket_mb is not None and not a.ddp:
        p.error("--bucket-mb needs --ddp")
    if a.ddp and a.device != "cuda":
        p.error("--ddp needs the cuda device (NCCL)")
    if a.ddp and a.count_only:
        p.error("--ddp and --count-only exclude each other")
    if a.zero1 and not a.ddp:
        p.error("--zero1 needs --ddp")
    if a.zero1 and a.workload in ("pix2pixhd", "stylegan"):
        p.error(f"--zero1: {a.workload} steps two optimizers; its ZeroRedundancyOptimizer pair is not built here")
    if a.fsdp2 and not a.ddp:
        p.error("--fsdp2 needs --ddp")
    if a.fsdp2 and a.zero1:
        p.error("--fsdp2 and --zero1 exclude each other")
    if a.fsdp2 and a.workload in ("pix2pixhd", "stylegan"):
        p.error(f"--fsdp2: {a.workload} trains two networks with two optimizers; their FSDP pair is not built here")
    if a.max_batch and (a.ddp or a.count_only or a.device != "cuda"):
        p.error("--max-batch needs the cuda device, alone (not with --ddp or --count-only)")
    if (a.workload in cnn.CNN_WORKLOADS or a.workload == "maskrcnn") and a.scale != "full":
        p.error(f"--workload {a.workload} has no tiny scale here (its model comes from torchvision or timm)")
    if a.bucket_mb is not None and not (a.bucket_mb > 0 and math.isfinite(a.bucket_mb)):
        p.error("--bucket-mb must be positive")
    a.batch = a.batch or WORKLOADS[a.workload]["batch"]
    a.bucket_mb = DDP_BUCKET_MB if a.bucket_mb is None else a.bucket_mb
    a.rank, a.world_size, a.local_rank = distributed_environment(p, os.environ) if a.ddp else (0, 1, 0)
    return a


def distributed_environment(p, env):
    """(rank, world size, local rank) from Open MPI's mpirun, else torchrun; read before torch is imported so a
    launch without either is a usage error (exit 2)."""
    for names in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
                  ("RANK", "WORLD_SIZE", "LOCAL_RANK")):
        if names[0] not in env:
            continue
        try:
            rank, size, local = (int(env[name]) for name in names)
        except (KeyError, ValueError):
            p.error(f"--ddp: {', '.join(names)} must all be set to integers "
                    f"(got {', '.join(repr(env.get(name)) for name in names)})")
        if not (size >= 1 and 0 <= rank < size and 0 <= local <= rank):
            p.error(f"--ddp: inconsistent {', '.join(names)} = {rank}, {size}, {local}")
        return rank, size, local
    p.error("--ddp needs a launcher: mpirun (OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK) or torchrun "
            "(RANK/WORLD_SIZE/LOCAL_RANK)")


def build_modules(torch):
    """Model classes, defined once torch is imported so --help and argument errors work without it."""
    nn, F = torch.nn, torch.nn.functional

    class Attention(nn.Module):
        """workloads/transformer_layers.cpp multi_head_attention: separate Q, K, V, O projections with bias,
        softmax(QK^T / sqrt(dh)) under a boolean mask (True = attend), dropout on the probabilities."""

        def __init__(self, model, heads, dropout):
            super().__init__()
            self.heads, self.dropout = heads, dropout
            self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(model, model) for _ in range(4))

        def forward(self, query, memory, mask):  # query (B, Tq, D), memory (B, Tk, D), mask (B, 1, Tq|1, Tk)
            b, tq, d = query.shape
            split = lambda x: x.view(b, x.shape[1], self.heads, d // self.heads).transpose(1, 2)  # (B, H, T, dh)
            q, k, v = split(self.q_proj(query)), split(self.k_proj(memory)), split(self.v_proj(memory))
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                     dropout_p=self.dropout if self.training else 0.0)
            return self.out_proj(context.transpose(1, 2).reshape(b, tq, d))

    class FeedForward(nn.Module):
        def __init__(self, model, ffn, gelu):
            super().__init__()
            self.fc1, self.fc2, self.gelu = nn.Linear(model, ffn), nn.Linear(ffn, model), gelu

        def forward(self, x):  # exact erf GELU for BERT, ReLU for fairseq; no activation dropout in either
            h = self.fc1(x)
            return self.fc2(F.gelu(h) if self.gelu else F.relu(h))

    def add_and_norm(norm, x, sublayer, p, training):
        """Post-norm residual: LayerNorm(x + dropout(sublayer)), as both references."""
        return norm(x + F.dropout(sublayer, p, training))

    class TransformerLayer(nn.Module):
        """fairseq encoder layer, or decoder layer with cross-attention; parameter names as fairseq's."""

        def __init__(self, s, dropout, attention_dropout, decoder):
            super().__init__()
            d = s["model"]
            self.dropout = dropout
            self.self_attn = Attention(d, s["heads"], attention_dropout)
            self.self_attn_layer_norm = nn.LayerNorm(d, eps=1e-5)
            self.encoder_attn = Attention(d, s["heads"], attention_dropout) if decoder else None
            self.encoder_attn_layer_norm = nn.LayerNorm(d, eps=1e-5) if decoder else None
            self.ffn = FeedForward(d, s["ffn"], gelu=False)
            self.final_layer_norm = nn.LayerNorm(d, eps=1e-5)

        def forward(self, x, self_mask, memory=None, memory_mask=None):
            p, t = self.dropout, self.training
            x = add_and_norm(self.self_attn_layer_norm, x, self.self_attn(x, x, self_mask), p, t)
            if self.encoder_attn is not None:
                x = add_and_norm(self.encoder_attn_layer_norm, x, self.encoder_attn(x, memory, memory_mask), p, t)
            return add_and_norm(self.final_layer_norm, x, self.ffn(x), p, t)

    class TransformerBig(nn.Module):
        """fairseq transformer_wmt_en_de_big with --share-all-embeddings (workloads/transformer_big.cpp)."""

        def __init__(self, s):
            super().__init__()
            self.s, self.dropout, self.label_smoothing = s, 0.3, 0.1
            self.embed_tokens = nn.Embedding(s["vocab"], s["model"])  # encoder in, decoder in, decoder out
            # A constant table, not a parameter (fairseq detaches it); row PAD is zero for padding positions.
            self.register_buffer("sinusoids", sinusoidal_positions(torch, s["time"] + PAD + 1, s["model"]),
                                 persistent=False)
            self.encoder = nn.ModuleList(TransformerLayer(s, 0.3, 0.1, False) for _ in range(s["layers"]))
            self.decoder = nn.ModuleList(TransformerLayer(s, 0.3, 0.1, True) for _ in range(s["layers"]))

        def embed(self, ids, positions):  # (B, T) -> (B, T, D); PAD's row gets no gradient from the lookup
            x = F.embedding(ids, self.embed_tokens.weight, padding_idx=PAD) * math.sqrt(self.s["model"])
            return F.dropout(x + F.embedding(positions, self.sinusoids), self.dropout, self.training)

        def forward(self, source, source_positions, source_mask, target_input, target_positions, target_mask,
                    targets):
            x = self.embed(source, source_positions)
            for layer in self.encoder:
                x = layer(x, source_mask)
            y = self.embed(target_input, target_positions)
            for layer in self.decoder:
                y = layer(y, target_mask, x, source_mask)
            logits = F.linear(y, self.embed_tokens.weight)  # (B, T, V): the shared embedding, no bias
            # torch smooths with eps/V on every class; eps' = eps*V/(V-1) gives fairseq's current formula that
            # scalebench pins (target 1-eps, others eps/(V-1)); mean over non-padding targets as scalebench.
            v = self.s["vocab"]
            return F.cross_entropy(logits.reshape(-1, v).float(), targets.reshape(-1), ignore_index=PAD,
                                   label_smoothing=self.label_smoothing * v / (v - 1))

    class BertLayer(nn.Module):
        def __init__(self, s):
            super().__init__()
            self.attention = Attention(s["model"], s["heads"], 0.1)
            self.attention_norm = nn.LayerNorm(s["model"], eps=1e-12)
            self.ffn = FeedForward(s["model"], s["ffn"], gelu=True)
            self.output_norm = nn.LayerNorm(s["model"], eps=1e-12)

        def forward(self, x, mask):
            x = add_and_norm(self.attention_norm, x, self.attention(x, x, mask), 0.1, self.training)
            return add_and_norm(self.output_norm, x, self.ffn(x), 0.1, self.training)

    class BertForPreTraining(nn.Module):
        """HF BertForPreTraining's parameters, with the MLM head on the gathered masked rows only
        (google's gather_indexes, as workloads/bert_base.cpp)."""

        def __init__(self, s):
            super().__init__()
            d, v = s["model"], s["vocab"]
            self.word_embeddings = nn.Embedding(v, d)  # also the MLM decoder weight
            self.position_embeddings = nn.Embedding(s["max_positions"], d)
            self.token_type_embeddings = nn.Embedding(2, d)
            self.embeddings_norm = nn.LayerNorm(d, eps=1e-12)
            self.layers = nn.ModuleList(BertLayer(s) for _ in range(s["layers"]))
            self.pooler = nn.Linear(d, d)
            self.transform = nn.Linear(d, d)
            self.transform_norm = nn.LayerNorm(d, eps=1e-12)
            self.decoder_bias = nn.Parameter(torch.zeros(v))
            self.seq_relationship = nn.Linear(d, 2)

        def forward(self, input_ids, token_type_ids, position_ids, key_mask, masked_rows, masked_labels,
                    next_sentence_labels):
            x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
            x = x + self.position_embeddings(position_ids)  # (T, D) broadcast over the batch
            x = F.dropout(self.embeddings_norm(x), 0.1, self.training)
            for layer in self.layers:
                x = layer(x, key_mask)
            pooled = torch.tanh(self.pooler(x[:, 0]))  # [CLS]
            rows = x.reshape(-1, x.shape[-1]).index_select(0, masked_rows)  # (B * predictions, D)
            h = self.transform_norm(F.gelu(self.transform(rows)))
            mlm_logits = F.linear(h, self.word_embeddings.weight, self.decoder_bias)
            return (F.cross_entropy(mlm_logits.float(), masked_labels) +
                    F.cross_entropy(self.seq_relationship(pooled).float(), next_sentence_labels))

    return TransformerBig, BertForPreTraining, BertLayer


def sinusoidal_positions(torch, positions, dim):
    """fairseq SinusoidalPositionalEmbedding.get_embedding in fp32 (src/cpu/positions.h); row PAD zero."""
    half = dim // 2
    frequency = torch.exp(torch.arange(half, dtype=torch.float32) * -(math.log(10000.0) / (half - 1)))
    angle = torch.arange(positions, dtype=torch.float32).unsqueeze(1) * frequency.unsqueeze(0)
    table = torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)
    if dim % 2:
        table = torch.cat([table, torch.zeros(positions, 1)], dim=1)
    table[PAD] = 0
    return table


def expected_parameters(workload, s):
    """The analytic count of shared/WORKLOADS.md §7 and §10, for any shape."""
    d, f, v = s["model"], s["ffn"], s["vocab"]
    attention, ffn, norm = 4 * (d * d + d), d * f + f + f * d + d, 2 * d
    if workload == "transformer_big":
        return v * d + s["layers"] * (attention + ffn + 2 * norm) + s["layers"] * (2 * attention + ffn + 3 * norm)
    embeddings = (v + s["max_positions"] + 2) * d + norm
    heads = (d * d + d) + (d * d + d + norm + v) + (2 * d + 2)  # pooler, MLM transform + bias, NSP
    return embeddings + s["layers"] * (attention + ffn + 2 * norm) + heads


def train_matmul_flops(workload, s, batch):
    """Forward GEMM FLOPs x 3 (backward = dX + dW), counted as scalebench's matmul_flops (`scalebench list`):
    every projection, the attention score and context products, and the vocabulary GEMM, on padded shapes."""
    d, f, v, t, layers = s["model"], s["ffn"], s["vocab"], s["time"], s["layers"]
    tokens = batch * t
    attention = 2 * tokens * 4 * d * d + 2 * 2 * tokens * t * d  # Q, K, V, O and QK^T, PV (Tq = Tk = t)
    ffn = 2 * 2 * tokens * d * f
    if workload == "transformer_big":
        forward = layers * (attention + ffn) + layers * (2 * attention + ffn) + 2 * tokens * d * v
    else:
        rows = batch * s["predictions"]
        forward = layers * (attention + ffn) + 2 * batch * d * d + 2 * rows * (d * d + d * v) + 2 * batch * d * 2
    return 3.0 * forward


def synthesize_transformer(torch, s, batch, seed):
    """workloads/transformer_big.cpp synthesize(): the pairs of convs2s.draw_sentence_pairs over one shared
    vocabulary. Masks replace scalebench's key_lengths + causal flags of masked_softmax."""
    t = s["time"]
    src, tgt_in, targets, src_len, tgt_len = convs2s.draw_sentence_pairs(t, batch, seed, s["vocab"], s["vocab"],
                                                                          SOURCE_MEAN_LENGTH, TARGET_MEAN_LENGTH)
    steps = torch.arange(t)
    # fairseq make_positions on right padding: PAD + 1 + i for real tokens, PAD for padding.
    positions = lambda lengths: torch.where(steps < lengths[:, None], PAD + 1 + steps, PAD)
    src_len, tgt_len = torch.tensor(src_len), torch.tensor(tgt_len)
    source_mask = (steps[None, :] < src_len[:, None])[:, None, None, :]  # (B, 1, 1, T)
    causal = steps[None, :] <= steps[:, None]  # (Tq, Tk): key at or before the query
    target_mask = (steps[None, :] < tgt_len[:, None])[:, None, None, :] & causal  # (B, 1, T, T)
    data = dict(source=torch.tensor(src), source_positions=positions(src_len), source_mask=source_mask,
                target_input=torch.tensor(tgt_in), target_positions=positions(tgt_len), target_mask=target_mask,
                targets=torch.tensor(targets))
    return data, int(tgt_len.sum())


def synthesize_bert(torch, s, batch, seed):
    """workloads/bert_base.cpp synthesize(): [CLS] A [SEP] B [SEP] with random segment lengths, padding after,
    `predictions` real non-[SEP] tokens per sequence replaced by [MASK]."""
    t, p, rng = s["time"], s["predictions"], random.Random(seed)
    ids, types = [[0] * t for _ in range(batch)], [[0] * t for _ in range(batch)]
    lengths, masked_rows, masked_labels, nsp = [], [], [], []
    for b in range(batch):
        length = rng.randint(max(p + 3, t * 3 // 4), t)
        first = rng.randint(1, length - 3)  # segment A tokens
        row = ids[b]
        row[0] = CLS
        for i in range(1, length):
            row[i] = rng.randint(FIRST_WORDPIECE, s["vocab"] - 1)
        row[first + 1] = row[length - 1] = SEP
        for i in range(first + 2, length):
            types[b][i] = 1
        lengths.append(length)
        nsp.append(rng.getrandbits(1))
        candidates = [i for i in range(1, length) if row[i] != SEP]
        rng.shuffle(candidates)
        for i in candidates[:p]:
            masked_rows.append(b * t + i)
            masked_labels.append(row[i])
            row[i] = MASK
    key_mask = (torch.arange(t)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]  # (B, 1, 1, T)
    return dict(input_ids=torch.tensor(ids), token_type_ids=torch.tensor(types), position_ids=torch.arange(t),
                key_mask=key_mask, masked_rows=torch.tensor(masked_rows), masked_labels=torch.tensor(masked_labels),
                next_sentence_labels=torch.tensor(nsp))


def initialise(torch, model, seed):
    """As scalebench's initialise_parameters: N(0, 0.02) weights, zero biases, LayerNorm gain 1."""
    generator = torch.Generator(device=next(model.parameters()).device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            bias = "bias" in name.rsplit(".", 1)[-1]  # GRUCell's bias_ih and bias_hh too
            if "norm" in name:
                p.fill_(0.0 if bias else 1.0)
            elif bias:
                p.zero_()
            else:
                p.normal_(0.0, 0.02, generator=generator)


def percentile(sorted_values, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def check_parameters(workload, parameters, expected):
    """Not an assert statement: python -O must not skip the proof that both tools train the same model."""
    if parameters != expected:
        raise AssertionError(f"{workload}: {parameters:,} parameters, scalebench has {expected:,}")


def log(message):
    print(message, file=sys.stderr, flush=True)


def describe(a, torch):
    """What both modes share: model class, shape, analytic counts and units per step: the batch's samples, or for
    the translation workloads (counted: True) an estimate that the synthesized batch's own count replaces."""
    info = WORKLOADS[a.workload]
    if a.workload in cnn.CNN_WORKLOADS:
        return dict(info=info, expected=info["parameters"], units_per_step=float(a.batch),
                    build=lambda: cnn.build(torch, a.workload), flops=cnn.train_flops_per_step(a.workload, a.batch))
    if a.workload == "maskrcnn":  # scripts/pytorch_maskrcnn_model.py: torchvision's MaskRCNN
        return dict(info=info, expected=info["parameters"], units_per_step=float(a.batch),
                    build=lambda: maskrcnn.build(torch), flops=maskrcnn.train_flops_per_step(a.batch))
    if a.workload == "conv_seq2seq":  # scripts/pytorch_convs2s_model.py
        s = convs2s.SHAPES[a.scale]
        expected = convs2s.expected_parameters(s)
        if a.scale == "full" and expected != info["parameters"]:
            raise AssertionError(f"conv_seq2seq: analytic count {expected} != scalebench's {info['parameters']}")
        model_class = convs2s.build_model_class(torch)
        return dict(info=info, s=s, build=lambda: model_class(s), expected=expected,
                    units_per_step=convs2s.estimated_units_per_step(s, a.batch, a.scale), counted=True,
                    flops=convs2s.train_matmul_flops(s, a.batch))
    if a.workload == "pix2pixhd":  # scripts/pytorch_pix2pixhd_model.py
        s = p2p.SHAPES[a.scale]
        expected = p2p.expected_parameters(s)
        if a.scale == "full" and expected != info["parameters"]:
            raise AssertionError(f"pix2pixhd: analytic count {expected} != scalebench's {info['parameters']}")
        model_class = p2p.build_model_class(torch)
        return dict(info=info, s=s, build=lambda: model_class(s), expected=expected, units_per_step=float(a.batch),
                    flops=p2p.train_matmul_flops(s, a.batch))
    if a.workload == "stylegan":  # scripts/pytorch_stylegan_model.py
        s = sg.SHAPES[a.scale]
        expected = sum(sg.expected_parameters(s))
        if a.scale == "full" and expected != info["parameters"]:
            raise AssertionError(f"stylegan: analytic count {expected} != scalebench's {info['parameters']}")
        model_class = sg.build_model_class(torch, a.stylegan_blur, a.stylegan_conv)
        return dict(info=info, s=s, build=lambda: model_class(s), expected=expected, units_per_step=float(a.batch),
                    flops=sg.train_matmul_flops(s, a.batch))
    if a.workload == "unsupmt":  # scripts/pytorch_unsupmt_model.py
        s = unsupmt.SHAPES[a.scale]
        expected = unsupmt.expected_parameters(s)
        if a.scale == "full" and expected != info["parameters"]:
            raise AssertionError(f"unsupmt: analytic count {expected} != scalebench's {info['parameters']}")
        model_class = unsupmt.build_model_class(torch)
        return dict(info=info, s=s, build=lambda: model_class(s), expected=expected,
                    units_per_step=unsupmt.estimated_units_per_step(s, a.batch), counted=True,
                    flops=unsupmt.train_matmul_flops(s, a.batch))
    TransformerBig, BertForPreTraining, BertLayer = build_modules(torch)
    if a.workload in ("bert_finetune", "mt_dnn"):  # scripts/pytorch_bert_tasks_model.py
        s = (bert_tasks.FINETUNE if a.workload == "bert_finetune" else bert_tasks.MT_DNN)[a.scale]
        expected = bert_tasks.expected_parameters(a.workload, s)
        if a.scale == "full" and expected != info["parameters"]:
            raise AssertionError(f"{a.workload}: analytic count {expected} != scalebench's {info['parameters']}")
        question_answering, mt_dnn = bert_tasks.build_model_classes(torch, BertLayer)
        model_class = question_answering if a.workload == "bert_finetune" else mt_dnn
        return dict(info=info, s=s, build=lambda: model_class(s), expected=expected, units_per_step=float(a.batch),
                    flops=bert_tasks.train_matmul_flops(a.workload, s, a.batch))
    s = (TRANSFORMER_SHAPES if a.workload == "transformer_big" else BERT_SHAPES)[a.scale]
    model_class = TransformerBig if a.workload == "transformer_big" else BertForPreTraining
    expected = expected_parameters(a.workload, s)
    if a.scale == "full" and expected != info["parameters"]:
        raise AssertionError(f"{a.workload}: analytic count {expected} != scalebench's {info['parameters']}")
    # transformer_big's estimate (the credit is the batch's own count: synthesize), bert_base's sequences.
    units_per_step = float(a.batch) * ((TARGET_MEAN_LENGTH if a.scale == "full" else s["time"] - 1)
                                       if a.workload == "transformer_big" else 1)
    return dict(info=info, s=s, build=lambda: model_class(s), expected=expected, units_per_step=units_per_step,
                counted=a.workload == "transformer_big", flops=train_matmul_flops(a.workload, s, a.batch))


def build_model(torch, a, w, device):
    """The model on `device`, weights from seed + 1000 (identical on every rank), parameter count checked.
    The convolutional models keep their library's initialisation and move to channels_last (NHWC); maskrcnn starts
    from scalebench's weights (torchvision's diverges from random weights)."""
    torch.manual_seed(a.seed + 1000)
    with device:  # built in place: no 0.8 GB host copy and host-side default init to wait for
        model = w["build"]()
    if a.workload in cnn.CNN_WORKLOADS:
        model = model.to(device, memory_format=torch.channels_last)
    elif a.workload == "maskrcnn":
        maskrcnn.initialise_as_scalebench(torch, model, a.seed + 1000)
    elif a.workload == "stylegan":  # equalized learning rate: N(0, 1) weights scaled at run time, as scalebench's
        sg.initialise(torch, model, a.seed + 1000)
        if a.stylegan_layout == "channels_last":
            model = model.to(memory_format=torch.channels_last)
    else:
        initialise(torch, model, a.seed + 1000)  # pix2pixHD's weights_init: conv weights N(0, 0.02) too
        if a.workload == "pix2pixhd":
            model = model.to(memory_format=torch.channels_last)
    check_parameters(a.workload, count_trained(a.workload, model), w["expected"])
    return model


def count_trained(workload, model):
    """The parameters scalebench counts: maskrcnn's frozen conv1 and layer1 (requires_grad False) are inputs there."""
    if workload == "maskrcnn":
        return maskrcnn.trainable_parameters(model)
    return sum(p.numel() for p in model.parameters())


def synthesize(torch, a, w, seed, device):
    """One fixed batch on `device`, and its credited count where that is not the batch (the non-padding target
    tokens of a translation batch, unsupmt's target words of the four sub-steps: scalebench's count, the
    same lengths drawn) or None."""
    if a.workload == "maskrcnn":
        return maskrcnn.synthesize(torch, a.batch, seed, device), None
    if a.workload in cnn.CNN_WORKLOADS:
        return cnn.synthesize(torch, a.workload, a.batch, seed, device), None
    if a.workload == "transformer_big":
        data, target_tokens = synthesize_transformer(torch, w["s"], a.batch, seed)
    elif a.workload == "conv_seq2seq":
        data, target_tokens = convs2s.synthesize(torch, w["s"], a.batch, seed)
    elif a.workload == "pix2pixhd":
        return p2p.synthesize(torch, w["s"], a.batch, seed, device), None
    elif a.workload == "stylegan":
        return sg.synthesize(torch, w["s"], a.batch, seed, device, a.stylegan_layout == "channels_last"), None
    elif a.workload == "unsupmt":
        data, target_tokens = unsupmt.synthesize(torch, w["s"], a.batch, seed)
    elif a.workload in ("bert_finetune", "mt_dnn"):
        data, target_tokens = bert_tasks.synthesize(torch, a.workload, w["s"], a.batch, seed), None
    else:
        data, target_tokens = synthesize_bert(torch, w["s"], a.batch, seed), None
    return {k: v.to(device) for k, v in data.items()}, target_tokens


def make_optimizer(torch, a, model, cuda):
    """The reference's optimizer over the model's parameters; for pix2pixhd the pair (optimizer_G, optimizer_D)."""
    if a.workload == "pix2pixhd":
        return p2p.make_optimizers(torch, model, a.lr, cuda)
    if a.workload == "stylegan":  # G_opt and D_opt: Adam(0.003, betas (0, 0.99), eps 1e-8)
        return sg.make_optimizers(torch, model, a.lr, cuda)
    if a.workload == "maskrcnn":  # over the trainable parameters only (conv1 and layer1 are frozen)
        return maskrcnn.make_optimizer(torch, model.parameters(), a.lr, cuda)
    if a.workload in cnn.CNN_WORKLOADS:
        return cnn.make_optimizer(torch, a.workload, model.parameters(), a.lr, cuda)
    if a.workload == "unsupmt":  # XLM's Adam (beta2 0.98) over encoder and decoder; the frozen unused bias left out
        return torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=a.lr, fused=cuda,
                                **unsupmt.ADAM)
    return torch.optim.AdamW(model.parameters(), lr=a.lr, fused=cuda, **ADAMW)


def zero_redundancy(torch, optimizer):
    """PyTorch's ZeRO stage 1 over `optimizer`: the same class, settings and parameter groups, each rank keeping the
    state for, and updating, its share of the parameters, which it then broadcasts (scalebench --strategy zero1)."""
    import inspect
    from torch.distributed.optim import ZeroRedundancyOptimizer
    # defaults may hold settings the constructor derives rather than takes (AdamW's decoupled_weight_decay).
    accepted = inspect.signature(type(optimizer).__init__).parameters
    settings = {k: v for k, v in optimizer.defaults.items() if k in accepted}
    groups = [{k: v for k, v in group.items() if k == "params" or k in accepted} for group in optimizer.param_groups]
    return ZeroRedundancyOptimizer(groups, optimizer_class=type(optimizer), **settings)


def fsdp2_units(torch, model, unit_bytes):
    """The modules FSDP2 shards as units of their own, children before parents: every element of a ModuleList (a
    transformer's layers, the usual FSDP2 unit) that holds parameters; in a model without one, every module whose
    parameters not yet in a unit reach `unit_bytes` (scalebench's bucket size), post-order."""
    listed = [m for l in model.modules() if isinstance(l, torch.nn.ModuleList) for m in l
              if any(True for _ in m.parameters())]
    if listed:
        return listed
    units, claimed = [], set()

    def visit(module):
        for child in module.children():
            visit(child)
        free = [p for p in module.parameters() if id(p) not in claimed]
        if module is not model and sum(p.numel() * p.element_size() for p in free) >= unit_bytes:
            units.append(module)
            claimed.update(id(p) for p in free)
    visit(model)
    return units


def fully_shard_model(torch, model, mode, unit_bytes):
    """PyTorch FSDP2 over `model` in place: each unit (fsdp2_units) sharded, then the root for the rest. zero2:
    reshard_after_forward=False (the gathered parameters stay until the backward pass is done); zero3: True."""
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:  # torch 2.4, 2.5
        from torch.distributed._composable.fsdp import fully_shard
    reshard = mode == "zero3"
    for unit in fsdp2_units(torch, model, unit_bytes):
        fully_shard(unit, reshard_after_forward=reshard)
    fully_shard(model, reshard_after_forward=reshard)
    return model


def full_parameters(model):
    """The parameters as whole tensors: FSDP2's are DTensors holding a shard each (full_tensor gathers them)."""
    return [p.full_tensor() if hasattr(p, "full_tensor") else p for p in model.parameters()]


def zero_grad(optimizer):
    for o in optimizer if isinstance(optimizer, tuple) else (optimizer,):
        o.zero_grad(set_to_none=True)


def make_step(torch, a, forward, optimizer, data, device, compiled=True):
    """One training step of `forward` (the model, its DDP wrapper, or either compiled; `compiled` False: the eager
    model even under --compile, the fallback when compiling fails); returns the loss.
    Under reduce-overhead the compiled graphs replay as CUDA graphs whose outputs the next replay overwrites, so
    each step is marked as a new iteration (as PyTorch asks of a training loop) and its loss copied out: one
    4-byte copy, where the eager and default-compiled steps keep the loss tensor itself."""
    step = plain_step(torch, a, forward, optimizer, data, device)
    if not (compiled and getattr(a, "compile", False) and getattr(a, "compile_mode", "default") == "reduce-overhead"):
        return step

    def replay_safe_step():
        torch.compiler.cudagraph_mark_step_begin()
        return step().clone()
    return replay_safe_step


def plain_step(torch, a, forward, optimizer, data, device):
    """make_step's step, before reduce-overhead's marking."""
    autocast = lambda: torch.autocast(device.type, dtype=torch.bfloat16, enabled=a.precision == "bf16")
    if a.workload == "pix2pixhd":
        return p2p.make_step(forward, optimizer, data, autocast)
    if a.workload == "stylegan":  # one backward over loss_D + loss_G, both Adam steps, then the EMA of G
        plain = getattr(forward, "_orig_mod", forward)
        return sg.make_step(torch, plain, forward, optimizer, data, autocast)
    if a.workload == "unsupmt":  # four sub-steps, each its own backward and optimizer step
        plain = getattr(getattr(forward, "_orig_mod", forward), "module", forward)
        plain = getattr(plain, "_orig_mod", plain)
        return lambda: unsupmt.iteration(forward, plain, optimizer, data, autocast)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = forward(**data)
        loss.backward()
        optimizer.step()
        return loss.detach()
    return step


def time_steps(torch, a, step, cuda, say=log):
    """`a.warmup` untimed steps, then `a.steps` timed ones: CUDA events around each step on a device (no host
    sync or print inside), host clock on the CPU. Returns (losses of every step, ms per timed step)."""
    losses, step_ms = [], []
    start_time = time.perf_counter()
    for _ in range(a.warmup):
        losses.append(step())
    if cuda:
        torch.cuda.synchronize()
    say(f"# warm-up took {time.perf_counter() - start_time:.1f} s")
    if cuda:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(a.steps)]
        for begin, end in events:  # no host sync or print inside: the queue stays full
            begin.record()
            losses.append(step())
            end.record()
        torch.cuda.synchronize()
        step_ms = [begin.elapsed_time(end) for begin, end in events]
    else:
        for _ in range(a.steps):
            began = time.perf_counter()
            losses.append(step())
            step_ms.append((time.perf_counter() - began) * 1e3)
    losses = [float(x) for x in losses]
    if not all(math.isfinite(x) for x in losses):
        raise RuntimeError(f"{a.workload}: the loss is not finite: {losses}")
    return losses, step_ms


def write_profile(torch, step, path, cuda):
    """One more step under torch.profiler; its ops, most CUDA (or CPU) time first, written to `path`."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities, record_shapes=True) as profiler:
        step()
        if cuda:
            torch.cuda.synchronize()
    sort_by = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    with open(path, "w") as out:
        out.write(profiler.key_averages().table(sort_by=sort_by, row_limit=40, max_name_column_width=60) + "\n")
        out.write(profiler.key_averages(group_by_input_shape=True).table(sort_by=sort_by, row_limit=25,
                                                                        max_name_column_width=60) + "\n")
    log(f"# profile of one step written to {path}")


def run(a, torch):
    w = describe(a, torch)
    info, s, flops, units_per_step = w["info"], w.get("s"), w["flops"], w["units_per_step"]
    result = dict(framework="pytorch", torch=torch.__version__, workload=a.workload, scale=a.scale, batch=a.batch,
                  precision=a.precision, compile=a.compile, device=a.device, unit=info["unit"], status="ok")

    if a.count_only:
        with torch.device("meta"):
            model = w["build"]()
        parameters = count_trained(a.workload, model)  # a tied weight is counted once
        check_parameters(a.workload, parameters, w["expected"])
        # The credited units of the batch a run would train on (a translation batch is drawn on the host: cheap).
        _, counted = synthesize(torch, a, w, a.seed, torch.device("cpu")) if w.get("counted") else (None, None)
        result.update(parameters=parameters, train_flops_per_step=flops,
                      units_per_step=float(counted) if counted is not None else units_per_step)
        return result

    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        log("pytorch_reference.py: --device cuda but torch.cuda.is_available() is False")
        sys.exit(3)
    device = torch.device(a.device)
    # fp32 is IEEE fp32 GEMMs (scalebench's fp32), tf32 its --precision tf32; under bf16 autocast this only
    # governs the few fp32 matmuls left outside autocast.
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
    set_cudnn_benchmark(torch, a.workload)
    torch.manual_seed(a.seed)  # dropout masks

    model = build_model(torch, a, w, device)
    parameters = count_trained(a.workload, model)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    data, counted = synthesize(torch, a, w, a.seed, device)
    if counted is not None:  # credited as the batch holds: its non-padding target tokens, scalebench's count
        units_per_step = float(counted)
    optimizer = make_optimizer(torch, a, model, cuda)
    forward = compile_for(torch, a.workload, model, a.compile_mode) if a.compile else model
    model.train()

    log(f"# {a.workload} ({a.scale}) batch {a.batch}, {parameters:,} parameters, {a.precision}, "
        f"compile {a.compile}, {a.device}; {a.warmup} warm-up + {a.steps} timed steps")
    step = make_step(torch, a, forward, optimizer, data, device)
    first_losses, compile_error = [], None
    if a.compile:
        step, first_losses, compile_error = compiled_or_eager(
            torch, step, lambda: eager_step_of(torch, a, model, optimizer, data, device), optimizer, cuda)
    losses, step_ms = time_steps(torch, a, step, cuda)
    losses = first_losses + losses
    if a.profile:
        write_profile(torch, step, a.profile, cuda)

    ordered = sorted(step_ms)
    median = percentile(ordered, 0.5)
    peak = gpu_peaks.peak_tflops(torch.cuda.get_device_name(), a.precision) if cuda else None
    tflops = flops / (median / 1e3) / 1e12
    result.update(
        compiled=a.compile and compile_error is None, compile_error=compile_error,
        compile_mode=a.compile_mode if a.compile else None,
        compile_scope=(None if not a.compile or compile_error is not None else
                       "regional: " + REGIONAL_COMPILE[a.workload][1] if a.workload in REGIONAL_COMPILE else
                       "the whole model"),
        cudnn_benchmark=torch.backends.cudnn.benchmark if cuda else None,
        steps=a.steps, warmup=a.warmup, lr=a.lr, parameters=parameters,
        step_ms_median=median, step_ms_p10=percentile(ordered, 0.1), step_ms_p90=percentile(ordered, 0.9),
        step_ms_min=ordered[0], step_ms_max=ordered[-1],
        units_per_step=units_per_step, units_per_s=units_per_step / (median / 1e3),
        train_flops_per_step=flops,
        flops_formula=("3 x shared/WORKLOADS.md's measured forward multiply-adds per image, 2 FLOPs each"
                       if a.workload in cnn.CNN_WORKLOADS or a.workload == "maskrcnn" else
                       "the convolutions' forward, input-gradient and weight-gradient passes the step computes, "
                       "2 per multiply-add; the same count as `scalebench list`" if a.workload == "pix2pixhd" else
                       "the passes of G and D the step computes (R1's input gradient and its double backward "
                       "included), 2 per multiply-add; the same count as `scalebench list`" if a.workload == "stylegan" else
                       "3 x the forward matrix products of workloads/*.cpp's forward_flops_per_unit (an estimate of "
                       "`scalebench list`'s count)" if a.workload in ("bert_finetune", "mt_dnn") else
                       "analytic matmul FLOPs, 3 x forward GEMMs (projections, QK^T, PV, vocabulary) on padded "
                       "shapes, 2 per multiply-add; the same count as `scalebench list`"),
        tflops_per_s=tflops, mfu=tflops / peak if peak else None, mfu_peak_tflops=peak,
        mfu_peak_source="src/plan/data/gpus.json (scripts/gpu_peaks.py)", loss_first=losses[0], loss_last=losses[-1],
        peak_allocated_bytes=torch.cuda.max_memory_allocated() if cuda else None,
        peak_reserved_bytes=torch.cuda.max_memory_reserved() if cuda else None,
        gpu=torch.cuda.get_device_name() if cuda else None)
    log(f"# median {median:.2f} ms/step, {result['units_per_s']:,.0f} {info['unit']}/s, "
        f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    return result


def set_cudnn_benchmark(torch, workload):
    """cuDNN's algorithm search where every step has the same shapes, not where they change (CUDNN_BENCHMARK_OFF)."""
    torch.backends.cudnn.benchmark = workload not in CUDNN_BENCHMARK_OFF
    if workload in CUDNN_BENCHMARK_OFF:
        log(f"# cudnn.benchmark off: {CUDNN_BENCHMARK_OFF[workload]}")


def configure_compile_for(torch, workload):
    """What torch.compile needs to compile a workload at all, set as its own error messages advise (the best
    PyTorch, not the easiest). stylegan: R1's penalty differentiates D's input gradient (create_graph=True), which
    AOTAutograd refuses while it donates the backward's buffers; and G's and D's blocks are one module class at nine
    resolutions, so Dynamo's default limit of 8 recompilations leaves the last ones eager."""
    import torch._dynamo.config
    if workload == "stylegan":
        import torch._functorch.config
        torch._functorch.config.donated_buffer = False
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 32)
        log("# compile settings for stylegan: donated_buffer off (R1's double backward), recompile_limit 32")
    if workload in REGIONAL_COMPILE:
        # Every region shares nn.Module._call_impl's code object, so each (cell class, input shape) is one entry of
        # one cache: more than Dynamo's default 8.
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
        if workload == "nasnet_large":  # every cell's shapes are fixed: specialise them, no dynamic-shape kernels
            torch._dynamo.config.automatic_dynamic_shapes = False


# Workloads compiled region by region (PyTorch's "regional compilation": torch.compile of each repeated block, the
# code shared by blocks of one class and shape) rather than as one graph, and why. Regions are matched by the last
# component of the module's name, so a DDP wrapper (module.) changes nothing.
REGIONAL_COMPILE = {
    # One graph of NASNet-A Large (18 normal and 2 reduction cells, ~1,000 convolutions) compiled for over 228 s on
    # the H200 without finishing (docs/PERFORMANCE.md, 2026-12-02); per cell, the 20 cells are ~10 compilations.
    "nasnet_large": (r"(cell_stem_\d|cell_\d+|reduction_cell_\d)",
                     "each cell (stem, normal, reduction); the stem convolution and classifier eager"),
    # torchvision's detection code breaks the graph at every Tensor.item() and its proposal and target sampling
    # changes shapes each step; the dense parts are compiled: the ResNet-50-FPN backbone, the RPN head, the box and
    # mask heads and predictors. Anchors, proposals, NMS, RoIAlign and target sampling stay eager.
    "maskrcnn": (r"(backbone|rpn\.head|box_head|box_predictor|mask_head|mask_predictor)",
                 "the backbone, RPN head, box and mask heads and predictors; the detection logic eager"),
}


def compile_regions(torch, workload, model, mode=None):
    """nn.Module.compile() (in place, in `mode`) of each region REGIONAL_COMPILE names; returns how many."""
    import re
    pattern = re.compile(r"(^|\.)" + REGIONAL_COMPILE[workload][0] + "$")
    regions = [module for name, module in model.named_modules() if pattern.search(name)]
    if not regions:
        raise ValueError(f"{workload}: no module matches the regional-compile pattern")
    for module in regions:
        module.compile(mode=mode)
    return len(regions)


def uncompile_regions(model):
    """Undoes compile_regions: every module runs its eager forward again (the fall-back to eager)."""
    for module in model.modules():
        if getattr(module, "_compiled_call_impl", None) is not None:
            module._compiled_call_impl = None


def compile_for(torch, workload, model, mode="default"):
    """torch.compile (in `mode`: "default" or "reduce-overhead") of a workload's model, with what that workload
    needs to compile at all: every compiled run (solo, DDP, scripts/pytorch_memory.py's fits) goes through here.
    Returns what to call: the compiled model, or for REGIONAL_COMPILE's workloads the model itself with its regions
    compiled in place."""
    configure_compile_for(torch, workload)
    torch_mode = None if mode == "default" else mode
    if workload in REGIONAL_COMPILE:
        count = compile_regions(torch, workload, model, torch_mode)
        log(f"# regional compile for {workload} ({mode} mode): {count} modules, {REGIONAL_COMPILE[workload][1]}")
        return model
    return torch.compile(model, mode=torch_mode)


def eager_step_of(torch, a, model, optimizer, data, device):
    """The eager step of a model that compile_for may have compiled region by region in place."""
    uncompile_regions(model)
    return make_step(torch, a, model, optimizer, data, device, compiled=False)


def compiled_or_eager(torch, compiled_step, make_eager_step, optimizer, cuda):
    """The first step of a torch.compile'd model (where compiling happens). Where it fails (an op or a pattern
    dynamo or inductor cannot take, such as a double backward), the reason is printed and the run goes on in
    eager. Returns (the step to time, the first step's loss, None or the reason). Out of memory is not a
    compile failure: it propagates."""
    try:
        losses = [float(compiled_step())]
        if cuda:
            torch.cuda.synchronize()
        return compiled_step, losses, None
    except Exception as error:  # dynamo and inductor raise many kinds; each is a reason to fall back
        if is_out_of_memory(torch, error):
            raise
        reason = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"[:300]
        log(f"# torch.compile failed, falling back to eager: {reason}")
        torch._dynamo.reset()
        zero_grad(optimizer)
        return make_eager_step(), [], reason


def is_out_of_memory(torch, error):
    # cuBLAS and cuDNN report a failed allocation as a plain RuntimeError.
    return isinstance(error, torch.cuda.OutOfMemoryError) or "out of memory" in str(error).lower()


def run_max_batch(a, torch):
    """The largest batch whose 2 training steps (forward, backward, fused AdamW) fit: doubling from --batch until
    one runs out of memory, then bisecting. The model and the optimizer are built once; each attempt's data and
    activations are freed, and the caching allocator emptied, before the next."""
    w = describe(a, torch)
    cuda, device = True, torch.device("cuda")
    torch.manual_seed(a.seed)
    model = build_model(torch, a, w, device)
    optimizer = make_optimizer(torch, a, model, cuda)
    model.train()
    attempts, trained, failed, batch = [], 0, None, a.batch

    def attempt(b):
        a.batch = b
        data = None
        try:
            data, _ = synthesize(torch, a, w, a.seed, device)
            step = make_step(torch, a, model, optimizer, data, device)
            for _ in range(2):
                loss = step()
            torch.cuda.synchronize()
            return math.isfinite(float(loss)), ""
        except (torch.cuda.OutOfMemoryError, RuntimeError) as error:
            if not is_out_of_memory(torch, error):
                raise
            return False, str(error).splitlines()[0]
        finally:
            del data
            zero_grad(optimizer)
            gc.collect()
            torch.cuda.empty_cache()

    while failed is None or failed - trained > 1:
        ok, error = attempt(batch)
        attempts.append(dict(batch=batch, trained=ok, error=error))
        log(f"# batch {batch}: {'trained' if ok else 'out of memory'}")
        if ok:
            trained = batch
            batch = batch * 2 if failed is None else (trained + failed) // 2
        else:
            failed = batch
            batch = (trained + failed) // 2 if trained else max(1, batch // 2)
            if failed == 1:
                break
    return dict(framework="pytorch", torch=torch.__version__, mode="max_batch", workload=a.workload,
                precision=a.precision, unit=w["info"]["unit"], max_batch=trained, first_failing_batch=failed,
                attempts=attempts, gpu=torch.cuda.get_device_name(),
                allocator=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default"), status="ok")


def nccl_version(torch):
    """torch.cuda.nccl.version() is a (major, minor, patch) tuple in recent torch, NCCL_VERSION_CODE before."""
    v = torch.cuda.nccl.version()
    if isinstance(v, int):
        v = (v // 10000, v // 100 % 100, v % 100) if v >= 10000 else (v // 1000, v // 100 % 10, v % 100)
    return ".".join(str(x) for x in v)


def run_ddp(a, torch):
    """Per rank: `solo` (the single-GPU step, every rank at once, no communication), then `dp` (the same model
    re-initialised identically under DistributedDataParallel). Data and dropout use seed + rank, shared by both
    phases, so a rank times the same batch alone and in DP. Returns rank 0's result, None on the others."""
    w = describe(a, torch)
    dist, cuda, rank = torch.distributed, True, a.rank
    say = log if rank == 0 else (lambda message: None)  # one progress stream, rank 0's
    if not torch.cuda.is_available() or a.local_rank >= torch.cuda.device_count():
        log(f"pytorch_reference.py: rank {rank}: local rank {a.local_rank} but "
            f"{torch.cuda.device_count() if torch.cuda.is_available() else 0} visible CUDA devices")
        sys.exit(3)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", DDP_MASTER_PORT)
    torch.cuda.set_device(a.local_rank)
    device = torch.device("cuda", a.local_rank)
    dist.init_process_group("nccl", rank=rank, world_size=a.world_size)
    barrier = lambda: dist.barrier(device_ids=[a.local_rank])  # phases start together on every rank
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
    set_cudnn_benchmark(torch, a.workload)
    data, target_tokens = synthesize(torch, a, w, a.seed + rank, device)
    say(f"# {a.workload} ({a.scale}) batch {a.batch} per rank x {a.world_size} ranks, {a.precision}, "
        f"compile {a.compile}, bucket {a.bucket_mb:g} MiB; {a.warmup} warm-up + {a.steps} timed steps per phase")

    def phase(name, wrap, shard_optimizer=False):
        """Builds, times and frees one model; returns this rank's losses, step ms, peak allocated bytes and a
        parameter checksum (after training: equal on every rank under DDP, different solo)."""
        torch.manual_seed(a.seed + rank)  # dropout masks: the same stream in both phases
        model = build_model(torch, a, w, device)
        trained = wrap(model)
        optimizer = make_optimizer(torch, a, trained, cuda)
        if shard_optimizer:
            optimizer = zero_redundancy(torch, optimizer)
        forward = compile_for(torch, a.workload, trained, a.compile_mode) if a.compile else trained
        trained.train()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        barrier()
        say(f"# {name}")
        losses, step_ms = time_steps(torch, a, make_step(torch, a, forward, optimizer, data, device), cuda, say)
        peak = torch.cuda.max_memory_allocated()
        with torch.no_grad():
            checksum = torch.stack([p.double().sum() for p in full_parameters(model)]).sum().item()
        del model, trained, optimizer, forward  # before the next phase's model: device memory is not doubled
        if a.compile:
            torch._dynamo.reset()  # compiled graphs hold the freed model's parameters
        gc.collect()
        torch.cuda.empty_cache()
        return losses, step_ms, peak, checksum

    solo_losses, solo_ms, solo_peak, _ = phase("solo: every rank alone at once", lambda model: model)
    # broadcast_buffers=False: the one buffer (transformer_big's sinusoid table) is a constant, identical on
    # every rank, so DDP's default per-forward broadcast would time a collective scalebench does not do
    # (fairseq's DDP wrapper turns it off too). DDP still broadcasts rank 0's parameters once, here.
    ddp = lambda module: torch.nn.parallel.DistributedDataParallel(
        module, device_ids=[a.local_rank], bucket_cap_mb=a.bucket_mb, gradient_as_bucket_view=True,
        broadcast_buffers=False)

    def wrap_for_dp(model):
        if a.workload == "stylegan":  # G and D each under DDP: two reductions; Gs stays local
            model.G, model.D = ddp(model.G), ddp(model.D)
            return model
        if a.workload != "pix2pixhd":
            return ddp(model)
        # Two networks, two optimizers, two reductions: G and D each under DDP (the frozen VGG needs none).
        model.netG, model.netD = ddp(model.netG), ddp(model.netD)
        return model
    unit_bytes = (a.bucket_mb if a.bucket_mb is not None else DDP_BUCKET_MB) * 2**20
    if a.fsdp2:
        dp_losses, dp_ms, dp_peak, dp_checksum = phase(
            f"dp: FSDP2 fully_shard ({a.fsdp2}, reshard_after_forward={a.fsdp2 == 'zero3'})",
            lambda model: fully_shard_model(torch, model, a.fsdp2, unit_bytes), False)
    else:
        dp_losses, dp_ms, dp_peak, dp_checksum = phase(
            "dp: DistributedDataParallel" + (", ZeroRedundancyOptimizer" if a.zero1 else ""), wrap_for_dp, a.zero1)

    mine = dict(solo_ms=solo_ms, dp_ms=dp_ms, solo_peak=solo_peak, dp_peak=dp_peak, dp_checksum=dp_checksum)
    ranks = [None] * a.world_size
    dist.all_gather_object(ranks, mine)
    dist.destroy_process_group()
    if rank != 0:
        return None

    # NCCL's all-reduce hands every rank the same bits, so identical replicas stay identical; a difference
    # means the gradients were not averaged and the timing is not of data-parallel training.
    if len({r["dp_checksum"] for r in ranks}) != 1:
        raise RuntimeError(f"{a.workload}: DDP replicas diverged: parameter sums "
                           f"{[r['dp_checksum'] for r in ranks]}")
    solo_medians = [percentile(sorted(r["solo_ms"]), 0.5) for r in ranks]
    dp_medians = [percentile(sorted(r["dp_ms"]), 0.5) for r in ranks]
    # A DP step ends when its slowest rank does: the elementwise max over ranks of the per-step times.
    dp_slowest = sorted(max(step) for step in zip(*(r["dp_ms"] for r in ranks)))
    solo_step_ms, dp_step_ms = percentile(sorted(solo_medians), 0.5), percentile(dp_slowest, 0.5)
    units = float(target_tokens) if target_tokens is not None else w["units_per_step"]  # rank 0's batch
    solo_rate = units / (solo_step_ms / 1e3)
    dp_rate = a.world_size * units / (dp_step_ms / 1e3)
    result = dict(
        framework="pytorch", torch=torch.__version__, nccl=nccl_version(torch), workload=a.workload, mode="ddp",
        strategy=a.fsdp2 or ("zero1" if a.zero1 else "ddp"), dp_wrapper="fsdp2" if a.fsdp2 else "ddp",
        scale=a.scale, nranks=a.world_size, batch_per_rank=a.batch, precision=a.precision, compile=a.compile,
        unit=w["info"]["unit"], status="ok", steps=a.steps, warmup=a.warmup, lr=a.lr, bucket_mb=a.bucket_mb,
        parameters=w["expected"], units_per_step_per_rank=units,
        solo_step_ms=solo_step_ms, solo_step_ms_per_rank=solo_medians, solo_units_per_s_per_gpu=solo_rate,
        dp_step_ms=dp_step_ms, dp_step_ms_p10=percentile(dp_slowest, 0.1), dp_step_ms_p90=percentile(dp_slowest, 0.9),
        dp_step_ms_per_rank=dp_medians, dp_units_per_s_total=dp_rate,
        scaling_efficiency=dp_rate / (a.world_size * solo_rate),
        dp_loss_first=dp_losses[0], dp_loss_last=dp_losses[-1],
        solo_peak_allocated_bytes=max(r["solo_peak"] for r in ranks),
        dp_peak_allocated_bytes=max(r["dp_peak"] for r in ranks),
        gpu=torch.cuda.get_device_name(), master_port=os.environ["MASTER_PORT"],
        nccl_p2p_disable=os.environ.get("NCCL_P2P_DISABLE"), nccl_shm_disable=os.environ.get("NCCL_SHM_DISABLE"))
    if target_tokens is not None:
        result["target_tokens_per_step_rank0"] = target_tokens
    say(f"# solo {solo_step_ms:.2f} ms/step (median GPU), dp {dp_step_ms:.2f} ms/step (slowest rank), "
        f"{dp_rate:,.0f} {w['info']['unit']}/s over {a.world_size} GPUs, "
        f"scaling efficiency {result['scaling_efficiency']:.3f}")
    return result


def main(argv):
    a = parse_arguments(argv)
    try:
        import torch
    except ImportError:
        log("pytorch_reference.py: torch is not installed")
        return 3
    try:
        result = run_ddp(a, torch) if a.ddp else run_max_batch(a, torch) if a.max_batch else run(a, torch)
    except (torch.cuda.OutOfMemoryError, RuntimeError) as error:
        if not is_out_of_memory(torch, error):
            raise
        message = str(error).splitlines()[0]
        log(f"pytorch_reference.py: {f'rank {a.rank}: ' if a.ddp else ''}out of device memory: {message}")
        # Still one JSON line, so a GPU check script can put the failure beside scalebench's result. Under
        # --ddp the exit status ends the job (mpirun and torchrun stop the other ranks).
        if a.rank == 0:
            failure = dict(framework="pytorch", torch=torch.__version__, workload=a.workload, batch=a.batch,
                           precision=a.precision, compile=a.compile, status="out_of_memory", error=message)
            if a.ddp:
                failure.update(mode="ddp", nranks=a.world_size)
            print(json.dumps(failure), flush=True)
        return 3
    if result is not None:
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
