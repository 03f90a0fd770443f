// Aligned text tables for busctl's human output: a header row and rows of
// cells, each column as wide as its widest cell (in characters, not bytes).
#pragma once

#include <string>
#include <vector>

namespace bus::ctl {

using table_row = std::vector<std::string>;

// Columns separated by two spaces, no trailing blanks, one line per row.
// Rows shorter than the header are padded with empty cells.
[[nodiscard]] std::string render_table(const table_row& header, const std::vector<table_row>& rows);

// Characters in UTF-8 `text` (bytes that do not continue a sequence).
[[nodiscard]] std::size_t display_width(const std::string& text);

// A count and its noun: "1 message", "3 messages".
[[nodiscard]] std::string plural(std::size_t n, const char* one, const char* many);

} // namespace bus::ctl
