"""gettext catalogs: format directives, PO and MO files read as msgfmt reads them, catalogs
filled by a model (``luong po``), corpora built from catalogs and fetched from Debian's
packages (``luong corpus``), and a model adapted to one catalog (``luong po --adapt``). This
``__init__`` imports nothing."""
