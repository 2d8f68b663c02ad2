"""A trained model as ONNX graphs, and a runtime that translates with them without torch.

- ``runtime``: the runtime (``luong.export.runtime``; ``luong_onnx.py`` in an export folder):
  tokenization, greedy and beam search in numpy over onnxruntime. It imports nothing of
  luong and no torch.
- ``exporter``: ``export_onnx`` writes a model's encoder and decoder step as ONNX graphs,
  its vocabulary files and the runtime into one folder (``luong export``).

This package's ``__init__`` imports neither, so that ``luong.export.runtime`` pulls in no torch
of its own.
"""
