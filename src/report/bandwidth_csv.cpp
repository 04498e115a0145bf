// CSV printer of `scalebench bandwidth`: the scalar fields of the JSON records (not the per-iteration
// samples), one row per size per measured placement, for spreadsheets and pandas. An unchecked #wrong is
// an empty cell, as pandas reads a missing value.
#include <string>

#include "scalebench/report.h"
#include "src/report/bandwidth_fields.h"
#include "src/report/csv_text.h"

namespace sb {
namespace {

constexpr const char* kHeader =
    "op,size_bytes,count,dtype,redop,placement,time_us_p50,time_us_p99,time_us_min,time_us_max,"
    "time_us_mean,time_us_cv,algbw_gbps,busbw_gbps,wrong,transport,emulate,schema_version";

}  // namespace

std::string bandwidth_report_csv(const BandwidthReport& report) {
  std::string text = std::string(kHeader) + "\n";
  for (const SizeResult& result : report.results) {
    for (const detail::PlacementView& view : detail::placements(result)) {
      const PlacementResult& p = view.result;
      if (!p.measured) continue;
      // Every other text field is a fixed identifier (no commas or quotes), so only the transport is quoted.
      text += std::string(collective_name(result.op)) + "," + std::to_string(result.size_bytes) + "," +
              std::to_string(result.count) + "," + dtype_name(result.dtype) + "," +
              detail::redop_label(result.op, result.reduce) + "," + view.key + "," +
              csv_number(p.time_us.p50) + "," + csv_number(p.time_us.p99) + "," + csv_number(p.time_us.min) + "," +
              csv_number(p.time_us.max) + "," + csv_number(p.time_us.mean) + "," + csv_number(p.time_us.cv) + "," +
              csv_number(p.algbw_gbps) + "," + csv_number(p.busbw_gbps) + "," +
              (p.wrong < 0 ? std::string() : std::to_string(p.wrong)) + "," + csv_field(report.transport) + "," +
              report.emulate + "," + std::to_string(kCsvSchemaVersion) + "\n";
    }
  }
  return text;
}

}  // namespace sb
