// Reading and applying PyTorch's measured memory lines (src/plan/pytorch_memory.h).
#include "src/plan/pytorch_memory.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "scalebench/error.h"
#include "src/plan/json_fields.h"

namespace sb {

const std::string& builtin_pytorch_memory_json();  // generated from src/plan/data/pytorch_memory.json

namespace {

// A stored line may differ from the refit of its points by JSON's decimal printing only.
constexpr double kRefitTolerance = 1e-6;

PytorchMemoryFit read_fit(const detail::JsonFields& row) {
  PytorchMemoryFit fit;
  fit.workload = row.string("workload");
  fit.mode = row.string("mode");
  if (fit.mode != "eager" && fit.mode != "compiled") row.fail("\"" + row.where("mode") + "\" must be eager or compiled");
  fit.precision = row.string("precision");
  fit.fixed_bytes = row.number("fixed_bytes");
  fit.bytes_per_unit = row.positive("bytes_per_unit");
  for (const detail::JsonFields& point : row.array_of_objects("points")) {
    fit.points.push_back({point.integer("batch"), point.positive("peak_allocated_bytes")});
  }
  double fixed = 0, per_unit = 0;
  fit_line(fit.points, fixed, per_unit);
  const double scale = fit.points.back().peak_allocated_bytes;
  if (std::abs(fixed - fit.fixed_bytes) > kRefitTolerance * scale ||
      std::abs(per_unit - fit.bytes_per_unit) > kRefitTolerance * scale) {
    row.fail("\"" + row.where("fixed_bytes") + "\" and bytes_per_unit are not the fit of its points");
  }
  fit.gpu = row.string("gpu");
  fit.torch = row.string("torch");
  fit.allocator = row.string("allocator");
  fit.date = row.string("date");
  fit.command = row.string("command");
  return fit;
}

}  // namespace

void fit_line(const std::vector<PytorchMemoryPoint>& points, double& fixed_bytes, double& bytes_per_unit) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const PytorchMemoryPoint& p : points) {
    const auto x = static_cast<double>(p.batch);
    n += 1, sx += x, sy += p.peak_allocated_bytes, sxx += x * x, sxy += x * p.peak_allocated_bytes;
  }
  const double spread = n * sxx - sx * sx;
  if (points.size() < 2 || spread <= 0) throw UsageError("a PyTorch memory line needs points at two or more batches");
  bytes_per_unit = (n * sxy - sx * sy) / spread;
  fixed_bytes = (sy - bytes_per_unit * sx) / n;
}

std::vector<const PytorchMemoryFit*> PytorchMemoryTable::of(const std::string& workload) const {
  std::vector<const PytorchMemoryFit*> found;
  for (const char* mode : {"eager", "compiled"}) {
    for (const PytorchMemoryFit& fit : fits) {
      if (fit.workload == workload && fit.mode == mode) found.push_back(&fit);
    }
  }
  return found;
}

PytorchMemoryTable parse_pytorch_memory(const std::string& text, const std::string& origin) {
  const nlohmann::json doc = detail::parse_json_document(text, origin);
  const detail::JsonFields top(origin, doc);
  if (top.integer("schema_version") != 1) top.fail("schema_version must be 1");
  PytorchMemoryTable table;
  for (const detail::JsonFields& row : top.array_of_objects("measurements")) {
    table.fits.push_back(read_fit(row));
    for (size_t i = 0; i + 1 < table.fits.size(); ++i) {
      if (table.fits[i].workload == table.fits.back().workload && table.fits[i].mode == table.fits.back().mode) {
        row.fail(table.fits.back().workload + " " + table.fits.back().mode + " is measured twice");
      }
    }
  }
  return table;
}

const PytorchMemoryTable& builtin_pytorch_memory() {
  static const PytorchMemoryTable table = parse_pytorch_memory(builtin_pytorch_memory_json());
  return table;
}

PytorchMemoryTable load_pytorch_memory(const std::string& path) {
  if (path.empty()) return builtin_pytorch_memory();
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read PyTorch memory file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_pytorch_memory(text.str(), path);
}

int64_t pytorch_max_batch(const PytorchMemoryFit& fit, uint64_t capacity_bytes) {
  const double room = static_cast<double>(capacity_bytes) - fit.fixed_bytes;
  return room < fit.bytes_per_unit ? 0 : static_cast<int64_t>(std::floor(room / fit.bytes_per_unit));
}

std::string no_pytorch_measurement(const std::string& workload) {
  return "no PyTorch memory measurement is stored for " + workload +
         " (src/plan/data/pytorch_memory.json; `scripts/gpu_check.sh planmem` measures it on a GPU)";
}

}  // namespace sb
