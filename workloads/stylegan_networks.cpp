// StyleGAN's mapping, synthesis and discriminator networks (workloads/stylegan_networks.h). Parameter shapes
// replay networks_stylegan.py in NHWC / KRSC; every weight is stored as drawn and multiplied at run time by
// He's constant gain / sqrt(fan_in) times its learning-rate multiplier (equalized learning rate, a `scale` node
// per weight); the mapping network's dense layers (lrmul 0.01) run as lrmul · (x · (c W)ᵀ + b), equal to
// x · (c · lrmul W)ᵀ + lrmul · b, so that the bias stays an fp32 add_broadcast table (its gradient fp32 in a bf16
// graph) and the scale is one small pass over the (2N, 512) output. At lod 0 only the full-resolution ToRGB and FromRGB
// are on the path; the other eight of each are still parameters (trained, all-reduced: declared unused, their
// gradient zero-filled, as the reference's tf.cond leaves them without one). G's parameters are parameter group
// "G", D's "D" (GraphBuilder::set_parameter_group): each network's gradients travel in buckets of their own, the
// reference's two optimizers' two reductions.
#include "workloads/stylegan_networks.h"

#include <cmath>

#include "scalebench/error.h"

namespace sb::workloads {
namespace {

constexpr double kSlope = 0.2;                 // LeakyReLU
constexpr double kMappingLrmul = 0.01;         // G_mapping's mapping_lrmul
constexpr double kInstanceNormEpsilon = 1e-8;  // networks_stylegan.py instance_norm
constexpr int64_t kMbstdGroup = 4;
const double kGain = std::sqrt(2.0);

std::string res_name(int64_t log2) { return std::to_string(int64_t{1} << log2); }

}  // namespace

TensorId StyleGanNetworks::parameter(const std::string& name, std::vector<int64_t> shape, bool generator) {
  const TensorId p = b_.parameter(name, std::move(shape));
  if (generator) generator_parameters_.push_back(p);
  return p;
}

StyleGanNetworks::Layer StyleGanNetworks::weighted(const std::string& name, std::vector<int64_t> shape, int64_t fan_in,
                                                   double gain, double lrmul, bool bias, bool generator) {
  Layer layer;
  const int64_t out = shape[0];
  // With lrmul != 1 the output is scaled instead (mapping(): lrmul folded out of the weight's factor).
  layer.weight = b_.scale(parameter(name + ".weight", std::move(shape), generator), gain / std::sqrt(double(fan_in)));
  layer.output_scale = lrmul;
  if (bias) layer.bias = parameter(name + ".bias", {out}, generator);
  return layer;
}

StyleGanNetworks::StyleGanNetworks(GraphBuilder& b, const StyleGanShape& shape) : b_(b), shape_(shape) {
  const int64_t top = shape.resolution_log2, latent = shape.latent;
  b_.set_parameter_group("G");
  // G_mapping: 8 dense latent -> latent, lrmul 0.01.
  for (int64_t i = 0; i < shape.mapping_layers; ++i) {
    mapping_layers_.push_back(weighted("G_mapping.Dense" + std::to_string(i), {latent, latent}, latent, kGain,
                                       kMappingLrmul, true, true));
  }
  // G_synthesis: the constant, then per layer its noise weight, bias and style dense; the convs; the ToRGBs.
  const_input_ = parameter("G_synthesis.4x4.Const.const", {4, 4, shape.nf(1)}, true);
  for (int64_t layer = 0; layer < shape.layers(); ++layer) {
    const int64_t channels = shape.nf(layer / 2 + 1);
    const std::string name = "G_synthesis.layer" + std::to_string(layer);
    noise_weight_.push_back(parameter(name + ".noise_strength", {channels}, true));
    epilogue_bias_.push_back(parameter(name + ".bias", {channels}, true));
    style_.push_back(weighted(name + ".StyleMod", {2 * channels, latent}, latent, 1.0, 1.0, true, true));
  }
  convs_.push_back(weighted("G_synthesis.4x4.Conv", {shape.nf(1), 3, 3, shape.nf(1)}, 9 * shape.nf(1), kGain, 1.0,
                            false, true));
  for (int64_t r = 3; r <= top; ++r) {
    const int64_t in = shape.nf(r - 2), out = shape.nf(r - 1);
    const std::string name = "G_synthesis." + res_name(r) + "x" + res_name(r);
    // Fused: the transposed conv reads (K = in, 3, 3, C = out) padded to 4 x 4; otherwise (out, 3, 3, in).
    std::vector<int64_t> up_shape = r >= shape.fused_from_log2 ? std::vector<int64_t>{in, 3, 3, out}
                                                               : std::vector<int64_t>{out, 3, 3, in};
    convs_.push_back(weighted(name + ".Conv0_up", up_shape, 9 * in, kGain, 1.0, false, true));
    convs_.push_back(weighted(name + ".Conv1", {out, 3, 3, out}, 9 * out, kGain, 1.0, false, true));
  }
  for (int64_t r = 2; r <= top; ++r) {
    const Layer rgb = weighted("G_synthesis.ToRGB_lod" + std::to_string(top - r), {3, 1, 1, shape.nf(r - 1)},
                               shape.nf(r - 1), 1.0, 1.0, true, true);
    if (r == top) {
      to_rgb_ = rgb;
    } else {
      b_.declare_unused_parameter(generator_parameters_[generator_parameters_.size() - 2]);
      b_.declare_unused_parameter(rgb.bias);
    }
  }
  // D_basic: FromRGBs, blocks 2^top .. 8 (Conv0, Conv1_down), the 4 x 4 block.
  b_.set_parameter_group("D");
  for (int64_t r = top; r >= 2; --r) {
    const std::string name = "D.FromRGB_lod" + std::to_string(top - r);
    const TensorId weight = b_.parameter(name + ".weight", {shape.nf(r - 1), 1, 1, 3});
    const TensorId bias = b_.parameter(name + ".bias", {shape.nf(r - 1)});
    if (r == top) {
      from_rgb_.weight = b_.scale(weight, kGain / std::sqrt(3.0));
      from_rgb_.bias = bias;
    } else {
      b_.declare_unused_parameter(weight);
      b_.declare_unused_parameter(bias);
    }
  }
  for (int64_t r = top; r >= 3; --r) {
    const std::string name = "D." + res_name(r) + "x" + res_name(r);
    const int64_t c = shape.nf(r - 1), next = shape.nf(r - 2);
    d_conv0_.push_back(weighted(name + ".Conv0", {c, 3, 3, c}, 9 * c, kGain, 1.0, true, false));
    d_conv1_.push_back(weighted(name + ".Conv1_down", {next, 3, 3, c}, 9 * c, kGain, 1.0, true, false));
  }
  const int64_t c4 = shape.nf(1);
  d_final_conv_ = weighted("D.4x4.Conv", {c4, 3, 3, c4 + 1}, 9 * (c4 + 1), kGain, 1.0, true, false);
  d_dense0_ = weighted("D.4x4.Dense0", {shape.nf(0), 16 * c4}, 16 * c4, kGain, 1.0, true, false);
  d_dense1_ = weighted("D.4x4.Dense1", {1, shape.nf(0)}, shape.nf(0), 1.0, 1.0, true, false);
  b_.set_parameter_group("");
}

std::vector<TensorId> StyleGanNetworks::mapping(TensorId latents, TensorId crossover) {
  TensorId x = b_.pixel_norm(latents);
  for (const Layer& layer : mapping_layers_) {
    x = b_.scale(b_.add_broadcast(b_.linear(x, layer.weight, kNoTensor), layer.bias), layer.output_scale);
    x = b_.leaky_relu(x, kSlope);
  }
  return b_.style_mix(x, crossover, shape_.layers());
}

TensorId StyleGanNetworks::epilogue(TensorId x, const std::string&, int64_t layer,
                                    const std::vector<TensorId>& dlatents, TensorId sample_ids) {
  x = b_.noise_injection(x, noise_weight_[size_t(layer)], sample_ids);
  x = b_.leaky_relu(b_.add_broadcast(x, epilogue_bias_[size_t(layer)]), kSlope);
  x = b_.instance_norm(x, kInstanceNormEpsilon);
  const Layer& style = style_[size_t(layer)];
  return b_.style_modulation(x, b_.linear(dlatents[size_t(layer)], style.weight, style.bias));
}

TensorId StyleGanNetworks::synthesis(const std::vector<TensorId>& dlatents, TensorId sample_ids) {
  const int64_t batch = b_.graph().tensor(sample_ids).shape[0];
  TensorId x = b_.add_broadcast(b_.constant({batch, 4, 4, shape_.nf(1)}, 0.0), const_input_);
  x = epilogue(x, "4x4.Const", 0, dlatents, sample_ids);
  x = b_.conv2d(x, convs_[0].weight, kNoTensor, Conv2dOptions::with(1, 1));
  x = epilogue(x, "4x4.Conv", 1, dlatents, sample_ids);
  for (int64_t r = 3; r <= shape_.resolution_log2; ++r) {
    const int64_t side = int64_t{1} << r;
    const Layer& up = convs_[size_t(2 * r - 5)];
    if (r >= shape_.fused_from_log2) {
      x = b_.upscale_conv2d(x, b_.fused_conv_weight(up.weight, false));
    } else {
      x = b_.conv2d(b_.upsample_nearest(x, side, side), up.weight, kNoTensor, Conv2dOptions::with(1, 1));
    }
    x = epilogue(b_.blur2d(x), "Conv0_up", 2 * r - 4, dlatents, sample_ids);
    x = b_.conv2d(x, convs_[size_t(2 * r - 4)].weight, kNoTensor, Conv2dOptions::with(1, 1));
    x = epilogue(x, "Conv1", 2 * r - 3, dlatents, sample_ids);
  }
  return b_.conv2d(x, to_rgb_.weight, to_rgb_.bias);
}

TensorId StyleGanNetworks::frozen(TensorId weight, bool yes) { return yes ? b_.stop_gradient(weight) : weight; }

TensorId StyleGanNetworks::discriminator(TensorId images, bool frozen_weights) {
  auto w = [&](TensorId t) { return frozen(t, frozen_weights); };
  const int64_t top = shape_.resolution_log2;
  TensorId x = b_.leaky_relu(b_.conv2d(images, w(from_rgb_.weight), w(from_rgb_.bias)), kSlope);
  for (int64_t r = top; r >= 3; --r) {
    const Layer& conv0 = d_conv0_[size_t(top - r)];
    const Layer& conv1 = d_conv1_[size_t(top - r)];
    x = b_.leaky_relu(b_.conv2d(x, w(conv0.weight), w(conv0.bias), Conv2dOptions::with(1, 1)), kSlope);
    x = b_.blur2d(x);
    if (r >= shape_.fused_from_log2) {
      x = b_.conv2d(x, b_.fused_conv_weight(w(conv1.weight), true), w(conv1.bias), Conv2dOptions::with(2, 1));
    } else {
      x = b_.conv2d(x, w(conv1.weight), kNoTensor, Conv2dOptions::with(1, 1));
      x = b_.add_broadcast(b_.avg_pool2d(x, 2, Conv2dOptions::with(2, 0), true), w(conv1.bias));
    }
    x = b_.leaky_relu(x, kSlope);
  }
  const int64_t c4 = shape_.nf(1), batch = b_.graph().tensor(images).shape[0];
  x = b_.minibatch_stddev(x, kMbstdGroup);
  x = b_.leaky_relu(b_.conv2d(x, w(d_final_conv_.weight), w(d_final_conv_.bias), Conv2dOptions::with(1, 1)), kSlope);
  x = b_.reshape(x, {batch, 16 * c4});
  // The dense biases as fp32 add_broadcast tables, not GEMM epilogues: D's real and fake passes both give them
  // a gradient, and a bias cast to the compute dtype for two GEMMs would sum those in 16 bits (bias_backward
  // writes fp32 only); the table's column sums are fp32 and add up in fp32.
  x = b_.leaky_relu(b_.add_broadcast(b_.linear(x, w(d_dense0_.weight), kNoTensor), w(d_dense0_.bias)), kSlope);
  return b_.add_broadcast(b_.linear(x, w(d_dense1_.weight), kNoTensor), w(d_dense1_.bias));
}

// Per image, convolutions and dense layers as shared/WORKLOADS.md §5 counts them (a fused transposed conv:
// its input pixels x 16 x C_in x C_out; a fused down conv: its output pixels x 16 x C_in x C_out).
double StyleGanNetworks::generator_forward_macs() const {
  const StyleGanShape& s = shape_;
  double macs = double(s.mapping_layers) * double(s.latent) * double(s.latent) + 16.0 * 9 * s.nf(1) * s.nf(1);
  for (int64_t layer = 0; layer < s.layers(); ++layer) macs += double(s.latent) * 2.0 * double(s.nf(layer / 2 + 1));
  for (int64_t r = 3; r <= s.resolution_log2; ++r) {
    const double in = double(s.nf(r - 2)), out = double(s.nf(r - 1)), side = double(int64_t{1} << r);
    macs += r >= s.fused_from_log2 ? (side / 2) * (side / 2) * 16.0 * in * out : side * side * 9.0 * in * out;
    macs += side * side * 9.0 * out * out;
  }
  const double side = double(int64_t{1} << s.resolution_log2);
  return macs + side * side * 3.0 * double(s.nf(s.resolution_log2 - 1));
}

double StyleGanNetworks::discriminator_forward_macs() const {
  const StyleGanShape& s = shape_;
  const double full = double(int64_t{1} << s.resolution_log2);
  double macs = full * full * 3.0 * double(s.nf(s.resolution_log2 - 1));
  for (int64_t r = s.resolution_log2; r >= 3; --r) {
    const double c = double(s.nf(r - 1)), next = double(s.nf(r - 2)), side = double(int64_t{1} << r);
    macs += side * side * 9.0 * c * c;
    macs += r >= s.fused_from_log2 ? (side / 2) * (side / 2) * 16.0 * c * next : side * side * 9.0 * c * next;
  }
  const double c4 = double(s.nf(1));
  return macs + 16.0 * 9 * (c4 + 1) * c4 + 16.0 * c4 * double(s.nf(0)) + double(s.nf(0));
}

}  // namespace sb::workloads
