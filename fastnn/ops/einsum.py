"""``einsum``: Einstein summation, lowered to diagonal views, sums and batched matmuls.

Each operand first takes the diagonal of a repeated label (``ii``) and sums the labels no
one else needs; then the operands are contracted two at a time, each pair as one batched
matrix product (batch labels, the labels kept from each side, the summed labels), so the
gradient is the matmul's. By default the pairs go left to right, as PyTorch without
opt_einsum; ``optimize="greedy"``/``"optimal"``/``"auto"`` (or True) asks the optional
``opt_einsum`` package (``pip install fastnn-core[einsum]``) for a cheaper order.
"""

from __future__ import annotations

import math
import string

from fastnn.ops import movement
from fastnn.ops.nnops import matmul
from fastnn.ops.sorting import check_tensor
from fastnn.ops.table import public
from fastnn.ops.tensor import Tensor
from fastnn.ops.viewing import diagonal

_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _sublists(args) -> tuple:
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as an equation and its operands."""
    operands, terms = [], []
    items = list(args)
    out = None
    if len(items) % 2:
        out = items.pop()
    for i in range(0, len(items), 2):
        operands.append(items[i])
        terms.append("".join("..." if s is Ellipsis else _LETTERS[s] for s in items[i + 1]))
    eq = ",".join(terms)
    if out is not None:
        eq += "->" + "".join("..." if s is Ellipsis else _LETTERS[s] for s in out)
    return eq, operands


def _parse(eq: str, operands: list) -> tuple:
    """(labels per operand, output labels): each label one char; the dims an ellipsis
    covers get private labels, aligned from the right so that they broadcast."""
    eq = eq.replace(" ", "")
    inputs, arrow, output = eq.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: the equation {eq!r} has {len(terms)} operands, "
                         f"{len(operands)} tensors were given")
    for term in terms + [output]:
        bad = set(term.replace("...", "")) - set(_LETTERS)
        if bad:
            raise ValueError(f"einsum: labels must be letters a-z or A-Z (and '...'), got "
                             f"{sorted(bad)} in {eq!r}")
    rank = 0
    for term, t in zip(terms, operands):
        named = len(term.replace("...", ""))
        if ("..." in term and named > t.ndim) or ("..." not in term and named != t.ndim):
            raise ValueError(f"einsum: the subscript {term!r} does not fit an operand of "
                             f"shape {t.shape}")
        if "..." in term:
            rank = max(rank, t.ndim - named)
    spare = [chr(0x100 + i) for i in range(rank)]
    labels = []
    for term, t in zip(terms, operands):
        if "..." in term:
            head, _, tail = term.partition("...")
            n = t.ndim - len(head) - len(tail)
            labels.append(list(head) + spare[rank - n:] + list(tail))
        else:
            labels.append(list(term))
    if arrow:
        if output.count("...") > 1:
            raise ValueError(f"einsum: more than one ellipsis in the output of {eq!r}")
        head, dots, tail = output.partition("...")
        out = list(head) + (spare if dots else []) + list(tail)
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: the output {output!r} repeats a label")
        seen = {c for ls in labels for c in ls}
        missing = [c for c in out if c not in seen and c not in spare]
        if missing:
            raise ValueError(f"einsum: output label {missing[0]!r} is in no operand")
    else:
        counts = {}
        for ls in labels:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        out = spare + sorted(c for c, n in counts.items() if n == 1 and c not in spare)
    return labels, out


def _diagonals(t: Tensor, labels: list) -> tuple:
    """Repeated labels in one operand read its diagonal (a view)."""
    while len(set(labels)) != len(labels):
        for i, c in enumerate(labels):
            j = labels.index(c, i + 1) if labels.count(c) > 1 else -1
            if j >= 0:
                if t.shape[i] != t.shape[j]:
                    raise RuntimeError(f"einsum: label {c!r} repeats on dims of sizes "
                                       f"{t.shape[i]} and {t.shape[j]}")
                t = diagonal(t, 0, i, j)
                labels = [x for k, x in enumerate(labels) if k not in (i, j)] + [c]
                break
    return t, labels


def _sum_out(t: Tensor, labels: list, needed: set) -> tuple:
    gone = tuple(i for i, c in enumerate(labels) if c not in needed)
    if not gone:
        return t, labels
    return movement.sum(t, gone), [c for c in labels if c in needed]


def _pair(a: Tensor, la: list, b: Tensor, lb: list, needed: set) -> tuple:
    """The contraction of two operands as one batched matmul."""
    batch = [c for c in la if c in lb and c in needed]
    summed = [c for c in la if c in lb and c not in needed]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]
    size = {c: n for c, n in zip(la + lb, a.shape + b.shape)}
    nb, nl, nk, nr = (math.prod(size[c] for c in group) for group in (batch, left, summed,
                                                                       right))
    a2 = movement.reshape(movement.transpose(a, tuple(la.index(c) for c in batch + left +
                                                      summed)), (nb, nl, nk))
    b2 = movement.reshape(movement.transpose(b, tuple(lb.index(c) for c in batch + summed +
                                                      right)), (nb, nk, nr))
    out = movement.reshape(matmul(a2, b2), tuple(size[c] for c in batch + left + right))
    return out, batch + left + right


def _broadcast(operands: list, labels: list) -> list:
    """Size-1 dims stretched to their label's size elsewhere (PyTorch broadcasts them)."""
    size = {}
    for t, ls in zip(operands, labels):
        for c, n in zip(ls, t.shape):
            if n != 1:
                if size.setdefault(c, n) != n:
                    raise RuntimeError(f"einsum: label {c!r} has sizes {size[c]} and {n}; "
                                       "they must match (or be 1)")
    out = []
    for t, ls in zip(operands, labels):
        shape = tuple(size.get(c, 1) for c in ls)
        out.append(t if shape == t.shape else movement.broadcast_to(t, shape))
    return out


def _path(eq: str, operands: list, optimize) -> list:
    if optimize in (None, False):
        return [(0, 1)] * (len(operands) - 1)
    try:
        import opt_einsum
    except ImportError:
        raise ImportError("einsum: optimize= needs the optional opt_einsum package: pip "
                          "install 'fastnn-core[einsum]' (or opt-einsum)") from None
    strategy = "auto" if optimize is True else optimize
    path, _ = opt_einsum.contract_path(eq, *[t.shape for t in operands], shapes=True,
                                       optimize=strategy)
    return [tuple(step) for step in path]


@public(top=True)
def einsum(equation, *operands, optimize=None) -> Tensor:
    """Sum of products over the labels that ``equation`` (``"ij,jk->ik"``) does not keep;
    operands as varargs or one list, or PyTorch's sublist form. ``optimize`` chooses the
    contraction order with opt_einsum (see the module docstring)."""
    if not isinstance(equation, str):
        equation, operands = _sublists((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    operands = list(operands)
    if not operands:
        raise ValueError("einsum: give at least one operand")
    for t in operands:
        check_tensor("einsum", t)
    labels, out = _parse(equation, operands)
    path_eq = ",".join("".join(ls) for ls in labels) + "->" + "".join(out)
    pairs = []
    for t, ls in zip(operands, labels):
        pairs.append(_diagonals(t, list(ls)))
    operands, labels = [p[0] for p in pairs], [p[1] for p in pairs]
    operands = _broadcast(operands, labels)
    if len(operands) == 1:
        t, ls = _sum_out(operands[0], labels[0], set(out))
        return movement.transpose(t, tuple(ls.index(c) for c in out))
    items = list(zip(operands, labels))
    for step in _path(path_eq, operands, optimize):
        picked = [items[i] for i in step]
        items = [item for i, item in enumerate(items) if i not in step]
        while len(picked) > 1:
            rest = {c for _, ls in items + picked[2:] for c in ls} | set(out)
            a, la = _sum_out(*picked[0], rest | set(picked[1][1]))
            b, lb = _sum_out(*picked[1], rest | set(la))
            picked = [_pair(a, la, b, lb, rest)] + picked[2:]
        items.append(picked[0])
    t, ls = _sum_out(*items[0], set(out))
    return movement.transpose(t, tuple(ls.index(c) for c in out))
