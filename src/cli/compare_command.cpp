// `scalebench compare FILE... [--baseline LABEL] [--label FILE=LABEL] [--markdown|--csv] [--out PATH]
// [--html PATH]` and `scalebench report RUN.json [--markdown] [--out PATH] [--html PATH]`: result files read back
// into tables (src/report/compare.h) and, with --html, a page of charts (html_report.h). Every rank reads the
// files, so a bad file stops all of them alike; rank 0 prints and writes.
#include <cstdio>
#include <map>

#include "scalebench/error.h"
#include "scalebench/report.h"
#include "src/cli/commands.h"
#include "src/cli/run_context.h"
#include "src/cli/session.h"
#include "src/report/compare.h"
#include "src/report/html_report.h"

namespace sb {
namespace {

bool measured_nothing(const ResultFile& file) {
  if (file.kind == ResultKind::kBandwidth) return file.bandwidth.points.empty();
  return !file.run.solo.ran && !file.run.comm.ran && !file.run.dp.ran;
}

// Partial results (a run that failed part-way) are read and shown, with a line saying so on rank 0's stderr;
// a file in which nothing was measured is exit 3 with a line.
std::vector<ResultFile> load_all(const std::string& command, const std::vector<std::string>& paths,
                                 ProcessGroup& group) {
  std::vector<ResultFile> files;
  try {
    for (const std::string& path : paths) {
      for (ResultFile& file : load_result_files(path)) files.push_back(std::move(file));
    }
  } catch (const UsageError& e) {
    throw UsageError(command + ": " + e.what());
  }
  for (const ResultFile& file : files) {
    const std::string error = file.kind == ResultKind::kRun ? file.run.error : "";
    if (measured_nothing(file)) {
      throw RuntimeFailure(command + ": " + file.path + ": nothing measured" + (error.empty() ? "" : " (" + error + ")"));
    }
    if (file.kind == ResultKind::kRun && file.run.status != "ok" && group.rank() == 0) {
      std::fprintf(stderr, "scalebench: notice: %s: partial result (status %s)%s\n", file.path.c_str(),
                   file.run.status.c_str(), error.empty() ? "" : (": " + error).c_str());
    }
  }
  return files;
}

std::map<std::string, std::string> parse_labels(const std::vector<std::string>& labels) {
  std::map<std::string, std::string> overrides;
  for (const std::string& entry : labels) {
    const size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == entry.size()) {
      throw UsageError("--label '" + entry + "': expected FILE=LABEL");
    }
    overrides[entry.substr(0, equals)] = entry.substr(equals + 1);
  }
  return overrides;
}

void emit(const CompareOptions& options, ProcessGroup& group, const std::string& text) {
  if (group.rank() != 0) return;
  if (options.out_path.empty()) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  } else {
    write_text_file(options.out_path, text);
  }
}

// --out and --html follow the measuring commands' rule: an existing file needs --force.
void refuse_unwritable(const CommandLine& command_line, ProcessGroup& group) {
  const CompareOptions& options = command_line.compare;
  agree_or_throw(group, group.rank() == 0
                            ? unwritable_output({options.out_path, options.html_path}, command_line.common.force)
                            : std::nullopt);
}

}  // namespace

int run_compare_command(const CommandLine& command_line, ProcessGroup& group) {
  const CompareOptions& options = command_line.compare;
  refuse_unwritable(command_line, group);
  std::vector<ResultFile> files = load_all("compare", options.files, group);
  assign_labels(files, parse_labels(options.labels));
  const ComparisonModel model = build_comparison(std::move(files), options.baseline);
  std::string text;
  if (options.csv) {
    text = comparison_csv(model);
  } else if (options.markdown) {
    text = tables_markdown(comparison_tables(model));
  } else {
    text = tables_console(comparison_tables(model));
  }
  emit(options, group, text);
  if (!options.html_path.empty() && group.rank() == 0) write_text_file(options.html_path, comparison_html(model));
  return kExitOk;
}

int run_report_command(const CommandLine& command_line, ProcessGroup& group) {
  const CompareOptions& options = command_line.compare;
  refuse_unwritable(command_line, group);
  // A suite workload file holds the reference-batch run and, when it ran, the max-batch run: both are reported,
  // the second's tables titled so; --html shows the first.
  const std::vector<ResultFile> files = load_all("report", options.files, group);
  std::vector<Table> tables;
  for (const ResultFile& file : files) {
    if (file.kind != ResultKind::kRun) {
      throw UsageError("report: " + file.path + ": a bandwidth result; report reads run results (try compare)");
    }
    for (Table& table : run_report_tables(file)) {
      if (!file.variant.empty()) table.title += " (" + file.variant + ")";
      tables.push_back(std::move(table));
    }
  }
  emit(options, group, options.markdown ? tables_markdown(tables) : tables_console(tables));
  if (!options.html_path.empty() && group.rank() == 0) write_text_file(options.html_path, run_report_html(files.front()));
  return kExitOk;
}

}  // namespace sb
