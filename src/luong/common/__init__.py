"""What every part of luong stands on: its errors, files written all or nothing, the names of
a folder's files, line breaks, language codes, progress, the CPU's threads and precisions, and
safetensors files. ``docs/architecture.md`` gives each module's floor; this ``__init__`` imports
nothing, so that importing one module loads no other."""
