// nasnet_large: NASNet-A Large at 331 x 331, 1000 classes (shared/WORKLOADS.md §1), cell by cell as Cadene's
// pretrainedmodels nasnet.py (NASNetALarge, the port of TF-slim's build_nasnet_large): penultimate_filters 4032
// (F = 168, doubled at each reduction), stem 96, conv0 -> cell_stem_0 -> cell_stem_1 -> 3 stages of one
// FirstCell + 5 NormalCells with reduction_cell_0/1 between them -> ReLU, global average, dropout 0.5, FC.
// Convolutions are bias-free, BatchNorm eps 1e-3 momentum 0.1; every ReLU comes before its convolution, and
// the one inside a separable branch (BN -> ReLU) is fused into the BN. [choice] (WORKLOADS.md §1): no auxiliary
// head, no drop-path; loss = cross-entropy with label smoothing 0.1. Parameter names follow Cadene's state_dict
// with each BatchNorm "bn" spelled "norm" ("cell_3.comb_iter_0_left.norm_sep_1.weight"). Two identical ops on
// one tensor are built once: the ReLU that several of Cadene's modules apply to the same input, the reduction
// cells' max pool of comb_iter_1_left and comb_iter_4_right, the normal cells' two average pools of comb_iter_3.
// Forward work from the layer shapes: 23.783 GMAC per image (WORKLOADS.md's 23.810 were measured on Cadene's
// code, which also computes the row and column reduction_cell_0 crops away). Tests: test_nasnet_large.cpp.
#include <map>
#include <random>
#include <string>
#include <vector>

#include "scalebench/workload.h"

namespace sb::workloads {
namespace {

struct Dims {
  int64_t image;         // input side in pixels
  int64_t stem_filters;  // conv0's output channels
  int64_t filters;       // F of the first stage: penultimate_filters / 24; cell_stem_0 has F / 4, cell_stem_1 F / 2
  int64_t cells;         // per stage: one FirstCell, then cells - 1 NormalCells
  int64_t classes;
};

// Tiny: 43 x 43 gives the spatial sizes 21, 11, 6, 3, 2 with the parities of the full 165, 83, 42, 21, 11, so
// reduction_cell_0 reads an even input (where its TF-"SAME" padding is asymmetric) and the factorized
// reductions see odd and even inputs, as at full scale.
Dims dims_for(WorkloadScale scale) {
  return scale == WorkloadScale::kFull ? Dims{331, 96, 4032 / 24, 6, 1000} : Dims{43, 8, 8, 2, 10};
}

// GraphBuilder calls with NASNet's conventions, counting the forward multiply-adds per image as layers are added.
class Net {
 public:
  explicit Net(GraphBuilder& b) : b_(b) {}
  GraphBuilder& b() { return b_; }
  double macs_per_image() const { return macs_; }
  int64_t channels(TensorId x) const { return b_.graph().tensor(x).shape.back(); }

  // One ReLU node per tensor, shared by every branch that reads max(x, 0).
  TensorId relu(TensorId x) {
    auto found = relu_of_.find(x);
    if (found == relu_of_.end()) found = relu_of_.emplace(x, b_.relu(x)).first;
    return found->second;
  }

  // Bias-free kernel x kernel convolution to `out` channels; the weight (out, k, k, C / groups) is name.weight.
  TensorId conv(const std::string& name, TensorId x, int64_t out, int64_t kernel, const Conv2dOptions& options) {
    const int64_t in_per_group = channels(x) / options.groups;
    const TensorId y = b_.conv2d(x, b_.parameter(name + ".weight", {out, kernel, kernel, in_per_group}), kNoTensor,
                                 options);
    const std::vector<int64_t>& ys = b_.graph().tensor(y).shape;  // (N, Ho, Wo, out)
    macs_ += static_cast<double>(ys[1] * ys[2] * out * kernel * kernel * in_per_group);
    return y;
  }
  TensorId pointwise(const std::string& name, TensorId x, int64_t out) { return conv(name, x, out, 1, {}); }
  // groups = channels; `options` gives the stride and padding.
  TensorId depthwise(const std::string& name, TensorId x, int64_t kernel, Conv2dOptions options) {
    options.groups = channels(x);
    return conv(name, x, channels(x), kernel, options);
  }

  TensorId norm(const std::string& name, TensorId x, bool relu_after = false) {
    BatchNormOptions options;
    options.epsilon = 1e-3;
    options.momentum = 0.1;
    if (relu_after) options.activation = BatchNormOptions::Activation::kRelu;
    const int64_t c = channels(x);
    return b_.batchnorm(x, b_.parameter(name + ".weight", {c}), b_.parameter(name + ".bias", {c}), options);
  }

  TensorId linear(const std::string& name, TensorId x, int64_t out) {
    const int64_t in = channels(x);
    macs_ += static_cast<double>(in * out);
    return b_.linear(x, b_.parameter(name + ".weight", {out, in}), b_.parameter(name + ".bias", {out}));
  }

 private:
  GraphBuilder& b_;
  std::map<TensorId, TensorId> relu_of_;
  double macs_ = 0;
};

// ReLU -> conv 1 x 1 -> BN (Cadene's conv_1x1 / conv_prev_1x1): a cell input projected to `out` channels.
TensorId projection(Net& n, const std::string& name, TensorId x, int64_t out) {
  return n.norm(name + ".norm", n.pointwise(name + ".conv", n.relu(x), out));
}

// The cell input two back, from twice the resolution, reduced to `out` channels (Cadene's path_1 / path_2 /
// final_path_bn): ReLU, then two halves of out / 2 channels concatenated and normalised. path_1 is
// AvgPool2d(1, stride 2) -> conv 1 x 1, i.e. the 1 x 1 conv at stride 2; path_2 first shifts the image by one
// pixel (ZeroPad2d((0, 1, 0, 1)), crop [1:, 1:]) so it samples the odd rows and columns, the last one a zero
// row past an odd-sized input: a 1 x 1 stride-2 average with pads -1 (the crop) and +1 that counts the pad.
TensorId factorized_reduction(Net& n, const std::string& cell, TensorId x, int64_t out) {
  const TensorId r = n.relu(x);
  const TensorId path_1 = n.conv(cell + ".path_1.conv", r, out / 2, 1, Conv2dOptions::with(2, 0));
  Conv2dOptions shifted = Conv2dOptions::with(2, 0);
  shifted.pad_top = shifted.pad_left = -1;
  shifted.pad_bottom = shifted.pad_right = 1;
  const TensorId path_2 = n.pointwise(cell + ".path_2.conv", n.b().avg_pool2d(r, 1, shifted, true), out / 2);
  return n.norm(cell + ".final_path_norm", n.b().concat({path_1, path_2}));
}

// Cadene's BranchSeparables: ReLU -> depthwise k x k (stride) -> pointwise to `middle` -> BN + ReLU ->
// depthwise k x k -> pointwise to `out` -> BN. middle = the input's channels, except in BranchSeparablesStem
// (cell_stem_0's branches on conv0) where the first pointwise already goes to `out`. tf_same: the first
// depthwise pads as TF "SAME" (reduction_cell_0's BranchSeparablesReduction: ZeroPad2d((1, 0, 1, 0)), conv
// with padding k / 2, crop [1:, 1:], which is "SAME" on its even input); otherwise k / 2 on every side.
TensorId separable_branch(Net& n, const std::string& name, TensorId x, int64_t middle, int64_t out, int64_t kernel,
                          int64_t stride, bool tf_same) {
  const Conv2dOptions first = tf_same ? Conv2dOptions::same_padding(stride) : Conv2dOptions::with(stride, kernel / 2);
  TensorId h = n.depthwise(name + ".separable_1.depthwise_conv2d", n.relu(x), kernel, first);
  h = n.norm(name + ".norm_sep_1", n.pointwise(name + ".separable_1.pointwise_conv2d", h, middle), true);
  h = n.depthwise(name + ".separable_2.depthwise_conv2d", h, kernel, Conv2dOptions::with(1, kernel / 2));
  return n.norm(name + ".norm_sep_2", n.pointwise(name + ".separable_2.pointwise_conv2d", h, out));
}

// NASNet's 3 x 3 average at stride 1 whose divisor is the pixels inside the window (count_include_pad=False).
TensorId average_3x3(Net& n, TensorId x) { return n.b().avg_pool2d(x, 3, Conv2dOptions::with(1, 1), false); }

// The 3 x 3 stride-2 pools of a reduction cell, padding 1 on every side or TF "SAME" (reduction_cell_0's
// MaxPoolPad / AvgPoolPad: ZeroPad2d((1, 0, 1, 0)), pool with padding 1, crop [1:, 1:]; the zero row never
// enters a kept window, so on its even input this is "SAME": no padding before, one after).
TensorId reduction_pool(Net& n, TensorId x, bool max, bool tf_same) {
  const Conv2dOptions options = tf_same ? Conv2dOptions::same_padding(2) : Conv2dOptions::with(2, 1);
  return max ? n.b().max_pool2d(x, 3, options) : n.b().avg_pool2d(x, 3, options, false);
}

// A reduction-type cell (CellStem0, CellStem1, ReductionCell0/1) of `filters` channels per combination at half
// resolution, out = concat of 4 x filters. `a` is what Cadene's *_left branches read (the projected x of a
// reduction cell; the projection of the previous stem output in a stem cell), `b` what the *_right branches
// read (the projected x_prev; conv0 itself in cell_stem_0, whose `b` branches are BranchSeparablesStem).
TensorId reduction_cell(Net& n, const std::string& name, TensorId a, TensorId b, int64_t filters, bool stem_branches,
                        bool tf_same) {
  const int64_t b_middle = stem_branches ? filters : n.channels(b);
  auto branch = [&](const std::string& which, TensorId x, int64_t middle, int64_t kernel, int64_t stride) {
    return separable_branch(n, name + "." + which, x, middle, filters, kernel, stride, tf_same);
  };
  GraphBuilder& g = n.b();
  const TensorId max_a = reduction_pool(n, a, true, tf_same);  // comb_iter_1_left and comb_iter_4_right
  const TensorId c0 =
      g.add(branch("comb_iter_0_left", a, filters, 5, 2), branch("comb_iter_0_right", b, b_middle, 7, 2));
  const TensorId c1 = g.add(max_a, branch("comb_iter_1_right", b, b_middle, 7, 2));
  const TensorId c2 = g.add(reduction_pool(n, a, false, tf_same), branch("comb_iter_2_right", b, b_middle, 5, 2));
  const TensorId c3 = g.add(average_3x3(n, c0), c1);
  const TensorId c4 = g.add(branch("comb_iter_4_left", c0, filters, 3, 1), max_a);
  return g.concat({c1, c2, c3, c4});
}

// NormalCell / FirstCell over `left` (x_prev projected, or factorized-reduced in a FirstCell) and `right` (x
// projected), both `filters` wide: out = concat of 6 x filters, `left` first.
TensorId normal_cell(Net& n, const std::string& name, TensorId left, TensorId right, int64_t filters) {
  auto branch = [&](const std::string& which, TensorId x, int64_t kernel) {
    return separable_branch(n, name + "." + which, x, filters, filters, kernel, 1, false);
  };
  GraphBuilder& g = n.b();
  const TensorId c0 = g.add(branch("comb_iter_0_left", right, 5), branch("comb_iter_0_right", left, 3));
  const TensorId c1 = g.add(branch("comb_iter_1_left", left, 5), branch("comb_iter_1_right", left, 3));
  const TensorId c2 = g.add(average_3x3(n, right), left);
  const TensorId average_left = average_3x3(n, left);  // comb_iter_3_left and comb_iter_3_right
  const TensorId c3 = g.add(average_left, average_left);
  const TensorId c4 = g.add(branch("comb_iter_4_left", right, 3), right);
  return g.concat({left, c0, c1, c2, c3, c4});
}

class NasnetLarge final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo{"nasnet_large", "ImageNet classification, 331px", "images", 64, 88753150,
                                    "Cadene pretrainedmodels NASNetALarge (TF-slim nasnet_large), 1000 classes",
                                    "images"};
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
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

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const Dims d = dims_for(scale);
    Net n(b);
    const TensorId images = b.input("images", {batch, d.image, d.image, 3});  // NHWC, normalised pixels
    const TensorId labels = b.input("labels", {batch}, DType::kInt32);

    const TensorId conv0 =
        n.norm("conv0.norm", n.conv("conv0.conv", images, d.stem_filters, 3, Conv2dOptions::with(2, 0)));
    const int64_t f = d.filters;
    const TensorId stem_0 = reduction_cell(n, "cell_stem_0", projection(n, "cell_stem_0.conv_1x1", conv0, f / 4),
                                           conv0, f / 4, true, false);
    const TensorId stem_1 =
        reduction_cell(n, "cell_stem_1", projection(n, "cell_stem_1.conv_1x1", stem_0, f / 2),
                       factorized_reduction(n, "cell_stem_1", conv0, f / 2), f / 2, false, false);

    // Each cell reads x (the last output) and x_prev (the one before); the FirstCell after a reduction reads
    // the reduction's own x_prev (Cadene: cell_6(reduction_cell_0, cell_4)).
    TensorId x = stem_1, x_prev = stem_0;
    int64_t cell = 0;
    for (int64_t stage = 0; stage < 3; ++stage) {
      const int64_t filters = f << stage;
      if (stage > 0) {
        const std::string name = "reduction_cell_" + std::to_string(stage - 1);
        x = reduction_cell(n, name, projection(n, name + ".conv_1x1", x, filters),
                           projection(n, name + ".conv_prev_1x1", x_prev, filters), filters, false, stage == 1);
      }
      for (int64_t i = 0; i < d.cells; ++i, ++cell) {
        const std::string name = "cell_" + std::to_string(cell);
        const TensorId left = i == 0 ? factorized_reduction(n, name, x_prev, filters)
                                     : projection(n, name + ".conv_prev_1x1", x_prev, filters);
        const TensorId out = normal_cell(n, name, left, projection(n, name + ".conv_1x1", x, filters), filters);
        x_prev = x;
        x = out;
      }
    }

    const TensorId pooled = b.reshape(b.global_avg_pool(n.relu(x)), {batch, n.channels(x)});
    const TensorId logits = n.linear("last_linear", b.dropout(pooled, 0.5), d.classes);
    BuiltWorkload built;
    built.loss = b.softmax_cross_entropy(logits, labels, 0.1, -1);
    built.units_per_step = static_cast<double>(batch);
    built.forward_flops_per_unit = 2 * n.macs_per_image();
    return built;
  }

  // Pixels uniform in [-1, 1] (Cadene's normalisation, mean = std = 0.5, of values in [0, 1]) and a uniform
  // label, both drawn from the sample's own generator.
  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    const TensorInfo& images = graph.tensor(graph.find_tensor("images"));
    const int64_t batch = images.shape[0], pixels = images.shape[1] * images.shape[2] * images.shape[3];
    const int64_t classes = graph.tensor(graph.find_tensor("last_linear.bias")).shape[0];
    std::vector<float> values(static_cast<size_t>(batch * pixels));
    std::vector<int32_t> labels(static_cast<size_t>(batch));
    std::uniform_real_distribution<float> pixel(-1.0f, 1.0f);
    for (int64_t s = 0; s < batch; ++s) {
      std::mt19937_64 random = sample_random(seed, first_sample + s);
      labels[s] = std::uniform_int_distribution<int32_t>(0, static_cast<int32_t>(classes - 1))(random);
      for (int64_t i = 0; i < pixels; ++i) values[s * pixels + i] = pixel(random);
    }
    write_input(write, graph, "images", values);
    write_input(write, graph, "labels", labels);
  }
};

}  // namespace

const Workload& nasnet_large() {
  static const NasnetLarge kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
