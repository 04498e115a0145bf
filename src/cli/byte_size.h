// Byte sizes as users type them: "1M", "512K", "2G", "8MiB", "100" — binary multiples, as nccl-tests reads
// its -b/-e flags.
#pragma once

#include <cstdint>
#include <string>

namespace sb {

uint64_t parse_byte_size(const std::string& text);  // throws UsageError naming the text
std::string format_byte_size(uint64_t bytes);       // "1 KiB", "2 GiB", "1536 B"

}  // namespace sb
