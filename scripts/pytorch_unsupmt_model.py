"""PyTorch counterpart of scalebench's unsupmt (workloads/unsupmt.cpp), used by pytorch_reference.py: XLM's
TransformerModel pair for unsupervised MT (facebookresearch/XLM xlm/model/transformer.py: learned positions and
language embeddings, layer_norm_emb and post-LN with eps 1e-12, GELU FFN, the decoder's PredLayer tied to its
embeddings) and one training iteration of train.py's four sub-steps, each with its own backward and optimizer
step (under DDP: its own gradient all-reduce): AE(en), AE(de) on noised sentences, then BT(en-de-en) and
BT(de-en-de), each a greedy generation without gradients on the device with a key/value cache (as XLM's
generate with its cache, without its per-token host check for finished sentences, which scalebench also
omits: every sentence ends at its source's length) followed by training enc(generated) -> dec(original).
scalebench's shapes, synthetic sentences and noise. Imports nothing at module level; torch is passed in."""
import math
import random

import scalebench_random

EOS, PAD, MASK, FIRST_WORD = 1, 2, 5, 14  # XLM's dictionary (<s> 0, </s> 1, <pad> 2, <unk> 3, <special1> mask)
WORD_SHUFFLE, WORD_DROPOUT, WORD_BLANK = 3.0, 0.1, 0.1
PARAMETERS = 310_047_094
SHAPES = {"full": dict(vocab=64699, model=1024, heads=8, ffn=4096, layers=6, time=29, positions=512),
          "tiny": dict(vocab=64, model=32, heads=4, ffn=128, layers=2, time=8, positions=16)}
ADAM = dict(betas=(0.9, 0.98), eps=1e-8)  # XLM adam_inverse_sqrt (lr 1e-4 peak, --lr's default; no schedule)


def expected_parameters(s):
    """shared/WORKLOADS.md §9's count for any shape: encoder (with its unused PredLayer bias) + decoder."""
    d, f, v = s["model"], s["ffn"], s["vocab"]
    attention, ffn, norm = 4 * (d * d + d), d * f + f + f * d + d, 2 * d
    embeddings = (v + s["positions"] + 2) * d + norm
    encoder = embeddings + s["layers"] * (attention + ffn + 2 * norm) + v
    decoder = embeddings + s["layers"] * (2 * attention + ffn + 3 * norm) + v
    return encoder + decoder


def estimated_units_per_step(s, batch):
    """build()'s estimate: (T - 1) target words per sentence and sub-step, four sub-steps (the credit itself is
    counted in the batch: synthesize)."""
    return 4.0 * batch * (s["time"] - 1)


def train_matmul_flops(s, batch):
    """Matrix-product FLOPs of one iteration as scalebench's step_matmul_flops counts them: each sub-step's
    training pass (3 x forward: projections, QK^T and PV on padded shapes, the vocabulary GEMM), and for the two
    back-translations the generation: the encoder pass, the cross-attention keys and values, and T - 1 decode
    steps of B rows (attention over the whole cache and source, masked)."""
    d, f, v, t, layers = s["model"], s["ffn"], s["vocab"], s["time"], s["layers"]
    tokens = batch * t
    self_attention = 2 * tokens * 4 * d * d + 2 * 2 * tokens * t * d
    ffn = 2 * 2 * tokens * d * f
    encoder = layers * (self_attention + ffn)
    decoder = layers * (2 * self_attention + ffn) + 2 * tokens * d * v
    training = 3.0 * (encoder + decoder)
    rows = batch
    step = layers * (2 * rows * 4 * d * d + 2 * 2 * rows * t * d +  # self: q, k, v, out; scores and context
                     2 * rows * 2 * d * d + 2 * 2 * rows * t * d +  # cross: q, out; scores and context
                     2 * 2 * rows * d * f) + 2 * rows * d * v
    generation = encoder + layers * 2 * 2 * tokens * d * d + (t - 1) * step
    return 4 * training + 2 * generation


def add_noise(sentence, rng):
    """XLM's add_noise between the delimiters: local shuffle (< 3 places), word dropout 0.1 (one word kept at
    least), blanking 0.1."""
    words = sentence[1:-1]
    score = [i + rng.random() * WORD_SHUFFLE for i in range(len(words))]
    order = sorted(range(len(words)), key=lambda i: score[i])
    kept = [words[i] for i in order if rng.random() >= WORD_DROPOUT]
    if not kept and words:
        kept = [words[rng.choice(order)]]
    return [EOS] + [MASK if rng.random() < WORD_BLANK else w for w in kept] + [EOS]


def synthesize(torch, s, batch, seed):
    """Per language: sentences (B, T) </s> w.. </s> pad.., their lengths (all T at full scale: 27 BPE + 2), the
    noised sentences and lengths, and the targets (sentence shifted left, pad ignored). Returns the dict and the
    real target-word count of one iteration."""
    t, full = s["time"], s is SHAPES["full"] or (s["time"] == SHAPES["full"]["time"] and s["vocab"] == 64699)
    data, words = {}, 0
    for lang in (0, 1):
        rng = random.Random(seed * 2 + lang)
        sentences, noised, targets, lengths, noised_lengths = [], [], [], [], []
        for b in range(batch):
            # scalebench's length draw (its per-sample stream of seed + language), so the same words are credited
            length = t if full else scalebench_random.uniform_int(scalebench_random.sample_random(seed + lang, b), 3, t)
            sentence = [EOS] + [rng.randint(FIRST_WORD, s["vocab"] - 1) for _ in range(length - 2)] + [EOS]
            noisy = add_noise(sentence, rng)
            sentences.append(sentence + [PAD] * (t - length))
            noised.append(noisy + [PAD] * (t - len(noisy)))
            targets.append(sentence[1:] + [PAD] * (t - length + 1))
            lengths.append(length)
            noised_lengths.append(len(noisy))
            words += 2 * (length - 1)  # reconstructed once in AE, once in BT
        data.update({f"sentences{lang}": torch.tensor(sentences), f"noised{lang}": torch.tensor(noised),
                     f"targets{lang}": torch.tensor(targets), f"lengths{lang}": torch.tensor(lengths),
                     f"noised_lengths{lang}": torch.tensor(noised_lengths)})
    return data, words


def build_model_class(torch):
    nn, F = torch.nn, torch.nn.functional

    class Attention(nn.Module):
        def __init__(self, d, heads, dropout):
            super().__init__()
            self.heads, self.dropout = heads, dropout
            self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))

        def heads_of(self, x):  # (B, T, D) -> (B, H, T, dh)
            b, t, d = x.shape
            return x.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        def attend(self, q, k, v, mask):
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                     dropout_p=self.dropout if self.training else 0.0)
            b, _, tq, _ = context.shape
            return self.out_proj(context.transpose(1, 2).reshape(b, tq, -1))

        def forward(self, query, memory, mask):
            return self.attend(self.heads_of(self.q_proj(query)), self.heads_of(self.k_proj(memory)),
                               self.heads_of(self.v_proj(memory)), mask)

        def cached_step(self, x, cache_k, cache_v, t):  # x (B, 1, D); caches (B, H, T, dh) written at t
            cache_k[:, :, t] = self.heads_of(self.k_proj(x))[:, :, 0]
            cache_v[:, :, t] = self.heads_of(self.v_proj(x))[:, :, 0]
            return self.attend(self.heads_of(self.q_proj(x)), cache_k[:, :, :t + 1], cache_v[:, :, :t + 1], None)

    class Layer(nn.Module):
        def __init__(self, s, decoder):
            super().__init__()
            d = s["model"]
            self.self_attn = Attention(d, s["heads"], 0.1)
            self.self_attn_layer_norm = nn.LayerNorm(d, eps=1e-12)
            self.encoder_attn = Attention(d, s["heads"], 0.1) if decoder else None
            self.encoder_attn_layer_norm = nn.LayerNorm(d, eps=1e-12) if decoder else None
            self.fc1, self.fc2 = nn.Linear(d, s["ffn"]), nn.Linear(s["ffn"], d)
            self.final_layer_norm = nn.LayerNorm(d, eps=1e-12)

        def residual(self, norm, x, sublayer):
            return norm(x + F.dropout(sublayer, 0.1, self.training))

        def tail(self, x, memory_part):
            if self.encoder_attn is not None:
                x = self.residual(self.encoder_attn_layer_norm, x, memory_part(x))
            return self.residual(self.final_layer_norm, x, self.fc2(F.gelu(self.fc1(x))))

        def forward(self, x, mask, memory=None, memory_mask=None):
            x = self.residual(self.self_attn_layer_norm, x, self.self_attn(x, x, mask))
            return self.tail(x, lambda y: self.encoder_attn(y, memory, memory_mask))

        def step(self, x, cache_k, cache_v, t, memory_k, memory_v, memory_mask):
            x = self.residual(self.self_attn_layer_norm, x, self.self_attn.cached_step(x, cache_k, cache_v, t))
            a = self.encoder_attn
            return self.tail(x, lambda y: a.attend(a.heads_of(a.q_proj(y)), memory_k, memory_v, memory_mask))

    class TransformerModel(nn.Module):
        """XLM's TransformerModel (encoder or decoder) with its PredLayer: Linear(D, V) whose weight is the
        embedding table (share_inout_emb) and whose bias is its own."""

        def __init__(self, s, decoder):
            super().__init__()
            d, v = s["model"], s["vocab"]
            self.embeddings = nn.Embedding(v, d, padding_idx=PAD)
            self.position_embeddings = nn.Embedding(s["positions"], d)
            self.lang_embeddings = nn.Embedding(2, d)
            self.layer_norm_emb = nn.LayerNorm(d, eps=1e-12)
            self.layers = nn.ModuleList(Layer(s, decoder) for _ in range(s["layers"]))
            self.pred_layer_bias = nn.Parameter(torch.zeros(v))
            if not decoder:  # the encoder's PredLayer is unused in MT; no gradient, so DDP needs no unused search
                self.pred_layer_bias.requires_grad_(False)

        def embed(self, ids, langs, positions):
            x = self.embeddings(ids) + self.position_embeddings(positions) + self.lang_embeddings(langs)
            return F.dropout(self.layer_norm_emb(x), 0.1, self.training)

        def logits(self, x):
            return F.linear(x, self.embeddings.weight, self.pred_layer_bias)

    class Xlm(nn.Module):
        def __init__(self, s):
            super().__init__()
            self.s = s
            self.encoder, self.decoder = TransformerModel(s, False), TransformerModel(s, True)

        def masks(self, lengths, causal):  # (B, 1, 1|T, T): True = attend
            t = self.s["time"]
            steps = torch.arange(t, device=lengths.device)
            keys = (steps[None, :] < lengths[:, None])[:, None, None, :]
            return keys & (steps[None, :] <= steps[:, None]) if causal else keys

        def encode(self, source, source_lang, source_lengths):
            positions = torch.arange(source.shape[1], device=source.device)
            x = self.encoder.embed(source, torch.full_like(source, source_lang), positions)
            mask = self.masks(source_lengths, False)
            for layer in self.encoder.layers:
                x = layer(x, mask)
            return x, mask

        def forward(self, source, source_lang, source_lengths, target_input, target_lang, target_lengths, targets):
            memory, memory_mask = self.encode(source, source_lang, source_lengths)
            positions = torch.arange(target_input.shape[1], device=target_input.device)
            y = self.decoder.embed(target_input, torch.full_like(target_input, target_lang), positions)
            mask = self.masks(target_lengths, True)
            for layer in self.decoder.layers:
                y = layer(y, mask, memory, memory_mask)
            logits = self.decoder.logits(y)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1),
                                   ignore_index=PAD)

        @torch.no_grad()
        def generate(self, source, source_lang, source_lengths, target_lang):
            """Greedy, T - 1 steps, key/value caches preallocated for T positions; the words are the argmax
            of the PredLayer's logits; then </s> at the source's length and pad after (scalebench's
            end_sentences)."""
            b, t = source.shape
            memory, memory_mask = self.encode(source, source_lang, source_lengths)
            layers = self.decoder.layers
            memory_kv = [(l.encoder_attn.heads_of(l.encoder_attn.k_proj(memory)),
                          l.encoder_attn.heads_of(l.encoder_attn.v_proj(memory))) for l in layers]
            h, d = self.s["heads"], self.s["model"]
            caches = [(memory.new_empty(b, h, t, d // h), memory.new_empty(b, h, t, d // h)) for _ in layers]
            ids = torch.full((b, t), PAD, dtype=torch.long, device=source.device)
            ids[:, 0] = EOS
            langs = torch.full((b, 1), target_lang, dtype=torch.long, device=source.device)
            for step in range(t - 1):
                position = torch.full((b, 1), step, dtype=torch.long, device=source.device)
                x = self.decoder.embed(ids[:, step:step + 1], langs, position)
                for layer, (ck, cv), (mk, mv) in zip(layers, caches, memory_kv):
                    x = layer.step(x, ck, cv, step, mk, mv, memory_mask)
                ids[:, step + 1] = self.decoder.logits(x[:, 0]).argmax(-1)
            steps = torch.arange(t, device=source.device)[None, :]
            ids = torch.where(steps == source_lengths[:, None] - 1, EOS, ids)
            return torch.where(steps >= source_lengths[:, None], PAD, ids)

    return Xlm


def iteration(forward, model, optimizer, data, autocast):
    """One step: AE(en), AE(de), BT(en-de-en), BT(de-en-de), each with zero_grad, forward (through `forward`: the
    model, its DDP wrapper or compiled), backward and optimizer.step(); the generation runs on the plain model in
    eval mode under no_grad. Returns the last sub-step's loss, as scalebench reads it."""
    def train(**tensors):
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = forward(**tensors)
        loss.backward()
        optimizer.step()
        return loss.detach()

    for lang in (0, 1):
        loss = train(source=data[f"noised{lang}"], source_lang=lang, source_lengths=data[f"noised_lengths{lang}"],
                     target_input=data[f"sentences{lang}"], target_lang=lang, target_lengths=data[f"lengths{lang}"],
                     targets=data[f"targets{lang}"])
    for lang in (0, 1):
        model.eval()
        with autocast():
            generated = model.generate(data[f"sentences{lang}"], lang, data[f"lengths{lang}"], 1 - lang)
        model.train()
        loss = train(source=generated, source_lang=1 - lang, source_lengths=data[f"lengths{lang}"],
                     target_input=data[f"sentences{lang}"], target_lang=lang, target_lengths=data[f"lengths{lang}"],
                     targets=data[f"targets{lang}"])
    return loss
