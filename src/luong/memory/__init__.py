"""What a translator already has: a translation memory (exact and fuzzy matches, its index
cached beside the corpus) and a glossary of terms the search must keep. This ``__init__``
imports nothing."""
