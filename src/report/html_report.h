// `scalebench compare --html` and `scalebench report --html`: one self-contained HTML page (inline CSS and
// inline SVG from svg_chart.h, no scripts, no fonts, no URLs) built from the comparison model or one run file,
// with the same tables as --markdown below the charts. docs/REPORTS.md shows what each chart holds.
#pragma once

#include <string>
#include <vector>

#include "src/report/compare.h"

namespace sb {

// Tables as HTML <table> elements (cells escaped, numbers right-aligned as in the console form).
std::string tables_html(const std::vector<Table>& tables);
// Normalized and absolute throughput, scaling efficiency (bars; E vs GPU count as lines when the files hold
// several GPU counts of one GPU and transport), busbw vs message size per collective, then every table.
std::string comparison_html(const ComparisonModel& model);
// Per-rank step time split into compute and exposed communication, the dp bucket timeline, then the tables.
std::string run_report_html(const ResultFile& file);

}  // namespace sb
