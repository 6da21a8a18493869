"""kiln.serialization, as torch.serialization: kiln.save / kiln.load in
PyTorch's checkpoint format (DESIGN.md decision 13), the weights_only
allow-list, and safetensors files.

Files by topic: _save.py (atomic save) and _pickler.py (the pickle of any
object, tensors as storage records); _load.py (load, mmap, map_location) and
_unpicklers.py (restricted and full); _zip_format.py (the zip container);
_storage.py (storage records), _rebuild.py (rebuilding tensors) and
_torch_names.py (torch's global names for kiln's objects); _safe_globals.py
(the allow-list API); _options.py (load endianness, mmap flags, crc32);
_safetensors.py (save_file / load_file).
"""

from kiln.serialization._load import get_unsafe_globals_in_checkpoint, load
from kiln.serialization._options import (
    LoadEndianness, SourceChangeWarning, get_crc32_options, get_default_load_endianness, get_default_mmap_options,
    set_crc32_options, set_default_load_endianness, set_default_mmap_options,
)
from kiln.serialization._safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from kiln.serialization._safetensors import load_file, save_file
from kiln.serialization._save import DEFAULT_PROTOCOL, save
from kiln.serialization._storage import StorageType

__all__ = ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals",
           "get_unsafe_globals_in_checkpoint", "save_file", "load_file", "DEFAULT_PROTOCOL", "StorageType",
           "LoadEndianness", "SourceChangeWarning", "get_crc32_options", "set_crc32_options",
           "get_default_load_endianness", "set_default_load_endianness", "get_default_mmap_options",
           "set_default_mmap_options"]
