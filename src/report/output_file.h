// What write_text_file (include/scalebench/report.h) knows about the outputs of this process, beyond the path:
// which paths were free when the run started (their first write must not replace a file that appeared since),
// and the rules every write follows: only regular files are replaced, never a symlink, device or FIFO.
#pragma once

#include <optional>
#include <string>

namespace sb {

// The path did not exist at start-up and --force was not given: its first write creates it only if it still
// does not exist (renameat2 RENAME_NOREPLACE, or link where that is not supported).
void claim_new_output(const std::string& path);

// Why `path` cannot be an output ("a symbolic link", "a FIFO", ...), or nullopt when it is absent or a
// regular file. Read with lstat: a symlink is refused itself, whatever it points to.
std::optional<std::string> not_a_regular_file(const std::string& path);

// Removes `path`.tmp.<pid> files beside `path` whose process is gone (a run killed while writing).
void remove_stale_temporaries(const std::string& path);

}  // namespace sb
