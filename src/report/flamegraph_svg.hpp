#pragma once
// What flamegraph.svg and the differential flame graph of `compare` share:
// folded stacks as a tree, XML escaping, and the SVG itself (layout, labels,
// hover titles, click-to-zoom). The callers decide only each frame's width,
// hover text and colour.
#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inferprof::report::flame {

// Appends `s` as XML character data: markup characters as entities, control
// characters and invalid UTF-8 bytes as '?', so one bad name cannot make the
// whole file unreadable.
void append_xml(fmt::memory_buffer& out, std::string_view s);

// Folded stacks ("a;b;c" -> value) of one or more profiles merged into one
// tree. Node 0 is the synthetic "all"; each node keeps, per profile, the
// inclusive sum of the values of the paths through it.
struct Node {
  std::string name;
  std::vector<std::uint64_t> totals;  // one per profile
  std::vector<std::size_t> children;  // sorted by name once built
};

class Tree {
 public:
  explicit Tree(std::size_t profiles);
  void add(std::size_t profile, const std::vector<std::pair<std::string, std::uint64_t>>& folded);
  // Sorts every node's children by name (flamegraph.pl's order); call once after the adds.
  void finish();

  const Node& operator[](std::size_t i) const { return nodes_[i]; }
  std::size_t size() const { return nodes_.size(); }
  // The bottom row: "all" only earns its row when there are several roots.
  std::size_t root() const { return nodes_[0].children.size() == 1 ? nodes_[0].children[0] : 0; }
  // Self value of `node` in `profile`: its total minus its children's.
  std::uint64_t self(std::size_t node, std::size_t profile) const;

 private:
  std::vector<Node> nodes_;
  std::size_t profiles_;
  std::map<std::pair<std::size_t, std::string>, std::size_t> index_;  // (parent, name) -> node
};

// How one frame is drawn: its hover text (plain text, escaped when written)
// and its fill ("rgb(r,g,b)").
struct Look {
  std::string tooltip;
  std::string fill;
};

struct Canvas {
  std::string title;
  std::string subtitle;  // a second line under the title; none when empty
  // JavaScript expression that gets a frame's name back from its tooltip `t`,
  // for the labels the zoom redraws. It must hold neither '<' nor '&'.
  std::string_view name_from_tooltip = "t.substring(0, t.lastIndexOf(' ('))";
};

// The SVG: a frame per node (root at the bottom), `width[i]` in any unit
// (children must fit in their parent; node 0's width is the full width),
// frames narrower than 0.1 px left out, names as labels where they fit.
std::string render_svg(const Tree& tree, const std::vector<double>& width,
                       const std::function<Look(std::size_t node)>& look, const Canvas& canvas);

}  // namespace inferprof::report::flame
