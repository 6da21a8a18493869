// The graph-level pass pipeline: the passes in order, the verifier after each,
// and the graph logged after each (KILN_LOGS=passes).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "ir/Graph.h"

namespace kiln::passes {

/// Debug builds verify the graph after every pass by default.
#ifdef NDEBUG
inline constexpr bool kVerifyAfterEachPassByDefault = false;
#else
inline constexpr bool kVerifyAfterEachPassByDefault = true;
#endif

struct PipelineOptions {
  /// Runs decompose_composites. kiln.compile's default backend runs it too:
  /// the pieces fuse back into row kernels (passes/fuse_reductions.h; Note
  /// [Composites compile decomposed], runtime/CompiledGraph.h).
  bool decompose = true;
  /// Composite nodes decompose_composites leaves whole (none when unset).
  std::function<bool(const ir::Node&)> keep_whole;
  /// Runs ir::verify on the input and after each pass; a failure names the pass.
  bool verify_after_each = kVerifyAfterEachPassByDefault;
  /// Called after each pass with its name, how many changes it made, and the
  /// graph (kiln._C._passes.run_pipeline sets it when KILN_LOGS=passes is on).
  std::function<void(std::string_view pass, size_t changes, const ir::Graph&)> log_after_each;
};

/// Given a captured graph.
/// Do    run_pipeline(g).
/// Result g rewritten in place by, in order: decompose_composites,
///        fold_constants, simplify_algebra, eliminate_common_subexpressions,
///        eliminate_dead_code. Returns the total number of changes.
/// With verification on, the input graph is verified first ("passes: the input
/// graph: ir verify: ...") and then the result of each pass (RuntimeError
/// "passes: after <pass>: ir verify: ..." when a pass leaves it malformed).
size_t run_pipeline(ir::Graph& g, const PipelineOptions& options = {});

/// The pipeline's pass names, in order.
[[nodiscard]] std::vector<std::string_view> pipeline_passes();

}  // namespace kiln::passes
