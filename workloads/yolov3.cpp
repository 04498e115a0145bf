// yolov3: YOLOv3 at 608 x 608 (shared/WORKLOADS.md §3; pjreddie/darknet cfg/yolov3.cfg): Darknet-53 (52 convs,
// 23 residual adds) and the three-scale head (23 convs; two nearest x2 upsamples, each concatenated with a
// backbone route). Every conv is a darknet [convolutional] with batch_normalize=1 and activation=leaky: conv
// without bias, BatchNorm and LeakyReLU(0.1) fused; the three 1 x 1 output convs (3 (5 + 80) = 255 channels) have
// a bias and no activation. Loss: darknet's yolo_layer (GraphBuilder::yolo_loss) against 8 synthetic boxes per
// image. Parameters are named after darknet's layer index ("layers.75.conv.weight", "layers.75.norm.weight"),
// counting shortcut, route, upsample and yolo layers as darknet does, so a name points at its cfg section.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/workload.h"

namespace sb::workloads {
namespace {

struct Shape {
  int64_t image;       // input height = width (pixels); a multiple of 32 (five stride-2 convs)
  int64_t width;       // channels of the first conv; stage i has width · 2^i, Darknet-53: 32
  int64_t classes;     // COCO: 80
  int64_t boxes;       // ground-truth boxes per image
  int64_t repeats[5];  // residual blocks per stage, Darknet-53: 1, 2, 8, 8, 4
};

// Tiny: the same layer sequence with one residual block per stage, 1/32 of the channels (1 to 32; heads of 16,
// 8, 4) and a 64 x 64 image (grids 2, 4, 8), 2 classes, 3 boxes. Not 32 x 32: its 1 x 1 grid leaves BatchNorm
// 3 values per channel at the test batch of 3, whose normalisation is so ill-conditioned that central
// differences are off by 50% even with the activations made linear (measured); 64 x 64 at width 1 keeps the
// CPU tests within seconds.
Shape shape_for(WorkloadScale scale) {
  return scale == WorkloadScale::kFull ? Shape{608, 32, 80, 8, {1, 2, 8, 8, 4}} : Shape{64, 1, 2, 3, {1, 1, 1, 1, 1}};
}

// Synthetic boxes: width and height log-uniform over this range (fractions of the image), which spans darknet's
// nine anchors (10 to 373 pixels of 608), so every head gets positives.
constexpr double kSmallestBox = 0.02, kLargestBox = 0.8;

// Builds darknet layers in cfg order, keeping darknet's layer index and the forward FLOPs of the convolutions.
class Darknet {
 public:
  explicit Darknet(GraphBuilder& b) : b_(b) {}

  // [convolutional] batch_normalize=1, pad=1 (padding kernel / 2 on every side), activation=leaky.
  TensorId conv(TensorId x, int64_t out, int64_t kernel, int64_t stride = 1) {
    const std::string name = "layers." + std::to_string(layer_++);
    const TensorId y = convolve(x, name, out, kernel, stride, false);
    BatchNormOptions options;
    options.momentum = 0.01;  // darknet's rolling statistics: 0.99 old + 0.01 new
    options.activation = BatchNormOptions::Activation::kLeakyRelu;
    options.slope = 0.1;
    return b_.batchnorm(y, b_.parameter(name + ".norm.weight", {out}), b_.parameter(name + ".norm.bias", {out}),
                        options);
  }
  // The 1 x 1 [convolutional] before each [yolo]: bias, activation=linear; the [yolo] layer after it is the loss.
  TensorId output(TensorId x, int64_t out) {
    const std::string name = "layers." + std::to_string(layer_);
    layer_ += 2;
    return convolve(x, name, out, 1, 1, true);
  }
  // [shortcut] from=-3 activation=linear.
  TensorId shortcut(TensorId x, TensorId from) {
    ++layer_;
    return b_.add(x, from);
  }
  // [upsample] stride=2 (nearest), then [route] layers=-1, <route>: the upsampled map first.
  TensorId upsample_and_route(TensorId x, TensorId route) {
    layer_ += 2;
    const std::vector<int64_t>& xs = b_.graph().tensor(x).shape;
    return b_.concat({b_.upsample_nearest(x, 2 * xs[1], 2 * xs[2]), route});
  }
  void skip_route() { ++layer_; }  // [route] layers=-4: back to the branch, no op
  double forward_flops() const { return flops_; }

 private:
  TensorId convolve(TensorId x, const std::string& name, int64_t out, int64_t kernel, int64_t stride, bool bias) {
    const int64_t in = b_.graph().tensor(x).shape[3];
    const TensorId weight = b_.parameter(name + ".conv.weight", {out, kernel, kernel, in});  // (K, R, S, C)
    const TensorId y = b_.conv2d(x, weight, bias ? b_.parameter(name + ".conv.bias", {out}) : kNoTensor,
                                 Conv2dOptions::with(stride, kernel / 2));
    const std::vector<int64_t>& ys = b_.graph().tensor(y).shape;  // (N, Ho, Wo, K)
    flops_ += 2.0 * double(ys[1] * ys[2]) * double(out * kernel * kernel * in);
    return y;
  }

  GraphBuilder& b_;
  int layer_ = 0;
  double flops_ = 0;  // per image
};

// Darknet-53 stage: a 3 x 3 stride-2 conv to `channels`, then `repeats` of [1 x 1 channels / 2, 3 x 3 channels]
// with a shortcut around each pair.
TensorId darknet_stage(Darknet& d, TensorId x, int64_t channels, int64_t repeats) {
  x = d.conv(x, channels, 3, 2);
  for (int64_t r = 0; r < repeats; ++r) x = d.shortcut(d.conv(d.conv(x, channels / 2, 1), channels, 3), x);
  return x;
}

// One detection head: [1 x 1 mid, 3 x 3 2 mid] x 2, 1 x 1 mid (returned as the branch to the next scale),
// 3 x 3 2 mid, 1 x 1 output conv.
std::pair<TensorId, TensorId> detection_head(Darknet& d, TensorId x, int64_t mid, int64_t outputs) {
  for (int i = 0; i < 2; ++i) x = d.conv(d.conv(x, mid, 1), 2 * mid, 3);
  const TensorId branch = d.conv(x, mid, 1);
  return {branch, d.output(d.conv(branch, 2 * mid, 3), outputs)};
}

// The class count the graph's yolo_loss node was built with.
int64_t loss_classes(const Graph& graph) {
  for (const Node& node : graph.nodes()) {
    if (node.op == "yolo_loss") return static_cast<int64_t>(node.attributes.at("classes"));
  }
  throw UsageError("yolov3: the graph has no yolo_loss node");
}

class Yolov3 final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo{"yolov3", "detection (MS-COCO), 608x608", "images", 16, 61949149,
                                    "pjreddie/darknet cfg/yolov3.cfg (Darknet-53, 3 YOLO heads)", "images"};
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
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

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const Shape s = shape_for(scale);
    const TensorId images = b.input("images", {batch, s.image, s.image, 3});  // NHWC, pixels in [0, 1]
    const TensorId truth = b.input("truth_boxes", {batch, s.boxes, 5});       // (class, cx, cy, w, h)
    const int64_t outputs = 3 * (5 + s.classes);

    Darknet d(b);
    TensorId x = d.conv(images, s.width, 3);
    std::vector<TensorId> stages;  // outputs at strides 2, 4, 8, 16, 32
    for (int i = 0; i < 5; ++i) {
      x = darknet_stage(d, x, s.width << (i + 1), s.repeats[i]);
      stages.push_back(x);
    }
    const auto [branch0, head0] = detection_head(d, stages[4], 16 * s.width, outputs);  // stride 32
    d.skip_route();
    const TensorId up1 = d.upsample_and_route(d.conv(branch0, 8 * s.width, 1), stages[3]);
    const auto [branch1, head1] = detection_head(d, up1, 8 * s.width, outputs);  // stride 16
    d.skip_route();
    const TensorId up2 = d.upsample_and_route(d.conv(branch1, 4 * s.width, 1), stages[2]);
    const TensorId head2 = detection_head(d, up2, 4 * s.width, outputs).second;  // stride 8

    BuiltWorkload built;
    built.loss = b.yolo_loss(head0, head1, head2, truth, s.classes);
    built.units_per_step = static_cast<double>(batch);
    built.forward_flops_per_unit = d.forward_flops();
    return built;
  }

  // Per image: `boxes` boxes (class uniform, width and height log-uniform in [kSmallestBox, kLargestBox], centre
  // uniform where the box lies inside the image), then the pixels, uniform in [0, 1) as darknet's input scaling.
  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    const TensorInfo& images = graph.tensor(graph.find_tensor("images"));
    const TensorInfo& truth = graph.tensor(graph.find_tensor("truth_boxes"));
    const int64_t batch = images.shape[0], pixels = images.elements() / batch, boxes = truth.shape[1];
    const int64_t classes = loss_classes(graph);
    std::vector<float> image_values(static_cast<size_t>(images.elements()));
    std::vector<float> box_values(static_cast<size_t>(truth.elements()));
    std::uniform_real_distribution<double> log_size(std::log(kSmallestBox), std::log(kLargestBox));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int64_t n = 0; n < batch; ++n) {
      std::mt19937_64 random = sample_random(seed, first_sample + n);
      for (int64_t k = 0; k < boxes; ++k) {
        float* box = &box_values[static_cast<size_t>((n * boxes + k) * 5)];
        const double w = std::exp(log_size(random)), h = std::exp(log_size(random));
        box[0] = static_cast<float>(std::uniform_int_distribution<int64_t>(0, classes - 1)(random));
        box[1] = static_cast<float>(w / 2 + (1 - w) * unit(random));
        box[2] = static_cast<float>(h / 2 + (1 - h) * unit(random));
        box[3] = static_cast<float>(w);
        box[4] = static_cast<float>(h);
      }
      // Two pixels per 64-bit draw (24 bits each, exact in fp32): a 608² batch of 16 is 17.7 M values, drawn
      // again for every batch maxbatch probes.
      float* image = &image_values[static_cast<size_t>(n * pixels)];
      for (int64_t i = 0; i < pixels; i += 2) {
        const uint64_t bits = random();
        image[i] = static_cast<float>(bits >> 40) * 0x1p-24f;
        if (i + 1 < pixels) image[i + 1] = static_cast<float>((bits >> 8) & 0xFFFFFF) * 0x1p-24f;
      }
    }
    write_input(write, graph, "images", image_values);
    write_input(write, graph, "truth_boxes", box_values);
  }
};

}  // namespace

const Workload& yolov3() {
  static const Yolov3 kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
