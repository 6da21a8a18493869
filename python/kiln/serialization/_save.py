"""kiln.save: any picklable object, in PyTorch's zip checkpoint format, atomically.

Note [A save replaces the file whole or not at all]
---------------------------------------------------
The object is pickled in memory first, so an unpicklable object fails before
any file is touched. A path is then written to a temporary file beside it
(same directory, so same filesystem), flushed to disk, and renamed over the
target with os.replace, which is atomic: a crash or an exception mid-save
leaves the previous file as it was and no partial file; the temporary file is
removed on failure. A file object is written in place (it is the caller's).
"""

from __future__ import annotations

import os
import pickle
import stat
import uuid

from kiln.serialization._pickler import pickle_checkpoint
from kiln.serialization._zip_format import write_checkpoint

DEFAULT_PROTOCOL = 2


def _write_atomically(path: str, write) -> None:
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise RuntimeError(f"kiln.save: parent directory {directory} does not exist.")
    temporary = os.path.join(directory, f".{os.path.basename(target)}.{uuid.uuid4().hex}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        if os.path.exists(target):
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def save(obj, f, pickle_module=None, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Saves obj (tensors, modules, optimizers, numpy arrays, any picklable object) to a path or a binary file
    object, in PyTorch's checkpoint format: torch.load reads it, tensors sharing a storage share it again.
    ``pickle_protocol`` 2 (torch's default) keeps the file readable by torch.load(weights_only=True)."""
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("kiln.save: only the standard pickle module is supported as pickle_module")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("kiln.save: kiln writes torch's zip checkpoint format only "
                                  "(_use_new_zipfile_serialization=False is torch's legacy format)")
    data_pkl, storages = pickle_checkpoint(obj, pickle_protocol)

    def write(fh) -> None:
        write_checkpoint(fh, data_pkl, storages, _disable_byteorder_record)

    if isinstance(f, (str, os.PathLike)):
        _write_atomically(os.fspath(f), write)
    elif hasattr(f, "write"):
        write(f)
    else:
        raise TypeError(f"kiln.save: expected a path or a binary file object, got {type(f).__name__}")
