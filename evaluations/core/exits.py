"""Exit codes of the ``evaluations`` commands, and the ``--max-failures`` rule behind exit 3.

``0`` all went well; ``1`` a check said no (``gate`` rules broken, ``judge-check`` or ``golden validate``
failing, or ``judge-check`` unable to build a control category, so not checking it; fitted judge parameters
refused); ``2`` bad input (an EvaluationsError: one message, no traceback);
``3`` a run (or a matrix cell) finished with more cases that did not complete than ``--max-failures`` allows,
or ``judge-agreement``/``calibrate-judge`` had rows the judge model failed on, or ``score --format log`` had
queries a reference-free judge failed on;
``130`` interrupted.
"""

from __future__ import annotations

from evaluations.core.errors import EvaluationsError

__all__ = ["EXIT_ABORTED", "EXIT_BAD_INPUT", "EXIT_CASES_FAILED", "EXIT_CHECK_FAILED", "parse_max_failures"]

#: a check the command makes did not pass (gate, judge-check, golden validate, calibrate-judge's controls)
EXIT_CHECK_FAILED = 1
#: bad input: an EvaluationsError naming what, where and the fix
EXIT_BAD_INPUT = 2
#: a run that finished but had more failed cases than --max-failures allows
EXIT_CASES_FAILED = 3
#: interrupted (Ctrl-C, or SIGTERM: the CLI turns both into one interruption)
EXIT_ABORTED = 130


def parse_max_failures(text: str, cases: int) -> int:
    """``--max-failures``: ``N`` cases, or ``P%`` of the cases (rounded down)."""
    value = text.strip()
    try:
        if value.endswith("%"):
            percent = float(value[:-1])
            if not 0 <= percent <= 100:
                raise ValueError
            return int(cases * percent / 100)
        number = int(value)
        if number < 0:
            raise ValueError
        return number
    except ValueError:
        raise EvaluationsError(f"--max-failures {text!r} is not a count or a percentage", where="--max-failures",
                               fix="e.g. --max-failures 3 or --max-failures 5%") from None
