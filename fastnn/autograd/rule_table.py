"""The table of a module of backward rules and its ``@rule(name)`` decorator, which files
the function under ``name``; :mod:`fastnn.autograd.rules` merges the modules' tables."""

from __future__ import annotations


def rule_table() -> tuple:
    """``(table, rule)``: a new dict of op name -> backward rule, and its decorator."""
    table: dict = {}

    def rule(name):
        def register(fn):
            table[name] = fn
            return fn

        return register

    return table, rule
