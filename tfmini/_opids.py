"""Op ids by TF op name, read from the C op table (csrc/ops/*.def)."""
from . import _C

TABLE = _C.op_table()
ID = {row[0]: i for i, row in enumerate(TABLE)}


def op_id(name):
    return ID[name]
