"""How good a model is and where it looked: the metrics (exact match, WER, BLEU, chrF), the
one evaluation dispatch (``evaluate``), attention figures and training curves. This
``__init__`` imports nothing."""
