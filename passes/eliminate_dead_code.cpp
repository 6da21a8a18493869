// Dead-code elimination: one backward sweep over the node list.
#include "passes/eliminate_dead_code.h"

#include <algorithm>

#include "passes/effects.h"

namespace kiln::passes {

size_t eliminate_dead_code(ir::Graph& g) {
  // Walking backwards, a node's readers come before it, so erasing them first
  // leaves it unread in the same sweep.
  size_t erased = 0;
  for (ir::Node* n = g.last_node(); n != nullptr;) {
    ir::Node* prev = n->prev();
    const bool unread =
        std::none_of(n->outputs().begin(), n->outputs().end(), [](const ir::Value* v) { return v->has_uses(); });
    if (unread && !has_side_effects(*n)) {
      g.erase(n);
      ++erased;
    }
    n = prev;
  }
  return erased;
}

}  // namespace kiln::passes
