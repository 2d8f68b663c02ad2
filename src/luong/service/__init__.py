"""What serving a model needs apart from any transport: the dynamic batcher, a request's
limits as coded errors, its own glossary read, its texts cut into lines and joined back with
their confidence, and its answer as plain data. The HTTP faces (``luong.server``) map them
to their own answers and import no memory, glossary or confidence code. This ``__init__``
imports nothing."""
