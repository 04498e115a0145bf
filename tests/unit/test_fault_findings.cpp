// The fault campaign's findings that need no launcher (issue 27; issue 28 item 3): numeric flags refused with
// the flag, the value and the range named; output paths that are not regular files, clash or appear during a
// run; result files with numbers out of range, empty rank lists, oversize, and partial results read as such.
// The launcher cases are in tests/faults/.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "scalebench/error.h"
#include "scalebench/report.h"
#include "src/cli/command_line.h"
#include "src/cli/run_context.h"
#include "src/cli/startup_watchdog.h"
#include "src/report/compare.h"
#include "src/report/output_file.h"

namespace sb {
namespace {

using nlohmann::json;

std::string usage_error(std::vector<const char*> args) {
  args.insert(args.begin(), "scalebench");
  try {
    parse_command_line(static_cast<int>(args.size()), args.data());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << text << "' lacks '" << part << "'";
}

// Finding 1 and 12, issue 28 item 3: every numeric flag refuses non-finite and out-of-range values by name.
TEST(NumericFlags, NonFiniteAndOutOfRangeValuesNameFlagValueAndRange) {
  const std::vector<std::pair<std::vector<const char*>, std::vector<std::string>>> cases = {
      {{"-w", "bert_base", "--timeout", "nan"}, {"--timeout", "nan", "from 0.1 to 604800"}},
      {{"-w", "bert_base", "--timeout", "inf"}, {"--timeout", "inf"}},
      {{"-w", "bert_base", "--lr", "nan"}, {"--lr", "nan", "above 0"}},
      {{"-w", "bert_base", "--bucket-mb", "nan"}, {"--bucket-mb", "nan", "from 0.001 to 1000000"}},
      {{"-w", "bert_base", "--batch", "0"}, {"--batch", "0", "from 1 to 1000000000"}},
      {{"-w", "bert_base", "--seed", "-1"}, {"--seed", "-1", "from 0 to 18446744073709551615"}},
      {{"-w", "bert_base", "--steps", "1e30"}, {"--steps", "1e30", "whole number from 1 to 1000000"}},
      {{"-w", "bert_base", "--warmup", "-1"}, {"--warmup", "-1"}},
      {{"-w", "bert_base", "--min-time", "1e999"}, {"--min-time", "1e999"}},
      {{"-w", "bert_base", "--clip-norm", "-nan"}, {"--clip-norm", "-nan"}},
      {{"-w", "bert_base", "--check-steps", "2.5"}, {"--check-steps", "2.5"}},
      {{"maxbatch", "-w", "bert_base", "--memory", "1e30"}, {"--memory", "1e30", "up to 1048576"}},
      {{"maxbatch", "-w", "bert_base", "--memory", "0"}, {"--memory", "0", "above 0"}},
      {{"suite", "--steps", "99999999999"}, {"--steps", "99999999999"}},
      {{"bandwidth", "-f", "nan"}, {"--factor", "nan"}},
      {{"bandwidth", "-n", "0"}, {"--iters", "0"}},
      {{"bandwidth", "-r", "-1"}, {"--root", "-1"}},
  };
  for (const auto& [args, parts] : cases) {
    const std::string error = usage_error(args);
    ASSERT_FALSE(error.empty()) << args.back() << " was accepted";
    for (const std::string& part : parts) expect_contains(error, part);
    // The old range text printed DBL_MAX in full.
    EXPECT_EQ(error.find("179769"), std::string::npos) << error;
  }
}

// Finding 12: an option given twice said "At Most 1 required but received 2".
TEST(NumericFlags, AnOptionGivenTwiceIsNamed) {
  expect_contains(usage_error({"-w", "bert_base", "--steps", "4", "--steps", "400"}),
                  "--steps is given more than once; give each option once");
}

TEST(NumericFlags, InRangeValuesStillParse) {
  std::vector<const char*> args{"scalebench", "-w",   "bert_base", "--timeout", "0.5", "--seed", "18446744073709551615",
                                "--lr",       "1e-3", "--batch",   "7",         "--bucket-mb", "0.05"};
  const CommandLine cl = parse_command_line(static_cast<int>(args.size()), args.data());
  EXPECT_DOUBLE_EQ(cl.common.timeout_seconds, 0.5);
  EXPECT_EQ(cl.run.seed, UINT64_MAX);
  EXPECT_EQ(cl.run.batch, 7);
  EXPECT_DOUBLE_EQ(cl.run.bucket_mb, 0.05);
}

TEST(StartupWatchdog, ReadsTimeoutBeforeAnythingIsParsed) {
  const char* spaced[] = {"scalebench", "--timeout", "3", "-w", "x"};
  EXPECT_DOUBLE_EQ(startup_timeout_seconds(5, spaced), 3);
  const char* joined[] = {"scalebench", "--timeout=2.5"};
  EXPECT_DOUBLE_EQ(startup_timeout_seconds(2, joined), 2.5);
  const char* bad[] = {"scalebench", "--timeout", "nan"};
  EXPECT_DOUBLE_EQ(startup_timeout_seconds(3, bad), 300);
  const char* none[] = {"scalebench"};
  EXPECT_DOUBLE_EQ(startup_timeout_seconds(1, none), 300);
}

// A folder of its own per test, removed afterwards.
class OutputPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/sb_outputs_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string read(const std::string& file) {
    std::ifstream stream(file);
    std::stringstream text;
    text << stream.rdbuf();
    return text.str();
  }
  std::string dir_;
};

// Findings 3, 7 and 8: refused up front, even with --force.
TEST_F(OutputPaths, OnlyRegularFilesAndDistinctOutputs) {
  ASSERT_EQ(symlink("/dev/null", path("link.json").c_str()), 0);
  ASSERT_EQ(mkfifo(path("fifo.json").c_str(), 0644), 0);
  ASSERT_EQ(mkdir(path("folder.json").c_str(), 0755), 0);
  for (bool force : {false, true}) {
    expect_contains(unwritable_output({path("link.json")}, force).value_or(""), "is a symbolic link");
    expect_contains(unwritable_output({path("fifo.json")}, force).value_or(""), "is a FIFO");
    expect_contains(unwritable_output({path("folder.json")}, force).value_or(""), "is a directory");
    expect_contains(unwritable_output({"/dev/null"}, force).value_or(""), "is a device");
    expect_contains(unwritable_output({path("a.json"), "", path("./a.json")}, force).value_or(""), "same file");
    expect_contains(unwritable_output({"-", "-"}, force).value_or(""), "only one output may go to stdout");
  }
  EXPECT_FALSE(unwritable_output({path("a.json"), "-", path("b.csv")}, false));
  // Refusing a FIFO must not have opened it (opening one for writing blocks until a reader comes).
  struct stat info;
  ASSERT_EQ(lstat(path("link.json").c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode));
}

// Finding 8: a file created at the path during the run survives, and so does the result.
TEST_F(OutputPaths, AFileThatAppearsDuringTheRunIsNotOverwritten) {
  const std::string out = path("late.json");
  ASSERT_FALSE(unwritable_output({out}, false));
  std::ofstream(out) << "someone else's";
  try {
    write_text_file(out, "result");
    FAIL() << "overwrote a file created during the run";
  } catch (const RuntimeFailure& e) {
    expect_contains(e.what(), "created by someone else during the run");
    expect_contains(e.what(), out + ".kept.");
  }
  EXPECT_EQ(read(out), "someone else's");
  EXPECT_EQ(read(out + ".kept." + std::to_string(getpid())), "result");
  // A path claimed and first written by this process is its own: later snapshots replace it.
  const std::string mine = path("mine.json");
  ASSERT_FALSE(unwritable_output({mine}, false));
  write_text_file(mine, "phase 1");
  write_text_file(mine, "phase 2");
  EXPECT_EQ(read(mine), "phase 2");
}

// Finding 7: --force replaces a regular file, never a symlink or a device that appeared meanwhile.
TEST_F(OutputPaths, WritesNeverReplaceALinkOrDevice) {
  const std::string out = path("out.json");
  ASSERT_EQ(symlink("/dev/null", out.c_str()), 0);
  EXPECT_THROW(write_text_file(out, "x"), RuntimeFailure);
  struct stat info;
  ASSERT_EQ(lstat(out.c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode));
}

// Finding 5: a kill inside a write leaves out.json.tmp.PID; the next run's check removes it when PID is gone.
TEST_F(OutputPaths, StaleTemporariesOfDeadWritersAreRemoved) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);
  const std::string stale = path("out.json.tmp." + std::to_string(child));
  const std::string live = path("out.json.tmp." + std::to_string(getppid()));
  std::ofstream(stale).flush();
  std::ofstream(live).flush();
  EXPECT_FALSE(unwritable_output({path("out.json")}, false));
  EXPECT_NE(access(stale.c_str(), F_OK), 0) << "the dead writer's temporary is still there";
  EXPECT_EQ(access(live.c_str(), F_OK), 0) << "a live process's temporary was removed";
}

// A small valid run file (the fields the readers use).
json run_doc() {
  return json::parse(R"({
  "schema_version": 2, "command": "run", "status": "ok",
  "context": {"devices": [{"name": "cpu"}], "topology": {"transport": null}},
  "config": {"workload": "bert_base", "scale": "tiny", "precision": "fp32", "grad_dtype": "fp32",
             "overlap": true, "batch_per_rank": 2},
  "workload": {"unit": "sequences"}, "nranks": 2,
  "phases": {"solo": {"step_ms_p50": 3.0, "units_per_s_per_gpu": 600.0, "units_per_s_total": 1200.0,
                      "ranks": [{"step_ms": [3.0, 3.1]}, {"step_ms": [2.9, 3.2]}]}}})");
}

std::string rejection(const std::string& text) {
  try {
    parse_result_file("r.json", text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// Findings 9 and 10: out-of-range numbers, counts below 1, times of 0 or less, empty rank lists.
TEST(ResultReaders, RefuseNonsenseNamingFileAndField) {
  ASSERT_EQ(rejection(run_doc().dump()), "");
  std::string text = run_doc().dump();
  text.replace(text.find("\"nranks\":2"), 10, "\"nranks\":1e400");
  EXPECT_EQ(rejection(text).rfind("r.json: the value of \"nranks\" is out of range", 0), 0u) << rejection(text);
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& d) { d["nranks"] = 0; }, "r.json: \"nranks\" is 0; expected 1 to 1048576"},
      {[](json& d) { d["nranks"] = -2; }, "r.json: \"nranks\" is -2; expected 1 to 1048576"},
      {[](json& d) { d["nranks"] = 1000000000000000000LL; }, "r.json: \"nranks\" is 1000000000000000000"},
      {[](json& d) { d["nranks"] = 18446744073709551615ULL; }, "r.json: \"nranks\" is 18446744073709551615, out"},
      {[](json& d) { d["config"]["batch_per_rank"] = 0; }, "r.json: \"config.batch_per_rank\" is 0"},
      {[](json& d) { d["phases"]["solo"]["step_ms_p50"] = 0; }, "r.json: \"phases.solo.step_ms_p50\" is 0"},
      {[](json& d) { d["phases"]["solo"]["units_per_s_total"] = -5; }, "r.json: \"phases.solo.units_per_s_total\" is -5"},
      {[](json& d) { d["phases"]["solo"]["ranks"] = json::array(); }, "r.json: \"phases.solo.ranks\" is empty"},
      {[](json& d) { d["phases"]["solo"]["ranks"][1]["step_ms"][1] = -1; },
       "r.json: \"phases.solo.ranks[1].step_ms[1]\" is -1"},
  };
  for (const auto& [mutate, expected] : cases) {
    json doc = run_doc();
    mutate(doc);
    EXPECT_EQ(rejection(doc.dump()).rfind(expected, 0), 0u) << rejection(doc.dump()) << " / " << expected;
  }
}

// Finding 11: a run stopped before its first phase and a sweep stopped early are read back as partial.
TEST(ResultReaders, ReadPartialResults) {
  json doc = run_doc();
  doc["status"] = "failed";
  doc["error"] = "stopped by SIGTERM during solo phase, step 2";
  doc["phases"] = json::object();
  const ResultFile run = parse_result_file("r.json", doc.dump());
  EXPECT_FALSE(run.run.solo.ran);
  EXPECT_EQ(run.run.error, "stopped by SIGTERM during solo phase, step 2");
  doc["status"] = "ok";  // a finished run without phases is still refused
  EXPECT_NE(rejection(doc.dump()), "");
  const json bandwidth = json::parse(R"({"schema_version": 1, "command": "bandwidth", "status": "failed",
    "context": {"nranks": 2, "backend": "mpi", "transport": null, "devices": [{"name": "cpu"}]},
    "config": {"dtype": "fp32"}, "results": [{"op": "all_reduce", "placement": "out_of_place",
    "size_bytes": 1024, "busbw_gbps": 0.5}],
    "summary": {"peak_busbw_gbps": {"all_reduce": 0.5, "all_gather": null}}})");
  const ResultFile sweep = parse_result_file("bw.json", bandwidth.dump());
  ASSERT_EQ(sweep.bandwidth.peak_busbw_gbps.size(), 1u);
}

// Finding 13: an oversize file is refused before it is read (a 100 MB array took 44 s and 1.2 GB).
TEST_F(OutputPaths, OversizeResultFilesAreRefusedUnread) {
  const std::string big = path("big.json");
  std::ofstream(big).flush();
  ASSERT_EQ(truncate(big.c_str(), 100 << 20), 0);  // sparse: no 100 MB written
  try {
    load_result_file(big);
    FAIL() << "read a 100 MB file";
  } catch (const UsageError& e) {
    expect_contains(e.what(), big + ": 104857600 bytes; a result file is at most 32 MiB");
  }
}

}  // namespace
}  // namespace sb
