"""What serving a model needs apart from any transport: the dynamic batcher and a request's
limits as coded errors. The HTTP faces (``luong.server``) map them to their own answers. This
``__init__`` imports nothing."""
