// The CLI parsed in-process (STYLE.md rule 14): defaults, every bandwidth flag, sizes, and the usage errors
// that must become one line and exit 2.
#include <gtest/gtest.h>

#include "scalebench/error.h"
#include "src/cli/byte_size.h"
#include "src/cli/command_line.h"

namespace sb {
namespace {

CommandLine parse(std::vector<const char*> args) {
  args.insert(args.begin(), "scalebench");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST(ByteSize, ParsesBinaryMultiples) {
  EXPECT_EQ(parse_byte_size("100"), 100u);
  EXPECT_EQ(parse_byte_size("1K"), 1024u);
  EXPECT_EQ(parse_byte_size("8M"), 8u << 20);
  EXPECT_EQ(parse_byte_size("8MiB"), 8u << 20);
  EXPECT_EQ(parse_byte_size("8mb"), 8u << 20);
  EXPECT_EQ(parse_byte_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_byte_size("1T"), 1ull << 40);
  EXPECT_THROW(parse_byte_size(""), UsageError);
  EXPECT_THROW(parse_byte_size("M"), UsageError);
  EXPECT_THROW(parse_byte_size("1.5M"), UsageError);
  EXPECT_THROW(parse_byte_size("12Q"), UsageError);
  EXPECT_THROW(parse_byte_size("99999999999999999999"), UsageError);
  EXPECT_THROW(parse_byte_size("99999999999T"), UsageError);
}

TEST(ByteSize, FormatsWholeUnits) {
  EXPECT_EQ(format_byte_size(1536), "1536 B");
  EXPECT_EQ(format_byte_size(1024), "1 KiB");
  EXPECT_EQ(format_byte_size(2ull << 30), "2 GiB");
}

TEST(CommandLine, BandwidthDefaults) {
  CommandLine cl = parse({"bandwidth"});
  EXPECT_EQ(cl.command, "bandwidth");
  ASSERT_EQ(cl.bandwidth.ops.size(), 1u);
  EXPECT_EQ(cl.bandwidth.ops[0], CollectiveOp::kAllReduce);
  EXPECT_EQ(cl.bandwidth.min_bytes, 1024u);
  EXPECT_EQ(cl.bandwidth.max_bytes, 0u);  // resolved per device later
  EXPECT_EQ(cl.bandwidth.dtypes, std::vector<DType>{DType::kFloat32});
  EXPECT_EQ(cl.bandwidth.reduces, std::vector<ReduceOp>{ReduceOp::kSum});
  EXPECT_TRUE(cl.bandwidth.run_in_place);
  EXPECT_TRUE(cl.bandwidth.run_out_of_place);
  EXPECT_FALSE(cl.bandwidth.check);
  EXPECT_EQ(cl.common.device, "auto");
  EXPECT_EQ(cl.common.backend, Backend::kAuto);
  EXPECT_DOUBLE_EQ(cl.common.timeout_seconds, 300);
}

TEST(CommandLine, EveryBandwidthFlag) {
  CommandLine cl = parse({"bandwidth", "--op", "all_gather,broadcast", "-b", "1M", "-e", "2G", "-f", "4",
                          "-d", "bf16", "-o", "avg", "-r", "1", "-w", "2", "-n", "50", "--in-place", "-G",
                          "-c", "--device", "cuda", "--backend", "nccl", "--timeout", "30", "--json", "-"});
  EXPECT_EQ(cl.bandwidth.ops, (std::vector<CollectiveOp>{CollectiveOp::kAllGather, CollectiveOp::kBroadcast}));
  EXPECT_EQ(cl.bandwidth.min_bytes, 1u << 20);
  EXPECT_EQ(cl.bandwidth.max_bytes, 2ull << 30);
  EXPECT_DOUBLE_EQ(cl.bandwidth.factor, 4);
  EXPECT_EQ(cl.bandwidth.dtypes, std::vector<DType>{DType::kBFloat16});
  EXPECT_EQ(cl.bandwidth.reduces, std::vector<ReduceOp>{ReduceOp::kAvg});
  EXPECT_EQ(cl.bandwidth.root, 1);
  EXPECT_EQ(cl.bandwidth.warmup_iters, 2);
  EXPECT_EQ(cl.bandwidth.iters, 50);
  EXPECT_TRUE(cl.bandwidth.run_in_place);
  EXPECT_FALSE(cl.bandwidth.run_out_of_place);
  EXPECT_TRUE(cl.bandwidth.graph);
  EXPECT_TRUE(cl.bandwidth.check);
  EXPECT_EQ(cl.common.device, "cuda");
  EXPECT_EQ(cl.common.backend, Backend::kNccl);
  EXPECT_DOUBLE_EQ(cl.common.timeout_seconds, 30);
  EXPECT_EQ(cl.common.json_path, "-");
}

TEST(CommandLine, AllExpandsToEveryCollective) {
  EXPECT_EQ(parse({"bandwidth", "--op", "all"}).bandwidth.ops.size(), 5u);
}

TEST(CommandLine, CommonFlagsMayFollowOrPrecedeTheSubcommand) {
  EXPECT_EQ(parse({"--device", "cpu", "bandwidth"}).common.device, "cpu");
  EXPECT_EQ(parse({"bandwidth", "--device", "cpu"}).common.device, "cpu");
}

TEST(CommandLine, CanonicalFormDiffersWhenAnyValueDiffers) {
  EXPECT_EQ(parse({"bandwidth", "-n", "5"}).canonical, parse({"bandwidth", "--iters", "5"}).canonical);
  EXPECT_NE(parse({"bandwidth", "-n", "5"}).canonical, parse({"bandwidth", "-n", "6"}).canonical);
  EXPECT_NE(parse({"bandwidth"}).canonical, parse({"topo"}).canonical);
  EXPECT_EQ(parse({"bandwidth"}).canonical, parse({"bandwidth", "--iters", "20", "--op", "allreduce"}).canonical);
  EXPECT_NE(parse({"bandwidth"}).canonical, parse({"bandwidth", "--check"}).canonical);
  EXPECT_NE(parse({"bandwidth"}).canonical, parse({"--device", "cpu", "bandwidth"}).canonical);
}

TEST(CommandLine, RunOptimizerAndClipping) {
  const CommandLine plain = parse({"run", "-w", "mt_dnn"});
  EXPECT_EQ(plain.run.optimizer, "adamw");
  EXPECT_LT(plain.run.clip_norm, 0);      // the optimizer's own: none for adamw
  EXPECT_EQ(plain.run.learning_rate, 0);  // the optimizer's own: 1e-4 for adamw
  const CommandLine nag = parse({"run", "-w", "mt_dnn", "--optimizer", "nag", "--clip-norm", "0.1"});
  EXPECT_EQ(nag.run.optimizer, "nag");
  EXPECT_DOUBLE_EQ(nag.run.clip_norm, 0.1);
  EXPECT_EQ(parse({"run", "-w", "mt_dnn", "--optimizer", "reference"}).run.optimizer, "reference");
  EXPECT_NE(plain.canonical, nag.canonical);
  EXPECT_NE(plain.canonical, parse({"run", "-w", "mt_dnn", "--clip-norm", "1"}).canonical);
  EXPECT_NE(plain.canonical, parse({"run", "-w", "mt_dnn", "--optimizer", "adam"}).canonical);
  EXPECT_THROW(parse({"run", "-w", "mt_dnn", "--optimizer", "lamb"}), UsageError);
  EXPECT_THROW(parse({"run", "-w", "mt_dnn", "--clip-norm", "-1"}), UsageError);
}

TEST(CommandLine, RunIsTheDefaultSubcommand) {
  const CommandLine bare = parse({"--workload", "transformer_big"});
  EXPECT_EQ(bare.command, "run");
  EXPECT_EQ(bare.run.workload, "transformer_big");
  EXPECT_EQ(bare.canonical, parse({"run", "--workload", "transformer_big"}).canonical);
  EXPECT_EQ(parse({"--device", "cpu", "bandwidth"}).command, "bandwidth");  // a named command stays
  EXPECT_TRUE(parse({"--help"}).help_requested);
}

TEST(CommandLine, RunDataParallelFlags) {
  const CommandLine plain = parse({"run", "-w", "bert_base"});
  EXPECT_EQ(plain.run.phases, (std::vector<std::string>{"solo", "comm", "dp"}));
  EXPECT_DOUBLE_EQ(plain.run.bucket_mb, 25);
  EXPECT_FALSE(plain.run.no_overlap);
  EXPECT_EQ(plain.run.grad_dtype, "fp32");
  EXPECT_FALSE(plain.run.check);
  const CommandLine custom = parse({"run", "-w", "bert_base", "--phases", "solo,dp", "--bucket-mb", "50",
                                    "--no-overlap", "--grad-dtype", "bf16", "--check", "--check-steps", "2",
                                    "--min-time", "5"});
  EXPECT_EQ(custom.run.phases, (std::vector<std::string>{"solo", "dp"}));
  EXPECT_DOUBLE_EQ(custom.run.bucket_mb, 50);
  EXPECT_TRUE(custom.run.no_overlap);
  EXPECT_EQ(custom.run.grad_dtype, "bf16");
  EXPECT_TRUE(custom.run.check);
  EXPECT_EQ(custom.run.check_steps, 2);
  EXPECT_DOUBLE_EQ(custom.run.min_time_seconds, 5);
  for (std::vector<const char*> changed :
       {std::vector<const char*>{"--phases", "dp"}, {"--bucket-mb", "10"}, {"--no-overlap"}, {"--grad-dtype", "bf16"},
        {"--check"}, {"--min-time", "1"}}) {
    std::vector<const char*> args{"run", "-w", "bert_base"};
    args.insert(args.end(), changed.begin(), changed.end());
    EXPECT_NE(parse(args).canonical, plain.canonical) << changed.front();
  }
  EXPECT_THROW(parse({"run", "-w", "bert_base", "--phases", "solo,warp"}), UsageError);
  EXPECT_THROW(parse({"run", "-w", "bert_base", "--grad-dtype", "fp8"}), UsageError);
  EXPECT_THROW(parse({"run", "-w", "bert_base", "--bucket-mb", "0"}), UsageError);
}

// nccl-tests' -d all and -o all: every collective type and every reduce op, in nccl-tests' op order; a single
// value is one of them, int32 averages included (NCCL sums integers, then divides).
TEST(CommandLine, BandwidthDtypeAndRedopAll) {
  CommandLine all = parse({"bandwidth", "-d", "all", "-o", "all"});
  EXPECT_EQ(all.bandwidth.dtypes, (std::vector<DType>{DType::kFloat32, DType::kBFloat16, DType::kFloat16,
                                                      DType::kFloat64, DType::kInt32}));
  EXPECT_EQ(all.bandwidth.reduces, (std::vector<ReduceOp>{ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax,
                                                          ReduceOp::kMin, ReduceOp::kAvg}));
  const std::pair<const char*, ReduceOp> single[] = {{"sum", ReduceOp::kSum}, {"prod", ReduceOp::kProd},
                                                     {"max", ReduceOp::kMax}, {"min", ReduceOp::kMin},
                                                     {"avg", ReduceOp::kAvg}};
  for (const auto& [name, op] : single) {
    EXPECT_EQ(parse({"bandwidth", "-d", "int32", "--redop", name}).bandwidth.reduces, std::vector<ReduceOp>{op})
        << name;
  }
  EXPECT_EQ(parse({"bandwidth", "--dtype", "half"}).bandwidth.dtypes, std::vector<DType>{DType::kFloat16});
  // The effective configuration tells -o all from the default, so ranks that disagree are caught.
  EXPECT_NE(parse({"bandwidth", "-o", "all"}).canonical, parse({"bandwidth"}).canonical);
  EXPECT_NE(parse({"bandwidth", "-d", "all"}).canonical, parse({"bandwidth"}).canonical);
}

TEST(CommandLine, BandwidthHelpShowsDtypeAndRedopChoicesAndDefaults) {
  const std::string help = parse({"bandwidth", "--help"}).help_text;
  EXPECT_NE(help.find("fp32, bf16, fp16, fp64, int32, or all"), std::string::npos) << help;
  EXPECT_NE(help.find("sum, prod, max, min, avg, or all"), std::string::npos) << help;
  EXPECT_NE(help.find("--dtype DTYPE=fp32"), std::string::npos) << help;
  EXPECT_NE(help.find("--redop OP=sum"), std::string::npos) << help;
}

TEST(CommandLine, HelpAndVersionAreNotErrors) {
  EXPECT_TRUE(parse({"--help"}).help_requested);
  CommandLine sub = parse({"bandwidth", "--help"});
  EXPECT_TRUE(sub.help_requested);
  EXPECT_NE(sub.help_text.find("--min-bytes"), std::string::npos);
  EXPECT_NE(parse({"--version"}).help_text.find("scalebench"), std::string::npos);
}

TEST(CommandLine, UsageErrorsNameTheProblem) {
  auto message_of = [](std::vector<const char*> args) {
    try {
      parse(args);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message_of({}).find("subcommand"), std::string::npos);
  EXPECT_NE(message_of({"bandwidth", "--bogus"}).find("--bogus"), std::string::npos);
  EXPECT_NE(message_of({"bandwidth", "--op", "gather"}).find("'gather'"), std::string::npos);
  EXPECT_NE(message_of({"bandwidth", "-d", "fp8"}).find("'fp8'"), std::string::npos);
  EXPECT_NE(message_of({"bandwidth", "-b", "2M", "-e", "1M"}).find("smaller than --min-bytes"),
            std::string::npos);
  EXPECT_NE(message_of({"bandwidth", "-b", "0"}).find("--min-bytes must be positive"), std::string::npos);
  EXPECT_NE(message_of({"bandwidth", "-o", "xor"}).find("--redop: unknown reduce op 'xor' (accepted: sum, prod, max, "
                                                     "min, avg, all)"),
            std::string::npos);
  EXPECT_NE(message_of({"bandwidth", "-d", "int8"}).find("--dtype: unknown dtype 'int8' (accepted: fp32, bf16, fp16, "
                                                       "fp64, int32, all)"),
            std::string::npos);
  EXPECT_NE(message_of({"bandwidth", "-d", "uint8"}).find("--dtype: unknown dtype 'uint8'"), std::string::npos);
  EXPECT_NE(message_of({"bandwidth", "-n", "0"}).find("iters"), std::string::npos);
  EXPECT_NE(message_of({"bandwidth", "-f", "1"}).find("factor"), std::string::npos);
  EXPECT_NE(message_of({"--device", "tpu", "bandwidth"}).find("tpu"), std::string::npos);
  EXPECT_NE(message_of({"--timeout", "-1", "bandwidth"}).find("timeout"), std::string::npos);
  for (auto args : {std::vector<const char*>{"bandwidth", "--bogus"}, std::vector<const char*>{}}) {
    EXPECT_EQ(message_of(args).find('\n'), std::string::npos) << "usage errors are one line";
  }
}

}  // namespace
}  // namespace sb
