#pragma once
// CLI11 validators for numeric options, shared by every executable's command line. Their messages
// name the accepted range in integers (CLI11's own Range prints it as doubles).
#include <CLI/CLI.hpp>

namespace mlps {

// An integer >= minimum; otherwise "must be at least MIN, not TEXT" or "'TEXT' is not an integer".
CLI::Validator integer_at_least(long long minimum);

// An integer in [minimum, maximum]; otherwise "must be between MIN and MAX, not TEXT" or
// "'TEXT' is not an integer".
CLI::Validator integer_between(long long minimum, long long maximum);

// A finite decimal number > 0; otherwise "must be positive, not TEXT" or "'TEXT' is not a
// finite decimal number" (inf, nan and hexadecimal are refused).
CLI::Validator positive_real();
// The same for a finite decimal number >= 0 ("must be at least 0, not TEXT").
CLI::Validator non_negative_real();

// One item of a comma-separated list of integers >= 1 (CLI11's delimiter splits the list);
// otherwise `message` ("expected three positive integers x,y,z").
CLI::Validator positive_integer_item(std::string message);

// Any text but the empty one (an empty list such as --tp-dims "" is not the default).
CLI::Validator non_empty();

}  // namespace mlps
