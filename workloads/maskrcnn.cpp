// maskrcnn: Mask R-CNN with a ResNet-50-FPN backbone at 800 x 1344 (shared/WORKLOADS.md §6; torchvision's
// maskrcnn_resnet50_fpn layout with maskrcnn-benchmark's R-50-FPN settings). ResNet-50 MSRA (stride in the first
// 1 x 1 of a block) with FrozenBatchNorm (a fixed per-channel affine) after every conv, conv1 and res2 frozen
// (their weights are inputs: no gradient, and no backward pass runs below res3); FPN P2-P6; the RPN head over
// every level, anchors, per-level top-2000, NMS 0.7 to 2000 proposals per image; proposal matching and sampling
// (512 RoIs per image, at most 25 % positive); RoIAlign 7 x 7 into the box head (FC 1024 x 2, 81 classes, 324
// deltas) and 14 x 14 into the mask head (4 convs, a 2 x 2 stride-2 transposed conv, 81 masks of 28 x 28) for a
// fixed 64 positives per image; five losses. Every count is static (detection_options.h), so the graph never
// depends on the data. Parameters are torchvision's names; 44,125,173 trained, 222,400 frozen.
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/workload.h"

namespace sb::workloads {
namespace {

struct Shape {
  int64_t image_h, image_w;   // padded to a multiple of 32 (five stride-2 stages)
  int64_t stem;               // conv1's channels (64)
  int64_t widths[4];          // bottleneck widths of res2..res5 (64, 128, 256, 512); outputs are 4x
  int64_t blocks[4];          // 3, 4, 6, 3
  int64_t fpn;                // 256
  double anchor_size;         // of P2 (32); x2 per level
  int64_t pre_nms, post_nms;  // 2000, 2000 per image
  int64_t rois, mask_rois;    // 512, 64 per image
  int64_t representation;     // the box head's FC width (1024)
  int64_t classes;            // 81 with background
  int64_t boxes;              // ground-truth instances per image
};

// Tiny: the same graph at 64 x 64 (P2 16 x 16 .. P6 1 x 1, 1,023 anchors per image), one block per stage of width
// 4 to 32, FPN width 8, anchors 8 to 128 pixels, 50 candidates per level and 60 proposals, 16 RoIs and 4 mask RoIs
// per image, 3 classes, 3 boxes.
Shape shape_for(WorkloadScale scale) {
  if (scale == WorkloadScale::kFull) {
    return Shape{800, 1344, 64, {64, 128, 256, 512}, {3, 4, 6, 3}, 256, 32, 2000, 2000, 512, 64, 1024, 81, 8};
  }
  return Shape{64, 64, 4, {4, 8, 16, 32}, {1, 1, 1, 1}, 8, 8, 50, 60, 16, 4, 16, 3, 3};
}

// Synthetic instances: width and height log-uniform over this range of the image's (40 to 670 pixels at full
// scale: every anchor level gets positives), centred so the box lies inside; masks are the inscribed ellipses.
constexpr double kSmallestBox = 0.05, kLargestBox = 0.5;
constexpr double kFrozenBnEpsilon = 0.0;  // maskrcnn-benchmark's FrozenBatchNorm2d: scale = weight / sqrt(var)

// Builds the network, naming tensors as torchvision does, and counts the forward multiply-adds of its convs
// and linear layers as they are appended.
class Builder {
 public:
  Builder(GraphBuilder& b, const Shape& s) : b_(b), s_(s) {}

  // conv (no bias) + FrozenBatchNorm (+ ReLU). Frozen layers take their weight as an input.
  TensorId conv_bn(TensorId x, const std::string& conv, const std::string& bn, int64_t out, int64_t kernel,
                   int64_t stride, bool relu, bool frozen) {
    const int64_t in = b_.graph().tensor(x).shape[3];
    const std::vector<int64_t> shape = {out, kernel, kernel, in};  // (K, R, S, C)
    const TensorId w = frozen ? b_.frozen_parameter(conv + ".weight", shape) : b_.parameter(conv + ".weight", shape);
    const TensorId y = count(b_.conv2d(x, w, kNoTensor, Conv2dOptions::with(stride, kernel / 2)), kernel * kernel * in);
    return b_.frozen_affine(y, b_.input(bn + ".scale", {out}), b_.input(bn + ".shift", {out}), relu);
  }
  // A conv with bias and no normalisation (FPN, heads).
  TensorId conv(TensorId x, const std::string& name, int64_t out, int64_t kernel) {
    const int64_t in = b_.graph().tensor(x).shape[3];
    const TensorId w = b_.parameter(name + ".weight", {out, kernel, kernel, in});
    return count(b_.conv2d(x, w, b_.parameter(name + ".bias", {out}), Conv2dOptions::with(1, kernel / 2)),
                 kernel * kernel * in);
  }
  TensorId linear(TensorId x, const std::string& name, int64_t out) {
    const int64_t in = b_.graph().tensor(x).shape.back();
    macs_ += double(b_.graph().tensor(x).elements()) * double(out);
    return b_.linear(x, b_.parameter(name + ".weight", {out, in}), b_.parameter(name + ".bias", {out}));
  }

  // A bottleneck (torchvision's layout, maskrcnn-benchmark's stride in the first 1 x 1): 1 x 1, 3 x 3, 1 x 1 (x4)
  // with the downsampling 1 x 1 on the first block of a stage.
  TensorId bottleneck(TensorId x, const std::string& name, int64_t width, int64_t stride, bool first, bool frozen) {
    TensorId y = conv_bn(x, name + ".conv1", name + ".bn1", width, 1, stride, true, frozen);
    y = conv_bn(y, name + ".conv2", name + ".bn2", width, 3, 1, true, frozen);
    y = conv_bn(y, name + ".conv3", name + ".bn3", 4 * width, 1, 1, false, frozen);
    const TensorId shortcut =
        first ? conv_bn(x, name + ".downsample.0", name + ".downsample.1", 4 * width, 1, stride, false, frozen) : x;
    return b_.relu(b_.add(y, shortcut));
  }

  // ResNet-50's C2..C5.
  std::array<TensorId, 4> body(TensorId images) {
    TensorId x = conv_bn(images, "backbone.body.conv1", "backbone.body.bn1", s_.stem, 7, 2, true, true);
    x = b_.max_pool2d(x, 3, Conv2dOptions::with(2, 1));
    std::array<TensorId, 4> c{};
    for (int stage = 0; stage < 4; ++stage) {
      for (int64_t k = 0; k < s_.blocks[stage]; ++k) {
        const std::string name = "backbone.body.layer" + std::to_string(stage + 1) + "." + std::to_string(k);
        x = bottleneck(x, name, s_.widths[stage], k == 0 && stage > 0 ? 2 : 1, k == 0, stage == 0);
      }
      c[size_t(stage)] = x;
    }
    return c;
  }

  // FPN: laterals, top-down nearest x2 and add, 3 x 3 outputs; P6 = max_pool(P5, 1, stride 2).
  std::array<TensorId, 5> fpn(const std::array<TensorId, 4>& c) {
    std::array<TensorId, 5> p{};
    TensorId inner = conv(c[3], "backbone.fpn.inner_blocks.3", s_.fpn, 1);
    p[3] = conv(inner, "backbone.fpn.layer_blocks.3", s_.fpn, 3);
    for (int l = 2; l >= 0; --l) {
      const TensorId lateral = conv(c[size_t(l)], "backbone.fpn.inner_blocks." + std::to_string(l), s_.fpn, 1);
      const std::vector<int64_t>& ls = b_.graph().tensor(lateral).shape;
      inner = b_.add(lateral, b_.upsample_nearest(inner, ls[1], ls[2]));
      p[size_t(l)] = conv(inner, "backbone.fpn.layer_blocks." + std::to_string(l), s_.fpn, 3);
    }
    p[4] = b_.max_pool2d(p[3], 1, Conv2dOptions::with(2, 0));
    return p;
  }

  double macs() const { return macs_; }

 private:
  TensorId count(TensorId y, int64_t per_output) {
    const std::vector<int64_t>& ys = b_.graph().tensor(y).shape;  // (N, Ho, Wo, K)
    macs_ += double(ys[0] * ys[1] * ys[2]) * double(ys[3]) * double(per_output);
    return y;
  }

  GraphBuilder& b_;
  const Shape& s_;
  double macs_ = 0;
};

// (N, H, W, k) per level -> (N, sum of H W k): the levels' outputs in anchor order.
TensorId flatten_levels(GraphBuilder& b, const std::vector<TensorId>& maps) {
  std::vector<TensorId> flat;
  for (TensorId m : maps) {
    const std::vector<int64_t>& ms = b.graph().tensor(m).shape;
    flat.push_back(b.reshape(m, {ms[0], ms[1] * ms[2] * ms[3]}));
  }
  return b.concat(flat);
}

class MaskRcnn final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo = [] {
      WorkloadInfo info{"maskrcnn", "instance segm. (COCO) 800x1344", "images", 16, 44125173,
                        "torchvision maskrcnn_resnet50_fpn / maskrcnn-benchmark e2e_mask_rcnn_R_50_FPN_1x", "images"};
      info.frozen_parameters = 222400;  // conv1 and res2 (GraphBuilder::frozen_parameter)
      return info;
    }();
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
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

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const Shape s = shape_for(scale);
    const TensorId images = b.input("images", {batch, s.image_h, s.image_w, 3});  // NHWC, normalised pixels
    const TensorId gt_boxes = b.input("gt_boxes", {batch, s.boxes, 4});          // (x1, y1, x2, y2) pixels
    const TensorId gt_classes = b.input("gt_classes", {batch, s.boxes}, DType::kInt32);
    const TensorId sample_ids = b.input("sample_ids", {batch}, DType::kInt32);   // keys the samplers' draws

    Builder net(b, s);
    const std::array<TensorId, 5> p = net.fpn(net.body(images));

    // RPN head, shared over P2..P6.
    std::vector<TensorId> objectness_maps, delta_maps;
    std::vector<AnchorLevelSpec> levels;
    std::vector<int64_t> level_anchors;
    const TensorId rpn_conv_w = b.parameter("rpn.head.conv.weight", {s.fpn, 3, 3, s.fpn});
    const TensorId rpn_conv_b = b.parameter("rpn.head.conv.bias", {s.fpn});
    const TensorId cls_w = b.parameter("rpn.head.cls_logits.weight", {3, 1, 1, s.fpn});
    const TensorId cls_b = b.parameter("rpn.head.cls_logits.bias", {3});
    const TensorId bbox_w = b.parameter("rpn.head.bbox_pred.weight", {12, 1, 1, s.fpn});
    const TensorId bbox_b = b.parameter("rpn.head.bbox_pred.bias", {12});
    double rpn_macs = 0;
    for (int l = 0; l < 5; ++l) {
      const std::vector<int64_t> ps = b.graph().tensor(p[size_t(l)]).shape;
      const TensorId t = b.relu(b.conv2d(p[size_t(l)], rpn_conv_w, rpn_conv_b, Conv2dOptions::with(1, 1)));
      objectness_maps.push_back(b.conv2d(t, cls_w, cls_b));
      delta_maps.push_back(b.conv2d(t, bbox_w, bbox_b));
      rpn_macs += double(ps[1] * ps[2]) * double(s.fpn) * double(9 * s.fpn + 15);
      levels.push_back({ps[1], ps[2], s.image_h, s.image_w, s.anchor_size * double(1 << l)});
      level_anchors.push_back(ps[1] * ps[2] * 3);
    }
    const TensorId objectness = flatten_levels(b, objectness_maps);  // (N, A)
    const TensorId deltas_flat = flatten_levels(b, delta_maps);
    const int64_t anchor_count = b.graph().tensor(objectness).shape[1];
    const TensorId deltas = b.reshape(deltas_flat, {batch, anchor_count, 4});
    const TensorId anchors = b.anchor_grid(levels);

    ProposalOptions proposal_options;
    proposal_options.pre_nms_top_n = s.pre_nms, proposal_options.post_nms_top_n = s.post_nms;
    const Proposals proposals = b.rpn_proposals(objectness, deltas, anchors, level_anchors, s.image_h, s.image_w,
                                                proposal_options);
    const RpnTargets rpn = b.rpn_targets(anchors, gt_boxes, sample_ids);
    RoiSampleOptions sample_options;
    sample_options.rois_per_image = s.rois, sample_options.mask_rois_per_image = s.mask_rois;
    const RoiSamples samples = b.roi_sample(proposals.boxes, gt_boxes, gt_classes, sample_ids, sample_options);
    const std::vector<TensorId> pooled_levels(p.begin(), p.begin() + 4);

    // Box head: RoIAlign 7 x 7, flatten (NHWC: a fixed permutation of torchvision's NCHW flattening of fc6's
    // input), FC 1024 + ReLU twice, class scores and class-specific deltas.
    const int64_t rois = batch * s.rois;
    TensorId x = b.roi_align(pooled_levels, samples.rois, 7, s.image_h);
    x = b.reshape(x, {rois, 7 * 7 * s.fpn});
    x = b.relu(net.linear(x, "roi_heads.box_head.fc6", s.representation));
    x = b.relu(net.linear(x, "roi_heads.box_head.fc7", s.representation));
    const TensorId class_logits = net.linear(x, "roi_heads.box_predictor.cls_score", s.classes);
    const TensorId box_deltas = net.linear(x, "roi_heads.box_predictor.bbox_pred", 4 * s.classes);

    // Mask head on the fixed mask RoIs: RoIAlign 14 x 14, four 3 x 3 convs, the 2 x 2 stride-2 transposed conv
    // (torch.nn.ConvTranspose2d(256, 256, 2, stride 2): weight (C_in, 2, 2, C_out) in the engine's order, bias
    // 256) + ReLU, 1 x 1 to one mask per class.
    const int64_t mask_rois = batch * s.mask_rois;
    TensorId m = b.roi_align(pooled_levels, samples.mask_rois, 14, s.image_h);
    for (int k = 1; k <= 4; ++k) m = b.relu(net.conv(m, "roi_heads.mask_head.mask_fcn" + std::to_string(k), s.fpn, 3));
    m = b.relu(b.conv_transpose2d(m, b.parameter("roi_heads.mask_predictor.conv5_mask.weight", {s.fpn, 2, 2, s.fpn}),
                                  b.parameter("roi_heads.mask_predictor.conv5_mask.bias", {s.fpn}),
                                  Conv2dOptions::with(2, 0), 0));  // (Q, 28, 28, C)
    // Each input pixel meets the 2 x 2 x C_out kernel once (kernel = stride: no overlap).
    const double transposed_macs = double(mask_rois) * 14 * 14 * double(4 * s.fpn) * double(s.fpn);
    const TensorId mask_logits = net.conv(m, "roi_heads.mask_predictor.mask_fcn_logits", s.classes, 1);
    const MaskTargets mask_targets = b.mask_targets(samples, gt_boxes, 28);

    // The five losses (torchvision's keys): objectness and RPN box regression (smooth L1, beta 1/9, over the 256
    // sampled anchors per image), classifier (CE over the 512 RoIs) and box regression (smooth L1, beta 1, the
    // positives' ground-truth-class deltas over all RoIs, maskrcnn-benchmark's), mask (per-pixel BCE on the
    // ground-truth class's mask).
    TensorId loss = b.bce_with_logits_loss(objectness, rpn.labels, rpn.label_weights);
    loss = b.add_losses(loss, b.smooth_l1_loss(deltas, rpn.box_targets, rpn.box_weights, 1.0 / 9));
    loss = b.add_losses(loss, b.softmax_cross_entropy(class_logits, samples.labels, 0.0, -1));
    loss = b.add_losses(loss, b.smooth_l1_loss(box_deltas, samples.box_targets, samples.box_weights, 1.0,
                                               ClassColumns{samples.labels, s.classes, 4}));
    loss = b.add_losses(loss, b.bce_with_logits_loss(mask_logits, mask_targets.targets, mask_targets.weights,
                                                     ClassColumns{samples.mask_labels, s.classes, 1}));

    BuiltWorkload built;
    built.loss = loss;
    built.units_per_step = static_cast<double>(batch);
    // Convs, FC layers, the RPN head and the transposed conv, per image; RoIAlign and NMS are not products.
    built.forward_flops_per_unit = 2.0 * (net.macs() + rpn_macs + transposed_macs) / static_cast<double>(batch);
    return built;
  }

  // Frozen weights (He-normal, from the seed alone, the same on every rank) and FrozenBatchNorm (torchvision's
  // initial state: weight 1, bias 0, mean 0, variance 1 -> scale 1, shift 0); per image its sample id, `boxes`
  // instances (class uniform in 1 .. classes - 1, width and height log-uniform in [kSmallestBox, kLargestBox] of
  // the image's, inside it) and pixels uniform in [-1, 1) (normalised).
  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    std::mt19937_64 weights_random = sample_random(seed, -1);
    for (const TensorInfo& info : graph.tensors()) {
      if (info.role != TensorRole::kInput) continue;
      if (info.frozen_weight) {
        const int64_t fan_in = info.elements() / info.shape[0];
        std::normal_distribution<float> normal(0.0f, static_cast<float>(std::sqrt(2.0 / double(fan_in))));
        std::vector<float> values(static_cast<size_t>(info.elements()));
        for (float& v : values) v = normal(weights_random);
        write_input(write, graph, info.name, values);
      } else if (info.name.size() > 6 && info.name.compare(info.name.size() - 6, 6, ".scale") == 0) {
        write_input(write, graph, info.name, std::vector<float>(size_t(info.elements()), float(1.0 / std::sqrt(1.0 + kFrozenBnEpsilon))));
      } else if (info.name.size() > 6 && info.name.compare(info.name.size() - 6, 6, ".shift") == 0) {
        write_input(write, graph, info.name, std::vector<float>(size_t(info.elements()), 0.0f));
      }
    }
    const TensorInfo& images = graph.tensor(graph.find_tensor("images"));
    const TensorInfo& boxes = graph.tensor(graph.find_tensor("gt_boxes"));
    const int64_t batch = images.shape[0], h = images.shape[1], w = images.shape[2];
    const int64_t pixels = images.elements() / batch, count = boxes.shape[1];
    const int64_t classes = mask_classes(graph);
    std::vector<float> image_values(static_cast<size_t>(images.elements())), box_values(size_t(boxes.elements()));
    std::vector<int32_t> class_values(static_cast<size_t>(batch * count)), ids(static_cast<size_t>(batch));
    std::uniform_real_distribution<double> log_size(std::log(kSmallestBox), std::log(kLargestBox));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int64_t n = 0; n < batch; ++n) {
      std::mt19937_64 random = sample_random(seed, first_sample + n);
      ids[size_t(n)] = static_cast<int32_t>(first_sample + n);
      for (int64_t k = 0; k < count; ++k) {
        const double bw = std::exp(log_size(random)) * double(w), bh = std::exp(log_size(random)) * double(h);
        const double x1 = (double(w) - bw) * unit(random), y1 = (double(h) - bh) * unit(random);
        float* box = &box_values[size_t((n * count + k) * 4)];
        box[0] = float(x1), box[1] = float(y1), box[2] = float(x1 + bw), box[3] = float(y1 + bh);
        class_values[size_t(n * count + k)] = static_cast<int32_t>(std::uniform_int_distribution<int64_t>(1, classes - 1)(random));
      }
      float* image = &image_values[size_t(n * pixels)];
      for (int64_t i = 0; i < pixels; i += 2) {  // two 24-bit values per draw
        const uint64_t bits = random();
        image[i] = static_cast<float>(bits >> 40) * 0x1p-23f - 1.0f;
        if (i + 1 < pixels) image[i + 1] = static_cast<float>((bits >> 8) & 0xFFFFFF) * 0x1p-23f - 1.0f;
      }
    }
    write_input(write, graph, "images", image_values);
    write_input(write, graph, "gt_boxes", box_values);
    write_input(write, graph, "gt_classes", class_values);
    write_input(write, graph, "sample_ids", ids);
  }

 private:
  // The class count of the graph's box predictor (its bias's size).
  static int64_t mask_classes(const Graph& graph) {
    return graph.tensor(graph.find_tensor("roi_heads.box_predictor.cls_score.bias")).shape[0];
  }
};

}  // namespace

const Workload& maskrcnn() {
  static const MaskRcnn kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
