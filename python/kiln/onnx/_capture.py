"""Capturing a model for export: the model's forward recorded into an ``ir``
graph by kiln.compile's capture (in eval mode unless asked otherwise, with grad
mode off), read back as records, with what each graph input is: a user
argument, a parameter or buffer (by its qualified name), or a tensor the
forward holds by reference. See Note [Export's capture].
"""

from __future__ import annotations

from dataclasses import dataclass

from kiln._tensor import Tensor
from kiln.autograd import no_grad
from kiln.compiler import _state
from kiln.compiler._compiled_function import CapturedEntry, CompiledFunction, GraphBreak
from kiln.compiler._guards import flatten
from kiln.nn.modules.module import Module, register_module_forward_hook, register_module_forward_pre_hook
from kiln.onnx import _graph_text
from kiln.onnx.errors import UnsupportedOperatorError

# Note [Export's capture]
# Export reuses kiln.compile's capture (CompiledFunction with fullgraph=True and the
# interpreter backend) rather than a capture of its own, so what can be captured, the
# order of a graph's inputs (the call's tensors, then the module's parameters and
# buffers, then the tensors the forward holds by reference) and the graph breaks are
# exactly kiln.compile's. Grad mode is off during the call, so there is no joint
# (backward) graph; a graph break raises GraphBreak with its reason. The module's
# training flags are set as asked and restored afterwards, and nothing else of the
# module changes (an eval-mode forward writes no buffer).


@dataclass
class Captured:
    graph: _graph_text.Graph
    arg_tensors: list  # the call's tensors, in flattened order (the graph's first inputs)
    # One per graph input: ("arg", position in arg_tensors), ("state", qualified name, tensor) for a parameter
    # or buffer, ("lifted", k, tensor) for a tensor held by reference, ("rng", None) for the default generator's
    # seed and offset (random ops' state; ONNX random ops have their own).
    roles: list
    out_spec: object  # the structure of the forward's result (kiln.compiler._guards.flatten)
    module_spans: list  # [(first node, end node, qualified name, class name, "file:line")] of each submodule call

    def module_of(self, node_index: int) -> str | None:
        """"module 'attn.c_proj' (Linear)": the innermost submodule whose call recorded that node, or None."""
        inside = [s for s in self.module_spans if s[0] <= node_index < s[1]]
        if not inside:
            return None
        first, end, name, cls, where = min(inside, key=lambda s: s[1] - s[0])
        where = f", forward at {where}" if where else ""
        return f"module {name!r} ({cls}{where})" if name else f"the model's own forward ({cls}{where})"


def split_args(args) -> tuple[tuple, dict]:
    """torch.onnx.export's ``args``: a tensor, or a tuple whose last element may be a dict of keyword arguments."""
    if isinstance(args, Tensor):
        return (args,), {}
    if not isinstance(args, tuple):
        args = (args,) if not isinstance(args, list) else tuple(args)
    if args and isinstance(args[-1], dict):
        return args[:-1], dict(args[-1])
    return args, {}


def _training_flags(model) -> list:
    return [(m, m.training) for m in model.modules()] if isinstance(model, Module) else []


def _definition(fn) -> str:
    """"file.py:12": where ``fn`` is defined, or "" when Python cannot say."""
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else ""


class _ModuleSpans:
    """Global forward hooks that note, for each call of one of the model's submodules, the span of graph nodes
    it recorded (so an error can name the module an op came from)."""

    def __init__(self, model):
        self.names = {id(m): name for name, m in model.named_modules()} if isinstance(model, Module) else {}
        self.spans: list = []
        self._open: list = []

    @staticmethod
    def _nodes() -> int:
        sessions = _state.active_sessions()
        return sessions[-1].num_nodes if sessions else 0

    def before(self, module, args):
        if id(module) in self.names:
            self._open.append((module, self._nodes()))

    def after(self, module, args, output):
        if self._open and self._open[-1][0] is module:
            _, first = self._open.pop()
            self.spans.append((first, self._nodes(), self.names[id(module)], type(module).__name__,
                               _definition(type(module).forward)))

    def __enter__(self):
        self._handles = [register_module_forward_pre_hook(self.before), register_module_forward_hook(self.after)]
        return self

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()


def capture(model, args: tuple, kwargs: dict, *, training: bool = False) -> Captured:
    """Records ``model(*args, **kwargs)`` (grad mode off; the model in eval mode unless ``training``)."""
    flags = _training_flags(model)
    spans = _ModuleSpans(model)
    module = model if isinstance(model, Module) else getattr(model, "__self__", None)
    module = module if isinstance(module, Module) else None
    fn = CompiledFunction(model, module=module, fullgraph=True, backend="eager")
    try:
        for m, _ in flags:
            m.training = training
        with no_grad(), spans:
            try:
                fn(*args, **kwargs)
            except GraphBreak as e:
                raise UnsupportedOperatorError(f"kiln.onnx.export: the model cannot be captured whole: {e}") from e
    finally:
        for m, flag in flags:
            m.training = flag
    entries = [e for e in fn.cache.values() if isinstance(e, CapturedEntry)]
    if len(entries) != 1:
        raise UnsupportedOperatorError("kiln.onnx.export: the model's call was not captured")
    entry = entries[0]
    program = entry.program
    if program.copy_back:
        raise UnsupportedOperatorError("kiln.onnx.export: the model writes one of its inputs or buffers in place "
                                       "(BatchNorm in training mode, an in-place op on an argument); ONNX graphs "
                                       "cannot write their inputs")
    tensors: list = []
    flatten((args, kwargs), tensors)
    state = fn._module_state()
    graph = _graph_text.parse(str(program.graph))
    graph.outputs = graph.outputs[:program.num_outputs]
    roles = ([("arg", i) for i in range(len(tensors))] + [("state", name, t) for name, t in state]
             + [("lifted", k, t) for k, t in enumerate(entry.lifted)])
    if program.generator_index is not None:
        i = program.generator_index
        roles[i:i] = [("rng", None), ("rng", None)]
    return Captured(graph, tensors, roles, entry.out_spec, spans.spans)
