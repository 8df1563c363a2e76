"""The ``@rule(name)`` decorator of a module of backward rules, which files the function
in that module's table under ``name``; :mod:`fastnn.autograd.rules` merges the tables."""

from __future__ import annotations


def rule_into(table: dict):
    """The decorator ``@rule(name)`` that puts the decorated rule in ``table``."""

    def rule(name):
        def register(fn):
            table[name] = fn
            return fn

        return register

    return rule
