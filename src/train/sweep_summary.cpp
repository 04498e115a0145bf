// The scaling curve's rows (summarize_sweep, include/scalebench/result.h).
#include <algorithm>

#include "scalebench/result.h"

namespace sb {
namespace {

template <typename T>
std::vector<T> members_of(const std::vector<T>& by_rank, const std::vector<int>& ranks) {
  std::vector<T> kept;
  for (int rank : ranks) {
    if (static_cast<size_t>(rank) < by_rank.size()) kept.push_back(by_rank[static_cast<size_t>(rank)]);
  }
  return kept;
}

PhaseRecord members_record(const PhaseRecord& record, const std::vector<int>& ranks) {
  PhaseRecord kept = record;
  kept.ranks = members_of(record.ranks, ranks);
  return kept;
}

// The first group's view: comm busbw, in-training busbw, overlap and the decomposition.
void fill_from_view(const TrainingReport& view, SweepRow& row) {
  const ScalingSummary scaling = summarize_scaling(view);
  row.exposed_comm_ms = scaling.exposed_comm_ms;
  row.in_training_busbw_gbps = scaling.in_training_busbw_gbps;
  row.comm_busbw_gbps = summarize_comm(view, view.comm).busbw_gbps;
  row.decomposition = summarize_decomposition(view);
  row.cuda_graph = view.dp.cuda_graph;
}

}  // namespace

TrainingReport sweep_group_view(const TrainingReport& report, const SweepPoint& point, size_t group) {
  const std::vector<int>& ranks = point.groups.at(group).ranks;
  TrainingReport view = report;
  view.nranks = static_cast<int>(ranks.size());
  view.devices = members_of(report.devices, ranks);
  view.units_per_step_by_rank.clear();
  double sum = 0;
  for (int rank : ranks) {
    view.units_per_step_by_rank.push_back(report.rank_units_per_step(static_cast<size_t>(rank)));
    sum += view.units_per_step_by_rank.back();
  }
  view.units_per_step = ranks.empty() ? 0 : sum / static_cast<double>(ranks.size());
  view.solo = members_record(report.solo, ranks);
  view.comm = members_record(point.comm, ranks);
  view.dp = members_record(point.dp, ranks);
  view.sweep.clear();
  return view;
}

std::vector<SweepRow> summarize_sweep(const TrainingReport& report) {
  std::vector<SweepRow> rows;
  const TrainOptions& options = report.options;
  const PhaseSummary solo = summarize_phase(report, report.solo, false);
  const double x1 = solo.units_per_s_per_gpu;
  for (size_t i = 0; i < options.sweep_sizes.size(); ++i) {
    SweepRow row;
    row.gpus = options.sweep_sizes[i];
    if (i < options.sweep_groups.size()) row.group_list = options.sweep_groups[i];
    row.groups = std::max<int>(1, static_cast<int>(row.group_list.size()));
    row.link = row.group_list.empty() ? "" : row.group_list.front().link;
    const int trained = row.gpus * row.groups;
    if (row.gpus == 1) {  // the solo phase: each GPU alone (with concurrent groups: all of them at once)
      row.measured = report.solo.ran;
      row.step_ms_p50 = solo.step_ms_p50;
      row.units_per_s_per_gpu = x1;
      row.units_per_s_total = row.groups > 1 ? solo.units_per_s_total : x1;
      row.cuda_graph = report.solo.cuda_graph;
    } else if (row.gpus == report.nranks) {  // the dp phase
      row.measured = report.dp.ran;
      const PhaseSummary dp = summarize_phase(report, report.dp, true);
      row.step_ms_p50 = dp.step_ms_p50;
      row.units_per_s_total = dp.units_per_s_total;
      fill_from_view(report, row);
    } else {
      const auto point = std::find_if(report.sweep.begin(), report.sweep.end(),
                                      [&](const SweepPoint& p) { return p.gpus == row.gpus; });
      if (point != report.sweep.end() && point->dp.ran) {
        row.measured = true;
        for (size_t g = 0; g < point->groups.size(); ++g) {
          const TrainingReport view = sweep_group_view(report, *point, g);
          const PhaseSummary dp = summarize_phase(view, view.dp, true);
          row.step_ms_p50 = std::max(row.step_ms_p50, dp.step_ms_p50);
          row.units_per_s_total += dp.units_per_s_total;
          if (g == 0) fill_from_view(view, row);
        }
      }
    }
    if (row.measured && trained > 0) {
      if (row.gpus > 1) row.units_per_s_per_gpu = row.units_per_s_total / trained;
      row.efficiency = x1 > 0 ? row.units_per_s_total / (trained * x1) : 0.0;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace sb
