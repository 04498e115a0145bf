// deeplabv3: DeepLabv3-ResNet101 on PASCAL VOC 2012 crops of 513 x 513 (shared/WORKLOADS.md §2) in the layout of
// torchvision's deeplabv3_resnet101 (torchvision/models/segmentation/deeplabv3.py: ASPP, DeepLabHead; the
// ResNet-101 Bottleneck with its stride on the 3x3 conv) at output stride 16, the TF deeplab VOC training
// setting (research/deeplab/g3doc/pascal.md: output_stride 16, atrous_rates 6,12,18, crop 513): layer4 keeps
// stride 1 with dilation 2 times the multi-grid (1, 2, 4), ASPP at rates 6, 12, 18 plus image pooling, the
// torchvision head's extra 3x3 conv, a 1x1 classifier with bias, a bilinear resize back to the crop
// (align_corners false) and a per-pixel softmax cross-entropy ignoring label 255. No auxiliary head:
// 58,630,997 parameters, 71.70 GMAC forward per image. All convs bias-free but the classifier, BN eps 1e-5.
// BatchNorm parameters are named "<...>.norm*.weight/bias" where torchvision says "bn*" or a module index,
// so that they read as normalisation gains (initialised to 1 by the trainer and the tests).
#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "scalebench/workload.h"

namespace sb::workloads {
namespace {

constexpr int32_t kIgnoreLabel = 255;  // VOC's object borders and void pixels
constexpr double kDropout = 0.5;       // torchvision ASPP's projection dropout

struct Dims {
  int64_t image;                   // square crop side (pixels)
  int64_t classes;                 // VOC: 20 + background
  int64_t stem;                    // conv1's output channels
  std::array<int64_t, 4> widths;   // bottleneck widths of layer1..4; block outputs are 4x
  std::array<int64_t, 4> blocks;   // bottlenecks per layer
  int64_t aspp;                    // ASPP and head channels
  std::array<int64_t, 3> rates;    // ASPP's atrous rates
  std::array<int64_t, 3> multi_grid;  // layer4's unit rates are kLayer4Dilation times these
};
constexpr int64_t kExpansion = 4;       // Bottleneck.expansion
constexpr int64_t kLayer4Dilation = 2;  // output stride 16: layer4's stride 2 becomes dilation 2

// Full: ResNet-101 (3-4-23-3) and ASPP 256 at 513 x 513. Tiny: the same graph at 17 x 17 (feature maps 9, 5,
// 5, 3, 2, 2) with 8-channel bottlenecks, one block per layer but layer4's three multi-grid units (identity
// shortcuts included) and small ASPP rates. Narrower tiny graphs are too rough for finite differences: with
// 2-channel bottlenecks at 33 x 33, a step of 2.5e-4 in one layer1 weight flipped about 25 ReLUs (measured).
Dims dims_for(WorkloadScale scale) {
  if (scale == WorkloadScale::kFull) {
    return Dims{513, 21, 64, {64, 128, 256, 512}, {3, 4, 23, 3}, 256, {6, 12, 18}, {1, 2, 4}};
  }
  return Dims{17, 5, 8, {8, 8, 8, 8}, {1, 1, 1, 3}, 8, {1, 2, 3}, {1, 2, 4}};
}

// Conv and BatchNorm layers appended to one graph, with the forward multiply-adds per image of every conv
// counted from the shapes it builds.
class LayerBuilder {
 public:
  explicit LayerBuilder(GraphBuilder& b) : b_(b) {}
  GraphBuilder& graph_builder() { return b_; }
  double macs_per_image() const { return macs_per_image_; }

  // "<name>.weight" (out, k, k, in) without bias, or with "<name>.bias" (out) when `bias`.
  TensorId conv(const std::string& name, TensorId x, int64_t out, int64_t kernel, const Conv2dOptions& options,
                bool bias = false) {
    const std::vector<int64_t> in = shape(x);  // (N, H, W, C)
    const TensorId weight = b_.parameter(name + ".weight", {out, kernel, kernel, in[3]});
    const TensorId y = b_.conv2d(x, weight, bias ? b_.parameter(name + ".bias", {out}) : kNoTensor, options);
    const std::vector<int64_t> ys = shape(y);
    macs_per_image_ += static_cast<double>(ys[1] * ys[2] * out) * static_cast<double>(kernel * kernel * in[3]);
    return y;
  }
  // Training-mode BatchNorm ("<name>.weight", "<name>.bias"), with the ReLU that follows it fused when `relu`.
  TensorId norm(const std::string& name, TensorId x, bool relu) {
    const int64_t channels = shape(x).back();
    BatchNormOptions options;  // eps 1e-5, momentum 0.1 as nn.BatchNorm2d
    if (relu) options.activation = BatchNormOptions::Activation::kRelu;
    return b_.batchnorm(x, b_.parameter(name + ".weight", {channels}), b_.parameter(name + ".bias", {channels}),
                        options);
  }
  // conv -> BN -> ReLU, the BN named "<prefix>.norm" (torchvision's "<prefix>.1" beside the conv "<prefix>.0").
  TensorId conv_norm_relu(const std::string& prefix, TensorId x, int64_t out, int64_t kernel,
                          const Conv2dOptions& options) {
    return norm(prefix + ".norm", conv(prefix + ".0", x, out, kernel, options), true);
  }
  const std::vector<int64_t>& shape(TensorId x) const { return b_.graph().tensor(x).shape; }

 private:
  GraphBuilder& b_;
  double macs_per_image_ = 0;
};

// torchvision's Bottleneck (ResNet v1.5): 1x1 -> 3x3 (stride, dilation; padding = dilation keeps the size)
// -> 1x1 x4, each followed by BN, ReLU after the first two and after the residual sum; the first block of a
// layer projects the shortcut with a strided 1x1 conv and BN.
TensorId bottleneck(LayerBuilder& l, const std::string& p, TensorId x, int64_t width, int64_t stride, int64_t dilation,
                    bool project) {
  GraphBuilder& b = l.graph_builder();
  const TensorId shortcut =
      project ? l.norm(p + ".downsample.norm", l.conv(p + ".downsample.0", x, width * kExpansion, 1,
                                                      Conv2dOptions::with(stride, 0)), false)
              : x;
  TensorId h = l.norm(p + ".norm1", l.conv(p + ".conv1", x, width, 1, Conv2dOptions{}), true);
  h = l.norm(p + ".norm2", l.conv(p + ".conv2", h, width, 3, Conv2dOptions::with(stride, dilation, dilation)), true);
  h = l.norm(p + ".norm3", l.conv(p + ".conv3", h, width * kExpansion, 1, Conv2dOptions{}), false);
  return b.relu(b.add(h, shortcut));
}

// ResNet-101 to output stride 16: (N, S, S, 3) -> (N, S/16, S/16, 2048) at full scale (513 -> 257 -> 129 ->
// 129 -> 65 -> 33 -> 33).
TensorId backbone(LayerBuilder& l, TensorId image, const Dims& d) {
  TensorId x = l.norm("backbone.norm1", l.conv("backbone.conv1", image, d.stem, 7, Conv2dOptions::with(2, 3)), true);
  x = l.graph_builder().max_pool2d(x, 3, Conv2dOptions::with(2, 1));
  for (size_t layer = 0; layer < 4; ++layer) {
    const bool dilated = layer == 3;
    if (dilated && d.blocks[layer] > static_cast<int64_t>(d.multi_grid.size())) {
      throw UsageError("deeplabv3: layer4 has one multi-grid rate per block");
    }
    for (int64_t block = 0; block < d.blocks[layer]; ++block) {
      const std::string p = "backbone.layer" + std::to_string(layer + 1) + "." + std::to_string(block);
      const int64_t stride = block == 0 && layer != 0 && !dilated ? 2 : 1;
      const int64_t dilation = dilated ? kLayer4Dilation * d.multi_grid[static_cast<size_t>(block)] : 1;
      x = bottleneck(l, p, x, d.widths[layer], stride, dilation, block == 0);
    }
  }
  return x;
}

// torchvision's DeepLabHead: ASPP (1x1, three atrous 3x3, image pooling; concat; 1x1 projection, dropout),
// 3x3 conv, 1x1 classifier with bias. (N, s, s, 2048) -> logits (N, s, s, classes).
TensorId deeplab_head(LayerBuilder& l, TensorId features, const Dims& d) {
  GraphBuilder& b = l.graph_builder();
  const int64_t size = l.shape(features)[1];
  const std::string aspp = "classifier.0";
  std::vector<TensorId> branches;
  branches.push_back(l.conv_norm_relu(aspp + ".convs.0", features, d.aspp, 1, Conv2dOptions{}));
  for (size_t r = 0; r < d.rates.size(); ++r) {
    branches.push_back(l.conv_norm_relu(aspp + ".convs." + std::to_string(r + 1), features, d.aspp, 3,
                                        Conv2dOptions::with(1, d.rates[r], d.rates[r])));
  }
  // ASPPPooling: the image's mean, 1x1 conv, BN over the batch, ReLU, resized from 1 x 1 (a broadcast).
  const std::string pooling = aspp + ".convs." + std::to_string(d.rates.size() + 1);
  const TensorId pooled = l.norm(pooling + ".norm", l.conv(pooling + ".1", b.global_avg_pool(features), d.aspp, 1,
                                                           Conv2dOptions{}), true);
  branches.push_back(b.upsample_bilinear(pooled, size, size, false));
  TensorId x = l.conv_norm_relu(aspp + ".project", b.concat(branches), d.aspp, 1, Conv2dOptions{});  // 5 x aspp in
  x = b.dropout(x, kDropout);
  x = l.norm("classifier.norm", l.conv("classifier.1", x, d.aspp, 3, Conv2dOptions::with(1, 1)), true);
  return l.conv("classifier.4", x, d.classes, 1, Conv2dOptions{}, true);
}

class DeepLabV3 final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    // Batch 2 at least: the image-pooling branch's BatchNorm sees one value per image and channel.
    static const WorkloadInfo kInfo{"deeplabv3", "VOC 2012 segmentation, 513x513", "images", 16,
                                    58630997, "torchvision deeplabv3_resnet101 at output stride 16, ASPP 6/12/18",
                                    "images", 2};
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
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

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const Dims d = dims_for(scale);
    const TensorId image = b.input("image", {batch, d.image, d.image, 3});                  // NHWC, normalised
    const TensorId labels = b.input("labels", {batch * d.image * d.image}, DType::kInt32);  // per pixel, row-major
    LayerBuilder l(b);
    const TensorId logits = deeplab_head(l, backbone(l, image, d), d);
    // torchvision's F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False).
    const TensorId resized = b.upsample_bilinear(logits, d.image, d.image, false);
    BuiltWorkload built;
    built.loss = b.softmax_cross_entropy(b.reshape(resized, {batch * d.image * d.image, d.classes}), labels, 0.0,
                                         kIgnoreLabel);
    built.units_per_step = static_cast<double>(batch);
    built.forward_flops_per_unit = 2 * l.macs_per_image();
    return built;
  }

  // Each image: a background of class 0 with 1-4 ellipses of random classes 1..classes-1, pixels the class's
  // fixed colour plus noise (so the classes can be learnt), and a band of `border` pixels at the image's edge
  // labelled 255. The band is the same in every image: the loss is a mean over non-ignored pixels per rank, and
  // data-parallel ranks average their means, which equals the mean over all ranks' pixels only when every
  // image ignores as many pixels.
  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    const std::vector<int64_t>& shape = graph.tensor(graph.find_tensor("image")).shape;  // (N, S, S, 3)
    const int64_t batch = shape[0], size = shape[1];
    const int64_t classes = graph.tensor(graph.find_tensor("classifier.4.bias")).shape[0];
    const int64_t border = std::max<int64_t>(1, size / 100);  // 5 at 513: VOC's 5-pixel void borders
    std::vector<float> colours(static_cast<size_t>(classes * 3));
    std::mt19937_64 palette(0x5eed);
    std::uniform_real_distribution<float> channel(-1.5f, 1.5f);
    for (float& c : colours) c = channel(palette);

    const int64_t pixels = size * size;
    std::vector<float> images(static_cast<size_t>(batch * pixels * 3));
    std::vector<int32_t> labels(static_cast<size_t>(batch * pixels));
    for (int64_t s = 0; s < batch; ++s) {
      std::mt19937_64 random = sample_random(seed, first_sample + s);
      int32_t* label = &labels[static_cast<size_t>(s * pixels)];
      std::fill(label, label + pixels, 0);
      const int64_t objects = std::uniform_int_distribution<int64_t>(1, 4)(random);
      std::uniform_real_distribution<double> centre(0, static_cast<double>(size)), radius(size / 10.0, size / 3.0);
      std::uniform_int_distribution<int32_t> object_class(1, static_cast<int32_t>(classes - 1));
      for (int64_t o = 0; o < objects; ++o) {
        const double cy = centre(random), cx = centre(random), ry = radius(random), rx = radius(random);
        const int32_t c = object_class(random);
        for (int64_t y = 0; y < size; ++y) {
          for (int64_t x = 0; x < size; ++x) {
            const double dy = (y - cy) / ry, dx = (x - cx) / rx;
            if (dy * dy + dx * dx <= 1) label[y * size + x] = c;
          }
        }
      }
      std::normal_distribution<float> noise(0.0f, 0.5f);
      float* pixel = &images[static_cast<size_t>(s * pixels * 3)];
      for (int64_t y = 0; y < size; ++y) {
        for (int64_t x = 0; x < size; ++x) {
          const int64_t i = y * size + x;
          for (int64_t ch = 0; ch < 3; ++ch) pixel[i * 3 + ch] = colours[label[i] * 3 + ch] + noise(random);
          if (std::min({y, x, size - 1 - y, size - 1 - x}) < border) label[i] = kIgnoreLabel;
        }
      }
    }
    write_input(write, graph, "image", images);
    write_input(write, graph, "labels", labels);
  }
};

}  // namespace

const Workload& deeplabv3() {
  static const DeepLabV3 kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
