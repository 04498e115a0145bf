// PyTorch's memory for `plan --framework pytorch`: per workload and mode (eager, compiled), fixed bytes plus bytes
// per batch unit, a straight line through the peak memory PyTorch's own training of the same model reached at two
// or more batches on a GPU (scripts/pytorch_memory.py fit, run by `scripts/gpu_check.sh planmem`), stored in
// src/plan/data/pytorch_memory.json with the GPU, torch version, allocator setting and date. A workload with no
// stored measurement has no PyTorch prediction: plan says so instead of guessing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sb {

struct PytorchMemoryPoint {
  int64_t batch = 0;
  double peak_allocated_bytes = 0;
};

struct PytorchMemoryFit {
  std::string workload, mode, precision;  // mode: "eager" or "compiled"; precision: the autocast dtype measured
  double fixed_bytes = 0, bytes_per_unit = 0;
  std::vector<PytorchMemoryPoint> points;  // what the line was fitted on
  std::string gpu, torch, allocator, date, command;
};

struct PytorchMemoryTable {
  std::vector<PytorchMemoryFit> fits;
  // The fits of `workload` (eager first); empty when none is stored.
  std::vector<const PytorchMemoryFit*> of(const std::string& workload) const;
};

// The least-squares line through the points (bytes = fixed + per_unit x batch); UsageError below two batches.
void fit_line(const std::vector<PytorchMemoryPoint>& points, double& fixed_bytes, double& bytes_per_unit);

// Parses the document and checks every field, and that each stored line is the fit of its own points (so no
// figure is edited by hand); `origin` names it in errors.
PytorchMemoryTable parse_pytorch_memory(const std::string& text, const std::string& origin = "pytorch_memory.json");
const PytorchMemoryTable& builtin_pytorch_memory();  // src/plan/data/pytorch_memory.json, compiled in
PytorchMemoryTable load_pytorch_memory(const std::string& path);  // "": the built-in table

// The largest batch whose line stays within `capacity_bytes` (0 when not even batch 1 fits).
int64_t pytorch_max_batch(const PytorchMemoryFit& fit, uint64_t capacity_bytes);

// The sentence every PyTorch answer without a measurement gives.
std::string no_pytorch_measurement(const std::string& workload);

}  // namespace sb
