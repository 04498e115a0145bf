// Printers of the result models (STYLE.md rule 13): one model, several printers, rank 0 prints.
// `scalebench bandwidth` prints a console table like nccl-tests' (header, one table per collective,
// footer) and optionally writes JSON and CSV (--json/--csv, "-" for stdout).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scalebench/bandwidth.h"
#include "scalebench/max_batch.h"
#include "scalebench/suite.h"
#include "scalebench/result.h"

namespace sb {

// Console: `#` header (versions, config, one line per rank's device), one table per collective with
// a units row, `#` footer (out-of-bounds values, peak bus bandwidth per collective, status).
void print_bandwidth_header(std::FILE* out, const BandwidthReport& report);
void print_bandwidth_table(std::FILE* out, const BandwidthReport& report, CollectiveOp op);
void print_bandwidth_footer(std::FILE* out, const BandwidthReport& report);
// All three, with a table for every collective of the report, in the order they ran.
void print_bandwidth_report(std::FILE* out, const BandwidthReport& report);

// schema_version 1: context, config, one record per size per measured placement, summary.
nlohmann::json bandwidth_report_json(const BandwidthReport& report);
// A header row and one row per JSON record, same scalar fields (no per-iteration samples).
std::string bandwidth_report_csv(const BandwidthReport& report);

// `scalebench run`: a `#` header (versions, workload, precision, batch, ranks, devices, transport, buckets),
// then each phase's lines as it finishes (the per-rank table after solo), then a `#` footer: scaling
// efficiency, exposed communication, overlap, bus bandwidth in training and alone, the check, the status
// and a one-line reproducer.
void print_training_header(std::FILE* out, const TrainingReport& report);
void print_training_phase(std::FILE* out, const TrainingReport& report, const std::string& phase);
void print_training_footer(std::FILE* out, const TrainingReport& report);
// `mpirun -np N <argv>` (plain argv for one rank), each argument shell-quoted when it needs it.
std::string reproducer_command(const TrainingReport& report);

// schema_version 2 (docs/RESULTS.md): context, config, workload, phases with every rank's samples, derived
// numbers at the top level.
nlohmann::json training_report_json(const TrainingReport& report);
// One header row and one data row: the configuration and the derived numbers.
std::string training_report_csv(const TrainingReport& report);
// The dp phase's timed steps as a Chrome / Perfetto trace ("traceEvents"): a process per rank, a compute track
// (forward, backward, optimizer) and a communication track (each bucket's all-reduce), in microseconds.
nlohmann::json training_trace_json(const TrainingReport& report);

// `scalebench maxbatch`: `#` lines for the measured memory and the prediction with its bytes by category, a
// row per verification attempt, and the answer; a --memory answer is labelled a prediction.
void print_max_batch(std::FILE* out, const MaxBatchResult& result, const std::string& device_name);
// "3,456 sentence pairs (96,768 tokens)": a batch in its batch unit, and in the workload's unit when they differ.
std::string max_batch_in_units(const MaxBatchResult& result, int64_t batch);
// One workload's result (docs/RESULTS.md); `maxbatch --json` writes {"kind": "maxbatch", "results": [...]}.
nlohmann::json max_batch_json(const MaxBatchResult& result);

// `scalebench suite`: the guide's two tables as Markdown (max batch per GPU, predicted and verified; training
// throughput alone and on all ranks at the reference and the max batch), then the rows' failures.
void print_suite_tables(std::FILE* out, const std::vector<SuiteRow>& rows, const std::string& device_name,
                        uint64_t device_bytes, int nranks);
// One workload's file: its maxbatch result and both training runs (schema 2 run documents, or null).
nlohmann::json suite_row_json(const SuiteRow& row);

// Writes `text` to `path`, or to stdout when path is "-". Throws RuntimeFailure naming the path.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace sb
