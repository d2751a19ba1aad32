#pragma once
// Checks of the command line made before CLI11 parses it, so that the common
// slips get an error a person can act on: an unknown command or option named
// with the closest match, an old spelling naming the new one, a single-valued
// option given twice. CLI11 would report these after (and as) something else,
// e.g. "--trace is required" for a misspelt --trace.
#include <CLI/CLI.hpp>
#include <climits>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "inferprof/enum_names.hpp"

namespace inferprof::cli {

// Levenshtein distance (insertions, deletions, substitutions).
std::size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `typed` when it is close enough to be a slip (or
// the only candidate `typed` starts), else "".
std::string closest_match(std::string_view typed, const std::vector<std::string>& candidates);

// Throws Error(bad_input) for the first problem in `args` (argv without argv[0]).
void check_command_line(const CLI::App& app, const std::vector<std::string>& args);

// A short usage (commands and one line each) for a bare `inferprof`.
std::string short_usage(const CLI::App& app);

// Range checks whose message reads as a person would write it (CLI11's own
// print DBL_MAX in full): "expected a whole number of at least 1, got 0";
// past what the option holds: "expected a whole number from 1 to 2147483647,
// got 2147483648 (out of range)".
CLI::Validator whole_in(long long min, long long max);
// A whole number of at least `min` that `target`'s type holds.
template <class T>
CLI::Validator whole_at_least(long long min, const T& /*target*/) {
  static_assert(std::is_integral_v<T>, "a whole-number option's target is an integer");
  constexpr long long max = std::numeric_limits<T>::max() > static_cast<unsigned long long>(LLONG_MAX)
                                ? LLONG_MAX
                                : static_cast<long long>(std::numeric_limits<T>::max());
  return whole_in(min, max);
}
CLI::Validator number_above(double min);     // > min
CLI::Validator number_at_least(double min);  // >= min
// "expected one of table, json or csv, got xml"
CLI::Validator one_of(std::vector<std::string> names);

// An option naming an enum (EnumNames<E>): checked against its names (the
// error lists them; exit 2) and parsed into `target` here, once; below the
// CLI only the enum travels. The help shows `target`'s value as the default.
template <class E>
CLI::Option* add_enum_option(CLI::App* cmd, const std::string& flag, E& target, const std::string& help) {
  return cmd
      ->add_option_function<std::string>(
          flag, [&target](const std::string& s) { target = *parse_enum<E>(s); }, help)
      ->check(one_of(enum_names<E>()))
      ->default_str(std::string(enum_name(target)));
}
// The same, unset unless given (the default comes from elsewhere, e.g. the profile).
template <class E>
CLI::Option* add_enum_option(CLI::App* cmd, const std::string& flag, std::optional<E>& target,
                             const std::string& help) {
  return cmd
      ->add_option_function<std::string>(
          flag, [&target](const std::string& s) { target = parse_enum<E>(s); }, help)
      ->check(one_of(enum_names<E>()));
}

}  // namespace inferprof::cli
