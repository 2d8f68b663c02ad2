"""What a run is made of: the model's architecture, how it trains and how its vocabularies
are built, as typed dataclasses, and the names of the choices and the faces' settings that the
command line shows.

The configs are plain data: checked once on construction (each error names the field, the
valid choices and the value), saved as JSON beside the weights and in every run folder,
rebuilt from it on load. Tasks give their defaults as these dataclasses (``luong.config.presets``).
Each field has its help text in its metadata (``luong.config.fields.setting``), the one
source of ``luong train --help``'s texts. The package imports no torch: the command line
builds its flags from it before any command needs torch.

Its modules, lowest first:

- ``choices``: the names of the choices (the attention's scores, the cells, ..., the forms of
  a device name and ``device_form``, the parts an int8 model holds in int8);
- ``faces``: the faces' settings (translate's output formats and placeholder modes, the
  figures' bounds, ``ServeLimits``);
- ``fields``: the machinery of the checked dataclasses (``setting``, the shared checks,
  ``config_from_dict``);
- ``model``, ``train``, ``vocab``: ``Seq2SeqConfig``, ``TrainConfig``, ``VocabConfig``, the
  ``[model]``, ``[train]`` and ``[vocab]`` tables of a run's TOML;
- ``run``: ``RunConfig`` and the TOML a run reads and writes.

The four configs are imported here too, as the package's face (``from luong.config import
TrainConfig``, as before the package was split); luong's own modules import every name from
its module.
"""

from __future__ import annotations

from luong.config.model import Seq2SeqConfig
from luong.config.run import RunConfig
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig

__all__ = ["RunConfig", "Seq2SeqConfig", "TrainConfig", "VocabConfig"]
