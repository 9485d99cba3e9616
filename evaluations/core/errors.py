"""The one error type a user sees: a message naming what is wrong and how to fix it."""

from __future__ import annotations


class EvaluationsError(Exception):
    """A user-facing error. The CLI prints ``message`` and ``fix`` and exits 2, no traceback.

    ``where`` names the file/line/key/URL at fault; ``fix`` says what to do about it.
    """

    def __init__(self, message: str, *, where: str | None = None, fix: str | None = None):
        self.message = message
        self.where = where
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text
