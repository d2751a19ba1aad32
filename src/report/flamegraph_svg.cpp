// flamegraph.svg: a self-contained flame graph of the folded stacks, root at
// the bottom as flamegraph.pl draws it; hover a frame for its time and share.
// The drawing itself (flame::render_svg) is shared with the differential
// flame graph of `compare` (diff_flamegraph_svg.cpp).
#include "report/flamegraph_svg.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "base/text.hpp"

namespace inferprof {
namespace report {
namespace flame {
namespace {

constexpr double kWidth = 1200;
constexpr double kPad = 10;
constexpr double kFrame = 16;        // row pitch; rects are 1 px shorter to leave a gap
constexpr double kTop = 40;          // room for the title
constexpr double kTopSubtitle = 56;  // room for the title and a subtitle line
constexpr double kBottom = 10;
constexpr double kCharPx = 7.08;  // average Verdana width at 12 px
constexpr double kMinFramePx = 0.1;

// Click a frame to zoom into it; click the bottom frame to zoom out. W and P
// are kWidth and kPad. Kept free of '<' and '&' so that it stays valid XML
// even for a reader that ignores the CDATA section. The frame's name comes
// from its tooltip by Canvas::name_from_tooltip, between the two halves.
constexpr std::string_view kZoomScriptHead = R"(<script type="text/ecmascript"><![CDATA[
(function () {
  var W = 1200, P = 10, C = 7.08, E = 0.05;
  var frames = [].slice.call(document.querySelectorAll('g.frame')).map(function (g) {
    var r = g.querySelector('rect'), t = g.querySelector('title').textContent;
    return {g: g, r: r, x: +r.getAttribute('x'), w: +r.getAttribute('width'),
            y: +r.getAttribute('y'), name: )";
constexpr std::string_view kZoomScriptTail = R"(};
  });
  function label(f, x, w) {
    var t = f.g.querySelector('text'), n = Math.floor((w - 6) / C), s = f.name;
    if (3 > n) { if (t) t.textContent = ''; return; }
    if (s.length > n) s = s.substring(0, n - 2) + '..';
    if (!t) { t = document.createElementNS('http://www.w3.org/2000/svg', 'text'); f.g.appendChild(t); }
    t.setAttribute('x', (x + 3).toFixed(2));
    t.setAttribute('y', (f.y + 11.5).toFixed(1));
    t.textContent = s;
  }
  function zoom(z) {
    var k = (W - 2 * P) / z.w;
    frames.forEach(function (f) {
      var x = P + (f.x - z.x) * k, w = f.w * k, show = true, dim = false;
      if (f.y > z.y) {
        show = !(f.x > z.x + E || z.x + z.w > f.x + f.w + E);
        x = P; w = W - 2 * P; dim = true;
      } else {
        show = !(z.x > f.x + E || f.x + f.w > z.x + z.w + E);
      }
      f.g.style.display = show ? '' : 'none';
      f.g.style.opacity = dim ? '0.6' : '';
      if (!show) return;
      f.r.setAttribute('x', x.toFixed(2));
      f.r.setAttribute('width', w.toFixed(2));
      label(f, x, w);
    });
  }
  frames.forEach(function (f) { f.g.addEventListener('click', function () { zoom(f); }); });
})();
]]></script>
)";

class Drawer {
 public:
  Drawer(const Tree& tree, const std::vector<double>& width, const std::function<Look(std::size_t)>& look)
      : tree_(tree), width_(width), look_(look) {}

  std::string render(const Canvas& canvas) {
    const bool empty = !(width_[0] > 0);
    const int depth = empty ? 0 : max_depth(tree_.root());
    const double top = canvas.subtitle.empty() ? kTop : kTopSubtitle;
    height_ = top + kFrame * (depth + 1) + kBottom;
    auto it = std::back_inserter(out_);
    fmt::format_to(it,
                   "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                   "<svg version=\"1.1\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                   "xmlns=\"http://www.w3.org/2000/svg\">\n",
                   kWidth, height_);
    out_.append(std::string_view(
        "<style>\n"
        "text { font-family: Verdana, Helvetica, Arial, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
        "text.title { font-size: 17px; }\n"
        "g.frame { cursor: pointer; }\n"
        "g.frame:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
        "</style>\n"));
    fmt::format_to(it, "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"rgb(248,248,248)\"/>\n", kWidth,
                   height_);
    fmt::format_to(it, "<text class=\"title\" x=\"{}\" y=\"24\" text-anchor=\"middle\">", kWidth / 2);
    append_xml(out_, canvas.title);
    out_.append(std::string_view("</text>\n"));
    if (!canvas.subtitle.empty()) {
      fmt::format_to(it, "<text x=\"{}\" y=\"42\" text-anchor=\"middle\">", kWidth / 2);
      append_xml(out_, canvas.subtitle);
      out_.append(std::string_view("</text>\n"));
    }
    if (empty) {
      fmt::format_to(it, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no samples</text>\n", kWidth / 2,
                     top + kFrame - 4);
    } else {
      scale_ = (kWidth - 2 * kPad) / width_[0];
      out_.append(std::string_view("<g id=\"frames\">\n"));
      draw(tree_.root(), 0, kPad);
      out_.append(std::string_view("</g>\n"));
    }
    out_.append(kZoomScriptHead);
    out_.append(canvas.name_from_tooltip);
    out_.append(kZoomScriptTail);
    out_.append(std::string_view("</svg>\n"));
    return fmt::to_string(out_);
  }

 private:
  int max_depth(std::size_t node) const {
    int d = 0;
    for (std::size_t c : tree_[node].children)
      d = std::max(d, 1 + max_depth(c));
    return d;
  }

  void draw(std::size_t node, int depth, double x) {
    const double w = width_[node] * scale_;
    if (w < kMinFramePx) return;
    const double y = height_ - kBottom - kFrame * (depth + 1);
    const Look l = look_(node);
    const std::string& name = tree_[node].name;
    auto it = std::back_inserter(out_);
    out_.append(std::string_view("<g class=\"frame\"><title>"));
    append_xml(out_, l.tooltip);
    out_.append(std::string_view("</title>"));
    fmt::format_to(it, "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" rx=\"2\" ry=\"2\"/>",
                   x, y, w, kFrame - 1, l.fill);
    const auto fit = static_cast<std::size_t>(std::max(0.0, std::floor((w - 6) / kCharPx)));
    if (fit >= 3) {
      fmt::format_to(it, "<text x=\"{:.2f}\" y=\"{:.1f}\">", x + 3, y + 11.5);
      append_xml(out_, truncate_display(name, fit));
      out_.append(std::string_view("</text>"));
    }
    out_.append(std::string_view("</g>\n"));
    double child_x = x;
    for (std::size_t c : tree_[node].children) {
      draw(c, depth + 1, child_x);
      child_x += width_[c] * scale_;
    }
  }

  const Tree& tree_;
  const std::vector<double>& width_;
  const std::function<Look(std::size_t)>& look_;
  double height_ = 0;
  double scale_ = 0;
  fmt::memory_buffer out_;
};

}  // namespace

void append_xml(fmt::memory_buffer& out, std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    switch (c) {
      case '&':
        out.append(std::string_view("&amp;"));
        ++i;
        continue;
      case '<':
        out.append(std::string_view("&lt;"));
        ++i;
        continue;
      case '>':
        out.append(std::string_view("&gt;"));
        ++i;
        continue;
      case '"':
        out.append(std::string_view("&quot;"));
        ++i;
        continue;
      case '\'':
        out.append(std::string_view("&apos;"));
        ++i;
        continue;
      default:
        break;
    }
    // XML 1.0 forbids most control characters and invalid UTF-8 outright;
    // one bad name must not make the whole file unreadable.
    if (static_cast<unsigned char>(c) < 0x20) {
      out.push_back('?');
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(s, i);
    if (len == 0) {
      out.push_back('?');
      ++i;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
}

Tree::Tree(std::size_t profiles) : profiles_(profiles) {
  nodes_.push_back(Node{"all", std::vector<std::uint64_t>(profiles, 0), {}});
}

void Tree::add(std::size_t profile, const std::vector<std::pair<std::string, std::uint64_t>>& folded) {
  for (const auto& [path, value] : folded) {
    std::size_t node = 0;
    nodes_[0].totals[profile] += value;
    std::size_t begin = 0;
    while (begin <= path.size()) {
      std::size_t end = path.find(';', begin);
      if (end == std::string::npos) end = path.size();
      std::string name = path.substr(begin, end - begin);
      auto [it, inserted] = index_.try_emplace({node, name}, nodes_.size());
      if (inserted) {
        nodes_.push_back(Node{std::move(name), std::vector<std::uint64_t>(profiles_, 0), {}});
        nodes_[node].children.push_back(it->second);
      }
      node = it->second;
      nodes_[node].totals[profile] += value;
      begin = end + 1;
    }
  }
}

void Tree::finish() {
  for (Node& n : nodes_)
    std::sort(n.children.begin(), n.children.end(),
              [&](std::size_t a, std::size_t b) { return nodes_[a].name < nodes_[b].name; });
}

std::uint64_t Tree::self(std::size_t node, std::size_t profile) const {
  std::uint64_t children = 0;
  for (std::size_t c : nodes_[node].children)
    children += nodes_[c].totals[profile];
  const std::uint64_t total = nodes_[node].totals[profile];
  return total > children ? total - children : 0;
}

std::string render_svg(const Tree& tree, const std::vector<double>& width,
                       const std::function<Look(std::size_t node)>& look, const Canvas& canvas) {
  return Drawer(tree, width, look).render(canvas);
}

}  // namespace flame

namespace {

// flamegraph.pl's "hot" idea: reds through yellows, chosen by a hash of the
// name so a frame keeps its colour from run to run.
std::string color_for(std::string_view name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  const double a = static_cast<double>(h & 0xFFFF) / 65535.0;
  const double b = static_cast<double>((h >> 16) & 0xFFFF) / 65535.0;
  const double c = static_cast<double>((h >> 32) & 0xFFFF) / 65535.0;
  return fmt::format("rgb({},{},{})", 205 + static_cast<int>(50 * c), static_cast<int>(230 * a),
                     static_cast<int>(55 * b));
}

}  // namespace
}  // namespace report

std::string render_flamegraph_svg(const std::vector<std::pair<std::string, std::uint64_t>>& folded,
                                  const std::string& title) {
  using namespace report;
  flame::Tree tree(1);
  tree.add(0, folded);
  tree.finish();
  std::vector<double> width(tree.size());
  for (std::size_t i = 0; i < tree.size(); ++i)
    width[i] = static_cast<double>(tree[i].totals[0]);
  const double all = width[0];
  return flame::render_svg(
      tree, width,
      [&](std::size_t node) {
        const flame::Node& f = tree[node];
        return flame::Look{fmt::format("{} ({} µs, {:.2f}%)", f.name, group_thousands(f.totals[0]),
                                       100.0 * static_cast<double>(f.totals[0]) / all),
                           color_for(f.name)};
      },
      flame::Canvas{title, {}});
}

}  // namespace inferprof
