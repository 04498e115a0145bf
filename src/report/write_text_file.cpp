// Writes a finished report (JSON, CSV) to a file or stdout. Failures are RuntimeFailure (exit 3) naming
// the path: the measurement is done by then, and the user needs to know which output was lost.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "scalebench/error.h"
#include "scalebench/report.h"

namespace sb {

void write_text_file(const std::string& path, const std::string& text) {
  const bool to_stdout = path == "-";
  std::FILE* file = to_stdout ? stdout : std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    throw RuntimeFailure("cannot open '" + path + "' for writing: " + std::strerror(errno));
  }
  const size_t written = std::fwrite(text.data(), 1, text.size(), file);
  const int write_errno = written == text.size() ? 0 : errno;
  // fclose flushes, so its result counts as much as fwrite's (a full disk shows up there).
  const bool closed = to_stdout ? std::fflush(file) == 0 : std::fclose(file) == 0;
  if (written != text.size() || !closed) {
    throw RuntimeFailure("cannot write '" + path + "': " + std::strerror(write_errno != 0 ? write_errno : errno));
  }
}

}  // namespace sb
