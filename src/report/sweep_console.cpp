// --gpus-sweep on the console (src/report/sweep_console.h).
#include "src/report/sweep_console.h"

#include <algorithm>

namespace sb {
namespace {

std::string rank_list_text(const std::vector<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ",") + std::to_string(rank);
  return text;
}

const SweepPoint* point_of(const TrainingReport& report, int gpus) {
  for (const SweepPoint& point : report.sweep) {
    if (point.gpus == gpus) return &point;
  }
  return nullptr;
}

}  // namespace

bool is_sweep_phase(const std::string& phase) { return phase.find('@') != std::string::npos; }

void print_sweep_plan(std::FILE* out, const TrainingReport& report) {
  const TrainOptions& o = report.options;
  if (!report.sweep_notice.empty()) std::fprintf(out, "# %s\n", report.sweep_notice.c_str());
  if (o.sweep_sizes.empty()) return;
  std::fprintf(out, "# gpus sweep: k = %s; %s\n", rank_list_text(o.sweep_sizes).c_str(),
               o.sweep_concurrent ? "--concurrent-groups: N/k groups of k train at once (every GPU busy)"
                                  : "one group of k ranks trains while the others wait");
  for (size_t i = 0; i < o.sweep_sizes.size() && i < o.sweep_groups.size(); ++i) {
    if (o.sweep_sizes[i] == 1) continue;
    std::string groups;
    for (const SweepGroup& group : o.sweep_groups[i]) {
      groups += (groups.empty() ? "" : "; ") + std::string("ranks ") + rank_list_text(group.ranks) + " (" +
                group.link + ")";
    }
    std::fprintf(out, "#   k = %d: %s\n", o.sweep_sizes[i], groups.c_str());
  }
}

void print_sweep_phase(std::FILE* out, const TrainingReport& report, const std::string& phase) {
  const size_t at = phase.find('@');
  const std::string kind = phase.substr(0, at);
  const int gpus = std::stoi(phase.substr(at + 1));
  const SweepPoint* point = point_of(report, gpus);
  if (point == nullptr) return;
  const TrainingReport view = sweep_group_view(report, *point, 0);
  if (kind == "comm") {
    const CommSummary comm = summarize_comm(view, view.comm);
    std::fprintf(out, "# comm@%d: the step's buckets all-reduced by ranks %s: %.2f ms per step (p50), busbw %.1f GB/s\n",
                 gpus, rank_list_text(point->groups.front().ranks).c_str(), comm.step_ms_p50, comm.busbw_gbps);
  } else if (kind == "dp") {
    for (const SweepRow& row : summarize_sweep(report)) {
      if (row.gpus != gpus) continue;
      std::fprintf(out, "# dp@%d: %s%.2f ms per step (p50, slowest rank%s), %.1f %s/s total, %.1f per GPU, "
                        "E(%d) = %.1f%%; weights identical %s\n",
                   gpus, row.groups > 1 ? (std::to_string(row.groups) + " groups at once: ").c_str() : "",
                   row.step_ms_p50, row.groups > 1 ? " of the slowest group" : "", row.units_per_s_total,
                   report.unit.c_str(), row.units_per_s_per_gpu, gpus, 100 * row.efficiency,
                   point->weights_identical_after_dp ? "yes" : "NO");
    }
  } else if (kind == "check") {
    const CheckRecord& c = point->check;
    std::fprintf(out, "# check@%d: %d ranks x batch %lld vs 1 rank x batch %lld%s: relative update difference %.3g "
                      "(tolerance %.3g), ranks' weights %s: %s\n",
                 gpus, gpus, static_cast<long long>(report.batch), static_cast<long long>(report.batch * gpus),
                 point->groups.size() > 1 ? " (the worst of its groups)" : "", c.relative_error, c.tolerance,
                 c.ranks_identical ? "identical" : "DIFFERENT", c.passed ? "passed" : "FAILED");
  }
}

void print_sweep_curve(std::FILE* out, const TrainingReport& report) {
  const std::vector<SweepRow> rows = summarize_sweep(report);
  if (rows.empty()) return;
  std::fprintf(out, "# scaling curve (X(1): the median solo GPU%s)\n",
               report.options.sweep_concurrent ? "; each k: N/k groups at once, summed" : "");
  std::fprintf(out, "# %4s %-9s %10s %14s %14s %7s %10s %9s %9s\n", "k", "link", "step p50", (report.unit + "/s").c_str(),
               (report.unit + "/s/GPU").c_str(), "E(k)", "exposed", "busbw", "busbw");
  std::fprintf(out, "# %4s %-9s %10s %14s %14s %7s %10s %9s %9s\n", "", "(weakest)", "(ms)", "total", "", "",
               "comm (ms)", "train", "comm");
  for (const SweepRow& row : rows) {
    if (!row.measured) {
      std::fprintf(out, "  %4d %-9s %10s\n", row.gpus, row.link.empty() ? "-" : row.link.c_str(), "not measured");
      continue;
    }
    std::fprintf(out, "  %4d %-9s %10.2f %14.1f %14.1f %6.1f%% %10.2f %9.1f %9.1f\n", row.gpus,
                 row.link.empty() ? "-" : row.link.c_str(), row.step_ms_p50, row.units_per_s_total,
                 row.units_per_s_per_gpu, 100 * row.efficiency, row.exposed_comm_ms, row.in_training_busbw_gbps,
                 row.comm_busbw_gbps);
  }
  // Where the curve bends: the link changes between consecutive sizes.
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i - 1].gpus > 1 && rows[i].link != rows[i - 1].link) {
      std::fprintf(out, "# the link changes from %s to %s between k = %d and k = %d\n", rows[i - 1].link.c_str(),
                   rows[i].link.c_str(), rows[i - 1].gpus, rows[i].gpus);
    }
  }
}

}  // namespace sb
