"""A ``flags(...)`` context manager over a module's boolean settings, as
torch.backends.cudnn.flags and torch.backends.mkldnn.flags do."""

from __future__ import annotations

import contextlib


def flags_context(module, **settings):
    """Sets the module attributes named in ``settings`` (None leaves one as is) for the ``with`` block."""

    @contextlib.contextmanager
    def manager():
        previous = {name: getattr(module, name) for name in settings}
        for name, value in settings.items():
            if value is not None:
                setattr(module, name, value)
        try:
            yield
        finally:
            for name, value in previous.items():
                setattr(module, name, value)

    return manager()
