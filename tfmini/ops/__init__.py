"""The public ops, one module per family (see csrc/ops/ for the table).

Each module lists its public names in __all__; the namespaces (tfmini,
tfmini.math, tfmini.nn, ...) star-import the families they show."""
