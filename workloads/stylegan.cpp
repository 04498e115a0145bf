// stylegan: StyleGAN at 1024 x 1024 (shared/WORKLOADS.md §5; NVlabs/stylegan, FFHQ config) trained at lod 0 with
// R1 every step, as one graph per step (workloads/stylegan_networks.h builds the networks):
//   D part: G(z1) under stop_gradient, D(fake), D(real), the input gradient dD(real)/dx as forward nodes
//           (append_input_gradient) and loss_D = softplus(D(fake)) + softplus(-D(real)) + 5 ||dD/dx||²
//           (training/loss.py D_logistic_simplegp, r1_gamma 10), each averaged over the batch;
//   G part: G(z2), D with its weights through stop_gradient, loss_G = softplus(-D(G(z2)))
//           (G_logistic_nonsaturating);
// loss = loss_D + loss_G, so one backward pass gives D's gradients (from loss_D only) and G's (from loss_G only).
// Style mixing 0.9 per sample (crossover layers are data), per-pixel noise fresh every step, and the EMA copy Gs
// (0.5^(32 / 10k) per step, training_loop.py's beta at minibatch 32) as kState updated in place by the graph's
// first nodes, i.e. right after the previous step's optimizer (local to each rank, never reduced; `list` reports
// it as frozen, not trained). G's and D's parameters are groups "G" and "D": two bucketed reductions.
// DESIGN.md ("StyleGAN") says how this maps onto the reference's D-step-then-G-step order.
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "scalebench/autodiff.h"
#include "scalebench/error.h"
#include "scalebench/workload.h"
#include "workloads/stylegan_networks.h"

namespace sb::workloads {
namespace {

constexpr double kR1Gamma = 10.0;               // loss.py D_logistic_simplegp(r1_gamma=10)
constexpr double kStyleMixingProbability = 0.9; // G_style(style_mixing_prob=0.9)
const double kEmaBeta = std::pow(0.5, 32.0 / 10000.0);  // G_smoothing_kimg 10 at the reference's minibatch 32

// Full: networks_stylegan.py's defaults at 1024². Tiny: 16 x 16 (blocks 8 and 16: one non-fused and one fused
// up/down conv), channels 8 -> 4, latent 8, two mapping layers: the same op sequence on the CPU in seconds.
StyleGanShape shape_for(WorkloadScale scale) {
  return scale == WorkloadScale::kFull ? StyleGanShape{10, 8192, 512, 512, 8, 7} : StyleGanShape{4, 32, 8, 8, 2, 4};
}

class StyleGan final : public Workload {
 public:
  const WorkloadInfo& info() const override {
    static const WorkloadInfo kInfo = [] {
      WorkloadInfo info{"stylegan", "image generation (FFHQ 1024^2)", "images", 16, 26219627 + 23087249,
                        "NVlabs/stylegan (FFHQ, lod 0, R1 every step)", ""};
      info.frozen_parameters = 26219627;  // Gs, the EMA copy of G (GraphBuilder::moving_average)
      return info;
    }();
    return kInfo;
  }

  OptimizerSettings reference_optimizer() const override {
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

  BuiltWorkload build(GraphBuilder& b, int64_t batch, WorkloadScale scale) const override {
    const StyleGanShape s = shape_for(scale);
    const int64_t side = int64_t{1} << s.resolution_log2;
    const TensorId reals = b.input("reals", {batch, side, side, 3});
    const TensorId latents_d = b.input("latents_d", {2 * batch, s.latent});
    const TensorId crossover_d = b.input("crossover_d", {batch}, DType::kInt32);
    const TensorId latents_g = b.input("latents_g", {2 * batch, s.latent});
    const TensorId crossover_g = b.input("crossover_g", {batch}, DType::kInt32);
    const TensorId sample_ids = b.input("sample_ids", {batch}, DType::kInt32);
    StyleGanNetworks nets(b, s);
    for (TensorId p : nets.generator_parameters()) b.moving_average(p, kEmaBeta);

    // D part.
    const TensorId fake_d = b.stop_gradient(nets.synthesis(nets.mapping(latents_d, crossover_d), sample_ids));
    const TensorId fake_scores = nets.discriminator(fake_d, false);
    const TensorId real_scores = nets.discriminator(reals, false);
    const TensorId real_gradient = append_input_gradient(b.graph(), real_scores, reals);
    const TensorId loss_d =
        b.add_losses(b.add_losses(b.softplus_loss(fake_scores, 1.0), b.softplus_loss(real_scores, -1.0)),
                     b.squared_norm_loss(real_gradient, kR1Gamma / 2));
    // G part.
    const TensorId fake_g = nets.synthesis(nets.mapping(latents_g, crossover_g), sample_ids);
    const TensorId loss_g = b.softplus_loss(nets.discriminator(fake_g, true), -1.0);

    BuiltWorkload built;
    built.loss = b.add_losses(loss_d, loss_g);
    built.units_per_step = static_cast<double>(batch);
    // One G and one D forward pass per image (§5 counts the step's other passes from these).
    built.forward_flops_per_unit = 2 * (nets.generator_forward_macs() + nets.discriminator_forward_macs());
    return built;
  }

  // networks_stylegan.py with use_wscale: weights N(0, 1 / lrmul²) (the mapping network's lrmul 0.01: N(0, 100²)),
  // multiplied at run time by He's constant · lrmul; biases and noise strengths 0; the learned constant 1.
  std::optional<ParameterInit> parameter_init(const std::string& name) const override {
    auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with(".const")) return ParameterInit{1.0f, 0.0f};
    if (ends_with(".weight")) return ParameterInit{0.0f, name.rfind("G_mapping.", 0) == 0 ? 100.0f : 1.0f};
    return ParameterInit{0.0f, 0.0f};  // biases, noise strengths
  }

  // Per sample: its real image (uniform in [-1, 1], the reference's dynamic range), its two latent pairs (z1, z2
  // of the D part, then of the G part, N(0, 1)) and crossover layers (a uniform layer in [1, layers) with
  // probability 0.9, else no mixing), and its global index (the noise's Philox stream).
  void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const override {
    const TensorInfo& reals = graph.tensor(graph.find_tensor("reals"));
    const TensorInfo& latents = graph.tensor(graph.find_tensor("latents_d"));
    const int64_t batch = reals.shape[0], pixels = reals.elements() / batch, dim = latents.shape[1];
    const int64_t layers = 2 * static_cast<int64_t>(std::log2(double(reals.shape[1]))) - 2;
    std::vector<float> images(static_cast<size_t>(reals.elements()));
    std::vector<float> z_d(static_cast<size_t>(latents.elements())), z_g(z_d.size());
    std::vector<int32_t> cross_d(static_cast<size_t>(batch)), cross_g(cross_d.size()), ids(cross_d.size());
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::uniform_int_distribution<int32_t> layer(1, static_cast<int32_t>(layers - 1));
    for (int64_t n = 0; n < batch; ++n) {
      std::mt19937_64 random = sample_random(seed, first_sample + n);
      for (std::vector<float>* z : {&z_d, &z_g}) {
        for (int64_t half = 0; half < 2; ++half) {
          float* row = z->data() + (half * batch + n) * dim;
          for (int64_t d = 0; d < dim; ++d) row[d] = normal(random);
        }
      }
      for (std::vector<int32_t>* cross : {&cross_d, &cross_g}) {
        (*cross)[size_t(n)] = unit(random) < kStyleMixingProbability ? layer(random) : static_cast<int32_t>(layers);
      }
      ids[size_t(n)] = static_cast<int32_t>(first_sample + n);
      float* image = images.data() + n * pixels;
      for (int64_t i = 0; i < pixels; i += 2) {  // two 24-bit values per draw, exact in fp32
        const uint64_t bits = random();
        image[i] = static_cast<float>(bits >> 40) * 0x1p-23f - 1.0f;
        if (i + 1 < pixels) image[i + 1] = static_cast<float>((bits >> 8) & 0xFFFFFF) * 0x1p-23f - 1.0f;
      }
    }
    write_input(write, graph, "reals", images);
    write_input(write, graph, "latents_d", z_d);
    write_input(write, graph, "latents_g", z_g);
    write_input(write, graph, "crossover_d", cross_d);
    write_input(write, graph, "crossover_g", cross_g);
    write_input(write, graph, "sample_ids", ids);
  }
};

}  // namespace

const Workload& stylegan() {
  static const StyleGan kWorkload;
  return kWorkload;
}

}  // namespace sb::workloads
