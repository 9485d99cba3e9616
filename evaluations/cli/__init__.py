"""The ``evaluations`` command line (click only): ``root`` holds the group, one module per command family,
shared options in ``options``."""

from evaluations.cli.root import main

__all__ = ["main"]
