// FunctionalForm: what the Capture fallback records for in-place and random
// ops so a graph body stays functional (See Note [In-place ops under capture]
// and Note [Random ops under capture] in CaptureSession.h), and the
// capture::philox_generator op that gives a random op its generator.
#pragma once

#include <string>

#include "capture/CaptureSession.h"
#include "eager/dispatch/Dispatcher.h"

namespace kiln::capture {

/// Given in-place op kiln::add_.Tensor on the stack, its `self` unaliased.
/// Do    recorded_op(s, op, stack).
/// Result kiln::add.Tensor (the functional variant: same arguments); `op`
///        itself when there is none or `self` is aliased, noting on `s`
///        (mark_impure) when keeping it in place writes an input or an alias.
[[nodiscard]] OperatorHandle recorded_op(CaptureSession& s, const OperatorHandle& op, const Stack& stack);

/// Given a random op on the stack with generator=None.
/// Do    default_generator(s, op, stack, &why).
/// Result the value of capture::philox_generator(%rng_seed, %rng_offset,
///        relative_offset=...) at the default CPU generator's position; nullptr
///        with `why` set when the op runs on another device.
[[nodiscard]] ir::Value* default_generator(CaptureSession& s, const OperatorHandle& op, const Stack& stack,
                                           std::string* why);

/// After a random op ran: records where the default CPU generator now stands
/// (CaptureSession::note_generator_end), so a replay advances it as far.
void note_random_op_ran(CaptureSession& s);

/// Registers capture::philox_generator(int seed, int offset, int relative_offset) -> Generator and
/// capture::generator_offset(Generator generator, Tensor after) -> int (the offset a generator reached:
/// Note [Random ops under capture], the symbolic form) once (also done when the library loads, so
/// graphs using them parse in any process).
void ensure_philox_generator_op();

}  // namespace kiln::capture
