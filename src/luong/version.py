"""The package version, in a module of its own so that any module can read it without
importing the package (and everything the package imports), and how to install one of its
extras."""

__version__ = "0.1.0"


def install_extra(extra: str) -> str:
    """How to install the extra ``extra`` (``po``, ``serve``, ...) where luong came from: luong
    is on no package index, so ``pip install 'luong[po]'`` works only where an index has it;
    a clone installs its own folder, a wheel its file.

    Raises:
        TypeError, ValueError: ``extra`` is not a non-empty string.
    """
    if not isinstance(extra, str):
        raise TypeError(f"extra: expected the name of an extra, got {type(extra).__name__}")
    if not extra.strip() or any(c in extra for c in "[]' "):
        raise ValueError(f"extra: expected the name of an extra such as 'po', got {extra!r}")
    return (
        f"in a clone of luong: pip install -e '.[{extra}]'; from its wheel: pip install "
        f"'luong-{__version__}-py3-none-any.whl[{extra}]'"
    )
