"""Text as ids: vocabularies (symbols and sentencepiece models), batches and masks, corpora
segmented once onto disk, and lexical shortlists. This ``__init__`` imports nothing."""
