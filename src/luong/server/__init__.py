"""``luong serve``'s HTTP faces: the FastAPI app (the API, the explorer's page in
``explorer/``, package data) and the LibreTranslate API's requests and answers. This
``__init__`` imports nothing."""
