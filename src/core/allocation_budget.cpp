// The allocation count and its ceiling (include/scalebench/allocation_budget.h).
#include "scalebench/allocation_budget.h"

#include <atomic>

#include "scalebench/byte_text.h"
#include "scalebench/error.h"

namespace sb {
namespace {

std::atomic<uint64_t> budget{0};
std::atomic<uint64_t> allocated{0};

}  // namespace

void set_allocation_budget(uint64_t bytes) { budget = bytes; }
uint64_t allocation_budget() { return budget; }
uint64_t allocated_bytes() { return allocated; }

void charge_allocation(uint64_t bytes, const std::string& what) {
  const uint64_t ceiling = budget;
  uint64_t before = allocated.load();
  do {
    if (ceiling != 0 && before + bytes > ceiling) {
      throw OutOfMemory("out of memory: " + what + " needs " + byte_text(bytes) + " with " + byte_text(before) +
                           " already allocated, past the " + byte_text(ceiling) + " budget");
    }
  } while (!allocated.compare_exchange_weak(before, before + bytes));
}

void refund_allocation(uint64_t bytes) { allocated -= bytes; }

}  // namespace sb
