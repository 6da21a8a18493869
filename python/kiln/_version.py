"""kiln's version string (kiln.__version__)."""

__version__ = "0.1.0"
