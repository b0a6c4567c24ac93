"""coll's result codes as Python exceptions: every one a coll.Error, with
the C code (`code`) and coll's message, which names the rank, the peer and
what to do."""
SUCCESS, INVALID_ARGUMENT, INVALID_USAGE, SYSTEM_ERROR, REMOTE_ERROR, TIMEOUT, INTERNAL_ERROR, IN_PROGRESS, REVOKED = range(9)


class Error(RuntimeError):
    """A failed coll call. `code` is the coll_result_t."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class InvalidArgument(Error, ValueError):
    """COLL_INVALID_ARGUMENT: a bad argument (a null buffer, a rank out of range)."""


class InvalidUsage(Error):
    """COLL_INVALID_USAGE: legal arguments used wrongly (the ranks disagree, a destroyed communicator)."""


class SystemError(Error):  # noqa: A001 (coll.SystemError, as coll names the code)
    """COLL_SYSTEM_ERROR: a system call failed; the message has errno."""


class RemoteError(Error):
    """COLL_REMOTE_ERROR: a peer died, closed, or reported an error."""


class TimeoutError(Error):  # noqa: A001
    """COLL_TIMEOUT: COLL_TIMEOUT_MS passed while waiting for a peer."""


class InternalError(Error):
    """COLL_INTERNAL_ERROR: a bug in coll; please report it with the message."""


class Revoked(Error):
    """COLL_REVOKED: a rank revoked the communicator (Communicator.revoke); shrink it."""


_BY_CODE = {
    INVALID_ARGUMENT: InvalidArgument,
    INVALID_USAGE: InvalidUsage,
    SYSTEM_ERROR: SystemError,
    REMOTE_ERROR: RemoteError,
    TIMEOUT: TimeoutError,
    INTERNAL_ERROR: InternalError,
    REVOKED: Revoked,
}


def raise_for(code, message):
    if code == SUCCESS:
        return
    raise _BY_CODE.get(code, Error)(code, message)
