// Multi-tensor grouping (Note [Multi-tensor kernel steps]).
#include "passes/group_multi_tensor.h"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace kiln::passes {

namespace {

/// No op node outside the group reads any of its results (they are only returned).
bool results_only_returned(const FusionGroup& group) {
  const std::unordered_set<const ir::Node*> members(group.nodes.begin(), group.nodes.end());
  for (const ir::Value* v : group.outputs) {
    for (const ir::Use& u : v->uses()) {
      if (u.user->in_node_list() && members.count(u.user) == 0) return false;
    }
  }
  return true;
}

}  // namespace

std::vector<std::vector<size_t>> group_multi_tensor(const std::vector<FusionGroup>& groups,
                                                    const std::vector<std::optional<uint64_t>>& kernel_key) {
  std::map<uint64_t, std::vector<size_t>> by_key;  // ordered: the result does not depend on hashing order
  for (size_t i = 0; i < groups.size() && i < kernel_key.size(); ++i) {
    if (kernel_key[i] && !groups[i].outputs.empty() && results_only_returned(groups[i])) {
      by_key[*kernel_key[i]].push_back(i);
    }
  }
  std::vector<std::vector<size_t>> sets;
  for (auto& [key, members] : by_key) {
    if (members.size() >= 2) sets.push_back(std::move(members));
  }
  std::sort(sets.begin(), sets.end(), [](const auto& a, const auto& b) { return a.back() < b.back(); });
  return sets;
}

}  // namespace kiln::passes
