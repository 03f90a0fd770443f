// The page's HTML, script and style in one text (page.html, embedded at
// build time: the bus serves it without reading a file at run time).
#pragma once

#include <string_view>

namespace bus::detail::dashboard {

[[nodiscard]] std::string_view page_html() noexcept;

} // namespace bus::detail::dashboard
