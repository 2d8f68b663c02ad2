"""Shared test settings.

One intra-op thread for the test process (and OMP_NUM_THREADS=1 for the subprocesses the
tests start): results do not depend on the thread count, and a test run stays fast on a
machine that is busy with other work, where two processes each spinning two OpenMP threads
on two cores slow each other down many times over.
"""

import os

import torch

os.environ["OMP_NUM_THREADS"] = "1"
torch.set_num_threads(1)
