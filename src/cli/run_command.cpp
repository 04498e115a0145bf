// `scalebench run --workload NAME`: every rank trains the workload alone on its device (the "solo" phase:
// per-GPU throughput, stragglers visible); rank 0 prints one row per rank. Failures are gathered, not thrown
// one rank at a time, so an out-of-memory on one GPU ends every rank cleanly with its message.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "scalebench/optimizer.h"
#include "scalebench/precision.h"
#include "scalebench/report.h"
#include "scalebench/single_rank.h"
#include "scalebench/stats.h"
#include "src/cli/commands.h"
#include "src/cli/session.h"

namespace sb {

namespace {

// Rank 0's profiled step, one line: where the step time goes, by op category.
void print_breakdown(const std::vector<nlohmann::json>& ranks) {
  const nlohmann::json& first = ranks.front();
  if (first["status"] != "ok" || first["breakdown_ms"].empty()) return;
  double total = 0;
  for (const auto& entry : first["breakdown_ms"]) total += entry["ms"].get<double>();
  std::printf("# where the time goes (rank 0, one step timed node by node, %.2f ms):", total);
  for (const auto& entry : first["breakdown_ms"]) {
    const double ms = entry["ms"].get<double>();
    std::printf(" %s %.2f ms (%.0f%%)", entry["category"].get<std::string>().c_str(), ms, 100.0 * ms / total);
  }
  std::printf("\n");
}

// Settings as the decimals they were given as (0.98, not fp32's 0.9800000190734863).
nlohmann::json optimizer_json(const OptimizerSettings& s) {
  auto decimal = [](float value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.7g", value);
    return std::strtod(text, nullptr);
  };
  return {{"kind", optimizer_name(s.kind)}, {"learning_rate", decimal(s.learning_rate)},
          {"beta1", decimal(s.beta1)}, {"beta2", decimal(s.beta2)}, {"epsilon", decimal(s.epsilon)},
          {"weight_decay", decimal(s.weight_decay)}, {"momentum", decimal(s.momentum)},
          {"max_grad_norm", decimal(s.max_grad_norm)}};
}

}  // namespace

int run_train_command(const CommandLine& cl, ProcessGroup& group) {
  Session session = open_session(group, cl.common);
  SingleRankOptions options;
  options.workload = cl.run.workload;
  options.batch = cl.run.batch;
  options.scale = parse_workload_scale(cl.run.scale);
  options.warmup_steps = cl.run.warmup_steps;
  options.steps = cl.run.steps;
  options.seed = cl.run.seed + static_cast<uint64_t>(group.rank());
  options.recompute = cl.run.recompute;
  find_workload(options.workload);  // a bad name is the same usage error on every rank (before its reference)
  options.optimizer = cl.run.optimizer == "reference" ? reference_optimizer(cl.run.workload)
                                                      : default_optimizer(parse_optimizer_kind(cl.run.optimizer));
  if (cl.run.learning_rate > 0) options.optimizer.learning_rate = static_cast<float>(cl.run.learning_rate);
  if (cl.run.clip_norm >= 0) options.optimizer.max_grad_norm = static_cast<float>(cl.run.clip_norm);
  const bool on_cuda = session.device->kind() == DeviceKind::kCuda;
  options.precision = cl.run.precision == "auto" ? (on_cuda ? Precision::kBf16 : Precision::kFp32)
                                                 : parse_precision(cl.run.precision);
  validate_optimizer(options.optimizer);

  nlohmann::json mine;
  if (precision_needs_cuda(options.precision) && !on_cuda) {  // same answer on every rank
    throw UsageError(std::string("--precision ") + precision_name(options.precision) +
                     " needs the cuda device (the cpu device is the fp32 reference)");
  }
  try {
    const SingleRankResult r = train_single_rank(options, *session.device);
    const SampleStats ms = summarize(r.step_ms);
    mine = {{"rank", group.rank()}, {"host", group.host()}, {"device", session.device->description().name},
            {"status", "ok"}, {"batch", r.batch}, {"parameters", r.parameters},
            {"units_per_step", r.units_per_step}, {"step_ms_p50", ms.p50}, {"step_ms_p99", ms.p99},
            {"step_ms_min", ms.min}, {"units_per_second", r.units_per_step / (ms.p50 / 1e3)},
            {"tflops", r.train_flops_per_step / (ms.p50 / 1e3) / 1e12}, {"plan_bytes", r.plan_bytes},
            {"loss_first", r.losses.front()}, {"loss_last", r.losses.back()}, {"step_ms", r.step_ms}};
    nlohmann::json breakdown = nlohmann::json::array();
    for (const auto& [category, ms] : r.breakdown_ms) breakdown.push_back({{"category", category}, {"ms", ms}});
    mine["breakdown_ms"] = breakdown;
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& [op, ms] : r.op_ms) ops.push_back({{"op", op}, {"ms", ms}});
    mine["op_ms"] = ops;
  } catch (const RuntimeFailure& e) {
    mine = {{"rank", group.rank()}, {"host", group.host()}, {"status", "failed"}, {"error", e.what()}};
  }
  std::vector<nlohmann::json> ranks;
  for (const std::string& text : group.allgather_strings(mine.dump())) ranks.push_back(nlohmann::json::parse(text));

  std::string first_error;
  for (const auto& r : ranks) {
    if (r["status"] != "ok" && first_error.empty()) first_error = r["error"].get<std::string>();
  }
  if (group.rank() == 0) {
    const WorkloadInfo& info = find_workload(options.workload).info();
    std::printf("# scalebench run: %s (%s), scale %s, %d warm-up + %d timed steps, %s%s, %s\n",
                info.name.c_str(), info.task.c_str(), cl.run.scale.c_str(), options.warmup_steps, options.steps,
                precision_description(options.precision), options.recompute ? ", GELU recomputed" : "",
                describe_optimizer(options.optimizer).c_str());
    std::printf("# every rank trains alone; step = forward + backward + optimizer, timed on the device between marks\n");
    std::printf("# %4s %-12s %-14s %6s %10s %10s %14s %9s %10s %10s\n", "rank", "host", "device", "batch", "step p50",
                "step p99", info.unit.c_str(), "TFLOP/s", "loss first", "loss last");
    std::printf("# %4s %-12s %-14s %6s %10s %10s %14s %9s %10s %10s\n", "", "", "", "", "(ms)", "(ms)", "(per s)", "", "",
                "");
    for (const auto& r : ranks) {
      if (r["status"] != "ok") {
        std::printf("  %4d %-12s failed: %s\n", r["rank"].get<int>(), r["host"].get<std::string>().c_str(),
                    r["error"].get<std::string>().c_str());
        continue;
      }
      std::printf("  %4d %-12s %-14.14s %6lld %10.2f %10.2f %14.1f %9.2f %10.4f %10.4f\n", r["rank"].get<int>(),
                  r["host"].get<std::string>().c_str(), r["device"].get<std::string>().c_str(),
                  static_cast<long long>(r["batch"].get<int64_t>()), r["step_ms_p50"].get<double>(),
                  r["step_ms_p99"].get<double>(), r["units_per_second"].get<double>(), r["tflops"].get<double>(),
                  r["loss_first"].get<double>(), r["loss_last"].get<double>());
    }
    print_breakdown(ranks);
    if (!cl.common.json_path.empty()) {
      nlohmann::json doc = {{"schema_version", 1}, {"tool", "scalebench"}, {"command", "run"},
                            {"status", first_error.empty() ? "ok" : "failed"}, {"workload", info.name},
                            {"scale", cl.run.scale}, {"precision", precision_name(options.precision)},
                            {"recompute", options.recompute}, {"optimizer", optimizer_json(options.optimizer)},
                            {"argv", cl.argv}, {"ranks", ranks}};
      write_text_file(cl.common.json_path, doc.dump(2) + "\n");
    }
  }
  if (!first_error.empty()) throw RuntimeFailure(first_error);
  return kExitOk;
}

}  // namespace sb
