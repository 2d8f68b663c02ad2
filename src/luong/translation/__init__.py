"""Strings in, strings out: the ``Translator`` that every face decodes through, which
sources a model admits, placeholders kept through the search, word alignments, confidence and
lexical tables. This ``__init__`` imports nothing."""
