// src/cli/suite_folder.h
#include "src/cli/suite_folder.h"

#include <filesystem>
#include <fstream>

#include "scalebench/error.h"
#include "scalebench/report.h"
#include "scalebench/suite.h"
#include "src/cli/run_context.h"

namespace sb {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSummaryKind = "suite_summary";

}  // namespace

SuiteFolder::SuiteFolder(const std::string& path, bool force) : path_(path) {
  std::error_code error;
  fs::create_directories(path, error);
  if (error) throw UsageError("cannot create the suite folder '" + path + "': " + error.message());
  const fs::path summary_path = fs::path(path) / "suite.json";
  summary_ = {{"schema_version", kSuiteSchemaVersion}, {"tool", "scalebench"}, {"command", "suite"},
              {"kind", kSummaryKind}, {"runs", nlohmann::json::array()}};
  if (fs::exists(summary_path)) {
    std::ifstream in(summary_path);
    nlohmann::json existing = nlohmann::json::parse(in, nullptr, false);
    if (existing.is_discarded() || !existing.is_object() || existing.value("kind", "") != kSummaryKind ||
        !existing.contains("runs") || !existing["runs"].is_array()) {
      throw UsageError("'" + summary_path.string() + "' is not a scalebench suite summary; choose another --out");
    }
    if (force) {
      for (const nlohmann::json& run : existing["runs"]) {
        for (const nlohmann::json& file : run.value("files", nlohmann::json::array())) {
          fs::remove(fs::path(path) / file.get<std::string>(), error);
        }
      }
      fs::remove(summary_path, error);
    } else {
      summary_ = existing;
      // A summary written before suite files had a schema_version gains the keys, so all of it reads back.
      summary_["schema_version"] = kSuiteSchemaVersion;
      summary_["tool"] = "scalebench";
      summary_["command"] = "suite";
    }
  }
  if (const auto unwritable = unwritable_output({(fs::path(path) / ".scalebench-write-probe").string()}, true)) {
    throw UsageError(*unwritable);
  }
}

std::string SuiteFolder::workload_file(const std::string& workload, const std::string& stamp) const {
  std::string name = workload + "-" + stamp + ".json";
  for (int copy = 2; fs::exists(fs::path(path_) / name); ++copy) {
    name = workload + "-" + stamp + "-" + std::to_string(copy) + ".json";
  }
  return (fs::path(path_) / name).string();
}

std::string SuiteFolder::append_run(const nlohmann::json& run) {
  summary_["runs"].push_back(run);
  const std::string path = (fs::path(path_) / "suite.json").string();
  write_text_file(path, summary_.dump(2) + "\n");
  return path;
}

}  // namespace sb
