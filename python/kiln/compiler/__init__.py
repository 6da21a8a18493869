"""kiln.compiler: graph capture and kiln.compile (torch.compiler's shape).

See README.md in this folder for what is captured, the guards, graph breaks
and what the first slice does not do yet."""

from kiln.compiler._api import compile, disable, is_compiling, reset
from kiln.compiler._compiled_function import GraphBreak
from kiln.compiler._explain import ExplainOutput, explain
from kiln.compiler._kernel_summary import FusedKernelInfo, KernelSummary, kernel_summary
from kiln.compiler._module import OptimizedModule

__all__ = ["compile", "disable", "is_compiling", "reset", "explain", "ExplainOutput", "GraphBreak",
           "OptimizedModule", "kernel_summary", "KernelSummary", "FusedKernelInfo"]
