// CSV printer of `scalebench bandwidth`: the scalar fields of the JSON records (not the per-iteration
// samples), one row per size per measured placement, for spreadsheets and pandas. An unchecked #wrong is
// an empty cell, as pandas reads a missing value.
#include <charconv>
#include <string>

#include "scalebench/report.h"
#include "src/report/bandwidth_fields.h"

namespace sb {
namespace {

constexpr const char* kHeader =
    "op,size_bytes,count,dtype,redop,placement,time_us_p50,time_us_p99,time_us_min,time_us_max,"
    "time_us_mean,time_us_cv,algbw_gbps,busbw_gbps,wrong,transport,emulate";

// Shortest text that reads back as the same double: no precision lost, no 0.30000000000000004.
std::string number(double value) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, end) : std::string("nan");
}

// A transport label may list several ("P2P/CUMEM, SHM"): quoted as RFC 4180 wants.
std::string csv_text(const std::string& text) {
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

std::string bandwidth_report_csv(const BandwidthReport& report) {
  std::string text = std::string(kHeader) + "\n";
  for (const SizeResult& result : report.results) {
    for (const detail::PlacementView& view : detail::placements(result)) {
      const PlacementResult& p = view.result;
      if (!p.measured) continue;
      // Every other text field is a fixed identifier (no commas or quotes), so only the transport is quoted.
      text += std::string(collective_name(result.op)) + "," + std::to_string(result.size_bytes) + "," +
              std::to_string(result.count) + "," + dtype_name(report.options.dtype) + "," +
              detail::redop_label(result.op, report.options.reduce) + "," + view.key + "," +
              number(p.time_us.p50) + "," + number(p.time_us.p99) + "," + number(p.time_us.min) + "," +
              number(p.time_us.max) + "," + number(p.time_us.mean) + "," + number(p.time_us.cv) + "," +
              number(p.algbw_gbps) + "," + number(p.busbw_gbps) + "," +
              (p.wrong < 0 ? std::string() : std::to_string(p.wrong)) + "," + csv_text(report.transport) + "," +
              report.emulate + "\n";
    }
  }
  return text;
}

}  // namespace sb
