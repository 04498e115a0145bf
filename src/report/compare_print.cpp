// Printers of compare/report tables (src/report/compare.h): the console form (a `#` title line, a `#` header
// row, columns padded to their widest cell, numbers right-aligned) and GitHub Markdown.
#include <algorithm>

#include "src/report/compare.h"

namespace sb {
namespace {

std::string pad(const std::string& text, size_t width, bool right) {
  const std::string fill(width > text.size() ? width - text.size() : 0, ' ');
  return right ? fill + text : text + fill;
}

std::string markdown_cell(const std::string& text) {
  std::string escaped;
  for (char c : text) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
  return escaped;
}

}  // namespace

std::string tables_console(const std::vector<Table>& tables) {
  std::string text;
  for (size_t t = 0; t < tables.size(); ++t) {
    const Table& table = tables[t];
    std::vector<size_t> widths(table.header.size());
    for (size_t c = 0; c < widths.size(); ++c) {
      widths[c] = table.header[c].size();
      for (const auto& row : table.rows) widths[c] = std::max(widths[c], row[c].size());
    }
    auto line = [&](const std::string& lead, const std::vector<std::string>& cells) {
      std::string out = lead;
      for (size_t c = 0; c < cells.size(); ++c) {
        out += (c ? "  " : "") + pad(cells[c], widths[c], c < table.right_aligned.size() && table.right_aligned[c]);
      }
      while (!out.empty() && out.back() == ' ') out.pop_back();
      return out + "\n";
    };
    if (t) text += "\n";
    text += "# " + table.title + "\n";
    text += line("# ", table.header);
    for (const auto& row : table.rows) text += line("  ", row);
  }
  return text;
}

std::string tables_markdown(const std::vector<Table>& tables) {
  std::string text;
  for (size_t t = 0; t < tables.size(); ++t) {
    const Table& table = tables[t];
    if (t) text += "\n";
    text += "### " + markdown_cell(table.title) + "\n\n|";
    for (const std::string& cell : table.header) text += " " + markdown_cell(cell) + " |";
    text += "\n|";
    for (size_t c = 0; c < table.header.size(); ++c) {
      text += c < table.right_aligned.size() && table.right_aligned[c] ? " ---: |" : " :--- |";
    }
    text += "\n";
    for (const auto& row : table.rows) {
      text += "|";
      for (const std::string& cell : row) text += " " + markdown_cell(cell) + " |";
      text += "\n";
    }
  }
  return text;
}

}  // namespace sb
