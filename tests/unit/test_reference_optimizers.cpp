// Every registered workload's reference optimizer (`--optimizer reference`), every field pinned exactly to the
// values WORKLOADS.md's recipes gave when the settings lived in one table in src/core/optimizer.cpp (issue 24
// moved each into its workload's file): a change of any of them is a change of what `run` trains.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "scalebench/optimizer.h"
#include "scalebench/workload.h"

namespace sb {
namespace {

OptimizerSettings settings(OptimizerKind kind, float lr, float beta1, float beta2, float epsilon, float weight_decay,
                           float momentum, float max_grad_norm) {
  OptimizerSettings s;
  s.kind = kind;
  s.learning_rate = lr;
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.epsilon = epsilon;
  s.weight_decay = weight_decay;
  s.momentum = momentum;
  s.max_grad_norm = max_grad_norm;
  return s;
}

// name -> kind, lr, beta1, beta2, eps, weight decay, momentum, clip (fields a rule ignores at their defaults).
const std::map<std::string, OptimizerSettings>& expected() {
  using K = OptimizerKind;
  static const std::map<std::string, OptimizerSettings> kExpected = {
      {"transformer_big", settings(K::kAdam, 5e-4f, 0.9f, 0.98f, 1e-8f, 0.0f, 0.9f, 0.0f)},
      {"bert_base", settings(K::kAdamW, 1e-4f, 0.9f, 0.999f, 1e-6f, 0.01f, 0.9f, 1.0f)},
      {"bert_finetune", settings(K::kAdamW, 3e-5f, 0.9f, 0.999f, 1e-6f, 0.01f, 0.9f, 1.0f)},
      {"mt_dnn", settings(K::kAdamax, 5e-5f, 0.9f, 0.999f, 1e-8f, 0.0f, 0.9f, 1.0f)},
      {"nasnet_large", settings(K::kSgdMomentum, 0.1f, 0.9f, 0.999f, 1e-8f, 5e-5f, 0.9f, 0.0f)},
      {"yolov3", settings(K::kSgdMomentum, 1e-6f, 0.9f, 0.999f, 1e-8f, 5e-4f, 0.9f, 0.0f)},
      {"conv_seq2seq", settings(K::kNag, 0.5f, 0.9f, 0.999f, 1e-8f, 0.0f, 0.99f, 0.1f)},
      {"deeplabv3", settings(K::kSgdMomentum, 0.007f, 0.9f, 0.999f, 1e-8f, 1e-4f, 0.9f, 0.0f)},
      {"pix2pixhd", settings(K::kAdam, 2e-4f, 0.5f, 0.999f, 1e-8f, 0.0f, 0.9f, 0.0f)},
      {"stylegan", settings(K::kAdam, 0.003f, 0.0f, 0.99f, 1e-8f, 0.0f, 0.9f, 0.0f)},
      {"maskrcnn", settings(K::kSgdMomentum, 0.02f / 3.0f, 0.9f, 0.999f, 1e-8f, 1e-4f, 0.9f, 0.0f)},
      {"unsupmt", settings(K::kAdam, 1e-4f, 0.9f, 0.98f, 1e-8f, 0.0f, 0.9f, 0.0f)},
  };
  return kExpected;
}

TEST(ReferenceOptimizers, EveryWorkloadKeepsItsRecipeExactly) {
  std::set<std::string> seen;
  for (const Workload* workload : workload_registry()) {
    const std::string& name = workload->info().name;
    SCOPED_TRACE(name);
    ASSERT_EQ(expected().count(name), 1u) << "a registered workload without a pinned reference optimizer";
    seen.insert(name);
    const OptimizerSettings& want = expected().at(name);
    const OptimizerSettings got = workload->reference_optimizer();
    EXPECT_EQ(got.kind, want.kind);
    // Exact: the settings are float constants copied into the executors; no arithmetic lies between.
    EXPECT_EQ(got.learning_rate, want.learning_rate);
    EXPECT_EQ(got.beta1, want.beta1);
    EXPECT_EQ(got.beta2, want.beta2);
    EXPECT_EQ(got.epsilon, want.epsilon);
    EXPECT_EQ(got.weight_decay, want.weight_decay);
    EXPECT_EQ(got.momentum, want.momentum);
    EXPECT_EQ(got.max_grad_norm, want.max_grad_norm);
    EXPECT_NO_THROW(validate_optimizer(got));
  }
  EXPECT_EQ(seen.size(), expected().size()) << "a pinned workload is no longer registered";
}

TEST(ReferenceOptimizers, ReachedThroughFindWorkload) {
  // The CLI's path (run, max-batch): find_workload(name).reference_optimizer().
  EXPECT_EQ(find_workload("conv_seq2seq").reference_optimizer().kind, OptimizerKind::kNag);
  EXPECT_EQ(find_workload("bert_finetune").reference_optimizer().learning_rate, 3e-5f);
}

}  // namespace
}  // namespace sb
