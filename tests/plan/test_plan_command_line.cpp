// `scalebench plan`'s flags parsed in-process (STYLE.md rule 14).
#include <gtest/gtest.h>

#include "scalebench/error.h"
#include "src/cli/command_line.h"

namespace sb {
namespace {

CommandLine parse(std::vector<const char*> args) {
  args.insert(args.begin(), "scalebench");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST(PlanCommandLine, APrediction) {
  const CommandLine cl = parse({"plan", "--workload", "transformer_big", "--gpu", "RTX 4090", "--gpus", "4",
                                "--precision", "fp16", "--grad-dtype", "bf16", "--no-overlap"});
  EXPECT_EQ(cl.command, "plan");
  ASSERT_EQ(cl.plan.workloads.size(), 1u);
  EXPECT_EQ(cl.plan.gpus.front(), "RTX 4090");
  EXPECT_EQ(cl.plan.request.gpus, 4);
  EXPECT_EQ(cl.plan.request.nodes, 1);
  EXPECT_EQ(cl.plan.request.precision, "fp16");
  EXPECT_EQ(cl.plan.request.grad_dtype, "bf16");
  EXPECT_TRUE(cl.plan.no_overlap);
}

TEST(PlanCommandLine, TablesTakeListsAndValidateTakesFiles) {
  const CommandLine table = parse({"plan", "--table", "--gpu", "H100 SXM,RTX 3090", "-w", "bert_base,mt_dnn"});
  EXPECT_TRUE(table.plan.table);
  EXPECT_EQ(table.plan.gpus, (std::vector<std::string>{"H100 SXM", "RTX 3090"}));
  EXPECT_EQ(table.plan.workloads, (std::vector<std::string>{"bert_base", "mt_dnn"}));
  const CommandLine validate = parse({"plan", "--validate", "a.json", "b.json", "--fabric", "pcie5-host"});
  EXPECT_TRUE(validate.plan.validate);
  EXPECT_EQ(validate.plan.files, (std::vector<std::string>{"a.json", "b.json"}));
  EXPECT_EQ(validate.plan.request.fabric, "pcie5-host");
}

TEST(PlanCommandLine, OutOfRangeValuesAreUsageErrors) {
  EXPECT_THROW(parse({"plan", "-w", "bert_base", "--gpu", "H100 SXM", "--gpus", "2048"}), UsageError);
  EXPECT_THROW(parse({"plan", "-w", "bert_base", "--gpu", "H100 SXM", "--precision", "fp8"}), UsageError);
  EXPECT_THROW(parse({"plan", "-w", "bert_base", "--gpu", "H100 SXM", "--nodes", "0"}), UsageError);
}

}  // namespace
}  // namespace sb
