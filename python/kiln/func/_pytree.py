"""kiln.func's pytrees, re-exported from kiln.utils._pytree (where torch keeps them:
torch.utils._pytree) for the code that imports them from here."""

from kiln.utils._pytree import (  # noqa: F401
    LeafSpec, TreeSpec, broadcast_prefix, tree_flatten, tree_leaves, tree_map, tree_unflatten, treespec_pprint,
)

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_map",
           "treespec_pprint", "broadcast_prefix"]
