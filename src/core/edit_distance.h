// Edit distance between two words: how "did you mean" messages (CLI options and subcommands, GPU names in plan's
// database) find the name a typo meant.
#pragma once

#include <cstddef>
#include <string>

namespace sb {

// Levenshtein distance: the fewest single-character inserts, deletes and substitutions that turn a into b.
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace sb
