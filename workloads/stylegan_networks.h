// StyleGAN's networks (NVlabs/stylegan training/networks_stylegan.py: G_mapping, G_synthesis, D_basic) built
// through GraphBuilder in NHWC, at lod 0 (the full resolution only). Used by workloads/stylegan.cpp, which
// assembles the training step; tests/unit/test_stylegan.cpp counts their parameters.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "scalebench/graph_builder.h"

namespace sb::workloads {

struct StyleGanShape {
  int64_t resolution_log2;  // 10: 1024 x 1024
  int64_t fmap_base;        // nf(stage) = min(fmap_base / 2^stage, fmap_max)
  int64_t fmap_max;
  int64_t latent;           // z and w: 512
  int64_t mapping_layers;   // 8
  int64_t fused_from_log2;  // fused up/down convs at resolutions 2^this and above (128: 7)
  int64_t nf(int64_t stage) const { return std::min(fmap_base >> stage, fmap_max); }
  int64_t layers() const { return 2 * resolution_log2 - 2; }  // 18 style inputs at 1024²
};

// The parameters of both networks, their equalized-learning-rate run-time scales applied once per graph (a
// `scale` node per weight, read by every pass that uses it).
class StyleGanNetworks {
 public:
  StyleGanNetworks(GraphBuilder& b, const StyleGanShape& shape);

  // dlatents for every synthesis layer from latents (2N, latent): the mapping network on both halves, then
  // style mixing by the int32 crossover layers (N).
  std::vector<TensorId> mapping(TensorId latents, TensorId crossover);
  // Images (N, R, R, 3) from the per-layer dlatents; noise drawn for the int32 global sample ids (N).
  TensorId synthesis(const std::vector<TensorId>& dlatents, TensorId sample_ids);
  // Scores (N, 1) of images (N, R, R, 3). `frozen`: D's weights read through stop_gradient (the G loss's pass).
  TensorId discriminator(TensorId images, bool frozen);

  const std::vector<TensorId>& generator_parameters() const { return generator_parameters_; }
  double generator_forward_macs() const;      // per image, convolutions and dense layers
  double discriminator_forward_macs() const;  // per image

 private:
  struct Layer {
    TensorId weight = kNoTensor;  // scaled (an activation), as the convs and denses read it
    TensorId bias = kNoTensor;    // fp32 parameter
    double output_scale = 1.0;    // lrmul of the mapping layers: applied to weight · x + bias
  };
  TensorId parameter(const std::string& name, std::vector<int64_t> shape, bool generator);
  Layer weighted(const std::string& name, std::vector<int64_t> shape, int64_t fan_in, double gain, double lrmul,
                 bool bias, bool generator);
  TensorId epilogue(TensorId x, const std::string& name, int64_t layer, const std::vector<TensorId>& dlatents,
                    TensorId sample_ids);
  TensorId frozen(TensorId weight, bool yes);

  GraphBuilder& b_;
  StyleGanShape shape_;
  std::vector<TensorId> generator_parameters_;
  // Generator: const, per-layer noise weights and biases, style denses, convs, the used ToRGB.
  TensorId const_input_ = kNoTensor;
  std::vector<Layer> mapping_layers_, style_, convs_;
  std::vector<TensorId> noise_weight_, epilogue_bias_;
  Layer to_rgb_;
  // Discriminator: the used FromRGB, two convs per block, the 4 x 4 block's conv and denses.
  Layer from_rgb_;
  std::vector<Layer> d_conv0_, d_conv1_;
  Layer d_final_conv_, d_dense0_, d_dense1_;
};

}  // namespace sb::workloads
