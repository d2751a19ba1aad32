// A small mutation driver for the fuzz targets, for builds without libFuzzer
// (GCC): runs LLVMFuzzerTestOneInput over a seed corpus, then over mutated
// copies of it (bit flips, byte inserts and deletes, splices between seeds,
// repeated nesting, big and special numbers, binary integers) for a number of
// inputs or seconds. No coverage feedback: inputs the reader accepted join a
// small pool that later mutations start from, so mutations can compound past
// the first validation errors. A target returns 0 when a reader accepted the
// input and -1 when every reader answered with an Error (libFuzzer reads -1
// the same way: not worth keeping).
//
// A finding is anything but a clean return: an exception other than
// inferprof::Error escaping the target, a crash or sanitizer report, or an
// input running longer than --timeout. The input is written to --findings
// (created only then) and the exit status is 1.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Present when linked with a sanitizer runtime: called before it exits on a report.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

struct Options {
  std::vector<std::string> corpus;
  std::uint64_t runs = 0;  // mutated inputs; 0 with seconds == 0: the seeds only
  double seconds = 0;
  std::uint64_t seed = 0;
  bool seed_given = false;
  unsigned timeout_s = 10;
  std::size_t max_len = 1 << 20;
  std::string findings = "fuzz-findings";
  std::string name = "fuzz";
  bool keep_going = false;
};

// What the signal handlers dump: the input being run, and where to.
const std::string* g_current = nullptr;
char g_crash_path[4096];
char g_hang_path[4096];

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}
void say(const char* s) {
  write_all(2, s, std::strlen(s));
}

// Async-signal-safe: open/write/close only.
void dump_current(const char* path) {
  if (!g_current || !path[0]) return;
  int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  write_all(fd, g_current->data(), g_current->size());
  ::close(fd);
  say("fuzz: the input is in ");
  say(path);
  say("\n");
}

void on_death() {
  say("fuzz: FINDING: crash or sanitizer report\n");
  dump_current(g_crash_path);
}

void on_fatal_signal(int sig) {
  say("fuzz: FINDING: fatal signal ");
  say(strsignal(sig));
  say("\n");
  dump_current(g_crash_path);
  signal(sig, SIG_DFL);
  raise(sig);
}

void on_alarm(int) {
  say("fuzz: FINDING: hang (the input ran past --timeout)\n");
  dump_current(g_hang_path);
  _exit(1);
}

void install_handlers() {
  // On an alternate stack, so a stack overflow is still reported with its input.
  static std::vector<char> alt(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_flags = SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, nullptr);
  sa.sa_handler = on_fatal_signal;
  sigaction(SIGABRT, &sa, nullptr);
  // Under ASan its own handlers report SEGV and friends (with the stack) and
  // then call on_death; elsewhere we do.
  if (!kAsan)
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
      sigaction(sig, &sa, nullptr);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_death);
}

std::string fnv_hex(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

class Mutator {
 public:
  Mutator(std::uint64_t seed, const std::vector<std::string>& seeds, std::size_t max_len)
      : rng_(seed), seeds_(seeds), max_len_(max_len) {
    // Words from the seeds (field names, enum values) make useful inserts.
    std::set<std::string> words;
    for (const std::string& s : seeds_) {
      std::size_t i = 0;
      while (i < s.size()) {
        if (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_') {
          std::size_t j = i;
          while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '.'))
            ++j;
          if (j - i >= 2 && j - i <= 32) words.insert(s.substr(i, j - i));
          i = j;
        } else {
          ++i;
        }
      }
    }
    for (const std::string& w : words) {
      if (dict_.size() >= 400) break;
      dict_.push_back(w);
      dict_.push_back("\"" + w + "\"");
    }
    for (const char* t : {"\"",
                          "\\",
                          "\\u0000",
                          "\\ud800",
                          "\n",
                          "\r\n",
                          "\r",
                          ",",
                          ":",
                          "=",
                          "[",
                          "]",
                          "{",
                          "}",
                          "[]",
                          "{}",
                          "null",
                          "true",
                          "false",
                          "\"\"",
                          "\x1b[31m",
                          "\t",
                          "#",
                          "'",
                          "'''",
                          "\"\"\"",
                          "\xff\xfe",
                          "\xc0\x80",
                          "\xed\xa0\x80",
                          "\xf4\x90\x80\x80",
                          ".",
                          "..",
                          "/",
                          "@",
                          "-",
                          "+",
                          "e",
                          "0x",
                          "[[",
                          "]]",
                          "= [",
                          "= {"})
      dict_.emplace_back(t);
    dict_.emplace_back(std::string(1, '\0'));
  }

  std::string mutate(std::string s, const std::vector<std::string>& pool) {
    const int n = pick(8) == 0 ? 2 + static_cast<int>(pick(15)) : 1 + static_cast<int>(pick(3));
    for (int k = 0; k < n; ++k)
      mutate_once(s, pool);
    if (s.size() > max_len_) s.resize(max_len_);
    return s;
  }

 private:
  std::size_t pick(std::size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  std::size_t pos(const std::string& s) { return pick(s.size() + 1); }
  const std::string& other(const std::vector<std::string>& pool) {
    if (!pool.empty() && pick(2) == 0) return pool[pick(pool.size())];
    return seeds_[pick(seeds_.size())];
  }

  std::string number() {
    static const char* nums[] = {"0",
                                 "-0",
                                 "1",
                                 "-1",
                                 "2",
                                 "255",
                                 "256",
                                 "65535",
                                 "65536",
                                 "2147483647",
                                 "2147483648",
                                 "-2147483649",
                                 "4294967295",
                                 "4294967296",
                                 "9007199254740993",
                                 "9223372036854775807",
                                 "9223372036854775808",
                                 "-9223372036854775809",
                                 "18446744073709551615",
                                 "18446744073709551616",
                                 "1e308",
                                 "1e309",
                                 "-1e308",
                                 "4.9e-324",
                                 "1e-400",
                                 "0.1",
                                 "1.5",
                                 "NaN",
                                 "nan",
                                 "inf",
                                 "-inf",
                                 "Infinity",
                                 "1e",
                                 "1.",
                                 ".5",
                                 "00",
                                 "0x10",
                                 "+1",
                                 "99999999999",
                                 "100000",
                                 "123456789012345678901234567890"};
    if (pick(4) == 0) {
      std::string digits(1 + pick(400), '9');
      return pick(2) ? digits : "1e" + digits;
    }
    return nums[pick(std::size(nums))];
  }

  void mutate_once(std::string& s, const std::vector<std::string>& pool) {
    switch (pick(13)) {
      case 0:  // bit flip
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
        break;
      case 1:  // random byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(pick(256));
        break;
      case 2:  // insert random bytes
        s.insert(pos(s), std::string(1 + pick(4), static_cast<char>(pick(256))));
        break;
      case 3: {  // delete a range
        if (s.empty()) break;
        std::size_t a = pick(s.size()), len = 1 + pick(std::min<std::size_t>(s.size() - a, pick(2) ? 4 : 256));
        s.erase(a, len);
        break;
      }
      case 4: {  // repeat a chunk
        if (s.empty()) break;
        std::size_t a = pick(s.size()), len = 1 + pick(std::min<std::size_t>(s.size() - a, 64));
        std::string chunk = s.substr(a, len), rep;
        for (std::size_t k = 1 + pick(pick(16) == 0 ? 1000 : 8); k > 0 && rep.size() < max_len_; --k)
          rep += chunk;
        s.insert(a, rep);
        break;
      }
      case 5: {  // splice: a chunk of another input, or this one's head and another's tail
        const std::string& o = other(pool);
        if (o.empty()) break;
        std::size_t a = pick(o.size()), len = 1 + pick(o.size() - a);
        if (pick(2)) {
          s.insert(pos(s), o, a, len);
        } else {
          s.resize(pos(s));
          s.append(o, a, std::string::npos);
        }
        break;
      }
      case 6: {  // repeated nesting, sometimes closed again
        static const char* open[] = {"[", "{\"a\":", "[{\"x\":", "{", "\"", "a = [", "[[", "[a.", "{a="};
        static const char* close[] = {"]", "}", "}]", "}", "\"", "]", "]]", "]", "}"};
        const std::size_t which = pick(std::size(open));
        // Mostly shallow (fast); now and then deep enough to overflow a recursive reader's stack.
        static const std::size_t depths[] = {8, 64, 256, 1024, 4096};
        const std::size_t depth = pick(16) == 0 ? (pick(2) ? 20000 : 100000) : depths[pick(std::size(depths))];
        std::string nest;
        for (std::size_t k = 0; k < depth && nest.size() < max_len_; ++k)
          nest += open[which];
        if (pick(2))
          for (std::size_t k = 0; k < depth && nest.size() < 2 * max_len_; ++k)
            nest += close[which];
        s.insert(pos(s), nest);
        break;
      }
      case 7: {  // big and special numbers: replace a run of digits, or insert
        std::vector<std::size_t> starts;
        for (std::size_t i = 0; i < s.size(); ++i)
          if (std::isdigit(static_cast<unsigned char>(s[i])) &&
              (i == 0 || !std::isdigit(static_cast<unsigned char>(s[i - 1]))))
            starts.push_back(i);
        if (starts.empty() || pick(4) == 0) {
          s.insert(pos(s), number());
          break;
        }
        std::size_t a = starts[pick(starts.size())], b = a;
        while (b < s.size() &&
               (std::isdigit(static_cast<unsigned char>(s[b])) || s[b] == '.' || s[b] == 'e' || s[b] == '-'))
          ++b;
        s.replace(a, b - a, number());
        break;
      }
      case 8: {  // a binary integer (for .iptrace): 1, 2, 4 or 8 bytes, little-endian
        static const std::uint64_t vals[] = {0,
                                             1,
                                             2,
                                             23,
                                             24,
                                             25,
                                             31,
                                             32,
                                             33,
                                             0x7f,
                                             0x80,
                                             0xff,
                                             0x7fff,
                                             0x8000,
                                             0xffff,
                                             0x7fffffff,
                                             0x80000000,
                                             0xffffffff,
                                             0xfffffff0,
                                             0x7fffffffffffffffull,
                                             0x8000000000000000ull,
                                             0xffffffffffffffffull,
                                             1ull << 40};
        std::uint64_t v = pick(6) == 0 ? static_cast<std::uint64_t>(rng_()) : vals[pick(std::size(vals))];
        const std::size_t width = std::size_t{1} << pick(4);
        if (s.size() < width) break;
        const std::size_t a = pick(s.size() - width + 1);
        for (std::size_t k = 0; k < width; ++k)
          s[a + k] = static_cast<char>((v >> (8 * k)) & 0xff);
        break;
      }
      case 9:  // a token: field names from the seeds, syntax, odd UTF-8
        s.insert(pos(s), dict_[pick(dict_.size())]);
        break;
      case 10: {  // whole lines: duplicate, drop or swap
        std::vector<std::string> lines;
        std::size_t a = 0;
        for (std::size_t i = 0; i <= s.size(); ++i)
          if (i == s.size() || s[i] == '\n') {
            lines.push_back(s.substr(a, i - a));
            a = i + 1;
          }
        if (lines.empty()) break;
        const std::size_t i = pick(lines.size()), j = pick(lines.size());
        switch (pick(3)) {
          case 0:
            for (std::size_t k = pick(pick(16) == 0 ? 2000 : 3) + 1; k > 0; --k)
              lines.insert(lines.begin() + static_cast<long>(i), lines[i]);
            break;
          case 1:
            lines.erase(lines.begin() + static_cast<long>(i));
            break;
          default:
            std::swap(lines[i], lines[j]);
        }
        s.clear();
        for (std::size_t k = 0; k < lines.size() && s.size() < max_len_; ++k) {
          if (k) s += '\n';
          s += lines[k];
        }
        break;
      }
      case 11:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      default: {  // overwrite a chunk with another input's bytes at the same place
        const std::string& o = other(pool);
        if (o.empty() || s.empty()) break;
        std::size_t a = pick(std::min(s.size(), o.size())), len = 1 + pick(std::min<std::size_t>(64, o.size() - a));
        s.replace(a, std::min(len, s.size() - a), o, a, len);
      }
    }
  }

  std::mt19937_64 rng_;
  const std::vector<std::string>& seeds_;
  std::size_t max_len_;
  std::vector<std::string> dict_;
};

[[noreturn]] void usage(const char* argv0, const char* why) {
  if (why) std::fprintf(stderr, "%s: %s\n", argv0, why);
  std::fprintf(stderr,
               "usage: %s [--runs N] [--seconds S] [--seed N] [--timeout S] [--max-len BYTES]\n"
               "          [--findings DIR] [--keep-going] CORPUS_DIR_OR_FILE...\n"
               "Runs the seeds, then N mutated inputs or S seconds of them (neither: the seeds only).\n",
               argv0);
  std::exit(2);
}

Options parse_args(int argc, char** argv) {
  Options o;
  o.name = fs::path(argv[0]).filename().string();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(argv[0], ("missing value for " + a).c_str());
      return argv[++i];
    };
    try {
      if (a == "--runs")
        o.runs = std::stoull(value());
      else if (a == "--seconds")
        o.seconds = std::stod(value());
      else if (a == "--seed")
        o.seed = std::stoull(value()), o.seed_given = true;
      else if (a == "--timeout")
        o.timeout_s = static_cast<unsigned>(std::stoul(value()));
      else if (a == "--max-len")
        o.max_len = std::stoull(value());
      else if (a == "--findings")
        o.findings = value();
      else if (a == "--keep-going")
        o.keep_going = true;
      else if (a == "-h" || a == "--help")
        usage(argv[0], nullptr);
      else if (!a.empty() && a[0] == '-')
        usage(argv[0], ("unknown option " + a).c_str());
      else
        o.corpus.push_back(a);
    } catch (const std::logic_error&) {
      usage(argv[0], ("bad value for " + a).c_str());
    }
  }
  if (o.corpus.empty()) usage(argv[0], "no corpus given");
  if (o.timeout_s == 0) usage(argv[0], "--timeout must be at least 1 second");
  return o;
}

std::vector<std::string> load_corpus(const Options& o) {
  std::vector<fs::path> files;
  for (const std::string& c : o.corpus) {
    std::error_code ec;
    if (fs::is_directory(c, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(c))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(c, ec)) {
      files.emplace_back(c);
    } else {
      std::fprintf(stderr, "%s: %s: no such file or folder\n", o.name.c_str(), c.c_str());
      std::exit(2);
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (const fs::path& p : files) {
    std::ifstream in(p, std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (out.empty()) out.emplace_back();  // an empty corpus still fuzzes, from nothing
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  const std::vector<std::string> seeds = load_corpus(o);
  std::uint64_t seed = o.seed_given ? o.seed : static_cast<std::uint64_t>(std::random_device{}());

  std::error_code ec;
  const std::string base = (fs::absolute(o.findings, ec) / (o.name + "-")).string();
  std::snprintf(g_crash_path, sizeof g_crash_path, "%scrash-%d", base.c_str(), static_cast<int>(getpid()));
  std::snprintf(g_hang_path, sizeof g_hang_path, "%shang-%d", base.c_str(), static_cast<int>(getpid()));
  // The handlers write there, so the folder must exist before an input runs; it
  // is removed again at the end when nothing was found and it was not there.
  const bool findings_existed = fs::exists(o.findings, ec);
  fs::create_directories(o.findings, ec);
  install_handlers();

  std::uint64_t executed = 0, mutated = 0, accepted = 0, findings = 0;
  std::vector<std::string> pool;  // accepted mutated inputs, to start later mutations from
  std::string input;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };

  // Runs one input; true when a reader accepted it (the target returned 0,
  // not -1 for "every reader answered with an Error").
  auto run_one = [&](const std::string& in) {
    g_current = &in;
    alarm(o.timeout_s);
    int rc = -1;
    bool escaped = false;
    std::string what;
    try {
      rc = LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(in.data()), in.size());
    } catch (const std::exception& e) {
      escaped = true;
      what = e.what();
    } catch (...) {
      escaped = true;
      what = "a non-std exception";
    }
    alarm(0);
    g_current = nullptr;
    ++executed;
    if (escaped) {
      ++findings;
      const std::string path = base + "exception-" + fnv_hex(in);
      std::ofstream(path, std::ios::binary) << in;
      std::fprintf(stderr, "%s: FINDING: exception escaped the reader: %.500s\n  the input is in %s\n", o.name.c_str(),
                   what.c_str(), path.c_str());
      if (!o.keep_going) {
        std::fprintf(stderr, "%s: stopped after %llu inputs (seed %llu)\n", o.name.c_str(),
                     static_cast<unsigned long long>(executed), static_cast<unsigned long long>(seed));
        std::exit(1);
      }
    }
    return !escaped && rc == 0;
  };

  std::uint64_t seeds_accepted = 0;
  for (const std::string& s : seeds)
    seeds_accepted += run_one(s) ? 1 : 0;

  Mutator mutator(seed, seeds, o.max_len);
  std::mt19937_64 choose(seed ^ 0x9e3779b97f4a7c15ull);
  double next_report = 30;
  for (;;) {
    if (o.runs ? mutated >= o.runs : o.seconds <= 0) break;
    if (o.seconds > 0 && mutated % 16 == 0 && elapsed() >= o.seconds) break;
    const std::string& from =
        (!pool.empty() && choose() % 2) ? pool[choose() % pool.size()] : seeds[choose() % seeds.size()];
    input = mutator.mutate(from, pool);
    ++mutated;
    // Inputs a reader accepted get past its first checks: mutating them
    // further reaches deeper code than mutating the seeds again.
    if (run_one(input)) {
      ++accepted;
      if (input.size() <= 65536) {
        if (pool.size() < 256)
          pool.push_back(input);
        else
          pool[choose() % pool.size()] = input;
      }
    }
    if (o.seconds > 0 && mutated % 64 == 0 && elapsed() >= next_report) {
      std::fprintf(stderr, "%s: %.0f s, %llu mutated inputs\n", o.name.c_str(), elapsed(),
                   static_cast<unsigned long long>(mutated));
      next_report += 30;
    }
  }

  if (!findings && !findings_existed) fs::remove(o.findings, ec);
  std::fprintf(stderr,
               "%s: %llu inputs (%zu seeds, %llu accepted by a reader; %llu mutated, %llu accepted) in %.1f s, "
               "seed %llu, %llu findings\n",
               o.name.c_str(), static_cast<unsigned long long>(executed), seeds.size(),
               static_cast<unsigned long long>(seeds_accepted), static_cast<unsigned long long>(mutated),
               static_cast<unsigned long long>(accepted), elapsed(), static_cast<unsigned long long>(seed),
               static_cast<unsigned long long>(findings));
  return findings ? 1 : 0;
}
