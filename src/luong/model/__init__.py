"""The network of Luong, Pham and Manning (2015): the attention scores, the encoder, the
input-fed decoder and its fused recurrence, ``Seq2Seq``, int8 weights, ensembles, checkpoint
averaging and a folder's int8 form. It knows no search and no training. This ``__init__``
imports nothing."""
