"""kiln.einsum: Einstein summation as a composite of kiln ops.

Every step is an ordinary op (diagonal, permute, reshape, expand, bmm, sum), so
autograd and capture see them and einsum needs no formula of its own. The
operands are contracted left to right: each pair becomes one bmm over
[batch labels, left-only labels, contracted labels] x [batch, contracted,
right-only], as PyTorch's sumproduct_pair does. A label that only one operand
has and the output lacks is summed out before the product.
"""

from __future__ import annotations

import string

from kiln import _C

_LETTERS = set(string.ascii_letters)


def _parse(equation: str, operands) -> tuple[list[list[str]], list[str]]:
    """Each operand's labels (an ellipsis expanded into labels '0', '1', ...) and the output's."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                         if len(operands) > len(terms) else
                         "einsum(): fewer operands were provided than specified in the equation")
    ellipsis_dims = 0
    parsed = []
    for term, op in zip(terms, operands):
        rest = term
        if "..." in rest:
            before, _, after = rest.partition("...")
            if "." in before or "." in after:
                raise RuntimeError("einsum(): found '.' for operand that is not part of any ellipsis")
            n = op.dim() - len(before) - len(after)
            if n < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(before) + len(after)}) "
                                   f"is more than the number of dimensions ({op.dim()}) for operand")
            ellipsis_dims = max(ellipsis_dims, n)
            # right-align ellipsis labels so broadcasting lines up as numpy does
            labels = list(before) + [f"{ellipsis_dims - n + i}" for i in range(n)] + list(after)
        else:
            if "." in rest:
                raise RuntimeError("einsum(): found '.' for operand that is not part of any ellipsis")
            labels = list(rest)
            if len(labels) != op.dim():
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(labels)}) does not "
                                   f"match the number of dimensions ({op.dim()}) for operand "
                                   f"{len(parsed)} and no ellipsis was given")
        for label in labels:
            if not (label in _LETTERS or label.isdigit()):
                raise RuntimeError(f"einsum(): invalid subscript given at index {lhs.index(label)} in the equation "
                                 f"string, subscripts must be in [a-zA-Z]")
        parsed.append(labels)
    ellipsis = [f"{i}" for i in range(ellipsis_dims)]
    if arrow:
        out: list[str] = []
        if "..." in rhs:
            before, _, after = rhs.partition("...")
            out = list(before) + ellipsis + list(after)
        else:
            out = list(rhs)
        seen = {label for labels in parsed for label in labels}
        for label in out:
            if label not in seen:
                raise RuntimeError(f"einsum(): output subscript {label} does not appear in the equation for any "
                                 "input operand")
        for i, label in enumerate(out):
            if label in out[:i]:
                raise RuntimeError(f"einsum(): output subscript {label} appears more than once in the output")
    else:
        counts: dict[str, int] = {}
        for labels in parsed:
            for label in labels:
                counts[label] = counts.get(label, 0) + 1
        out = ellipsis + sorted(label for label, c in counts.items() if c == 1 and not label.isdigit())
    return parsed, out


def _check_label_sizes(operands, parsed: list[list[str]]) -> None:
    """Every label's sizes across operands broadcast (equal, or 1), with PyTorch's message."""
    seen: dict[str, int] = {}
    for i, (op, labels) in enumerate(zip(operands, parsed)):
        for label, size in zip(labels, op.shape):
            previous = seen.get(label, 1)
            if size != 1 and previous != 1 and size != previous:
                # labels within one operand (diagonals) are checked where the diagonal is taken
                if labels.count(label) > 1:
                    continue
                raise RuntimeError(f"einsum(): subscript {label} has size {size} for operand {i} which does not "
                                   f"broadcast with previously seen size {previous}")
            if size != 1:
                seen[label] = size


def _take_diagonals(t, labels: list[str]):
    """A label repeated within one operand takes that operand's diagonal."""
    while True:
        for i, label in enumerate(labels):
            j = labels.index(label, i + 1) if label in labels[i + 1:] else -1
            if j >= 0:
                t = t.diagonal(0, i, j)  # the diagonal goes last
                labels = [lb for k, lb in enumerate(labels) if k not in (i, j)] + [label]
                break
        else:
            return t, labels


def _sum_labels(t, labels: list[str], drop: set[str]):
    dims = [i for i, label in enumerate(labels) if label in drop]
    if not dims:
        return t, labels
    t = _C._functions.sum(t, dims)
    return t, [label for label in labels if label not in drop]


def _align(t, labels: list[str], order: list[str]):
    """t permuted to `order` (labels t lacks become size-1 dims)."""
    missing = [label for label in order if label not in labels]
    for _ in missing:
        t = t.unsqueeze(-1)
    labels = labels + missing
    return t.permute([labels.index(label) for label in order])


def _size(t, labels: list[str], label: str) -> int:
    return t.shape[labels.index(label)] if label in labels else 1


def _contract(a, la: list[str], b, lb: list[str], keep: set[str]):
    """The product of two operands, summing the labels both have that `keep` lacks."""
    batch = [x for x in la if x in lb and x in keep]
    contracted = [x for x in la if x in lb and x not in keep]
    a_only = [x for x in la if x not in lb]
    b_only = [x for x in lb if x not in la]
    sizes = {}
    for x in batch + contracted:
        sa, sb = _size(a, la, x), _size(b, lb, x)
        if sa != sb and 1 not in (sa, sb):
            raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                               f"{list(a.shape)} and {list(b.shape)}")
        sizes[x] = max(sa, sb)
    # a contracted label of size 1 on one side broadcasts: sum it on the other side first
    for x in list(contracted):
        if _size(a, la, x) != _size(b, lb, x):
            if _size(a, la, x) == 1:
                b, lb = _sum_labels(b, lb, {x})
                a, la = a.squeeze(la.index(x)), [y for y in la if y != x]
            else:
                a, la = _sum_labels(a, la, {x})
                b, lb = b.squeeze(lb.index(x)), [y for y in lb if y != x]
            contracted.remove(x)
    a = _align(a, la, batch + a_only + contracted)
    b = _align(b, lb, batch + contracted + b_only)
    batch_shape = [sizes[x] for x in batch]
    a_shape = [_size(a, batch + a_only + contracted, x) for x in a_only]
    b_shape = [_size(b, batch + contracted + b_only, x) for x in b_only]
    k_shape = [sizes[x] for x in contracted]
    a = a.expand(batch_shape + a_shape + k_shape)
    b = b.expand(batch_shape + k_shape + b_shape)

    def prod(values):
        n = 1
        for v in values:
            n *= v
        return n

    if not contracted:
        # Nothing to sum: a broadcast multiply, which promotes mixed dtypes as PyTorch's sumproduct_pair does.
        a = a.reshape(batch_shape + a_shape + [1] * len(b_shape))
        b = b.reshape(batch_shape + [1] * len(a_shape) + b_shape)
        return a * b, batch + a_only + b_only
    nb, m, k, n = prod(batch_shape), prod(a_shape), prod(k_shape), prod(b_shape)
    out = _C._functions.bmm(a.reshape(nb, m, k), b.reshape(nb, k, n))
    return out.reshape(batch_shape + a_shape + b_shape), batch + a_only + b_only


def einsum(*args):
    """einsum(equation, *operands) -> Tensor, as torch.einsum (operands may also be one list)."""
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError("einsum(): the sublist format is not supported by kiln; pass an equation string")
    parsed, out = _parse(equation, operands)
    _check_label_sizes(operands, parsed)
    terms = []
    for t, labels in zip(operands, parsed):
        t, labels = _take_diagonals(t, labels)
        terms.append((t, labels))
    # Sum out labels that only one operand has and the output lacks.
    for i, (t, labels) in enumerate(terms):
        elsewhere = {x for j, (_, lb) in enumerate(terms) if j != i for x in lb} | set(out)
        terms[i] = _sum_labels(t, labels, {x for x in labels if x not in elsewhere})
    t, labels = terms[0]
    for i in range(1, len(terms)):
        later = {x for _, lb in terms[i + 1:] for x in lb} | set(out)
        t, labels = _contract(t, labels, terms[i][0], terms[i][1], later)
    t, labels = _sum_labels(t, labels, {x for x in labels if x not in out})
    return _align(t, labels, out) if labels != out else t
