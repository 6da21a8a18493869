// The pass pipeline: the one place that lists the graph passes in order.
#include "passes/pipeline.h"

#include <string>

#include "eager/core/Error.h"
#include "ir/Verifier.h"
#include "passes/cat_strided_pieces.h"
#include "passes/decompose_composites.h"
#include "passes/eliminate_common_subexpressions.h"
#include "passes/eliminate_dead_code.h"
#include "passes/fold_constants.h"
#include "passes/simplify_algebra.h"

namespace kiln::passes {

namespace {

struct Pass {
  std::string_view name;
  size_t (*run)(ir::Graph&);
};

size_t simplify(ir::Graph& g) { return simplify_algebra(g); }

// Decompositions first, so the later passes see the primitives; constants
// become literals before the rewrite rules match on them; CSE and DCE last,
// to merge what the rewrites made equal and drop what they left unread
// (cat_strided_pieces before DCE, which drops the copies it leaves unread).
// (Fusion joins after these: see passes/README.md.)
constexpr Pass kPipeline[] = {
    {"decompose_composites", decompose_composites},
    {"fold_constants", fold_constants},
    {"simplify_algebra", simplify},
    {"cat_strided_pieces", cat_strided_pieces},
    {"eliminate_common_subexpressions", eliminate_common_subexpressions},
    {"eliminate_dead_code", eliminate_dead_code},
};

}  // namespace

namespace {

/// ir::verify, its error prefixed with where the pipeline stands ("after simplify_algebra").
void verify_at(const ir::Graph& g, std::string_view where) {
  try {
    ir::verify(g);
  } catch (const Error& e) {
    KILN_FAIL(Runtime, "passes: ", where, ": ", e.what());
  }
}

}  // namespace

size_t run_pipeline(ir::Graph& g, const PipelineOptions& options) {
  if (options.verify_after_each) verify_at(g, "the input graph");  // so a failure below is the pass's
  size_t total = 0;
  for (const Pass& pass : kPipeline) {
    if (!options.decompose && pass.run == decompose_composites) continue;
    const size_t changes = pass.run == decompose_composites && options.keep_whole
                               ? decompose_composites_except(g, options.keep_whole)
                               : pass.run(g);
    total += changes;
    if (options.verify_after_each) verify_at(g, "after " + std::string(pass.name));
    if (options.log_after_each) options.log_after_each(pass.name, changes, g);
  }
  return total;
}

std::vector<std::string_view> pipeline_passes() {
  std::vector<std::string_view> out;
  for (const Pass& p : kPipeline) out.push_back(p.name);
  return out;
}

}  // namespace kiln::passes
