"""Training, a module per idea; ``luong.training.trainer.Trainer`` runs the loop with its parts:

- ``objective``: what a step minimises and how fast: the loss (``loss_of``), the learning
  rate's schedule (``lr_factor``), the optimizer, and the gradients of one optimizer step
  (several batches accumulated, DDP's gradient averaging once at the last).
- ``signals``: SIGINT and SIGTERM during training: a flag the loop reads between steps, a cut
  that stops a dev evaluation at once, and ``TrainingInterrupted``.
- ``records``: where a run stands (``Progress``, saved in every checkpoint), its records
  (``log.jsonl``, TensorBoard) and its progress bar.
- ``data``: the training pairs checked against the model's limits, and each epoch's
  optimizer steps in their seeded order.
- ``state``: a run's state in its checkpoints: written, and restored to resume.
- ``dev``: the dev evaluation: the figure a run selects on, the scores, the best so far.
- ``loss``: the label-smoothed cross-entropy as one node; ``checkpoint``: a run's
  checkpoints on disk; ``distributed``: the process group under torchrun.
- ``trainer``: the loop; ``fine_tuning``: the model ``--init-from`` starts from;
  ``settings``: a run's settings resolved (``luong.configure``); ``run``: a run from its
  settings to its folder (``luong.train``, ``luong.run``); ``run_folders``: run folders read
  back; ``zoo``: the attention family trained side by side.

This package's ``__init__`` imports none of them.
"""
