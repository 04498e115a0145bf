// The derived numbers of a training report (include/scalebench/training.h), computed here only, so the
// console, JSON and CSV printers cannot disagree.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "scalebench/bandwidth.h"
#include "scalebench/plan_database.h"
#include "scalebench/stats.h"
#include "scalebench/training.h"
#include "src/train/efficiency_decomposition.h"

namespace sb {
namespace {

double median(std::vector<double> values) { return values.empty() ? 0.0 : percentile(std::move(values), 50); }

// Per step, the slowest rank's value: a synchronous step ends when its last rank does.
std::vector<double> max_over_ranks(const std::vector<std::vector<double>>& by_rank) {
  std::vector<double> steps;
  for (const auto& rank : by_rank) {
    if (steps.size() < rank.size()) steps.resize(rank.size(), 0.0);
    for (size_t i = 0; i < rank.size(); ++i) steps[i] = std::max(steps[i], rank[i]);
  }
  return steps;
}

// Σ bytes · 2(N-1)/N over Σ duration (a reduce-scatter's bytes · (N-1)/N), each bucket's duration the median over
// steps of its slowest rank.
double bucket_busbw_gbps(const TrainingReport& report, const PhaseRecord& phase) {
  if (!phase.ran || phase.ranks.empty() || report.bucket_bytes.empty()) return 0;
  double seconds = 0, bus_bytes = 0;
  for (size_t b = 0; b < report.bucket_bytes.size(); ++b) {
    const bool scattered = report.buckets_reduce_scattered &&
                           (b >= report.reduction_kinds.size() || report.reduction_kinds[b] == "bucket");
    const double factor =
        bus_bandwidth_factor(scattered ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, report.nranks);
    std::vector<double> per_step;
    const size_t steps = phase.ranks.front().bucket_ms.size();
    for (size_t s = 0; s < steps; ++s) {
      double slowest = 0;
      for (const RankPhase& rank : phase.ranks) {
        if (s < rank.bucket_ms.size() && b < rank.bucket_ms[s].size()) slowest = std::max(slowest, rank.bucket_ms[s][b]);
      }
      per_step.push_back(slowest);
    }
    seconds += median(per_step) / 1e3;
    bus_bytes += static_cast<double>(report.bucket_bytes[b]) * factor;
  }
  return seconds > 0 ? bus_bytes / seconds / 1e9 : 0.0;
}

}  // namespace

PhaseSummary summarize_phase(const TrainingReport& report, const PhaseRecord& phase, bool max_over_ranks_per_step) {
  PhaseSummary summary;
  if (!phase.ran || phase.ranks.empty()) return summary;
  std::vector<double> p50s;
  for (size_t r = 0; r < phase.ranks.size(); ++r) {
    const double p50 = median(phase.ranks[r].step_ms);
    p50s.push_back(p50);
    if (p50 > summary.slowest_rank_step_ms) {
      summary.slowest_rank_step_ms = p50;
      summary.slowest_rank = static_cast<int>(r);
    }
  }
  if (max_over_ranks_per_step) {
    std::vector<std::vector<double>> by_rank;
    for (const RankPhase& rank : phase.ranks) by_rank.push_back(rank.step_ms);
    const SampleStats stats = summarize(max_over_ranks(by_rank));
    summary.step_ms_p50 = stats.p50;
    summary.step_ms_p95 = stats.p95;
    summary.step_ms_max = stats.max;
  } else {  // independent ranks: the median GPU
    std::vector<double> p95s, maxima;
    for (const RankPhase& rank : phase.ranks) {
      const SampleStats stats = summarize(rank.step_ms);
      p95s.push_back(stats.p95);
      maxima.push_back(stats.max);
    }
    summary.step_ms_p50 = median(p50s);
    summary.step_ms_p95 = median(p95s);
    summary.step_ms_max = *std::max_element(maxima.begin(), maxima.end());
  }
  for (const RankPhase& rank : phase.ranks) {
    if (!rank.host_ms.empty()) summary.host_ms_p50 = std::max(summary.host_ms_p50, median(rank.host_ms));
  }
  if (summary.step_ms_p50 <= 0) return summary;
  summary.host_bound = summary.host_ms_p50 >= kHostBoundShare * summary.step_ms_p50;
  summary.units_per_s_per_gpu = report.units_per_step / (summary.step_ms_p50 / 1e3);
  if (max_over_ranks_per_step) {  // one step for all: every rank's units in the slowest rank's time
    summary.units_per_s_total = summary.units_per_s_per_gpu * report.nranks;
  } else {  // independent ranks: each its own units in its own time
    for (size_t r = 0; r < p50s.size(); ++r) {
      summary.units_per_s_total += p50s[r] > 0 ? report.rank_units_per_step(r) / (p50s[r] / 1e3) : 0.0;
    }
  }
  summary.tflops_per_gpu = report.train_flops_per_step / (summary.step_ms_p50 / 1e3) / 1e12;
  summary.mfu = report.peak_tflops > 0 ? summary.tflops_per_gpu / report.peak_tflops : 0.0;
  return summary;
}

CommSummary summarize_comm(const TrainingReport& report, const PhaseRecord& phase) {
  CommSummary summary;
  if (!phase.ran) return summary;
  std::vector<std::vector<double>> by_rank;
  for (const RankPhase& rank : phase.ranks) by_rank.push_back(rank.step_ms);
  summary.step_ms_p50 = median(max_over_ranks(by_rank));
  summary.busbw_gbps = bucket_busbw_gbps(report, phase);
  return summary;
}

AllGatherSummary summarize_all_gather(const TrainingReport& report) {
  AllGatherSummary summary;
  if (report.all_gather_bytes == 0) return summary;
  const double bus_bytes =
      static_cast<double>(report.all_gather_bytes) * bus_bandwidth_factor(CollectiveOp::kAllGather, report.nranks);
  auto slowest_median = [](const PhaseRecord& phase, auto series) {
    std::vector<std::vector<double>> by_rank;
    for (const RankPhase& rank : phase.ranks) by_rank.push_back(series(rank));
    const std::vector<double> slowest = max_over_ranks(by_rank);
    return slowest.empty() ? 0.0 : median(slowest);
  };
  auto busbw = [bus_bytes](double ms) { return ms > 0 ? bus_bytes / (ms / 1e3) / 1e9 : 0.0; };
  if (report.dp.ran) {
    summary.ms_per_step = slowest_median(report.dp, [](const RankPhase& r) { return r.all_gather_ms; });
    summary.busbw_gbps = busbw(summary.ms_per_step);
    summary.exposed_ms_per_step = slowest_median(report.dp, [](const RankPhase& r) {
      std::vector<double> exposed;
      if (!r.gather_needed_ms.empty()) {  // zero3: what the compute stream waited at the nodes that need the units
        for (size_t s = 0; s < r.gather_needed_ms.size() && s < r.gather_end_ms.size(); ++s) {
          double waited = 0;
          for (size_t g = 0; g < r.gather_needed_ms[s].size() && g < r.gather_end_ms[s].size(); ++g) {
            waited += std::max(0.0, r.gather_end_ms[s][g] - r.gather_needed_ms[s][g]);
          }
          exposed.push_back(waited);
        }
        return exposed;
      }
      for (size_t s = 0; s < r.update_done_ms.size() && s < r.step_done_ms.size(); ++s) {
        exposed.push_back(std::max(0.0, r.step_done_ms[s] - r.update_done_ms[s]));
      }
      return exposed;
    });
  }
  if (report.comm.ran) {
    summary.comm_ms_per_step = slowest_median(report.comm, [](const RankPhase& r) { return r.all_gather_ms; });
    summary.comm_busbw_gbps = busbw(summary.comm_ms_per_step);
  }
  return summary;
}

DpTimeline summarize_dp_timeline(const TrainingReport& report) {
  DpTimeline t;
  if (!report.dp.ran || report.dp.ranks.empty()) return t;
  const RankPhase& rank = report.dp.ranks.front();
  if (rank.bucket_end_ms.empty()) return t;
  auto median_per_bucket = [](const std::vector<std::vector<double>>& by_step) {
    std::vector<double> out;
    for (size_t b = 0; b < by_step.front().size(); ++b) {
      std::vector<double> values;
      for (const auto& step : by_step) values.push_back(step.at(b));
      out.push_back(median(values));
    }
    return out;
  };
  t.nodes_done_ms = median(rank.nodes_done_ms);
  t.ready_ms = median_per_bucket(rank.bucket_ready_ms);
  t.start_ms = median_per_bucket(rank.bucket_start_ms);
  t.end_ms = median_per_bucket(rank.bucket_end_ms);
  std::vector<double> last_end, tails;
  for (size_t s = 0; s < rank.bucket_end_ms.size(); ++s) {
    const double end = *std::max_element(rank.bucket_end_ms[s].begin(), rank.bucket_end_ms[s].end());
    last_end.push_back(end);
    tails.push_back(std::max(0.0, end - rank.nodes_done_ms.at(s)));
  }
  t.last_reduce_end_ms = median(last_end);
  t.tail_ms = median(tails);
  return t;
}

ScalingSummary summarize_scaling(const TrainingReport& report) {
  ScalingSummary summary;
  if (!report.dp.ran) return summary;
  const PhaseSummary dp = summarize_phase(report, report.dp, true);
  summary.in_training_busbw_gbps = bucket_busbw_gbps(report, report.dp);
  if (!report.solo.ran) return summary;
  const PhaseSummary solo = summarize_phase(report, report.solo, false);
  if (solo.units_per_s_per_gpu > 0) {
    summary.efficiency = dp.units_per_s_total / (report.nranks * solo.units_per_s_per_gpu);
  }
  summary.exposed_comm_ms = std::max(0.0, dp.step_ms_p50 - solo.step_ms_p50);
  if (report.comm.ran) {
    const double comm_ms = summarize_comm(report, report.comm).step_ms_p50;
    if (comm_ms > 0) {
      summary.overlap_pct = std::clamp(100.0 * (1.0 - summary.exposed_comm_ms / comm_ms), 0.0, 100.0);
      summary.efficiency_bound = std::min(1.0, solo.step_ms_p50 / comm_ms);
    }
  }
  return summary;
}

EfficiencyDecomposition summarize_decomposition(const TrainingReport& report) {
  EfficiencyDecomposition none;
  if (!report.solo.ran || !report.dp.ran) {
    none.not_measured = "needs the solo and dp phases";
    return none;
  }
  if (report.sub_steps.size() > 1) {  // the marks hold the step's last sub-step only
    none.not_measured = "a step of " + std::to_string(report.sub_steps.size()) + " sub-steps";
    return none;
  }
  auto marks = [](const RankPhase& phase, bool with_buckets) {
    std::vector<StepMarks> steps;
    const size_t count = std::min({phase.step_ms.size(), phase.forward_done_ms.size(), phase.nodes_done_ms.size(),
                                   phase.step_done_ms.size()});
    for (size_t s = 0; s < count; ++s) {
      StepMarks step;
      step.step_ms = phase.step_ms[s];
      step.forward_done_ms = phase.forward_done_ms[s];
      step.nodes_done_ms = phase.nodes_done_ms[s];
      step.step_done_ms = phase.step_done_ms[s];
      if (with_buckets) {
        if (s >= phase.bucket_start_ms.size() || s >= phase.bucket_end_ms.size()) break;
        step.bucket_start_ms = phase.bucket_start_ms[s];
        step.bucket_end_ms = phase.bucket_end_ms[s];
      }
      steps.push_back(std::move(step));
    }
    return steps;
  };
  std::vector<RankTimelines> ranks(std::min(report.solo.ranks.size(), report.dp.ranks.size()));
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].solo = marks(report.solo.ranks[r], false);
    ranks[r].dp = marks(report.dp.ranks[r], true);
  }
  // The CPU device's all-reduces run on the host between nodes: on the compute timeline.
  return decompose_efficiency(ranks, summarize_scaling(report).efficiency, report.device_kind != "cuda");
}

double peak_tflops(const std::string& device_name, Precision precision) {
  const GpuSpec* gpu = builtin_hardware_database().gpu_for_device_name(device_name);
  if (gpu == nullptr) return 0;
  std::optional<double> peak;
  switch (precision) {
    case Precision::kFp32: peak = gpu->fp32_tflops; break;
    case Precision::kTf32: peak = gpu->tf32_tflops; break;
    case Precision::kFp16: peak = gpu->fp16_tflops; break;
    default: peak = gpu->bf16_tflops; break;
  }
  return peak.value_or(0.0);
}

}  // namespace sb
