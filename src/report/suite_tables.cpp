// The suite's two tables in the guide's shape (rows: workloads; columns: this machine's GPU alone and all its
// ranks together) and one workload's file (include/scalebench/report.h).
#include <cstdio>
#include <optional>
#include <string>

#include "scalebench/byte_text.h"
#include "scalebench/report.h"
#include "src/report/guide_throughput.h"

namespace sb {
namespace {

std::string grouped(double value) { return grouped_text(static_cast<int64_t>(value + 0.5)); }

std::string percent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * fraction);
  return text;
}

// One run's cells: units/s per GPU alone, units/s on all ranks, E(N); "failed" or "-" where there is nothing.
struct ThroughputCells {
  std::string alone = "-", together = "-", efficiency = "-";
  std::optional<double> alone_units_per_s;
};

ThroughputCells throughput_cells(bool ran, const TrainingReport& report) {
  ThroughputCells cells;
  if (!ran) return cells;
  // A phase not asked for is not a failure: a sharded strategy's max-batch run trains without the solo phase.
  if (report.options.solo) cells.alone = "failed";
  else cells.alone = "not run";
  if (report.nranks > 1) cells.together = cells.efficiency = "failed";
  if (report.solo.ran) {
    cells.alone_units_per_s = summarize_phase(report, report.solo, false).units_per_s_per_gpu;
    cells.alone = grouped(*cells.alone_units_per_s);
  }
  if (report.dp.ran) {
    cells.together = grouped(summarize_phase(report, report.dp, true).units_per_s_total);
    cells.efficiency = report.solo.ran ? percent(summarize_scaling(report).efficiency) : "-";
  }
  return cells;
}

// ", strategy zero2 (at the max batch, the dp phases alone: ...)" where the runs shard; "" under ddp.
std::string strategy_note(const std::vector<SuiteRow>& rows, int nranks) {
  for (const SuiteRow& row : rows) {
    if (!row.reference_ran || !shards_optimizer(row.reference.options.strategy) || nranks < 2) continue;
    return std::string(" under --strategy ") + strategy_name(row.reference.options.strategy) +
           " (the max batch holds one shard's optimizer state, as the data-parallel phases do; the solo phase "
           "would need all of it, so the max-batch runs train together only)";
  }
  return "";
}

// This machine's per-GPU throughput over the guide's RTX 8000 figure ("3.2x"); "-" where either is missing.
std::string guide_ratio(const std::string& workload, std::optional<double> alone) {
  const std::optional<double> guide = guide_rtx8000_units_per_s(workload);
  if (!guide || !alone) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", *alone / *guide);
  return text;
}

// The guide's first table: max batch per GPU, verified and predicted.
void print_max_batch_table(std::FILE* out, const std::vector<SuiteRow>& rows, const std::string& device_name,
                           uint64_t device_bytes) {
  std::fprintf(out, "\n## Maximum batch per GPU before out-of-memory (%s, %s)\n\n", device_name.c_str(),
               byte_text(device_bytes).c_str());
  std::fprintf(out, "| workload | precision | max batch (verified) | predicted | error | plan at the max |\n");
  std::fprintf(out, "|---|---|---|---|---|---|\n");
  for (const SuiteRow& row : rows) {
    const MaxBatchResult& m = row.max_batch;
    if (!row.max_batch_ran) {
      std::fprintf(out, "| %s | | failed | | | |\n", row.workload.c_str());
      continue;
    }
    char error[16];
    std::snprintf(error, sizeof error, "%+.1f%%", 100 * max_batch_prediction_error(m));
    const bool verified = m.verified_ran && m.status == "ok";
    std::fprintf(out, "| %s | %s | %s | %s | %s | %s |\n", row.workload.c_str(), m.precision.c_str(),
                 verified ? max_batch_in_units(m, m.verified).c_str() : "not verified",
                 max_batch_in_units(m, m.predicted).c_str(), verified ? error : "-",
                 byte_text(m.predicted_bytes).c_str());
  }
}

}  // namespace

int64_t suite_max_batch(const SuiteRow& row) {
  if (!row.max_batch_ran) return 0;
  return row.max_batch.verified_ran && row.max_batch.verified > 0 ? row.max_batch.verified : row.max_batch.predicted;
}

// --gpus-sweep: the reference batch's units/s on k GPUs (all k together) and E(k), a column per k.
void print_sweep_table(std::FILE* out, const std::vector<SuiteRow>& rows, const std::string& device_name) {
  std::vector<int> sizes;
  for (const SuiteRow& row : rows) {
    if (row.reference_ran && row.reference.options.sweep_sizes.size() > sizes.size()) {
      sizes = row.reference.options.sweep_sizes;
    }
  }
  if (sizes.size() < 2) return;
  std::fprintf(out, "\n## Scaling curve at the reference batch (units/s on k %s together, E(k) = that / (k x alone); "
                    "one job per workload, --gpus-sweep)\n\n| workload | unit |", device_name.c_str());
  for (int k : sizes) std::fprintf(out, " k = %d |", k);
  std::fprintf(out, "\n|---|---|");
  for (size_t i = 0; i < sizes.size(); ++i) std::fprintf(out, "---|");
  std::fprintf(out, "\n");
  for (const SuiteRow& row : rows) {
    std::fprintf(out, "| %s | %s |", row.workload.c_str(), find_workload(row.workload).info().unit.c_str());
    const std::vector<SweepRow> curve = row.reference_ran ? summarize_sweep(row.reference) : std::vector<SweepRow>{};
    for (int k : sizes) {
      std::string cell = "-";
      for (const SweepRow& point : curve) {
        if (point.gpus == k && point.measured) {
          cell = grouped(point.units_per_s_total) + (k > 1 ? " (" + percent(point.efficiency) + ")" : "");
        }
      }
      std::fprintf(out, " %s |", cell.c_str());
    }
    std::fprintf(out, "\n");
  }
}

void print_suite_tables(std::FILE* out, const std::vector<SuiteRow>& rows, const std::string& device_name,
                        uint64_t device_bytes, int nranks) {
  const std::string gpus = device_name + " x" + std::to_string(nranks);
  bool any_max_batch = false;  // false with --reference-only: no maxbatch table, no max-batch columns
  for (const SuiteRow& row : rows) any_max_batch = any_max_batch || row.max_batch_ran;
  if (any_max_batch) print_max_batch_table(out, rows, device_name, device_bytes);
  std::fprintf(out,
               "\n## Training throughput (units/s; alone: per GPU, each rank training by itself; together: all %d "
               "ranks data-parallel%s; E(N) = together / (N x alone); x RTX 8000: alone over the guide's Quadro RTX "
               "8000 figure)\n\n",
               nranks, strategy_note(rows, nranks).c_str());
  std::fprintf(out, "| workload | unit | reference batch | %s alone | %s together | E(%d) | x RTX 8000 (guide) |",
               device_name.c_str(), gpus.c_str(), nranks);
  if (any_max_batch) {
    std::fprintf(out, " max batch | %s alone | %s together | E(%d) at the max |", device_name.c_str(), gpus.c_str(),
                 nranks);
  }
  std::fprintf(out, "\n|---|---|---|---|---|---|---|%s\n", any_max_batch ? "---|---|---|---|" : "");
  for (const SuiteRow& row : rows) {
    const ThroughputCells reference = throughput_cells(row.reference_ran, row.reference);
    const WorkloadInfo& info = find_workload(row.workload).info();
    const std::string batch_unit = " " + info.batch_unit_name();
    std::fprintf(out, "| %s | %s | %s | %s | %s | %s | %s |", row.workload.c_str(), info.unit.c_str(),
                 (grouped(static_cast<double>(info.default_batch)) + batch_unit).c_str(), reference.alone.c_str(),
                 reference.together.c_str(), reference.efficiency.c_str(),
                 guide_ratio(row.workload, reference.alone_units_per_s).c_str());
    if (any_max_batch) {
      const ThroughputCells at_max = throughput_cells(row.max_ran, row.at_max);
      const std::string max_batch = row.max_ran ? grouped(static_cast<double>(row.at_max.batch)) + batch_unit : "-";
      std::fprintf(out, " %s | %s | %s | %s |", max_batch.c_str(), at_max.alone.c_str(), at_max.together.c_str(),
                   at_max.efficiency.c_str());
    }
    std::fprintf(out, "\n");
  }
  print_sweep_table(out, rows, device_name);
  bool any_error = false;
  for (const SuiteRow& row : rows) {
    if (row.error.empty()) continue;
    if (!any_error) std::fprintf(out, "\nFailures:\n");
    any_error = true;
    std::fprintf(out, "- %s: %s\n", row.workload.c_str(), row.error.c_str());
  }
  std::fflush(out);
}

nlohmann::json suite_row_json(const SuiteRow& row) {
  nlohmann::json doc = {{"schema_version", kSuiteSchemaVersion}, {"tool", "scalebench"}, {"command", "suite"},
                        {"kind", "suite_workload"}, {"workload", row.workload}, {"error", row.error}};
  doc["maxbatch"] = row.max_batch_ran ? max_batch_json(row.max_batch) : nlohmann::json();
  doc["runs"] = {{"reference", row.reference_ran ? training_report_json(row.reference) : nlohmann::json()},
                 {"max_batch", row.max_ran ? training_report_json(row.at_max) : nlohmann::json()}};
  return doc;
}

}  // namespace sb
