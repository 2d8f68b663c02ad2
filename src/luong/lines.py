"""What breaks one line of text: the characters that a decoded output never holds and a
target prefix may not hold, so that N lines in give N lines out and an output is one field
of a tab-separated line.

Its own module on the lowest floor, because two plain modules read it that neither may
import the other for it: ``vocab`` (``one_line`` writes each as a space) and
``search_options`` (a prefix is refused with one). The ONNX runtime keeps a copy (it imports
nothing of luong); ``tests/test_export.py`` checks they agree.
"""

from __future__ import annotations

__all__ = ["LINE_BREAKS"]

LINE_BREAKS = frozenset("\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029\x00")
"""Characters that would split one output into several lines or fields (``str.splitlines``'
breaks, the tab that separates n-best outputs, NUL): never in a prefix."""
