#include "cli/arg_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"

namespace inferprof::cli {

namespace {

// Flags renamed or replaced this release: the old spelling is an error that
// names the new one (a silent alias would keep two meanings alive).
struct Renamed {
  std::vector<std::string> commands;
  std::string old_name, new_name;
  std::string why;  // empty: a plain rename
};

const std::vector<Renamed>& renamed_flags() {
  static const std::vector<Renamed> list = {
      {{"run"}, "--cache", "--caches", ""},
      {{"run", "compare"}, "--preload-lead", "--preload-lead-ms", ""},
      {{"run"}, "--replica-timeout", "--replica-timeout-s", ""},
      {{"run", "compare"}, "--trace-json-requests", "--trace-json-max-mb", "trace.json is now capped by size"},
      {{"simulate"}, "--warmup", "--warmup-requests", ""},
      {{"simulate"}, "--threads", "--curve-threads", ""},
      // One meaning per output flag: --out DIR is a folder of files, -o/--output
      // FILE the one file a generator or converter writes.
      {{"convert"}, "--to", "--output", ""},
      {{"gen-images"}, "-o", "--out", ""},
      {{"gen-trace"}, "--update-every", "--update-every-ms", ""},
  };
  return list;
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// A token that names an option (not a value such as -1 or -).
bool looks_like_option(const std::string& s) {
  return s.size() > 1 && s[0] == '-' && !is_number(s);
}

// "--name=value" -> "--name"; "-ovalue" -> "-o" (CLI11 reads both).
std::string option_name(const std::string& token) {
  if (token.rfind("--", 0) == 0) return token.substr(0, token.find('='));
  return token.substr(0, 2);
}

std::vector<std::string> names_of(const CLI::Option* o) {
  std::vector<std::string> out;
  for (const auto& l : o->get_lnames())
    out.push_back("--" + l);
  for (const auto& s : o->get_snames())
    out.push_back("-" + s);
  return out;
}

// Visible options: the ones worth suggesting. Hidden ones (group "") are
// accepted but never offered.
std::vector<std::string> visible_names(const CLI::App& cmd) {
  std::vector<std::string> out;
  for (const CLI::Option* o : cmd.get_options())
    if (o->nonpositional() && !o->get_group().empty())
      for (auto& n : names_of(o))
        out.push_back(n);
  return out;
}

bool knows(const CLI::App& cmd, const std::string& name) {
  for (const CLI::Option* o : cmd.get_options())
    for (const auto& n : names_of(o))
      if (n == name) return true;
  return false;
}

std::vector<const CLI::App*> commands_of(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

std::string list_commands(const std::vector<const CLI::App*>& cmds) {
  std::string out;
  for (const CLI::App* c : cmds)
    out += (out.empty() ? "" : ", ") + c->get_name();
  return out;
}

[[noreturn]] void unknown_option(const CLI::App& app, const CLI::App& cmd, const std::string& path,
                                 const std::string& name) {
  std::string hint = closest_match(name, visible_names(cmd));
  if (!hint.empty()) throw bad_input(fmt::format("unknown option {}: did you mean {}?", name, hint));
  // An option of another command is a common slip too (e.g. compare's --repeat on run).
  std::vector<std::string> owners;
  for (const CLI::App* other : commands_of(app))
    if (other != &cmd && knows(*other, name)) owners.push_back(other->get_name());
  if (!owners.empty())
    throw bad_input(
        fmt::format("unknown option {} for {}: it is an option of {}", name, path, fmt::join(owners, " and ")));
  throw bad_input(fmt::format("unknown option {} for {} (see inferprof {} --help)", name, path, path));
}

// The value given with an old spelling, to repeat it in the new one.
std::string value_after(const std::vector<std::string>& args, std::size_t i) {
  const std::string& t = args[i];
  if (auto eq = t.find('='); eq != std::string::npos) return t.substr(eq + 1);
  if (i + 1 < args.size() && !looks_like_option(args[i + 1])) return args[i + 1];
  return "";
}

void check_renamed(const std::string& command, const std::vector<std::string>& args, std::size_t i) {
  const std::string name = option_name(args[i]);
  for (const Renamed& r : renamed_flags()) {
    if (r.old_name != name || std::find(r.commands.begin(), r.commands.end(), command) == r.commands.end()) continue;
    const std::string value = value_after(args, i);
    const std::string use = value.empty() ? r.new_name : r.new_name + " " + value;
    if (!r.why.empty()) throw bad_input(fmt::format("{} was replaced ({}): use {}", name, r.why, r.new_name));
    throw bad_input(fmt::format("{} was renamed: use {}", name, use));
  }
}

// A single-valued option given twice: CLI11 says "At Most 1 required but
// received 2"; say which option and both values.
void check_repeats(const std::string& command, const CLI::App& cmd, const std::vector<std::string>& args,
                   std::size_t from) {
  std::map<const CLI::Option*, std::vector<std::string>> given;
  for (std::size_t i = from; i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (!looks_like_option(args[i])) continue;
    const std::string name = option_name(args[i]);
    for (const CLI::Option* o : cmd.get_options()) {
      const auto names = names_of(o);
      if (std::find(names.begin(), names.end(), name) == names.end()) continue;
      // Flags and list options may repeat; so may options told to keep the last.
      if (o->get_type_size_max() == 0 || o->get_expected_max() > 1 ||
          o->get_multi_option_policy() != CLI::MultiOptionPolicy::Throw)
        break;
      given[o].push_back(value_after(args, i));
      if (given[o].size() < 2) break;
      const std::string& first = given[o][0];
      const std::string& second = given[o][1];
      if (command == "run" && name == "--caches")
        throw bad_input(
            fmt::format("--caches given twice ({} and {}): run takes one configuration, e.g. --caches "
                        "l1,l2; use compare to measure several",
                        first, second));
      if (first.empty() || second.empty()) throw bad_input(fmt::format("{} given twice: give it once", name));
      throw bad_input(fmt::format("{} given twice ({} and {}): give it once", name, first, second));
    }
  }
}

std::string describe(double v) {
  return fmt::format("{}", v);
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest_match(std::string_view typed, const std::vector<std::string>& candidates) {
  auto bare = [](std::string_view s) {
    while (!s.empty() && s.front() == '-')
      s.remove_prefix(1);
    return s;
  };
  const std::string_view t = bare(typed);
  if (t.empty()) return "";
  std::string best;
  std::size_t best_d = 0;
  std::vector<std::string> starting;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(t, bare(c));
    if (best.empty() || d < best_d) {
      best = c;
      best_d = d;
    }
    if (bare(c).rfind(t, 0) == 0) starting.push_back(c);
  }
  // A slip is one edit in short names, up to a third of the letters in long ones.
  const std::size_t allowed = std::clamp<std::size_t>(t.size() / 3, 1, 3);
  if (!best.empty() && best_d <= allowed) return best;
  if (starting.size() == 1 && t.size() >= 3) return starting[0];
  return "";
}

void check_command_line(const CLI::App& app, const std::vector<std::string>& args) {
  const auto commands = commands_of(app);
  std::size_t i = 0;
  // Before the command: only the program's own options (--help, --version).
  for (; i < args.size() && looks_like_option(args[i]); ++i)
    if (!knows(app, option_name(args[i]))) {
      std::string hint = closest_match(option_name(args[i]), visible_names(app));
      throw bad_input(hint.empty() ? fmt::format("unknown option {} (see inferprof --help)", option_name(args[i]))
                                   : fmt::format("unknown option {}: did you mean {}?", option_name(args[i]), hint));
    }
  if (i == args.size()) return;  // --help or --version alone; CLI11 handles them

  const CLI::App* cmd = nullptr;
  std::string path;
  auto find_in = [](const std::vector<const CLI::App*>& cmds, const std::string& name) -> const CLI::App* {
    for (const CLI::App* c : cmds)
      if (c->get_name() == name) return c;
    return nullptr;
  };
  auto command_names = [](const std::vector<const CLI::App*>& cmds) {
    std::vector<std::string> out;
    for (const CLI::App* c : cmds)
      out.push_back(c->get_name());
    return out;
  };
  cmd = find_in(commands, args[i]);
  if (!cmd) {
    std::string hint = closest_match(args[i], command_names(commands));
    throw bad_input(hint.empty() ? fmt::format("unknown command '{}' (commands: {})", args[i], list_commands(commands))
                                 : fmt::format("unknown command '{}': did you mean {}?", args[i], hint));
  }
  path = cmd->get_name();
  ++i;
  const bool help = std::any_of(args.begin() + static_cast<std::ptrdiff_t>(i), args.end(),
                                [](const std::string& a) { return a == "-h" || a == "--help"; });

  // A command made of commands (store put|ls|rm): its first word picks one.
  const auto nested = commands_of(*cmd);
  if (!nested.empty()) {
    while (i < args.size() && looks_like_option(args[i])) {
      if (!knows(*cmd, option_name(args[i]))) unknown_option(app, *cmd, path, option_name(args[i]));
      ++i;
    }
    if (i == args.size()) {
      if (help) return;
      throw bad_input(
          fmt::format("{} needs a command: {} (see inferprof {} --help)", path, list_commands(nested), path));
    }
    const CLI::App* sub = find_in(nested, args[i]);
    if (!sub) {
      std::string hint = closest_match(args[i], command_names(nested));
      throw bad_input(hint.empty()
                          ? fmt::format("unknown command '{} {}' (commands: {})", path, args[i], list_commands(nested))
                          : fmt::format("unknown command '{} {}': did you mean {} {}?", path, args[i], path, hint));
    }
    cmd = sub;
    path += " " + sub->get_name();
    ++i;
  }

  const std::string command = path;
  for (std::size_t k = i; k < args.size(); ++k) {
    if (args[k] == "--") break;
    if (!looks_like_option(args[k])) continue;
    check_renamed(command, args, k);
    const std::string name = option_name(args[k]);
    if (!knows(*cmd, name)) unknown_option(app, *cmd, path, name);
  }
  check_repeats(command, *cmd, args, i);
}

std::string short_usage(const CLI::App& app) {
  std::string out = "usage: inferprof COMMAND [OPTIONS]\n\n";
  std::size_t width = 0;
  for (const CLI::App* c : commands_of(app))
    width = std::max(width, c->get_name().size());
  for (const CLI::App* c : commands_of(app)) {
    std::string d = c->get_description();
    // The first clause is enough for a one-line overview.
    if (auto cut = d.find(':'); cut != std::string::npos) d = d.substr(0, cut);
    out += fmt::format("  {:<{}}  {}\n", c->get_name(), width, d);
  }
  out += "\n'inferprof COMMAND --help' lists a command's options; 'inferprof --version' prints the version.\n";
  return out;
}

CLI::Validator whole_in(long long min, long long max) {
  return CLI::Validator(
      [min, max](std::string& s) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        const std::string shown = printable(s.substr(0, 60)) + (s.size() > 60 ? "..." : "");
        if (s.empty() || end != s.c_str() + s.size() || (errno != ERANGE && v < min) ||
            (errno == ERANGE && v == LLONG_MIN))
          return fmt::format("expected a whole number of at least {}, got {}", min, shown);
        if (errno == ERANGE || v > max)
          return fmt::format("expected a whole number from {} to {}, got {} (out of range)", min, max, shown);
        return "";
      },
      fmt::format("INT>={}", min));
}

CLI::Validator number_above(double min) {
  return CLI::Validator(
      [min](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !(v > min))
          return fmt::format("expected a number above {}, got {}", describe(min), s);
        return "";
      },
      fmt::format("NUM>{}", describe(min)));
}

CLI::Validator number_at_least(double min) {
  return CLI::Validator(
      [min](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !(v >= min))
          return fmt::format("expected a number of at least {}, got {}", describe(min), s);
        return "";
      },
      fmt::format("NUM>={}", describe(min)));
}

CLI::Validator one_of(std::vector<std::string> names) {
  std::string desc;
  for (std::size_t i = 0; i < names.size(); ++i)
    desc += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return CLI::Validator(
      [names, desc](std::string& s) -> std::string {
        if (std::find(names.begin(), names.end(), s) != names.end()) return "";
        return fmt::format("expected {}, got '{}'", desc, s);
      },
      "{" + fmt::format("{}", fmt::join(names, ",")) + "}");
}

}  // namespace inferprof::cli
