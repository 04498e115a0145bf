// CPU executor entries of the greedy-decoding ops and the copy (src/engine/cpu_kernels_decode.h): each node's
// tensors bound to the sb::cpu kernel (src/cpu/decode.h) with the sizes the graph builder stored.
#include "src/engine/cpu_kernels_decode.h"

#include <cstring>
#include <map>

#include "src/cpu/decode.h"

namespace sb::detail {
namespace {

int64_t size_attr(const Node& node, const char* name) { return static_cast<int64_t>(node.attributes.at(name)); }

}  // namespace

const CpuKernelTable& decode_cpu_kernels() {
  static const CpuKernelTable table = {
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
      {"copy",
       [](CpuExecutor& e, const Node& n) {
         std::memmove(e.u8(n.outputs[0]), e.u8(n.inputs[0]), static_cast<size_t>(size_attr(n, "bytes")));
       }},
  };
  return table;
}

}  // namespace sb::detail
