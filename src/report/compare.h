// `scalebench compare` and `scalebench report`: result files (docs/RESULTS.md) read back into one model,
// then tables, then text. Pure functions, no device and no MPI: parse/validate -> ResultFile -> labels ->
// ComparisonModel -> Table -> console / Markdown / CSV. Errors in a file are UsageError "FILE: what".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sb {

// run files: 3 since --gpus-sweep (issue 29) added gpus_sweep; 2 differs only by lacking it and still reads.
constexpr int kRunSchemaVersion = 3;
constexpr int kOldestRunSchemaVersion = 2;
constexpr int kBandwidthSchemaVersion = 1;

enum class ResultKind { kRun, kBandwidth };

// One training phase as the run file reports it (solo and dp; comm uses step_ms_p50 only).
struct PhaseFigures {
  bool ran = false;
  double step_ms_p50 = 0;
  std::optional<double> step_ms_p95, step_ms_max;
  std::optional<double> units_per_s_per_gpu, units_per_s_total, tflops_per_gpu, mfu;
};

// The fields of a `scalebench run --json` file (schema 2 or 3) that compare and report read.
struct RunSummary {
  std::string workload, unit, scale, precision, grad_dtype, status;
  std::string error;  // why a failed run stopped (its result is partial); "" when it finished
  bool overlap = true;
  // Issue 26's levers as they ran (files before 2026-12-04 have neither: none and 0): what NCCL granted for the
  // gradient buffers ("none", "local", "symmetric") and --overlap-ctas where it applied (0: off or not applied).
  std::string grad_registration = "none";
  int64_t overlap_ctas = 0;
  // --strategy (files before 2026-12-04: ddp) and, sharded, its all-gathers in the dp phase: the time the compute
  // stream waited for them, and their bus bandwidth (absent under ddp and in older files).
  std::string strategy = "ddp";
  std::optional<double> all_gather_exposed_ms, all_gather_busbw_gbps;
  // Memory per GPU in the dp phases (dp_memory, since 2026-12-05): planned, and in use on the device (measured).
  std::optional<double> dp_plan_bytes, dp_device_used_bytes;
  int64_t batch_per_rank = 0;
  PhaseFigures solo, comm, dp;
  std::optional<double> scaling_efficiency, exposed_comm_ms, overlap_pct, efficiency_bound, busbw_gbps,
      comm_busbw_gbps;
  std::vector<double> buckets_bytes;  // on the wire, in issue order
  std::optional<double> bucket_mb;    // config.bucket_mb: the size the buckets were cut at
  std::string bucket_auto;            // with --bucket-mb auto: "auto, chose 50 MiB" or why the default ran
  // dp timeline (rank 0's medians, ms from the step's first node); absent without a dp phase.
  std::optional<double> nodes_done_ms, last_reduce_end_ms, tail_ms;
  std::vector<double> bucket_ready_ms, bucket_start_ms, bucket_end_ms;  // per bucket, same origin; may be empty
  // efficiency_decomposition (docs/RESULTS.md), fractions of the dp step; present only where it was measured.
  struct Decomposition {
    double loss = 0, dilation = 0, tail = 0, skew = 0, residual = 0;
    bool adds_up = false;
  };
  std::optional<Decomposition> decomposition;
  std::string decomposition_not_measured;  // why not, where the file says so
  // Median of each rank's step_ms[] (ms), in rank order; empty when the phase did not run.
  std::vector<double> solo_rank_step_ms, dp_rank_step_ms;
  // gpus_sweep (schema 3): the scaling curve, one point per size k; empty without --gpus-sweep.
  struct SweepFigures {
    int gpus = 0, groups_at_once = 1;
    std::string link;  // the first group's weakest link; "" at k = 1
    bool measured = false;
    std::optional<double> step_ms_p50, units_per_s_total, units_per_s_per_gpu, efficiency, exposed_comm_ms,
        busbw_gbps;
  };
  std::vector<SweepFigures> sweep;
  bool sweep_concurrent = false;
};

// One record of a bandwidth file's results[]: the bus bandwidth at one message size.
struct BandwidthPoint {
  std::string op, placement;  // placement "out_of_place" | "in_place"
  double size_bytes = 0, busbw_gbps = 0;
};

// The fields of a `scalebench bandwidth --json` file (schema 1): peak bus bandwidth per collective.
struct BandwidthSummary {
  std::string dtype, backend;
  std::vector<std::pair<std::string, double>> peak_busbw_gbps;  // by name (JSON objects are read sorted)
  std::vector<BandwidthPoint> points;                           // results[], in file order
};

struct ResultFile {
  std::string path;  // as given on the command line; names the file in every error
  ResultKind kind = ResultKind::kRun;
  std::string device_name, transport;  // transport "" when the file has none (one rank)
  std::string emulate = "none";         // --emulate of the run: none, host, socket
  int nranks = 0;
  std::string variant;  // "max batch" for a suite's run at the max batch (its label says so); "" otherwise
  RunSummary run;
  BandwidthSummary bandwidth;
  std::string label;  // set by assign_labels
};

// Validates schema_version, command and every field used; throws UsageError "PATH: ..." naming the field.
ResultFile parse_result_file(const std::string& path, const std::string& text);
// Reads and parses PATH; an unreadable file is a UsageError too.
ResultFile load_result_file(const std::string& path);
// Every result PATH holds: one for a run or bandwidth file; a suite workload file's training runs (reference
// batch, max batch); for a suite.json, those of the workload files its last run wrote, read from beside it.
std::vector<ResultFile> load_result_files(const std::string& path);

// "<GPU name> x<nranks> <transport>", " emulated-host"/" emulated-socket" under --emulate, plus
// " bf16-wire" (bf16 all-reduce) and " no-overlap" for run files.
std::string default_label(const ResultFile& file);
// Labels every file: `overrides` (path -> label, a path may also be given by its file name) or the default.
// Files with the same label share a column when their rows differ (different workloads); the k-th file whose
// label and row collide with an earlier one becomes "LABEL (k)". An override naming no file is a UsageError.
void assign_labels(std::vector<ResultFile>& files, const std::map<std::string, std::string>& overrides);

// The cell of the throughput table: dp units/s total when dp ran, else solo's.
std::optional<double> headline_throughput(const RunSummary& run);
// value / baseline; none when either is missing or the baseline is not positive.
std::optional<double> ratio_to(std::optional<double> value, std::optional<double> baseline);

struct ComparisonModel {
  std::vector<ResultFile> files;
  std::vector<std::string> run_labels;  // columns of the training tables, in order of first appearance
  std::vector<std::string> rows;        // workloads, in order of first appearance
  std::map<std::string, std::string> row_units;
  std::map<std::pair<std::string, std::string>, size_t> run_cells;  // (workload, label) -> files index
  std::string baseline;                                              // one of run_labels; "" without runs
  std::vector<std::string> bandwidth_labels, ops;
  std::map<std::pair<std::string, std::string>, double> peak_busbw;  // (op, label) -> GB/s
  std::map<std::string, size_t> bandwidth_files;                     // label -> files index
};

// Files must be labelled. `baseline` "" picks the first run column; an unknown one is a UsageError.
ComparisonModel build_comparison(std::vector<ResultFile> files, const std::string& baseline);

struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<bool> right_aligned;  // per column
  std::vector<std::vector<std::string>> rows;
};

// Throughput, ratios to the baseline, scaling efficiency, exposed communication, then peak busbw.
std::vector<Table> comparison_tables(const ComparisonModel& model);
// One row per workload x label (and per collective x label for bandwidth files); docs/RESULTS.md.
std::string comparison_csv(const ComparisonModel& model);
// One run file: the phases, the derived numbers, the buckets and the dp timeline (and the scaling curve of a
// --gpus-sweep).
std::vector<Table> run_report_tables(const ResultFile& file);
// A --gpus-sweep's curve as a table: k, link, units/s total and per GPU, E(k), exposed communication, busbw.
Table sweep_table(const ResultFile& file);

// Printers: console (`#` title lines, aligned columns) and GitHub Markdown tables.
std::string tables_console(const std::vector<Table>& tables);
std::string tables_markdown(const std::vector<Table>& tables);

}  // namespace sb
