// Byte counts and counts as people read them in reports and messages.
#pragma once

#include <cstdint>
#include <string>

namespace sb {

std::string gib_text(uint64_t bytes);  // "11.58 GiB"
std::string mib_text(uint64_t bytes);  // "25.0 MiB"
std::string byte_text(uint64_t bytes);
std::string grouped_text(int64_t value);  // thousands separated: "3,456", "-12,000" // GiB from 1 GiB, MiB from 1 MiB, else KiB: "3.17 GiB", "12.4 MiB", "3.0 KiB"

}  // namespace sb
