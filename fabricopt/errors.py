"""The exceptions fabricopt raises.

Every error that comes from something the caller passed also subclasses :class:`ValueError`, so
``except ValueError`` keeps working for code that does not know fabricopt.
"""

from __future__ import annotations


class FabricOptError(Exception):
    """Base class of every error fabricopt raises on purpose."""


class InvalidParameterError(FabricOptError, ValueError):
    """A function was called with an argument outside what it allows."""


class InvalidFabricError(FabricOptError, ValueError):
    """A fabric breaks the data model (see :meth:`fabricopt.Fabric.validate`)."""


class TrafficError(FabricOptError, ValueError):
    """A traffic matrix names unknown endpoints or holds bad demands."""


class DesignFileError(FabricOptError, ValueError):
    """A design file cannot be read: the message names the file, the key and what is allowed."""


class BackendUnavailableError(FabricOptError, ImportError):
    """An optional solver backend is not installed; the message says how to install it."""
