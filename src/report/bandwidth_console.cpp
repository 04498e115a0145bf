// Console printer of `scalebench bandwidth`, laid out like nccl-tests (ECOSYSTEM.md 5.1): a `#` header
// with versions, config and one line per rank's device; per collective a fixed-column table with
// out-of-place then in-place time/algbw/busbw/#wrong and a units row; a `#` footer with nccl-tests'
// "# Avg bus bandwidth" line. A data row splits into nccl-tests' columns at nccl-tests' positions (size, count,
// type, redop, root, then 4 per placement), so their log parsers read it; the p99 of each placement's time
// (their -I idea) follows as two extra columns at the end. Within 120 columns.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "scalebench/emulation.h"
#include "scalebench/report.h"
#include "src/report/bandwidth_fields.h"

#ifndef SB_VERSION
#define SB_VERSION "unknown"
#endif

namespace sb {
namespace {

// Column widths of a data row; the first column loses one character to the `#` of header rows.
constexpr int kSizeWidth = 11;
constexpr int kCountWidth = 11;
constexpr int kTypeWidth = 5;
constexpr int kRedopWidth = 6;   // "none" for collectives that do not reduce, as nccl-tests prints
constexpr int kRootWidth = 5;    // -1 for collectives without a root, as nccl-tests prints
constexpr int kTimeWidth = 7;    // us
constexpr int kRateWidth = 7;    // GB/s
constexpr int kWrongWidth = 5;
constexpr int kPlacementWidth = (kTimeWidth + 1) + 2 * (kRateWidth + 1) + kWrongWidth + 1;
constexpr int kP99Width = 2 * (kTimeWidth + 1);

std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* pattern, ...) {
  char buffer[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(buffer, sizeof buffer, pattern, args);
  va_end(args);
  return buffer;
}

// nccl-tests' precision: more decimals for short times, where they matter.
std::string format_time_us(double us) {
  if (us < 100) return format("%.2f", us);
  if (us < 10000) return format("%.1f", us);
  return format("%.0f", us);
}

// "1024 B" is printed as "1 KiB"; sizes that are not whole units get two decimals.
std::string format_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (value == static_cast<double>(static_cast<uint64_t>(value))) return format("%.0f %s", value, kUnits[unit]);
  return format("%.2f %s", value, kUnits[unit]);
}

// "2147483648 B (2 GiB)": the exact count, then the binary unit users type (-b 1M, -e 2G).
std::string bytes_with_units(uint64_t bytes) {
  const std::string exact = std::to_string(bytes) + " B";
  return bytes < 1024 ? exact : exact + " (" + format_bytes(bytes) + ")";
}

const char* on_off(bool value) { return value ? "on" : "off"; }

std::string or_unknown(const std::string& text) { return text.empty() ? "unknown" : text; }

std::string placement_cells(const PlacementResult& result) {
  if (!result.measured) {
    return format(" %*s %*s %*s %*s", kTimeWidth, "-", kRateWidth, "-", kRateWidth, "-", kWrongWidth, "-");
  }
  const std::string wrong = result.wrong < 0 ? "N/A" : std::to_string(result.wrong);
  return format(" %*s %*.2f %*.2f %*s", kTimeWidth, format_time_us(result.time_us.p50).c_str(), kRateWidth,
                result.algbw_gbps, kRateWidth, result.busbw_gbps, kWrongWidth, wrong.c_str());
}

std::string p99_cell(const PlacementResult& result) {
  return format(" %*s", kTimeWidth, result.measured ? format_time_us(result.time_us.p99).c_str() : "-");
}

std::string placement_heading(const char* time, const char* algbw, const char* busbw, const char* wrong) {
  return format(" %*s %*s %*s %*s", kTimeWidth, time, kRateWidth, algbw, kRateWidth, busbw, kWrongWidth, wrong);
}

// Header rows are padded to fixed columns; trailing blanks would only upset diffs and editors.
void print_row(std::FILE* out, std::string row) {
  row.erase(row.find_last_not_of(' ') + 1);
  std::fprintf(out, "%s\n", row.c_str());
}

std::string centered(const std::string& text, int width) {
  const int left = std::max(0, (width - static_cast<int>(text.size())) / 2);
  const int right = std::max(0, width - left - static_cast<int>(text.size()));
  return std::string(left, ' ') + text + std::string(right, ' ');
}

const SizeResult* peak_result(const BandwidthReport& report, CollectiveOp op, double peak) {
  for (const SizeResult& result : report.results) {
    if (result.op != op) continue;
    for (const detail::PlacementView& placement : detail::placements(result)) {
      if (placement.result.measured && placement.result.busbw_gbps == peak) return &result;
    }
  }
  return nullptr;
}

}  // namespace

void print_bandwidth_header(std::FILE* out, const BandwidthReport& report) {
  const BandwidthOptions& options = report.options;
  std::fprintf(out, "# scalebench %s bandwidth\n", SB_VERSION);
  std::fprintf(out, "# backend: %s (%s)   transport: %s   ranks: %d\n", or_unknown(report.backend).c_str(),
               or_unknown(report.library_version).c_str(), or_unknown(report.transport).c_str(),
               report.nranks);
  if (report.emulate != "none") {
    std::fprintf(out, "# EMULATED: %s; the transport above is what NCCL used, not this machine's fabric\n",
                 emulation_label(parse_emulation(report.emulate)).c_str());
  }
  if (!report.mpi_version.empty() || !report.cuda_runtime_version.empty()) {
    std::fprintf(out, "# mpi: %s   cuda runtime: %s   cuda driver: %s\n",
                 report.mpi_version.empty() ? "none" : report.mpi_version.c_str(),
                 report.cuda_runtime_version.empty() ? "none" : report.cuda_runtime_version.c_str(),
                 report.cuda_driver_version.empty() ? "none" : report.cuda_driver_version.c_str());
  }
  std::fprintf(out, "# dtype: %s   redop: %s   root: %d\n", detail::dtype_list(options).c_str(),
               detail::redop_list(options).c_str(), options.root);
  std::fprintf(out, "# sizes: min %s   max %s   factor %g\n", bytes_with_units(options.min_bytes).c_str(),
               bytes_with_units(options.max_bytes).c_str(), options.factor);
  std::fprintf(out,
               "# warmup iters: %d   iters: %d   timing: %s\n# out-of-place: %s   in-place: %s   graph: %s   "
               "register: %s   check: %s\n",
               options.warmup_iters, options.iters, options.aggregate_timing ? "aggregate" : "per-iteration",
               on_off(options.run_out_of_place), on_off(options.run_in_place), on_off(options.graph),
               buffer_registration_name(options.registration), on_off(options.check));
  if (!report.started_at.empty()) std::fprintf(out, "# started at: %s\n", report.started_at.c_str());
  std::fprintf(out, "#\n# Using devices\n");
  for (const RankDevice& rank : report.devices) {
    const DeviceDescription& device = rank.device;
    const std::string bus = device.bus_id.empty() ? device_kind_name(device.kind) : device.bus_id;
    std::fprintf(out, "#  Rank %2d Pid %6d on %10s device %2d [%s] %s\n", rank.rank, rank.pid,
                 rank.host.c_str(), device.index, bus.c_str(), device.name.c_str());
  }
}

void print_bandwidth_table(std::FILE* out, const BandwidthReport& report, CollectiveOp op) {
  const bool rooted = op == CollectiveOp::kBroadcast;
  const int left_width = kSizeWidth + 1 + kCountWidth + 1 + kTypeWidth + 1 + kRedopWidth + 1 + kRootWidth;
  std::fprintf(out, "#\n# %s\n", collective_name(op));
  print_row(out, "#" + std::string(left_width - 1, ' ') + centered("out-of-place", kPlacementWidth) +
                     centered("in-place", kPlacementWidth) + centered("p99 time", kP99Width));
  const std::string names = placement_heading("time", "algbw", "busbw", "#wrong");
  const std::string units = placement_heading("(us)", "(GB/s)", "(GB/s)", "");
  print_row(out, format("#%*s %*s %*s %*s %*s", kSizeWidth - 1, "size", kCountWidth, "count", kTypeWidth, "type",
                        kRedopWidth, "redop", kRootWidth, "root") +
                     names + names + format(" %*s %*s", kTimeWidth, "p99-oop", kTimeWidth, "p99-ip"));
  print_row(out, format("#%*s %*s %*s %*s %*s", kSizeWidth - 1, "(B)", kCountWidth, "(elements)", kTypeWidth, "",
                        kRedopWidth, "", kRootWidth, "") +
                     units + units + format(" %*s %*s", kTimeWidth, "(us)", kTimeWidth, "(us)"));

  bool any = false;
  for (const SizeResult& result : report.results) {
    if (result.op != op) continue;
    any = true;
    std::fprintf(out, "%*llu %*llu %*s %*s %*d%s%s%s%s\n", kSizeWidth,
                 static_cast<unsigned long long>(result.size_bytes), kCountWidth,
                 static_cast<unsigned long long>(result.count), kTypeWidth, dtype_name(result.dtype),
                 kRedopWidth, detail::redop_label(op, result.reduce), kRootWidth,
                 rooted ? report.options.root : -1, placement_cells(result.out_of_place).c_str(),
                 placement_cells(result.in_place).c_str(), p99_cell(result.out_of_place).c_str(),
                 p99_cell(result.in_place).c_str());
  }
  if (!any) std::fprintf(out, "# (no sizes measured)\n");
}

void print_bandwidth_footer(std::FILE* out, const BandwidthReport& report) {
  const int64_t wrong = report.total_wrong();
  std::fprintf(out, "#\n");
  if (wrong < 0) {
    std::fprintf(out, "# Out of bounds values : not checked\n");
  } else {
    std::fprintf(out, "# Out of bounds values : %lld %s\n", static_cast<long long>(wrong),
                 wrong == 0 ? "OK" : "FAILED");
  }
  // nccl-tests' summary line for log parsers: the mean busbw over every measured size and placement.
  double busbw_sum = 0;
  int measured = 0;
  for (const SizeResult& result : report.results) {
    for (const detail::PlacementView& view : detail::placements(result)) {
      if (!view.result.measured) continue;
      busbw_sum += view.result.busbw_gbps;
      ++measured;
    }
  }
  std::fprintf(out, "# Avg bus bandwidth    : %g\n", measured > 0 ? busbw_sum / measured : 0.0);
  if (report.options.registration != BufferRegistration::kNone) {
    std::fprintf(out, "# Buffers registered   : %s%s%s\n", buffer_registration_name(report.registration_granted),
                 report.registration_why_less.empty() ? "" : " (",
                 report.registration_why_less.empty() ? "" : (report.registration_why_less + ")").c_str());
  }
  if (report.nranks == 1) {
    // busbw = algbw x 2(n-1)/n (or (n-1)/n) is 0 on one rank: no byte crosses a bus. Say so instead of a peak.
    std::fprintf(out, "# Peak bus bandwidth   : - (one rank: nothing crosses a bus, busbw is 0 by definition; "
                      "algbw is a memory copy; start 2 or more ranks)\n");
    if (report.status != "ok") std::fprintf(out, "# status: %s: %s\n", report.status.c_str(), report.error.c_str());
    return;
  }
  const std::vector<CollectiveOp> ops = detail::report_ops(report);
  int name_width = 0;
  for (CollectiveOp op : ops) {
    name_width = std::max(name_width, static_cast<int>(std::strlen(collective_name(op))));
  }
  for (CollectiveOp op : ops) {
    const double peak = report.peak_busbw_gbps(op);
    const SizeResult* at = peak_result(report, op, peak);
    if (at == nullptr) {
      std::fprintf(out, "# Peak bus bandwidth %-*s : - (nothing measured)\n", name_width, collective_name(op));
      continue;
    }
    std::fprintf(out, "# Peak bus bandwidth %-*s : %.2f GB/s at %s\n", name_width, collective_name(op), peak,
                 bytes_with_units(at->size_bytes).c_str());
  }
  if (report.status != "ok") {
    std::fprintf(out, "# status: %s: %s\n", report.status.c_str(), report.error.c_str());
  }
}

void print_bandwidth_report(std::FILE* out, const BandwidthReport& report) {
  print_bandwidth_header(out, report);
  for (CollectiveOp op : detail::report_ops(report)) print_bandwidth_table(out, report, op);
  print_bandwidth_footer(out, report);
  std::fflush(out);
}

}  // namespace sb
