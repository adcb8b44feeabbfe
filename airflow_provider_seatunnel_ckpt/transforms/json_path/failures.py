"""The two kinds of failure a JsonPath column can meet, kept apart because SeaTunnel
treats them differently: only Jayway's own exceptions reach the error-handling options."""


class PathError(Exception):
    """Jayway's JsonPathException (PathNotFoundException, InvalidJsonException): the
    error-handling options act on it."""


class HardError(Exception):
    """Any other failure (conversion, IllegalArgumentException): fails the job."""
