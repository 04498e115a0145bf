// The comparison model and its tables (src/report/compare.h): labels, one column per label and one row per
// workload, ratios to a baseline column, and the CSV with every number. Text layout is in compare_print.cpp.
#include "src/report/compare.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "scalebench/error.h"
#include "src/report/csv_text.h"

namespace sb {
namespace {

std::string format(const char* spec, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, spec, value);
  return buffer;
}
std::string format_or_dash(const char* spec, std::optional<double> value) {
  return value ? format(spec, *value) : "-";
}
std::string file_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// What one label's column holds per row: the workload for runs, one bandwidth sweep per label.
std::string row_key(const ResultFile& file) {
  return file.kind == ResultKind::kRun ? "run:" + file.run.workload : "bandwidth";
}

std::optional<double> as_percent(std::optional<double> fraction) {
  if (!fraction) return std::nullopt;
  return *fraction * 100;
}

Table labelled_table(const std::string& title, const std::string& first, const std::vector<std::string>& labels) {
  Table table;
  table.title = title;
  table.header.push_back(first);
  table.right_aligned.push_back(false);
  for (const std::string& label : labels) {
    table.header.push_back(label);
    table.right_aligned.push_back(true);
  }
  return table;
}

}  // namespace

std::string default_label(const ResultFile& file) {
  std::string label = file.device_name + " x" + std::to_string(file.nranks);
  if (!file.transport.empty()) label += " " + file.transport;
  if (file.emulate != "none") label += " emulated-" + file.emulate;
  if (file.kind == ResultKind::kRun) {
    if (file.run.grad_dtype == "bf16") label += " bf16-wire";
    if (!file.run.overlap) label += " no-overlap";
    if (file.run.overlap_ctas > 0) label += " overlap-ctas-" + std::to_string(file.run.overlap_ctas);
    if (file.run.grad_registration == "local") label += " registered";
    if (file.run.grad_registration == "symmetric") label += " symmetric-window";
    if (file.run.strategy != "ddp") label += " " + file.run.strategy;
  }
  if (!file.variant.empty()) label += " " + file.variant;
  return label;
}

void assign_labels(std::vector<ResultFile>& files, const std::map<std::string, std::string>& overrides) {
  std::map<std::string, bool> override_used;
  for (const auto& entry : overrides) override_used[entry.first] = false;
  for (ResultFile& file : files) {
    auto found = overrides.find(file.path);
    if (found == overrides.end()) found = overrides.find(file_name(file.path));
    if (found != overrides.end()) override_used[found->first] = true;
    file.label = found != overrides.end() ? found->second : default_label(file);
  }
  for (const auto& [path, used] : override_used) {
    if (!used) throw UsageError("--label " + path + "=" + overrides.at(path) + ": no such FILE among the inputs");
  }
  // (label, row) pairs already taken; a collision gets the first free " (k)".
  std::vector<std::pair<std::string, std::string>> taken;
  auto is_taken = [&](const std::string& label, const std::string& row) {
    return std::find(taken.begin(), taken.end(), std::make_pair(label, row)) != taken.end();
  };
  for (ResultFile& file : files) {
    const std::string row = row_key(file);
    std::string label = file.label;
    for (int k = 2; is_taken(label, row); ++k) label = file.label + " (" + std::to_string(k) + ")";
    file.label = label;
    taken.emplace_back(label, row);
  }
}

std::optional<double> headline_throughput(const RunSummary& run) {
  if (run.dp.ran) return run.dp.units_per_s_total;
  if (run.solo.ran) return run.solo.units_per_s_total;
  return std::nullopt;
}

std::optional<double> ratio_to(std::optional<double> value, std::optional<double> baseline) {
  if (!value || !baseline || *baseline <= 0) return std::nullopt;
  return *value / *baseline;
}

ComparisonModel build_comparison(std::vector<ResultFile> files, const std::string& baseline) {
  ComparisonModel model;
  model.files = std::move(files);
  auto add_unique = [](std::vector<std::string>& list, const std::string& item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
  };
  for (size_t i = 0; i < model.files.size(); ++i) {
    const ResultFile& file = model.files[i];
    if (file.kind == ResultKind::kRun) {
      add_unique(model.run_labels, file.label);
      add_unique(model.rows, file.run.workload);
      model.row_units.emplace(file.run.workload, file.run.unit);
      model.run_cells[{file.run.workload, file.label}] = i;
    } else {
      add_unique(model.bandwidth_labels, file.label);
      model.bandwidth_files[file.label] = i;
      for (const auto& [op, gbps] : file.bandwidth.peak_busbw_gbps) {
        add_unique(model.ops, op);
        model.peak_busbw[{op, file.label}] = gbps;
      }
    }
  }
  if (!baseline.empty()) {
    if (std::find(model.run_labels.begin(), model.run_labels.end(), baseline) == model.run_labels.end()) {
      std::string known;
      for (const std::string& label : model.run_labels) known += (known.empty() ? "'" : ", '") + label + "'";
      throw UsageError("--baseline '" + baseline + "' is not a run label (labels: " +
                       (known.empty() ? std::string("none") : known) + ")");
    }
    model.baseline = baseline;
  } else if (!model.run_labels.empty()) {
    model.baseline = model.run_labels.front();
  }
  return model;
}

namespace {

const RunSummary* cell(const ComparisonModel& model, const std::string& workload, const std::string& label) {
  const auto found = model.run_cells.find({workload, label});
  return found == model.run_cells.end() ? nullptr : &model.files[found->second].run;
}

// A table of one cell per workload and run label, `text` of the run or "-" (no run, or nothing to say), added to
// `tables` only where some run had something to say.
void push_if_any(std::vector<Table>& tables, const ComparisonModel& model, const std::string& title,
                 const std::function<std::optional<std::string>(const RunSummary&)>& text) {
  Table table = labelled_table(title, "workload", model.run_labels);
  bool any = false;
  for (const std::string& workload : model.rows) {
    std::vector<std::string> cells{workload};
    for (const std::string& label : model.run_labels) {
      const RunSummary* run = cell(model, workload, label);
      const std::optional<std::string> said = run != nullptr ? text(*run) : std::nullopt;
      cells.push_back(said.value_or("-"));
      any = any || said.has_value();
    }
    table.rows.push_back(cells);
  }
  if (any) tables.push_back(table);
}

std::optional<double> throughput_cell(const ComparisonModel& model, const std::string& workload,
                                      const std::string& label) {
  const RunSummary* run = cell(model, workload, label);
  return run == nullptr ? std::nullopt : headline_throughput(*run);
}

std::string row_name(const ComparisonModel& model, const std::string& workload) {
  return workload + " (" + model.row_units.at(workload) + "/s)";
}

// "3.9 / 1.3 / 0.1 / 0.9" in points of E, starred when the residual is beyond half a point.
std::string decomposition_cell(const RunSummary::Decomposition& d) {
  return format("%.1f", 100 * d.dilation) + " / " + format("%.1f", 100 * d.tail) + " / " +
         format("%.1f", 100 * d.skew) + " / " + format("%.1f", 100 * d.residual) + (d.adds_up ? "" : " *");
}

}  // namespace

std::vector<Table> comparison_tables(const ComparisonModel& model) {
  std::vector<Table> tables;
  if (!model.run_labels.empty()) {
    Table throughput = labelled_table("Throughput, all GPUs (dp units/s; solo where dp did not run)", "workload",
                                      model.run_labels);
    Table relative = labelled_table("Throughput relative to " + model.baseline, "workload", model.run_labels);
    Table efficiency = labelled_table("Scaling efficiency E(N) (%)", "workload", model.run_labels);
    Table exposed = labelled_table("Exposed communication per step (ms)", "workload", model.run_labels);
    for (const std::string& workload : model.rows) {
      const std::optional<double> base = throughput_cell(model, workload, model.baseline);
      std::vector<std::string> values{row_name(model, workload)}, ratios{values[0]}, effs{workload}, exps{workload};
      for (const std::string& label : model.run_labels) {
        const RunSummary* run = cell(model, workload, label);
        const std::optional<double> value = throughput_cell(model, workload, label);
        values.push_back(format_or_dash("%.1f", value));
        ratios.push_back(format_or_dash("%.2f", ratio_to(value, base)));
        effs.push_back(format_or_dash("%.1f", run ? as_percent(run->scaling_efficiency) : std::nullopt));
        exps.push_back(format_or_dash("%.2f", run ? run->exposed_comm_ms : std::nullopt));
      }
      throughput.rows.push_back(values);
      relative.rows.push_back(ratios);
      efficiency.rows.push_back(effs);
      exposed.rows.push_back(exps);
    }
    tables.insert(tables.end(), {throughput, relative, efficiency, exposed});
    // Only where some run measured it (files before it have none).
    Table decomposed = labelled_table("1 - E decomposed (points of E): dilation / tail / skew / residual "
                                      "(* the residual is beyond 0.5 points)",
                                      "workload", model.run_labels);
    bool any = false;
    for (const std::string& workload : model.rows) {
      std::vector<std::string> cells{workload};
      for (const std::string& label : model.run_labels) {
        const RunSummary* run = cell(model, workload, label);
        cells.push_back(run != nullptr && run->decomposition ? decomposition_cell(*run->decomposition) : "-");
        any = any || (run != nullptr && run->decomposition);
      }
      decomposed.rows.push_back(cells);
    }
    if (any) tables.push_back(decomposed);
    // Sharded strategies' all-gathers, only where some run gathered.
    push_if_any(tables, model,
                "All-gathers of the parameters (zero1/zero2 after the update, zero3 before use): exposed, the compute "
                "stream waiting for them (ms per step) / busbw (GB/s)",
                [](const RunSummary& run) -> std::optional<std::string> {
                  if (!run.all_gather_busbw_gbps) return std::nullopt;
                  return format_or_dash("%.2f", run.all_gather_exposed_ms) + " / " +
                         format_or_dash("%.1f", run.all_gather_busbw_gbps);
                });
    // Memory per GPU in the dp phases, only where some run reports it: what each strategy holds.
    push_if_any(tables, model, "Memory per GPU in the dp phases (GiB): in use on the device, measured / planned",
                [](const RunSummary& run) -> std::optional<std::string> {
                  if (!run.dp_plan_bytes) return std::nullopt;
                  auto gib = [](std::optional<double> bytes) {
                    return bytes ? std::optional<double>(*bytes / static_cast<double>(1ull << 30)) : std::nullopt;
                  };
                  return format_or_dash("%.2f", gib(run.dp_device_used_bytes)) + " / " +
                         format_or_dash("%.2f", gib(run.dp_plan_bytes));
                });
    // Every swept run's curve: units/s total and E(k) at each k, a column per label.
    for (const std::string& workload : model.rows) {
      std::vector<int> sizes;
      for (const std::string& label : model.run_labels) {
        const RunSummary* run = cell(model, workload, label);
        for (const RunSummary::SweepFigures& p : run ? run->sweep : std::vector<RunSummary::SweepFigures>{}) {
          if (std::find(sizes.begin(), sizes.end(), p.gpus) == sizes.end()) sizes.push_back(p.gpus);
        }
      }
      if (sizes.empty()) continue;
      std::sort(sizes.begin(), sizes.end());
      Table curve = labelled_table(workload + ": scaling curve (--gpus-sweep): units/s total, E(k)", "GPUs (k)",
                                   model.run_labels);
      for (int k : sizes) {
        std::vector<std::string> cells{std::to_string(k)};
        for (const std::string& label : model.run_labels) {
          const RunSummary* run = cell(model, workload, label);
          std::string text = "-";
          for (const RunSummary::SweepFigures& p : run ? run->sweep : std::vector<RunSummary::SweepFigures>{}) {
            if (p.gpus == k && p.measured) {
              text = format_or_dash("%.1f", p.units_per_s_total) + ", " +
                     format_or_dash("%.1f", as_percent(p.efficiency)) + "%" + (p.link.empty() ? "" : " " + p.link);
            }
          }
          cells.push_back(text);
        }
        curve.rows.push_back(cells);
      }
      tables.push_back(curve);
    }
  }
  if (!model.bandwidth_labels.empty()) {
    Table peaks = labelled_table("Peak bus bandwidth (GB/s)", "collective", model.bandwidth_labels);
    for (const std::string& op : model.ops) {
      std::vector<std::string> row{op};
      for (const std::string& label : model.bandwidth_labels) {
        const auto found = model.peak_busbw.find({op, label});
        row.push_back(format_or_dash("%.1f", found == model.peak_busbw.end()
                                                 ? std::nullopt
                                                 : std::optional<double>(found->second)));
      }
      peaks.rows.push_back(row);
    }
    tables.push_back(peaks);
  }
  return tables;
}

std::string comparison_csv(const ComparisonModel& model) {
  const std::vector<std::string> columns{
      "label", "file", "kind", "workload", "unit", "nranks", "transport", "precision", "grad_dtype", "overlap",
      "strategy", "status", "phase", "units_per_s_total", "ratio_to_baseline", "solo_step_ms_p50", "solo_units_per_s_per_gpu",
      "dp_step_ms_p50", "dp_units_per_s_total", "scaling_efficiency", "exposed_comm_ms", "overlap_pct",
      "busbw_gbps", "comm_busbw_gbps", "peak_busbw_gbps", "schema_version"};
  auto join = [](const std::vector<std::string>& fields) {
    std::string line;
    for (size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + csv_field(fields[i]);
    return line + "\n";
  };
  // Every row ends with the CSV's schema_version; the header's last column names it.
  auto row = [&join](std::vector<std::string> fields) {
    fields.push_back(std::to_string(kCompareCsvSchemaVersion));
    return join(fields);
  };
  std::string text = join(columns);
  for (const std::string& workload : model.rows) {
    const std::optional<double> base = throughput_cell(model, workload, model.baseline);
    for (const std::string& label : model.run_labels) {
      const auto found = model.run_cells.find({workload, label});
      if (found == model.run_cells.end()) continue;
      const ResultFile& file = model.files[found->second];
      const RunSummary& run = file.run;
      const std::optional<double> value = headline_throughput(run);
      text += row({file.label, file.path, "run", workload, run.unit, std::to_string(file.nranks), file.transport,
                    run.precision, run.grad_dtype, run.overlap ? "true" : "false", run.strategy, run.status,
                    run.dp.ran ? "dp" : "solo", csv_number(value), csv_number(ratio_to(value, base)),
                    csv_number(run.solo.ran ? std::optional<double>(run.solo.step_ms_p50) : std::nullopt),
                    csv_number(run.solo.units_per_s_per_gpu),
                    csv_number(run.dp.ran ? std::optional<double>(run.dp.step_ms_p50) : std::nullopt),
                    csv_number(run.dp.units_per_s_total), csv_number(run.scaling_efficiency),
                    csv_number(run.exposed_comm_ms), csv_number(run.overlap_pct), csv_number(run.busbw_gbps),
                    csv_number(run.comm_busbw_gbps), ""});
      // A --gpus-sweep's sizes between 1 and N: a row each, its phase "dp@K" (k = 1 and N are the rows above).
      for (const RunSummary::SweepFigures& point : run.sweep) {
        if (point.gpus <= 1 || point.gpus >= file.nranks || !point.measured) continue;
        text += row({file.label, file.path, "run", workload, run.unit,
                     std::to_string(point.gpus * point.groups_at_once), file.transport, run.precision,
                     run.grad_dtype, run.overlap ? "true" : "false", run.strategy, run.status,
                     "dp@" + std::to_string(point.gpus), csv_number(point.units_per_s_total), "", "", "",
                     csv_number(point.step_ms_p50), csv_number(point.units_per_s_total), csv_number(point.efficiency),
                     csv_number(point.exposed_comm_ms), "", csv_number(point.busbw_gbps), "", ""});
      }
    }
  }
  for (const std::string& op : model.ops) {
    for (const std::string& label : model.bandwidth_labels) {
      const auto found = model.peak_busbw.find({op, label});
      if (found == model.peak_busbw.end()) continue;
      const ResultFile& file = model.files[model.bandwidth_files.at(label)];
      std::vector<std::string> fields(columns.size() - 1);  // row() appends the schema_version
      fields[0] = file.label;
      fields[1] = file.path;
      fields[2] = "bandwidth";
      fields[3] = op;
      fields[5] = std::to_string(file.nranks);
      fields[6] = file.transport;
      fields[7] = file.bandwidth.dtype;  // the collectives' element type
      fields.back() = csv_number(found->second);
      text += row(fields);
    }
  }
  return text;
}

std::vector<Table> run_report_tables(const ResultFile& file) {
  const RunSummary& run = file.run;
  std::vector<Table> tables;
  Table phases = labelled_table(run.workload + " (" + run.scale + ", " + run.precision + ", batch " +
                                    std::to_string(run.batch_per_rank) + "/rank) on " + default_label(file) +
                                    ", status " + run.status,
                                "phase", {"step ms p50", "step ms p95", "step ms max", run.unit + "/s per GPU",
                                          run.unit + "/s total", "TFLOP/s per GPU", "MFU (%)"});
  auto phase_row = [&](const std::string& name, const PhaseFigures& phase) {
    if (!phase.ran) return;
    phases.rows.push_back({name, format("%.3f", phase.step_ms_p50), format_or_dash("%.3f", phase.step_ms_p95),
                           format_or_dash("%.3f", phase.step_ms_max), format_or_dash("%.1f", phase.units_per_s_per_gpu),
                           format_or_dash("%.1f", phase.units_per_s_total), format_or_dash("%.1f", phase.tflops_per_gpu),
                           format_or_dash("%.1f", as_percent(phase.mfu))});
  };
  phase_row("solo", run.solo);
  phase_row("comm", run.comm);
  phase_row("dp", run.dp);
  tables.push_back(phases);

  Table derived = labelled_table("Scaling", "quantity", {"value"});
  double bucket_total = 0;
  for (double bytes : run.buckets_bytes) bucket_total += bytes;
  std::optional<double> bucket_mb_max;
  for (double bytes : run.buckets_bytes) bucket_mb_max = std::max(bucket_mb_max.value_or(0), bytes / 1e6);
  derived.rows = {
      {"scaling efficiency E(N) (%)", format_or_dash("%.1f", as_percent(run.scaling_efficiency))},
      {"efficiency with perfect overlap (%)", format_or_dash("%.1f", as_percent(run.efficiency_bound))},
      {"exposed communication (ms/step)", format_or_dash("%.3f", run.exposed_comm_ms)},
      {"overlap (%)", format_or_dash("%.1f", run.overlap_pct)},
      {"busbw in dp (GB/s)", format_or_dash("%.1f", run.busbw_gbps)},
      {"busbw in comm phase (GB/s)", format_or_dash("%.1f", run.comm_busbw_gbps)},
      {"bucket size (MiB)", run.bucket_auto.empty() ? format_or_dash("%g", run.bucket_mb)
                                                     : format_or_dash("%g", run.bucket_mb) + " (" + run.bucket_auto + ")"},
      {"buckets", std::to_string(run.buckets_bytes.size())},
      {"bucket bytes total (MB)", run.buckets_bytes.empty() ? "-" : format("%.1f", bucket_total / 1e6)},
      {"largest bucket (MB)", format_or_dash("%.1f", bucket_mb_max)},
      {"backward done (ms into dp step)", format_or_dash("%.3f", run.nodes_done_ms)},
      {"last all-reduce end (ms into dp step)", format_or_dash("%.3f", run.last_reduce_end_ms)},
      {"communication after backward (ms)", format_or_dash("%.3f", run.tail_ms)},
  };
  if (run.decomposition) {  // docs/RESULTS.md, efficiency_decomposition
    const RunSummary::Decomposition& d = *run.decomposition;
    derived.rows.push_back({"1 - E (points)", format("%.1f", 100 * d.loss)});
    derived.rows.push_back({"  dilation: slower backward beside the all-reduces (points)", format("%.1f", 100 * d.dilation)});
    derived.rows.push_back({"  tail: all-reduces and update after the backward (points)", format("%.1f", 100 * d.tail)});
    derived.rows.push_back({"  skew: waiting for the slowest rank (points)", format("%.1f", 100 * d.skew)});
    derived.rows.push_back({"  residual: not measured by the three (points)",
                            format("%.1f", 100 * d.residual) + (d.adds_up ? "" : " (beyond 0.5: they do not add up)")});
  } else if (!run.decomposition_not_measured.empty()) {
    derived.rows.push_back({"1 - E decomposed", "not measured: " + run.decomposition_not_measured});
  }
  tables.push_back(derived);
  if (!run.sweep.empty()) tables.push_back(sweep_table(file));
  return tables;
}

Table sweep_table(const ResultFile& file) {
  const RunSummary& run = file.run;
  Table table = labelled_table(
      std::string("Scaling curve (--gpus-sweep") + (run.sweep_concurrent ? ", N/k groups at once" : "") +
          "; X(1) the median solo GPU)",
      "GPUs (k)", {"link (weakest)", run.unit + "/s total", run.unit + "/s per GPU", "E(k) (%)",
                   "exposed comm (ms/step)", "busbw in dp (GB/s)"});
  for (const RunSummary::SweepFigures& point : run.sweep) {
    table.rows.push_back({std::to_string(point.gpus) +
                              (point.groups_at_once > 1 ? " x" + std::to_string(point.groups_at_once) : ""),
                          point.link.empty() ? "-" : point.link,
                          point.measured ? format_or_dash("%.1f", point.units_per_s_total) : "not measured",
                          format_or_dash("%.1f", point.units_per_s_per_gpu),
                          format_or_dash("%.1f", as_percent(point.efficiency)),
                          format_or_dash("%.3f", point.exposed_comm_ms), format_or_dash("%.1f", point.busbw_gbps)});
  }
  return table;
}

}  // namespace sb
