"""PyTorch counterparts of scalebench's bert_finetune (workloads/bert_finetune.cpp: HF BertForQuestionAnswering's
shapes, SQuAD at 384 tokens, pooler dropped) and mt_dnn (workloads/mt_dnn.cpp: namisan/mt-dnn's SANBertNetwork,
BERT-Large, mnli's SAN answer module of 5 turns, the other seven GLUE heads and the pooler present but unread),
written here on pytorch_reference.py's BertLayer, used by it. Same parameter names' shapes and counts, synthetic
inputs drawn as scalebench draws them (in distribution), same losses: the span loss (CE(start) + CE(end)) / 2, and
the cross-entropy of the SAN's log of the turn-averaged probabilities. Parameters scalebench declares unused (the
idle heads and the pooler) get zero gradients here too (added to the loss times 0), so both tools update all of
them every step. Imports nothing at module level; torch is passed in."""
import math
import random

CLS, SEP, FIRST_WORDPIECE = 101, 102, 999  # BERT uncased vocabulary ([PAD] 0, [MASK] 103); workloads/bert_encoder.h

BERT_BASE = {"full": dict(vocab=30522, model=768, heads=12, ffn=3072, layers=12, max_positions=512),
             "tiny": dict(vocab=1100, model=32, heads=4, ffn=64, layers=2, max_positions=16)}
BERT_LARGE = dict(vocab=30522, model=1024, heads=16, ffn=4096, layers=24, max_positions=512)
# workloads/bert_finetune.cpp: run_squad.py's 384 tokens (tiny 12), questions of up to 64 word pieces (a third of
# the tiny sequence), answers of 1 to 8.
FINETUNE = {"full": dict(BERT_BASE["full"], time=384), "tiny": dict(BERT_BASE["tiny"], time=12)}
MAX_QUERY, MAX_ANSWER = 64, 8
# workloads/mt_dnn.cpp: 128 tokens, the SAN summarising the first 64 (Lh); tiny: bert_base's tiny encoder, 16 and 8.
MT_DNN = {"full": dict(BERT_LARGE, time=128, hypothesis=64), "tiny": dict(BERT_BASE["tiny"], time=16, hypothesis=8)}
TASKS = [("mnli", 3, True), ("rte", 2, True), ("qqp", 2, True), ("qnli", 2, True), ("mrpc", 2, True),
         ("sst", 2, False), ("cola", 2, False), ("stsb", 1, False)]  # run_mt_dnn.sh; the step trains mnli
SAN_TURNS, SAN_DROPOUT, TURN_DROPOUT = 5, 0.1, 0.1
FINETUNE_PARAMETERS, MT_DNN_PARAMETERS = 108_893_186, 371_933_205


def encoder_parameters(s):
    d, f = s["model"], s["ffn"]
    layer = 4 * (d * d + d) + (d * f + f + f * d + d) + 4 * d
    return (s["vocab"] + s["max_positions"] + 2) * d + 2 * d + s["layers"] * layer


def expected_parameters(workload, s):
    """shared/WORKLOADS.md §11 and §12's counts, for any shape."""
    d = s["model"]
    if workload == "bert_finetune":
        return encoder_parameters(s) + 2 * d + 2
    heads = sum((d + 1) + (d * d + d) + (6 * d * d + 6 * d) + (4 * d * c + c) if san else d * c + c
                for _, c, san in TASKS)
    return encoder_parameters(s) + (d * d + d) + heads


def encoder_forward_flops(s, time):
    """workloads/bert_encoder.cpp bert_encoder_forward_flops: per sequence, 2 per multiply-add."""
    d = s["model"]
    return 2.0 * s["layers"] * (time * (4 * d * d + 2 * d * s["ffn"]) + 2 * time * time * d)


def train_matmul_flops(workload, s, batch):
    """3 x the forward matrix products of workloads/*.cpp's forward_flops_per_unit (the table's MFU uses
    scalebench's own count of the step for both tools)."""
    d, t = s["model"], s["time"]
    if workload == "bert_finetune":
        return 3.0 * batch * (encoder_forward_flops(s, t) + 2.0 * t * d * 2)
    c = TASKS[0][1]
    san = 2 * s["hypothesis"] * d + SAN_TURNS * (d * d + 2 * t * d + 4 * d * c + 6 * d * d)
    return 3.0 * batch * (encoder_forward_flops(s, t) + 2 * (d * d + san))


def build_model_classes(torch, bert_layer):
    """(BertForQuestionAnswering, MtDnn) over `bert_layer` (pytorch_reference.py's post-norm BERT layer)."""
    nn, F = torch.nn, torch.nn.functional

    class BertEncoder(nn.Module):
        """Word + position + token-type embeddings, LayerNorm, dropout, then the layers: HF BertModel's
        embeddings and encoder (workloads/bert_encoder.cpp)."""

        def __init__(self, s):
            super().__init__()
            d = s["model"]
            self.word_embeddings = nn.Embedding(s["vocab"], d)
            self.position_embeddings = nn.Embedding(s["max_positions"], d)
            self.token_type_embeddings = nn.Embedding(2, d)
            self.embeddings_norm = nn.LayerNorm(d, eps=1e-12)
            self.layers = nn.ModuleList(bert_layer(s) for _ in range(s["layers"]))

        def forward(self, input_ids, token_type_ids, key_mask):
            t = input_ids.shape[1]
            x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
            x = x + self.position_embeddings(torch.arange(t, device=input_ids.device))
            x = F.dropout(self.embeddings_norm(x), 0.1, self.training)
            for layer in self.layers:
                x = layer(x, key_mask)
            return x

    class BertForQuestionAnswering(nn.Module):
        def __init__(self, s):
            super().__init__()
            self.bert = BertEncoder(s)
            self.qa_outputs = nn.Linear(s["model"], 2)

        def forward(self, input_ids, token_type_ids, key_mask, start_positions, end_positions):
            logits = self.qa_outputs(self.bert(input_ids, token_type_ids, key_mask)).float()  # (B, T, 2)
            start, end = logits[..., 0], logits[..., 1]
            return (F.cross_entropy(start, start_positions) + F.cross_entropy(end, end_positions)) / 2

    class SanHead(nn.Module):
        """mt-dnn's SANClassifier (bilinear attention, GRU, merge_opt 1, 5 turns), as workloads/san_head.cpp."""

        def __init__(self, d, classes):
            super().__init__()
            self.query_wsum = nn.Linear(d, 1)
            self.attn = nn.Linear(d, d)
            self.rnn = nn.GRUCell(d, d)
            self.classifier = nn.Linear(4 * d, classes)

        def forward(self, memory, hypothesis, hypothesis_mask, premise_mask, turn_mask):
            drop = lambda x: F.dropout(x, SAN_DROPOUT, self.training)
            hyp = drop(hypothesis)
            alpha = self.query_wsum(hyp).squeeze(-1).float().masked_fill(hypothesis_mask, -math.inf).softmax(-1)
            state = torch.einsum("bl,blh->bh", alpha.to(hyp.dtype), hyp)
            features = []
            for _ in range(SAN_TURNS):
                p = self.attn(drop(state))  # (B, H)
                scores = torch.einsum("blh,bh->bl", drop(memory), p.to(memory.dtype)).float()
                weights = scores.masked_fill(premise_mask, -math.inf).softmax(-1).to(memory.dtype)
                summary = torch.einsum("bl,blh->bh", weights, memory)
                state = state.to(summary.dtype)
                features.append(torch.cat([summary, state, (summary - state).abs(), summary * state], -1))
                state = self.rnn(summary, drop(state))
            logits = self.classifier(drop(torch.stack(features))).float()  # (K, B, C)
            probabilities = logits.softmax(-1) * turn_mask.t().unsqueeze(-1)
            return probabilities.mean(0).log()  # log(mean over the turns of the kept turns' probabilities)

    class MtDnn(nn.Module):
        def __init__(self, s):
            super().__init__()
            d = s["model"]
            self.s = s
            self.bert = BertEncoder(s)
            self.pooler = nn.Linear(d, d)
            self.scoring_list = nn.ModuleList(SanHead(d, c) if san else nn.Linear(d, c) for _, c, san in TASKS)

        def forward(self, input_ids, token_type_ids, key_mask, hypothesis_mask, premise_mask, turn_mask, labels):
            memory = self.bert(input_ids, token_type_ids, key_mask)
            pooled = torch.tanh(self.pooler(memory[:, 0]))  # BertModel computes it; mnli's SAN does not read it
            hypothesis = memory[:, :self.s["hypothesis"]]
            scores = self.scoring_list[0](memory, hypothesis, hypothesis_mask, premise_mask, turn_mask)
            # Zero gradients for the pooler and the idle heads, as scalebench's declared-unused parameters get.
            idle = sum(p.sum() for head in self.scoring_list[1:] for p in head.parameters())
            return F.cross_entropy(scores, labels) + (idle + pooled.sum()).float() * 0

    return BertForQuestionAnswering, MtDnn


def turn_mask(torch, batch, generator):
    """mt-dnn's generate_mask as scalebench's san_turn_mask: each turn kept with probability 1 - p, one drawn turn
    always kept; kept turns weigh 1 / (1 - p). A fresh mask each step in mt-dnn; one fixed here, as scalebench
    draws its masks on the device."""
    kept = (torch.rand(batch, SAN_TURNS, generator=generator) >= TURN_DROPOUT).float()
    kept[torch.arange(batch), torch.randint(0, SAN_TURNS, (batch,), generator=generator)] = 1.0
    return kept / (1.0 - TURN_DROPOUT)


def sentence_pair(rng, vocab, first_segment, length, time):
    """[CLS] A [SEP] B [SEP] and [PAD] 0 after (workloads/bert_encoder.cpp fill_sentence_pair): ids and types."""
    ids = [CLS] + [rng.randint(FIRST_WORDPIECE, vocab - 1) for _ in range(length - 1)] + [0] * (time - length)
    ids[first_segment + 1] = ids[length - 1] = SEP
    types = [0] * (first_segment + 2) + [1] * (length - first_segment - 2) + [0] * (time - length)
    return ids, types


def synthesize(torch, workload, s, batch, seed):
    """workloads/bert_finetune.cpp and mt_dnn.cpp synthesize(), in distribution: lengths, segments, answer spans
    and labels drawn from the same ranges."""
    rng, t = random.Random(seed), s["time"]
    ids, types, lengths, extra = [], [], [], {}
    if workload == "bert_finetune":
        starts, ends = [], []
        for _ in range(batch):
            query = rng.randint(1, min(MAX_QUERY, t // 3))
            length = rng.randint(max(query + 4, t // 2), t)
            row, kinds = sentence_pair(rng, s["vocab"], query, length, t)
            first, last = query + 2, length - 2  # the document's tokens
            answer = rng.randint(1, min(MAX_ANSWER, last - first + 1))
            starts.append(rng.randint(first, last - answer + 1))
            ends.append(starts[-1] + answer - 1)
            ids.append(row), types.append(kinds), lengths.append(length)
        extra = dict(start_positions=torch.tensor(starts), end_positions=torch.tensor(ends))
    else:
        hyp = s["hypothesis"]
        hypothesis_mask, premise_mask, labels = [], [], []
        for _ in range(batch):
            length = rng.randint(max(5, t * 3 // 4), t)
            a_length = rng.randint(3, min(hyp, length - 2))
            row, kinds = sentence_pair(rng, s["vocab"], a_length - 2, length, t)
            hypothesis_mask.append([i >= a_length for i in range(hyp)])  # True: excluded (masked_fill)
            premise_mask.append([not a_length <= i < length for i in range(t)])
            labels.append(rng.randrange(TASKS[0][1]))
            ids.append(row), types.append(kinds), lengths.append(length)
        generator = torch.Generator().manual_seed(seed)
        extra = dict(hypothesis_mask=torch.tensor(hypothesis_mask), premise_mask=torch.tensor(premise_mask),
                     turn_mask=turn_mask(torch, batch, generator), labels=torch.tensor(labels))
    key_mask = (torch.arange(t)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]  # (B, 1, 1, T)
    return dict(input_ids=torch.tensor(ids), token_type_ids=torch.tensor(types), key_mask=key_mask, **extra)
