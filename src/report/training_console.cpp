// Console printer of `scalebench run` (include/scalebench/report.h): `#` lines for context and summaries,
// plain rows for measurements, the units in a row of their own, as the bandwidth table does.
#include <cstdio>
#include <string>
#include <utility>

#include "scalebench/byte_text.h"
#include "scalebench/emulation.h"
#include "scalebench/report.h"
#include "scalebench/stats.h"
#include "src/report/sweep_console.h"

#ifndef SB_VERSION
#define SB_VERSION "unknown"
#endif

namespace sb {
namespace {

// --bucket-mb auto's line: "auto: 50 MiB; predicted tail after the backward pass by size: 1 MiB 0.93 ms (40
// buckets), …", or why the default size stood. Sizes below 1 MiB in KiB.
std::string describe_bucket_auto(const BucketAuto& choice) {
  auto mib = [](uint64_t bytes) {
    char text[32];
    if (bytes < (1u << 20)) {
      std::snprintf(text, sizeof text, "%g KiB", double(bytes) / 1024);
    } else {
      std::snprintf(text, sizeof text, "%g MiB", double(bytes) / double(1 << 20));
    }
    return std::string(text);
  };
  if (!choice.kept_default_because.empty()) {
    return "auto: kept " + mib(choice.chosen_bytes) + ", " + choice.kept_default_because;
  }
  std::string sizes;
  for (const BucketAuto::Candidate& c : choice.candidates) {
    char entry[96];
    std::snprintf(entry, sizeof entry, "%s%s %.2f ms (%zu bucket%s)", sizes.empty() ? "" : ", ", mib(c.bytes).c_str(),
                  c.predicted_tail_ms, c.buckets, c.buckets == 1 ? "" : "s");
    sizes += entry;
  }
  return "auto: " + mib(choice.chosen_bytes) + "; predicted tail after the backward pass by size: " + sizes;
}

std::string or_none(const std::string& text) { return text.empty() ? "none" : text; }

// "9 buckets: 8 x 25.0 MiB, 1 x 3.2 MiB" (runs of equal sizes, in issue order).
std::string describe_buckets(const std::vector<uint64_t>& sizes) {
  std::string text = std::to_string(sizes.size()) + (sizes.size() == 1 ? " bucket:" : " buckets:");
  for (size_t i = 0; i < sizes.size();) {
    size_t j = i;
    while (j < sizes.size() && mib_text(sizes[j]) == mib_text(sizes[i])) ++j;
    text += (i == 0 ? " " : ", ") + std::to_string(j - i) + " x " + mib_text(sizes[i]);
    i = j;
  }
  return text;
}

// How a tied table's gradient crossed the wire (--embedding-grad).
std::string describe_embedding_grad(const TrainingReport::EmbeddingGrad& e, EmbeddingGradMode mode) {
  const std::string tables = e.tables == 1 ? "the table's" : std::to_string(e.tables) + " tables'";
  const std::string asked = std::string("--embedding-grad ") + embedding_grad_mode_name(mode);
  if (!e.sparse) {
    return tables + " whole gradient in the buckets, reduced after its last node (" + asked +
           (e.dense_because.empty() ? std::string(")") : std::string(": dense, as ") + e.dense_because + ")");
  }
  return tables + " dense part reduced as soon as it is written; the lookups' rows apart, " + std::to_string(e.rows) +
         " of " + std::to_string(e.table_rows) + " rows at most per reduction, after the backward pass (" + asked + ")";
}

// What --grad-registration achieved on the buffers the gradient all-reduces use.
std::string describe_grad_registration(const TrainingReport& report) {
  const BufferRegistration asked = report.options.grad_registration, granted = report.grad_registration.granted;
  const std::string option = std::string("--grad-registration ") + buffer_registration_name(asked);
  const std::string what = report.options.grad_dtype == DType::kBFloat16 ? "the bf16 wire buffers"
                                                                          : "the gradient region";
  if (granted == BufferRegistration::kNone) {
    return option + " does not apply: " + report.grad_registration.why_less;
  }
  const std::string how = granted == BufferRegistration::kSymmetric
                              ? "an NCCL symmetric window (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC)"
                              : "NCCL local registration (ncclCommRegister)";
  return "gradient buffers: " + what + " in " + how + " on every communicator that reduces it (" + option +
         (granted == asked ? std::string(")") : std::string(": ") + report.grad_registration.why_less + ")");
}

void print_phase_row(std::FILE* out, const char* name, const PhaseSummary& s, const TrainingReport& report) {
  std::fprintf(out, "  %-5s %9.2f %9.2f %9.2f %14.1f %14.1f %9.1f %6s\n", name, s.step_ms_p50, s.step_ms_p95,
               s.step_ms_max, s.units_per_s_per_gpu, s.units_per_s_total, s.tflops_per_gpu,
               report.peak_tflops > 0 ? (std::to_string(static_cast<int>(s.mfu * 100 + 0.5)) + "%").c_str() : "-");
}

void print_solo_ranks(std::FILE* out, const TrainingReport& report) {
  std::fprintf(out, "# solo, rank by rank (every rank trains alone)\n");
  std::fprintf(out, "# %4s %-12s %-16s %9s %9s %14s %10s %10s\n", "rank", "host", "device", "p50", "p95",
               (report.unit + "/s").c_str(), "loss first", "loss last");
  std::fprintf(out, "# %4s %-12s %-16s %9s %9s %14s %10s %10s\n", "", "", "", "(ms)", "(ms)", "", "", "");
  for (size_t r = 0; r < report.solo.ranks.size(); ++r) {
    const RankPhase& rank = report.solo.ranks[r];
    const SampleStats stats = summarize(rank.step_ms);
    const TrainingReport::Rank* where = r < report.devices.size() ? &report.devices[r] : nullptr;
    std::fprintf(out, "  %4zu %-12.12s %-16.16s %9.2f %9.2f %14.1f %10.4f %10.4f\n", r,
                 where ? where->host.c_str() : "?", where ? where->device_name.c_str() : "?", stats.p50, stats.p95,
                 stats.p50 > 0 ? report.rank_units_per_step(r) / (stats.p50 / 1e3) : 0.0, rank.loss_first,
                 rank.loss_last);
  }
}

constexpr size_t kSlowestNodesShown = 5;

// Rank 0's profiled step: where the step time goes, by op category, then its slowest nodes.
void print_breakdown(std::FILE* out, const TrainingReport& report) {
  if (report.breakdown_ms.empty()) return;
  double total = 0;
  for (const auto& entry : report.breakdown_ms) total += entry.second;
  std::fprintf(out, "# where the time goes (rank 0, one solo step timed node by node, %.2f ms):", total);
  for (const auto& [category, ms] : report.breakdown_ms) {
    std::fprintf(out, " %s %.2f ms (%.0f%%)", category.c_str(), ms, 100.0 * ms / total);
  }
  std::fprintf(out, "\n");
  // The few nodes that take the most, each on its line (the JSON keeps more of them).
  for (size_t i = 0; i < report.slowest_nodes.size() && i < kSlowestNodesShown; ++i) {
    const TrainingReport::SlowNode& n = report.slowest_nodes[i];
    std::fprintf(out, "#   %8.2f ms  node %lld %s -> %s %s%s%s\n", n.ms, static_cast<long long>(n.index), n.op.c_str(),
                 n.output.c_str(), n.shape.c_str(), n.detail.empty() ? "" : ", ", n.detail.c_str());
  }
  if (report.op_host_ms.empty()) return;
  // The host's enqueue time beside the device time: a host slower than the GPU leaves the GPU idle.
  const bool host_bound = report.profiled_host_ms > 0.9 * total;
  std::fprintf(out, "# host: enqueueing that step's nodes took %.2f ms of CPU time%s; most by op:",
               report.profiled_host_ms, host_bound ? " (near the device time or more: the GPU waits for it)" : "");
  for (size_t i = 0; i < report.op_host_ms.size() && i < 4; ++i) {
    std::fprintf(out, " %s %.2f ms", report.op_host_ms[i].first.c_str(), report.op_host_ms[i].second);
  }
  std::fprintf(out, "\n");
}

}  // namespace

std::string reproducer_command(const TrainingReport& report) {
  std::string command = report.nranks > 1 ? "mpirun -np " + std::to_string(report.nranks) : "";
  for (const std::string& arg : report.argv) {
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:+@%") ==
                                           std::string::npos;
    std::string quoted = plain ? arg : "'";
    if (!plain) {
      for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      quoted += "'";
    }
    command += (command.empty() ? "" : " ") + quoted;
  }
  return command;
}

void print_training_header(std::FILE* out, const TrainingReport& report) {
  const TrainOptions& o = report.options;
  std::fprintf(out, "# scalebench %s run: %s (%s), scale %s\n", SB_VERSION, o.workload.c_str(), report.task.c_str(),
               o.scale == WorkloadScale::kTiny ? "tiny" : "full");
  std::fprintf(out, "# %s%s, %s\n", precision_description(o.precision), o.recompute ? ", GELU recomputed" : "",
               describe_optimizer(o.optimizer).c_str());
  std::fprintf(out, "# ranks: %d   backend: %s (%s)   mpi: %s   cuda runtime: %s   driver: %s   cublasLt: %s\n",
               report.nranks, report.backend.c_str(), or_none(report.communicator_version).c_str(),
               or_none(report.mpi_version).c_str(), or_none(report.cuda_runtime_version).c_str(),
               or_none(report.cuda_driver_version).c_str(), or_none(report.cublas_version).c_str());
  if (report.emulate != "none") {
    std::fprintf(out, "# EMULATED: %s; the transport printed with each phase is what NCCL used, not this "
                      "machine's fabric\n",
                 emulation_label(parse_emulation(report.emulate)).c_str());
  }
  for (size_t r = 0; r < report.devices.size(); ++r) {
    const TrainingReport::Rank& d = report.devices[r];
    std::fprintf(out, "#  rank %2zu on %-12s device %2d [%s] %s\n", r, d.host.c_str(), d.device_index,
                 d.bus_id.empty() ? report.device_kind.c_str() : d.bus_id.c_str(), d.device_name.c_str());
  }
  // The batch in its own unit (sentence pairs for translation), which need not be the throughput's (tokens).
  const WorkloadInfo& info = find_workload(o.workload).info();
  const std::string batch_unit = info.batch_unit_name();
  std::fprintf(out, "# batch %lld %s per rank; %d warm-up + %d timed steps per phase%s; seed %llu\n",
               static_cast<long long>(report.batch), batch_unit.c_str(), o.warmup_steps, o.steps,
               o.min_time_seconds > 0 ? (" (or at least " + std::to_string(o.min_time_seconds) + " s)").c_str() : "",
               static_cast<unsigned long long>(o.seed));
  std::fprintf(out, "# step = forward + backward + optimizer, device time between events on the compute stream\n");
  print_sweep_plan(out, report);
}

void print_training_phase(std::FILE* out, const TrainingReport& report, const std::string& phase) {
  if (is_sweep_phase(phase)) {
    print_sweep_phase(out, report, phase);
    return;
  }
  const bool first_table = phase == "solo" || (!report.solo.ran && phase == "comm") ||
                           (!report.solo.ran && !report.comm.ran && phase == "dp");
  if (phase == "solo") {
    std::fprintf(out, "# %lld parameters, %.1f %s and %.2f TFLOP per step and rank, plan %s\n",
                 static_cast<long long>(report.parameters), report.units_per_step, report.unit.c_str(),
                 report.train_flops_per_step / 1e12, gib_text(report.plan_bytes).c_str());
    if (report.solo_own_replica) {
      std::fprintf(out, "# solo phase on a replica of its own with the gradient region whole, as ddp's (the dp phases' "
                        "replica holds the gradients in blocks and a shard)\n");
    }
    if (!report.sub_steps.empty()) {
      std::string names;
      for (const std::string& name : report.sub_steps) names += (names.empty() ? "" : ", ") + name;
      std::fprintf(out, "# a step is %zu sub-steps (%s), each forward + backward + its own optimizer step (in dp its "
                        "own all-reduces); the units and FLOPs above are the whole step's\n",
                   report.sub_steps.size(), names.c_str());
    }
    print_solo_ranks(out, report);
    print_breakdown(out, report);
  }
  if (phase == "comm" || (phase == "dp" && !report.comm.ran)) {
    std::vector<uint64_t> buckets;  // the gradient buckets alone: a tied table's row exchange is described below
    for (size_t b = 0; b < report.bucket_bytes.size(); ++b) {
      if (b >= report.reduction_kinds.size() || report.reduction_kinds[b] == "bucket") {
        buckets.push_back(report.bucket_bytes[b]);
      }
    }
    std::fprintf(out, "# gradients: %s, %s on the wire, %s\n", describe_buckets(buckets).c_str(),
                 report.options.grad_dtype == DType::kBFloat16 ? "bf16" : "fp32",
                 report.options.overlap
                     ? (report.buckets_reduce_scattered
                            ? "each reduce-scatter issued when its last gradient is written (overlap)"
                            : "each all-reduce issued when its last gradient is written (overlap)")
                     : (report.buckets_reduce_scattered ? "reduce-scatters issued after the backward pass (--no-overlap)"
                                                        : "all-reduces issued after the backward pass (--no-overlap)"));
  }
  if ((phase == "comm" || (phase == "dp" && !report.comm.ran)) && report.options.overlap_ctas > 0) {
    if (report.overlap_ctas_not_applied.empty()) {
      std::fprintf(out,
                   "# all-reduces issued during the backward pass: at most %d CTAs each (a second NCCL communicator, "
                   "--overlap-ctas); after its last node: NCCL's choice\n",
                   report.options.overlap_ctas);
    } else {
      std::fprintf(out, "# %s\n", report.overlap_ctas_not_applied.c_str());
    }
  }
  if ((phase == "comm" || (phase == "dp" && !report.comm.ran)) && shards_optimizer(report.options.strategy)) {
    std::fprintf(out,
                 "# strategy %s: %seach rank's optimizer updates %s of the %s parameters and keeps %s of state "
                 "for them; %s\n",
                 strategy_name(report.options.strategy),
                 report.buckets_reduce_scattered ? "the gradient buckets are reduce-scattered; " : "",
                 grouped_text(report.parameters_updated_per_rank).c_str(), grouped_text(report.parameters).c_str(),
                 byte_text(report.optimizer_state_bytes_per_rank).c_str(),
                 gathers_before_use(report.options.strategy)
                     ? "each bucket's parameters are all-gathered before the forward pass reads them and again "
                       "before the backward pass (one bucket ahead), not after the update"
                     : "the updated shards are all-gathered after every update");
  }
  if ((phase == "comm" || (phase == "dp" && !report.comm.ran)) &&
      report.options.grad_registration != BufferRegistration::kNone) {
    std::fprintf(out, "# %s\n", describe_grad_registration(report).c_str());
  }
  if ((phase == "comm" || (phase == "dp" && !report.comm.ran)) && report.embedding_grad.tables > 0) {
    std::fprintf(out, "# tied embedding: %s\n",
                 describe_embedding_grad(report.embedding_grad, report.options.embedding_grad).c_str());
  }
  if ((phase == "comm" || (phase == "dp" && !report.comm.ran)) && report.bucket_auto) {
    std::fprintf(out, "# bucket size %s\n", describe_bucket_auto(*report.bucket_auto).c_str());
  }
  if (phase == "comm") {
    const CommSummary comm = summarize_comm(report, report.comm);
    std::fprintf(out, "# comm: the step's buckets %s back to back%s, no compute: %.2f ms per step (p50, "
                      "slowest rank), busbw %.1f GB/s\n",
                 report.buckets_reduce_scattered ? "reduce-scattered" : "all-reduced",
                 report.all_gather_bytes > 0 ? ", then the shards all-gathered" : "", comm.step_ms_p50,
                 comm.busbw_gbps);
    return;
  }
  if (phase == "check") {
    const CheckRecord& c = report.check;
    const std::string linear = c.linear_batchnorm_activations > 0
                                   ? ", " + std::to_string(c.linear_batchnorm_activations) + " BatchNorm activations linear"
                                   : "";
    std::fprintf(out, "# check (%d SGD steps, no dropout%s): %d ranks x batch %lld vs 1 rank x batch %lld: relative "
                      "update difference %.3g (tolerance %.3g), max |dp| %.3g, ranks' weights %s: %s\n",
                 c.steps, linear.c_str(), report.nranks, static_cast<long long>(report.batch),
                 static_cast<long long>(report.batch * report.nranks), c.relative_error, c.tolerance,
                 c.max_abs_difference, c.ranks_identical ? "identical" : "DIFFERENT", c.passed ? "passed" : "FAILED");
    if (c.generated_words > 0) {
      std::fprintf(out, "# check: the reference followed the ranks' %lld generated words; %lld argmax ties flipped, "
                        "widest logit gap %.3g of the row's largest |logit| (tolerance %.3g)\n",
                   static_cast<long long>(c.generated_words), static_cast<long long>(c.generation_flips),
                   c.generation_worst_margin, c.tolerance);
    }
    return;
  }
  if (phase != "solo" && phase != "dp") return;
  if (first_table || phase == "dp") {
    std::fprintf(out, "# %-5s %9s %9s %9s %14s %14s %9s %6s\n", "phase", "step p50", "p95", "max",
                 (report.unit + "/s/GPU").c_str(), (report.unit + "/s total").c_str(), "TFLOP/s", "MFU");
    std::fprintf(out, "# %-5s %9s %9s %9s %14s %14s %9s %6s\n", "", "(ms)", "(ms)", "(ms)", "", "", "per GPU", "");
  }
  if (phase == "solo") {
    print_phase_row(out, "solo", summarize_phase(report, report.solo, false), report);
  } else {
    if (report.solo.ran) print_phase_row(out, "solo", summarize_phase(report, report.solo, false), report);
    print_phase_row(out, "dp", summarize_phase(report, report.dp, true), report);
  }
}

// 1 − E in points of E, each term measured (efficiency_decomposition.h), and the residual said out loud when the
// three do not add up.
void print_decomposition(std::FILE* out, const EfficiencyDecomposition& d) {
  if (!d.measured) {
    std::fprintf(out, "# 1 - E not decomposed: %s\n", d.not_measured.c_str());
    return;
  }
  std::fprintf(out, "# 1 - E = %.1f points = dilation %.1f (%.3f ms) + tail %.1f (%.3f ms) + skew %.1f (%.3f ms) "
                    "+ residual %.1f (of the %.3f ms dp step; per step its slowest rank, medians)\n",
               100 * d.loss, 100 * d.dilation, d.ms.dilation_ms, 100 * d.tail, d.ms.tail_ms, 100 * d.skew,
               d.ms.skew_ms, 100 * d.residual, d.dp_step_ms);
  if (!d.adds_up) {
    std::fprintf(out, "# the three terms do NOT add up to 1 - E: residual %.1f points, beyond %.1f (the forward pass, "
                      "the step's edges or noise differ between the solo and dp phases)\n",
                 100 * d.residual, 100 * kDecompositionTolerance);
  }
}

void print_training_footer(std::FILE* out, const TrainingReport& report) {
  if (report.dp.ran) {
    const ScalingSummary s = summarize_scaling(report);
    const PhaseSummary solo = summarize_phase(report, report.solo, false);
    if (report.solo.ran) {
      std::fprintf(out, "# scaling efficiency E(%d) = X(%d) / (%d x X(1)) = %.1f%% (X(1): the median solo GPU); "
                        "exposed communication %.2f ms per step\n",
                   report.nranks, report.nranks, report.nranks, 100 * s.efficiency, s.exposed_comm_ms);
      print_decomposition(out, summarize_decomposition(report));
      if (report.dp_only_nodes > 0) {
        std::fprintf(out, "# the dilation term includes %lld nodes the dp step runs and the solo step does not: the "
                          "casts of zero3's backward parameter copies\n",
                     static_cast<long long>(report.dp_only_nodes));
      }
      std::fprintf(out, "# slowest solo rank: %d (%.2f ms p50)\n", solo.slowest_rank, solo.slowest_rank_step_ms);
    }
    if (report.comm.ran && report.solo.ran) {
      std::fprintf(out, "# overlap %.0f%% of the comm phase's time hidden; perfect overlap would give E = "
                        "min(1, solo / comm) = %.1f%%\n", s.overlap_pct, 100 * s.efficiency_bound);
    }
    const DpTimeline timeline = summarize_dp_timeline(report);
    if (!timeline.end_ms.empty()) {
      std::fprintf(out, "# dp step on rank 0 (p50, from its first node): backward done at %.2f ms, last %s done "
                        "at %.2f ms (%.2f ms after the backward), first bucket ready at %.2f ms\n",
                   timeline.nodes_done_ms, report.buckets_reduce_scattered ? "reduction" : "all-reduce", timeline.last_reduce_end_ms, timeline.tail_ms, timeline.ready_ms.front());
      if (report.bucket_auto && report.bucket_auto->kept_default_because.empty()) {
        // The choice checked against what ran: the model leaves out NCCL's slowing of the backward pass.
        for (const BucketAuto::Candidate& c : report.bucket_auto->candidates) {
          if (c.bytes != report.bucket_auto->chosen_bytes) continue;
          std::fprintf(out, "# bucket size auto: predicted %.2f ms after the backward, measured %.2f ms\n",
                       c.predicted_tail_ms, timeline.tail_ms);
        }
      }
    }
    std::fprintf(out, "# busbw of the %s in training: %.1f GB/s",
                 report.buckets_reduce_scattered ? "reductions (buckets reduce-scattered)" : "all-reduces",
                 s.in_training_busbw_gbps);
    if (report.comm.ran) std::fprintf(out, " (comm phase alone: %.1f GB/s)", summarize_comm(report, report.comm).busbw_gbps);
    std::fprintf(out, "; transport %s\n", or_none(report.transport).c_str());
    if (report.all_gather_bytes > 0) {
      const AllGatherSummary gather = summarize_all_gather(report);
      const bool before_use = gathers_before_use(report.options.strategy);
      std::fprintf(out,
                   "# all-gathers of the %s (%s): %.2f ms per step on the communication stream, %d "
                   "moving %s, busbw %.1f GB/s",
                   before_use ? "parameters before use" : "updated shards", strategy_name(report.options.strategy),
                   gather.ms_per_step, report.all_gathers_per_step, byte_text(report.all_gather_bytes).c_str(),
                   gather.busbw_gbps);
      if (report.comm.ran) {
        std::fprintf(out, " (comm phase alone: %.2f ms, %.1f GB/s)", gather.comm_ms_per_step, gather.comm_busbw_gbps);
      }
      std::fprintf(out, "; exposed %s: %.2f ms per step\n",
                   before_use ? "(the compute stream waiting for them)" : "after the last update",
                   gather.exposed_ms_per_step);
    }
    if (report.dp_plan_bytes > 0) {
      std::fprintf(out, "# memory per GPU in the dp phases: planned %s (the plan and the optimizer's state of %s",
                   byte_text(report.dp_plan_bytes).c_str(),
                   shards_optimizer(report.options.strategy) ? "one shard" : "every parameter");
      if (report.dp_gradient_shard_bytes > 0) {
        std::fprintf(out, "; the gradients: this rank's shard %s, each bucket whole only in its block until its "
                          "reduce-scatter", byte_text(report.dp_gradient_shard_bytes).c_str());
      } else if (shards_by_bucket(report.options.strategy)) {
        std::fprintf(out, "; the gradient region whole: in blocks with a shard it would need more at this batch");
      }
      if (report.dp_parameter_shard_bytes > 0) {
        std::fprintf(out, "; the parameters: this rank's shard %s, each unit whole only in its blocks around its "
                          "readers", byte_text(report.dp_parameter_shard_bytes).c_str());
      } else if (gathers_before_use(report.options.strategy)) {
        std::fprintf(out, "; the parameter region whole: in blocks with a shard it would need more at this batch");
      }
      std::fprintf(out, ")");
      if (report.dp_device_used_bytes) {
        std::fprintf(out, "; in use on the device after the phase %s (measured, the largest rank: the context, NCCL "
                          "and the libraries included)",
                     byte_text(*report.dp_device_used_bytes).c_str());
      }
      std::fprintf(out, "\n");
    }
    std::fprintf(out, "# weights identical on every rank: at start %s, after dp %s\n",
                 report.weights_identical_at_start ? "yes" : "no", report.weights_identical_after_dp ? "yes" : "NO");
  } else if (report.nranks == 1 && (report.options.comm || report.options.dp)) {
    std::fprintf(out, "# one rank: no comm or dp phase (start more ranks, e.g. mpirun -np 2, to measure scaling)\n");
  }
  // How each step was issued, and whether the host kept up: the device's step time is the GPU's only if not.
  for (const auto& [name, record] : {std::pair<const char*, const PhaseRecord*>{"solo", &report.solo},
                                     std::pair<const char*, const PhaseRecord*>{"dp", &report.dp}}) {
    if (!record->ran || record->cuda_graph.empty()) continue;
    const PhaseSummary phase = summarize_phase(report, *record, std::string(name) == "dp");
    // On the CPU device issuing a step is running it: host-bound by definition, nothing to warn about.
    const bool warn = phase.host_bound && report.device_kind != "cpu";
    std::fprintf(out, "# %s: cuda graph %s; the host issued a step in %.3f ms (p50) of the device's %.2f ms%s\n", name,
                 record->cuda_graph.c_str(), phase.host_ms_p50, phase.step_ms_p50,
                 warn ? " -- HOST-BOUND: the GPU waited for the CPU, so this step time is partly the host's" : "");
  }
  print_sweep_curve(out, report);
  if (report.loss_scaled) {
    std::fprintf(out, "# fp16 loss scaling: final scale %g, %lld steps skipped for inf/NaN gradients\n",
                 static_cast<double>(report.loss_scale), static_cast<long long>(report.skipped_steps));
  }
  std::fprintf(out, "# status: %s%s%s\n", report.status.c_str(), report.error.empty() ? "" : ": ",
               report.error.c_str());
  std::fprintf(out, "# reproduce: %s\n", reproducer_command(report).c_str());
}

}  // namespace sb
