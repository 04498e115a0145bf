// Optimizer names, defaults and each workload's reference settings (include/scalebench/optimizer.h).
#include "scalebench/optimizer.h"

#include <cstdio>

#include "scalebench/error.h"

namespace sb {
namespace {

constexpr OptimizerKind kKinds[] = {OptimizerKind::kAdamW, OptimizerKind::kAdam, OptimizerKind::kAdamax,
                                    OptimizerKind::kSgdMomentum, OptimizerKind::kNag};

bool is_adam_family(OptimizerKind kind) {
  return kind == OptimizerKind::kAdamW || kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamax;
}

}  // namespace

const char* optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdamW: return "adamw";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamax: return "adamax";
    case OptimizerKind::kSgdMomentum: return "sgd_momentum";
    case OptimizerKind::kNag: return "nag";
  }
  return "?";
}

OptimizerKind parse_optimizer_kind(const std::string& name) {
  std::string names;
  for (OptimizerKind kind : kKinds) {
    if (name == optimizer_name(kind)) return kind;
    names += (names.empty() ? "" : ", ") + std::string(optimizer_name(kind));
  }
  throw UsageError("unknown optimizer '" + name + "' (available: " + names + ")");
}

int optimizer_state_buffers(OptimizerKind kind) { return is_adam_family(kind) ? 2 : 1; }

OptimizerSettings default_optimizer(OptimizerKind kind) {
  OptimizerSettings s;
  s.kind = kind;
  s.weight_decay = kind == OptimizerKind::kAdamW ? 0.01f : 0.0f;
  return s;
}

OptimizerSettings reference_optimizer(const std::string& workload) {
  if (workload == "transformer_big") {
    // §7 fairseq transformer_wmt_en_de_big recipe: --optimizer adam --adam-betas '(0.9, 0.98)' --lr 5e-4
    // (fairseq's adam_eps default 1e-8, weight_decay 0; no --clip-norm in the recipe).
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdam);
    s.learning_rate = 5e-4f;
    s.beta2 = 0.98f;
    return s;
  }
  if (workload == "bert_base" || workload == "bert_finetune") {
    // §10/§11 google-research/bert optimization.py: AdamWeightDecay beta (0.9, 0.999), eps 1e-6, weight decay
    // 0.01 (decoupled) and tf.clip_by_global_norm(grads, clip_norm=1.0); lr 1e-4 pre-training (BERT paper),
    // 3e-5 for SQuAD (§11). Two differences from AdamWeightDecay remain: it has no bias correction and it
    // exempts LayerNorm and bias parameters from decay; the flat buffer here decays every parameter.
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdamW);
    s.learning_rate = workload == "bert_base" ? 1e-4f : 3e-5f;
    s.epsilon = 1e-6f;
    s.max_grad_norm = 1.0f;
    return s;
  }
  if (workload == "mt_dnn") {
    // §12 namisan/mt-dnn train.py: --optimizer adamax, lr 5e-5, --global_grad_clipping 1.0; betas and eps
    // as torch.optim.Adamax's defaults ((0.9, 0.999), 1e-8), no weight decay.
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdamax);
    s.learning_rate = 5e-5f;
    s.max_grad_norm = 1.0f;
    return s;
  }
  if (workload == "nasnet_large") {
    // §1 [choice]: SGD momentum 0.9 as the PyTorch ports retrain (pytorch/examples imagenet/main.py: --lr 0.1
    // for batch 256, momentum 0.9) with TF-slim's NASNet-Large weight decay, nasnet_large_arg_scope(weight_decay=
    // 5e-5) (its l2_regularizer(5e-5) adds 5e-5 · w to the gradient, as torch.optim.SGD's weight_decay does).
    // TF-slim regularises conv and FC weights only; the flat buffer here decays every parameter. No clipping:
    // TF-slim's global-norm clip of 10 belongs to its RMSProp recipe.
    OptimizerSettings s = default_optimizer(OptimizerKind::kSgdMomentum);
    s.learning_rate = 0.1f;
    s.momentum = 0.9f;
    s.weight_decay = 5e-5f;
    return s;
  }
  if (workload == "yolov3") {
    // §3 darknet cfg/yolov3.cfg: learning_rate=0.001, momentum=0.9, decay=0.0005. darknet's
    // update_convolutional_layer keeps u = m u + g + decay w (g the batch-mean gradient) and steps w -= lr u,
    // which is torch.optim.SGD(momentum=0.9, weight_decay=5e-4). Chosen over ultralytics' Nesterov recipe because
    // the network and the loss (yolo_loss: MSE box terms, ignore_thresh 0.7) are darknet's. Not modelled: burn_in
    // (the lr ramp over the first 1,000 batches), the step schedule, and darknet's exemption of biases and
    // BatchNorm gains from decay (the flat buffer decays every parameter). The rate: darknet's burn_in=1000 with
    // power 4 trains its first batches at 1e-3 · (batch / 1000)^4, below 1e-7 for the first 100; a benchmark of
    // tens of steps lives there, so 1e-6 stands for it. The cfg's 1e-3 from the first step (the loss sums over
    // 22,743 predictions per image) made the loss non-finite at step 13 on H200.
    OptimizerSettings s = default_optimizer(OptimizerKind::kSgdMomentum);
    s.learning_rate = 1e-6f;
    s.momentum = 0.9f;
    s.weight_decay = 5e-4f;
    return s;
  }
  if (workload == "unsupmt") {
    // §9 facebookresearch/XLM README (unsupervised MT): --optimizer adam_inverse_sqrt,beta1=0.9,beta2=0.98,lr=0.0001
    // (xlm/optim.py AdamInverseSqrtWithWarmup: eps 1e-8, weight decay 0, warmup 4000 from 1e-7). One optimizer over
    // encoder and decoder, stepped after every sub-step. The schedule is not modelled (no engine schedules yet):
    // the rate is the peak 1e-4; the warm-up's rate changes the update's size, not its cost.
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdam);
    s.learning_rate = 1e-4f;
    s.beta2 = 0.98f;
    return s;
  }
  if (workload == "conv_seq2seq") {
    // §8 fairseq examples/translation/README.md (fconv_wmt_en_de): --optimizer nag --lr 0.5 --clip-norm 0.1
    // --lr-scheduler fixed; fairseq's NAG defaults: momentum 0.99, weight decay 0. fairseq/optim/nag.py keeps its
    // buffer scaled by -lr; at a fixed lr its update is torch.optim.SGD(nesterov=True)'s, i.e. kNag. Clipping is
    // fairseq's clip_grad_norm_ (max_norm / (norm + 1e-6)) of the all-reduced gradients.
    OptimizerSettings s = default_optimizer(OptimizerKind::kNag);
    s.learning_rate = 0.5f;
    s.momentum = 0.99f;
    s.weight_decay = 0;
    s.max_grad_norm = 0.1f;
    return s;
  }
  if (workload == "pix2pixhd") {
    // §4 NVIDIA/pix2pixHD options/train_options.py: --lr 0.0002 --beta1 0.5; models/pix2pixHD_model.py builds
    // optimizer_G and optimizer_D as torch.optim.Adam(params, lr, betas=(beta1, 0.999)) (eps 1e-8, no weight
    // decay). Adam is elementwise, so one Adam over G's and D's flat buffers with these settings is their two
    // optimizers' arithmetic exactly (the step count is the same for both). Not modelled: the linear decay
    // after niter (100 epochs) and niter_fix_global (only the local enhancer trained for the first epochs).
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdam);
    s.learning_rate = 2e-4f;
    s.beta1 = 0.5f;
    return s;
  }
  if (workload == "stylegan") {
    // §5 NVlabs/stylegan train.py (FFHQ): G_opt = D_opt = Adam(beta1 0, beta2 0.99, epsilon 1e-8), G_lrate_dict
    // and D_lrate_dict at 1024²: 0.003. One optimizer over both networks' flat buffer with the same settings is
    // the two optimizers' update (Adam is elementwise). No weight decay, no clipping.
    OptimizerSettings s = default_optimizer(OptimizerKind::kAdam);
    s.learning_rate = 0.003f;
    s.beta1 = 0.0f;
    s.beta2 = 0.99f;
    s.epsilon = 1e-8f;
    s.weight_decay = 0;
    return s;
  }
  if (workload == "deeplabv3") {
    // §2 tensorflow/models research/deeplab/train.py: tf.train.MomentumOptimizer(momentum 0.9), "Use 0.007
    // when training on PASCAL augmented training set" (base_learning_rate), "Use 0.0001 for ResNet model
    // variants" (weight_decay: slim's l2_regularizer, whose gradient wd·w is torch SGD's coupled weight decay).
    // Differences: the poly schedule (power 0.9) is not modelled, and slim regularises only the conv weights
    // while the flat buffer here decays every parameter.
    OptimizerSettings s = default_optimizer(OptimizerKind::kSgdMomentum);
    s.learning_rate = 0.007f;
    s.weight_decay = 1e-4f;
    return s;
  }
  if (workload == "maskrcnn") {
    // §6 maskrcnn-benchmark e2e_mask_rcnn_R_50_FPN_1x.yaml: BASE_LR 0.02 for 16 images, MOMENTUM 0.9,
    // WEIGHT_DECAY 1e-4 (torch.optim.SGD's coupled decay), WARMUP_FACTOR 1/3 over WARMUP_ITERS 500 (linear).
    // A benchmark's few dozen steps lie at the warm-up's start, so the rate is its first, 0.02 / 3 (it would be
    // 0.0072 by step 20). From random weights 0.02 itself diverges: the loss was non-finite at step 13 on H200, and
    // torchvision's model from scalebench's start on the CPU (320 x 544, 2 images) went from 5.6 to NaN by step 9,
    // where 0.02 / 3 stayed between 2.3 and 5.6 for 16 steps. Not modelled: the warm-up's rise, the steps at 60k and
    // 80k, and the zero decay of biases (WEIGHT_DECAY_BIAS 0); the flat buffer decays every parameter.
    OptimizerSettings s = default_optimizer(OptimizerKind::kSgdMomentum);
    s.learning_rate = 0.02f / 3.0f;
    s.momentum = 0.9f;
    s.weight_decay = 1e-4f;
    return s;
  }
  throw UsageError("no reference optimizer for workload '" + workload + "'");
}

void validate_optimizer(const OptimizerSettings& s) {
  if (!(s.learning_rate > 0)) throw UsageError("the learning rate must be positive");
  if (is_adam_family(s.kind)) {
    if (!(s.beta1 >= 0 && s.beta1 < 1) || !(s.beta2 >= 0 && s.beta2 < 1)) {
      throw UsageError(std::string(optimizer_name(s.kind)) + ": betas must lie in [0, 1)");
    }
    if (!(s.epsilon > 0)) throw UsageError(std::string(optimizer_name(s.kind)) + ": epsilon must be positive");
  } else if (!(s.momentum >= 0 && s.momentum < 1)) {
    throw UsageError(std::string(optimizer_name(s.kind)) + ": momentum must lie in [0, 1)");
  }
  if (s.kind == OptimizerKind::kNag && !(s.momentum > 0)) throw UsageError("nag needs a positive momentum");
  if (!(s.weight_decay >= 0)) throw UsageError("the weight decay must not be negative");
  if (!(s.max_grad_norm >= 0)) throw UsageError("the clipping norm must not be negative (0: no clipping)");
}

std::string describe_optimizer(const OptimizerSettings& s) {
  char text[160];
  if (is_adam_family(s.kind)) {
    std::snprintf(text, sizeof text, "%s lr %g betas (%g, %g) eps %g weight decay %g", optimizer_name(s.kind),
                  s.learning_rate, s.beta1, s.beta2, s.epsilon, s.weight_decay);
  } else {
    std::snprintf(text, sizeof text, "%s lr %g momentum %g weight decay %g", optimizer_name(s.kind), s.learning_rate,
                  s.momentum, s.weight_decay);
  }
  std::string line = text;
  if (s.max_grad_norm > 0) {
    std::snprintf(text, sizeof text, ", grad-norm clip %g", s.max_grad_norm);
    line += text;
  }
  return line;
}

}  // namespace sb
