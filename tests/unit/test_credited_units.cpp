// The units a step is credited with are the units its synthesized batch holds (shared/WORKLOADS.md's proxy table,
// "units credited per step"): fairseq's wps counts the non-padding target tokens (EOS included) of the batch,
// XLM's processed_w the target words of all four sub-steps, the other workloads their samples. Read back from the
// CPU executor's copy of the tiny batch, for every workload, at a data seed and first sample other than 0 (rank r
// of a data-parallel job credits its own rows).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scalebench/device.h"
#include "src/train/replica.h"

namespace sb {
namespace {

struct TokenCredit {
  std::vector<std::string> inputs;  // each counted once per sub-step that trains on it
  int32_t padding;
};

// Per the references: fairseq's dictionary pads with 1; XLM's with 2, and AE(l) and BT(l-x-l) both predict l's words.
const std::map<std::string, TokenCredit>& token_credits() {
  static const std::map<std::string, TokenCredit> kCredits = {
      {"transformer_big", {{"targets"}, 1}},
      {"conv_seq2seq", {{"targets"}, 1}},
      {"unsupmt", {{"en.targets", "de.targets", "en.targets", "de.targets"}, 2}},
  };
  return kCredits;
}

double count_in_batch(Replica& replica, const TokenCredit& credit) {
  double units = 0;
  for (const std::string& name : credit.inputs) {
    const TensorId id = replica.graph.find_tensor(name);
    std::vector<int32_t> values(static_cast<size_t>(replica.graph.tensor(id).elements()));
    replica.executor->read_tensor(id, values.data(), values.size() * sizeof(int32_t));
    for (int32_t v : values) units += v != credit.padding ? 1 : 0;
  }
  return units;
}

class CreditedUnits : public ::testing::TestWithParam<const Workload*> {};

TEST_P(CreditedUnits, AreTheUnitsOfTheSynthesizedBatch) {
  const Workload& workload = *GetParam();
  const std::unique_ptr<Device> device = make_cpu_device();
  ReplicaOptions options;
  options.workload = workload.info().name;
  options.batch = 3;
  options.scale = WorkloadScale::kTiny;
  const uint64_t data_seed = 5;
  const int64_t first_sample = 7;
  std::unique_ptr<Replica> replica = build_replica(options, *device, data_seed, first_sample, 1);
  const auto token = token_credits().find(workload.info().name);
  const double expected = token == token_credits().end() ? 3.0 : count_in_batch(*replica, token->second);
  EXPECT_DOUBLE_EQ(replica->built.units_per_step, expected);
  // What `list` and `plan` quote, counted from a fresh synthesis of the same samples, is the same number.
  EXPECT_DOUBLE_EQ(credited_units(workload, replica->graph, replica->built, data_seed, first_sample), expected);
  if (token != token_credits().end()) {  // padding really varies at tiny scale: a constant would not do
    double capacity = 0;  // every position of the credited inputs, padding included
    for (const std::string& name : token->second.inputs) {
      capacity += static_cast<double>(replica->graph.tensor(replica->graph.find_tensor(name)).elements());
    }
    EXPECT_GT(expected, 0.0);
    EXPECT_LT(expected, capacity) << "no padding in the batch: the count would not tell a constant credit apart";
    std::unique_ptr<Replica> other = build_replica(options, *device, data_seed + 1, first_sample, 1);
    EXPECT_DOUBLE_EQ(other->built.units_per_step, count_in_batch(*other, token->second));
  }
}

INSTANTIATE_TEST_SUITE_P(EveryWorkload, CreditedUnits, ::testing::ValuesIn(workload_registry()),
                         [](const ::testing::TestParamInfo<const Workload*>& info) { return info.param->info().name; });

}  // namespace
}  // namespace sb
