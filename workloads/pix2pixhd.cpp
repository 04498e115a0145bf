// pix2pixhd: NVIDIA/pix2pixHD label2city at 2048 x 1024 (shared/WORKLOADS.md §4; models/networks.py,
// models/pix2pixHD_model.py, scripts/train_1024p_24G.sh: --netG local --ngf 32 --num_D 3). One training step of
// the reference is one graph here:
//   G: the LocalEnhancer (global generator at half resolution, ngf 64, 4 downsamplings, 9 ResnetBlocks, 4
//      transposed convs, its last 7 x 7 conv removed; one local enhancer, ngf 32, 3 ResnetBlocks), reflection
//      padding, InstanceNorm without affine, ReLU, tanh;
//   D: three NLayerDiscriminators (n_layers 3, ndf 64, 4 x 4 kernels with padding 2, LeakyReLU 0.2) at scales 1,
//      1/2, 1/4 of the concatenated (label, image), every layer's output kept for feature matching;
//   VGG19 features[:30] (13 convs, frozen: kInput weights written by synthesize, no gradient) on fake and real.
// Passes, as pix2pixHD_model.forward: D(label, fake.detach()) and D(label, real) -> LSGAN D loss x 0.5;
// D(label, fake) -> LSGAN G loss + feature matching (L1 against the real pass's detached features, weight
// 10 / 3 each); VGG loss 10 x sum_i w_i L1(vgg(fake)_i, vgg(real)_i.detach()), w = 1/32, 1/16, 1/8, 1/4, 1.
// The loss is L_G + L_D: D's weights reach the G-loss pass through discard_gradient (their weight gradient is
// computed and dropped, as loss_G.backward() fills D's .grad before optimizer_D.zero_grad()), the fake image
// reaches the D-loss pass through stop_gradient, so one backward pass gives G exactly dL_G/dG and D exactly
// dL_D/dD. G's and D's parameters are separate parameter groups: their gradients are reduced by buckets of their
// own (two reductions, G's 731 MB overlapping G's backward, D's 34 MB finished before it starts), and one Adam
// (lr 2e-4, betas 0.5, 0.999) over both is the reference's two optimizers' arithmetic (reference_optimizer below).
// Parameter names follow the reference modules' state_dict ("netG.model.1.weight", "netD.scale2_layer0.0.weight";
// scale2 sees the full resolution, as MultiscaleDiscriminator numbers them).
#include <algorithm>
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
  int64_t height, width;      // the image (and label map), pixels
  int64_t label_channels;     // one-hot classes + the instance-boundary map
  int64_t ngf;                // the local enhancer's width; the global generator's is 2 ngf
  int64_t downsamplings;      // of the global generator
  int64_t global_blocks, local_blocks;
  int64_t ndf;                // the discriminators' first width (doubling to at most 8 ndf)
  int64_t vgg[5];             // VGG19's stage widths
};

constexpr int64_t kDiscriminators = 3, kDiscriminatorLayers = 3;
constexpr double kInstanceNormEpsilon = 1e-5;     // nn.InstanceNorm2d's default
constexpr double kLeakySlope = 0.2;
constexpr double kFeatureWeight = 10.0;           // --lambda_feat
const double kVggWeights[5] = {1.0 / 32, 1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0};

// Full: label_nc 35 + the instance map, 2048 x 1024, train_1024p_24G.sh's widths. Tiny: 64 x 32 with 3 classes,
// 2 downsamplings (the global generator's 8 x 4 bottleneck still gives instance norm 32 pixels), one ResnetBlock
// each, 4-wide discriminators and a 4..16-wide VGG: the same layer sequence, seconds on the CPU.
Shape shape_for(WorkloadScale scale) {
  if (scale == WorkloadScale::kFull) return Shape{1024, 2048, 36, 32, 4, 9, 3, 64, {64, 128, 256, 512, 512}};
  return Shape{32, 64, 4, 4, 2, 1, 1, 4, {4, 8, 8, 16, 16}};
}

// How a discriminator pass reads D's weights: as parameters (the D loss), or through discard_gradient (the G
// loss: gradients reach the image, D's weight gradients are computed and dropped).
enum class DWeights { kTrained, kDiscarded };

class Builder {
 public:
  explicit Builder(GraphBuilder& b) : b_(b) {}

  // Conv2d with bias (PyTorch's default) named `name`.weight / .bias, weight (out, k, k, in).
  TensorId conv(TensorId x, const std::string& name, int64_t out, int64_t kernel, int64_t stride, int64_t pad) {
    const int64_t in = b_.graph().tensor(x).shape[3];
    return b_.conv2d(x, b_.parameter(name + ".weight", {out, kernel, kernel, in}), b_.parameter(name + ".bias", {out}),
                     Conv2dOptions::with(stride, pad));
  }
  TensorId norm_relu(TensorId x) { return b_.relu(b_.instance_norm(x, kInstanceNormEpsilon)); }
  // ReflectionPad2d(3), Conv2d(k 7, padding 0).
  TensorId conv7(TensorId x, const std::string& name, int64_t out) {
    return conv(b_.reflection_pad2d(x, 3, 3, 3, 3), name, out, 7, 1, 0);
  }
  // ConvTranspose2d(in, out, 3, stride 2, padding 1, output_padding 1), weight (in, 3, 3, out), then IN, ReLU.
  TensorId upsample(TensorId x, const std::string& name, int64_t out) {
    const int64_t in = b_.graph().tensor(x).shape[3];
    return norm_relu(b_.conv_transpose2d(x, b_.parameter(name + ".weight", {in, 3, 3, out}),
                                         b_.parameter(name + ".bias", {out}), Conv2dOptions::with(2, 1), 1));
  }
  // ResnetBlock(dim, 'reflect'): x + [pad 1, conv 3, IN, ReLU, pad 1, conv 3, IN](x).
  TensorId resnet_block(TensorId x, const std::string& name) {
    const int64_t dim = b_.graph().tensor(x).shape[3];
    TensorId h = norm_relu(conv(b_.reflection_pad2d(x, 1, 1, 1, 1), name + ".conv_block.1", dim, 3, 1, 0));
    h = b_.instance_norm(conv(b_.reflection_pad2d(h, 1, 1, 1, 1), name + ".conv_block.5", dim, 3, 1, 0),
                         kInstanceNormEpsilon);
    return b_.add(x, h);
  }
  // AvgPool2d(3, stride 2, padding 1, count_include_pad=False): the input pyramids of G and D.
  TensorId downsample(TensorId x) { return b_.avg_pool2d(x, 3, Conv2dOptions::with(2, 1), false); }

  // LocalEnhancer(n_local_enhancers 1).forward(label) -> fake image (N, H, W, 3) in (-1, 1).
  TensorId generator(TensorId label, const Shape& s) {
    // model (the global generator without its last ReflectionPad, Conv, Tanh) on the half-resolution label.
    int64_t width = 2 * s.ngf;
    TensorId g = norm_relu(conv7(downsample(label), "netG.model.1", width));
    int64_t index = 4;
    for (int64_t i = 0; i < s.downsamplings; ++i, index += 3) {
      width *= 2;
      g = norm_relu(conv(g, "netG.model." + std::to_string(index), width, 3, 2, 1));
    }
    for (int64_t i = 0; i < s.global_blocks; ++i) g = resnet_block(g, "netG.model." + std::to_string(index++));
    for (int64_t i = 0; i < s.downsamplings; ++i, index += 3) {
      width /= 2;
      g = upsample(g, "netG.model." + std::to_string(index), width);
    }
    // model1_1 (downsample at full resolution) + the global output, then model1_2.
    TensorId l = norm_relu(conv7(label, "netG.model1_1.1", s.ngf));
    l = b_.add(norm_relu(conv(l, "netG.model1_1.4", 2 * s.ngf, 3, 2, 1)), g);
    for (int64_t i = 0; i < s.local_blocks; ++i) l = resnet_block(l, "netG.model1_2." + std::to_string(i));
    l = upsample(l, "netG.model1_2." + std::to_string(s.local_blocks), s.ngf);
    return b_.tanh(conv7(l, "netG.model1_2." + std::to_string(s.local_blocks + 4), 3));
  }

  // D's parameters, created once (the first pass) and read by every pass.
  struct Layer {
    TensorId weight, bias;
    int64_t stride;
  };
  void discriminator_parameters(const Shape& s) {
    const int64_t strides[kDiscriminatorLayers + 2] = {2, 2, 2, 1, 1};
    for (int64_t scale = 0; scale < kDiscriminators; ++scale) {
      int64_t in = s.label_channels + 3, out = s.ndf;
      std::vector<Layer> layers;
      for (int64_t j = 0; j <= kDiscriminatorLayers + 1; ++j) {
        if (j == kDiscriminatorLayers + 1) out = 1;
        const std::string name = "netD.scale" + std::to_string(kDiscriminators - 1 - scale) + "_layer" +
                                 std::to_string(j) + ".0";
        layers.push_back({b_.parameter(name + ".weight", {out, 4, 4, in}), b_.parameter(name + ".bias", {out}),
                          strides[j]});
        in = out;
        out = std::min(2 * out, 8 * s.ndf);
      }
      discriminators_.push_back(layers);
    }
  }

  // MultiscaleDiscriminator(getIntermFeat).forward(concat(label, image)): per scale (full resolution first) the
  // outputs of its 5 layers: LeakyReLU after the first four (InstanceNorm before it from the second on), the
  // last a 1-channel map.
  std::vector<std::vector<TensorId>> discriminator(TensorId label, TensorId image, DWeights weights) {
    std::vector<std::vector<TensorId>> result;
    TensorId x = b_.concat({label, image});
    for (int64_t scale = 0; scale < kDiscriminators; ++scale) {
      if (scale > 0) x = downsample(x);
      std::vector<TensorId> outputs;
      TensorId h = x;
      const std::vector<Layer>& layers = discriminators_[static_cast<size_t>(scale)];
      for (size_t j = 0; j < layers.size(); ++j) {
        TensorId w = layers[j].weight, bias = layers[j].bias;
        if (weights == DWeights::kDiscarded) {
          w = b_.discard_gradient(b_.in_compute_dtype(w));  // the compute-dtype cast the other passes share
          bias = b_.discard_gradient(bias);
        }
        h = b_.conv2d(h, w, bias, Conv2dOptions::with(layers[j].stride, 2));
        if (j + 1 < layers.size()) {
          if (j > 0) h = b_.instance_norm(h, kInstanceNormEpsilon);
          h = b_.leaky_relu(h, kLeakySlope);
        }
        outputs.push_back(h);
      }
      result.push_back(outputs);
    }
    return result;
  }

  // VGG19 features[:30] with frozen weights "vgg.features.<i>.weight" / ".bias" (torchvision's indices); returns
  // relu1_1, relu2_1, relu3_1, relu4_1, relu5_1. The weights are created by the first call.
  std::vector<TensorId> vgg(TensorId image, const Shape& s) {
    const int64_t convs_per_stage[5] = {2, 2, 4, 4, 1};
    std::vector<TensorId> features;
    TensorId h = image;
    int64_t index = 0, conv_number = 0;
    for (int stage = 0; stage < 5; ++stage) {
      if (stage > 0) {
        h = b_.max_pool2d(h, 2, Conv2dOptions::with(2, 0));
        ++index;
      }
      for (int64_t k = 0; k < convs_per_stage[stage]; ++k, index += 2, ++conv_number) {
        const std::string name = "vgg.features." + std::to_string(index);
        const int64_t in = b_.graph().tensor(h).shape[3], out = s.vgg[stage];
        if (vgg_weights_.size() <= size_t(conv_number)) {
          vgg_weights_.push_back({b_.frozen_parameter(name + ".weight", {out, 3, 3, in}),
                                  b_.frozen_parameter(name + ".bias", {out}), 1});
        }
        const Layer& layer = vgg_weights_[size_t(conv_number)];
        h = b_.relu(b_.conv2d(h, layer.weight, layer.bias, Conv2dOptions::with(1, 1)));
        if (k == 0) features.push_back(h);
      }
    }
    return features;
  }

 private:
  GraphBuilder& b_;
  std::vector<std::vector<Layer>> discriminators_;
  std::vector<Layer> vgg_weights_;
};

// loss = loss + weight · term (the first term starts the sum).
void accumulate(GraphBuilder& b, TensorId& loss, TensorId term, double weight) {
  if (loss == kNoTensor) {
    if (weight != 1.0) throw UsageError("pix2pixhd: the first loss term must have weight 1");
    loss = term;
  } else {
    loss = b.add_losses(loss, term, weight);
  }
}

class Pix2PixHD final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo = [] {
      WorkloadInfo info{"pix2pixhd", "Cityscapes label->image GAN, 2048px", "pairs", 2, 191261862,
                        "NVIDIA/pix2pixHD label2city_1024p (LocalEnhancer + 3-scale PatchGAN + VGG19 loss)", "pairs"};
      info.frozen_parameters = 12944960;
      return info;
    }();
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
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

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const Shape s = shape_for(scale);
    const TensorId label = b.input("label", {batch, s.height, s.width, s.label_channels});  // one-hot + edges
    const TensorId real = b.input("real_image", {batch, s.height, s.width, 3});            // in [-1, 1]
    Builder net(b);
    b.set_parameter_group("G");
    const TensorId fake = net.generator(label, s);
    b.set_parameter_group("D");
    net.discriminator_parameters(s);
    b.set_parameter_group("");
    const auto d_real = net.discriminator(label, real, DWeights::kTrained);
    const auto d_fake_detached = net.discriminator(label, b.stop_gradient(fake), DWeights::kTrained);
    const auto d_fake = net.discriminator(label, fake, DWeights::kDiscarded);
    const std::vector<TensorId> vgg_real = net.vgg(real, s);
    const std::vector<TensorId> vgg_fake = net.vgg(fake, s);

    TensorId loss = kNoTensor;
    for (int64_t d = 0; d < kDiscriminators; ++d) {  // loss_G_GAN: D(fake) called real
      accumulate(b, loss, b.mse_loss(d_fake[size_t(d)].back(), 1.0), 1.0);
    }
    const double feature_weight = kFeatureWeight * (4.0 / (kDiscriminatorLayers + 1)) / kDiscriminators;
    for (int64_t d = 0; d < kDiscriminators; ++d) {  // loss_G_GAN_Feat over the 4 intermediate outputs
      for (int64_t j = 0; j <= kDiscriminatorLayers; ++j) {
        const TensorId target = b.stop_gradient(d_real[size_t(d)][size_t(j)]);
        accumulate(b, loss, b.l1_loss(d_fake[size_t(d)][size_t(j)], target), feature_weight);
      }
    }
    for (size_t i = 0; i < vgg_fake.size(); ++i) {  // loss_G_VGG
      accumulate(b, loss, b.l1_loss(vgg_fake[i], b.stop_gradient(vgg_real[i])), kFeatureWeight * kVggWeights[i]);
    }
    for (int64_t d = 0; d < kDiscriminators; ++d) {  // loss_D = (loss_D_fake + loss_D_real) x 0.5
      accumulate(b, loss, b.mse_loss(d_fake_detached[size_t(d)].back(), 0.0), 0.5);
      accumulate(b, loss, b.mse_loss(d_real[size_t(d)].back(), 1.0), 0.5);
    }

    BuiltWorkload built;
    built.loss = loss;
    built.units_per_step = static_cast<double>(batch);
    built.forward_flops_per_unit = matmul_flops(b.graph(), false) / static_cast<double>(batch);
    return built;
  }

  // Per pair: a label map of random rectangles of random classes over a background class, one-hot in the first
  // channels, the instance-boundary map (pixels whose right or lower neighbour has another class, and those
  // neighbours, as pix2pixHD's get_edges) in the last; the image a colour per class (drawn per sample) plus
  // uniform noise, in [-1, 1]. VGG19's frozen weights: He-normal (fan-in), biases N(0, 0.01), from the seed
  // alone, so every rank writes the same network.
  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    const TensorInfo& label = graph.tensor(graph.find_tensor("label"));
    const int64_t batch = label.shape[0], height = label.shape[1], width = label.shape[2], channels = label.shape[3];
    const int64_t classes = channels - 1, pixels = height * width;
    std::vector<float> labels(static_cast<size_t>(label.elements()), 0.0f);
    std::vector<float> images(static_cast<size_t>(batch * pixels * 3));
    std::vector<int32_t> class_map(static_cast<size_t>(pixels));
    for (int64_t n = 0; n < batch; ++n) {
      std::mt19937_64 random = sample_random(seed, first_sample + n);
      std::uniform_int_distribution<int64_t> pick_class(0, classes - 1);
      std::fill(class_map.begin(), class_map.end(), static_cast<int32_t>(pick_class(random)));
      for (int rectangle = 0; rectangle < 12; ++rectangle) {
        std::uniform_int_distribution<int64_t> row(0, height - 1), column(0, width - 1);
        int64_t top = row(random), bottom = row(random), left = column(random), right = column(random);
        if (top > bottom) std::swap(top, bottom);
        if (left > right) std::swap(left, right);
        const int32_t cls = static_cast<int32_t>(pick_class(random));
        for (int64_t h = top; h <= bottom; ++h) {
          std::fill(class_map.begin() + h * width + left, class_map.begin() + h * width + right + 1, cls);
        }
      }
      std::vector<float> colours(static_cast<size_t>(classes * 3));
      std::uniform_real_distribution<float> colour(-0.8f, 0.8f), noise(-0.2f, 0.2f);
      for (float& c : colours) c = colour(random);
      float* sample_labels = &labels[static_cast<size_t>(n * pixels * channels)];
      float* sample_image = &images[static_cast<size_t>(n * pixels * 3)];
      for (int64_t p = 0; p < pixels; ++p) {
        const int32_t cls = class_map[static_cast<size_t>(p)];
        sample_labels[p * channels + cls] = 1.0f;
        const int64_t h = p / width, w = p % width;
        const bool right_differs = w + 1 < width && class_map[static_cast<size_t>(p + 1)] != cls;
        const bool below_differs = h + 1 < height && class_map[static_cast<size_t>(p + width)] != cls;
        const bool left_differs = w > 0 && class_map[static_cast<size_t>(p - 1)] != cls;
        const bool above_differs = h > 0 && class_map[static_cast<size_t>(p - width)] != cls;
        if (right_differs || below_differs || left_differs || above_differs) sample_labels[p * channels + classes] = 1.0f;
        for (int k = 0; k < 3; ++k) sample_image[p * 3 + k] = colours[static_cast<size_t>(cls * 3 + k)] + noise(random);
      }
    }
    write_input(write, graph, "label", labels);
    write_input(write, graph, "real_image", images);

    std::mt19937_64 random(seed ^ 0x5667473139ull);  // "VGG19": the network is one for every sample and rank
    for (TensorId id : graph.tensors_with_role(TensorRole::kInput)) {
      const TensorInfo& info = graph.tensor(id);
      if (!info.frozen_weight) continue;
      std::vector<float> values(static_cast<size_t>(info.elements()));
      const bool bias = info.shape.size() == 1;
      const double fan_in = bias ? 1.0 : double(info.elements() / info.shape[0]);
      std::normal_distribution<float> normal(0.0f, bias ? 0.01f : static_cast<float>(std::sqrt(2.0 / fan_in)));
      for (float& v : values) v = normal(random);
      write(id, values.data(), values.size() * sizeof(float));
    }
  }
};

}  // namespace

const Workload& pix2pixhd() {
  static const Pix2PixHD kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
