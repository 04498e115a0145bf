// The pieces every CSV printer shares (run, bandwidth, maxbatch, compare; docs/RESULTS.md): RFC 4180 quoting,
// numbers without float noise, and the schema_version column each row ends with.
#pragma once

#include <optional>
#include <string>

namespace sb {

// Bumped when a CSV's columns change meaning or order; the last column of every row (header "schema_version").
constexpr int kCsvSchemaVersion = 1;
// compare's CSV: 2 since 2026-12-05 (the `strategy` column after `overlap`).
constexpr int kCompareCsvSchemaVersion = 2;

// A field quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text);
// 9 significant digits: 7.374, not 7.3740000000000006; integers up to 1e9 exact. Absent: an empty cell.
std::string csv_number(std::optional<double> value);

}  // namespace sb
