// Reads a result file back (docs/RESULTS.md) for `compare` and `report`: checks schema_version and command,
// then every field that is used, so a foreign or truncated file stops with its name and the missing field
// instead of a table of blanks. Derived numbers that the writer leaves null (no dp phase) stay optional.
// Numbers are checked for range too (a count is at least 1, a time above 0), so a hand-edited or corrupted
// file stops with the file and field named instead of a table of nonsense; a partial result (status
// "failed": phases missing, collectives not reached written as null) is read as such.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "scalebench/suite.h"
#include "src/report/compare.h"

namespace sb {
namespace {

using nlohmann::json;

// Limits of what a result file can hold: larger values are corruption, not a cluster.
constexpr int64_t kMaxRanks = 1 << 20;
constexpr int64_t kMaxBatch = int64_t{1} << 40;
// A 1,024-rank run with every step and bucket kept is a few MB; past this, parsing takes seconds per 10 MB
// and memory ~12x the file.
constexpr off_t kMaxResultFileBytes = off_t{32} << 20;

// Looks fields up by a dotted path ("context.devices[0].name") and names the path in every error.
class Fields {
 public:
  Fields(const std::string& file, const json& doc) : file_(file), doc_(doc) {}

  [[noreturn]] void fail(const std::string& what) const { throw UsageError(file_ + ": " + what); }

  const json* find(const std::string& dotted) const {
    const json* node = &doc_;
    std::stringstream stream(dotted);
    std::string segment;
    while (std::getline(stream, segment, '.')) {
      const size_t bracket = segment.find('[');
      const std::string key = segment.substr(0, bracket);
      if (!node->is_object() || !node->contains(key)) return nullptr;
      node = &(*node)[key];
      if (bracket != std::string::npos) {
        const size_t index = std::stoul(segment.substr(bracket + 1));
        if (!node->is_array() || node->size() <= index) return nullptr;
        node = &(*node)[index];
      }
    }
    return node;
  }
  bool has(const std::string& dotted) const { return find(dotted) != nullptr; }

  const json& require(const std::string& dotted) const {
    const json* node = find(dotted);
    if (node == nullptr) fail("missing \"" + dotted + "\"");
    return *node;
  }
  std::string string(const std::string& dotted) const {
    const json& node = require(dotted);
    if (!node.is_string()) fail("\"" + dotted + "\" is not a string");
    return node.get<std::string>();
  }
  // A string, or "" where the writer put null (e.g. no transport with one rank); the key must exist.
  std::string string_or_null(const std::string& dotted) const {
    const json& node = require(dotted);
    return node.is_null() ? std::string() : string(dotted);
  }
  double number(const std::string& dotted) const {
    const json& node = require(dotted);
    if (!node.is_number()) fail("\"" + dotted + "\" is not a number");
    return node.get<double>();
  }
  int64_t integer(const std::string& dotted) const {
    const json& node = require(dotted);
    if (!node.is_number_integer()) fail("\"" + dotted + "\" is not an integer");
    // A number beyond int64 parses as unsigned; get<int64_t> would wrap it.
    if (node.is_number_unsigned() && node.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      fail("\"" + dotted + "\" is " + node.dump() + ", out of range");
    }
    return node.get<int64_t>();
  }
  // A whole number from 1 to `max`: ranks, batch.
  int64_t count(const std::string& dotted, int64_t max) const {
    const int64_t value = integer(dotted);
    if (value < 1 || value > max) {
      fail("\"" + dotted + "\" is " + std::to_string(value) + "; expected 1 to " + std::to_string(max));
    }
    return value;
  }
  // A number above 0: a step time, a throughput, a size.
  double positive(const std::string& dotted) const {
    const double value = number(dotted);
    if (!(value > 0)) fail("\"" + dotted + "\" is " + require(dotted).dump() + "; expected a number above 0");
    return value;
  }
  double non_negative(const std::string& dotted) const {
    const double value = number(dotted);
    if (!(value >= 0)) fail("\"" + dotted + "\" is " + require(dotted).dump() + "; expected 0 or more");
    return value;
  }
  bool boolean(const std::string& dotted) const {
    const json& node = require(dotted);
    if (!node.is_boolean()) fail("\"" + dotted + "\" is not true or false");
    return node.get<bool>();
  }
  // Absent or null: none (the phase it needs did not run); anything else must be a number.
  std::optional<double> optional_number(const std::string& dotted) const {
    const json* node = find(dotted);
    if (node == nullptr || node->is_null()) return std::nullopt;
    return number(dotted);
  }

 private:
  std::string file_;
  const json& doc_;
};

PhaseFigures read_training_phase(const Fields& fields, const std::string& name) {
  PhaseFigures phase;
  const std::string prefix = "phases." + name + ".";
  phase.ran = true;
  phase.step_ms_p50 = fields.positive(prefix + "step_ms_p50");
  phase.units_per_s_per_gpu = fields.positive(prefix + "units_per_s_per_gpu");
  phase.units_per_s_total = fields.positive(prefix + "units_per_s_total");
  phase.step_ms_p95 = fields.optional_number(prefix + "step_ms_p95");
  phase.step_ms_max = fields.optional_number(prefix + "step_ms_max");
  phase.tflops_per_gpu = fields.optional_number(prefix + "tflops_per_gpu");
  phase.mfu = fields.optional_number(prefix + "mfu");
  return phase;
}

// An array of numbers at `dotted` (absent or null: empty), each element checked by its own path.
std::vector<double> number_array(const Fields& fields, const std::string& dotted) {
  std::vector<double> values;
  const json* node = fields.find(dotted);
  if (node == nullptr || node->is_null()) return values;
  if (!node->is_array()) fields.fail("\"" + dotted + "\" is not an array");
  for (size_t i = 0; i < node->size(); ++i) values.push_back(fields.number(dotted + "[" + std::to_string(i) + "]"));
  return values;
}

// Each rank's median step time of a phase (phases.NAME.ranks[r].step_ms[]); empty when the phase is absent.
std::vector<double> rank_medians(const Fields& fields, const std::string& name) {
  std::vector<double> medians;
  const json* ranks = fields.find("phases." + name + ".ranks");
  if (ranks == nullptr) return medians;
  if (!ranks->is_array()) fields.fail("\"phases." + name + ".ranks\" is not an array");
  if (ranks->empty()) fields.fail("\"phases." + name + ".ranks\" is empty (a phase has one entry per rank)");
  for (size_t r = 0; r < ranks->size(); ++r) {
    const std::string path = "phases." + name + ".ranks[" + std::to_string(r) + "].step_ms";
    std::vector<double> steps = number_array(fields, path);
    if (steps.empty()) fields.fail("missing \"" + path + "\"");
    for (size_t i = 0; i < steps.size(); ++i) {
      if (!(steps[i] > 0)) fields.positive(path + "[" + std::to_string(i) + "]");  // names the element
    }
    std::sort(steps.begin(), steps.end());
    const size_t n = steps.size();
    medians.push_back(n % 2 == 1 ? steps[n / 2] : 0.5 * (steps[n / 2 - 1] + steps[n / 2]));
  }
  return medians;
}

// gpus_sweep.points[] (schema 3; absent in schema 2, null without --gpus-sweep).
void read_sweep(const Fields& fields, RunSummary& run) {
  const json* sweep = fields.find("gpus_sweep");
  if (sweep == nullptr || sweep->is_null()) return;
  run.sweep_concurrent = fields.boolean("gpus_sweep.concurrent_groups");
  const json* points = fields.find("gpus_sweep.points");
  if (points == nullptr || !points->is_array()) fields.fail("\"gpus_sweep.points\" is not an array");
  for (size_t i = 0; i < points->size(); ++i) {
    const std::string prefix = "gpus_sweep.points[" + std::to_string(i) + "].";
    RunSummary::SweepFigures point;
    point.gpus = static_cast<int>(fields.count(prefix + "gpus", kMaxRanks));
    point.groups_at_once = static_cast<int>(fields.count(prefix + "groups_at_once", kMaxRanks));
    point.link = fields.string_or_null(prefix + "link");
    point.measured = fields.boolean(prefix + "measured");
    point.step_ms_p50 = fields.optional_number(prefix + "step_ms_p50");
    point.units_per_s_total = fields.optional_number(prefix + "units_per_s_total");
    point.units_per_s_per_gpu = fields.optional_number(prefix + "units_per_s_per_gpu");
    point.efficiency = fields.optional_number(prefix + "efficiency");
    point.exposed_comm_ms = fields.optional_number(prefix + "exposed_comm_ms");
    point.busbw_gbps = fields.optional_number(prefix + "busbw_gbps");
    run.sweep.push_back(point);
  }
}

void read_run(const Fields& fields, ResultFile& file) {
  file.device_name = fields.string("context.devices[0].name");
  file.nranks = static_cast<int>(fields.count("nranks", kMaxRanks));
  file.transport = fields.string_or_null("context.topology.transport");
  // Files written before --emulate existed have no key: they were not emulated.
  file.emulate = fields.has("context.topology.emulate") ? fields.string("context.topology.emulate") : "none";
  RunSummary& run = file.run;
  run.status = fields.string("status");
  run.workload = fields.string("config.workload");
  run.unit = fields.string("workload.unit");
  run.scale = fields.string("config.scale");
  run.precision = fields.string("config.precision");
  run.grad_dtype = fields.string("config.grad_dtype");
  run.overlap = fields.boolean("config.overlap");
  if (fields.has("grad_registration.granted")) run.grad_registration = fields.string("grad_registration.granted");
  const bool ctas_applied =
      !fields.has("overlap_ctas_not_applied") || fields.string_or_null("overlap_ctas_not_applied").empty();
  if (fields.has("config.overlap_ctas") && fields.integer("config.overlap_ctas") > 0 && ctas_applied) {
    run.overlap_ctas = fields.count("config.overlap_ctas", 64);
  }
  if (fields.has("config.strategy")) run.strategy = fields.string("config.strategy");
  if (const json* gather = fields.find("all_gather"); gather != nullptr && !gather->is_null()) {
    run.all_gather_exposed_ms = fields.optional_number("all_gather.exposed_ms_per_step");
    run.all_gather_busbw_gbps = fields.optional_number("all_gather.busbw_gbps");
  }
  if (const json* memory = fields.find("dp_memory"); memory != nullptr && !memory->is_null()) {
    run.dp_plan_bytes = fields.optional_number("dp_memory.plan_bytes");
    run.dp_device_used_bytes = fields.optional_number("dp_memory.device_used_bytes");
  }
  run.error = fields.has("error") ? fields.string_or_null("error") : "";
  run.batch_per_rank = fields.count("config.batch_per_rank", kMaxBatch);
  fields.require("phases");
  // A run stopped before its first phase finished has none: partial, still readable (status failed).
  if (!fields.has("phases.solo") && !fields.has("phases.dp") && run.status == "ok") {
    fields.fail("missing \"phases.solo\"");
  }
  if (fields.has("phases.solo")) run.solo = read_training_phase(fields, "solo");
  if (fields.has("phases.dp")) run.dp = read_training_phase(fields, "dp");
  if (fields.has("phases.comm")) {
    run.comm.ran = true;
    run.comm.step_ms_p50 = fields.positive("phases.comm.step_ms_p50");
  }
  run.scaling_efficiency = fields.optional_number("scaling_efficiency");
  run.exposed_comm_ms = fields.optional_number("exposed_comm_ms");
  run.overlap_pct = fields.optional_number("overlap_pct");
  run.efficiency_bound = fields.optional_number("efficiency_bound");
  run.busbw_gbps = fields.optional_number("busbw_gbps");
  if (const json* d = fields.find("efficiency_decomposition"); d != nullptr && !d->is_null()) {
    if (fields.boolean("efficiency_decomposition.measured")) {
      RunSummary::Decomposition parts;
      parts.loss = fields.number("efficiency_decomposition.loss");
      parts.dilation = fields.number("efficiency_decomposition.dilation");
      parts.tail = fields.number("efficiency_decomposition.tail");
      parts.skew = fields.number("efficiency_decomposition.skew");
      parts.residual = fields.number("efficiency_decomposition.residual");
      parts.adds_up = fields.boolean("efficiency_decomposition.adds_up");
      run.decomposition = parts;
    } else {
      run.decomposition_not_measured = fields.string("efficiency_decomposition.not_measured");
    }
  }
  run.comm_busbw_gbps = fields.optional_number("comm_busbw_gbps");
  if (const json* buckets = fields.find("buckets_bytes"); buckets != nullptr && !buckets->is_null()) {
    if (!buckets->is_array()) fields.fail("\"buckets_bytes\" is not an array");
    for (size_t i = 0; i < buckets->size(); ++i) {
      run.buckets_bytes.push_back(fields.number("buckets_bytes[" + std::to_string(i) + "]"));
    }
  }
  run.bucket_mb = fields.optional_number("config.bucket_mb");
  if (const json* choice = fields.find("bucket_auto"); choice != nullptr && !choice->is_null()) {
    fields.number("bucket_auto.chosen_bytes");  // a malformed choice is named, not skipped
    const json* kept = fields.find("bucket_auto.kept_default_because");
    run.bucket_auto = kept != nullptr && !kept->is_null()
                          ? "--bucket-mb auto kept the default: " + fields.string("bucket_auto.kept_default_because")
                          : "chosen by --bucket-mb auto";
  }
  run.nodes_done_ms = fields.optional_number("phases.dp.timeline.nodes_done_ms");
  run.last_reduce_end_ms = fields.optional_number("phases.dp.timeline.last_reduce_end_ms");
  run.tail_ms = fields.optional_number("phases.dp.timeline.tail_ms");
  run.bucket_ready_ms = number_array(fields, "phases.dp.timeline.bucket_ready_ms");
  run.bucket_start_ms = number_array(fields, "phases.dp.timeline.bucket_start_ms");
  run.bucket_end_ms = number_array(fields, "phases.dp.timeline.bucket_end_ms");
  if (run.bucket_start_ms.size() != run.bucket_ready_ms.size() ||
      run.bucket_end_ms.size() != run.bucket_ready_ms.size()) {
    fields.fail("\"phases.dp.timeline\" bucket_ready_ms, bucket_start_ms and bucket_end_ms differ in length");
  }
  if (run.solo.ran) run.solo_rank_step_ms = rank_medians(fields, "solo");
  if (run.dp.ran) run.dp_rank_step_ms = rank_medians(fields, "dp");
  read_sweep(fields, run);
}

void read_bandwidth(const Fields& fields, ResultFile& file) {
  file.device_name = fields.string("context.devices[0].name");
  file.nranks = static_cast<int>(fields.count("context.nranks", kMaxRanks));
  file.transport = fields.string_or_null("context.transport");
  file.emulate = fields.has("context.emulate") ? fields.string("context.emulate") : "none";
  file.bandwidth.backend = fields.string("context.backend");
  file.bandwidth.dtype = fields.string("config.dtype");
  const json& peaks = fields.require("summary.peak_busbw_gbps");
  if (!peaks.is_object()) fields.fail("\"summary.peak_busbw_gbps\" is not an object");
  for (const auto& item : peaks.items()) {
    // null: a collective the sweep did not reach (a partial result).
    if (item.value().is_null()) continue;
    file.bandwidth.peak_busbw_gbps.emplace_back(item.key(),
                                                fields.non_negative("summary.peak_busbw_gbps." + item.key()));
  }
  const json& results = fields.require("results");
  if (!results.is_array()) fields.fail("\"results\" is not an array");
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string prefix = "results[" + std::to_string(i) + "].";
    BandwidthPoint point;
    point.op = fields.string(prefix + "op");
    point.placement = fields.string(prefix + "placement");
    point.size_bytes = fields.positive(prefix + "size_bytes");
    point.busbw_gbps = fields.non_negative(prefix + "busbw_gbps");
    file.bandwidth.points.push_back(point);
  }
}

// One run or bandwidth document already parsed.
ResultFile parse_document(const std::string& path, const json& doc) {
  if (!doc.is_object()) throw UsageError(path + ": not a scalebench result (the document is not an object)");
  const Fields fields(path, doc);
  const int64_t version = fields.integer("schema_version");
  const std::string command = fields.string("command");
  if (command == "suite") fields.fail("a suite file holds several runs (compare and report read it whole)");
  if (command != "run" && command != "bandwidth") {
    fields.fail("command \"" + command + "\" is not supported (run, bandwidth, suite)");
  }
  const bool supported = command == "run" ? version >= kOldestRunSchemaVersion && version <= kRunSchemaVersion
                                           : version == kBandwidthSchemaVersion;
  if (!supported) {
    fields.fail("schema_version " + std::to_string(version) + " is not supported (run: " +
                std::to_string(kOldestRunSchemaVersion) + " to " + std::to_string(kRunSchemaVersion) +
                ", bandwidth: " + std::to_string(kBandwidthSchemaVersion) + ")");
  }
  ResultFile file;
  file.path = path;
  if (command == "run") {
    file.kind = ResultKind::kRun;
    read_run(fields, file);
  } else {
    file.kind = ResultKind::kBandwidth;
    read_bandwidth(fields, file);
  }
  return file;
}

json parse_json(const std::string& path, const std::string& text) {
  // The last key read, to name the field when a value cannot be held (1e400 is valid JSON, not a double).
  std::string last_key;
  const json::parser_callback_t note_key = [&last_key](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && parsed.is_string()) last_key = parsed.get<std::string>();
    return true;
  };
  try {
    return json::parse(text, note_key);
  } catch (const json::parse_error& error) {
    throw UsageError(path + ": not JSON (syntax error at byte " + std::to_string(error.byte) + ")");
  } catch (const json::exception& error) {
    throw UsageError(path + ": the value of \"" + last_key + "\" is out of range (" + error.what() + ")");
  }
}

// Only a regular file of at most kMaxResultFileBytes is read: a FIFO would block, a huge array takes minutes.
std::string read_text(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0) {
    if (!S_ISREG(info.st_mode)) throw UsageError(path + ": not a regular file");
    if (info.st_size > kMaxResultFileBytes) {
      throw UsageError(path + ": " + std::to_string(info.st_size) + " bytes; a result file is at most " +
                       std::to_string(kMaxResultFileBytes >> 20) + " MiB");
    }
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw UsageError(path + ": cannot read (" + std::strerror(errno) + ")");
  std::stringstream buffer;
  buffer << stream.rdbuf();
  return buffer.str();
}

// A suite workload file: its training runs that ran (reference batch, then max batch), each a run document.
std::vector<ResultFile> read_suite_workload(const std::string& path, const Fields& fields) {
  std::vector<ResultFile> runs;
  for (const char* which : {"reference", "max_batch"}) {
    const std::string key = std::string("runs.") + which;
    const json& run = fields.require(key);
    if (run.is_null()) continue;
    ResultFile file = parse_document(path + " (" + key + ")", run);
    file.path = path;
    if (std::string(which) == "max_batch") file.variant = "max batch";
    runs.push_back(std::move(file));
  }
  if (runs.empty()) fields.fail("no training run (runs.reference and runs.max_batch are null)");
  return runs;
}

}  // namespace

ResultFile parse_result_file(const std::string& path, const std::string& text) {
  return parse_document(path, parse_json(path, text));
}

ResultFile load_result_file(const std::string& path) { return parse_result_file(path, read_text(path)); }

std::vector<ResultFile> load_result_files(const std::string& path) {
  const json doc = parse_json(path, read_text(path));
  if (!doc.is_object() || doc.value("command", "") != "suite") return {parse_document(path, doc)};
  const Fields fields(path, doc);
  if (fields.integer("schema_version") != kSuiteSchemaVersion) {
    fields.fail("schema_version " + std::to_string(fields.integer("schema_version")) +
                " is not supported (suite: " + std::to_string(kSuiteSchemaVersion) + ")");
  }
  const std::string kind = fields.string("kind");
  if (kind == "suite_workload") return read_suite_workload(path, fields);
  if (kind != "suite_summary") fields.fail("kind \"" + kind + "\" is not a suite file (suite_workload, suite_summary)");
  // suite.json: the workload files of its last run, beside it.
  const json& runs = fields.require("runs");
  if (!runs.is_array() || runs.empty()) fields.fail("\"runs\" is empty: no suite run wrote here");
  const std::string last = "runs[" + std::to_string(runs.size() - 1) + "].files";
  const json& names = fields.require(last);
  if (!names.is_array()) fields.fail("\"" + last + "\" is not an array");
  std::vector<ResultFile> files;
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string name = fields.string(last + "[" + std::to_string(i) + "]");
    for (ResultFile& file : load_result_files((folder / name).string())) files.push_back(std::move(file));
  }
  return files;
}

}  // namespace sb
