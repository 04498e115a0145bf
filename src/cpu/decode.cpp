// CPU reference of the greedy-decoding ops (src/cpu/decode.h).
#include "src/cpu/decode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::cpu {
namespace {

void check_sizes(const char* op, std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes) {
    if (s < 0) throw UsageError(std::string(op) + ": negative size " + std::to_string(s));
  }
}

}  // namespace

void argmax_rows(const float* x, int32_t* out, int64_t rows, int64_t cols) {
  check_sizes("argmax_rows", {rows, cols});
  if (cols < 1 && rows > 0) throw UsageError("argmax_rows: a row needs at least one column");
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c) {
      if (std::isnan(row[best])) break;
      if (std::isnan(row[c]) || row[c] > row[best]) best = c;
    }
    out[r] = static_cast<int32_t>(best);
  }
}

void write_at_counter(const void* src, void* dst, const int32_t* counter, int64_t outer, int64_t time,
                      int64_t inner, int64_t element_bytes, int64_t offset) {
  check_sizes("write_at_counter", {outer, time, inner, element_bytes});
  const int64_t t = static_cast<int64_t>(counter[0]) + offset;
  if (t < 0 || t >= time) return;
  const size_t row_bytes = static_cast<size_t>(inner * element_bytes);
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(static_cast<unsigned char*>(dst) + static_cast<size_t>((o * time + t) * inner * element_bytes),
                static_cast<const unsigned char*>(src) + static_cast<size_t>(o) * row_bytes, row_bytes);
  }
}

void fill_from_counter(const int32_t* counter, int32_t* out, int64_t n, int64_t offset) {
  check_sizes("fill_from_counter", {n});
  std::fill(out, out + n, static_cast<int32_t>(counter[0] + offset));
}

void update_counter(int32_t* counter, int64_t keep, int64_t add) {
  counter[0] = static_cast<int32_t>(keep * counter[0] + add);
}

void end_sentences(int32_t* ids, const int32_t* lengths, int64_t rows, int64_t time, int32_t eos, int32_t pad) {
  check_sizes("end_sentences", {rows, time});
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t length = std::clamp<int64_t>(lengths[r], 1, time);
    ids[r * time + length - 1] = eos;
    for (int64_t t = length; t < time; ++t) ids[r * time + t] = pad;
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

void bind_decode_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"argmax",
       [](CpuExecutor& e, const Node& n) {
         cpu::argmax_rows(e.f32(n.inputs[0]), e.i32(n.outputs[0]), size_attr(n, "rows"), size_attr(n, "cols"));
       }},
      {"write_at_counter",
       [](CpuExecutor& e, const Node& n) {
         cpu::write_at_counter(e.u8(n.inputs[0]), e.u8(n.outputs[0]), e.i32(n.inputs[1]), size_attr(n, "outer"),
                               size_attr(n, "time"), size_attr(n, "inner"), size_attr(n, "element_bytes"),
                               size_attr(n, "offset"));
       }},
      {"fill_from_counter",
       [](CpuExecutor& e, const Node& n) {
         cpu::fill_from_counter(e.i32(n.inputs[0]), e.i32(n.outputs[0]), size_attr(n, "n"), size_attr(n, "offset"));
       }},
      {"update_counter",
       [](CpuExecutor& e, const Node& n) {
         cpu::update_counter(e.i32(n.outputs[0]), size_attr(n, "keep"), size_attr(n, "add"));
       }},
      {"end_sentences",
       [](CpuExecutor& e, const Node& n) {
         cpu::end_sentences(e.i32(n.outputs[0]), e.i32(n.inputs[0]), size_attr(n, "rows"), size_attr(n, "time"),
                            static_cast<int32_t>(size_attr(n, "eos")), static_cast<int32_t>(size_attr(n, "pad")));
       }},
  });
}

}  // namespace sb::detail
