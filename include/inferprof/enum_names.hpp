#pragma once
// Enums a person spells, on the command line or in a profile (--update
// sync|async|preload, --split rr|hash, ...): each has one table of names, in
// the enum's order, that parsing, printing and the list of valid values in an
// error message all read. Specialise EnumNames<E> next to the enum:
//   template <> struct EnumNames<Split> {
//     static constexpr std::array<std::string_view, 2> names{"rr", "hash"};
//   };
// Header-only, so that any module can name its enums without a dependency.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inferprof {

template <class E>
struct EnumNames;

// The one printer: the name `e` is spelt with.
template <class E>
constexpr std::string_view enum_name(E e) {
  return EnumNames<E>::names.at(static_cast<std::size_t>(e));
}

// The one parser: the enum spelt `name`, or nullopt.
template <class E>
constexpr std::optional<E> parse_enum(std::string_view name) {
  const auto& names = EnumNames<E>::names;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<E>(i);
  return std::nullopt;
}

// Every name, in order (for a CLI11 check).
template <class E>
std::vector<std::string> enum_names() {
  return {EnumNames<E>::names.begin(), EnumNames<E>::names.end()};
}

// The valid values for an error message: `sync, async or preload`, each
// between `quote`s when given ("\"sync\", \"async\" or \"preload\"").
template <class E>
std::string enum_choices(std::string_view quote = "") {
  const auto& names = EnumNames<E>::names;
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out.append(quote).append(names[i]).append(quote);
  }
  return out;
}

}  // namespace inferprof
