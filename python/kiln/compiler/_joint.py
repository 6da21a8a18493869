"""Forward and backward together: recording the backward of a capture with
the real autograd Engine, and replaying the partitioned graphs under one
autograd node. See Note [Joint capture] and capture/JointPartition.h.

Note [Joint capture]
When a captured function's outputs require grad, ``record_backward`` asks the
autograd Engine for the gradients of those outputs with respect to every
graph input that requires grad (``autograd.grad`` with ones-like
grad_outputs, retain_graph=True: nothing accumulates into ``.grad`` and the
eager result of the capturing call keeps its own history), with the capture
still on, so the Engine's backward formulas are recorded after the forward.
The grad_outputs become graph inputs (placeholders: their values never
matter), the gradients graph outputs. ``_C._capture.partition_joint`` splits
the result into a forward graph returning the outputs plus the saved values
and a backward graph from the saved values and grad_outputs to the gradients.

A later call (``JointProgram``) runs the forward graph with grad mode off,
then attaches ONE autograd node, ``CompiledFunctionBackward``, to the
differentiable outputs, with an edge to every tensor input; its backward runs
the backward graph, so ``loss.backward()`` fills ``.grad`` as eager's nodes
would. The saved values are held by the node until it is released (a second
backward without retain_graph raises as eager does). The backward graph runs
without recording history, so a double backward (create_graph=True) raises a
RuntimeError instead of returning gradients that miss their second-order part.
"""

from __future__ import annotations

from kiln import _C, autograd
from kiln.compiler._replay import GraphProgram, interpret

NODE_NAME = "CompiledFunctionBackward"


class JointCapture:
    """What ``record_backward`` recorded: where the forward ends in the joint graph."""

    __slots__ = ("num_forward_nodes", "num_forward_inputs", "num_forward_outputs", "num_forward_tensors",
                 "grad_positions", "differentiable_outputs", "num_grad_outputs", "backward_lifted")


def wants_backward(out_tensors: list) -> bool:
    return _C.is_grad_enabled() and any(t.requires_grad for t in out_tensors)


def record_backward(session, out_tensors: list) -> JointCapture | str:
    """Records the backward of ``out_tensors`` into ``session`` (its forward outputs and copy-backs already
    marked); returns the JointCapture, or a reason the joint capture cannot be made."""
    joint = JointCapture()
    joint.num_forward_nodes = session.num_nodes
    joint.num_forward_inputs = session.graph.num_inputs
    joint.num_forward_outputs = session.graph.num_outputs
    inputs = session.input_tensors
    joint.num_forward_tensors = len(inputs)
    seen: set = set()
    outputs = []
    joint.differentiable_outputs = []  # positions in out_tensors, first occurrence of each tensor
    for k, t in enumerate(out_tensors):
        if t.requires_grad and id(t) not in seen:
            if any(t is i for i in inputs):
                return "a differentiable output is an input of the function (joint capture needs computed outputs)"
            seen.add(id(t))
            outputs.append(t)
            joint.differentiable_outputs.append(k)
    seen.clear()
    joint.grad_positions = []  # tensor input positions the backward graph returns gradients for
    for k, t in enumerate(inputs):
        if t.requires_grad and id(t) not in seen:
            seen.add(id(t))
            joint.grad_positions.append(k)
    if not joint.grad_positions:
        return "an output requires grad but no input of the function does (a leaf made inside the function)"
    grad_outputs = [_C._functions.ones_like(t) for t in outputs]  # placeholders, made outside the capture
    for g in grad_outputs:
        session.add_late_input(g)
    joint.num_grad_outputs = len(grad_outputs)
    try:
        with session:
            grads = autograd.grad(outputs, [inputs[k] for k in joint.grad_positions], grad_outputs,
                                  retain_graph=True, allow_unused=True)
    except RuntimeError as e:  # the call's eager result stands; eager's own backward decides what happens next
        return f"the backward could not be recorded: {e}"
    if session.broken:
        return f"while recording the backward: {session.break_reason}"
    # Tensors the backward read that it did not compute (constants its formulas made outside the dispatcher).
    joint.backward_lifted = session.input_tensors[joint.num_forward_tensors + joint.num_grad_outputs:]
    for k, g in zip(list(joint.grad_positions), grads):
        if g is None:
            joint.grad_positions.remove(k)
        else:
            session.mark_output(g)
    return joint


class JointProgram:
    """A forward graph and a backward graph under one autograd node (Note [Joint capture]):
    ``program(inputs)`` -> the function's flat outputs, differentiable as eager's."""

    __slots__ = ("forward", "backward", "backward_inputs", "backward_lifted", "grad_positions",
                 "differentiable_outputs", "num_saved", "saved_bytes")

    def __init__(self, joint_graph, joint: JointCapture, *, num_outputs: int, generator_index, generator_advance,
                 copy_back, generator_end=None, impure_reason=None, runner=interpret):
        # The graph inputs a run copies back into (tensor input i sits after the two generator inputs when
        # i >= generator_index): nothing reading them is recomputed in the backward.
        written = [i + 2 if generator_index is not None and i >= generator_index else i for i in copy_back]
        forward, backward, backward_inputs, num_saved, saved_bytes = _C._capture.partition_joint(
            joint_graph, joint.num_forward_nodes, joint.num_forward_inputs, joint.num_forward_outputs, written)
        self.forward = GraphProgram(forward, num_outputs=num_outputs, generator_index=generator_index,
                                    generator_advance=generator_advance, generator_end=generator_end,
                                    copy_back=copy_back,
                                    impure_reason=impure_reason, runner=runner)
        self.backward = GraphProgram(backward, num_outputs=len(joint.grad_positions), runner=runner)
        forward.verify()
        backward.verify()
        self.backward_inputs = backward_inputs
        self.backward_lifted = joint.backward_lifted
        self.grad_positions = joint.grad_positions
        self.differentiable_outputs = joint.differentiable_outputs
        self.num_saved = num_saved
        self.saved_bytes = saved_bytes  # what the saved values hold at the recorded sizes

    @property
    def graph(self):
        return self.forward.graph

    def __call__(self, inputs: list) -> list:
        forward = self.forward
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            values, outputs = forward.run_with_values(inputs)
        finally:
            _C._set_grad_enabled(prev)
        saved = outputs[len(outputs) - self.num_saved:] if self.num_saved else []
        results = outputs[:forward.num_outputs]
        if not prev:
            return results
        self._attach(values, saved, inputs, results)
        return results

    def _attach(self, forward_values, saved, inputs, results):
        # One C++ node (python/csrc/PyCachedCall.cpp, shared with the C++ hit path): it holds the forward's
        # input values and the saved values until released, and its backward calls run_backward. It holds
        # neither `results` nor `inputs` (the outputs hold the node: a reference back would be a cycle
        # through C++ that Python's collector cannot see; found by scripts/soak.py).
        _C._capture.attach_compiled_backward(self, forward_values, saved, inputs, results)

    def run_backward(self, forward_values: list, saved: list, grads: list) -> list:
        """The backward graph's gradients (one per grad position) from the forward's graph inputs, its
        saved values and the gradients of the differentiable outputs (zeros where the Engine had None)."""
        joint_values = forward_values + grads + self.backward_lifted
        bwd_inputs = [joint_values[i] for i in self.backward_inputs] + saved
        return self.backward.runner(self.backward.graph, bwd_inputs)
