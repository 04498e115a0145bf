// Printers of the result models (STYLE.md rule 13): one model, several printers, rank 0 prints.
// `scalebench bandwidth` prints a console table like nccl-tests' (header, one table per collective,
// footer) and optionally writes JSON and CSV (--json/--csv, "-" for stdout).
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "scalebench/bandwidth.h"

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

// Writes `text` to `path`, or to stdout when path is "-". Throws RuntimeFailure naming the path.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace sb
