// A reference workload: a forward graph built through GraphBuilder for a per-rank batch, the units a step
// is credited with, analytic FLOPs, and how its synthetic inputs are drawn. One file per workload in
// workloads/, listed in workloads/registry.cpp (STYLE.md rule 8).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "scalebench/graph_builder.h"
#include "scalebench/optimizer.h"

namespace sb {

enum class WorkloadScale { kFull, kTiny };  // tiny: the same graph with small dimensions, for the CPU device
WorkloadScale parse_workload_scale(const std::string& text);

struct WorkloadInfo {
  std::string name;         // "transformer_big"
  std::string task;         // "translation (WMT16 en-de)"
  std::string unit;         // "tokens", "sequences", "images"
  int64_t default_batch;    // per rank, in the unit's batch granularity (sequences or sentence pairs)
  int64_t full_parameters;  // shared/WORKLOADS.md's count, asserted by a test
  std::string reference;    // the implementation it follows
  std::string batch_unit;   // what one batch element is when it is not one unit ("sentence pairs"); empty: the unit
  // What a batch counts: batch_unit, or the unit itself ("sentence pairs", "sequences", "images").
  const std::string& batch_unit_name() const { return batch_unit.empty() ? unit : batch_unit; }
  // The smallest per-rank batch the graph trains at: 2 where a training-mode BatchNorm sees one value per
  // sample and channel (deeplabv3's image pooling; PyTorch refuses batch 1 there too). Max-batch searches
  // start here and plan_replica refuses less.
  int64_t min_batch = 1;
  // Weights used but never trained (pix2pixHD's VGG19 perceptual network), full scale; not in full_parameters.
  // shared/WORKLOADS.md lists them apart; `list` reports them beside the trainable count.
  int64_t frozen_parameters = 0;
};

struct BuiltWorkload {
  TensorId loss = kNoTensor;
  // Credited per step (target tokens, sequences...). Where credited_inputs names inputs, build() sets only an
  // estimate: the replica replaces it by the count in its synthesized batch (credited_units below).
  double units_per_step = 0;
  double forward_flops_per_unit = 0;   // analytic (2 per multiply-add), matrix products only
  // The int32 inputs whose elements other than credited_padding are the units a step trains on (the non-padding
  // target tokens of a translation batch); an input named twice counts twice (unsupmt trains on each language's
  // targets in two sub-steps). Empty: one unit per sample, units_per_step as build() set it.
  std::vector<std::string> credited_inputs;
  int32_t credited_padding = 0;
};

// A parameter's initial values: N(mean, stddev²) (stddev 0: every element `mean`).
struct ParameterInit {
  float mean = 0.0f;
  float stddev = 0.0f;
};

// Writes `bytes` of host data into an input tensor (the executor decides where it lives).
using InputWriter = std::function<void(TensorId, const void* data, size_t bytes)>;

// Writes a host vector into the input tensor called `name`.
template <typename T>
void write_input(const InputWriter& write, const Graph& graph, const std::string& name, const std::vector<T>& values) {
  write(graph.find_tensor(name), values.data(), values.size() * sizeof(T));
}

class Workload {
 public:
  virtual ~Workload() = default;
  virtual const WorkloadInfo& info() const = 0;
  // The optimizer WORKLOADS.md gives for this workload (`--optimizer reference`), its sources beside it in the
  // workload's file.
  virtual OptimizerSettings reference_optimizer() const = 0;
  // Appends the forward graph for `batch` to the builder's graph.
  virtual BuiltWorkload build(GraphBuilder& builder, int64_t batch, WorkloadScale scale) const = 0;
  // Fills every kInput tensor of a graph built by build() with deterministic synthetic data: the graph's
  // batch holds samples first_sample, first_sample + 1, ... of one endless synthetic dataset, each drawn
  // from its own generator (sample_random), so rank r of a data-parallel job with batch b holds exactly
  // the rows r·b .. r·b + b - 1 of one rank's batch N·b (the --check invariant compares the two).
  virtual void synthesize(const Graph& graph, uint64_t seed, int64_t first_sample, const InputWriter& write) const = 0;
  void synthesize(const Graph& graph, uint64_t seed, const InputWriter& write) const {
    synthesize(graph, seed, 0, write);
  }
  // How the parameter called `name` starts; nullopt (the default): the trainer's rule, N(0, 0.02) weights,
  // zero biases, norm gains 1 (src/train/replica.cpp initialise_parameters). StyleGAN's equalized learning rate
  // stores N(0, 1 / lrmul²) weights that the graph scales at run time, zero noise strengths and a constant of ones.
  virtual std::optional<ParameterInit> parameter_init(const std::string& name) const {
    (void)name;
    return std::nullopt;
  }
};

// The generator of one sample of the synthetic dataset `seed` (splitmix64 of both, so neighbouring seeds
// and samples give unrelated streams).
std::mt19937_64 sample_random(uint64_t seed, int64_t sample);

// The units one step of a synthesized batch trains on: built.units_per_step where no credited input is named, else
// the non-padding elements of the credited inputs, read by `read` (an executor's copy of the batch).
using InputReader = std::function<void(TensorId, void* data, size_t bytes)>;
double credited_units(const Graph& graph, const BuiltWorkload& built, const InputReader& read);
// The same count for the batch that synthesize(graph, seed, first_sample) writes (no executor needed: `list`).
double credited_units(const Workload& workload, const Graph& graph, const BuiltWorkload& built, uint64_t seed,
                      int64_t first_sample);

const std::vector<const Workload*>& workload_registry();
const Workload& find_workload(const std::string& name);  // throws UsageError listing the names

}  // namespace sb
