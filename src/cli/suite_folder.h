// The suite's output folder: one JSON per workload and per suite run, and suite.json, the summary of every run
// that wrote there. A rerun appends (new files, one more entry in suite.json); --force first removes the files
// suite.json lists and starts it afresh. Nothing is overwritten silently.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace sb {

class SuiteFolder {
 public:
  // Rank 0 only. Creates the folder, reads suite.json (UsageError when it is not a suite summary) and checks that
  // the folder can be written; with `force`, removes what suite.json lists.
  SuiteFolder(const std::string& path, bool force);

  // A new file name for one workload of this run ("<folder>/<workload>-<stamp>.json"), never an existing one.
  std::string workload_file(const std::string& workload, const std::string& stamp) const;
  // Appends this run's summary to suite.json (written atomically) and returns its path.
  std::string append_run(const nlohmann::json& run);

 private:
  std::string path_;
  nlohmann::json summary_;
};

}  // namespace sb
