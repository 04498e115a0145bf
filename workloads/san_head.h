// MT-DNN's SAN answer module (namisan/mt-dnn module/san.py SANClassifier with train.py's defaults:
// bilinear attention, GRU, merge_opt 1, mem_type 1, 5 turns) as GraphBuilder calls, for workloads/mt_dnn.cpp.
// The blocks and how they compose are documented in src/cpu/san.h.
#pragma once

#include <string>

#include "scalebench/graph_builder.h"

namespace sb::workloads {

constexpr int64_t kSanTurns = 5;  // answer_num_turn

struct SanHeadParameters {
  TensorId self_weight, self_bias;            // query_wsum: LinearSelfAttn, nn.Linear(H, 1)
  TensorId bilinear_weight, bilinear_bias;    // attn: BilinearFlatSim, nn.Linear(H, H)
  TensorId w_ih, w_hh, b_ih, b_hh;            // rnn: nn.GRUCell(H, H)
  TensorId classifier_weight, classifier_bias;  // classifier.proj: nn.Linear(4H, classes)
};

// The head's parameters, "<prefix>.query_wsum.linear.weight" and so on: (H + 1) + (H² + H) + (6H² + 6H) +
// (4H · classes + classes) elements.
SanHeadParameters san_head_parameters(GraphBuilder& b, const std::string& prefix, int64_t hidden, int64_t classes);
void declare_san_head_unused(GraphBuilder& b, const SanHeadParameters& p);

struct SanHeadInputs {
  TensorId memory;           // (B, L, H): the encoder output (the SAN ops read it as fp32)
  TensorId hypothesis;       // (B, Lh, H): its first Lh positions (mt-dnn's hyp_mem)
  TensorId hypothesis_mask;  // (B, Lh) uint8, nonzero = excluded: keeps segment A ([CLS] A [SEP])
  TensorId premise_mask;     // (B, L) uint8, nonzero = excluded: keeps segment B and its [SEP]
};

// Scores (B, classes) = log(mean over the turns kept by stochastic turn dropout of softmax(logits_t)).
// `dropout` is the head's DropoutWrapper p (on the memory, the state and the classifier features; mt-dnn's
// variational dropout on 3-D tensors is element-wise here), `turn_dropout` mem_drop_p.
TensorId san_head_scores(GraphBuilder& b, const SanHeadParameters& p, const SanHeadInputs& in, double dropout,
                         double turn_dropout);

}  // namespace sb::workloads
