// Helpers every ProcessGroup gets from its primitives (include/scalebench/process_group.h).
#include <cstring>

#include "scalebench/process_group.h"

namespace sb {

std::vector<std::string> ProcessGroup::allgather_strings(const std::string& mine) {
  int64_t length = static_cast<int64_t>(mine.size());
  const int64_t longest = max_across_ranks(length);
  std::vector<char> padded(static_cast<size_t>(longest) + 1, '\0');
  std::memcpy(padded.data(), mine.data(), mine.size());
  std::vector<char> all(padded.size() * static_cast<size_t>(size()));
  allgather(padded.data(), all.data(), padded.size());
  std::vector<std::string> result;
  for (int r = 0; r < size(); ++r) result.emplace_back(all.data() + static_cast<size_t>(r) * padded.size());
  return result;
}

int64_t ProcessGroup::max_across_ranks(int64_t value) {
  allreduce_max(&value, 1);
  return value;
}

}  // namespace sb
