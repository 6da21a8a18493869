"""Running a captured graph: the runner that executes an ir graph, and what a
run does around it (the default generator's seed/offset inputs and copying
back inputs written in place). See Note [What a replay does around the graph].
"""

from __future__ import annotations

from kiln import _C

_generator_state = _C._capture.default_generator_state
_set_generator_offset = _C._capture.advance_default_generator


def interpret(graph, inputs: list) -> list:
    """The reference runner (backend "eager"): each node through the dispatcher."""
    return _C._ir.run(graph, inputs)


# Note [What a replay does around the graph]
# A graph is run by a runner, ``runner(graph, inputs) -> outputs`` (the
# interpreter by default; a backend may compile the graph and hand in another
# runner), so nothing here depends on how a graph executes. Around it:
# - a graph with random ops takes the default CPU generator's seed and offset
#   as two int inputs at ``generator_index`` (Note [Random ops under capture],
#   capture/CaptureSession.h); after the run the generator advances by
#   ``generator_advance``, as eager's draws would have advanced it (a graph
#   with symbolic sizes instead returns where its last draw left the
#   generator, output ``generator_end``, and the generator is set there: the
#   advance depends on the sizes);
# - the graph's outputs after the function's own are the new values of inputs
#   the function wrote in place (Note [In-place ops under capture]); they are
#   copied back into those inputs (``copy_back``: their input indices), so
#   the body itself stays functional. A compiled graph may have stored such
#   an output in its input already and returned the input itself (runtime
#   Note [Outputs written into their inputs]); that copy is skipped.


class GraphProgram:
    """One graph and its run: ``program(inputs)`` -> the function's flat outputs
    (then, for a joint forward, the saved values: ``num_outputs`` counts the
    function's outputs only)."""

    __slots__ = ("graph", "runner", "compiled", "generator_index", "generator_advance", "generator_end", "copy_back",
                 "num_outputs", "plain", "impure_reason")

    def __init__(self, graph, *, num_outputs: int, generator_index=None, generator_advance: int = 0,
                 generator_end=None, copy_back=(), impure_reason=None, runner=interpret):
        self.graph = graph
        # Why the body writes an input or an alias in place (None: it is functional; Note [In-place ops under
        # capture]): a backend that reorders or fuses needs a functional body.
        self.impure_reason = impure_reason
        self.runner = runner
        self.compiled = None  # the _runtime.CompiledGraph the runner replays (backend "default"), or None
        self.generator_index = generator_index
        self.generator_advance = generator_advance
        self.generator_end = generator_end  # the output holding the generator's offset after a run, or None
        self.copy_back = list(copy_back)
        self.num_outputs = num_outputs
        # Nothing around the run: the runner's outputs are the answer.
        self.plain = generator_index is None and not self.copy_back

    def graph_inputs(self, inputs: list) -> tuple[list, int | None]:
        """(the graph's inputs for these tensors, the generator offset a run starts from or None)."""
        if self.generator_index is None:
            return inputs, None
        seed, offset = _generator_state()
        i = self.generator_index
        return [*inputs[:i], seed, offset, *inputs[i:]], offset

    def run_with_values(self, inputs: list) -> tuple[list, list]:
        """(the graph's inputs it ran on, all of its outputs: the function's, the copy-backs, then any
        saved values); the generator advanced and the written inputs copied back."""
        if self.plain:
            return inputs, self.runner(self.graph, inputs)
        values, offset = self.graph_inputs(inputs)
        outputs = self.runner(self.graph, values)
        if offset is not None:
            _set_generator_offset(offset + self.generator_advance if self.generator_end is None
                                  else int(outputs[self.generator_end]))
        n = self.num_outputs
        for k, i in enumerate(self.copy_back):
            target, value = inputs[i], outputs[n + k]
            if value is not target:  # a compiled graph may have stored it in place already
                target.copy_(value)
        return values, outputs

    def run(self, inputs: list) -> list:
        """All of the graph's outputs (the function's, the copy-backs, then any saved values)."""
        if self.plain:
            return self.runner(self.graph, inputs)
        return self.run_with_values(inputs)[1]

    def __call__(self, inputs: list) -> list:
        outputs = self.run(inputs)
        return outputs if self.plain or len(outputs) == self.num_outputs else outputs[:self.num_outputs]
