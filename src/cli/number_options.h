// Numeric flags checked before CLI11 converts them (issue 27, finding 1; issue 28, item 3): a value must be a
// finite number (or a whole number) inside the option's range, else a usage error naming the flag, the value
// and the range ("--timeout: nan is not a finite number from 0.1 to 604800"). CLI11's own conversions accept
// `nan`, wrap `-1` into an unsigned 18446744073709551615 and print ranges as 309-digit numbers.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace sb {

// The ranges of the flags: wide enough for any real use, narrow enough that the arithmetic on them is exact.
constexpr double kMaxTimeoutSeconds = 604800;  // one week: --timeout, --min-time
constexpr int64_t kMaxIterations = 1000000;    // steps, warm-up steps, bandwidth iterations
constexpr int64_t kMaxBatch = 1000000000;      // per-rank batch
constexpr int64_t kMaxRank = 1000000;          // a rank number (bandwidth --root)
constexpr double kMaxLearningRate = 100;
constexpr double kMaxMemoryGib = 1048576;  // 1 PiB: maxbatch/suite --memory

// A decimal integer from `min` to `max` (no exponent, no fraction, no wrap-around).
CLI::Validator whole_number(int64_t min, int64_t max);
// The same for unsigned options such as --seed (up to 2^64 - 1; a minus sign is refused).
CLI::Validator unsigned_number(uint64_t max);
// A finite real number from `min` to `max`; `min_open`: the minimum itself is excluded ("above 0").
CLI::Validator finite_number(double min, double max, bool min_open = false);

// --gpus-sweep's value: a list of GPU counts or auto (include/scalebench/gpus_sweep.h names what is wrong).
CLI::Validator gpus_sweep_list();

// "1000000", "0.1", "1e+06" -> the shortest text that reads back as the same value.
std::string number_text(double value);

}  // namespace sb
