"""Reduction operations, as coll.h's coll_redop_t."""
SUM, PROD, MIN, MAX, AVG = range(5)
NAMES = {"sum": SUM, "prod": PROD, "min": MIN, "max": MAX, "avg": AVG}


def op_code(op):
    if isinstance(op, str) and op.lower() in NAMES:
        return NAMES[op.lower()]
    if isinstance(op, int) and 0 <= op < len(NAMES):
        return op
    from . import _errors

    raise _errors.InvalidArgument(_errors.INVALID_ARGUMENT, f"op: {op!r} is not one of coll.SUM, PROD, MIN, MAX, AVG")
