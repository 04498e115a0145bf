// What the executors allocate for a replica (arena, optimizer state, communication buffers), counted, with an
// optional ceiling. `maxbatch --memory GiB` answers "would this train on a smaller card?" by setting the
// ceiling: an allocation past it fails the way cudaMalloc fails on that card (RuntimeFailure naming the bytes),
// so the next batch up really fails to allocate. One rank drives one device, so the count is per process.
#pragma once

#include <cstdint>
#include <string>

namespace sb {

void set_allocation_budget(uint64_t bytes);  // 0: no ceiling (the default)
uint64_t allocation_budget();
uint64_t allocated_bytes();                  // charged and not yet refunded

// Call before allocating: throws RuntimeFailure ("out of memory: <what> needs ... ") when the charge would pass
// the ceiling, and charges nothing then.
void charge_allocation(uint64_t bytes, const std::string& what);
void refund_allocation(uint64_t bytes);

// Charges on construction and refunds on destruction: for allocations whose owner has a destructor anyway.
class AllocationCharge {
 public:
  AllocationCharge() = default;
  AllocationCharge(uint64_t bytes, const std::string& what) : bytes_(bytes) { charge_allocation(bytes, what); }
  ~AllocationCharge() { refund_allocation(bytes_); }
  AllocationCharge(AllocationCharge&& other) noexcept : bytes_(other.bytes_) { other.bytes_ = 0; }
  AllocationCharge& operator=(AllocationCharge&& other) noexcept {
    if (this != &other) {
      refund_allocation(bytes_);
      bytes_ = other.bytes_;
      other.bytes_ = 0;
    }
    return *this;
  }
  AllocationCharge(const AllocationCharge&) = delete;
  AllocationCharge& operator=(const AllocationCharge&) = delete;

 private:
  uint64_t bytes_ = 0;
};

}  // namespace sb
