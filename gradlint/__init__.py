"""gradlint: a static analyzer for PyTorch training loops."""

__version__ = "0.1.0"
