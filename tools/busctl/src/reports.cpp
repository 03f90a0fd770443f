#include "reports.hpp"

namespace bus::ctl {

exit_code exit_code_of(const replay_report& r) {
  if (!r.failed.empty() || !r.warning.empty())
    return exit_code::failed;
  if (r.replayed.empty() || !r.unknown_ids.empty())
    return exit_code::nothing_matched;
  return exit_code::ok;
}

// The same rule for every selection, --all included: one that selected
// nothing is 1, so a script can tell "there was nothing" from "done".
exit_code exit_code_of(const purge_report& r) {
  if (!r.warning.empty())
    return exit_code::failed;
  if (r.purged == 0 || !r.unknown_ids.empty())
    return exit_code::nothing_matched;
  return exit_code::ok;
}

} // namespace bus::ctl
