#include "text_table.hpp"

#include <algorithm>

namespace bus::ctl {

namespace {

bool continues_sequence(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

} // namespace

std::size_t display_width(const std::string& text) {
  return static_cast<std::size_t>(
    std::count_if(text.begin(), text.end(), [](char c) { return !continues_sequence(c); }));
}

std::string render_table(const table_row& header, const std::vector<table_row>& rows) {
  std::vector<std::size_t> widths(header.size(), 0);
  auto measure = [&](const table_row& row) {
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c)
      widths[c] = std::max(widths[c], display_width(row[c]));
  };
  measure(header);
  for (const auto& row : rows)
    measure(row);

  std::string out;
  auto line = [&](const table_row& row) {
    std::string text;
    for (std::size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : std::string();
      text += cell;
      if (c + 1 < widths.size())
        text += std::string(widths[c] - display_width(cell) + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ')
      text.pop_back();
    out += text + "\n";
  };
  line(header);
  for (const auto& row : rows)
    line(row);
  return out;
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace bus::ctl
