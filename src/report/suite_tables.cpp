// The suite's two tables in the guide's shape (rows: workloads; columns: this machine's GPU alone and all its
// ranks together) and one workload's file (include/scalebench/report.h).
#include <cstdio>
#include <string>

#include "scalebench/byte_text.h"
#include "scalebench/report.h"

namespace sb {
namespace {

std::string grouped(double value) { return grouped_text(static_cast<int64_t>(value + 0.5)); }

std::string percent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * fraction);
  return text;
}

// "units/s alone" and "units/s together (E)" of one run; "failed" or "-" where there is nothing.
std::pair<std::string, std::string> throughput_cells(bool ran, const TrainingReport& report) {
  if (!ran) return {"-", "-"};
  std::string alone = "failed", together = report.nranks > 1 ? "failed" : "-";
  if (report.solo.ran) alone = grouped(summarize_phase(report, report.solo, false).units_per_s_per_gpu);
  if (report.dp.ran) {
    together = grouped(summarize_phase(report, report.dp, true).units_per_s_total);
    if (report.solo.ran) together += " (" + percent(summarize_scaling(report).efficiency) + ")";
  }
  return {alone, together};
}

}  // namespace

int64_t suite_max_batch(const SuiteRow& row) {
  if (!row.max_batch_ran) return 0;
  return row.max_batch.verified_ran && row.max_batch.verified > 0 ? row.max_batch.verified : row.max_batch.predicted;
}

void print_suite_tables(std::FILE* out, const std::vector<SuiteRow>& rows, const std::string& device_name,
                        uint64_t device_bytes, int nranks) {
  const std::string gpus = device_name + " x" + std::to_string(nranks);
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
  std::fprintf(out, "\n## Training throughput (units/s; together: all %d ranks, with the scaling efficiency)\n\n",
               nranks);
  std::fprintf(out, "| workload | unit | reference batch | %s alone | %s together | max batch | %s alone | %s together |\n",
               device_name.c_str(), gpus.c_str(), device_name.c_str(), gpus.c_str());
  std::fprintf(out, "|---|---|---|---|---|---|---|---|\n");
  for (const SuiteRow& row : rows) {
    const auto [reference_alone, reference_together] = throughput_cells(row.reference_ran, row.reference);
    const auto [max_alone, max_together] = throughput_cells(row.max_ran, row.at_max);
    const WorkloadInfo& info = find_workload(row.workload).info();
    const std::string batch_unit = " " + (info.batch_unit.empty() ? info.unit : info.batch_unit);
    const std::string max_batch = row.max_ran ? grouped(static_cast<double>(row.at_max.batch)) + batch_unit : "-";
    std::fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", row.workload.c_str(), info.unit.c_str(),
                 (grouped(static_cast<double>(info.default_batch)) + batch_unit).c_str(), reference_alone.c_str(),
                 reference_together.c_str(), max_batch.c_str(), max_alone.c_str(), max_together.c_str());
  }
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
  nlohmann::json doc = {{"kind", "suite_workload"}, {"workload", row.workload}, {"error", row.error}};
  doc["maxbatch"] = row.max_batch_ran ? max_batch_json(row.max_batch) : nlohmann::json();
  doc["runs"] = {{"reference", row.reference_ran ? training_report_json(row.reference) : nlohmann::json()},
                 {"max_batch", row.max_ran ? training_report_json(row.at_max) : nlohmann::json()}};
  return doc;
}

}  // namespace sb
