// The API workloads build their forward graph with (ARCHITECTURE.md step 3). Each call appends one node
// with static shapes and returns the output tensor; the backward graph is appended later by autodiff
// (autodiff.h). Workloads never see a device, a kernel or a library: only these calls.
#pragma once

#include <map>
#include <utility>
#include <string>
#include <vector>

#include "scalebench/detection_options.h"
#include "scalebench/graph.h"

namespace sb {

// A 2-D convolution's hyper-parameters (GraphBuilder::conv2d). Padding is per side; `same` replaces it by
// TF's "SAME" rule for the input at hand (total = max((ceil(in / stride) - 1) stride + dilation (k - 1) + 1 - in,
// 0), the odd pixel at the bottom/right), which for stride 1 is PyTorch's padding="same".
struct Conv2dOptions {
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t groups = 1;  // groups = input channels: depthwise
  bool same = false;

  static Conv2dOptions with(int64_t stride, int64_t pad, int64_t dilation = 1, int64_t groups = 1) {
    Conv2dOptions o;
    o.stride_h = o.stride_w = stride;
    o.pad_top = o.pad_bottom = o.pad_left = o.pad_right = pad;
    o.dilation_h = o.dilation_w = dilation;
    o.groups = groups;
    return o;
  }
  static Conv2dOptions same_padding(int64_t stride = 1, int64_t dilation = 1, int64_t groups = 1) {
    Conv2dOptions o = with(stride, 0, dilation, groups);
    o.same = true;
    return o;
  }
};

// Scratch offered to each convolution pass (cuDNN's algorithms trade workspace for speed): min(limit,
// max(kConvWorkspaceFloorBytes, 2 x the pass's largest operand)). Declared in the graph as one kWorkspace
// tensor per conv node, so the planner places it by liveness (workspaces of different nodes share bytes).
constexpr uint64_t kConvWorkspaceFloorBytes = 1ull << 20;
constexpr uint64_t kDefaultConvWorkspaceLimitBytes = 256ull << 20;

// BatchNorm's settings (GraphBuilder::batchnorm). torch.nn.BatchNorm2d's defaults; NASNet uses eps 1e-3,
// YOLOv3 (darknet) and ResNet 1e-5. The fused activation is applied to the normalised value.
struct BatchNormOptions {
  enum class Activation { kNone = 0, kRelu = 1, kLeakyRelu = 2 };  // the numbers of cpu::BatchNormActivation
  double epsilon = 1e-5;
  double momentum = 0.1;
  Activation activation = Activation::kNone;
  double slope = 0.1;  // kLeakyRelu only; > 0
};

// Makes the ReLU or LeakyReLU fused into every forward BatchNorm node of `graph` the identity (LeakyReLU with
// slope 1) and returns how many it changed; call it before append_backward. For comparisons that must not see
// the kinks: a BatchNorm CNN has thousands of activations near zero, so a central difference or a second
// training that differs from the first only in summation order moves some across their kink and the
// gradients jump (the registry's finite-difference test; --check, src/train/dp_check.cpp).
int make_batchnorm_activations_linear(Graph& graph);

class GraphBuilder {
 public:
  // `compute` is the dtype of activations and their gradients: fp32, or bf16 / fp16 for mixed precision, where
  // parameters stay fp32 (the optimizer's master weights) and the builder inserts one `cast` node per
  // weight or bias that a matrix product reads (PyTorch autocast's cast-once-per-forward); LayerNorm gains,
  // embedding and position tables are read as fp32 by their kernels directly (a bf16 activation used as a
  // table is cast to fp32). Losses and softmax/LayerNorm statistics are fp32 at any precision.
  explicit GraphBuilder(Graph& graph, DType compute = DType::kFloat32);
  Graph& graph() { return graph_; }
  DType compute_dtype() const { return compute_; }
  // Every later dropout() is the identity and san_turn_mask keeps every turn: the data-parallel check
  // (--check) compares N ranks with one rank, whose dropout masks would differ by construction.
  void disable_dropout() { dropout_enabled_ = false; }
  // Dropout for the calls that follow, as a switch that can be turned back: a no-gradient generation pass built
  // inside a training graph runs in eval mode (XLM's generate) while the training pass keeps its dropout. A
  // workload restores the previous value, so disable_dropout() (the --check graphs) still holds everywhere.
  bool dropout_enabled() const { return dropout_enabled_; }
  void set_dropout_enabled(bool enabled) { dropout_enabled_ = enabled; }
  // Later reads of a parameter cast it again instead of reusing a cached cast (in_compute_dtype): a graph part
  // that runs in some sub-steps only (unsupmt's generation) must not leave the training pass a cast that is
  // computed only when that part ran.
  void forget_cached_casts() { copies_.clear(); }

  // Leaves of the graph. A second parameter() with a name already declared returns that parameter (the shapes
  // and the parameter group must agree, UsageError otherwise): a graph that runs the same layers twice (a generation pass beside the
  // training pass) shares their weights by name.
  TensorId parameter(const std::string& name, std::vector<int64_t> shape);
  // Every later parameter() belongs to `group` (TensorInfo::parameter_group): a GAN's generator and
  // discriminator, whose gradients the reference reduces and steps separately. Default: the one unnamed group.
  void set_parameter_group(const std::string& group) { parameter_group_ = group; }
  TensorId input(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::kFloat32);
  // Weights that are used but never trained (pix2pixHD's VGG19 perceptual network, Mask R-CNN's frozen stem and
  // res2): an fp32 kInput written by the workload's synthesize() like data, no gradient, not in the optimizer or
  // the all-reduce; counted apart by Graph::frozen_parameter_count. Nothing computed from them alone gets a
  // gradient (autodiff's requires-gradient propagation), so no backward pass runs below the first trained layer.
  TensorId frozen_parameter(const std::string& name, std::vector<int64_t> shape);
  // The loss of this graph does not depend on `parameter` (a multi-task model builds one task's head per
  // graph; the other heads are still trained, so they stay). Its gradient is zero-filled by one node at the
  // start of the backward pass, where PyTorch DDP's find_unused_parameters marks such parameters ready.
  // Forward nodes may still read it (mt-dnn computes BERT's pooler for every task). append_backward throws
  // if the loss does depend on it.
  void declare_unused_parameter(TensorId parameter);

  // y (rows, out) = x (rows, in) · wᵀ (+ bias), w shaped (out, in) as PyTorch's nn.Linear. x may have
  // leading dimensions; they are flattened into rows and restored in y.
  TensorId linear(TensorId x, TensorId weight, TensorId bias = kNoTensor);
  // C = alpha · op(A) · op(B) on the last two dimensions, batched over the leading ones (same count on both).
  TensorId matmul(TensorId a, TensorId b, bool transpose_a, bool transpose_b, double alpha = 1.0);
  TensorId add(TensorId a, TensorId b);  // same shapes (residual connections)
  TensorId gelu(TensorId x);             // exact erf form (BERT)
  TensorId relu(TensorId x);
  TensorId tanh(TensorId x);
  TensorId leaky_relu(TensorId x, double slope);  // slope > 0
  TensorId sigmoid(TensorId x);

  // BatchNorm in training mode over the last dimension (channels of an NHWC tensor): batch statistics,
  // gamma and beta (C) fp32 parameters, optionally fused with the activation after it (src/cpu/batchnorm.h).
  // The running mean and variance are kState tensors named after gamma ("<gamma>.running_mean", ".running_var",
  // starting at 0 and 1) that every forward pass updates; they take no gradient and are not all-reduced.
  TensorId batchnorm(TensorId x, TensorId gamma, TensorId beta, const BatchNormOptions& options = {});
  // Every later batchnorm() computes its statistics separately over `groups` contiguous equal parts of x's
  // first dimension (the batch: sample s in group s / (batch / groups)), as that many data-parallel ranks
  // without SyncBN do on their slices ("ghost batch"); the --check reference of N ranks sets N. The batch must
  // divide by groups (UsageError). Running statistics follow group 0, i.e. rank 0 (src/cpu/batchnorm.h).
  void set_batchnorm_groups(int64_t groups);

  // y (N, Ho, Wo, K) = x (N, H, W, C) convolved with weight (K, R, S, C / groups) (+ bias (K)), NHWC
  // (src/core/ops/conv2d.h). The weight is cast to the compute dtype once per step like a linear
  // layer's; the bias stays fp32 (added after the convolution). The node carries a workspace tensor (see
  // kConvWorkspaceFloorBytes); on CUDA the algorithms are chosen once per node, when the executor is built.
  // Implemented in src/core/ops/conv2d.cpp and pooling.cpp.
  TensorId conv2d(TensorId x, TensorId weight, TensorId bias = kNoTensor, const Conv2dOptions& options = {});
  // Pooling over kernel x kernel windows of x (N, H, W, C) -> (N, Ho, Wo, C) with the stride and padding of
  // `options` (no dilation, no groups): max pooling ignores the padding, average pooling divides by the
  // window (count_include_pad, PyTorch's default) or by the input pixels in it (NASNet). A negative pad_top /
  // pad_left crops (NASNet's one-pixel shift: a 1 x 1 stride-2 average with pads -1 and +1 that counts the
  // padding). src/cpu/pooling.h.
  TensorId max_pool2d(TensorId x, int64_t kernel, const Conv2dOptions& options);
  TensorId avg_pool2d(TensorId x, int64_t kernel, const Conv2dOptions& options, bool count_include_pad);
  // (N, H, W, C) -> (N, 1, 1, C): the mean over the image (an average pool with the whole image as window).
  TensorId global_avg_pool(TensorId x);
  // x (N, H, W, C) resized to (N, out_h, out_w, C) as torch's interpolate (src/cpu/upsample.h): nearest
  // (YOLOv3's ×2) or bilinear with align_corners (torchvision's DeepLabv3: false).
  TensorId upsample_nearest(TensorId x, int64_t out_h, int64_t out_w);
  TensorId upsample_bilinear(TensorId x, int64_t out_h, int64_t out_w, bool align_corners);
  // Concatenation along the last dimension (channels) of tensors equal in every other dimension, and the
  // inverse split into blocks of the given widths. src/cpu/concat.h.
  TensorId concat(const std::vector<TensorId>& parts);
  std::vector<TensorId> split(TensorId x, const std::vector<int64_t>& widths);
  // NASNet's drop-path: each sample of x (batch first) zeroed with probability p, the rest scaled by 1 / (1 - p);
  // drawn from the dropout Philox stream (a range of its own, fresh every step, the same on every device).
  // The identity at p = 0 or after disable_dropout().
  TensorId drop_path(TensorId x, double probability);
  // YOLOv3's loss (src/cpu/yolo_loss.h) over the three heads (N, G, G, 3 · (5 + classes)), coarsest first,
  // against an fp32 input of ground-truth boxes (N, B, 5) = (class, cx, cy, w, h) normalised, w <= 0 padding.
  // Returns a one-element fp32 loss; the graph's backward starts there.
  TensorId yolo_loss(TensorId head0, TensorId head1, TensorId head2, TensorId truth, int64_t classes);
  // ConvS2S's ops (fairseq fconv.py), implemented in src/core/ops/glu.cpp, weight_norm.cpp,
  // memory.cpp (grad_multiply) and scale_rows.cpp.
  // Gated linear unit over the last dimension (F.glu(x, dim=-1)): x (..., 2C) -> (..., C) = a · sigmoid(b) with
  // a, b the first and second halves (src/cpu/glu.h). The backward pass reads x.
  TensorId glu(TensorId x);
  // Weight normalisation (torch.nn.utils.weight_norm, src/cpu/weight_norm.h): fp32 parameters v (rows, ...) and
  // g (rows) -> the fp32 weight w = g[r] · v[r] / ||v[r]|| shaped as v, one norm per output channel (the first
  // dimension: nn.Linear's output rows, conv2d's K of a (K, R, S, C) weight, fairseq ConvTBC's dim 2). linear()
  // and conv2d() read w (and cast it to the compute dtype) as any weight; gradients reach v and g.
  TensorId weight_norm(TensorId v, TensorId g);
  // fairseq's GradMultiply: the forward pass is the identity (a view of x, nothing runs), the backward pass
  // scales the gradient by `factor`. After disable_gradient_scaling() it is x itself.
  TensorId grad_multiply(TensorId x, double factor);
  // y[r, ...] = factors[r] · x[r, ...] with fp32 factors shaped as the leading dimensions of x (x viewed as
  // (rows, cols)); the factors are data (a kInput: no gradient), e.g. 0/1 masks of padded positions or per-
  // sentence length scalings (src/cpu/scale_rows.h).
  TensorId scale_rows(TensorId x, TensorId factors);
  // Every later grad_multiply, stop_gradient and discard_gradient is the identity in the backward pass as
  // well: a finite-difference check of a whole model compares against the loss's true gradient, which
  // GradMultiply (a factor) and a stopped gradient (a factor of 0) deliberately are not.
  void disable_gradient_scaling() { gradient_scaling_enabled_ = false; }
  // The graph is built to be compared with central differences of its loss: disable_gradient_scaling(), and
  // values that a model deliberately detaches from the gradient while they still move with the weights take a
  // form that does not move (Mask R-CNN's proposal boxes become their anchors: which anchors are chosen still
  // depends on the weights, but only through discrete choices that a finite difference can detect).
  void use_true_gradients() {
    gradient_scaling_enabled_ = false;
    true_gradients_ = true;
  }
  bool true_gradients() const { return true_gradients_; }

  // Mask R-CNN's ops (src/core/ops/{frozen_affine,roi_align,detection_losses,proposals,detection_targets}.cpp;
  // options and outputs in detection_options.h).
  // Its frozen stem and res2 are frozen_parameter() inputs (above).
  // FrozenBatchNorm2d: y = x · scale[c] + shift[c] over the last (channel) dimension, then ReLU if `relu`;
  // scale and shift are fp32 inputs (C), no gradient; x's gradient is dy · scale (src/cpu/frozen_affine.h).
  TensorId frozen_affine(TensorId x, TensorId scale, TensorId shift, bool relu);
  // MultiScaleRoIAlign over FPN maps `levels` (N, H_l, W_l, C), finest first, level l at stride 2^(k + l) of an
  // image `image_height` high (torchvision infers each scale as 2^round(log2(H_l / image height))), of fp32 rois
  // (R, 5) = (image, x1, y1, x2, y2) -> (R, output_size, output_size, C). Gradients reach the maps, not the RoIs
  // (src/cpu/roi_align.h).
  TensorId roi_align(const std::vector<TensorId>& levels, TensorId rois, int64_t output_size, int64_t image_height,
                     int64_t sampling_ratio = 2, bool aligned = false);
  // Weighted element-wise losses, sum_e weights[e] · f(x[e], targets[e]) (src/cpu/detection_losses.h): fp32
  // targets and weights (data or a sampler's output, no gradient); with `selection.columns` x is read at one class
  // column per group. One-element fp32 losses; the backward pass starts there.
  TensorId bce_with_logits_loss(TensorId x, TensorId targets, TensorId weights, const ClassColumns& selection = {});
  TensorId smooth_l1_loss(TensorId x, TensorId targets, TensorId weights, double beta,
                          const ClassColumns& selection = {});
  // The anchors of every level, (sum of H_l W_l 3, 4) fp32, from a node without inputs (src/cpu/proposals.h).
  TensorId anchor_grid(const std::vector<AnchorLevelSpec>& levels);
  // The RPN's proposals (src/cpu/proposals.h): objectness (N, A) logits, deltas (N, A, 4), anchors (A, 4); the
  // levels' anchor counts split A. Forward only (torchvision detaches proposals). Under use_true_gradients the
  // proposals are the chosen anchors, undecoded.
  Proposals rpn_proposals(TensorId objectness, TensorId deltas, TensorId anchors,
                          const std::vector<int64_t>& level_anchors, int64_t image_height, int64_t image_width,
                          const ProposalOptions& options = {});
  // Anchor labels, regression targets and their loss weights (src/cpu/detection_targets.h) against fp32
  // ground-truth boxes (N, B, 4); int32 sample_ids (N) key the sampler's random draws.
  RpnTargets rpn_targets(TensorId anchors, TensorId gt_boxes, TensorId sample_ids, const RpnTargetOptions& options = {});
  // The RoI heads' sampled RoIs and targets (src/cpu/detection_targets.h): proposals (N, P, 4), ground-truth boxes
  // (N, B, 4) and int32 classes (N, B), int32 sample_ids (N).
  RoiSamples roi_sample(TensorId proposals, TensorId gt_boxes, TensorId gt_classes, TensorId sample_ids,
                        const RoiSampleOptions& options = {});
  // The mask head's targets (Q, resolution, resolution) and per-pixel loss weights from roi_sample's mask outputs.
  MaskTargets mask_targets(const RoiSamples& samples, TensorId gt_boxes, int64_t resolution);

  // The GAN ops (pix2pixHD, shared with StyleGAN), implemented in their families' src/core/ops/<family>.cpp.
  // The value of x with no gradient through it (PyTorch's .detach()): a view, nothing runs. Nothing upstream
  // of it computes a gradient on its account, and the tensors computed from it need none unless another input
  // does (autodiff's requires-gradient rule), so D(label, G(z).detach()) computes no gradient for its input.
  // On a parameter (or its compute-dtype cast) it passes a network whose weights must not receive this loss's
  // gradient, and their weight gradient of this use is not computed.
  TensorId stop_gradient(TensorId x);
  // Like stop_gradient, but the gradient reaching the output is still computed, then dropped: what PyTorch
  // does for pix2pixHD's loss_G.backward() through D, whose parameters require gradients that
  // optimizer_D.zero_grad() then discards (shared/WORKLOADS.md §4 counts that weight-gradient pass).
  TensorId discard_gradient(TensorId x);
  // Instance normalisation without affine parameters (torch.nn.InstanceNorm2d's default): x (N, H, W, C)
  // normalised per (sample, channel) over H·W with the biased variance, y = (x - mean) / sqrt(var + epsilon).
  // The mean and 1 / sqrt(var + epsilon) are kept (fp32, (N, C)) for the backward pass (src/cpu/instance_norm.h).
  TensorId instance_norm(TensorId x, double epsilon);
  // Transposed convolution (torch.nn.ConvTranspose2d, groups 1, no dilation): x (N, H, W, C_in) -> y (N, Ho, Wo,
  // C_out), Ho = (H - 1) stride - pad_top - pad_bottom + kernel + output_padding (padding symmetric, as
  // PyTorch's; `same` not accepted). weight (C_in, R, S, C_out): PyTorch's (C_in, C_out, R, S) in the engine's
  // NHWC filter order, i.e. the (K, R, S, C) weight of the conv y -> x whose adjoint this is; bias (C_out) fp32.
  // 0 <= output_padding < stride: the extra bottom rows / right columns no input reaches except through the
  // kernel's overhang. The forward pass is that conv's backward-data pass, its backward passes are the conv's
  // forward (dx) and backward-filter (dw) passes (src/cpu/conv_transpose2d.h).
  TensorId conv_transpose2d(TensorId x, TensorId weight, TensorId bias, const Conv2dOptions& options,
                            int64_t output_padding);
  // Reflection padding (torch.nn.ReflectionPad2d): x (N, H, W, C) -> (N, H + top + bottom, W + left + right, C),
  // each pad < the extent it mirrors (src/cpu/reflection_pad.h).
  TensorId reflection_pad2d(TensorId x, int64_t top, int64_t bottom, int64_t left, int64_t right);
  // LSGAN's loss (torch.nn.MSELoss against a constant target tensor): mean over every element of
  // (x - target)^2, a one-element fp32 loss (src/cpu/pixel_losses.h).
  TensorId mse_loss(TensorId x, double target);
  // Mean absolute difference (torch.nn.L1Loss): mean over every element of |a - b|, a and b of one shape; a
  // one-element fp32 loss. The gradient is sign(a - b) / n (0 where a = b, as torch.sign).
  TensorId l1_loss(TensorId a, TensorId b);

  // The largest workspace a conv pass is offered (default kDefaultConvWorkspaceLimitBytes); applies to the
  // conv2d calls after it and to their backward passes.
  void set_conv_workspace_limit(uint64_t bytes) { conv_workspace_limit_ = bytes; }

  TensorId layernorm(TensorId x, TensorId gamma, TensorId beta, double epsilon);
  // Rows of `table` (vocab, dim) gathered by int32 `ids`; output shape = ids' shape + (dim).
  TensorId embedding(TensorId ids, TensorId table, int64_t padding_idx = -1);
  // Attention probabilities from scores (batch, heads, q, k): softmax(scale · scores) with keys at or past
  // key_lengths[b] (int32 input, optional) and, when causal, keys after the query masked to 0.
  TensorId masked_softmax(TensorId scores, double scale, TensorId key_lengths = kNoTensor, bool causal = false);
  // Mean over non-ignored rows of the label-smoothed cross-entropy of logits (rows, classes) against int32
  // targets (rows). Returns a one-element loss tensor; the graph's backward starts there.
  TensorId softmax_cross_entropy(TensorId logits, TensorId targets, double label_smoothing, int64_t ignore_index);
  // SQuAD's span loss (HF BertForQuestionAnswering): (mean CE(start) + mean CE(end)) / 2 over logits
  // (batch, seq) each, int32 positions (batch) clamped to [0, seq] with seq ignored (src/cpu/span_loss.h).
  // Returns a one-element loss tensor; the graph's backward starts there.
  TensorId span_loss(TensorId start_logits, TensorId end_logits, TensorId start_positions, TensorId end_positions);
  TensorId scale(TensorId x, double factor);  // y = factor · x (fairseq's embedding scale √d)
  // y (lead..., rows, cols) = x + table (rows, cols) repeated over the leading dimensions (positions added to
  // every sequence of a batch).
  TensorId add_broadcast(TensorId x, TensorId table);
  // (a, b, c, d) -> (a, c, b, d): splitting heads, (batch, time, heads, dh) -> (batch, heads, time, dh), and back.
  TensorId swap_middle(TensorId x);
  // y (lead...) = x (lead..., cols)[..., column]: one column with the last dimension dropped (the start and
  // end logits of SQuAD's 2-way head).
  TensorId select_column(TensorId x, int64_t column);
  // Inverted dropout with probability p (identity at p = 0: no node). Masks come from the counter-based
  // Philox stream of include/scalebench/philox.h, so the CPU and CUDA devices draw the same masks; each
  // dropout node owns a fixed range of the stream, and the executor moves to a fresh range every step. No
  // mask is stored: the backward pass is a dropout of the output gradient over the same range.
  TensorId dropout(TensorId x, double probability);
  // The sum a + weight_b · b of two losses (BERT's MLM + NSP; NASNet's main loss + 0.4 · auxiliary head): the
  // backward pass starts a's loss op with the unit gradient and b's with weight_b (the node attribute
  // "gradient_weight" autodiff puts on b's backward node; the loss kernels multiply their seed by it).
  TensorId add_losses(TensorId a, TensorId b, double weight_b = 1.0);
  // (K, shape...) from K tensors of one shape and dtype, in order: the SAN answer module's per-turn features.
  TensorId stack(const std::vector<TensorId>& parts);

  // MT-DNN's SAN answer module (src/cpu/san.h, shared/WORKLOADS.md §12), one node per block; the workload
  // unrolls the turns. fp32 only: the kernels have no bf16 path, so in a bf16 graph every floating input is
  // converted to fp32 (cached casts; their backward casts the gradient back) and every output is fp32.
  // Masks are uint8 inputs shaped (B, L), nonzero = excluded (PyTorch's masked_fill masks). Implemented in
  // src/core/ops/san.cpp.
  // torch.nn.GRUCell: x (B, I), h (B, H), w_ih (3H, I), w_hh (3H, H), b_ih and b_hh (3H) -> h' (B, H).
  TensorId gru_cell(TensorId x, TensorId h, TensorId w_ih, TensorId w_hh, TensorId b_ih, TensorId b_hh);
  // LinearSelfAttn: sum over unmasked l of softmax_l(memory_l . weight + bias) memory_l.
  //   memory (B, L, H), mask (B, L), weight (1, H) as nn.Linear(H, 1), bias (1) -> (B, H).
  TensorId san_self_attention(TensorId memory, TensorId mask, TensorId weight, TensorId bias);
  // BilinearFlatSim, softmax and weighted sum: alpha = softmax_l(keys_l . (weight state + bias)) over unmasked
  // l, result sum_l alpha_l values_l. keys and values (B, L, Hm) may be one tensor (mt-dnn scores a dropped-
  // out copy of the memory but sums the original); state (B, Hs), mask (B, L), weight (Hm, Hs), bias (Hm).
  TensorId san_bilinear_attention(TensorId keys, TensorId values, TensorId state, TensorId mask, TensorId weight,
                                  TensorId bias);
  // Classifier features [x, s, |x - s|, x * s]: x, s (B, H) -> (B, 4H).
  TensorId san_merge(TensorId x, TensorId s);
  // mt-dnn's stochastic turn dropout (generate_mask) as a (B, K) fp32 mask of 0 and 1 / (1 - drop_p), one
  // turn per row always kept. A forward-only node without inputs: its uniforms come from the dropout Philox
  // stream (its own block range), so the mask is fresh every step, the same on every device and replayed
  // with the step; drawing it on the host would fix it for the run or add a copy to every step.
  TensorId san_turn_mask(int64_t batch, int64_t turns, double drop_p);
  // log(mean_t turn_mask[b, t] * softmax(turn_logits[t, b])): turn_logits (K, B, C), turn_mask (B, K) ->
  // scores (B, C), log-probabilities up to the dropped turns' mass; softmax_cross_entropy over them is
  // mt-dnn's F.cross_entropy on the SAN output.
  TensorId san_turn_average(TensorId turn_logits, TensorId turn_mask);

  // Greedy decoding inside the graph (src/cpu/decode.h), implemented in src/core/ops/decode.cpp
  // (copy: memory.cpp).
  // None of these has a gradient; the ops that write in place name their destination as their output.
  // An activation no node produces: a buffer that in-place ops write (a key/value cache, generated ids, a step
  // counter). Tensors a repeated graph part touches live for the whole repetition (StepPart, planner.h).
  TensorId buffer(const std::string& name, std::vector<int64_t> shape, DType dtype);
  // (rows, V) logits in any floating dtype -> int32 (rows): the first largest column of each row.
  TensorId argmax(TensorId logits);
  // dst (outer, time, inner) at time counter[0] + offset := src, which holds outer · inner elements of dst's
  // dtype in any shape. Nothing is written when that time is outside [0, time).
  void write_at_counter(TensorId dst, TensorId src, TensorId counter, int64_t offset);
  // An int32 tensor of `shape` filled with counter[0] + offset (positions, key lengths of a decode step).
  TensorId fill_from_counter(TensorId counter, std::vector<int64_t> shape, int64_t offset);
  // counter (int32, one element) := keep · counter + add.
  void update_counter(TensorId counter, int64_t keep, int64_t add);
  // ids (rows, time) int32: eos at lengths[r] - 1, pad after it (src/cpu/decode.h).
  void end_sentences(TensorId ids, TensorId lengths, int64_t eos, int64_t pad);
  // dst := src, the same dtype and element count (a device-to-device copy: switching a graph's inputs).
  void copy(TensorId dst, TensorId src);
  // StyleGAN's ops (shared/WORKLOADS.md §5), implemented in their families' src/core/ops/<family>.cpp (constant
  // and upscale_conv2d in src/engine/graph_builder_stylegan.cpp); NHWC.
  // A tensor of `value` everywhere, written by a `fill` node without inputs (a constant for autodiff).
  TensorId constant(std::vector<int64_t> shape, double value);
  // The fixed [1, 2, 1] ⊗ [1, 2, 1] / 16 depthwise blur, zero padding 1, stride 1 (src/cpu/blur.h).
  TensorId blur2d(TensorId x);
  // x (N, H, W, C) -> (N, H, W, C + 1): the minibatch standard deviation in groups of min(group_size, part)
  // samples, where the parts are set_batchnorm_groups' statistics groups (each data-parallel rank's share in the
  // --check's one-rank reference): src/cpu/minibatch_stddev.h.
  TensorId minibatch_stddev(TensorId x, int64_t group_size);
  // One-element losses (src/cpu/gan_losses.h): mean_n softplus(sign · scores[n]) over scores (N, ...) with one
  // value per sample, and scale / N · ||x||² over x (N, ...) (the R1 penalty with scale gamma / 2).
  TensorId softplus_loss(TensorId scores, double sign);
  TensorId squared_norm_loss(TensorId x, double scale);
  // The 4 x 4 weight of a fused up (factor 1) or down (factor 0.25) sampling conv from a 3 x 3 weight
  // (K, 3, 3, C) -> (K, 4, 4, C) (src/cpu/fused_conv_weight.h).
  TensorId fused_conv_weight(TensorId weight3x3, bool downsample);
  // StyleGAN's fused x2 up-sampling conv: x (N, H, W, K) -> (N, 2H, 2W, C), the transposed 4 x 4 stride-2 conv
  // (TF conv2d_transpose, padding SAME) with weight (K, 4, 4, C), i.e. the data gradient of the stride-2 conv
  // (N, 2H, 2W, C) -> (N, H, W, K) with padding 1: a `conv2d_backward_data` node run as a forward op (its rules
  // in src/core/ops/conv2d.cpp serve both uses).
  TensorId upscale_conv2d(TensorId x, TensorId weight4x4);
  // Pixel norm over the last dimension of x (rows, C) (src/cpu/pixel_norm.h).
  TensorId pixel_norm(TensorId x);
  // x (N, H, W, C) + weight[c] · noise[n, h, w] with fresh N(0, 1) noise every step drawn for each sample's global
  // index sample_ids[n] (an int32 input (N)): src/cpu/noise_injection.h. weight (C) fp32.
  TensorId noise_injection(TensorId x, TensorId weight, TensorId sample_ids);
  // x (N, H, W, C) · (1 + style[:, :C]) + style[:, C:], style (N, 2C) (src/cpu/style_modulation.h).
  TensorId style_modulation(TensorId x, TensorId style);
  // Per-layer dlatents (num_layers tensors (N, D)) from w (2N, D) and int32 crossover layers (N)
  // (src/cpu/style_mix.h).
  std::vector<TensorId> style_mix(TensorId w, TensorId crossover, int64_t num_layers);
  // A kState copy of `parameter` named "<name>.ema", updated in place by an `ema_update` node appended now
  // (src/cpu/ema.h): appended first in a graph, it averages the weights the previous step's optimizer wrote.
  TensorId moving_average(TensorId parameter, double beta);

  // A view with another shape over the same elements: a `view` node that runs nothing; the planner gives the
  // view the storage of x (and keeps x alive as long as the view is).
  TensorId reshape(TensorId x, std::vector<int64_t> shape);
  // x in the compute dtype: x itself, or (once per tensor, cached) a `cast` node's output.
  TensorId in_compute_dtype(TensorId x);
  TensorId converted(TensorId x, DType dtype);  // the same for any floating dtype

 private:
  TensorId elementwise(const std::string& op, TensorId x);  // one input, same shape (gelu, relu, tanh)
  TensorId activation(const std::string& name, std::vector<int64_t> shape);  // in the compute dtype
  TensorId activation(const std::string& name, std::vector<int64_t> shape, DType dtype);
  const std::vector<int64_t>& shape(TensorId id) const { return graph_.tensor(id).shape; }
  std::string next_name(const std::string& op);

  Graph& graph_;
  DType compute_;
  std::map<std::pair<TensorId, DType>, TensorId> copies_;  // (tensor, dtype) -> its cast into that dtype
  std::map<std::string, TensorId> parameters_;              // the parameters by name
  int counter_ = 0;
  int64_t dropout_blocks_ = 0;
  bool dropout_enabled_ = true;  // Philox blocks used by this graph's dropout nodes so far
  bool gradient_scaling_enabled_ = true;  // grad_multiply scales gradients (disable_gradient_scaling)
  bool true_gradients_ = false;           // use_true_gradients
  uint64_t conv_workspace_limit_ = kDefaultConvWorkspaceLimitBytes;
  int64_t batchnorm_groups_ = 1;
  std::string parameter_group_;
};

}  // namespace sb
